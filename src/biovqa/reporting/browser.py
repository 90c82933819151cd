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

import hashlib
import json
import math
from pathlib import Path
from typing import Any, Callable, Sequence

import pyarrow.parquet as pq

from biovqa.errors import BiovqaError
from biovqa.reporting.leaderboard import Run

PAGE_SIZE = 50
THUMB_PX = 200
#: the long side of the copy shown when a thumbnail is clicked
LARGE_PX = 1024
#: per-item score columns that explain a score (C1 parse status and LCA rank, C2 kernel similarity
#: and parse status, C3 parsed value and tolerance hits, C4 yes/no, …), shown beside each reply
EXPLAIN_COLUMNS = ("resolved_node", "lca_rank", "severity", "em_soft", "parse_status", "s", "b",
                   "pred_number", "rel_err", "hit20", "iou", "vas", "steps", "box_convention",
                   "said_yes", "similarity", "chosen", "level_name")
GROUP_COLUMNS = ("group", "family", "dataset", "species", "category")
TIER_COLUMNS = ("tier", "condition", "prevalence_tier")


def _js_json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True, sort_keys=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _first(value: Callable[[str], Any], names: Sequence[str]) -> str:
    """The first of the columns ``names`` with a value (``value(name)``), as text."""
    for name in names:
        found = value(name)
        if found not in (None, ""):
            return str(found)
    return ""


def _reply(scores: "_Columns | None", item_id: str) -> list[Any] | None:
    """[status, raw reply, parsed reply, score, {column: value} explaining the score] of one
    model, None when it has no row."""
    row = scores.row.get(item_id) if scores is not None else None
    if scores is None or row is None:
        return None
    explain = {}
    for name in EXPLAIN_COLUMNS:
        value = scores.get(row, name)
        if value is None or isinstance(value, float) and not math.isfinite(value):
            continue
        explain[name] = round(value, 3) if isinstance(value, float) else (
            value if isinstance(value, (bool, int)) else str(value))
    return [str(scores.get(row, "status") or ""), scores.get(row, "response"), scores.get(row, "parsed"),
            _score(scores.get(row, "score")), explain]


def _score(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


class _Columns:
    """A table held column-wise (one Python list per column) with each item's row: far less memory
    than one dict per row at 1.86 M items × many models. A repeated item id keeps its last row."""

    def __init__(self, table: Any) -> None:
        self.columns: dict[str, list[Any]] = {name: table.column(name).to_pylist() for name in table.column_names}
        self.row = {item_id: k for k, item_id in enumerate(self.columns["item_id"])}

    def get(self, row: int | None, name: str) -> Any:
        if row is None or name not in self.columns:
            return None
        return self.columns[name][row]


def _read_scores(run: Run) -> _Columns | None:
    path = (run.path / "items.parquet") if run.path is not None else None
    if path is None or not path.is_file():
        return None
    names = pq.read_schema(path).names
    wanted = [c for c in ("item_id", "task", "status", "response", "parsed", "score", "gold",
                          *GROUP_COLUMNS, *TIER_COLUMNS, *EXPLAIN_COLUMNS) if c in names]
    return _Columns(pq.read_table(path, columns=wanted))


def _read_bench(runs: Sequence[Run]) -> tuple[_Columns | None, Any]:
    """Benchmark items of the first run whose recorded benchmark folder still exists."""
    from biovqa.bench.folder import open_bench

    for run in runs:
        root = (run.summary.get("provenance") or {}).get("benchmark")
        if root and Path(root, "manifest.json").is_file():
            try:
                bench = open_bench(root, verify=False)
                keep = [c for c in ("item_id", "task", "question", "options", "answer", "image",
                                    *GROUP_COLUMNS, *TIER_COLUMNS) if c in bench.items.column_names]
                rows = _Columns(bench.items.select(keep))
            except Exception:  # the browser still works from the score files alone
                continue
            return rows, bench
    return None, None


class _Item:
    """One item as the browser shows it: benchmark columns where the benchmark has them, else the
    first score folder's."""

    def __init__(self, item_id: str, base: _Columns | None, present: Sequence[_Columns]) -> None:
        self.id = item_id
        self.base = base
        self.b = base.row.get(item_id) if base is not None else None
        self.first = next(s for s in present if item_id in s.row)
        self.f = self.first.row[item_id]

    def value(self, name: str) -> Any:
        if self.base is not None and self.b is not None and name in self.base.columns:
            return self.base.columns[name][self.b]
        return self.first.get(self.f, name)

    def task(self) -> str:
        return str(self.value("task") or "")

    def tier(self) -> str:
        """The tier, in one spelling (C1 writes ``Easy``, C3 ``easy``: one filter value)."""
        return _first(self.value, TIER_COLUMNS).lower()

    def entry(self, task: str, scores: Sequence[_Columns | None], bench: Any, out: Path,
              cache: dict[str, str | None]) -> dict[str, Any]:
        bench_value = (lambda name: self.base.get(self.b, name)) if self.base is not None else (lambda name: None)
        answer = bench_value("answer")
        question = str(bench_value("question") or "")
        options = [str(o) for o in (bench_value("options") or [])]
        if options and all(o in question for o in options):
            options = []  # the question already lists them (C2): shown once
        image = str(bench_value("image") or "")
        return {
            "id": self.id,
            "task": task,
            "group": _first(self.value, GROUP_COLUMNS),
            "tier": self.tier(),
            "question": question,
            "options": options,
            "gold": str(answer if answer is not None else self.first.get(self.f, "gold") or ""),
            "image": _thumbnail(bench, image, out, cache),
            "large": _thumbnail(bench, image, out, cache, size=LARGE_PX, folder="large"),
            "replies": [_reply(s, self.id) for s in scores],
        }


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


def write_browser(runs: Sequence[Run], out: Path) -> dict[str, Any]:
    """Write the browser's sidecar files into ``out/browser``; returns the index (``index.js``)."""
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
        models[component] = [r.label for r in comp_runs]
        scores = [_read_scores(r) for r in comp_runs]
        present = [s for s in scores if s is not None]
        base, bench = _read_bench(comp_runs)
        ids = sorted(set().union(*[s.row.keys() for s in present]))
        # items sorted into cells (ids sorted within), then written page by page: only one page of
        # entries is held at a time
        by_cell: dict[tuple[str, str, str], list[str]] = {}
        for item_id in ids:
            item = _Item(item_id, base, present)
            key = (item.task(), _first(item.value, GROUP_COLUMNS), item.tier())
            by_cell.setdefault(key, []).append(item_id)
        for (task, group, tier) in sorted(by_cell):
            cell_ids = by_cell[(task, group, tier)]
            first = page_no + 1
            for start in range(0, len(cell_ids), PAGE_SIZE):
                chunk = [_Item(item_id, base, present).entry(task, scores, bench, out, cache)
                         for item_id in cell_ids[start:start + PAGE_SIZE]]
                page_no += 1
                (out / page_file(page_no)).write_text(f"biovqaPage({page_no},{_js_json(chunk)});\n",
                                                      encoding="utf-8")
            cells.append((component, task, group, tier, first, page_no - first + 1, len(cell_ids)))
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
