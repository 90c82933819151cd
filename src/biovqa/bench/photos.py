"""The source photos of a rebuilt release: each one found under the images folder (``--images``,
``$BIOVQA_IMAGES``) and checked against its recorded sha256, and, once checked, stamped with its
size and mtime so that a later open of the cached rebuild re-hashes only the photos that changed.
Every problem is one error naming the first item (in benchmark order) whose photo is missing or
altered.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from biovqa.bench.files import sha256_file, write_parquet
from biovqa.bench.layout import ITEMS_FILE, RENDERED_PREFIX
from biovqa.bench.paths import contained_path
from biovqa.errors import MissingResourceError

#: In a rebuilt folder: each source photo checked, with the size and mtime it had then, so a
#: later open re-hashes only the photos that changed on disk since.
PHOTO_STAMPS = ".source-photos.parquet"


def check_source_photos(photos: pa.Table, images_root: Path, stage: Path | None = None,
                        workers: int = 8) -> None:
    """Every source photo of ``photos`` (the items that show one: ``item_id``, ``image``,
    ``image_sha256``) exists under ``images_root`` with its recorded sha256, else an error naming
    the first item (in benchmark order) whose photo is missing or altered. With ``stage``, the
    checked photos' sizes and mtimes are written there (:data:`PHOTO_STAMPS`)."""
    rows = photos.select(["item_id", "image", "image_sha256"]).to_pylist()
    first: dict[tuple[str, str | None], str] = {}
    for row in rows:
        first.setdefault((row["image"], row["image_sha256"]), row["item_id"])
    stamps = _verify_photos(first, images_root, workers)
    if stage is not None:
        _write_stamps(stage / PHOTO_STAMPS, first, stamps)


def _verify_photos(first: dict[tuple[str, str | None], str], images_root: Path,
                   workers: int) -> dict[tuple[str, str | None], tuple[int, int]]:
    """Hash every (image, sha256) of ``first`` (→ its first item) under ``images_root``; returns
    each photo's (size, mtime_ns) or raises naming the first item whose photo is missing or altered."""
    if not images_root.is_dir():
        raise MissingResourceError("the images folder does not exist", file=images_root, field="--images")
    pairs = list(first)
    # every path is checked before any photo is opened: none may lead outside the images folder
    paths = {pair: contained_path(images_root, pair[0], field="image", what=f"item {first[pair]}: source photo")
             for pair in pairs}

    def check(pair: tuple[str, str | None]) -> tuple[str | None, tuple[int, int]]:
        image, digest = pair
        path = paths[pair]
        try:
            stat = path.stat()
        except OSError:
            stat = None
        if stat is None or not path.is_file():
            return f"item {first[pair]}: source photo {image} is missing under {images_root}", (0, 0)
        if not digest:
            return (f"item {first[pair]}: source photo {image} has no recorded sha256, so it cannot be "
                    "verified", (0, 0))
        if sha256_file(path) != digest:
            return (f"item {first[pair]}: source photo {image} differs from its recorded sha256 (altered)",
                    (0, 0))
        return None, (stat.st_size, stat.st_mtime_ns)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(check, pairs))
    found = [problem for problem, _ in results if problem]
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise MissingResourceError(found[0] + more, file=images_root, field="image",
                                   hint="fetch the sources (`biovqa fetch …`) and give their images folder "
                                        "as --images (or $BIOVQA_IMAGES)")
    return {pair: stamp for pair, (_, stamp) in zip(pairs, results)}


def _write_stamps(path: Path, first: dict[tuple[str, str | None], str],
                  stamps: dict[tuple[str, str | None], tuple[int, int]]) -> None:
    pairs = list(first)
    write_parquet(pa.table({
        "image": pa.array([p[0] for p in pairs], pa.string()),
        "image_sha256": pa.array([p[1] for p in pairs], pa.string()),
        "item_id": pa.array([first[p] for p in pairs], pa.string()),
        "size": pa.array([stamps[p][0] for p in pairs], pa.int64()),
        "mtime_ns": pa.array([stamps[p][1] for p in pairs], pa.int64()),
    }), path)


def recheck_source_photos(target: Path, images_root: Path, workers: int = 8) -> None:
    """A cached rebuild opened again: every photo must still be there, and those whose size or
    mtime changed since the last check are hashed again (a cheap stat for the rest)."""
    path = target / PHOTO_STAMPS
    if not path.is_file():  # rebuilt by an older biovqa: check from the items
        table = pq.read_table(target / ITEMS_FILE, columns=["item_id", "image", "image_sha256"])
        source = pa.array([not (i or "").startswith(RENDERED_PREFIX) for i in table.column("image").to_pylist()],
                          pa.bool_())
        check_source_photos(table.filter(source), images_root, target, workers)
        return
    rows = pq.read_table(path).to_pylist()
    changed: dict[tuple[str, str | None], str] = {}
    for row in rows:
        try:
            stat = contained_path(images_root, row["image"], file=path, field="image",
                                  what="source photo").stat()
            same = (stat.st_size, stat.st_mtime_ns) == (row["size"], row["mtime_ns"])
        except OSError:
            same = False
        if not same:
            changed[(row["image"], row["image_sha256"])] = row["item_id"]
    if changed:
        fresh = _verify_photos(changed, images_root, workers)
        first = {(r["image"], r["image_sha256"]): r["item_id"] for r in rows}
        stamps = {(r["image"], r["image_sha256"]): (r["size"], r["mtime_ns"]) for r in rows}
        stamps.update(fresh)
        _write_stamps(path, first, stamps)


__all__ = ["PHOTO_STAMPS", "check_source_photos", "recheck_source_photos"]
