"""C3 — quantitative spatial reasoning: build the benchmark from the native source datasets.

``biovqa build c3 --source waid=PATH --source bees=PATH … --out BENCH``. Sources (any subset):
``waid`` (WAID folder), ``bees`` (Boxes on Bees ``ML-Data``), ``depondfi`` (``Images/`` +
``Keypoints/``), ``beetles`` (``BeetleMeasurements.csv`` + ``group_images/``), and the wildlife
catalogs ``gzcd``, ``whaleshark``, ``hyena``, ``leopard`` (read by :mod:`biovqa.sources.wildlife`
when that reader is installed). A task whose sources are missing is skipped; the manifest says so
(``skipped_tasks``).

Pipeline: read → decode every photo an item will show once (an undecodable one is the exclusion
``undecodable_image``; :class:`_DecodeCheck`) → count-stratified subsets (:mod:`.subsets`) → items
per task (the paper's Table 70 prompts) → render canvases/overlays into ``rendered/c3/<task>/`` (:mod:`.render`) →
``items.parquet`` + manifest (exclusions per source and reason, subset composition, per-task
counts beside the paper's, drawing parameters).

Counting runs only on sources whose counts are complete (paper §3.3: "we discard images whose
annotation completeness we cannot verify"): :data:`COUNT_BASIS` says what each rests on, the GGR
detection table (:data:`COUNT_UNVOUCHED`) counts only when the user declares it complete
(``--complete-counts gzcd``), and the re-ID catalogs never do; ``manifest.counting_sources`` records
it per source. Every photo is named ``<source>/<path under the folder its photos are named
under>`` whatever form the source was given in (folder, CSV, JSON), and the manifest's
``image_roots`` are relative to the benchmark folder: no host path is recorded.
"""

from __future__ import annotations

import math
import os
import zlib
from pathlib import Path
from collections.abc import Mapping
from typing import Annotated, Any

import numpy as np
import pyarrow as pa
import typer

from biovqa.bench.folder import Bench, relative_to_bench, staged_build, write_bench
from biovqa.errors import BiovqaError, did_you_mean
from biovqa.components.c3 import tasks as T
from biovqa.components.c3.render import (COLOURS, UNDECODABLE, CanvasJob, Panel, Shape, SourcePhoto, render_all,
                                         single, undecodable)
from biovqa.components.c3.subsets import (COUNTING_DATASETS, SUBSET_DATASET, CountLevel, Subset, source_label,
                                          stratified_sample, waid_subset)

GENERATOR = "biovqa.components.c3.build"
SOURCE_NAMES: tuple[str, ...] = ("waid", "bees", "depondfi", "beetles", "gzcd", "whaleshark", "hyena", "leopard")
WILDLIFE_SOURCES: tuple[str, ...] = ("gzcd", "whaleshark", "hyena", "leopard")
RENDER_FOLDER = "rendered/c3"
#: relative counting: unique extreme with ≥ 10 % and ≥ 1 individual over the runner-up [DEFAULT]
RC_MARGIN = 0.10
#: relative distance: unique largest with ≥ 5 % over the runner-up [DEFAULT]
RD_MARGIN = 0.05
#: relative position: skip pairs within ±5° of a sector boundary [DEFAULT]
RPOS_BOUNDARY_DEG = 5.0
PANEL_SCALE_RANGE = (0.55, 1.0)
#: counting: distinct partner photos per photo in each two-panel tier [DEFAULT from the paper's
#: 53 498 items: ≈ 9 questions per photo = easy 1 + medium 4 + hard 4]
COUNTING_PARTNERS = 4
#: relative counting: 2×2 grids per anchor photo on average (anchor k gets ⌊(k+1)·g⌋ − ⌊k·g⌋), each
#: asked "most" and/or "least" [DEFAULT from the paper's 42 412 items over 5 000 anchors ≈ 8.5
#: questions per anchor; ≈ 1.57 questions per grid on the synthetic full build → 5.4 grids]
GRIDS_PER_ANCHOR = 5.4
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
TASK_SOURCES: dict[str, tuple[str, ...]] = {
    "counting": COUNTING_DATASETS, "relative_counting": COUNTING_DATASETS, "absolute_distance": ("beetles",),
    "relative_distance": ("beetles",), "relative_position": ("beetles",), "ocr": ("beetles",),
    "localization": WILDLIFE_SOURCES, "viewpoint": WILDLIFE_SOURCES,
}


def _rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])


def parse_sources(pairs: list[str]) -> dict[str, Path]:
    """``NAME=PATH`` strings → {name: path}; unknown or repeated names are errors."""
    out: dict[str, Path] = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        name = name.strip().lower()
        if not sep or not path:
            raise BiovqaError(f"--source takes NAME=PATH, got {pair!r}", field="source")
        if name not in SOURCE_NAMES:
            raise BiovqaError(f"unknown C3 source {name!r}{did_you_mean(name, SOURCE_NAMES)}", field="source",
                              hint=f"known sources: {', '.join(SOURCE_NAMES)}")
        if name in out:
            raise BiovqaError(f"source {name!r} given twice", field="source")
        out[name] = Path(path)
    return out


# ------------------------------------------------------------------------------- reading


class _DecodeCheck:
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


def _read_subsets(sources: dict[str, Path], per_subset: int, seed: int, manifest: dict[str, Any],
                  roots: dict[str, Path], gzcd_images: tuple[Path, list[Any]] | None = None,
                  decode: _DecodeCheck | None = None) -> tuple[list[Subset], Any]:
    """The counting subsets of the ecological datasets given (``gzcd_images``: GZCD's photos when
    its counts are vouched for); records each source's photo folder in ``roots``. With ``decode``,
    the beetle plates and each subset's drawn photos are decoded in full and the undecodable ones
    left out before the draw is final."""
    from biovqa.sources.waid import AnnotatedImage

    subsets: list[Subset] = []
    beetles = None
    exclusions = manifest["exclusions"]
    if "waid" in sources:
        from biovqa.sources.waid import read_classes, read_waid

        src = read_waid(sources["waid"])
        roots["waid"] = src.root
        exclusions["waid"] = dict(sorted(src.exclusions.items()))
        manifest["exclusion_examples"]["waid"] = dict(sorted(src.exclusion_examples.items()))
        manifest["files"].update(src.files)
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
            roots[name] = src.root
            exclusions[name] = dict(sorted(src.exclusions.items()))
            manifest["exclusion_examples"][name] = dict(sorted(src.exclusion_examples.items()))
            if src.ignored_names:
                manifest["ignored_object_names"][name] = src.ignored_names
            subsets.append(_subset(name, src.root, src.images))
    if "beetles" in sources:
        from biovqa.sources.beetles import read_beetles

        beetles = read_beetles(sources["beetles"])
        roots["beetles"] = beetles.root
        exclusions["beetles"] = dict(sorted(beetles.exclusions.items()))
        manifest["exclusion_examples"]["beetles"] = dict(sorted(beetles.exclusion_examples.items()))
        manifest["files"].update(beetles.files)
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
            drawn = stratified_sample(usable, per_subset, _rng(seed, f"subset:{subset.id}"))
            failing = decode.failing(subset.dataset, [im.path for im in drawn]) if decode is not None else set()
            if not failing:
                break
            usable = [im for im in usable if Path(im.path) not in failing]
        subset.available = len(usable)
        subset.images = drawn
    return subsets, beetles


def _subset(sid: str, root: Path, images: list[Any]) -> Subset:
    dataset, noun = SUBSET_DATASET.get(sid, (sid.split("-")[0], "animals"))
    return Subset(sid, dataset, noun, root, list(images))


def _read_catalogs(paths: Mapping[str, Path], manifest: dict[str, Any], roots: dict[str, Path],
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


# ------------------------------------------------------------------------------- building


class _Builder:
    def __init__(self, out: Path, seed: int, canvas: int, plate_side: int,
                 counting_tiers: tuple[str, ...] = T.COUNTING_TIERS, partners: int = COUNTING_PARTNERS,
                 grids_per_anchor: float = GRIDS_PER_ANCHOR, roots: dict[str, Path] | None = None) -> None:
        self.out = out
        self.roots = dict(roots or {})
        #: sources whose photos items show as they are (the manifest's image_roots)
        self.referenced: set[str] = set()
        self.counting_tiers = counting_tiers
        self.partners = partners
        self.grids_per_anchor = grids_per_anchor
        self.seed = seed
        self.canvas = canvas
        self.plate_side = plate_side
        self.rows: dict[str, list[dict[str, Any]]] = {t: [] for t in T.TASKS}
        self.jobs: list[CanvasJob | SourcePhoto] = []
        #: (row, index of its image's job): a shared canvas is one job behind several rows
        self.job_rows: list[tuple[dict[str, Any], int]] = []
        self.source_jobs: dict[Path, int] = {}
        self.skipped: dict[str, int] = {}
        #: reason → the first photos (``<source>/<path under it>``) a skip concerned
        self.skipped_examples: dict[str, list[str]] = {}
        #: catalog → photos the viewpoint species tier left out for showing several animals
        self.multi_animal_photos: dict[str, set[str]] = {}
        #: relative position: what the balanced draw found and kept (the manifest's record)
        self.relative_position_record: dict[str, Any] = {}

    def skip(self, reason: str, photo: str) -> None:
        """Count one item or question not generated for ``reason``, naming the ``photo`` it concerned
        (its :meth:`label`), like every exclusion."""
        from biovqa.sources.validate import count_exclusion

        count_exclusion(self.skipped, self.skipped_examples, reason, (photo,))

    def register(self, job: CanvasJob | SourcePhoto) -> int:
        """Queue one image to render; its index, for the items that show it (a source photo shown
        as it is by several items is one image, hashed once)."""
        if isinstance(job, SourcePhoto):
            known = self.source_jobs.get(job.source)
            if known is not None:
                return known
            self.source_jobs[job.source] = len(self.jobs)
        self.jobs.append(job)
        return len(self.jobs) - 1

    def add(self, task: str, row: dict[str, Any], job: CanvasJob | SourcePhoto | int) -> None:
        """One item; ``job`` is a new image or the index of one already registered (shared)."""
        row = {"task": task, "instruction": T.INSTRUCTIONS[task], **row}
        self.rows[task].append(row)
        self.job_rows.append((row, job if isinstance(job, int) else self.register(job)))

    def label(self, source: str, path: Path | str) -> str:
        """``<source>/<path under its folder>``: how items name a source photo (``cluster``,
        ``source_id``)."""
        return source_label(source, self.roots[source], path)

    def source_photo(self, source: str, path: Path) -> str:
        """An item's ``image`` for a photo shown as it is: its :meth:`label` (resolved through the
        manifest's ``image_roots``)."""
        self.referenced.add(source)
        return self.label(source, path)

    def destination(self, task: str, name: str, suffix: str = ".png") -> tuple[str, Path]:
        rel = f"{RENDER_FOLDER}/{task}/{name}{suffix}"
        return rel, self.out / rel

    # ---------------------------------------------------------------- counting

    def counting(self, subsets: list[Subset]) -> None:
        """Easy: one canvas per photo, asked at every count level. Medium/hard: each photo gets
        ``partners`` distinct partners per tier (:func:`partner_pairs`; medium from another subset,
        hard from its own subset); each unordered pair is one two-panel canvas, asked about its left
        and its right photograph at every level whose count is nonzero there."""
        index = {id(im): (s, k) for s in subsets for k, im in enumerate(s.images)}
        per_photo: dict[int, int] = {}
        for subset in subsets:
            for k, image in enumerate(subset.images):
                for level in subset.levels:
                    if level.count(image) == 0:
                        self.skip(f"counting {subset.id}: no {level.noun} in the photograph (level not asked)",
                                  subset.cluster(image))
                if "easy" in self.counting_tiers:
                    self.counting_easy(subset, k, image)
        for tier in ("medium", "hard"):
            if tier not in self.counting_tiers:
                continue
            rng = _rng(self.seed, f"counting:{tier}")
            if tier == "medium":
                # "two panels drawn from different datasets": the paper calls its ten subsets "the ten
                # datasets" (Sec. A.3), and WAID's six class subsets hold most photos, so panels differ
                # by subset (pairing across source datasets only would leave WAID photos short of partners)
                pairs = partner_pairs([(s.id, im) for s in subsets for im in s.images], self.partners, rng,
                                      across=True)
            else:
                pairs = [pair for s in subsets for pair in partner_pairs([(s.id, im) for im in s.images],
                                                                         self.partners, rng, across=False)]
            partnered: set[int] = set()
            for a, b in pairs:
                partnered.update((id(a), id(b)))
                left, right = (a, b) if int(rng.integers(2)) == 0 else (b, a)
                self.counting_pair(tier, index[id(left)], index[id(right)], per_photo)
            for s in subsets:
                for im in s.images:
                    if id(im) not in partnered:
                        self.skip(f"counting {tier}: no partner photograph", s.cluster(im))

    def _count_base(self, subset: Subset, image: Any) -> dict[str, Any]:
        return {"subset": subset.id, "dataset": subset.dataset, "cluster": subset.cluster(image),
                "source_id": subset.cluster(image)}

    def _levels(self, subset: Subset, image: Any) -> list[tuple[CountLevel, int, str, dict[str, Any]]]:
        """(level, count, id suffix, payload extra) for every level asked about ``image``."""
        nested = len(subset.levels) > 1
        out = []
        for level in subset.levels:
            count = level.count(image)
            if count:
                out.append((level, count, f"-{level.name}" if nested else "", {"level": level.name} if nested else {}))
        return out

    def counting_easy(self, subset: Subset, k: int, image: Any) -> None:
        stem = f"c3-counting-{subset.id}-{k:05d}"
        asked = self._levels(subset, image)
        if not asked:
            return
        rel, dest = self.destination("counting", f"{stem}-easy")
        job = self.register(single(image.path, dest, easy_canvas(image.width, image.height, self.canvas)))
        for level, count, suffix, extra in asked:
            self.add("counting", {**self._count_base(subset, image), "item_id": f"{stem}{suffix}-easy",
                                  "tier": "easy", "image": rel, "gold_number": float(count), "answer": str(count),
                                  "question": T.prompt(None, T.Q_COUNT.format(animals=level.noun)),
                                  "answer_payload": T.payload({"count": count, "panel": None, **extra})}, job)

    def counting_pair(self, tier: str, left: tuple[Subset, int], right: tuple[Subset, int],
                      per_photo: dict[int, int]) -> None:
        """One two-panel canvas (left, right), asked about each side at each nonzero level."""
        (ls, lk), (rs, rk) = left, right
        limage, rimage = ls.images[lk], rs.images[rk]
        name = f"c3-counting-{tier}-{ls.id}-{lk:05d}-{rs.id}-{rk:05d}"
        rel, dest = self.destination("counting", name)
        job: int | None = None
        size, (lrect, rrect) = pair_canvas((limage.width, limage.height), (rimage.width, rimage.height), self.canvas)
        for side, (subset, k), image, other in (("left", left, limage, rimage), ("right", right, rimage, limage)):
            asked = self._levels(subset, image)
            if not asked:
                continue
            if job is None:
                job = self.register(CanvasJob(dest, size, (Panel(limage.path, lrect), Panel(rimage.path, rrect))))
            rect = lrect if side == "left" else rrect
            easy_w, easy_h = easy_canvas(image.width, image.height, self.canvas)
            share = round(rect[2] * rect[3] / (easy_w * easy_h), 3)
            j = per_photo.get(id(image) * 2 + (tier == "hard"), 0)
            per_photo[id(image) * 2 + (tier == "hard")] = j + 1
            for level, count, suffix, extra in asked:
                question = T.prompt(T.FRAME_TWO_PANEL, T.Q_COUNT_PANEL.format(animals=level.noun, side=side))
                self.add("counting", {**self._count_base(subset, image),
                                      "item_id": f"c3-counting-{subset.id}-{k:05d}{suffix}-{tier}-{j}",
                                      "tier": tier, "image": rel, "gold_number": float(count), "answer": str(count),
                                      "question": question,
                                      "answer_payload": T.payload({"count": count, "panel": side,
                                                                   "other_count": other.count,
                                                                   "area_vs_easy": share, **extra})}, job)

    def relative_counting(self, subsets: list[Subset]) -> None:
        """``grids_per_anchor`` 2×2 grids per anchor photo on average (anchor k of a subset gets
        ⌊(k+1)·g⌋ − ⌊k·g⌋, g in thousandths; conditions alternate same/different along the subset);
        each grid is asked for the most and/or the least individuals, wherever a unique extreme with
        the margin exists, both questions sharing the grid image."""
        c, half = self.canvas, self.canvas // 2
        rng = _rng(self.seed, "relative_counting")
        pool = [(s, im) for s in subsets for im in s.images]
        gold_turn = {"same": 0, "different": 0}
        rects = [(0, 0, half, half), (half, 0, c - half, half), (0, half, half, c - half),
                 (half, half, c - half, c - half)]
        seen: set[frozenset[int]] = set()
        milli = round(self.grids_per_anchor * 1000)
        for subset in subsets:
            turn = 0
            same = [(subset, im) for im in subset.images]
            different = [(s, im) for s, im in pool if s.dataset != subset.dataset]
            for k, anchor in enumerate(subset.images):
                for g in range((k + 1) * milli // 1000 - k * milli // 1000):
                    condition = T.RELATIVE_COUNTING_CONDITIONS[turn % 2]
                    turn += 1
                    candidates = [e for e in same if e[1] is not anchor] if condition == "same" else different
                    chosen, extremes = None, []
                    for _ in range(20):
                        if len(candidates) < 3:
                            break
                        picks = [candidates[int(i)] for i in rng.choice(len(candidates), size=3, replace=False)]
                        if condition == "different" and len({s.dataset for s, _ in picks}) < min(
                                3, len({s.dataset for s, _ in candidates})):
                            continue
                        group = [(subset, anchor), *picks]
                        key = frozenset(id(im) for _, im in group)
                        extremes = [e for e in ("most", "least") if _unique_extreme([im.count for _, im in group], e)]
                        if extremes and key not in seen:
                            seen.add(key)
                            chosen = group
                            break
                    if chosen is None:
                        self.skip(f"relative_counting {condition}: no group with a unique extreme",
                                  subset.cluster(anchor))
                        continue
                    # the first extreme's winner takes the rotated gold letter; the rest are shuffled
                    first = max(chosen, key=lambda e: e[1].count if extremes[0] == "most" else -e[1].count)
                    rest = [e for e in chosen if e is not first]
                    order = [int(i) for i in rng.permutation(3)]
                    letter = T.LETTERS[gold_turn[condition] % 4]
                    gold_turn[condition] += 1
                    slots: list[Any] = [None] * 4
                    slots[T.LETTERS.index(letter)] = first
                    free = [i for i in range(4) if slots[i] is None]
                    for i, j in zip(free, order):
                        slots[i] = rest[j]
                    scales = [round(float(v), 3) for v in rng.uniform(*PANEL_SCALE_RANGE, size=4)]
                    stem = f"c3-relative_counting-{subset.id}-{k:05d}-{g}"
                    rel, dest = self.destination("relative_counting", stem)
                    job = self.register(CanvasJob(dest, (c, c), tuple(
                        Panel(im.path, rect, scale) for (_, im), rect, scale in zip(slots, rects, scales))))
                    nouns = {s.noun for s, _ in slots}
                    noun = nouns.pop() if len(nouns) == 1 else "animals"
                    counts_by = {lt: im.count for lt, (_, im) in zip(T.LETTERS, slots)}
                    for extreme in extremes:
                        pick = max if extreme == "most" else min
                        gold = pick(T.LETTERS, key=lambda lt: counts_by[lt])
                        question = T.prompt(T.FRAME_GRID, T.Q_RELATIVE_COUNT.format(extreme=extreme, animals=noun))
                        self.add("relative_counting", {
                            "item_id": f"{stem}-{extreme}", "subset": subset.id, "dataset": subset.dataset,
                            "tier": condition, "cluster": subset.cluster(anchor), "source_id": subset.cluster(anchor),
                            "image": rel, "question": question, "answer": gold, "options": list(T.LETTERS),
                            "answer_payload": T.payload({"panel": gold, "extreme": extreme, "counts": counts_by,
                                                         "datasets": {lt: s.dataset for lt, (s, _) in
                                                                      zip(T.LETTERS, slots)}}),
                        }, job)

    # ---------------------------------------------------------------- beetles

    def plate_size(self, plate: Any) -> tuple[int, int]:
        s = min(1.0, self.plate_side / max(plate.width, plate.height))
        return max(1, round(plate.width * s)), max(1, round(plate.height * s))

    def beetle_base(self, plate: Any) -> dict[str, Any]:
        # the plate's one name, as its counting items and its OCR photo name it
        return {"subset": "beetles", "dataset": "beetles", "cluster": self.label("beetles", plate.path),
                "source_id": plate.picture_id}

    def absolute_distance(self, plates: list[Any]) -> None:
        for plate in plates:
            size = self.plate_size(plate)
            for m in plate.measurements:
                item_id = f"c3-absolute_distance-{Path(plate.picture_id).stem}-{m.individual:02d}-{m.measure}"
                rel, dest = self.destination("absolute_distance", item_id)
                shapes = (Shape("line", 0, m.scalebar, "blue", border="green"),
                          Shape("line", 0, m.line, "red", border="white"))
                question = T.prompt(T.FRAME_ABSOLUTE, T.Q_ABSOLUTE.format(measure=m.measure))
                self.add("absolute_distance", {
                    **self.beetle_base(plate), "item_id": item_id, "tier": None, "measure": m.measure,
                    "image": rel, "question": question, "answer": f"{m.dist_cm:.3f}",
                    "gold_number": float(m.dist_cm),
                    "answer_payload": T.payload({"cm": round(m.dist_cm, 6), "measure": m.measure,
                                                 "individual": m.individual, "dist_pix": m.dist_pix,
                                                 "cm_pix": m.cm_pix, "csv_row": m.row}),
                }, single(plate.path, dest, size, shapes))

    def relative_distance(self, plates: list[Any]) -> None:
        rng = _rng(self.seed, "relative_distance")
        turn = 0
        for plate in plates:
            size = self.plate_size(plate)
            individuals = plate.individuals()
            for measure in ("length", "width"):
                having = [i for i, ms in individuals.items() if measure in ms]
                order = [having[int(j)] for j in rng.permutation(len(having))]
                for g in range(len(order) // 4):
                    group = order[4 * g:4 * g + 4]
                    values = sorted((individuals[i][measure].dist_cm for i in group), reverse=True)
                    if not values[0] >= values[1] * (1 + RD_MARGIN):
                        self.skip("relative_distance: no unique largest (5 % margin)",
                                  self.label("beetles", plate.path))
                        continue
                    winner = max(group, key=lambda i: individuals[i][measure].dist_cm)
                    gold = T.LETTERS[turn % 4]
                    turn += 1
                    rest = [i for i in group if i != winner]
                    slots = rest[: T.LETTERS.index(gold)] + [winner] + rest[T.LETTERS.index(gold):]
                    shapes = []
                    for letter, individual in zip(T.LETTERS, slots):
                        colour = T.BEETLE_COLOURS[letter]
                        shapes.append(Shape("box", 0, plate.specimen_box(individual), colour, dotted=True))
                        shapes.append(Shape("line", 0, individuals[individual][measure].line, colour))
                    item_id = f"c3-relative_distance-{Path(plate.picture_id).stem}-{measure}-{g:02d}"
                    rel, dest = self.destination("relative_distance", item_id)
                    question = T.prompt(T.FRAME_RELATIVE, T.Q_RELATIVE.format(measure=measure))
                    self.add("relative_distance", {
                        **self.beetle_base(plate), "item_id": item_id, "measure": measure, "image": rel,
                        "question": question, "answer": gold, "options": list(T.LETTERS),
                        "answer_payload": T.payload({"beetle": gold, "measure": measure,
                                                     "individuals": dict(zip(T.LETTERS, slots)),
                                                     "cm": {lt: round(individuals[i][measure].dist_cm, 6)
                                                            for lt, i in zip(T.LETTERS, slots)}}),
                    }, single(plate.path, dest, size, shapes))

    def relative_position(self, plates: list[Any], n_items: int) -> None:
        rng = _rng(self.seed, "relative_position")
        by_direction: dict[str, list[tuple[Any, int, int]]] = {d: [] for d in T.DIRECTIONS}
        for plate in plates:
            ids = list(plate.individuals())
            centres = {i: _centre(plate.specimen_box(i)) for i in ids}
            for red in ids:
                for blue in ids:
                    if red == blue:
                        continue
                    direction = direction_of(centres[blue], centres[red])
                    if direction is not None:
                        by_direction[direction].append((plate, red, blue))
        quota = n_items // len(T.DIRECTIONS)
        # per direction, candidates in a seeded order until `quota` have room for their empty boxes;
        # then every direction keeps as many as the scarcest one found, so the golds stay balanced
        # (a constant reply scores 1/8) and what the plates could not give is a recorded shortfall
        found: dict[str, list[tuple[Any, int, int, list[Any]]]] = {d: [] for d in T.DIRECTIONS}
        for direction in T.DIRECTIONS:
            candidates = by_direction[direction]
            for i in rng.permutation(len(candidates)):
                if len(found[direction]) == quota:
                    break
                plate, red, blue = candidates[int(i)]
                boxes = placed_boxes(plate, red, blue, rng)
                if boxes is None:
                    self.skip("relative_position: no room for the empty boxes", self.label("beetles", plate.path))
                    continue
                found[direction].append((plate, red, blue, boxes))
        per_direction = min(len(v) for v in found.values())
        self.relative_position_record = {
            "requested": n_items, "per_direction_requested": quota, "per_direction": per_direction,
            "produced": per_direction * len(T.DIRECTIONS),
            "shortfall": n_items - per_direction * len(T.DIRECTIONS),
            "found_per_direction": {d: len(v) for d, v in found.items()},
            "limited_by": sorted(d for d, v in found.items() if len(v) == per_direction) if per_direction < quota
            else []}
        chosen = [(direction, *entry) for direction in T.DIRECTIONS for entry in found[direction][:per_direction]]
        for k, (direction, plate, red, blue, boxes) in enumerate(chosen):
            others = [d for d in T.DIRECTIONS if d != direction]
            options = [direction, *(others[int(i)] for i in rng.choice(len(others), size=3, replace=False))]
            options = [options[int(i)] for i in rng.permutation(4)]
            item_id = f"c3-relative_position-{k:05d}"
            rel, dest = self.destination("relative_position", item_id)
            shapes = tuple(Shape("box", 0, box, colour) for colour, box in boxes)
            self.add("relative_position", {
                **self.beetle_base(plate), "item_id": item_id, "image": rel,
                "question": T.prompt(None, T.Q_POSITION.format(options=", ".join(options))),
                "answer": direction, "options": options,
                "answer_payload": T.payload({"direction": direction, "options": options, "red": red, "blue": blue,
                                             "boxes": [[c, [round(v, 1) for v in b]] for c, b in boxes]}),
            }, single(plate.path, dest, self.plate_size(plate), shapes))

    def ocr(self, plates: list[Any]) -> None:
        for plate in plates:
            code = plate.code
            if code is None:
                self.skip("ocr: picture id is not an A + 11 digit code", self.label("beetles", plate.path))
                continue
            item_id = f"c3-ocr-{code}"
            self.add("ocr", {**self.beetle_base(plate), "item_id": item_id,
                             "image": self.source_photo("beetles", plate.path),
                             "question": T.prompt(T.FRAME_OCR, T.Q_OCR), "answer": code,
                             "answer_payload": T.payload({"code": code})}, SourcePhoto(plate.path))

    # ---------------------------------------------------------------- wildlife catalogs

    def localization(self, name: str, records: list[dict[str, Any]]) -> None:
        for k, rec in enumerate(r for r in records if r.get("single", True)):
            x, y, w, h = (float(v) for v in rec["box_xywh"])
            width, height = int(rec["width"]), int(rec["height"])
            item_id = f"c3-localization-{name}-{k:05d}"
            question = T.prompt(T.FRAME_LOCALIZATION.format(W=width, H=height),
                                T.Q_LOCALIZATION.format(species=rec.get("species") or "animal"))
            self.add("localization", {
                "item_id": item_id, "subset": name, "dataset": name, "cluster": self.label(name, rec["path"]),
                "source_id": self.label(name, rec["path"]),
                "image": self.source_photo(name, Path(rec["path"])), "question": question,
                "answer": f"[{round(x)}, {round(y)}, {round(w)}, {round(h)}]",
                "image_width": width, "image_height": height, "gold_box": [x, y, x + w, y + h],
                "answer_payload": T.payload({"box_xywh": [x, y, w, h], "box_xyxy": [x, y, x + w, y + h],
                                             "width": width, "height": height}),
            }, SourcePhoto(Path(rec["path"])))

    def viewpoint(self, name: str, records: list[dict[str, Any]]) -> None:
        rng = _rng(self.seed, f"viewpoint:{name}")
        usable = [r for r in records if r.get("viewpoint") in T.VIEWPOINTS]
        for r in records:
            if r.get("viewpoint") is None:
                self.skip("viewpoint: annotation without a viewpoint", self.label(name, r["path"]))
            elif r["viewpoint"] not in T.VIEWPOINTS:
                self.skip("viewpoint: label outside the 10 viewpoints", self.label(name, r["path"]))
        # tiers rotate red_box / species / three_panel over the single-animal photos' annotations;
        # an animal on a photo with others is never asked by species name ("localization and viewpoint
        # need a single dominant subject", §3.3): its annotations rotate over the two marked tiers
        turns = {True: 0, False: 0}
        for k, rec in enumerate(usable):
            alone = bool(rec.get("single", True))
            tiers = T.VIEWPOINT_TIERS if alone else tuple(t for t in T.VIEWPOINT_TIERS if t != "species")
            tier = tiers[turns[alone] % len(tiers)]
            turns[alone] += 1
            if not alone:
                self.multi_animal_photos.setdefault(name, set()).add(str(rec["path"]))
            x, y, w, h = (float(v) for v in rec["box_xywh"])
            species = rec.get("species") or "animal"
            item_id = f"c3-viewpoint-{name}-{k:05d}"
            base = {"item_id": item_id, "subset": name, "dataset": name, "tier": tier,
                    "cluster": self.label(name, rec["path"]), "source_id": self.label(name, rec["path"]),
                    "answer": rec["viewpoint"],
                    "answer_payload": T.payload({"viewpoint": rec["viewpoint"], "tier": tier})}
            source = Path(rec["path"])
            size = (int(rec["width"]), int(rec["height"]))
            if tier == "species":
                self.add("viewpoint", {**base, "image": self.source_photo(name, source),
                                       "question": T.Q_VIEW_SPECIES.format(species=species)}, SourcePhoto(source))
            elif tier == "red_box":
                rel, dest = self.destination("viewpoint", item_id)
                s = min(1.0, self.plate_side / max(size))
                job = single(source, dest, (max(1, round(size[0] * s)), max(1, round(size[1] * s))),
                             (Shape("box", 0, (x, y, x + w, y + h), "red"),))
                self.add("viewpoint", {**base, "image": rel, "question": T.Q_VIEW_RED}, job)
            else:
                if len(usable) < 3:
                    self.skip("viewpoint three_panel: fewer than 3 photographs", self.label(name, rec["path"]))
                    continue
                side = int(rng.integers(3))
                fillers = [usable[int(i)] for i in rng.choice(len(usable), size=3, replace=False) if int(i) != k][:2]
                panels = fillers[:side] + [rec] + fillers[side:]
                third = self.canvas // 3
                rel, dest = self.destination("viewpoint", item_id)
                job = CanvasJob(dest, (3 * third, third),
                                tuple(Panel(Path(p["path"]), (j * third, 0, third, third)) for j, p in enumerate(panels)),
                                tuple(Shape("box", j, _xyxy(p["box_xywh"]), "red") for j, p in enumerate(panels)))
                question = T.prompt(T.FRAME_THREE_PANEL, T.Q_VIEW_PANEL.format(
                    species=species, side=("left", "middle", "right")[side]))
                self.add("viewpoint", {**base, "image": rel, "question": question}, job)


def _unique_extreme(counts: list[int], extreme: str, margin: float = RC_MARGIN) -> bool:
    """True when the most (or least) count is unique with ≥ ``margin`` and ≥ 1 over the runner-up."""
    ordered = sorted(counts, reverse=(extreme == "most"))
    best, runner = ordered[0], ordered[1]
    if extreme == "most":
        return best >= runner * (1 + margin) and best - runner >= 1
    return runner >= best * (1 + margin) and runner - best >= 1


def _interleave(entries: list[tuple[str, Any]], window: int, rng: np.random.Generator) -> list[tuple[str, Any]]:
    """``entries`` (group, photo) in an order where no two of the same group lie within ``window``
    places whenever the group sizes allow it: each group shuffled, then greedily the group with the
    most photos left that is not among the last ``window`` placed (ties: a seeded group rank)."""
    groups: dict[str, list[tuple[str, Any]]] = {}
    for entry in entries:
        groups.setdefault(entry[0], []).append(entry)
    names = sorted(groups)
    rank = {name: int(r) for name, r in zip(names, rng.permutation(len(names)))}
    queues = {name: [groups[name][int(i)] for i in rng.permutation(len(groups[name]))] for name in names}
    out: list[tuple[str, Any]] = []
    while len(out) < len(entries):
        recent = {e[0] for e in out[-window:]} if window else set()
        open_groups = [name for name in names if queues[name]]
        eligible = [name for name in open_groups if name not in recent] or open_groups
        name = max(eligible, key=lambda g: (len(queues[g]), -rank[g]))
        out.append(queues[name].pop())
    return out


def partner_pairs(entries: list[tuple[str, Any]], partners: int, rng: np.random.Generator, *,
                  across: bool) -> list[tuple[Any, Any]]:
    """Unordered photo pairs in which every photo has ``partners`` distinct partners (fewer only
    where the pool is too small or, ``across``, a group too large): the photos are put in a seeded
    order (``across``: interleaved so that neighbours come from different groups) and each is
    linked to the next ⌊partners/2⌋ (cyclically), plus, for an odd number, a matching at distance
    ⌈partners/2⌉. ``across`` drops same-group pairs; no unordered pair appears twice."""
    n = len(entries)
    if n < 2 or partners < 1:
        return []
    half = partners // 2
    order = _interleave(entries, (partners + 1) // 2, rng) if across else [entries[int(i)] for i in rng.permutation(n)]
    seen: set[frozenset[int]] = set()
    pairs: list[tuple[Any, Any]] = []

    def link(i: int, j: int) -> None:
        (ga, a), (gb, b) = order[i % n], order[j % n]
        key = frozenset((id(a), id(b)))
        if a is b or (across and ga == gb) or key in seen:
            return
        seen.add(key)
        pairs.append((a, b))

    for i in range(n):
        for d in range(1, half + 1):
            link(i, i + d)
    if partners % 2:
        step = half + 1
        for i in range(n - step):
            if (i // step) % 2 == 0:
                link(i, i + step)
    return pairs


#: Paper Sec. A.3: GZCD contributes 2.9 × the median subset's counting items.
PAPER_GZCD_COUNTING_RATIO = 2.9


def _median_ratios(per_subset_items: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    """Each subset's counting items over the median subset's, beside the paper's GZCD ratio."""
    counts = {sid: entry.get("counting", 0) for sid, entry in per_subset_items.items()}
    median = float(np.median(list(counts.values()))) if counts else 0.0
    return {"median": median, "paper_gzcd_ratio": PAPER_GZCD_COUNTING_RATIO,
            "ratios": {sid: round(n / median, 3) if median else None for sid, n in sorted(counts.items())}}


#: Paper §3.3: C3's images (source photos plus composed canvases/overlays).
PAPER_IMAGES = 78139


def _image_counts(builder: _Builder) -> dict[str, Any]:
    """Images the items show (canvases and overlays drawn under ``rendered/``, source photos shown
    as they are) beside the paper's 78 139, and how many items share them."""
    canvases = sum(isinstance(job, CanvasJob) for job in builder.jobs)
    per_task: dict[str, set[int]] = {}
    for row, index in builder.job_rows:
        per_task.setdefault(row["task"], set()).add(index)
    produced = len(builder.jobs)
    return {"produced": produced, "rendered": canvases, "canvases": canvases, "source_photos": produced - canvases,
            "by_task": {t: len(per_task.get(t, ())) for t in T.TASKS},
            "items_per_image": round(len(builder.job_rows) / produced, 3) if produced else None,
            "expected_paper_count": PAPER_IMAGES, "difference": produced - PAPER_IMAGES}


def easy_canvas(width: int, height: int, side: int) -> tuple[int, int]:
    """The Easy counting canvas of a ``width`` × ``height`` photo: the photo's aspect at the pixel
    budget ``side``² (the paper's fixed budget, §A.3), so the one image fills the canvas."""
    aspect = width / height
    return max(1, round(side * math.sqrt(aspect))), max(1, round(side / math.sqrt(aspect)))


def pair_canvas(left: tuple[int, int], right: tuple[int, int], side: int
                ) -> tuple[tuple[int, int], tuple[tuple[int, int, int, int], tuple[int, int, int, int]]]:
    """The two-panel counting canvas (size, (left rect, right rect)) at the same pixel budget
    ``side``² as Easy: both photos side by side at one height, each panel its photo's aspect, so
    each photo gets about half the area it has on its Easy canvas (exactly half for equal aspects;
    the paper: "a target occupies about half the area in Medium and Hard that it occupies in
    Easy", §A.3 and §G.2)."""
    a_left, a_right = left[0] / left[1], right[0] / right[1]
    height = max(1, round(side / math.sqrt(a_left + a_right)))
    w_left, w_right = max(1, round(height * a_left)), max(1, round(height * a_right))
    return (w_left + w_right, height), ((0, 0, w_left, height), (w_left, 0, w_right, height))


def _xyxy(box: Any) -> tuple[float, float, float, float]:
    x, y, w, h = (float(v) for v in box)
    return x, y, x + w, y + h


def _centre(box: tuple[float, float, float, float]) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


def direction_of(origin: tuple[float, float], target: tuple[float, float],
                 boundary: float = RPOS_BOUNDARY_DEG) -> str | None:
    """The 45° sector of the vector origin → target (image y down; 0° = top, clockwise);
    None within ``boundary`` degrees of a sector edge or for a zero vector."""
    dx, dy = target[0] - origin[0], target[1] - origin[1]
    if dx == 0 and dy == 0:
        return None
    angle = math.degrees(math.atan2(dx, -dy)) % 360.0
    sector = int(round(angle / 45.0)) % 8
    offset = abs((angle - sector * 45.0 + 180.0) % 360.0 - 180.0)
    if offset > 22.5 - boundary:
        return None
    return T.DIRECTIONS[sector]


def _overlaps(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def placed_boxes(plate: Any, red: int, blue: int, rng: np.random.Generator, tries: int = 200
                 ) -> list[tuple[str, tuple[float, float, float, float]]] | None:
    """Six boxes: red and blue around the two specimens, an empty red and an empty blue box (no
    specimen inside or touching), green and cyan around two other specimens when the plate has them,
    else empty. None when the empty boxes do not fit."""
    specimens = {i: plate.specimen_box(i) for i in plate.individuals()}
    taken = list(specimens.values())
    out = [("red", specimens[red]), ("blue", specimens[blue])]
    others = [i for i in specimens if i not in (red, blue)]
    extra = [others[int(i)] for i in rng.permutation(len(others))[:2]]
    for colour, individual in zip(("green", "cyan"), extra):
        out.append((colour, specimens[individual]))
    empty_colours = ["red", "blue"] + ["green", "cyan"][len(extra):]
    drawn = [b for _, b in out]
    for colour in empty_colours:
        template = specimens[red] if colour == "red" else specimens[blue]
        w, h = template[2] - template[0], template[3] - template[1]
        if w >= plate.width or h >= plate.height:
            return None
        for _ in range(tries):
            x = float(rng.uniform(0, plate.width - w))
            y = float(rng.uniform(0, plate.height - h))
            box = (x, y, x + w, y + h)
            if not any(_overlaps(box, t) for t in taken + drawn):
                out.append((colour, box))
                drawn.append(box)
                break
        else:
            return None
    order = {"red": 0, "blue": 1, "green": 2, "cyan": 3}
    return sorted(out, key=lambda e: order[e[0]])


@staged_build
def build_c3(
    sources: Mapping[str, str | Path] | list[str],
    out: str | Path,
    *,
    seed: int = 42,
    per_subset: int = 500,
    canvas: int = 1344,
    plate_side: int = 2048,
    rpos_items: int = 1000,
    counting_tiers: tuple[str, ...] | list[str] = T.COUNTING_TIERS,
    counting_partners: int = COUNTING_PARTNERS,
    grids_per_anchor: float = GRIDS_PER_ANCHOR,
    workers: int = 1,
    catalog_reader: str = "biovqa",
    complete_counts: tuple[str, ...] | list[str] = (),
) -> Bench:
    """Build the C3 benchmark folder ``out`` from ``sources`` ({name: path} or ``NAME=PATH`` strings);
    ``catalog_reader`` reads the Wild Me catalogs (``"biovqa"`` or ``"wildlife-datasets"``);
    ``complete_counts`` names sources the user declares completely annotated, so that one whose
    counts biovqa cannot vouch for (the GGR detection table, :data:`COUNT_UNVOUCHED`) feeds
    counting too."""
    given = parse_sources(sources) if isinstance(sources, list) else sources
    paths: dict[str, Path] = {k.lower(): Path(v) for k, v in given.items()}
    unknown = sorted(set(paths) - set(SOURCE_NAMES))
    if unknown:
        raise BiovqaError(f"unknown C3 source {unknown[0]!r}{did_you_mean(unknown[0], SOURCE_NAMES)}", hint=f"known sources: {', '.join(SOURCE_NAMES)}")
    if not paths:
        raise BiovqaError("C3 needs at least one --source NAME=PATH",
                          hint=f"names: {', '.join(SOURCE_NAMES)}")
    for name, path in paths.items():
        if not path.exists():
            raise BiovqaError(f"source {name!r} not found", file=path)
    from biovqa.sources.wildlife import READERS

    if catalog_reader not in READERS:
        raise BiovqaError(f"unknown catalog reader {catalog_reader!r}", field="catalog_reader",
                          hint=f"readers: {', '.join(READERS)}")
    if canvas < 16 or canvas % 2:
        raise BiovqaError("--canvas must be an even number of pixels ≥ 16", field="canvas")
    if counting_partners < 0:
        raise BiovqaError("--counting-partners must be ≥ 0", field="counting_partners")
    if not math.isfinite(grids_per_anchor) or grids_per_anchor < 0:
        raise BiovqaError("--grids-per-anchor must be a number ≥ 0", field="grids_per_anchor")
    declared = _declared_complete(complete_counts)
    out = Path(out)
    manifest: dict[str, Any] = {"exclusions": {}, "exclusion_examples": {}, "files": {}, "ignored_object_names": {}}
    roots: dict[str, Path] = {}
    from biovqa.progress import stage as progress_stage

    with progress_stage("C3: reading the wildlife catalogs"):
        catalogs, gzcd_images, gzcd_form = _read_catalogs(paths, manifest, roots, catalog_reader)
    decode = _DecodeCheck(manifest, roots, workers)
    if catalogs:
        with progress_stage("C3: decoding the catalogs' photos"):
            for name, records in catalogs.items():  # every record is shown (localization) or drawn (viewpoint)
                failing = decode.failing(name, [Path(r["path"]) for r in records])
                catalogs[name] = [r for r in records if Path(r["path"]) not in failing]
    counting_sources = _counting_sources(paths, gzcd_form, declared)
    if gzcd_images is not None and not counting_sources["gzcd"]["counting"]:
        gzcd_images = None
    with progress_stage(f"C3: reading {len(paths)} source(s), sampling their subsets and decoding their photos"):
        subsets, beetles = _read_subsets(paths, per_subset, seed, manifest, roots, gzcd_images, decode)
    tiers = tuple(counting_tiers)
    if not tiers or set(tiers) - set(T.COUNTING_TIERS):
        raise BiovqaError(f"counting tiers are {', '.join(T.COUNTING_TIERS)}, got {', '.join(tiers)}",
                          field="counting_tiers")
    builder = _Builder(out, seed, canvas, plate_side, tiers, counting_partners, grids_per_anchor, roots)
    skipped_tasks: dict[str, str] = {}
    if subsets:
        builder.counting(subsets)
        builder.relative_counting(subsets)
    else:
        skipped_tasks["counting"] = skipped_tasks["relative_counting"] = (
            "no counting source given (waid, bees, depondfi, beetles, or gzcd with vouched counts)")
    plates = beetles.plates if beetles is not None else []
    if beetles is not None:
        builder.absolute_distance(plates)
        builder.relative_distance(plates)
        builder.relative_position(plates, rpos_items)
        builder.ocr(plates)
    else:
        for task in ("absolute_distance", "relative_distance", "relative_position", "ocr"):
            skipped_tasks[task] = "source 'beetles' not given"
    for name, records in sorted(catalogs.items()):
        builder.localization(name, records)
        builder.viewpoint(name, records)
    if not catalogs:
        reason = "no wildlife catalog source (gzcd, whaleshark, hyena, leopard) given"
        skipped_tasks["localization"] = skipped_tasks["viewpoint"] = reason

    with progress_stage("C3: rendering canvases", total=len(builder.jobs), unit="images") as rendering:
        digests = render_all(builder.jobs, workers=workers, advance=rendering.advance)
    for row, job_index in builder.job_rows:
        row["image_sha256"] = digests[job_index]
    ordered = [row for task in T.TASKS for row in builder.rows[task]]
    table = T.items_table(ordered) if ordered else T.ITEM_SCHEMA.empty_table()
    produced = {t: len(builder.rows[t]) for t in T.TASKS}
    per_subset_items: dict[str, dict[str, int]] = {}
    for task in ("counting", "relative_counting"):
        for row in builder.rows[task]:
            entry = per_subset_items.setdefault(row["subset"], {})
            entry[task] = entry.get(task, 0) + 1
    files: dict[str, str | Path] = dict(manifest["files"])
    parameters = {
        "seed": seed, "per_subset": per_subset, "canvas_px": canvas, "plate_max_side_px": plate_side,
        "relative_position_items": rpos_items, "counting_tiers": list(tiers),
        "counting_partners": counting_partners, "grids_per_anchor": grids_per_anchor,
        "catalog_reader": catalog_reader, "complete_counts": sorted(declared),
        "counting_canvas": {"pixel_budget": canvas * canvas, "easy": "the photo's aspect (it fills the canvas)",
                            "two_panel": "both photos side by side at one height (each about half its Easy area)"},
        "relative_counting_margin": RC_MARGIN,
        "relative_distance_margin": RD_MARGIN, "relative_position_boundary_deg": RPOS_BOUNDARY_DEG,
        "panel_scale_range": list(PANEL_SCALE_RANGE),
        "drawing": {"line_width": "max(3 px, 0.3 % of canvas width)", "border_px": 2,
                    "colours": {k: list(v) for k, v in COLOURS.items()}, "png": {"compress_level": 1}},
    }
    return write_bench(
        out, table, component="c3", generator=GENERATOR, seed=seed, sources=files, parameters=parameters,
        extra={
            "images_root": ".",
            # relative to the benchmark folder: the bench and its sources move together; a release
            # takes --images ROOT/<source>/… instead (no host path is recorded anywhere)
            "image_roots": {k: relative_to_bench(roots[k], out) for k in sorted(builder.referenced)},
            "source_forms": _source_forms(paths, roots, gzcd_form),
            "counting_sources": counting_sources,
            "subsets": {s.id: {"dataset": s.dataset, "noun": s.noun, "available": s.available,
                               "selected": len(s.images), "discarded": s.discarded,
                               # per reason, the first photos discarded (named under the source folder)
                               "discarded_examples": s.discarded_examples,
                               "count_levels": [level.name for level in s.levels],
                               "count_min": min((im.count for im in s.images), default=None),
                               "count_max": max((im.count for im in s.images), default=None),
                               "items": per_subset_items.get(s.id, {})}
                        for s in subsets},
            "counting_items_vs_median_subset": _median_ratios(per_subset_items),
            "exclusions": manifest["exclusions"],
            # per source and reason, the first files or rows excluded (named under the source folder)
            "exclusion_examples": manifest["exclusion_examples"],
            "ignored_object_names": manifest["ignored_object_names"],
            "skipped": dict(sorted(builder.skipped.items())),
            # per reason, the first photos a skip concerned (<source>/<path under it>)
            "skipped_examples": dict(sorted(builder.skipped_examples.items())),
            "skipped_tasks": skipped_tasks,
            "viewpoint_species_tier": {
                "rule": "asked only on photos with one annotated animal (a single dominant subject); the "
                        "animals of other photos are asked in the red_box and three_panel tiers only",
                "excluded_multi_animal_photos": {k: len(v) for k, v in sorted(builder.multi_animal_photos.items())}},
            "relative_position": builder.relative_position_record,
            "images": _image_counts(builder),
            "task_counts": {t: {"produced": produced[t], "expected_paper_count": T.PAPER_COUNTS[t],
                                "difference": produced[t] - T.PAPER_COUNTS[t]} for t in T.TASKS},
        },
    )


def _declared_complete(names: tuple[str, ...] | list[str]) -> set[str]:
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


def _counting_sources(paths: Mapping[str, Path], gzcd_form: str | None, declared: set[str]) -> dict[str, Any]:
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


def _source_forms(paths: Mapping[str, Path], roots: Mapping[str, Path], gzcd_form: str | None) -> dict[str, Any]:
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


def build_command(
    source: Annotated[list[str], typer.Option("--source", help="NAME=PATH, NAME in waid, bees, depondfi, beetles, gzcd, whaleshark, hyena, leopard (repeatable)")],
    out: Annotated[Path, typer.Option(help="benchmark folder to write")],
    seed: Annotated[int, typer.Option(help="sampling, pairing and option-order seed")] = 42,
    per_subset: Annotated[int, typer.Option(help="images per subset (count-stratified)")] = 500,
    canvas: Annotated[int, typer.Option(help="pixel budget of the counting canvases: canvas² pixels in every tier (Easy: the photo's aspect; two-panel: both photos at one height); relative-counting grids are canvas × canvas")] = 1344,
    plate_side: Annotated[int, typer.Option(help="longest side of rendered beetle plates in pixels")] = 2048,
    rpos_items: Annotated[int, typer.Option(help="relative-position items (balanced over 8 directions)")] = 1000,
    counting_partners: Annotated[int, typer.Option(help="counting: distinct partner photos per photo in the medium and hard tiers (two-panel canvases, each asked about both sides)")] = COUNTING_PARTNERS,
    grids_per_anchor: Annotated[float, typer.Option(help="relative counting: 2×2 grids per anchor photo on average (each asked most and/or least)")] = GRIDS_PER_ANCHOR,
    workers: Annotated[int, typer.Option(help="processes for rendering (output is identical for any number)")] = 1,
    catalog_reader: Annotated[str, typer.Option("--catalog-reader", help="Wild Me catalog reader (whaleshark, hyena, leopard): biovqa, or wildlife-datasets (pip install 'biovqa[wildlife]')")] = "biovqa",
    complete_counts: Annotated[list[str] | None, typer.Option("--complete-counts", help="declare a source completely annotated, so that counting uses it although biovqa cannot vouch for its counts (gzcd given as the GGR detection table); repeatable")] = None,
) -> None:
    """Build C3 (quantitative spatial reasoning) from the native source datasets."""
    from biovqa.progress import stderr_console

    console = stderr_console()
    bench = build_c3(parse_sources(source), out, seed=seed, per_subset=per_subset, canvas=canvas,
                     plate_side=plate_side, rpos_items=rpos_items, counting_partners=counting_partners,
                     grids_per_anchor=grids_per_anchor, workers=workers, catalog_reader=catalog_reader,
                     complete_counts=tuple(complete_counts or ()))
    console.print(f"[green]built C3[/green]: {bench.manifest['counts']['total']:,} items → {bench.root}")
    for task, entry in bench.manifest["task_counts"].items():
        note = bench.manifest["skipped_tasks"].get(task)
        console.print(f"  {task:18s} {entry['produced']:>8,}  (paper {entry['expected_paper_count']:,})"
                      + (f"  skipped: {note}" if note else ""))
    images = bench.manifest["images"]
    console.print(f"  {'images':18s} {images['produced']:>8,}  (paper {images['expected_paper_count']:,})")
    for name, entry in bench.manifest["counting_sources"].items():
        if not entry["counting"]:
            console.print(f"  [yellow]{name} feeds no counting[/yellow]: {entry['why']}")


# ------------------------------------------------------------------------------- floor


def floor_responses(items: pa.Table) -> pa.Array:
    """Image-blind replies (the paper's floors, Sec. C.6), one per item: counting → the subset's modal count;
    relative counting/distance → a letter by item hash (uniform chance); relative position → one of
    the offered options by item hash; absolute distance → the per-type constant of the sliding
    window; localization → the mean normalised gold box as [x, y, w, h]; viewpoint → the majority
    label; OCR → the gold prefix plus the per-position modal suffix."""
    from biovqa.components.c3 import floors

    rows = items.select(["item_id", "task", "subset", "measure", "answer", "gold_number", "options",
                         "image_width", "image_height", "gold_box"]).to_pylist()
    replies: list[str | None] = [None] * len(rows)
    by_task: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_task.setdefault(row["task"], []).append(i)
    for task, index in by_task.items():
        sel = [rows[i] for i in index]
        if task == "counting":
            modes = floors.modal_counts([(r["subset"], int(r["gold_number"])) for r in sel])
            out = [str(modes[r["subset"]]) for r in sel]
        elif task in ("relative_counting", "relative_distance"):
            out = [T.LETTERS[zlib.crc32(r["item_id"].encode()) % 4] for r in sel]
        elif task == "relative_position":
            out = [r["options"][zlib.crc32(r["item_id"].encode()) % len(r["options"])] for r in sel]
        elif task == "absolute_distance":
            constants = {m: floors.best_constant([r["gold_number"] for r in sel if r["measure"] == m])[0]
                         for m in {r["measure"] for r in sel}}
            out = [f"{constants[r['measure']]:.6g} cm" for r in sel]
        elif task == "localization":
            mean = floors.mean_normalised_box([(r["gold_box"], r["image_width"], r["image_height"]) for r in sel])
            out = []
            for r in sel:
                W, H = r["image_width"], r["image_height"]
                x1, y1, x2, y2 = mean[0] * W, mean[1] * H, mean[2] * W, mean[3] * H
                out.append(f"[{round(x1)}, {round(y1)}, {round(x2 - x1)}, {round(y2 - y1)}]")
        elif task == "viewpoint":
            label = floors.majority([r["answer"] for r in sel])
            out = [label] * len(sel)
        elif task == "ocr":
            code = floors.constant_code([r["answer"] for r in sel])
            out = [code] * len(sel)
        else:
            out = [""] * len(sel)
        for i, reply in zip(index, out):
            replies[i] = reply
    return pa.array(replies, type=pa.string())


__all__ = ["build_c3", "build_command", "direction_of", "floor_responses", "parse_sources", "placed_boxes"]
