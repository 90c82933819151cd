"""The image side of a C1 build: the image folder indexed by uuid, each photo's size probed from
its header, and the deterministic per-group walk that takes ``per_group`` readable images of
the required size (relaxing the species cap first, then the size, where a group runs short)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biovqa.components.c1.build.options import C1BuildOptions
from biovqa.errors import MissingResourceError

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".tif", ".tiff", ".bmp", ".gif")



def index_images(images: Path) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Map uuid → file name for ``<uuid>.<ext>`` files in the image folder, and the uuids present
    as several files (``x.png`` and ``x.jpg``: which one the catalog row means is unknown, so
    neither is used) → their file names, sorted."""
    if not images.is_dir():
        raise MissingResourceError("image folder not found", file=images)
    found: dict[str, list[str]] = {}
    with os.scandir(images) as entries:
        for entry in entries:
            stem, dot, ext = entry.name.rpartition(".")
            if dot and ("." + ext.lower()) in IMAGE_SUFFIXES and entry.is_file():
                found.setdefault(stem, []).append(entry.name)
    unique = {stem: names[0] for stem, names in found.items() if len(names) == 1}
    return unique, {stem: sorted(names) for stem, names in sorted(found.items()) if len(names) > 1}


_PROBE_CHUNK = 256


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) read from the header of a PNG, JPEG, GIF or WebP file; None for other
    formats (:func:`biovqa.sources.images.header_size`). Reading a few header bytes is ~20× faster
    than opening the file with PIL, which matters when 100K images are checked
    (benchmarks/build_c1.py)."""
    from biovqa.sources.images import header_size

    return header_size(data)


def _inspect_images(paths: list[str]) -> list[tuple[int, int, str] | str]:
    """(width, height, sha256) of each file, or the reason it is refused (a file that cannot be
    read, is incomplete or breaks the limits of :mod:`biovqa.sources.images`). One read per file
    serves both; whole chunks go to a worker so thread hand-off costs little."""
    import hashlib

    from biovqa.sources.images import MAX_IMAGE_BYTES, OVER_BYTES, UNREADABLE, inspect_image

    out: list[tuple[int, int, str] | str] = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                if os.fstat(handle.fileno()).st_size > MAX_IMAGE_BYTES:
                    out.append(OVER_BYTES)
                    continue
                data = handle.read()
        except OSError:
            out.append(UNREADABLE)
            continue
        size = inspect_image(data)
        if isinstance(size, str):
            out.append(size)
            continue
        out.append((size[0], size[1], hashlib.sha256(data).hexdigest()))
    return out


def _select(
    frame: pd.DataFrame, images: Path, options: C1BuildOptions, exclusions: dict[str, dict[str, int]],
    advance: Any = None, examples: dict[str, list[str]] | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    files, ambiguous = index_images(images)
    rng = np.random.default_rng(options.seed)
    frame = frame.sort_values("uuid", kind="stable").reset_index(drop=True)
    frame = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)
    frame["species_rank"] = frame.groupby(["group", "species"], sort=False).cumcount()
    frame["file"] = frame["uuid"].map(files)
    chosen: list[pd.DataFrame] = []
    relaxed: dict[str, Any] = {}
    with ThreadPoolExecutor(max_workers=options.workers) as pool:
        for group in sorted(frame["group"].unique()):
            rows = frame[frame["group"] == group]
            twice = rows["uuid"].isin(ambiguous).to_numpy()
            if twice.any():
                exclusions.setdefault("duplicate_image_file", {})[group] = int(twice.sum())
                _name_examples(examples, "duplicate_image_file",
                               (" and ".join(ambiguous[u]) for u in rows.loc[twice, "uuid"]))
                rows = rows[~twice]
            missing = rows["file"].isna()
            if missing.any():
                exclusions.setdefault("missing_image", {})[group] = int(missing.sum())
                _name_examples(examples, "missing_image", (f"uuid {u}" for u in rows.loc[missing, "uuid"]))
            rows = rows[~missing]
            within_cap = (rows["species_rank"] < options.species_cap).to_numpy()
            ordered = pd.concat([rows[within_cap], rows[~within_cap]]).reset_index(drop=True)
            over_cap_flags = np.concatenate([np.zeros(within_cap.sum(), bool), np.ones((~within_cap).sum(), bool)])
            taken, low_res, broken = _take(ordered["file"].to_numpy(dtype=object), images, options, pool,
                                           advance, examples)
            for reason, count in sorted(broken.items()):
                exclusions.setdefault(reason, {})[group] = count
            if len(taken) < options.per_group and low_res:
                # relax the resolution threshold last (paper §3.1, App. A.1)
                extra = low_res[: options.per_group - len(taken)]
                relaxed.setdefault("resolution_relaxed", {})[group] = len(extra)
                taken.extend(extra)
                low_res = low_res[len(extra):]
            if low_res:
                exclusions.setdefault("low_resolution", {})[group] = len(low_res)
            positions = np.array([p for p, _ in taken], dtype=np.int64)
            over_cap = int(over_cap_flags[positions].sum()) if len(positions) else 0
            if over_cap:
                relaxed.setdefault("species_cap_relaxed", {})[group] = over_cap
            chosen.append(ordered.iloc[positions].assign(
                width=[info[0] for _, info in taken], height=[info[1] for _, info in taken],
                image_sha256=[info[2] for _, info in taken]))
            if len(taken) < options.per_group:
                relaxed.setdefault("short_groups", {})[group] = len(taken)
    selected = pd.concat(chosen) if chosen else frame.iloc[:0].assign(width=[], height=[], image_sha256=[])
    return selected.sort_values(["group", "uuid"], kind="stable").reset_index(drop=True), relaxed


def _take(
    files: np.ndarray, images: Path, options: C1BuildOptions, pool: ThreadPoolExecutor,
    advance: Any = None, examples: dict[str, list[str]] | None = None,
) -> tuple[list[tuple[int, tuple[int, int, str]]], list[tuple[int, tuple[int, int, str]]], dict[str, int]]:
    """Walk ``files`` in order, inspecting images in parallel chunks, until ``per_group`` pass;
    refused files are counted per reason."""
    taken: list[tuple[int, tuple[int, int, str]]] = []
    low_res: list[tuple[int, tuple[int, int, str]]] = []
    broken: dict[str, int] = {}
    position = 0
    root = str(images)
    while len(taken) < options.per_group and position < len(files):
        need = options.per_group - len(taken)
        stop = min(len(files), position + max(_PROBE_CHUNK, int(need * 1.1)))
        paths = [os.path.join(root, f) for f in files[position:stop]]
        chunks = [paths[i:i + _PROBE_CHUNK] for i in range(0, len(paths), _PROBE_CHUNK)]
        infos = [info for part in pool.map(_inspect_images, chunks) for info in part]
        for offset, info in enumerate(infos):
            if len(taken) >= options.per_group:
                break
            if isinstance(info, str):
                broken[info] = broken.get(info, 0) + 1
                _name_examples(examples, info, [str(files[position + offset])])
            elif min(info[0], info[1]) < options.min_side:
                low_res.append((position + offset, info))
            else:
                taken.append((position + offset, info))
        if advance is not None:
            advance(min(len(taken), options.per_group) - (options.per_group - need))
        position = stop
    return taken, low_res, broken


def _name_examples(examples: dict[str, list[str]] | None, reason: str, names: Any) -> None:
    """Keep the first files (or catalog rows) of an exclusion reason for the manifest (the counts
    are kept per group in ``exclusions``)."""
    if examples is None:
        return
    from biovqa.sources.validate import MAX_EXAMPLES

    named = examples.setdefault(reason, [])
    named.extend(str(name) for name, _ in zip(names, range(max(0, MAX_EXAMPLES - len(named)))))
