"""C3 build sources: the native datasets read into records (paper §3.3, Table 2).

``waid`` (WAID folder), ``bees`` (Boxes on Bees ``ML-Data``), ``depondfi`` (``Images/`` +
``Keypoints/``), ``beetles`` (``BeetleMeasurements.csv`` + ``group_images/``), and the wildlife
catalogs ``gzcd``, ``whaleshark``, ``hyena``, ``leopard`` (GZCD by :mod:`biovqa.sources.gzcd` in
either form, the Wild Me catalogs by :mod:`biovqa.sources.wildlife`). Every photo an item will show
is decoded in full once before any item is made (:class:`DecodeCheck`); the counting subsets are
drawn here (:mod:`..subsets`), and what each source's counts rest on is recorded
(:data:`COUNT_BASIS`, :data:`COUNT_UNVOUCHED`)."""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from biovqa.arguments import parse_name_values
from biovqa.components.c3.render import UNDECODABLE, undecodable
from biovqa.components.c3.subsets import (COUNTING_DATASETS, SUBSET_DATASET, Subset, source_label, stratified_sample,
                                          waid_subset)
from biovqa.errors import BiovqaError, did_you_mean

SOURCE_NAMES: tuple[str, ...] = ("waid", "bees", "depondfi", "beetles", "gzcd", "whaleshark", "hyena", "leopard")
WILDLIFE_SOURCES: tuple[str, ...] = ("gzcd", "whaleshark", "hyena", "leopard")
#: What a source's counts rest on, per source (and GZCD form): the manifest's ``counting_sources``.
#: The paper discards "images whose annotation completeness we cannot verify, since a partial
#: annotation penalizes a correct count" (§3.3).
COUNT_BASIS: dict[str, str] = {
    "waid": "WAID's hand-drawn YOLO boxes, one per animal; a photo without a label file is discarded",
    "bees": "Boxes on Bees' hand-drawn VOC boxes, one per bee (other object names are not counted)",
    "depondfi": ("DePondFi's nine keypoints per annotated fish: its own annotation rules leave some fish "
                 "(heavily occluded, or cut off at the frame edge) without keypoints, so a count is of the fish "
                 "DePondFi annotated; a keypoint file whose line count is not a multiple of 9 is discarded"),
    "beetles": "the plate's measured individuals are exactly 1..N (checked per plate; other plates discarded)",
    "gzcd:coco": ("GZCD's released annotations (final_metadata.json), the paper's counting source; a photo "
                  "that lost an annotation (box outside the photo) is excluded whole"),
}
#: Why a source feeds no counting subset unless the user declares it complete (``--complete-counts``).
COUNT_UNVOUCHED: dict[str, str] = {
    "gzcd:table": ("the GGR pipeline's table holds detector output, not a census: a photo may show more "
                   "animals than it has rows; declare it complete with --complete-counts gzcd"),
}
#: The re-ID catalogs annotate the individuals of interest, not every animal (paper §3.3: they serve
#: localization and viewpoint).
CATALOG_NO_COUNT = ("a re-identification catalog annotates the individuals of interest, not every animal in "
                    "the frame; it serves localization and viewpoint only")


def seeded_rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])


def parse_sources(sources: Iterable[str] | Mapping[str, str | Path]) -> dict[str, Path]:
    """``NAME=PATH`` strings (or a mapping) → {name: path}, names lower-cased; unknown or repeated
    names are errors."""
    given = parse_name_values(sources, option="--source", what="C3 source", form="NAME=PATH",
                              names=SOURCE_NAMES, key=str.lower)
    return {name: Path(path) for name, path in given.items()}


class DecodeCheck:
    """Every photo an item will show is decoded in full once, before any item is made
    (:func:`~biovqa.components.c3.render.undecodable`): one that does not decode is an exclusion
    of its source (reason ``undecodable_image``, named by its path under the source folder), so no
    canvas is begun with it, no item shows it, and the build goes on."""

    def __init__(self, manifest: dict[str, Any], roots: dict[str, Path], workers: int) -> None:
        self.manifest, self.roots, self.workers = manifest, roots, workers
        self.verdicts: dict[Path, bool] = {}

    def failing(self, source: str, paths: list[Path]) -> set[Path]:
        """The photos of ``paths`` that do not decode; each is decoded and counted once."""
        todo = sorted({Path(p) for p in paths} - self.verdicts.keys(), key=str)
        bad = set(undecodable(todo, workers=self.workers))
        for path in todo:
            self.verdicts[path] = path not in bad
        if bad:
            from biovqa.sources.validate import count_exclusion

            root = self.roots[source]
            names = sorted(source_label(source, root, path).split("/", 1)[1] for path in bad)
            count_exclusion(self.manifest["exclusions"].setdefault(source, {}),
                            self.manifest["exclusion_examples"].setdefault(source, {}), UNDECODABLE, names,
                            len(bad))
        return {Path(p) for p in paths if not self.verdicts[Path(p)]}


def read_subsets(sources: dict[str, Path], per_subset: int, seed: int, manifest: dict[str, Any],
                  roots: dict[str, Path], gzcd_images: tuple[Path, list[Any]] | None = None,
                  decode: DecodeCheck | None = None) -> tuple[list[Subset], Any]:
    """The counting subsets of the ecological datasets given (``gzcd_images``: GZCD's photos when
    its counts are vouched for); records each source's photo folder in ``roots``. With ``decode``,
    the beetle plates and each subset's drawn photos are decoded in full and the undecodable ones
    left out before the draw is final."""
    from biovqa.sources.waid import AnnotatedImage

    subsets: list[Subset] = []
    beetles = None
    if "waid" in sources:
        from biovqa.sources.waid import read_classes, read_waid

        src = read_waid(sources["waid"])
        _record_source(manifest, roots, "waid", src, files=True)
        classes = tuple(read_classes(src.root / "classes.txt"))
        by_class: dict[str, list[AnnotatedImage]] = {}
        for image in src.images:
            if image.count:
                by_class.setdefault(waid_subset(image, classes), []).append(image)
            else:  # kept for the discarded count below
                by_class.setdefault("waid-" + (classes[0] if classes else "animals"), []).append(image)
        for sid in sorted(by_class):
            subsets.append(_subset(sid, src.root, by_class[sid]))
    for name, module, function in (("bees", "biovqa.sources.bees", "read_bees"),
                                   ("depondfi", "biovqa.sources.depondfi", "read_depondfi")):
        if name in sources:
            import importlib

            src = getattr(importlib.import_module(module), function)(sources[name])
            _record_source(manifest, roots, name, src, ignored_names=True)
            subsets.append(_subset(name, src.root, src.images))
    if "beetles" in sources:
        from biovqa.sources.beetles import read_beetles

        beetles = read_beetles(sources["beetles"])
        _record_source(manifest, roots, "beetles", beetles, files=True)
        if decode is not None:  # every plate is drawn (distances, positions) or shown (OCR)
            failing = decode.failing("beetles", [plate.path for plate in beetles.plates])
            beetles.plates = [plate for plate in beetles.plates if Path(plate.path) not in failing]
        images, incomplete = [], []
        for plate in beetles.plates:
            if not plate.complete:
                incomplete.append(plate.path)
                continue
            boxes = tuple(plate.specimen_box(i) for i in plate.individuals())
            images.append(AnnotatedImage(plate.path, plate.width, plate.height, boxes, ("beetle",) * len(boxes)))
        subset = _subset("beetles", beetles.root, images)
        if incomplete:
            subset.discard("individuals not 1..N (completeness unverifiable)", incomplete)
        subsets.append(subset)
    if gzcd_images is not None:
        subsets.append(_subset("gzcd", *gzcd_images))
    for subset in subsets:
        zero = [im.path for im in subset.images if im.count == 0]
        if zero:
            subset.discard("no annotated individual", zero)
        usable = [im for im in subset.images if im.count > 0]
        while True:
            # the draw repeated without the photos found undecodable in it (the same seed, so the
            # result is a function of the source files alone); each round decodes only new photos
            drawn = stratified_sample(usable, per_subset, seeded_rng(seed, f"subset:{subset.id}"))
            failing = decode.failing(subset.dataset, [im.path for im in drawn]) if decode is not None else set()
            if not failing:
                break
            usable = [im for im in usable if Path(im.path) not in failing]
        subset.available = len(usable)
        subset.images = drawn
    return subsets, beetles


def _record_source(manifest: dict[str, Any], roots: dict[str, Path], name: str, source: Any, *,
                   files: bool = False, ignored_names: bool = False) -> None:
    """What the manifest keeps of one source read: its photo folder (``roots``), exclusions per
    reason and their first examples, and, where the reader gives them, the files it hashed and
    the object names it did not count."""
    roots[name] = source.root
    manifest["exclusions"][name] = dict(sorted(source.exclusions.items()))
    manifest["exclusion_examples"][name] = dict(sorted(source.exclusion_examples.items()))
    if files:
        manifest["files"].update(source.files)
    if ignored_names and source.ignored_names:
        manifest["ignored_object_names"][name] = source.ignored_names


def _subset(sid: str, root: Path, images: list[Any]) -> Subset:
    dataset, noun = SUBSET_DATASET.get(sid, (sid.split("-")[0], "animals"))
    return Subset(sid, dataset, noun, root, list(images))


def read_catalogs(paths: Mapping[str, Path], manifest: dict[str, Any], roots: dict[str, Path],
                   reader: str = "biovqa") -> tuple[dict[str, list[dict[str, Any]]], tuple[Path, list[Any]] | None,
                                                    str | None]:
    """The wildlife catalogs given: per catalog the localization/viewpoint records (path, width,
    height, box_xywh, viewpoint, species, single), GZCD's counting photos (root, images) and the
    form GZCD was read in. GZCD is read by :mod:`biovqa.sources.gzcd` (either form), the Wild Me
    catalogs by :mod:`biovqa.sources.wildlife`. ``single`` marks the only annotation of its photo
    (one dominant animal: localization, the viewpoint species tier). Each catalog's photo folder
    goes to ``roots``: the folder its photos are named under, whichever form was given."""
    from biovqa.sources.waid import AnnotatedImage

    records: dict[str, list[dict[str, Any]]] = {}
    gzcd_counting: tuple[Path, list[Any]] | None = None
    gzcd_form: str | None = None
    for name in WILDLIFE_SOURCES:
        if name not in paths:
            continue
        rows: list[dict[str, Any]] = []
        if name == "gzcd":
            from biovqa.sources.gzcd import read_gzcd, species_name

            gzcd = read_gzcd(paths[name])
            manifest["exclusions"][name] = gzcd.exclusions
            manifest["exclusion_examples"][name] = gzcd.exclusion_examples
            manifest["files"].update(gzcd.files)
            roots[name], gzcd_form = gzcd.root, gzcd.form
            images = []
            for image in gzcd.images:
                images.append(AnnotatedImage(image.path, image.width, image.height, image.boxes, image.species))
                for g in image.annotations:
                    x1, y1, x2, y2 = g.box
                    rows.append({"path": image.path, "width": image.width, "height": image.height,
                                 "box_xywh": (x1, y1, x2 - x1, y2 - y1), "viewpoint": g.viewpoint,
                                 "species": species_name(g.species), "single": len(image.annotations) == 1})
            gzcd_counting = (gzcd.root, images)
        else:
            from biovqa.sources.wildlife import read_wildlife_catalog

            catalog = read_wildlife_catalog(paths[name], name, reader=reader)
            manifest["exclusions"][name] = dict(catalog.exclusions)
            manifest["exclusion_examples"][name] = catalog.exclusion_examples
            roots[name] = catalog.photos_root
            per_image: dict[str, list[Any]] = {}
            for a in sorted(catalog.annotations, key=lambda a: (a.file_name, a.row)):
                per_image.setdefault(a.file_name, []).append(a)
            for file_name, kept in per_image.items():
                boxes = tuple((float(b[0]), float(b[1]), float(b[2]), float(b[3])) for b in (a.crop_box() for a in kept))
                # a photo is single only if the file annotates one animal in it, not one the reader kept
                single = catalog.annotations_per_image.get(file_name, len(kept)) == 1
                for a, (left, top, right, bottom) in zip(kept, boxes):
                    rows.append({"path": a.image_path, "width": a.width, "height": a.height,
                                 "box_xywh": (left, top, right - left, bottom - top), "viewpoint": a.viewpoint,
                                 "species": (a.species or "animal").replace("_", " "), "single": single})
        records[name] = sorted(rows, key=lambda r: str(r["path"]))
    return records, gzcd_counting, gzcd_form


def declared_complete(names: tuple[str, ...] | list[str]) -> set[str]:
    """The ``--complete-counts`` names, checked: an ecological dataset, never a re-ID catalog."""
    declared = set()
    for raw in names:
        name = str(raw).strip().lower()
        if name in WILDLIFE_SOURCES and name != "gzcd":
            raise BiovqaError(f"--complete-counts {name}: {CATALOG_NO_COUNT}", field="complete_counts",
                              hint=f"counting sources: {', '.join(COUNTING_DATASETS)}")
        if name not in COUNTING_DATASETS:
            raise BiovqaError(f"--complete-counts names a counting source, not {name!r}"
                              f"{did_you_mean(name, COUNTING_DATASETS)}", field="complete_counts",
                              hint=f"counting sources: {', '.join(COUNTING_DATASETS)}")
        declared.add(name)
    return declared


def counting_sources(paths: Mapping[str, Path], gzcd_form: str | None, declared: set[str]) -> dict[str, Any]:
    """Per source given: whether it feeds counting and relative counting, and what that rests on
    (or why not)."""
    out: dict[str, Any] = {}
    for name in sorted(paths, key=SOURCE_NAMES.index):
        key = f"gzcd:{gzcd_form}" if name == "gzcd" else name
        if name in WILDLIFE_SOURCES and name != "gzcd":
            out[name] = {"counting": False, "why": CATALOG_NO_COUNT}
        elif key in COUNT_UNVOUCHED and name not in declared:
            out[name] = {"counting": False, "why": COUNT_UNVOUCHED[key]}
        elif key in COUNT_UNVOUCHED:
            out[name] = {"counting": True, "basis": f"declared complete by the user (--complete-counts {name})"}
        else:
            out[name] = {"counting": True, "basis": COUNT_BASIS[key]}
    return out


def source_forms(paths: Mapping[str, Path], roots: Mapping[str, Path], gzcd_form: str | None) -> dict[str, Any]:
    """How each source was given (a folder, or the annotation file itself), without its location:
    the path given relative to the source's photo folder."""
    out: dict[str, Any] = {}
    for name, given in sorted(paths.items()):
        root = roots.get(name)
        entry: dict[str, Any] = {"given": "file" if Path(given).is_file() else "folder"}
        if root is not None:
            relative = os.path.relpath(Path(given).resolve(), Path(root).resolve())
            entry["under_photo_folder"] = Path(relative).as_posix()
        if name == "gzcd" and gzcd_form:
            entry["form"] = gzcd_form
        out[name] = entry
    return out


__all__ = ["CATALOG_NO_COUNT", "COUNT_BASIS", "COUNT_UNVOUCHED", "SOURCE_NAMES", "WILDLIFE_SOURCES", "DecodeCheck",
           "counting_sources", "declared_complete", "parse_sources", "read_catalogs", "read_subsets", "seeded_rng",
           "source_forms"]
