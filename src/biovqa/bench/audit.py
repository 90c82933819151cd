"""The verification contract of a built benchmark (paper L.2), checked before any run.

A row exists iff its image exists and every field its question needs is present. The audit
re-checks that on disk: item ids are unique, the items file is the one the manifest hashed, every
side file matches the manifest's ``files`` card, counts equal the manifest, every image exists and
matches its recorded sha256, and the component's own rules hold (C1: every rank an item needs is
non-null). Any violation fails the audit.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.compute as pc

from biovqa.bench.hub import IMAGES_ENV
from biovqa.components.registry import get_component
from biovqa.errors import AuditError
from biovqa.bench.folder import (
    FILES_KEY,
    ITEMS_FILE,
    MANIFEST_FILE,
    Bench,
    count_items,
    counted_columns,
    items_integrity_problem,
    open_bench,
    sha256_file,
    side_file_problems,
)


def audit_bench(path: str | Path, *, check_images: bool = True, workers: int = 8) -> str:
    """Audit a benchmark folder; returns a one-line summary or raises :class:`AuditError`."""
    bench = open_bench(path, verify=False)
    violations = audit_violations(bench, check_images=check_images, workers=workers)
    if violations:
        raise AuditError(violations, file=bench.root)
    n_images = len(set(bench.items.column("image").to_pylist()))
    return f"{bench.items.num_rows:,} items, {n_images:,} images, component {bench.component}"


def audit_violations(bench: Bench, *, check_images: bool = True, workers: int = 8) -> list[str]:
    problem = items_integrity_problem(bench)
    if problem:
        return [f"items.parquet: {problem}"]  # nothing else can be trusted
    violations: list[str] = []
    if FILES_KEY not in bench.manifest:
        violations.append(f"{MANIFEST_FILE}: the manifest records no {FILES_KEY!r} card, so the side files "
                          "cannot be verified (built by an older biovqa: rebuild it)")
    violations.extend(f"{name}: {problem}" for name, problem in side_file_problems(bench))
    items = bench.items
    ids = items.column("item_id")
    if pc.count_distinct(ids).as_py() != items.num_rows:
        counts = pc.value_counts(ids)
        dupes = [v["values"] for v in counts.to_pylist() if v["counts"] > 1]
        violations.append(f"item_id not unique: {len(dupes)} duplicated, e.g. {dupes[:5]}")
    if pc.any(pc.is_null(ids)).as_py():
        violations.append("item_id: null values")
    expected = bench.manifest.get("counts", {})
    actual = count_items(items, counted_columns(expected))
    for key, value in sorted(expected.items()):
        if actual.get(key) != value:
            violations.append(f"counts.{key}: manifest says {value}, items hold {actual.get(key)}")
    answers = items.column("answer")
    empty = pc.or_(pc.is_null(answers), pc.equal(pc.utf8_trim_whitespace(answers), "")).fill_null(True)
    for item_id in pc.filter(ids, empty).to_pylist()[:20]:
        violations.append(f"{item_id}: empty gold answer")
    if check_images:
        violations.extend(_check_images(bench, workers))
    else:
        violations.extend(_check_containment(bench))
    component = get_component(bench.component)
    if component.auditor:
        violations.extend(component.load("auditor")(bench))
    return violations


#: How many "image missing" lines an audit lists before it only counts the rest.
MISSING_SHOWN = 5


def _check_containment(bench: Bench) -> list[str]:
    """Every item's image path stays inside its folder (``..``, absolute, symlink out are refused),
    with or without ``--images``: a run would refuse to open any of them."""
    from biovqa.bench.paths import escape_reason

    violations: list[str] = []
    seen: set[str] = set()
    for row, (item_id, image) in enumerate(zip(bench.items.column("item_id").to_pylist(),
                                               bench.items.column("image").to_pylist()), start=1):
        if image is None or image in seen:
            continue
        seen.add(image)
        root, relative = bench.image_location(image)
        reason = escape_reason(root, relative)
        if reason is not None:
            violations.append(f"{ITEMS_FILE} row {row} (item {item_id}), field 'image': image path "
                              f"{image!r} leaves its folder {root}: {reason}")
    return violations


def _check_images(bench: Bench, workers: int) -> list[str]:
    violations = _check_containment(bench)
    if violations:
        return violations  # nothing outside the benchmark is opened, not even to hash it
    table = bench.items.select(["item_id", "image", "image_sha256"])
    first: dict[tuple[str, str | None], str] = {}
    for r in table.to_pylist():
        first.setdefault((r["image"], r["image_sha256"]), r["item_id"])
    pairs = sorted(first, key=lambda p: (p[0] or "", p[1] or ""))
    problems: list[str] = []
    missing: list[str] = []
    unhashed: list[str] = []
    paths = [bench.resolve_image(image) if image else None for image, _ in pairs]

    def check(args: tuple[tuple[str, str | None], Path | None]) -> str | None:
        (image, digest), path = args
        if path is None:  # a text-only bench (manifest "text_only": BAGEL, the HCA text control) has no images
            return None if bench.manifest.get("text_only") else "an item has no image"
        if not path.is_file():
            missing.append(f"{image} ({path})")
            return None
        if not digest:  # a swapped photo could not be told apart: the hash is part of the item
            unhashed.append(f"{image} (item {first[(image, digest)]})")
            return None
        if sha256_file(path) != digest:
            return f"{image}: sha256 differs from the recorded content hash"
        return None

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for result in pool.map(check, zip(pairs, paths)):
            if result:
                problems.append(result)
    if missing:
        missing.sort()
        shown = "; ".join(missing[:MISSING_SHOWN])
        more = f" and {len(missing) - MISSING_SHOWN} more" if len(missing) > MISSING_SHOWN else ""
        release = bench.manifest.get("release")
        unchecked = isinstance(release, dict) and release.get("source_photos_checked") is False
        hint = (f" — a release ships no source photos: pass their folder with --images (or ${IMAGES_ENV})"
                if unchecked else "")
        problems.append(f"image missing for {len(missing):,} image(s): {shown}{more}{hint}")
    if unhashed:
        unhashed.sort()
        more = f" and {len(unhashed) - MISSING_SHOWN} more" if len(unhashed) > MISSING_SHOWN else ""
        problems.append(f"image_sha256: {len(unhashed):,} image(s) have no recorded content hash, so a "
                        f"swapped photo cannot be detected: {'; '.join(unhashed[:MISSING_SHOWN])}{more}")
    return problems
