"""The run card: ``RUN/run.json``, what made a predictions file and how fast.

It records the model id and resolved revision, the backend and its version, the backend's own facts
(processor pixel limits, dtype, device, library versions), torch/CUDA/GPU where torch is loaded,
the decoding settings, the prompt-template hash, the benchmark manifest hash, the biovqa version,
the selection, start/end times and throughput. The API key of the ``openai`` backend never reaches
it: only its environment variable's *name* is kept, and any option whose name mentions a key,
token, secret or password is dropped.
"""

from __future__ import annotations

import datetime as _dt
import functools
import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from biovqa._version import __version__
from biovqa.bench.folder import write_json
from biovqa.engine.store import PREDICTIONS_FILE, StoreHeader

if TYPE_CHECKING:
    from biovqa.bench import Bench
    from biovqa.engine.runner import RunOptions

CARD_FILE = "run.json"
_SECRET_WORDS = ("secret", "password", "authorization", "bearer", "api_key", "apikey",
                 "access_token", "auth_token")


def is_secret_name(name: str) -> bool:
    """Whether an option name looks like it holds a credential (``api_key_env``, the *name* of
    the variable, does not)."""
    lowered = name.lower()
    if lowered == "api_key_env":
        return False
    return (lowered in ("key", "token") or lowered.endswith(("_key", "_token"))
            or any(word in lowered for word in _SECRET_WORDS))


def _iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return _dt.datetime.fromtimestamp(timestamp, tz=_dt.UTC).isoformat(timespec="seconds")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def _library_versions() -> dict[str, Any]:
    return {name: _version(name) for name in ("pyarrow", "torch", "transformers", "vllm", "ray")}


def environment_facts() -> dict[str, Any]:
    """Python, platform, library versions; torch/CUDA/GPU only when torch is already imported
    (the card never loads torch itself)."""
    facts: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "biovqa": __version__,
        **_library_versions(),
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            facts["cuda"] = torch.version.cuda
            if torch.cuda.is_available():
                facts["gpus"] = [torch.cuda.get_device_name(i)
                                 for i in range(torch.cuda.device_count())]
        except (RuntimeError, AssertionError, AttributeError):
            facts["gpus"] = None  # torch without a usable CUDA: the versions above say enough
    return facts


def _json_safe(value: Any) -> Any:
    if isinstance(value, str):
        from biovqa.engine.secrets import Redactor

        return Redactor().text(value)  # URL user info and Authorization values masked
    if isinstance(value, (int, float, bool, type(None))):
        return value
    if isinstance(value, dict):
        return redact(value)
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return str(value)


def redact(options: dict[str, Any]) -> dict[str, Any]:
    """Backend options/facts fit for the card: JSON-safe, secrets dropped (the env-var *name* of a
    key is kept)."""
    kept = {}
    for name, value in options.items():
        if not is_secret_name(str(name)):
            kept[str(name)] = _json_safe(value)
    return kept


def _pixel_limit(facts: dict[str, Any], name: str) -> Any:
    processor = facts.get("processor")
    nested = processor.get(name) if isinstance(processor, dict) else None
    return facts.get(name, nested)


def build_card(*, bench: Bench, options: RunOptions, facts: dict[str, Any],
               header: StoreHeader, selected: int, resumed: int, started: float, executor: str,
               status: str, ended: float | None = None, elapsed_s: float | None = None,
               progress: dict[str, Any] | None = None,
               predictions: pa.Table | None = None,
               earlier_sessions: list[dict[str, Any]] | None = None,
               preset_match: dict[str, Any] | None = None,
               subset: dict[str, Any] | None = None,
               planned_tokens: int | None = None,
               prompting: dict[str, Any] | None = None) -> dict[str, Any]:
    """The run card as a JSON-able dict (``prompting``: the per-item system prompt rule and the
    request modes when the benchmark uses them, and how the backend sent system prompts); ``sessions`` lists every invocation that wrote into the
    run folder (a killed and resumed run shows each attempt)."""
    selection = options.selection
    card: dict[str, Any] = {
        "status": status,
        "model": header.model,
        "model_argument": options.model,
        "revision": header.revision,
        "backend": options.backend,
        "backend_version": facts.get("backend_version") or facts.get("version"),
        "backend_facts": redact(facts),
        "backend_options": redact(dict(options.backend_options)),
        "min_pixels": _pixel_limit(facts, "min_pixels"),
        "max_pixels": _pixel_limit(facts, "max_pixels"),
        "dtype": facts.get("dtype"),
        "threads": facts.get("threads"),
        "preset": preset_match,
        "identity": header.identity,
        "executor": executor,
        "decoding": header.decoding,
        "prompt_template_hash": header.prompt_template_hash,
        "prompting": {**(prompting or {}),
                      **({"system_prompt_handling": facts["system_prompt_handling"]}
                         if facts.get("system_prompt_handling") else {})},
        "benchmark": {
            "path": str(bench.root),
            "component": bench.component,
            "manifest_sha256": header.manifest_sha256,
            "items_sha256": bench.manifest.get("items_sha256"),
        },
        "selection": {
            "components": list(selection.components or []) or None,
            "tasks": list(selection.tasks or []) or None,
            "limit_per_task": selection.limit,
            "seed": selection.seed,
            "shard": None if selection.shard is None else f"{selection.shard[0]}/{selection.shard[1]}",
            **(subset or {}),
        },
        "environment": environment_facts(),
        "started": _iso(started),
        "ended": _iso(ended),
        "items": {"selected": selected, "resumed": resumed, "asked": selected - resumed},
        "predictions": PREDICTIONS_FILE,
    }
    if progress is not None:
        card["elapsed_s"] = round(elapsed_s or progress["elapsed_s"], 3)
        card["items_per_s"] = round(progress["items_per_s"], 3)
        card["tokens_per_s"] = round(progress["tokens_per_s"], 3)
        card["items"]["failed_this_session"] = progress["failed"]
    session = {
        "status": status,
        "started": card["started"],
        "ended": card["ended"],
        "executor": executor,
        "shard": card["selection"]["shard"],
        "asked": selected - resumed,
        "items_per_s": card.get("items_per_s"),
    }
    card["sessions"] = [*(earlier_sessions or []), session]
    if predictions is not None:
        status_col = predictions.column("status")
        card["items"]["ok"] = int(pc.sum(pc.equal(status_col, "ok")).as_py() or 0)
        card["items"]["failed"] = int(pc.sum(pc.equal(status_col, "failed")).as_py() or 0)
        for column in ("prompt_tokens", "completion_tokens"):
            total = pc.sum(predictions.column(column)).as_py()
            card["items"][column] = None if total is None else int(total)
        if planned_tokens is not None:
            actual = sum(card["items"].get(c) or 0 for c in ("prompt_tokens", "completion_tokens"))
            card["tokens"] = {"planned": planned_tokens, "actual": actual}
    return card


def earlier_sessions(run_dir: str | Path) -> list[dict[str, Any]]:
    """Sessions recorded by the card already in ``run_dir`` (none if absent or unreadable)."""
    import json

    path = Path(run_dir) / CARD_FILE
    try:
        sessions = json.loads(path.read_text(encoding="utf-8")).get("sessions", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [s for s in sessions if isinstance(s, dict)]


def write_card(run_dir: str | Path, card: dict[str, Any]) -> Path:
    import os

    path = Path(run_dir) / CARD_FILE
    tmp = path.with_name(f".{CARD_FILE}.tmp{os.getpid()}")
    write_json(tmp, card)
    os.replace(tmp, path)
    return path


def build_merge_card(run_dirs: list[Path] | tuple[Path, ...], out: str | Path,
                     predictions: pa.Table) -> dict[str, Any]:
    """The card of a merged run: the inputs' cards (when present), the header, the counts."""
    import json

    from biovqa.engine.store import read_header

    header = read_header(out)
    sources = []
    for run_dir in run_dirs:
        path = Path(run_dir) / CARD_FILE
        card = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
        sources.append({"run": str(run_dir), "card": card})
    status_col = predictions.column("status")
    return {
        "status": "merged",
        "model": header.model,
        "revision": header.revision,
        "decoding": header.decoding,
        "prompt_template_hash": header.prompt_template_hash,
        "benchmark": {"manifest_sha256": header.manifest_sha256},
        "environment": environment_facts(),
        "merged_from": sources,
        "items": {
            "total": predictions.num_rows,
            "ok": int(pc.sum(pc.equal(status_col, "ok")).as_py() or 0),
            "failed": int(pc.sum(pc.equal(status_col, "failed")).as_py() or 0),
        },
        "predictions": PREDICTIONS_FILE,
    }
