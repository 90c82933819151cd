"""The prediction store: append-only, crash-safe segments of replies keyed by what was asked.

Layout inside a run folder::

    RUN/store/store.json            the header: what every key in this store was made with
    RUN/store/segments/*.parquet    append-only segments, one row per reply (+ its ``key``)

A segment is written to a hidden temporary file, fsynced, renamed into place and the folder is
fsynced, so a segment is either complete or absent whatever kills the process; a run loses at most
the replies it had not flushed yet, and those are simply asked again on resume.

Each row's ``key`` is ``sha256`` over the item's content (id, question, instruction, options, image
hash or path), the exact prompt the model saw (system message and wrapped user text), the model id
and revision, and the decoding settings (see :func:`biovqa.engine.requests.request_key`). Resuming skips
keys already answered, whatever the shard layout or number of GPUs that answered them; merging
stores refuses stores whose headers disagree.

Reading keeps one row per key: an ``ok`` row wins over a ``failed`` one, then the earliest
segment; so a failed reply retried with ``--retry-failed`` is never recorded twice in the
predictions file.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import socket
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from biovqa.errors import BiovqaError, InputFormatError, MissingResourceError
from biovqa.bench.folder import FolderLock, process_alive, write_json, write_parquet
from biovqa.records import PREDICTION_SCHEMA
from biovqa.engine.backends.base import Reply

STORE_FORMAT = "biovqa-store/1"
STORE_DIR = "store"
HEADER_FILE = "store.json"
SEGMENTS_DIR = "segments"
PREDICTIONS_FILE = "predictions.parquet"

#: The columns of a segment: the predictions schema plus the store key.
STORE_SCHEMA = pa.schema([pa.field("key", pa.string()), *PREDICTION_SCHEMA])

#: Header fields that must agree for two stores to be merged or a store to be resumed, with the
#: words an error message uses for them.
HEADER_FIELDS: dict[str, str] = {
    "manifest_sha256": "benchmark manifest",
    "model": "model",
    "revision": "model revision",
    "prompt_template_hash": "prompts (wrappers, system messages)",
    "decoding": "decoding settings",
    "identity": "model identity (dtype, processor settings, options, chat template, weights)",
}
#: Header fields an older store may lack (read as their default).
OPTIONAL_HEADER_FIELDS = ("identity",)


@dataclass(frozen=True)
class StoreHeader:
    """What every key of a store was made with; two stores merge only when these agree."""

    manifest_sha256: str
    model: str
    revision: str
    prompt_template_hash: str
    decoding: dict[str, Any] = field(default_factory=dict)
    format: str = STORE_FORMAT
    identity: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, payload: dict[str, Any], *, file: Path | None = None) -> StoreHeader:
        missing = [name for name in (*HEADER_FIELDS, "format")
                   if name not in payload and name not in OPTIONAL_HEADER_FIELDS]
        if missing:
            raise InputFormatError("store header lacks a required key", file=file,
                                   field=missing[0], hint="this folder was not written by biovqa")
        if payload["format"] != STORE_FORMAT:
            raise InputFormatError(
                f"unsupported store format {payload['format']!r} (this biovqa reads "
                f"{STORE_FORMAT!r})", file=file, field="format")
        return cls(**{name: payload[name] for name in (*HEADER_FIELDS, "format")
                      if name in payload})

    def differences(self, other: StoreHeader) -> list[tuple[str, Any, Any]]:
        """``(field, ours, theirs)`` for every header field that disagrees."""
        return [
            (name, getattr(self, name), getattr(other, name))
            for name in HEADER_FIELDS
            if getattr(self, name) != getattr(other, name)
        ]


def describe_differences(diffs: Sequence[tuple[str, Any, Any]], ours: str, theirs: str) -> str:
    from biovqa.engine.identity import identity_differences

    lines = []
    for name, a, b in diffs:
        if name == "identity" and isinstance(a, dict) and isinstance(b, dict):
            changes = identity_differences(a, b)
            lines.append(f"  {HEADER_FIELDS[name]}: {ours} → {theirs} differ in "
                         + "; ".join(changes[:6]) + (" …" if len(changes) > 6 else ""))
        else:
            lines.append(f"  {HEADER_FIELDS[name]} ({name}): {ours} has {a!r}, {theirs} has {b!r}")
    return "\n".join(lines)


def read_header(run_dir: str | Path) -> StoreHeader:
    """The header of the store inside ``run_dir``."""
    path = Path(run_dir) / STORE_DIR / HEADER_FILE
    if not path.exists():
        raise MissingResourceError("not a biovqa run folder: the prediction store is missing",
                                   file=path, hint="give the --out folder of a `biovqa run`")
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputFormatError(f"store header is not valid JSON: {exc.msg}", file=path,
                               row=exc.lineno) from None
    return StoreHeader.from_json(payload, file=path)


_HOST = "".join(c if c.isalnum() else "_" for c in socket.gethostname())[:32] or "host"
_TOKEN_PATTERN = re.compile(r"\d{20}-(?P<host>\w+)-(?P<pid>\d+)-[0-9a-f]{8}")


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_STATUS_RANK = {"ok": 0, "failed": 1}


def best_per_key(rows: pa.Table) -> pa.Table:
    """One row per ``key``: status ``ok`` before ``failed``, then the earliest row.

    ``rows`` must be in write order (segments by name, rows in order); the result is sorted by key.
    """
    if rows.num_rows == 0:
        return rows
    rank = pc.if_else(pc.equal(rows.column("status"), "ok"), 0, 1).cast(pa.int8())
    keyed = pa.table({"key": rows.column("key"), "rank": rank,
                      "order": pa.array(np.arange(rows.num_rows))})
    sort = pc.sort_indices(keyed, sort_keys=[("key", "ascending"), ("rank", "ascending"),
                                             ("order", "ascending")])
    sorted_keys = pc.take(rows.column("key"), sort).combine_chunks()
    first = np.ones(len(sort), dtype=bool)
    if len(sort) > 1:
        first[1:] = pc.not_equal(sorted_keys.slice(1), sorted_keys.slice(0, len(sort) - 1)
                                 ).to_numpy(zero_copy_only=False)
    return rows.take(pc.filter(sort, pa.array(first)))


def refuse_if_different(run_dir: str | Path, header: StoreHeader, *,
                        skip: Sequence[str] = ()) -> None:
    """Raise if ``run_dir`` holds a store whose header differs from ``header`` (fields in ``skip``
    not compared: the engine checks before loading a model, when the revision is not known yet)."""
    if not (Path(run_dir) / STORE_DIR / HEADER_FILE).exists():
        return
    diffs = [d for d in read_header(run_dir).differences(header) if d[0] not in skip]
    if diffs:
        raise BiovqaError(
            "this run folder already holds predictions made with different settings:\n"
            + describe_differences(diffs, "the folder", "this run"),
            file=run_dir,
            hint="use a new --out folder, or the same model, prompts, decoding and benchmark to "
            "resume",
        )


LOCK_FILE = ".biovqa-run.lock"


class RunLock(FolderLock):
    """The lock of a run folder (``RUN/.biovqa-run.lock``): :class:`~biovqa.bench.folder.FolderLock`
    inside the folder, since a run writes it in place and resumes into it.

    ``biovqa run`` and the output of ``biovqa merge`` hold it exclusively for their whole life;
    ``merge`` holds its inputs shared while it reads them. A second holder is refused at once with
    the first one's pid and host, so two processes never write, compact or delete segments of one
    store together. The lock dies with its process (kill -9 included); the file stays and is reused.
    """

    def __init__(self, run_dir: str | Path, *, shared: bool = False, command: str = "run") -> None:
        self.run_dir = Path(run_dir)
        super().__init__(self.run_dir / LOCK_FILE, folder=self.run_dir, command=command, shared=shared)


class PredictionStore:
    """Append replies, flush them as crash-safe segments, read them back one row per key."""

    def __init__(self, run_dir: str | Path, header: StoreHeader, *, flush_rows: int = 4096,
                 flush_seconds: float = 10.0) -> None:
        self.run_dir = Path(run_dir)
        self.root = self.run_dir / STORE_DIR
        self.segments_dir = self.root / SEGMENTS_DIR
        self.header = header
        self.flush_rows = max(1, int(flush_rows))
        self.flush_seconds = float(flush_seconds)
        # names sort by creation time; host and pid say who writes a temp file (see open())
        self._token = (f"{time.time_ns():020d}-{_HOST}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        self._counter = itertools.count()
        self._buffer: dict[str, list[Any]] = {name: [] for name in STORE_SCHEMA.names}
        self._last_flush = time.monotonic()
        self.segments_written = 0

    # -- opening ---------------------------------------------------------------------------------
    @classmethod
    def open(cls, run_dir: str | Path, header: StoreHeader, **options: Any) -> PredictionStore:
        """Open (or create) the store of ``run_dir``; an existing store must have the same header."""
        store = cls(run_dir, header, **options)
        header_path = store.root / HEADER_FILE
        if header_path.exists():
            refuse_if_different(run_dir, header)
        else:
            store.segments_dir.mkdir(parents=True, exist_ok=True)
            tmp = store.root / f".{HEADER_FILE}.tmp-{store._token}"
            write_json(tmp, header.to_json())
            _fsync_path(tmp)
            os.replace(tmp, header_path)
            _fsync_path(store.root)
        store.segments_dir.mkdir(parents=True, exist_ok=True)
        store.remove_stale_temp_files()
        return store

    def remove_stale_temp_files(self) -> int:
        """Delete temp files left by killed writers of this host (their pid no longer runs).

        A temp file of another host, or of a live process, is left alone: a store may be shared by
        several writers at once (segment names never collide)."""
        removed = 0
        candidates = [*self.segments_dir.glob(".tmp-*"), *self.root.glob(".*.tmp-*"),
                      *self.run_dir.glob(".*.tmp-*")]
        for path in candidates:
            match = _TOKEN_PATTERN.search(path.name)
            if match is None or match["host"] != _HOST or process_alive(int(match["pid"])):
                continue
            path.unlink(missing_ok=True)
            removed += 1
        return removed

    # -- writing ---------------------------------------------------------------------------------
    @property
    def pending(self) -> int:
        return len(self._buffer["key"])

    def append(self, item_ids: Sequence[str], replies: Sequence[Reply], model: str) -> None:
        """Buffer one batch of replies (``item_ids[i]`` asked ``replies[i]``); flush when due."""
        if len(item_ids) != len(replies):
            raise ValueError(f"{len(item_ids)} item ids for {len(replies)} replies")
        buf = self._buffer
        ok = [r.status == "ok" and r.text is not None for r in replies]
        buf["key"].extend([r.key for r in replies])
        buf["item_id"].extend(item_ids)
        buf["response"].extend([r.text if good else None for r, good in zip(replies, ok)])
        buf["status"].extend(["ok" if good else "failed" for good in ok])
        buf["model"].extend([model] * len(replies))
        buf["latency_s"].extend([r.latency_s for r in replies])
        buf["prompt_tokens"].extend([r.prompt_tokens for r in replies])
        buf["completion_tokens"].extend([r.completion_tokens for r in replies])
        buf["error"].extend([
            None if good else (r.error or ("backend returned no text" if r.status == "ok"
                                           else "failed"))
            for r, good in zip(replies, ok)
        ])
        if self.pending >= self.flush_rows or (
            time.monotonic() - self._last_flush >= self.flush_seconds
        ):
            self.flush()

    def flush(self) -> Path | None:
        """Write the buffered replies as one segment: temp file, fsync, rename, fsync folder."""
        self._last_flush = time.monotonic()
        if not self.pending:
            return None
        table = pa.table(self._buffer, schema=STORE_SCHEMA)
        self._buffer = {name: [] for name in STORE_SCHEMA.names}
        return self._write_segment(table)

    def _write_segment(self, table: pa.Table) -> Path:
        name = f"{self._token}-{next(self._counter):06d}.parquet"
        final = self.segments_dir / name
        tmp = self.segments_dir / f".tmp-{name}"
        pq.write_table(table, tmp, compression="zstd")
        _fsync_path(tmp)
        os.replace(tmp, final)
        _fsync_path(self.segments_dir)
        self.segments_written += 1
        return final

    # -- reading ---------------------------------------------------------------------------------
    def segment_paths(self) -> list[Path]:
        """Complete segments in write order (hidden temp files of interrupted writes are ignored)."""
        if not self.segments_dir.is_dir():
            return []
        return sorted(p for p in self.segments_dir.glob("*.parquet") if not p.name.startswith("."))

    def read_rows(self) -> pa.Table:
        """Every stored row, in write order (duplicates per key included)."""
        tables = []
        for path in self.segment_paths():
            try:
                tables.append(pq.read_table(path, schema=STORE_SCHEMA))
            except (pa.ArrowInvalid, OSError) as exc:
                raise InputFormatError(
                    f"cannot read prediction segment: {exc}", file=path,
                    hint="the segment is damaged (disk error?); delete it and re-run the same "
                    "command: its items will be asked again",
                ) from None
        if not tables:
            return STORE_SCHEMA.empty_table()
        return pa.concat_tables(tables)

    def best_rows(self) -> pa.Table:
        """One row per key (``ok`` wins over ``failed``), sorted by key."""
        return best_per_key(self.read_rows())

    def done_keys(self, *, retry_failed: bool = False) -> set[str]:
        """Keys that need no new request: answered ``ok``, or failed unless ``retry_failed``."""
        best = self.best_rows()
        if retry_failed:
            best = best.filter(pc.equal(best.column("status"), "ok"))
        return set(best.column("key").to_pylist())

    def compact(self) -> None:
        """Rewrite all segments as one (best row per key); crash-safe, old segments removed after."""
        self.flush()
        old = self.segment_paths()
        if len(old) <= 1:
            return
        self._write_segment(self.best_rows())
        for path in old:
            path.unlink(missing_ok=True)
        _fsync_path(self.segments_dir)

    def materialize(self, keys: Iterable[str] | None = None,
                    out: str | Path | None = None) -> pa.Table:
        """The predictions table (``records.PREDICTION_SCHEMA``, sorted by item id), written to
        ``RUN/predictions.parquet`` (or ``out``). ``keys`` limits it to one selection of items."""
        self.flush()
        table = predictions_from_rows(self.best_rows(), keys, file=self.root)
        target = Path(out) if out is not None else self.run_dir / PREDICTIONS_FILE
        tmp = target.with_name(f".{target.name}.tmp-{self._token}")
        write_parquet(table, tmp)
        _fsync_path(tmp)
        os.replace(tmp, target)  # readers see the old file or the new one, never half of one
        return table


def predictions_from_rows(best: pa.Table, keys: Iterable[str] | None = None, *,
                          file: Path | None = None) -> pa.Table:
    """Best rows → predictions table: filter to ``keys``, one row per item id, sorted by item id."""
    if keys is not None:
        wanted = pa.array(list(keys) if not isinstance(keys, (list, tuple)) else keys, pa.string())
        best = best.filter(pc.is_in(best.column("key"), value_set=wanted))
    item_ids = best.column("item_id")
    if pc.count_distinct(item_ids).as_py() != best.num_rows:
        counts = pc.value_counts(item_ids)
        repeated = [v["values"] for v in counts.to_pylist() if v["counts"] > 1][:5]
        raise BiovqaError(
            f"item ids answered under different keys: {repeated}",
            file=file,
            hint="the items changed between runs that share this store; use a fresh --out folder",
        )
    best = best.sort_by([("item_id", "ascending")])
    return best.select(PREDICTION_SCHEMA.names).cast(PREDICTION_SCHEMA)


def merge_runs(run_dirs: Sequence[str | Path], out: str | Path) -> pa.Table:
    """Combine the stores of several runs (shards, machines) into ``out`` and write its
    predictions file. Refuses stores whose headers disagree (benchmark manifest, model, revision,
    prompts, decoding): their keys would not mean the same question to the same model."""
    if not run_dirs:
        raise BiovqaError("nothing to merge", hint="give one or more run folders")
    folders = [Path(d) for d in run_dirs]
    target = Path(out).resolve()
    locks = [RunLock(d, shared=True) for d in folders
             if d.is_dir() and d.resolve() != target]
    try:
        for lock in locks:
            lock.acquire()
        with RunLock(out):
            return _merge_locked(folders, out)
    finally:
        for lock in locks:
            lock.release()


def _merge_locked(run_dirs: list[Path], out: str | Path) -> pa.Table:
    headers = [read_header(d) for d in run_dirs]
    first = headers[0]
    for run_dir, header in zip(run_dirs[1:], headers[1:]):
        diffs = first.differences(header)
        if diffs:
            raise BiovqaError(
                f"cannot merge {run_dirs[0]} and {run_dir}: their predictions were made with "
                "different settings:\n" + describe_differences(diffs, str(run_dirs[0]),
                                                                str(run_dir)),
                file=run_dir,
                hint="merge only shards of one run (same benchmark, model revision, prompts and "
                "decoding); re-run the odd shard with the same settings",
            )
    rows = pa.concat_tables(
        [PredictionStore(d, h).read_rows() for d, h in zip(run_dirs, headers)]
    )
    store = PredictionStore.open(out, first)
    best = best_per_key(rows)
    if best.num_rows:
        store._write_segment(best)
    store.compact()
    return store.materialize()
