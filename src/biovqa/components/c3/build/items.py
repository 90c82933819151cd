"""C3 build items: the questions of each task (the paper's Table 70 prompts, Sec. A.3), the images
they show (canvases and overlays queued for :mod:`..render`, source photos shown as they are), the
manifest's records of what was skipped, and the items table (:data:`ITEM_SCHEMA`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.components.c3 import prompts as Q
from biovqa.components.c3.build.pairing import partner_pairs, unique_extreme
from biovqa.components.c3.build.geometry import centre, direction_of, easy_canvas, pair_canvas, placed_boxes, xyxy
from biovqa.components.c3.build.sources import seeded_rng
from biovqa.components.c3.render import CanvasJob, Panel, Shape, SourcePhoto, single
from biovqa.components.c3.subsets import CountLevel, Subset, source_label
from biovqa.components.c3.tasks import (ABSOLUTE_DISTANCE, COUNTING, LOCALIZATION, OCR, RELATIVE_COUNTING,
                                        RELATIVE_DISTANCE, RELATIVE_POSITION, TASKS, VIEWPOINT, TaskSpec)
from biovqa.records import ITEM_COLUMNS

#: where the canvases and overlays are drawn, under the benchmark folder
RENDER_FOLDER = "rendered/c3"
#: relative counting: unique extreme with ≥ 10 % and ≥ 1 individual over the runner-up [DEFAULT]
RC_MARGIN = 0.10
#: relative distance: unique largest with ≥ 5 % over the runner-up [DEFAULT]
RD_MARGIN = 0.05
#: relative counting: each panel's photo drawn at a scale in this range, so size does not give the count away
PANEL_SCALE_RANGE = (0.55, 1.0)
#: counting: distinct partner photos per photo in each two-panel tier [DEFAULT from the paper's
#: 53 498 items: ≈ 9 questions per photo = easy 1 + medium 4 + hard 4]
COUNTING_PARTNERS = 4
#: relative counting: 2×2 grids per anchor photo on average (anchor k gets ⌊(k+1)·g⌋ − ⌊k·g⌋), each
#: asked "most" and/or "least" [DEFAULT from the paper's 42 412 items over 5 000 anchors ≈ 8.5
#: questions per anchor; ≈ 1.57 questions per grid on the synthetic full build → 5.4 grids]
GRIDS_PER_ANCHOR = 5.4

#: items.parquet columns beyond records.ITEM_COLUMNS (the C3 contract with the scorer).
C3_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("subset", pa.string()),
    ("dataset", pa.string()),
    ("tier", pa.string()),  # difficulty: counting easy / medium / hard; viewpoint's target marking
    ("condition", pa.string()),  # relative counting: the four panels from the same or different datasets
    ("measure", pa.string()),
    ("cluster", pa.string()),
    ("gold_number", pa.float64()),
    ("image_width", pa.int32()),
    ("image_height", pa.int32()),
    ("gold_box", pa.list_(pa.float64())),
    ("answer_payload", pa.string()),
)
ITEM_SCHEMA = pa.schema([*ITEM_COLUMNS, *C3_COLUMNS])


def payload(value: dict[str, Any]) -> str:
    """The JSON answer payload (sorted keys, compact) stored beside the string answer."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def items_table(rows: list[dict[str, Any]]) -> pa.Table:
    columns: dict[str, list[Any]] = {name: [] for name in ITEM_SCHEMA.names}
    for row in rows:
        row = {"component": "c3", **row}
        for name, values in columns.items():
            values.append(row.get(name))
    return pa.Table.from_pydict(columns, schema=ITEM_SCHEMA)


@dataclass(eq=False)
class Builder:
    """The items of one C3 build as each task's method makes them: their rows, the images they
    show (queued to render), and the manifest's records of what was skipped."""

    out: Path
    seed: int
    canvas: int
    plate_side: int
    counting_tiers: tuple[str, ...] = Q.COUNTING_TIERS
    partners: int = COUNTING_PARTNERS
    grids_per_anchor: float = GRIDS_PER_ANCHOR
    #: source name → its folder (the manifest's image_roots)
    roots: dict[str, Path] = field(default_factory=dict)
    #: sources whose photos items show as they are (the manifest's image_roots)
    referenced: set[str] = field(default_factory=set, init=False)
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {t.name: [] for t in TASKS}, init=False)
    jobs: list[CanvasJob | SourcePhoto] = field(default_factory=list, init=False)
    #: (row, index of its image's job): a shared canvas is one job behind several rows
    job_rows: list[tuple[dict[str, Any], int]] = field(default_factory=list, init=False)
    source_jobs: dict[Path, int] = field(default_factory=dict, init=False)
    skipped: dict[str, int] = field(default_factory=dict, init=False)
    #: reason → the first photos (``<source>/<path under it>``) a skip concerned
    skipped_examples: dict[str, list[str]] = field(default_factory=dict, init=False)
    #: catalog → photos the viewpoint species tier left out for showing several animals
    multi_animal_photos: dict[str, set[str]] = field(default_factory=dict, init=False)
    #: relative position: what the balanced draw found and kept (the manifest's record)
    relative_position_record: dict[str, Any] = field(default_factory=dict, init=False)

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

    def add(self, task: TaskSpec, row: dict[str, Any], job: CanvasJob | SourcePhoto | int) -> None:
        """One item of ``task``; ``job`` is a new image or the index of one already registered (shared)."""
        row = {"task": task.name, "instruction": task.instruction, **row}
        self.rows[task.name].append(row)
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

    def destination(self, task: TaskSpec, name: str, suffix: str = ".png") -> tuple[str, Path]:
        rel = f"{RENDER_FOLDER}/{task.name}/{name}{suffix}"
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
                        self.skip(f"{COUNTING.name} {subset.id}: no {level.noun} in the photograph (level not asked)",
                                  subset.cluster(image))
                if "easy" in self.counting_tiers:
                    self.counting_easy(subset, k, image)
        for tier in ("medium", "hard"):
            if tier not in self.counting_tiers:
                continue
            rng = seeded_rng(self.seed, f"{COUNTING.name}:{tier}")
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
                        self.skip(f"{COUNTING.name} {tier}: no partner photograph", s.cluster(im))

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
        stem = f"c3-{COUNTING.name}-{subset.id}-{k:05d}"
        asked = self._levels(subset, image)
        if not asked:
            return
        rel, dest = self.destination(COUNTING, f"{stem}-easy")
        job = self.register(single(image.path, dest, easy_canvas(image.width, image.height, self.canvas)))
        for level, count, suffix, extra in asked:
            self.add(COUNTING, {**self._count_base(subset, image), "item_id": f"{stem}{suffix}-easy",
                                  "tier": "easy", "image": rel, "gold_number": float(count), "answer": str(count),
                                  "question": Q.prompt(None, Q.Q_COUNT.format(animals=level.noun)),
                                  "answer_payload": payload({"count": count, "panel": None, **extra})}, job)

    def counting_pair(self, tier: str, left: tuple[Subset, int], right: tuple[Subset, int],
                      per_photo: dict[int, int]) -> None:
        """One two-panel canvas (left, right), asked about each side at each nonzero level."""
        (ls, lk), (rs, rk) = left, right
        limage, rimage = ls.images[lk], rs.images[rk]
        name = f"c3-{COUNTING.name}-{tier}-{ls.id}-{lk:05d}-{rs.id}-{rk:05d}"
        rel, dest = self.destination(COUNTING, name)
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
                question = Q.prompt(Q.FRAME_TWO_PANEL, Q.Q_COUNT_PANEL.format(animals=level.noun, side=side))
                self.add(COUNTING, {**self._count_base(subset, image),
                                      "item_id": f"c3-{COUNTING.name}-{subset.id}-{k:05d}{suffix}-{tier}-{j}",
                                      "tier": tier, "image": rel, "gold_number": float(count), "answer": str(count),
                                      "question": question,
                                      "answer_payload": payload({"count": count, "panel": side,
                                                                   "other_count": other.count,
                                                                   "area_vs_easy": share, **extra})}, job)

    def relative_counting(self, subsets: list[Subset]) -> None:
        """``grids_per_anchor`` 2×2 grids per anchor photo on average (anchor k of a subset gets
        ⌊(k+1)·g⌋ − ⌊k·g⌋, g in thousandths; conditions alternate same/different along the subset);
        each grid is asked for the most and/or the least individuals, wherever a unique extreme with
        the margin exists, both questions sharing the grid image."""
        c, half = self.canvas, self.canvas // 2
        rng = seeded_rng(self.seed, RELATIVE_COUNTING.name)
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
                    condition = Q.RELATIVE_COUNTING_CONDITIONS[turn % 2]
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
                        counts = [im.count for _, im in group]
                        extremes = [e for e in ("most", "least") if unique_extreme(counts, e, RC_MARGIN)]
                        if extremes and key not in seen:
                            seen.add(key)
                            chosen = group
                            break
                    if chosen is None:
                        self.skip(f"{RELATIVE_COUNTING.name} {condition}: no group with a unique extreme",
                                  subset.cluster(anchor))
                        continue
                    # the first extreme's winner takes the rotated gold letter; the rest are shuffled
                    first = max(chosen, key=lambda e: e[1].count if extremes[0] == "most" else -e[1].count)
                    rest = [e for e in chosen if e is not first]
                    order = [int(i) for i in rng.permutation(3)]
                    letter = Q.LETTERS[gold_turn[condition] % 4]
                    gold_turn[condition] += 1
                    slots: list[Any] = [None] * 4
                    slots[Q.LETTERS.index(letter)] = first
                    free = [i for i in range(4) if slots[i] is None]
                    for i, j in zip(free, order):
                        slots[i] = rest[j]
                    scales = [round(float(v), 3) for v in rng.uniform(*PANEL_SCALE_RANGE, size=4)]
                    stem = f"c3-{RELATIVE_COUNTING.name}-{subset.id}-{k:05d}-{g}"
                    rel, dest = self.destination(RELATIVE_COUNTING, stem)
                    job = self.register(CanvasJob(dest, (c, c), tuple(
                        Panel(im.path, rect, scale) for (_, im), rect, scale in zip(slots, rects, scales))))
                    nouns = {s.noun for s, _ in slots}
                    noun = nouns.pop() if len(nouns) == 1 else "animals"
                    counts_by = {lt: im.count for lt, (_, im) in zip(Q.LETTERS, slots)}
                    for extreme in extremes:
                        pick = max if extreme == "most" else min
                        gold = pick(Q.LETTERS, key=lambda lt: counts_by[lt])
                        question = Q.prompt(Q.FRAME_GRID, Q.Q_RELATIVE_COUNT.format(extreme=extreme, animals=noun))
                        self.add(RELATIVE_COUNTING, {
                            "item_id": f"{stem}-{extreme}", "subset": subset.id, "dataset": subset.dataset,
                            "condition": condition, "cluster": subset.cluster(anchor), "source_id": subset.cluster(anchor),
                            "image": rel, "question": question, "answer": gold, "options": list(Q.LETTERS),
                            "answer_payload": payload({"panel": gold, "extreme": extreme, "counts": counts_by,
                                                         "datasets": {lt: s.dataset for lt, (s, _) in
                                                                      zip(Q.LETTERS, slots)}}),
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
                item_id = f"c3-{ABSOLUTE_DISTANCE.name}-{Path(plate.picture_id).stem}-{m.individual:02d}-{m.measure}"
                rel, dest = self.destination(ABSOLUTE_DISTANCE, item_id)
                shapes = (Shape("line", 0, m.scalebar, "blue", border="green"),
                          Shape("line", 0, m.line, "red", border="white"))
                question = Q.prompt(Q.FRAME_ABSOLUTE, Q.Q_ABSOLUTE.format(measure=m.measure))
                self.add(ABSOLUTE_DISTANCE, {
                    **self.beetle_base(plate), "item_id": item_id, "tier": None, "measure": m.measure,
                    "image": rel, "question": question, "answer": f"{m.dist_cm:.3f}",
                    "gold_number": float(m.dist_cm),
                    "answer_payload": payload({"cm": round(m.dist_cm, 6), "measure": m.measure,
                                                 "individual": m.individual, "dist_pix": m.dist_pix,
                                                 "cm_pix": m.cm_pix, "csv_row": m.row}),
                }, single(plate.path, dest, size, shapes))

    def relative_distance(self, plates: list[Any]) -> None:
        rng = seeded_rng(self.seed, RELATIVE_DISTANCE.name)
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
                        self.skip(f"{RELATIVE_DISTANCE.name}: no unique largest (5 % margin)",
                                  self.label("beetles", plate.path))
                        continue
                    winner = max(group, key=lambda i: individuals[i][measure].dist_cm)
                    gold = Q.LETTERS[turn % 4]
                    turn += 1
                    rest = [i for i in group if i != winner]
                    slots = rest[: Q.LETTERS.index(gold)] + [winner] + rest[Q.LETTERS.index(gold):]
                    shapes = []
                    for letter, individual in zip(Q.LETTERS, slots):
                        colour = Q.BEETLE_COLOURS[letter]
                        shapes.append(Shape("box", 0, plate.specimen_box(individual), colour, dotted=True))
                        shapes.append(Shape("line", 0, individuals[individual][measure].line, colour))
                    item_id = f"c3-{RELATIVE_DISTANCE.name}-{Path(plate.picture_id).stem}-{measure}-{g:02d}"
                    rel, dest = self.destination(RELATIVE_DISTANCE, item_id)
                    question = Q.prompt(Q.FRAME_RELATIVE, Q.Q_RELATIVE.format(measure=measure))
                    self.add(RELATIVE_DISTANCE, {
                        **self.beetle_base(plate), "item_id": item_id, "measure": measure, "image": rel,
                        "question": question, "answer": gold, "options": list(Q.LETTERS),
                        "answer_payload": payload({"beetle": gold, "measure": measure,
                                                     "individuals": dict(zip(Q.LETTERS, slots)),
                                                     "cm": {lt: round(individuals[i][measure].dist_cm, 6)
                                                            for lt, i in zip(Q.LETTERS, slots)}}),
                    }, single(plate.path, dest, size, shapes))

    def relative_position(self, plates: list[Any], n_items: int) -> None:
        rng = seeded_rng(self.seed, RELATIVE_POSITION.name)
        by_direction: dict[str, list[tuple[Any, int, int]]] = {d: [] for d in Q.DIRECTIONS}
        for plate in plates:
            ids = list(plate.individuals())
            centres = {i: centre(plate.specimen_box(i)) for i in ids}
            for red in ids:
                for blue in ids:
                    if red == blue:
                        continue
                    direction = direction_of(centres[blue], centres[red])
                    if direction is not None:
                        by_direction[direction].append((plate, red, blue))
        quota = n_items // len(Q.DIRECTIONS)
        # per direction, candidates in a seeded order until `quota` have room for their empty boxes;
        # then every direction keeps as many as the scarcest one found, so the golds stay balanced
        # (a constant reply scores 1/8) and what the plates could not give is a recorded shortfall
        found: dict[str, list[tuple[Any, int, int, list[Any]]]] = {d: [] for d in Q.DIRECTIONS}
        for direction in Q.DIRECTIONS:
            candidates = by_direction[direction]
            for i in rng.permutation(len(candidates)):
                if len(found[direction]) == quota:
                    break
                plate, red, blue = candidates[int(i)]
                boxes = placed_boxes(plate, red, blue, rng)
                if boxes is None:
                    self.skip(f"{RELATIVE_POSITION.name}: no room for the empty boxes", self.label("beetles", plate.path))
                    continue
                found[direction].append((plate, red, blue, boxes))
        per_direction = min(len(v) for v in found.values())
        self.relative_position_record = {
            "requested": n_items, "per_direction_requested": quota, "per_direction": per_direction,
            "produced": per_direction * len(Q.DIRECTIONS),
            "shortfall": n_items - per_direction * len(Q.DIRECTIONS),
            "found_per_direction": {d: len(v) for d, v in found.items()},
            "limited_by": sorted(d for d, v in found.items() if len(v) == per_direction) if per_direction < quota
            else []}
        chosen = [(direction, *entry) for direction in Q.DIRECTIONS for entry in found[direction][:per_direction]]
        for k, (direction, plate, red, blue, boxes) in enumerate(chosen):
            others = [d for d in Q.DIRECTIONS if d != direction]
            options = [direction, *(others[int(i)] for i in rng.choice(len(others), size=3, replace=False))]
            options = [options[int(i)] for i in rng.permutation(4)]
            item_id = f"c3-{RELATIVE_POSITION.name}-{k:05d}"
            rel, dest = self.destination(RELATIVE_POSITION, item_id)
            shapes = tuple(Shape("box", 0, box, colour) for colour, box in boxes)
            self.add(RELATIVE_POSITION, {
                **self.beetle_base(plate), "item_id": item_id, "image": rel,
                "question": Q.prompt(None, Q.Q_POSITION.format(options=", ".join(options))),
                "answer": direction, "options": options,
                "answer_payload": payload({"direction": direction, "options": options, "red": red, "blue": blue,
                                             "boxes": [[c, [round(v, 1) for v in b]] for c, b in boxes]}),
            }, single(plate.path, dest, self.plate_size(plate), shapes))

    def ocr(self, plates: list[Any]) -> None:
        for plate in plates:
            code = plate.code
            if code is None:
                self.skip(f"{OCR.name}: picture id is not an A + 11 digit code", self.label("beetles", plate.path))
                continue
            item_id = f"c3-{OCR.name}-{code}"
            self.add(OCR, {**self.beetle_base(plate), "item_id": item_id,
                             "image": self.source_photo("beetles", plate.path),
                             "question": Q.prompt(Q.FRAME_OCR, Q.Q_OCR), "answer": code,
                             "answer_payload": payload({"code": code})}, SourcePhoto(plate.path))

    # ---------------------------------------------------------------- wildlife catalogs

    def localization(self, name: str, records: list[dict[str, Any]]) -> None:
        for k, rec in enumerate(r for r in records if r.get("single", True)):
            x, y, w, h = (float(v) for v in rec["box_xywh"])
            width, height = int(rec["width"]), int(rec["height"])
            item_id = f"c3-{LOCALIZATION.name}-{name}-{k:05d}"
            question = Q.prompt(Q.FRAME_LOCALIZATION.format(W=width, H=height),
                                Q.Q_LOCALIZATION.format(species=rec.get("species") or "animal"))
            self.add(LOCALIZATION, {
                "item_id": item_id, "subset": name, "dataset": name, "cluster": self.label(name, rec["path"]),
                "source_id": self.label(name, rec["path"]),
                "image": self.source_photo(name, Path(rec["path"])), "question": question,
                "answer": f"[{round(x)}, {round(y)}, {round(w)}, {round(h)}]",
                "image_width": width, "image_height": height, "gold_box": [x, y, x + w, y + h],
                "answer_payload": payload({"box_xywh": [x, y, w, h], "box_xyxy": [x, y, x + w, y + h],
                                             "width": width, "height": height}),
            }, SourcePhoto(Path(rec["path"])))

    def viewpoint(self, name: str, records: list[dict[str, Any]]) -> None:
        rng = seeded_rng(self.seed, f"{VIEWPOINT.name}:{name}")
        usable = [r for r in records if r.get("viewpoint") in Q.VIEWPOINTS]
        for r in records:
            if r.get("viewpoint") is None:
                self.skip(f"{VIEWPOINT.name}: annotation without a viewpoint", self.label(name, r["path"]))
            elif r["viewpoint"] not in Q.VIEWPOINTS:
                self.skip(f"{VIEWPOINT.name}: label outside the 10 viewpoints", self.label(name, r["path"]))
        # tiers rotate red_box / species / three_panel over the single-animal photos' annotations;
        # an animal on a photo with others is never asked by species name ("localization and viewpoint
        # need a single dominant subject", §3.3): its annotations rotate over the two marked tiers
        turns = {True: 0, False: 0}
        for k, rec in enumerate(usable):
            alone = bool(rec.get("single", True))
            tiers = Q.VIEWPOINT_TIERS if alone else tuple(t for t in Q.VIEWPOINT_TIERS if t != "species")
            tier = tiers[turns[alone] % len(tiers)]
            turns[alone] += 1
            if not alone:
                self.multi_animal_photos.setdefault(name, set()).add(str(rec["path"]))
            x, y, w, h = (float(v) for v in rec["box_xywh"])
            species = rec.get("species") or "animal"
            item_id = f"c3-{VIEWPOINT.name}-{name}-{k:05d}"
            base = {"item_id": item_id, "subset": name, "dataset": name, "tier": tier,
                    "cluster": self.label(name, rec["path"]), "source_id": self.label(name, rec["path"]),
                    "answer": rec["viewpoint"],
                    "answer_payload": payload({"viewpoint": rec["viewpoint"], "tier": tier})}
            source = Path(rec["path"])
            size = (int(rec["width"]), int(rec["height"]))
            if tier == "species":
                self.add(VIEWPOINT, {**base, "image": self.source_photo(name, source),
                                       "question": Q.Q_VIEW_SPECIES.format(species=species)}, SourcePhoto(source))
            elif tier == "red_box":
                rel, dest = self.destination(VIEWPOINT, item_id)
                s = min(1.0, self.plate_side / max(size))
                job = single(source, dest, (max(1, round(size[0] * s)), max(1, round(size[1] * s))),
                             (Shape("box", 0, (x, y, x + w, y + h), "red"),))
                self.add(VIEWPOINT, {**base, "image": rel, "question": Q.Q_VIEW_RED}, job)
            else:
                if len(usable) < 3:
                    self.skip(f"{VIEWPOINT.name} three_panel: fewer than 3 photographs", self.label(name, rec["path"]))
                    continue
                side = int(rng.integers(3))
                fillers = [usable[int(i)] for i in rng.choice(len(usable), size=3, replace=False) if int(i) != k][:2]
                panels = fillers[:side] + [rec] + fillers[side:]
                third = self.canvas // 3
                rel, dest = self.destination(VIEWPOINT, item_id)
                job = CanvasJob(dest, (3 * third, third),
                                tuple(Panel(Path(p["path"]), (j * third, 0, third, third)) for j, p in enumerate(panels)),
                                tuple(Shape("box", j, xyxy(p["box_xywh"]), "red") for j, p in enumerate(panels)))
                question = Q.prompt(Q.FRAME_THREE_PANEL, Q.Q_VIEW_PANEL.format(
                    species=species, side=("left", "middle", "right")[side]))
                self.add(VIEWPOINT, {**base, "image": rel, "question": question}, job)


#: Paper Sec. A.3: GZCD contributes 2.9 × the median subset's counting items.
PAPER_GZCD_COUNTING_RATIO = 2.9


def median_ratios(per_subset_items: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    """Each subset's counting items over the median subset's, beside the paper's GZCD ratio."""
    counts = {sid: entry.get(COUNTING.name, 0) for sid, entry in per_subset_items.items()}
    median = float(np.median(list(counts.values()))) if counts else 0.0
    return {"median": median, "paper_gzcd_ratio": PAPER_GZCD_COUNTING_RATIO,
            "ratios": {sid: round(n / median, 3) if median else None for sid, n in sorted(counts.items())}}


#: Paper §3.3: C3's images (source photos plus composed canvases/overlays).
PAPER_IMAGES = 78139


def image_counts(builder: Builder) -> dict[str, Any]:
    """Images the items show (canvases and overlays drawn under ``rendered/``, source photos shown
    as they are) beside the paper's 78 139, and how many items share them."""
    canvases = sum(isinstance(job, CanvasJob) for job in builder.jobs)
    per_task: dict[str, set[int]] = {}
    for row, index in builder.job_rows:
        per_task.setdefault(row["task"], set()).add(index)
    produced = len(builder.jobs)
    return {"produced": produced, "rendered": canvases, "canvases": canvases, "source_photos": produced - canvases,
            "by_task": {t.name: len(per_task.get(t.name, ())) for t in TASKS},
            "items_per_image": round(len(builder.job_rows) / produced, 3) if produced else None,
            "expected_paper_count": PAPER_IMAGES, "difference": produced - PAPER_IMAGES}


__all__ = ["COUNTING_PARTNERS", "C3_COLUMNS", "GRIDS_PER_ANCHOR", "ITEM_SCHEMA", "PANEL_SCALE_RANGE", "RC_MARGIN",
           "RD_MARGIN", "RENDER_FOLDER", "Builder", "image_counts", "items_table", "median_ratios", "payload"]
