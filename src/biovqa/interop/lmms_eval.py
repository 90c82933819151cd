"""``biovqa export BENCH --format lmms-eval --out TASKDIR``: a task folder lmms-eval runs.

``lmms-eval --model … --include_path TASKDIR --tasks biovqa_c1 --log_samples --output_path OUT``
loads the folder through lmms-eval's own task manager. Per benchmark (one per component) it holds:

* ``biovqa_<component>.yaml`` — the task: the documents file as a local JSON dataset,
  ``generate_until`` with biovqa's decoding (greedy, ``temperature 0``, the component's cap on new
  tokens: C1 15, paper App. B.2), the hooks below;
* ``biovqa_<component>_docs.jsonl`` — one document per item in benchmark order: ``item_id``,
  ``task``, ``system`` and ``text`` (the system message and user text biovqa's engine sends for
  the model the export was made for, ``--model``/``--preset``; by default no preset wrappers),
  ``image`` (its path under one of the folders ``biovqa_roots.json`` lists, by index
  ``image_root``);
* ``utils.py`` — ``doc_to_visual`` (the image, opened only inside its listed folder),
  ``doc_to_text`` (the system message before the user text, as the engine joins them for a model
  without a system role), ``doc_to_messages`` (a system turn and a user turn of image + text, for
  lmms-eval's chat models), ``doc_to_target`` (the item id: lmms-eval writes it as each sample's
  ``target``, which is how ``biovqa score -p SAMPLES.jsonl`` matches replies to items) and
  ``process_results`` (a reply rate only: Bio-VQA's scores come from ``biovqa score``).

The folder is written whole (staged, then renamed); paths in it are absolute, so after moving the
benchmark or its photos export again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from biovqa.bench.folder import Bench, open_bench, staged_folder, write_json, write_text
from biovqa.errors import BiovqaError
from biovqa.interop.prompts import harness_requests

#: The model whose prompts the folder carries when none is named: no preset wrappers.
DEFAULT_MODEL = "lmms-eval"
ROOTS_FILE = "biovqa_roots.json"

_UTILS = '''\
"""lmms-eval hooks of a Bio-VQA task folder, written by `biovqa export --format lmms-eval`.

The replies are scored by biovqa (`biovqa score BENCH -p SAMPLES.jsonl`), which matches them to
items by the item id each sample carries as its target; this file needs only Pillow.
"""

import json
from pathlib import Path

_ROOTS = json.loads(Path(__file__).with_name("biovqa_roots.json").read_text(encoding="utf-8"))
FAILED_PREFIX = "[LMMS_EVAL_REQUEST_FAILED"


def _image_path(doc):
    root = Path(_ROOTS[doc["component"]][int(doc["image_root"])]).resolve()
    path = (root / doc["image"]).resolve()
    if not path.is_relative_to(root):  # a document never leads outside its listed folder
        raise ValueError(f"image {doc['image']!r} of item {doc['item_id']!r} leads outside {root}")
    return path


def doc_to_visual(doc):
    if not doc.get("image"):
        return []
    from PIL import Image

    with Image.open(_image_path(doc)) as image:
        return [image.convert("RGB")]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    system = doc.get("system")
    return f"{system}\\n\\n{doc['text']}" if system else doc["text"]


def doc_to_messages(doc, lmms_eval_specific_kwargs=None):
    messages = []
    if doc.get("system"):
        messages.append({"role": "system", "content": [{"type": "text", "text": doc["system"]}]})
    content = [{"type": "image", "url": image} for image in doc_to_visual(doc)]
    content.append({"type": "text", "text": doc["text"]})
    messages.append({"role": "user", "content": content})
    return messages


def doc_to_target(doc):
    return doc["item_id"]


def process_results(doc, results):
    reply = results[0] if results else None
    replied = isinstance(reply, str) and bool(reply.strip()) and not reply.startswith(FAILED_PREFIX)
    return {"biovqa_reply_rate": 1.0 if replied else 0.0}


def mean(values):
    return sum(values) / len(values) if values else 0.0
'''


def task_name(component: str) -> str:
    """The lmms-eval task name of a component's benchmark: ``biovqa_c1`` …"""
    return f"biovqa_{component}"


def _task_yaml(component: str, docs: Path, max_new_tokens: int) -> str:
    # JSON is YAML; `!function` tags are lmms-eval's way of naming the hooks in utils.py
    return "\n".join([
        f"task: {task_name(component)}",
        "dataset_path: json",
        "dataset_kwargs:",
        f"  data_files: {{test: {json.dumps(str(docs))}}}",
        "test_split: test",
        "output_type: generate_until",
        "doc_to_visual: !function utils.doc_to_visual",
        "doc_to_text: !function utils.doc_to_text",
        "doc_to_messages: !function utils.doc_to_messages",
        "doc_to_target: !function utils.doc_to_target",
        "process_results: !function utils.process_results",
        "generation_kwargs:",
        f"  max_new_tokens: {max_new_tokens}",
        "  temperature: 0",
        "  do_sample: false",
        "  num_beams: 1",
        # the engine stops at the cap or the end of the reply, never at a blank line (lmms-eval's
        # default stop sequence when none is given)
        "  until: []",
        "metric_list:",
        "  - metric: biovqa_reply_rate",
        "    aggregation: !function utils.mean",
        "    higher_is_better: true",
        "metadata:",
        "  version: 1.0",
        "",
    ])


def export_lmms_eval(benches: Sequence[str | Path | Bench], out: str | Path, *,
                     model: str | None = None, preset: str | None = None) -> Path:
    """Write the lmms-eval task folder of ``benches`` (one per component) to ``out``."""
    opened = [b if isinstance(b, Bench) else open_bench(b) for b in benches]
    seen: dict[str, Path] = {}
    for bench in opened:
        if bench.component in seen:
            raise BiovqaError(f"two {bench.component.upper()} benchmarks: {seen[bench.component]} "
                              f"and {bench.root}", hint="export one benchmark per component")
        seen[bench.component] = bench.root
    roots: dict[str, list[str]] = {}
    with staged_folder(out) as stage:
        for bench in opened:
            requests = harness_requests(bench, model or DEFAULT_MODEL, preset=preset)
            caps = sorted({r.max_new_tokens for r in requests})
            if len(caps) > 1:
                raise BiovqaError(f"items carry {len(caps)} different caps on new tokens "
                                  f"({', '.join(map(str, caps))}); an lmms-eval task has one",
                                  file=bench.root / "items.parquet", field="max_new_tokens",
                                  hint="run this benchmark with `biovqa run` or inspect_ai")
            folders: list[str] = []
            docs_name = f"{task_name(bench.component)}_docs.jsonl"
            lines: list[str] = []
            for request, image in zip(requests, bench.items.column("image").to_pylist()):
                doc: dict[str, str | int | None] = {"item_id": request.item_id, "component": bench.component,
                       "task": request.task, "system": request.system, "text": request.user_text,
                       "image": None, "image_root": None}
                if image is not None:
                    folder, relative = bench.image_location(image)
                    bench.resolve_image(image)  # the containment rule, before anything is written
                    root = str(Path(folder).resolve())
                    if root not in folders:
                        folders.append(root)
                    doc.update(image=relative, image_root=folders.index(root))
                lines.append(json.dumps(doc, ensure_ascii=False, sort_keys=True))
            roots[bench.component] = folders
            write_text(stage / docs_name, "\n".join(lines) + "\n")
            final_docs = Path(out).resolve() / docs_name
            write_text(stage / f"{task_name(bench.component)}.yaml",
                       _task_yaml(bench.component, final_docs, caps[0] if caps else 15))
        write_json(stage / ROOTS_FILE, roots)
        write_text(stage / "utils.py", _UTILS)
    return Path(out)


__all__ = ["export_lmms_eval", "task_name"]
