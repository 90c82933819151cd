"""Bio-VQA-Lite (the paper's Conclusion): ``per_task`` items per task, stratified within each task.

Strata are the columns each component's declaration names (``Component.lite_strata``; biovqa's
choice, the paper names none): C1 organismal group × difficulty tier (degenerate items are a tier,
so they keep their share); C2 category × family × option count; C3 dataset × subset ×
tier/condition; C4 dataset × same/different; a component that names none is stratified by task alone. Each task's quota is split over its strata in
proportion to their sizes, rounded by largest remainder (ties: the stratum that sorts first);
within a stratum the items whose ``sha256(seed:item_id)`` sorts first are taken, so the choice
does not depend on row order. The Lite items are written in item-id order, and the manifest
records, per task, every stratum with the items available and selected.
"""

from __future__ import annotations

import hashlib
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
from biovqa.errors import BiovqaError

#: The pseudo-column of a stratum that counts an item's answer options (C2's option count).
N_OPTIONS = "n_options"
PER_TASK = 500
#: Parent manifest keys a Lite bench keeps because scorers read them (C1: its taxonomy index).
LITE_INHERITED_KEYS = ("taxonomy_index", "taxonomy_index_card", "image_roots")
SEED = 42


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


def largest_remainder(sizes: dict[Any, int], n: int) -> dict[Any, int]:
    """Split ``n`` (at most ``sum(sizes)``) over strata in proportion to ``sizes``: floors of the
    exact quotas, then one more to the largest remainders (ties broken by stratum key)."""
    total = sum(sizes.values())
    n = min(n, total)
    if total == 0:
        return {key: 0 for key in sizes}
    base = {key: (n * size) // total for key, size in sizes.items()}
    remainders = sorted(sizes, key=lambda key: (-((n * sizes[key]) % total), key))
    for key in remainders[: n - sum(base.values())]:
        base[key] += 1
    return base


def _rank_key(seed: int, item_id: str) -> str:
    return hashlib.sha256(f"{seed}:{item_id}".encode()).hexdigest()


def _stratum_values(items: pa.Table, component: str) -> tuple[list[tuple[str, ...]], list[str]]:
    """(the stratum of every row as a tuple of values, the columns used)."""
    from biovqa.components.registry import get_component

    # the component's declaration names its strata (``Component.lite_strata``)
    strata = get_component(component).lite_strata
    columns = [c for c in strata if c in items.column_names or c == N_OPTIONS and "options" in items.column_names]
    values: list[list[str]] = []
    for column in columns:
        if column == N_OPTIONS:
            values.append([str(len(o)) if o else "0" for o in items.column("options").to_pylist()])
        else:
            values.append(["(none)" if v is None else str(v) for v in items.column(column).to_pylist()])
    labels: list[tuple[str, ...]] = list(zip(*values)) if values else [("all",)] * items.num_rows
    return labels, columns


def select_lite(items: pa.Table, component: str, *, per_task: int = PER_TASK,
                seed: int = SEED) -> tuple[list[int], dict[str, Any]]:
    """Row indices of the Lite subset (item-id order) and the strata record for the manifest."""
    if per_task < 1:
        raise BiovqaError("--per-task must be at least 1", field="--per-task")
    labels, columns = _stratum_values(items, component)
    ids = items.column("item_id").to_pylist()
    tasks = items.column("task").to_pylist()
    by_cell: dict[str, dict[tuple[str, ...], list[int]]] = {}
    for row, (task, label) in enumerate(zip(tasks, labels)):
        by_cell.setdefault(str(task), {}).setdefault(label, []).append(row)
    chosen: list[int] = []
    record: dict[str, Any] = {}
    for task in sorted(by_cell):
        strata = by_cell[task]
        quota = largest_remainder({label: len(rows) for label, rows in strata.items()}, per_task)
        cells = []
        for label in sorted(strata):
            rows = sorted(strata[label], key=lambda r: (_rank_key(seed, ids[r]), ids[r]))[: quota[label]]
            chosen.extend(rows)
            cells.append({"stratum": list(label), "available": len(strata[label]), "selected": len(rows)})
        record[task] = {"available": sum(len(r) for r in strata.values()),
                        "selected": sum(c["selected"] for c in cells), "strata": cells}
    chosen.sort(key=lambda r: ids[r])
    return chosen, {"columns": columns, "tasks": record}


def make_lite(bench_path: str | Path, out: str | Path, *, per_task: int = PER_TASK, seed: int = SEED,
              images: str | Path | None = None) -> Bench:
    """Write the Lite benchmark of ``bench_path`` (a folder, an export or a hub id; ``images``: the
    source photos of an export) to ``out``; returns it opened."""
    bench = open_bench(bench_path, images=images)
    rows, strata = select_lite(bench.items, bench.component, per_task=per_task, seed=seed)
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
