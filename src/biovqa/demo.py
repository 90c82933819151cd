"""``biovqa demo``: the whole pipeline on data bundled with the package, in seconds.

Every built-in component with a ``demo`` role (``<package>.demo:run_demo``) builds a small
benchmark from bundled or generated native-format sources, audits it, runs the image-blind
baseline and scores it (:class:`biovqa.components.registry.DemoContext`); then one report is
written over all the score folders. C1 indexes the bundled GBIF Backbone excerpt and draws
placeholder images for the bundled TreeOfLife-200M-format catalog; C2 writes a tiny
CUB-200-2011 archive; C3 tiny WAID/Boxes-on-Bees/DePondFi/beetle/GZCD sources; C4 a synthetic
Wild Me catalog with its bundled precomputed crop embeddings (no torch needed); BAGEL the paper's
Appendix B items; the hierarchical suite builds from the demo's C1 benchmark.
"""

from __future__ import annotations

import json
import shutil
import time
from importlib import resources
from pathlib import Path
from typing import Any

from biovqa.errors import BiovqaError

DEMO_PACKAGE = "biovqa.data.demo"
#: Written into every demo folder; lists what the demo made, so a re-run replaces only that.
MARKER_FILE = ".biovqa-demo.json"


def _own_entry(name: object) -> bool:
    """Whether a marker's entry can be one the demo wrote: a plain name inside the folder (a
    damaged or edited marker never reaches outside it)."""
    return (isinstance(name, str) and bool(name) and name not in (".", "..") and not name.startswith(".")
            and "/" not in name and "\\" not in name)


def prepare_demo_folder(out: Path) -> None:
    """Make ``out`` ready for the demo: a new or empty folder, or one an earlier demo wrote (its
    entries are removed; anything else in it is left alone). Any other folder is refused."""
    if out.exists() and not out.is_dir():
        raise BiovqaError("the demo output is a file, not a folder", file=out,
                          hint="give a new folder with --out")
    if out.exists() and any(out.iterdir()):
        marker = out / MARKER_FILE
        if not marker.is_file():
            raise BiovqaError(
                "the folder is not empty and was not written by `biovqa demo`; nothing was changed",
                file=out, hint="give a new or empty folder with --out, e.g. --out biovqa-demo-2")
        try:
            entries = json.loads(marker.read_text(encoding="utf-8")).get("entries", [])
        except (json.JSONDecodeError, AttributeError):
            raise BiovqaError("the demo marker file is damaged; nothing was changed", file=marker,
                              hint="delete the folder yourself or give another --out") from None
        for name in entries:
            if not _own_entry(name):
                continue  # the marker only ever names the demo's own entries, inside the folder
            path = out / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
    out.mkdir(parents=True, exist_ok=True)
    write_marker(out, [], complete=False)


def write_marker(out: Path, entries: list[str], *, complete: bool) -> None:
    """The demo's marker: the entries it wrote (each claimed before it is written, so an
    interrupted demo lists what it may have left), and whether the demo finished (an interrupted
    demo leaves ``"complete": false``; re-running it replaces those entries)."""
    (out / MARKER_FILE).write_text(json.dumps({"written_by": "biovqa demo", "complete": complete,
                                               "entries": list(entries)}, indent=2) + "\n",
                                   encoding="utf-8")


def demo_data_dir() -> Path:
    return Path(str(resources.files("biovqa") / "data" / "demo"))


def run_demo(out: str | Path, *, console: Any | None = None) -> Path:
    """Run the demo into ``out`` and return the path of the report's index.html. One demo writes
    a folder at a time (a second is refused naming the first one's pid)."""

    def say(text: str) -> None:  # plain text: paths and hints like biovqa[transformers] are not markup
        (console.print(text, markup=False, highlight=False) if console is not None else print(text))
    from biovqa.bench.folder import FolderLock, output_lock_path

    out = Path(out)
    from biovqa.progress import without_stage_lines

    lock = FolderLock(output_lock_path(out), folder=out, command="demo").acquire()
    try:
        with without_stage_lines():  # the demo prints its own numbered steps
            return _run_demo(out, say)
    finally:
        lock.release(remove=True)


def _run_demo(out: Path, say: Any) -> Path:
    from biovqa.bench.audit import audit_bench
    from biovqa.components.registry import DemoContext, builtin_components
    from biovqa.engine.runner import RunOptions, run_benchmark
    from biovqa.reporting import write_report
    from biovqa.scoring.pipeline import score_predictions

    prepare_demo_folder(out)
    started = time.perf_counter()
    claimed: list[str] = []

    def folder(name: str) -> Path:
        if not _own_entry(name):
            raise ValueError(f"a demo entry is a plain name inside the demo folder, got {name!r}")
        if name not in claimed:
            claimed.append(name)
            write_marker(out, claimed, complete=False)
        return out / name

    def score_baseline(bench: Path, name: str, *, label: str = "floor (image-blind)", bootstrap: int = 200) -> Path:
        say(f"    audit passed: {audit_bench(bench)}")
        predictions = run_benchmark(bench, folder(f"run-baseline-{name}"),
                                    RunOptions(backend="baseline", progress=False)).predictions_path
        scores = score_predictions(bench, predictions, folder(f"scores-baseline-{name}"), label=label,
                                   options={"bootstrap": bootstrap})
        say(f"    ran the image-blind baseline and scored it → {scores}")
        return scores

    context = DemoContext(out=out, data=demo_data_dir(), say=say, folder=folder, score_baseline=score_baseline)
    components = [component for component in builtin_components() if component.demo]
    steps = len(components) + 1
    score_dirs: list[Path] = []
    for step, component in enumerate(components, 1):
        say(f"{step}/{steps} {component.title}")
        score_dirs += component.load("demo")(context)
    report = write_report(score_dirs, folder("report"))
    say(f"{steps}/{steps} report → {report}")
    write_marker(out, claimed, complete=True)
    say(f"done in {time.perf_counter() - started:.1f} s. Open {report} in a browser.")
    first = next(iter(context.benches.values()), None)
    if first is not None:
        say(f"next: run a real model on the demo's {first.name} (pip install 'biovqa[transformers]'): "
            f"biovqa run {first} --model Qwen/Qwen2.5-VL-3B-Instruct -o {out}/run-qwen, then "
            f"biovqa score {first} -p {out}/run-qwen/predictions.parquet -o {out}/scores-qwen and "
            f"biovqa report {out}/scores-qwen -o {out}/report-qwen")
    return report
