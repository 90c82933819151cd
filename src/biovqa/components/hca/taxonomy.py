"""Taxonomy paths for the hierarchical VQA (HCA paper §2.1, App. A.1).

A :class:`Hierarchy` maps each leaf label to its path ``(root, level 1, …, leaf)``; the root is
never asked (a taxonomy without a root, such as the HCA paper's authors' CUB-200 file whose paths start
at the order, gets a stand-in root: :data:`ROOT_MODES`). Levels are positional (level ``j`` = the ``j``-th label below the root), so uneven
trees work; ``level_names`` name them when the tree is even (``order, family, genus, species``).
Sources: the released taxonomy JSON (``leaf → [root, …, leaf]``), a C1 benchmark folder (its
lineage columns), and image lists (CSV ``image,label``).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biovqa.bench.paths import lexical_escape_reason
from biovqa.errors import BiovqaError, InputFormatError, PathEscapeError


#: Taxonomy root policies: ``auto`` (the first label is the root when every path starts with the
#: same one, else the taxonomy has no root), ``first`` (the first label is the root), ``none`` (no
#: root: the first label is level 1, as in the HCA paper's authors' CUB taxonomy, whose paths start
#: at the order).
ROOT_MODES: tuple[str, ...] = ("auto", "first", "none")
#: The stand-in root of a taxonomy without one: never asked, never shown (not in the taxonomy
#: given as context).
SYNTHETIC_ROOT = "(root)"
#: A label under two parents at one level (a DAG, such as "sports equipment" under both
#: "implement" and "equipment" in the authors' ImageNet-artifact taxonomy): ``allow`` reads it and
#: scores every image on its own path, level by level, as the authors do; ``refuse`` stops.
SEVERAL_PARENTS: tuple[str, ...] = ("allow", "refuse")


@dataclass(frozen=True)
class Hierarchy:
    """Leaf → path (root first); optional names of the levels below the root.

    ``rooted`` is False when the root is :data:`SYNTHETIC_ROOT` (the source had none); ``notes``
    records what reading the source tolerated (case-only leaf differences, leaves equal to their
    genus, labels with several parents), for the manifest."""

    paths: dict[str, tuple[str, ...]]
    level_names: tuple[str, ...] | None = None
    rooted: bool = True
    notes: dict[str, Any] = field(default_factory=dict)

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
        """For each label at ``level``, the labels above it (root first; a label with several
        parents keeps its first path's: callers needing an image's own ancestors take its path)."""
        out: dict[str, tuple[str, ...]] = {}
        for path in self.paths.values():
            if len(path) > level:
                out.setdefault(path[level], path[:level])
        return out

    def level_name(self, level: int) -> str | None:
        if self.level_names is None or level > len(self.level_names):
            return None
        return self.level_names[level - 1]

    def context_paths(self) -> dict[str, list[str]]:
        """Leaf → path as given to a model (taxonomy as context): without a stand-in root."""
        return {leaf: list(path[1:] if not self.rooted else path) for leaf, path in self.paths.items()}


def read_taxonomy_json(path: Path, level_names: tuple[str, ...] | None = None, *, root: str = "auto",
                       several_parents: str = "allow") -> Hierarchy:
    """The released taxonomy format: a JSON object ``leaf → [root, …, leaf]`` (``root``: see
    :data:`ROOT_MODES`; ``several_parents``: see :data:`SEVERAL_PARENTS`).

    Read as the authors publish it: a path whose last label differs from its key only in case
    (``"Nelson's Sharp-tailed Sparrow": […, "Nelson's sharp-tailed Sparrow"]``) is kept with the
    key as its leaf and recorded (``notes["leaf_case"]``); a leaf equal to its genus
    (``"Sayornis": [… "Sayornis", "Sayornis"]``) is allowed and recorded."""
    if root not in ROOT_MODES:
        raise BiovqaError(f"taxonomy root {root!r} is not one of {', '.join(ROOT_MODES)}", field="taxonomy_root")
    if several_parents not in SEVERAL_PARENTS:
        raise BiovqaError(f"several-parents policy {several_parents!r} is not one of {', '.join(SEVERAL_PARENTS)}",
                          field="several_parents")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise InputFormatError("no such taxonomy file", file=path) from None
    except UnicodeDecodeError as exc:
        raise InputFormatError(f"not UTF-8 text: {exc.reason} at byte {exc.start}", file=path) from None
    except json.JSONDecodeError as exc:
        raise InputFormatError(f"not valid JSON: {exc.msg} (line {exc.lineno})", file=path) from None
    if not isinstance(data, dict) or not data:
        raise InputFormatError("a taxonomy must be a non-empty JSON object leaf → [root, …, leaf]", file=path)
    chains: dict[str, list[str]] = {}
    leaf_case: dict[str, str] = {}
    minimum = 1 if root == "none" else 2
    for row, (leaf, chain) in enumerate(data.items(), start=1):
        if (not isinstance(chain, list) or len(chain) < minimum
                or not all(isinstance(x, str) and x.strip() for x in chain)):
            raise InputFormatError(f"the path of {leaf!r} must be a list of at least {minimum} labels "
                                   f"({'level 1' if root == 'none' else 'root'} … leaf)", file=path, row=row,
                                   field=leaf)
        if chain[-1] != leaf:
            if chain[-1].casefold() != leaf.casefold():
                raise InputFormatError(f"the path of {leaf!r} ends in {chain[-1]!r}, not the leaf", file=path,
                                       row=row, field=leaf)
            leaf_case[leaf] = chain[-1]
            chain = [*chain[:-1], leaf]
        chains[leaf] = list(chain)
    firsts = {chain[0] for chain in chains.values()}
    rooted = root == "first" or (root == "auto" and len(firsts) == 1 and min(map(len, chains.values())) >= 2)
    paths = {leaf: tuple(chain) if rooted else (SYNTHETIC_ROOT, *chain) for leaf, chain in chains.items()}
    if not rooted and SYNTHETIC_ROOT in {label for chain in chains.values() for label in chain}:
        raise InputFormatError(f"the label {SYNTHETIC_ROOT!r} is reserved for the root of a taxonomy without one",
                               file=path)
    notes = _check_consistent(paths, path, several_parents=several_parents)
    notes["root"] = next(iter(firsts)) if rooted else None
    notes["root_mode"] = root
    if leaf_case:
        notes["leaf_case"] = dict(sorted(leaf_case.items()))
    depth = max(len(p) - 1 for p in paths.values())
    if level_names is not None and len(level_names) < depth:
        raise InputFormatError(f"{len(level_names)} level names for paths {depth} levels deep", file=path,
                               field="levels")
    return Hierarchy(paths, level_names, rooted=rooted, notes=notes)


def _check_consistent(paths: dict[str, tuple[str, ...]], source: Any, *, several_parents: str = "allow") -> dict[str, Any]:
    """A label sits at one level (else options of different levels would share it); a leaf that
    repeats its parent (a genus-level class: ``Sayornis`` under ``Sayornis``) is the one exception.
    Several parents at one level are read (``allow``: each image is scored on its own path) or
    refused. Returns what was tolerated, for the manifest."""
    level_of: dict[str, tuple[int, str]] = {}
    parents: dict[str, set[str]] = {}
    repeats: set[str] = set()
    for leaf, chain in paths.items():
        for level in range(1, len(chain)):
            label, parent = chain[level], chain[level - 1]
            if label == parent and level == len(chain) - 1:
                repeats.add(label)
                continue
            previous = level_of.setdefault(label, (level, leaf))
            if previous[0] != level:
                raise InputFormatError(
                    f"label {label!r} sits at level {level} on the path of {leaf!r} but at level {previous[0]} on "
                    f"the path of {previous[1]!r}; options of one level cannot hold a label of another (rename one "
                    "of them in the taxonomy)", file=source, field=leaf)
            parents.setdefault(label, set()).add(parent)
    several = {label: sorted(ps) for label, ps in sorted(parents.items()) if len(ps) > 1}
    if several and several_parents == "refuse":
        label, ps = next(iter(several.items()))
        raise InputFormatError(
            f"label {label!r} has {len(ps)} parents ({', '.join(map(repr, ps))}; {len(several)} such labels): the "
            "taxonomy is not a tree", file=source, field=label,
            hint="pass --several-parents allow to score every image on its own path, level by level, as the "
                 "HCA paper's authors do")
    notes: dict[str, Any] = {}
    if repeats:
        notes["leaf_equals_parent"] = sorted(repeats)
    if several:
        notes["several_parents"] = several
    return notes


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
            escape = lexical_escape_reason(image)  # links out are caught where the photo is opened
            if escape is not None:
                raise PathEscapeError(f"image path {image!r} leaves the images folder: {escape}", file=path,
                                      row=row, field="image", hint="image paths are relative to --images-root")
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
