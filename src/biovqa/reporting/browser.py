"""The per-item browser's sidecar data: every item with its image thumbnail, question, options,
gold, and every model's raw reply, parsed reply, score and status side by side.

Layout beside ``index.html``::

    browser/manifest.js            window.BIOVQA_BROWSER = {models, pages: [...], facets}
    browser/page-00001.js          biovqaPage(1, [...items]) — PAGE_SIZE items of one component/task
    browser/thumbs/<hash>.jpg      images resized (JPEG) to at most THUMB_PX on the long side

Pages are plain scripts (not JSON fetched with XHR) so the report works opened from disk
(``file://``), where browsers refuse ``fetch``; the page loads a sidecar file only when the user
opens that page. Each page entry in the manifest lists the groups and tiers it holds, so filters
skip pages without a match. Data are JSON with ``<``, ``>`` and ``&`` written as ``\\u`` escapes;
the page script inserts every text with ``textContent``, so model text never becomes markup.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any, Sequence

import pyarrow.parquet as pq

from biovqa.reporting.leaderboard import Run

PAGE_SIZE = 50
THUMB_PX = 160
GROUP_COLUMNS = ("group", "family", "dataset", "species", "category")
TIER_COLUMNS = ("tier", "condition", "prevalence_tier")


def _js_json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True, sort_keys=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _first(row: dict[str, Any], names: Sequence[str]) -> str:
    for name in names:
        value = row.get(name)
        if value not in (None, ""):
            return str(value)
    return ""


def _score(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _read_scores(run: Run) -> dict[str, dict[str, Any]]:
    path = (run.path / "items.parquet") if run.path is not None else None
    if path is None or not path.is_file():
        return {}
    names = pq.read_schema(path).names
    wanted = [c for c in ("item_id", "task", "status", "response", "parsed", "score", "gold",
                          *GROUP_COLUMNS, *TIER_COLUMNS) if c in names]
    table = pq.read_table(path, columns=wanted)
    return {row["item_id"]: row for row in table.to_pylist()}


def _read_bench(runs: Sequence[Run]) -> tuple[dict[str, dict[str, Any]], Any]:
    """Benchmark items of the first run whose recorded benchmark folder still exists."""
    from biovqa.bench.folder import open_bench

    for run in runs:
        root = (run.summary.get("provenance") or {}).get("benchmark")
        if root and Path(root, "manifest.json").is_file():
            try:
                bench = open_bench(root, verify=False)
                keep = [c for c in ("item_id", "task", "question", "options", "answer", "image",
                                    *GROUP_COLUMNS, *TIER_COLUMNS) if c in bench.items.column_names]
                rows = bench.items.select(keep).to_pylist()
            except Exception:  # the browser still works from the score files alone
                continue
            return {row["item_id"]: row for row in rows}, bench
    return {}, None


def _thumbnail(bench: Any, image: str, out: Path, cache: dict[str, str | None]) -> str | None:
    """Write a resized copy of the item's image; returns its path relative to the report."""
    if not image or bench is None:
        return None
    if image in cache:
        return cache[image]
    from PIL import Image

    source = bench.resolve_image(image)
    name = hashlib.sha256(f"{bench.root}|{image}".encode()).hexdigest()[:20] + ".jpg"
    target = out / "browser" / "thumbs" / name
    try:
        with Image.open(source) as img:
            img.draft("RGB", (THUMB_PX * 2, THUMB_PX * 2))  # JPEG sources decode at reduced size
            img.thumbnail((THUMB_PX, THUMB_PX), reducing_gap=2.0)
            small = img.convert("RGB")
            target.parent.mkdir(parents=True, exist_ok=True)
            small.save(target, format="JPEG", quality=82)
        cache[image] = f"browser/thumbs/{name}"
    except (OSError, ValueError):
        cache[image] = None
    return cache[image]


def write_browser(runs: Sequence[Run], out: Path) -> dict[str, Any]:
    """Write the browser's sidecar files into ``out/browser``; returns the manifest."""
    folder = out / "browser"
    folder.mkdir(parents=True, exist_ok=True)
    by_component: dict[str, list[Run]] = {}
    for run in runs:
        by_component.setdefault(run.component, []).append(run)
    pages: list[dict[str, Any]] = []
    models: dict[str, list[str]] = {}
    cache: dict[str, str | None] = {}
    page_no = 0
    for component in sorted(by_component):
        comp_runs = by_component[component]
        models[component] = [r.label for r in comp_runs]
        scores = [_read_scores(r) for r in comp_runs]
        bench_rows, bench = _read_bench(comp_runs)
        ids = sorted(set().union(*[set(s) for s in scores]) if scores else set())
        by_task: dict[str, list[dict[str, Any]]] = {}
        for item_id in ids:
            base = bench_rows.get(item_id, {})
            first = next((s[item_id] for s in scores if item_id in s), {})
            merged = {**first, **base}
            task = str(merged.get("task") or "")
            entry: dict[str, Any] = {
                "id": item_id,
                "task": task,
                "group": _first(merged, GROUP_COLUMNS),
                "tier": _first(merged, TIER_COLUMNS),
                "question": str(base.get("question") or ""),
                "options": [str(o) for o in (base.get("options") or [])],
                "gold": str(base.get("answer") if base.get("answer") is not None else first.get("gold") or ""),
                "image": _thumbnail(bench, str(base.get("image") or ""), out, cache),
                "replies": [
                    [str(s[item_id].get("status") or ""), s[item_id].get("response"), s[item_id].get("parsed"),
                     _score(s[item_id].get("score"))] if item_id in s else None
                    for s in scores],
            }
            by_task.setdefault(task, []).append(entry)
        for task in sorted(by_task):
            rows = by_task[task]
            for start in range(0, len(rows), PAGE_SIZE):
                chunk = rows[start:start + PAGE_SIZE]
                page_no += 1
                name = f"page-{page_no:05d}.js"
                (folder / name).write_text(f"biovqaPage({page_no},{_js_json(chunk)});\n", encoding="utf-8")
                pages.append({"no": page_no, "file": f"browser/{name}", "component": component, "task": task,
                              "count": len(chunk), "groups": sorted({r["group"] for r in chunk}),
                              "tiers": sorted({r["tier"] for r in chunk})})
    manifest = {"models": models, "pages": pages, "page_size": PAGE_SIZE,
                "facets": {"component": sorted(by_component),
                           "task": sorted({p["task"] for p in pages}),
                           "group": sorted({g for p in pages for g in p["groups"]}),
                           "tier": sorted({t for p in pages for t in p["tiers"]})}}
    (folder / "manifest.js").write_text(f"window.BIOVQA_BROWSER={_js_json(manifest)};\n", encoding="utf-8")
    return manifest

