"""Bio-VQA-Lite (the paper's Conclusion): ``per_task`` items per task, stratified within each task.

The sample is :func:`biovqa.bench.strata.sample_per_task` (the one ``biovqa run --limit`` draws):
strata are the columns each component's declaration names (``Component.lite_strata``; biovqa's
choice, the paper names none): C1 organismal group × difficulty tier (degenerate items are a tier,
so they keep their share); C2 category × family × option count; C3 dataset × subset ×
tier/condition; C4 dataset × same/different; a component that names none is stratified by task
alone. The Lite items are written in item-id order, and the manifest records, per task, every
stratum with the items available and selected.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from biovqa.bench.folder import (
    ITEMS_FILE,
    MANIFEST_FILE,
    RENDERED_PREFIX,
    Bench,
    open_bench,
    relative_to_bench,
    staged_folder,
    write_bench,
)
from biovqa.bench.strata import SEED, sample_per_task

PER_TASK = 500
#: Parent manifest keys a Lite bench keeps because scorers read them (C1: its taxonomy index).
LITE_INHERITED_KEYS = ("taxonomy_index", "taxonomy_index_card", "image_roots")


def _rebased_image_roots(bench: Bench, out: Path) -> dict[str, Any]:
    """The parent's ``image_roots`` (C3) as seen from the Lite folder ``out``: a root recorded
    relative to the parent's folder is rewritten relative to ``out``."""
    roots = bench.manifest.get("image_roots")
    if not isinstance(roots, dict):
        return {}
    rebased = {}
    for source, root in roots.items():
        path = Path(str(root))
        rebased[source] = str(root) if path.is_absolute() else Path(
            os.path.relpath((bench.root / path).resolve(), out.resolve())).as_posix()
    return {"image_roots": rebased}


def _rebased_taxonomy_index(bench: Bench, out: Path) -> dict[str, Any]:
    """The parent's ``taxonomy_index`` (C1) as seen from the Lite folder ``out``: a path recorded
    relative to the parent's folder is rewritten relative to ``out``."""
    recorded = bench.manifest.get("taxonomy_index")
    if not isinstance(recorded, str) or Path(recorded).is_absolute():
        return {}
    return {"taxonomy_index": relative_to_bench(bench.root / recorded, out)}


def select_lite(items: pa.Table, *, per_task: int = PER_TASK,
                seed: int = SEED) -> tuple[list[int], dict[str, Any]]:
    """Row indices of the Lite subset (item-id order) and the strata record for the manifest."""
    sample = sample_per_task(items, per_task, seed, field="--per-task")
    ids = items.column("item_id").to_pylist()
    record = {task.task: {"available": task.available, "selected": task.selected,
                          "strata": [{"stratum": list(s.values), "available": s.available,
                                      "selected": s.selected} for s in task.strata]}
              for task in sample.tasks}
    columns = list(sample.tasks[0].columns) if sample.tasks else []
    return sorted(sample.rows, key=lambda r: ids[r]), {"columns": columns, "tasks": record}


def make_lite(bench_path: str | Path, out: str | Path, *, per_task: int = PER_TASK, seed: int = SEED,
              images: str | Path | None = None) -> Bench:
    """Write the Lite benchmark of ``bench_path`` (a folder, an export or a hub id; ``images``: the
    source photos of an export) to ``out``; returns it opened."""
    bench = open_bench(bench_path, images=images)
    rows, strata = select_lite(bench.items, per_task=per_task, seed=seed)
    items = bench.items.take(pa.array(rows, pa.int64())).combine_chunks()
    out = Path(out)
    with staged_folder(out) as stage:
        for relative in sorted(set(pc.unique(items.column("image")).to_pylist()) - {None}):
            if relative.startswith(RENDERED_PREFIX):
                (stage / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(bench.resolve_image(relative), stage / relative)
        for entry in sorted(bench.root.iterdir()):
            if entry.name in (ITEMS_FILE, MANIFEST_FILE, RENDERED_PREFIX.rstrip("/")) or entry.name.startswith("."):
                continue
            if entry.is_dir():
                shutil.copytree(entry, stage / entry.name)
            else:
                shutil.copyfile(entry, stage / entry.name)
        write_bench(stage, items, component=bench.component, generator="biovqa.lite", seed=seed, sources={},
                    parameters={"per_task": per_task, "seed": seed},
                    extra={"images_root": relative_to_bench(bench.images_root(), out),
                           # what the component's scorer reads from its bench (C1: the index)
                           **{key: bench.manifest[key] for key in LITE_INHERITED_KEYS if key in bench.manifest},
                           **_rebased_taxonomy_index(bench, Path(out)),
                           **_rebased_image_roots(bench, Path(out)),
                           "lite": {"parent_manifest_sha256": bench.manifest_sha256,
                                    "parent_items_sha256": bench.manifest.get("items_sha256"),
                                    "parent_generator": bench.manifest.get("generator"),
                                    "parent_seed": bench.manifest.get("seed"),
                                    "per_task": per_task, "seed": seed, **strata}})
    return open_bench(out)
