"""Harness logs read as biovqa predictions: inspect_ai logs and lmms-eval ``--log_samples`` files.

``biovqa score BENCH -p LOG`` accepts, beside biovqa's own Parquet/JSONL predictions:

* an inspect_ai log (``.eval``, or a ``.json`` log) or a folder of them, read through inspect's
  own reader (``inspect_ai.log.read_eval_log``): the sample id is the item id, the reply is the
  sample's final completion; a sample inspect recorded as errored, or one stopped by a limit, is
  ``failed`` (never an answer). In a folder, a later log's reply to an item another log failed on
  replaces the failure (inspect's retry writes a new log); two replies to one item are an error.
* an lmms-eval samples file (``<date>_samples_biovqa_c1.jsonl``) from the task folder
  ``biovqa export --format lmms-eval`` writes: each row's ``target`` is the item id that task
  carries, the reply is ``filtered_resps``; a reply lmms-eval's API models write after their
  last retry (``[LMMS_EVAL_REQUEST_FAILED …]``) is ``failed``.

Items a log lacks are ``missing``; an id the benchmark lacks is refused by the usual alignment,
naming the first foreign id. Each reader returns the predictions table (item_id, response, status,
model) that :func:`biovqa.scoring.predictions.read_predictions` checks further.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from biovqa.errors import BiovqaError, InputFormatError

#: inspect_ai log suffixes.
INSPECT_SUFFIXES = (".eval", ".json")
#: What lmms-eval's API models write as the reply after their last retry.
LMMS_FAILED_PREFIX = "[LMMS_EVAL_REQUEST_FAILED"
_SCHEMA = pa.schema([("item_id", pa.string()), ("response", pa.string()),
                     ("status", pa.string()), ("model", pa.string())])


def harness_format(path: str | Path) -> str | None:
    """``"inspect"`` or ``"lmms-eval"`` when ``path`` is such a log (or a folder of inspect logs),
    else None (biovqa's own predictions formats). Only the opening of a file is looked at."""
    path = Path(path)
    if path.is_dir():
        return "inspect"
    suffix = path.suffix.lower()
    if suffix == ".eval":
        return "inspect"
    if suffix not in {".json", ".jsonl", ".ndjson"} or not path.is_file():
        return None
    with open(path, "rb") as handle:
        head = handle.read(1 << 16)
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff").lstrip()
    first_line = text.split("\n", 1)[0].strip()
    if suffix == ".json" and first_line == "{":
        return "inspect"  # inspect writes its JSON logs indented; JSONL rows are one line each
    try:
        row = json.loads(first_line)
    except ValueError:
        return None
    if isinstance(row, dict) and "item_id" not in row and "doc_id" in row and (
            "filtered_resps" in row or "resps" in row):
        return "lmms-eval"
    return None


def read_harness_predictions(path: str | Path) -> pa.Table | None:
    """The predictions a harness log holds, or None when ``path`` is not one."""
    kind = harness_format(path)
    if kind == "inspect":
        return read_inspect_logs(path)
    if kind == "lmms-eval":
        return read_lmms_samples(path)
    return None


def harness_sha256(path: str | Path) -> str:
    """sha256 of a predictions file, or of a folder of logs (over each log's name and digest)."""
    from biovqa.bench.folder import sha256_file

    path = Path(path)
    if not path.is_dir():
        return sha256_file(path)
    digest = hashlib.sha256()
    for log in _inspect_files(path):
        digest.update(f"{log.name}\0{sha256_file(log)}\n".encode())
    return digest.hexdigest()


# -- inspect_ai -----------------------------------------------------------------------------------
def _inspect_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and p.suffix.lower() in INSPECT_SUFFIXES and not p.name.startswith("."))


def read_inspect_logs(path: str | Path) -> pa.Table:
    """Predictions from one inspect_ai log or a folder of them (see the module docstring)."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise BiovqaError("reading an inspect_ai log needs inspect-ai", file=path,
                          hint="pip install 'biovqa[inspect]'") from None
    path = Path(path)
    files = _inspect_files(path) if path.is_dir() else [path]
    if not files:
        raise InputFormatError("folder holds no inspect_ai logs (.eval or .json)", file=path,
                               hint="give a log file, or the --log-dir inspect wrote")
    chosen: dict[str, tuple[str | None, str, str | None, Path]] = {}
    for log_path in files:
        try:
            log = read_eval_log(str(log_path))
        except Exception as error:  # inspect raises its own and pydantic's errors on bad files
            raise InputFormatError(f"not a readable inspect_ai log ({type(error).__name__}: "
                                   f"{str(error).splitlines()[0][:200] if str(error) else ''})",
                                   file=log_path) from None
        model = log.eval.model if log.eval is not None else None
        epochs = {s.epoch for s in log.samples or []}
        if len(epochs) > 1:
            raise InputFormatError(f"log holds {len(epochs)} epochs; biovqa scores one reply per item",
                                   file=log_path, field="samples.epoch",
                                   hint="run inspect eval with --epochs 1")
        for index, sample in enumerate(log.samples or []):
            item_id = str(sample.id)
            failed = sample.error is not None or sample.limit is not None
            response = None if failed or sample.output is None else sample.output.completion
            status = "failed" if failed else "ok"
            earlier = chosen.get(item_id)
            if earlier is not None:
                if status == "failed":
                    continue
                if earlier[1] == "ok":
                    raise InputFormatError(
                        f"item {item_id!r} is answered in two logs ({earlier[3].name} and "
                        f"{log_path.name})", file=log_path, row=index + 1, field="samples.id",
                        hint="keep one log per run (a retry's log replaces only failed samples)")
            chosen[item_id] = (response, status, model, log_path)
    if not chosen:
        raise InputFormatError("inspect_ai log holds no samples", file=path,
                               hint="was the eval cancelled before any sample finished?")
    rows = [{"item_id": k, "response": v[0], "status": v[1], "model": v[2]} for k, v in chosen.items()]
    return pa.Table.from_pylist(rows, schema=_SCHEMA)


# -- lmms-eval ------------------------------------------------------------------------------------
def _reply_text(value: Any) -> Any:
    """lmms-eval writes ``filtered_resps`` as the reply, or a list of one (nested once more for a
    document with several requests): the first string."""
    while isinstance(value, list) and value:
        value = value[0]
    return value


def read_lmms_samples(path: str | Path) -> pa.Table:
    """Predictions from an lmms-eval ``--log_samples`` JSONL of a biovqa task folder."""
    from biovqa.bench.folder import iter_json_lines

    path = Path(path)
    rows: list[dict[str, Any]] = []
    for line_number, row in iter_json_lines(path, what="lmms-eval samples file"):
        item_id = row.get("target")
        if not isinstance(item_id, str) or not item_id:
            raise InputFormatError("row carries no biovqa item id in 'target'", file=path,
                                   row=line_number, field="target",
                                   hint="score samples of the task folder `biovqa export --format "
                                        "lmms-eval` wrote (its target is the item id)")
        reply = _reply_text(row.get("filtered_resps", row.get("resps")))
        if reply is not None and not isinstance(reply, str):
            raise InputFormatError(f"reply must be text, found {type(reply).__name__}", file=path,
                                   row=line_number, field="filtered_resps")
        failed = reply is None or reply.startswith(LMMS_FAILED_PREFIX)
        rows.append({"item_id": item_id, "response": None if failed else reply,
                     "status": "failed" if failed else "ok", "model": None})
    if not rows:
        raise InputFormatError("lmms-eval samples file holds no rows", file=path)
    return pa.Table.from_pylist(rows, schema=_SCHEMA)


__all__ = ["LMMS_FAILED_PREFIX", "harness_format", "harness_sha256", "read_harness_predictions",
           "read_inspect_logs", "read_lmms_samples"]
