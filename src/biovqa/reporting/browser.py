"""The per-item browser's sidecar data: every item with its image thumbnail, question, options,
gold, and every model's raw reply, parsed reply, score and status side by side.

Layout beside ``index.html``::

    browser/index.js               window.BIOVQA_BROWSER = {models, facets, cells, ...} (a few KiB)
    browser/page-00001.js          biovqaPage(1, [...items]) — up to PAGE_SIZE items of one cell
    browser/thumbs/<hash>.jpg      images resized (JPEG) to at most THUMB_PX on the long side
    browser/large/<hash>.jpg       the same at most LARGE_PX, shown when a thumbnail is clicked

A *cell* is one (component, task, group, tier) combination. Items are sorted into cells and each
cell is cut into pages of PAGE_SIZE items numbered consecutively, so the index holds, per cell,
only [component, task, group, tier (indices into the facet lists), first page, pages, items]:
its size grows with the number of distinct facet combinations, never with the number of items
(at the real size, 1.86 M items, a few hundred cells). The page loads only ``index.js`` at
start-up; any filter is a set of cells, its pages the concatenation of their page ranges, and
every item of such a page matches the filter. Page files are loaded only when shown.

Pages are plain scripts (not JSON fetched with XHR) so the report works opened from disk
(``file://``), where browsers refuse ``fetch``. Data are JSON with ``<``, ``>`` and ``&`` written as
``\\u`` escapes; the page script inserts every text with ``textContent``, so model text never
becomes markup.
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from biovqa.components.registry import Component, get_component
from biovqa.errors import BiovqaError
from biovqa.reporting.leaderboard import Run

PAGE_SIZE = 50
THUMB_PX = 200
#: the long side of the copy shown when a thumbnail is clicked
LARGE_PX = 1024
#: score columns an item's entry shows in fields of its own, so never again among a reply's
#: explaining columns (a component's ``explain_columns`` may name them for a harness explanation)
SHOWN_BESIDE = ("gold",)


def _js_json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True, sort_keys=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _first_texts(columns: Sequence[list[Any]], n: int) -> list[str]:
    """Per item of ``n``, the first of ``columns`` with a value for it, as text ("" where none has
    one, or no column is declared)."""
    found: list[str] = [""] * n
    for column in reversed(columns):  # an earlier column overwrites a later one
        found = [found[i] if value in (None, "") else str(value) for i, value in enumerate(column)]
    return found


def _score(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _explained(value: Any) -> Any:
    """A score-explaining value as the page shows it (None: not shown)."""
    if value is None or isinstance(value, float) and not math.isfinite(value):
        return None
    return round(value, 3) if isinstance(value, float) else (value if isinstance(value, (bool, int)) else str(value))


def _last_rows(ids: pa.Array, table: pa.Table) -> np.ndarray:
    """Per id of ``ids``, its row in ``table`` (-1 where absent); a repeated id keeps its last row."""
    column = table.column("item_id")
    n = len(column)
    backwards = column.take(pa.array(np.arange(n - 1, -1, -1, dtype=np.int64)))
    found = pc.index_in(ids, value_set=backwards.cast(pa.string()))
    at = np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    return np.where(at < 0, -1, n - 1 - at)


def _taken(table: pa.Table, name: str, rows: np.ndarray) -> list[Any]:
    """Column ``name`` of ``table`` at ``rows`` as Python values (None at -1 or without the column)."""
    if name not in table.column_names:
        return [None] * len(rows)
    return table.column(name).take(pa.array(rows, mask=rows < 0)).to_pylist()


class _Replies:
    """One model's score rows lined up with the component's items: per item, the browser's
    [status, raw reply, parsed reply, score, {column: value} explaining the score], None where the
    model has no row. Each column is converted to what the page shows once, as a whole."""

    def __init__(self, table: pa.Table, ids: pa.Array, explain: Sequence[str]) -> None:
        rows = _last_rows(ids, table)
        self.absent = (rows < 0).tolist()
        self.status = [str(v or "") for v in _taken(table, "status", rows)]
        self.response = _taken(table, "response", rows)
        self.parsed = _taken(table, "parsed", rows)
        self.score = _shown(table, "score", rows, _score)
        self.explain = [(name, _shown(table, name, rows, _explained)) for name in explain
                        if name in table.column_names]

    def reply(self, i: int) -> list[Any] | None:
        if self.absent[i]:
            return None
        explain = {name: values[i] for name, values in self.explain if values[i] is not None}
        return [self.status[i], self.response[i], self.parsed[i], self.score[i], explain]


def _shown(table: pa.Table, name: str, rows: np.ndarray, convert: Callable[[Any], Any]) -> list[Any]:
    """Column ``name`` at ``rows`` through ``convert`` (:func:`_score` or :func:`_explained`), with
    the whole-column shortcuts that give the same values: a float column is rounded or passed
    where finite, a text, whole-number or boolean column is shown as it is."""
    kind = table.schema.field(name).type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    values = _taken(table, name, rows)
    if pa.types.is_floating(kind):
        isfinite = math.isfinite
        if convert is _explained:
            return [None if v is None or not isfinite(v) else round(v, 3) for v in values]
        return [None if v is None or not isfinite(v) else v for v in values]
    if convert is _explained and (pa.types.is_string(kind) or pa.types.is_large_string(kind)
                                  or pa.types.is_integer(kind) or pa.types.is_boolean(kind)):
        return values
    return [convert(v) for v in values]


def _read_scores(run: Run, declared: Component) -> pa.Table | None:
    path = (run.path / "items.parquet") if run.path is not None else None
    if path is None or not path.is_file():
        return None
    names = pq.read_schema(path).names
    wanted = [c for c in dict.fromkeys(("item_id", "task", "status", "response", "parsed", "score", "gold",
                                        *declared.group_columns, *declared.tier_columns,
                                        *declared.explain_columns)) if c in names]
    return pq.read_table(path, columns=wanted)


def _read_bench(runs: Sequence[Run], declared: Component) -> tuple[pa.Table | None, Any]:
    """Benchmark items of the first run whose recorded benchmark folder still exists."""
    from biovqa.bench.folder import open_bench

    for run in runs:
        root = (run.summary.get("provenance") or {}).get("benchmark")
        if root and Path(root, "manifest.json").is_file():
            try:
                bench = open_bench(root, verify=False)
                keep = [c for c in dict.fromkeys(("item_id", "task", "question", "options", "answer",
                                                  "image", *declared.group_columns, *declared.tier_columns))
                        if c in bench.items.column_names]
                rows = bench.items.select(keep)
            except Exception:  # the browser still works from the score files alone
                continue
            return rows, bench
    return None, None


class _Items:
    """A component's items as the browser shows them, one position per item id (sorted): each
    column from the benchmark where the benchmark has it for the item, else from the first score
    folder that has the item."""

    def __init__(self, ids: pa.Array, base: pa.Table | None, present: Sequence[pa.Table]) -> None:
        self.n = len(ids)
        self.base = base
        self.base_rows = _last_rows(ids, base) if base is not None else np.full(self.n, -1, dtype=np.int64)
        self.present = present
        self.present_rows = [_last_rows(ids, table) for table in present]
        self.first_of = np.full(self.n, -1, dtype=np.int64)  # which score folder is the item's first
        for k, rows in enumerate(self.present_rows):
            self.first_of[(self.first_of < 0) & (rows >= 0)] = k

    def first(self, name: str) -> list[Any]:
        """Column ``name`` from each item's first score folder (None where that folder lacks it)."""
        return self._first(name).tolist()

    def _first(self, name: str) -> np.ndarray:
        values = np.full(self.n, None, dtype=object)
        for k, (table, rows) in enumerate(zip(self.present, self.present_rows)):
            if name not in table.column_names:
                continue
            where = np.flatnonzero(self.first_of == k)
            values[where] = _objects(table.column(name).take(pa.array(rows[where])))
        return values

    def bench(self, name: str) -> list[Any]:
        """Column ``name`` of the benchmark (None where it lacks the item or the column)."""
        if self.base is None:
            return [None] * self.n
        return _taken(self.base, name, self.base_rows)

    def value(self, name: str) -> list[Any]:
        """The benchmark's value where it has the column and the item, else the first folder's."""
        values = self._first(name)
        if self.base is None or name not in self.base.column_names:
            return values.tolist()
        where = np.flatnonzero(self.base_rows >= 0)
        values[where] = _objects(self.base.column(name).take(pa.array(self.base_rows[where])))
        return values.tolist()


def _objects(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """``values`` as a 1-D object array of Python values (a list value stays one element)."""
    return np.fromiter(values.to_pylist(), dtype=object, count=len(values))


def _thumbnail(bench: Any, image: str, out: Path, cache: dict[str, str | None], *, size: int = THUMB_PX,
               folder: str = "thumbs") -> str | None:
    """Write a copy of the item's image resized to at most ``size`` px on the long side into
    ``browser/<folder>/``; returns its path relative to the report (None when unreadable)."""
    if not image or bench is None:
        return None
    key = f"{folder}|{image}"
    if key in cache:
        return cache[key]
    from PIL import Image

    bench_key = f"manifest|{bench.root}"
    if bench_key not in cache:  # named by the benchmark's content, not where it lies
        cache[bench_key] = bench.manifest_sha256
    name = hashlib.sha256(f"{cache[bench_key]}|{image}".encode()).hexdigest()[:20] + ".jpg"
    target = out / "browser" / folder / name
    try:
        source = bench.resolve_image(image)
        with Image.open(source) as img:
            img.draft("RGB", (size * 2, size * 2))  # JPEG sources decode at reduced size
            img.thumbnail((size, size), reducing_gap=2.0)
            small = img.convert("RGB")
            target.parent.mkdir(parents=True, exist_ok=True)
            small.save(target, format="JPEG", quality=82 if size <= THUMB_PX else 88)
        cache[key] = f"browser/{folder}/{name}"
    except (OSError, ValueError, BiovqaError):  # unreadable, truncated or outside its folder: no image
        cache[key] = None
    return cache[key]


INDEX_FILE = "index.js"
INDEX_PREFIX = "window.BIOVQA_BROWSER="
FACETS = ("component", "task", "group", "tier")


def page_file(no: int) -> str:
    """The page's file, relative to the report (the page script builds the same name)."""
    return f"browser/page-{no:05d}.js"


def _sorted_ids(tables: Sequence[pa.Table]) -> pa.Array:
    """Every item id of ``tables``, once each, in code-point order (UTF-8 byte order is the same)."""
    if not tables:
        return pa.array([], pa.string())
    ids = pc.unique(pa.chunked_array([t.column("item_id").cast(pa.string()) for t in tables]).combine_chunks())
    ids = ids.drop_null()
    return ids.take(pc.sort_indices(ids))


@contextmanager
def _cycle_collector_paused() -> Iterator[None]:
    """Python's cycle collector off while millions of small lists and dicts are made (none of
    them in a cycle): each automatic collection walks every container still alive, so at the real
    size they cost a quarter of the browser's time and find nothing."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def write_browser(runs: Sequence[Run], out: Path) -> dict[str, Any]:
    """Write the browser's sidecar files into ``out/browser``; returns the index (``index.js``)."""
    with _cycle_collector_paused():
        return _write_browser(runs, out)


def _write_browser(runs: Sequence[Run], out: Path) -> dict[str, Any]:
    folder = out / "browser"
    folder.mkdir(parents=True, exist_ok=True)
    by_component: dict[str, list[Run]] = {}
    for run in runs:
        by_component.setdefault(run.component, []).append(run)
    models: dict[str, list[str]] = {}
    cache: dict[str, str | None] = {}
    cells: list[tuple[str, str, str, str, int, int, int]] = []  # facet values, first page, pages, items
    page_no = 0
    for component in sorted(by_component):
        comp_runs = by_component[component]
        declared = get_component(component)
        explain = [name for name in declared.explain_columns if name not in SHOWN_BESIDE]
        models[component] = [r.label for r in comp_runs]
        tables = [_read_scores(r, declared) for r in comp_runs]
        present = [t for t in tables if t is not None]
        base, bench = _read_bench(comp_runs, declared)
        ids = _sorted_ids(present)
        items = _Items(ids, base, present)
        replies = [None if t is None else _Replies(t, ids, explain) for t in tables]
        item_ids = ids.to_pylist()
        tasks = [str(v or "") for v in items.value("task")]
        groups = [items.value(name) for name in declared.group_columns]
        tiers = [items.value(name) for name in declared.tier_columns]
        questions = [str(v or "") for v in items.bench("question")]
        options = items.bench("options")
        answers, golds = items.bench("answer"), items.first("gold")
        images = [str(v or "") for v in items.bench("image")]
        # items sorted into cells (ids sorted within), then written page by page: only one page of
        # entries is held at a time
        by_cell: dict[tuple[str, str, str], list[int]] = {}
        for i, key in enumerate(zip(tasks, _first_texts(groups, items.n),
                                   [t.lower() for t in _first_texts(tiers, items.n)])):
            by_cell.setdefault(key, []).append(i)

        def entry(i: int, task: str, group: str, tier: str) -> dict[str, Any]:
            listed = [str(o) for o in (options[i] or [])]
            if listed and all(o in questions[i] for o in listed):
                listed = []  # the question already lists them (C2): shown once
            return {
                "id": item_ids[i],
                "task": task,
                "group": group,
                "tier": tier,
                "question": questions[i],
                "options": listed,
                "gold": str(answers[i] if answers[i] is not None else golds[i] or ""),
                "image": _thumbnail(bench, images[i], out, cache),
                "large": _thumbnail(bench, images[i], out, cache, size=LARGE_PX, folder="large"),
                "replies": [None if r is None else r.reply(i) for r in replies],
            }

        for (task, group, tier) in sorted(by_cell):
            members = by_cell[(task, group, tier)]
            first = page_no + 1
            for start in range(0, len(members), PAGE_SIZE):
                chunk = [entry(i, task, group, tier) for i in members[start:start + PAGE_SIZE]]
                page_no += 1
                (out / page_file(page_no)).write_text(f"biovqaPage({page_no},{_js_json(chunk)});\n",
                                                      encoding="utf-8")
            cells.append((component, task, group, tier, first, page_no - first + 1, len(members)))
    counts: dict[str, dict[str, int]] = {k: {} for k in FACETS}
    for cell in cells:
        for k, value in zip(FACETS, cell[:4]):
            counts[k][value] = counts[k].get(value, 0) + cell[6]
    facets = {k: [[v, counts[k][v]] for v in sorted(counts[k])] for k in FACETS}
    position = {k: {v: i for i, (v, _) in enumerate(facets[k])} for k in FACETS}
    index = {"page_size": PAGE_SIZE, "pages": page_no, "items": sum(c[6] for c in cells), "models": models,
             "facets": facets,
             "cells": [[*(position[k][v] for k, v in zip(FACETS, c[:4])), *c[4:]] for c in cells]}
    (folder / INDEX_FILE).write_text(f"{INDEX_PREFIX}{_js_json(index)};\n", encoding="utf-8")
    return index


def read_index(report: Path) -> dict[str, Any]:
    """The browser index of the report in ``report`` (the folder holding ``index.html``)."""
    text = (report / "browser" / INDEX_FILE).read_text(encoding="utf-8")
    return dict(json.loads(text.removeprefix(INDEX_PREFIX).rstrip().rstrip(";")))


def page_list(index: dict[str, Any]) -> list[dict[str, Any]]:
    """Every page of ``index`` in order: its number, file and the facet values of its cell."""
    pages: list[dict[str, Any]] = []
    for cell in index["cells"]:
        values = {k: index["facets"][k][i][0] for k, i in zip(FACETS, cell[:4])}
        pages.extend({"no": no, "file": page_file(no), **values} for no in range(cell[4], cell[4] + cell[5]))
    return pages


def read_page(report: Path, no: int) -> list[dict[str, Any]]:
    """The items of page ``no``."""
    body = (report / page_file(no)).read_text(encoding="utf-8")
    return list(json.loads(body[body.index(",") + 1:body.rindex(")")]))
