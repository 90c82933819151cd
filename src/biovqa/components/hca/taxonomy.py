"""Taxonomy paths for the hierarchical VQA (hierarchy.md §1–2).

A :class:`Hierarchy` maps each leaf label to its path ``(root, level 1, …, leaf)``; the root is
never asked. Levels are positional (level ``j`` = the ``j``-th label below the root), so uneven
trees work; ``level_names`` name them when the tree is even (``order, family, genus, species``).
Sources: the released taxonomy JSON (``leaf → [root, …, leaf]``), a C1 benchmark folder (its
lineage columns), and image lists (CSV ``image,label``).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biovqa.errors import InputFormatError


@dataclass(frozen=True)
class Hierarchy:
    """Leaf → path (root first); optional names of the levels below the root."""

    paths: dict[str, tuple[str, ...]]
    level_names: tuple[str, ...] | None = None

    def depth(self, leaf: str) -> int:
        """Scored levels of ``leaf``'s path (the root excluded)."""
        return len(self.paths[leaf]) - 1

    @property
    def max_depth(self) -> int:
        return max(len(path) - 1 for path in self.paths.values())

    def labels_at(self, level: int) -> list[str]:
        """Distinct labels at ``level`` (1 = just below the root), sorted."""
        return sorted({path[level] for path in self.paths.values() if len(path) > level})

    def ancestors(self, level: int) -> dict[str, tuple[str, ...]]:
        """For each label at ``level``, the labels above it (root first)."""
        out: dict[str, tuple[str, ...]] = {}
        for path in self.paths.values():
            if len(path) > level:
                out.setdefault(path[level], path[:level])
        return out

    def level_name(self, level: int) -> str | None:
        if self.level_names is None or level > len(self.level_names):
            return None
        return self.level_names[level - 1]


def read_taxonomy_json(path: Path, level_names: tuple[str, ...] | None = None) -> Hierarchy:
    """The released taxonomy format: a JSON object ``leaf → [root, …, leaf]``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputFormatError("no such taxonomy file", file=path) from None
    except json.JSONDecodeError as exc:
        raise InputFormatError(f"not valid JSON: {exc.msg} (line {exc.lineno})", file=path) from None
    if not isinstance(data, dict) or not data:
        raise InputFormatError("a taxonomy must be a non-empty JSON object leaf → [root, …, leaf]", file=path)
    paths: dict[str, tuple[str, ...]] = {}
    for row, (leaf, chain) in enumerate(data.items(), start=1):
        if (not isinstance(chain, list) or len(chain) < 2
                or not all(isinstance(x, str) and x.strip() for x in chain)):
            raise InputFormatError(f"the path of {leaf!r} must be a list of at least 2 labels (root … leaf)",
                                   file=path, row=row, field=leaf)
        if chain[-1] != leaf:
            raise InputFormatError(f"the path of {leaf!r} ends in {chain[-1]!r}, not the leaf", file=path,
                                   row=row, field=leaf)
        paths[leaf] = tuple(chain)
    _check_consistent(paths, path)
    if level_names is not None and len(level_names) < max(len(p) - 1 for p in paths.values()):
        raise InputFormatError(f"{len(level_names)} level names for paths {max(len(p) - 1 for p in paths.values())} "
                               "levels deep", file=path, field="levels")
    return Hierarchy(paths, level_names)


def _check_consistent(paths: dict[str, tuple[str, ...]], source: Any) -> None:
    """A label must sit at one level under one parent (a tree), else options are ill-defined."""
    seen: dict[str, tuple[int, str]] = {}
    for leaf, chain in paths.items():
        for level in range(1, len(chain)):
            key = (level, chain[level - 1])
            previous = seen.setdefault(chain[level], key)
            if previous != key:
                raise InputFormatError(
                    f"label {chain[level]!r} sits at level {level} under {chain[level - 1]!r} on the path of "
                    f"{leaf!r} but at level {previous[0]} under {previous[1]!r} elsewhere", file=source,
                    field=leaf)


def read_image_list(path: Path, hierarchy: Hierarchy) -> list[tuple[str, str]]:
    """``(image, leaf)`` pairs from a CSV with columns ``image,label`` (header required)."""
    try:
        handle = Path(path).open(encoding="utf-8", newline="")
    except FileNotFoundError:
        raise InputFormatError("no such image list", file=path) from None
    with handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames is None or not {"image", "label"} <= set(reader.fieldnames):
            raise InputFormatError(f"the image list needs the columns image,label; found {reader.fieldnames}",
                                   file=path)
        out = []
        for row, record in enumerate(reader, start=2):
            image, label = (record["image"] or "").strip(), (record["label"] or "").strip()
            if not image:
                raise InputFormatError("empty image path", file=path, row=row, field="image")
            if label not in hierarchy.paths:
                raise InputFormatError(f"label {label!r} is not a leaf of the taxonomy", file=path, row=row,
                                       field="label")
            out.append((image, label))
    if not out:
        raise InputFormatError("the image list is empty", file=path)
    return out


#: C1 lineage: the root and the scored levels (hierarchy of the C1 benchmark tree).
C1_ROOT = "kingdom"
C1_LEVELS: tuple[str, ...] = ("phylum", "class", "order", "family", "genus", "species")


def from_c1_bench(bench_path: Path) -> tuple[Hierarchy, list[tuple[str, str]], dict[str, str], Path]:
    """The hierarchy of a C1 benchmark's images: ``(hierarchy, [(image, leaf)], common names by
    leaf, images root)``; one entry per distinct image, in item order."""
    from biovqa.bench import open_bench

    bench = open_bench(bench_path)
    if bench.component != "c1":
        raise InputFormatError(f"not a C1 benchmark (component {bench.component!r})", file=bench_path)
    columns = ["image", C1_ROOT, *C1_LEVELS, "common_name"]
    rows = bench.items.select([c for c in columns if c in bench.items.column_names]).to_pylist()
    paths: dict[str, tuple[str, ...]] = {}
    images: list[tuple[str, str]] = []
    common: dict[str, str] = {}
    seen: set[str] = set()
    for row in rows:
        if row["image"] in seen:
            continue
        seen.add(row["image"])
        chain = (row[C1_ROOT] or "root", *[row[level] for level in C1_LEVELS])
        if any(label is None for label in chain):
            continue
        leaf = chain[-1]
        paths.setdefault(leaf, chain)
        images.append((row["image"], leaf))
        if row.get("common_name"):
            common.setdefault(leaf, row["common_name"])
    if not images:
        raise InputFormatError("no image of this C1 benchmark has a full lineage", file=bench_path)
    _check_consistent(paths, bench_path)
    return Hierarchy(paths, C1_LEVELS), images, common, bench.images_root()
