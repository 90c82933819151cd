"""The run loop: a benchmark and a model in, ``RUN/predictions.parquet`` and ``RUN/run.json`` out.

A run is::

    select items (--components, --tasks, --limit per task, --shard i/n by image)   selection.py
      → requests (model wrappers of paper App. B.2 via the model preset, image first) requests.py
      → skip keys already in the store (resume)
      → batches: an image's questions consecutive, bounded by a token budget          batching.py
      → executor (in process, or Ray actors) → backend.generate(batch)                executors.py
      → PredictionStore segments → RUN/predictions.parquet (sorted by item id)        store.py
        + RUN/run.json                                                                card.py

This module is the loop that ties them together: it holds the run's lock, writes every reply as it
arrives, shows progress, and on an interruption keeps what was received and records why it stopped.
Everything is deterministic: the same benchmark, selection, model and settings give the same
requests, keys, batches and predictions file, whatever the order replies arrive in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc

from biovqa.bench import open_bench
from biovqa.engine.backends.base import Reply, Request
from biovqa.engine.batching import batch_bounds, make_batches
from biovqa.engine.presets import ModelPreset
# the selection and request names are imported from here by callers written before the split
from biovqa.engine.requests import (
    CHARS_PER_TOKEN,
    DEFAULT_IMAGE_SIZE,
    SYSTEM_RULE,
    build_requests,
    decoding_settings,
    item_modes,
    prompt_template_hash,
    prompting_facts,
    request_key,
    resolve_preset,
)
from biovqa.engine.selection import (
    Selection,
    image_keys,
    merge_coverage,
    order_image_first,
    parse_shard,
    select_items,
    shard_by_image,
    stratified_sample,
    subset_facts,
)
from biovqa.engine.store import (
    PREDICTIONS_FILE,
    PredictionStore,
    RunLock,
    StoreHeader,
    refuse_if_different,
)
from biovqa.errors import BiovqaError
from biovqa.progress import LiveLine


@dataclass(frozen=True, slots=True)
class ModelFingerprint:
    """Everything about the model side that goes into a store key."""

    model: str
    revision: str
    decoding: dict[str, Any]
    identity: dict[str, Any] = field(default_factory=dict)

    def header(self, manifest_sha256: str, template_hash: str) -> StoreHeader:
        return StoreHeader(manifest_sha256=manifest_sha256, model=self.model,
                           revision=self.revision, prompt_template_hash=template_hash,
                           decoding=self.decoding, identity=self.identity)


class LiveProgress:
    """A run's counts — items done/total, items/s, tokens/s, failures, parse failures (when a check
    is given), ETA — shown as the one :class:`biovqa.progress.LiveLine`: redrawn at most every
    ``interval_s`` on a terminal, a line every ``log_every_s`` in a log. :meth:`snapshot` is what
    the run card records."""

    def __init__(self, total: int, *, stream: Any = None, enabled: bool = True,
                 interval_s: float = 0.5, log_every_s: float = 30.0, skipped: int = 0,
                 parse_ok: Callable[[Request, Reply], bool] | None = None) -> None:
        self.total = total
        self.skipped = skipped
        self.parse_ok = parse_ok
        self.line = LiveLine(stream=stream, enabled=enabled, interval_s=interval_s,
                             log_every_s=log_every_s)
        self.done = 0
        self.failed = 0
        self.parse_failed = 0
        self.parse_checked = 0
        self.tokens = 0
        self.started = time.monotonic()
        self._drawn_done = -1  # items done when the line was last drawn (close draws only news)

    def advance(self, requests: Sequence[Request], replies: Sequence[Reply]) -> None:
        self.done += len(replies)
        for request, reply in zip(requests, replies):
            if reply.status != "ok":
                self.failed += 1
            elif self.parse_ok is not None:
                self.parse_checked += 1
                self.parse_failed += not self.parse_ok(request, reply)
            self.tokens += (reply.prompt_tokens or 0) + (reply.completion_tokens or 0)
        if self.line.due():
            self._drawn_done = self.done
            self.line.draw(self.render())

    def snapshot(self) -> dict[str, Any]:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        left = self.total - self.done
        return {
            "done": self.done, "total": self.total, "skipped": self.skipped,
            "failed": self.failed, "elapsed_s": elapsed, "items_per_s": rate,
            "tokens_per_s": self.tokens / elapsed,
            "parse_failure_rate": (self.parse_failed / self.parse_checked
                                   if self.parse_checked else None),
            "eta_s": left / rate if rate > 0 else None,
        }

    def render(self) -> str:
        s = self.snapshot()
        eta = "?" if s["eta_s"] is None else time.strftime("%H:%M:%S", time.gmtime(s["eta_s"]))
        parse = ("" if s["parse_failure_rate"] is None
                 else f" | parse failures {100 * s['parse_failure_rate']:.1f}%")
        return (f"{s['done']}/{s['total']} items ({s['skipped']} resumed) | "
                f"{s['items_per_s']:.1f} items/s | {s['tokens_per_s']:.0f} tokens/s | "
                f"{s['failed']} failed{parse} | ETA {eta}")

    def close(self) -> None:
        # a log already holding the final count does not get it twice; a terminal always keeps it
        news = self._drawn_done != self.done or self.line.is_terminal
        self.line.close(self.render() if news else None)


# -- the run -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunOptions:
    """Everything ``biovqa run`` takes besides the benchmark and the output folder."""

    model: str | None = None
    backend: str = "transformers"
    backend_options: dict[str, Any] = field(default_factory=dict)
    selection: Selection = field(default_factory=Selection)
    executor: str = "inprocess"
    replicas: int | None = None
    gpus_per_replica: float | None = None
    ray_address: str | None = None
    batch_tokens: int | None = None
    max_batch_items: int | None = None
    max_new_tokens: int | None = None
    revision: str | None = None
    retry_failed: bool = False
    #: torch intra-op threads per worker (None: the physical cores shared among the workers)
    threads: int | None = None
    #: force this preset (a key of ``biovqa.engine.presets``) whatever the model argument is
    preset: str | None = None
    flush_rows: int = 4096
    flush_seconds: float = 10.0
    progress: bool = True


@dataclass(frozen=True)
class RunResult:
    """What a finished run wrote and did."""

    run_dir: Path
    predictions_path: Path
    card: dict[str, Any]
    selected: int
    resumed: int
    asked: int
    failed: int


def default_model(backend: str) -> str | None:
    return {"baseline": "baseline", "echo": "echo"}.get(backend)


def _resolved_revision(facts: dict[str, Any], options: RunOptions, preset: ModelPreset) -> str:
    for name in ("revision", "commit_hash", "resolved_revision"):
        value = facts.get(name)
        if value:
            return str(value)
    return str(options.revision or getattr(preset, "revision", None) or "unversioned")


def _check_replies(batch: Sequence[Request], replies: Sequence[Reply], backend: str) -> None:
    if len(replies) != len(batch) or any(r.key != q.key for q, r in zip(batch, replies)):
        raise BiovqaError(
            f"backend {backend!r} broke its contract: {len(batch)} requests in, "
            f"{len(replies)} replies out or keys out of order",
            hint="a backend must return one reply per request, in request order",
        )


def run_benchmark(bench_path: str | Path, out: str | Path, options: RunOptions, *,
                  progress_stream: Any = None) -> RunResult:
    """Run ``options.model`` on a benchmark folder into ``out`` (resuming what ``out`` holds).

    The run holds an exclusive lock on ``out`` for its whole life (a second run on the same folder
    is refused with the holder's pid); every reply and the run card pass through the run's
    :class:`~biovqa.engine.secrets.Redactor` before they are written."""
    locks: list[RunLock] = []
    try:
        return _run_locked(bench_path, out, options, progress_stream, locks)
    finally:
        for lock in locks:
            lock.release()


def _run_locked(bench_path: str | Path, out: str | Path, options: RunOptions,
                progress_stream: Any, locks: list[RunLock]) -> RunResult:
    from biovqa.engine.card import build_card, earlier_sessions
    from biovqa.engine.card import write_card as write_card_raw
    from biovqa.engine.executors import make_executor
    from biovqa.engine.identity import identity_digest, run_identity
    from biovqa.engine.presets import resolve_preset as match_preset
    from biovqa.engine.secrets import Redactor

    redactor = Redactor.for_options(options.backend_options)

    def write_card(run_dir: Path, card: dict[str, Any]) -> Path:
        card = redactor.value(card)
        redactions = redactor.summary()  # a server that echoed the key: say so in the card
        if redactions:
            card["redactions"] = redactions
        return write_card_raw(run_dir, card)

    started_wall = time.time()
    started = time.monotonic()
    bench = open_bench(bench_path)
    model = options.model or default_model(options.backend)
    if not model:
        raise BiovqaError("no model given", field="--model",
                          hint="give an HF id, a local checkpoint folder or a served model name")
    options = replace(options, model=model)
    selected_items = select_items(bench.items, options.selection)
    if selected_items.num_rows == 0:
        raise BiovqaError("the selection holds no items", file=bench.root,
                          hint="check --components/--tasks/--limit/--shard against the benchmark")
    preset, preset_match = match_preset(model, options.preset)
    wrap = resolve_preset(preset.key)[1]
    if (preset_match.get("matched_by") in ("config", "forced")
            and options.backend in ("transformers", "vllm")):
        # a local copy of a paper model (or a forced preset): the folder is still the checkpoint,
        # the preset gives the wrappers, caps and processor limits
        options = replace(options, backend_options={**options.backend_options, "preset": preset})
    all_components = sorted(set(bench.items.column("component").to_pylist()))
    prompting = prompting_facts(bench)
    template_hash = prompt_template_hash(preset, wrap, all_components, prompting)
    decoding = decoding_settings(preset, all_components, options.max_new_tokens)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    locks.append(RunLock(out).acquire())
    model_label = str(getattr(preset, "key", None) or model)
    # refuse a folder of another run before loading a model (revision and identity after)
    refuse_if_different(out, ModelFingerprint(model_label, "?", decoding).header(
        bench.manifest_sha256, template_hash), skip=("revision", "identity"))

    executor = make_executor(options, bench)
    try:
        executor.start()
        facts = executor.describe()
        revision = _resolved_revision(facts, options, preset)
        identity = run_identity(facts, {k: v for k, v in options.backend_options.items()
                                        if k != "preset"}, model)
        fingerprint = ModelFingerprint(model=model_label, revision=revision, decoding=decoding,
                                       identity=identity)
        header = fingerprint.header(bench.manifest_sha256, template_hash)
        store = PredictionStore.open(out, header, flush_rows=options.flush_rows,
                                     flush_seconds=options.flush_seconds)
        plan = build_requests(bench, selected_items, preset, wrap, model_label,
                              f"{revision}#{identity_digest(identity)}",
                              max_new_tokens=options.max_new_tokens)
        done = store.done_keys(retry_failed=options.retry_failed)
        todo = plan.subset(np.array([r.key not in done for r in plan.requests], dtype=bool))
        batch_tokens, max_batch_items = batch_bounds(
            executor.batch_hints(), batch_tokens=options.batch_tokens,
            max_batch_items=options.max_batch_items)
        ranges = make_batches(todo.image_keys, todo.token_estimates, batch_tokens=batch_tokens,
                              max_batch_items=max_batch_items)
        batches = [todo.requests[a:b] for a, b in ranges]
        progress = LiveProgress(len(todo), stream=progress_stream, enabled=options.progress,
                                skipped=len(plan) - len(todo))
        card_args: dict[str, Any] = {
            "bench": bench, "options": options, "facts": facts, "header": header,
            "selected": len(plan), "resumed": len(plan) - len(todo), "started": started_wall,
            "executor": executor.name, "earlier_sessions": earlier_sessions(out),
            "preset_match": preset_match,
            "subset": subset_facts(bench.items, selected_items, options.selection),
            "planned_tokens": int(plan.token_estimates.sum()),
            "prompting": prompting,
        }
        write_card(out, build_card(**card_args, status="running"))

        def on_batch(index: int, replies: list[Reply]) -> None:
            batch = batches[index]
            _check_replies(batch, replies, options.backend)
            replies = [redactor.reply(r) for r in replies]
            store.append([r.item_id for r in batch], replies, model_label)
            progress.advance(batch, replies)

        try:
            executor.run(batches, on_batch)
        except BaseException as exc:
            store.flush()  # keep every reply received so far; the same command resumes
            status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
            write_card(out, build_card(**card_args, status=status, ended=time.time(),
                                       progress=progress.snapshot()))
            progress.close()  # after the card: a display cut short by the interrupt cannot cost it
            if isinstance(exc, BiovqaError):
                exc.message = redactor.text(exc.message) or ""
                exc.args = (exc.render(),)
            raise
        store.flush()
        progress.close()
        if store.segments_written > 64 or len(store.segment_paths()) > 256:
            store.compact()
        table = store.materialize(keys=[r.key for r in plan.requests])
        card_args["facts"] = executor.describe()  # end-of-run facts (e.g. prefix-cache hit rate)
    finally:
        executor.close()
    elapsed = time.monotonic() - started
    failed = int(pc.sum(pc.equal(table.column("status"), "failed")).as_py() or 0)
    card = build_card(**card_args, status="complete", ended=time.time(), elapsed_s=elapsed,
                      progress=progress.snapshot(), predictions=table)
    write_card(out, card)
    return RunResult(run_dir=out, predictions_path=out / PREDICTIONS_FILE, card=card,
                     selected=len(plan), resumed=len(plan) - len(todo), asked=len(todo),
                     failed=failed)


__all__ = [
    "CHARS_PER_TOKEN", "DEFAULT_IMAGE_SIZE", "SYSTEM_RULE", "LiveProgress", "ModelFingerprint",
    "RunOptions", "RunResult", "Selection", "build_requests", "default_model", "image_keys",
    "item_modes", "make_batches", "merge_coverage", "order_image_first",
    "parse_shard", "prompt_template_hash", "prompting_facts", "request_key", "resolve_preset",
    "run_benchmark", "select_items", "shard_by_image", "stratified_sample",
]
