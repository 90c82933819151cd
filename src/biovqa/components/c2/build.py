"""C2 — fine-grained attribute grounding: build the benchmark from CUB-200-2011.

Pipeline (paper §3.2, App. A.2, paper App. K.2):

1. read the native CUB archive (:mod:`biovqa.sources.cub`) and the class → scientific name map;
2. derive per-image attribute truth under the certainty rule (:data:`CERTAINTY_RULE`);
3. generate the ten families image by image with one seeded generator per family;
4. render one marker copy per image (:mod:`biovqa.components.c2.render`) into ``rendered/c2/markers/``;
5. write ``items.parquet``, ``c2/part_layout.json``, ``c2/vocabulary.json`` and the manifest,
   which records the exclusions per reason, the certainty rule and, per family, the produced count
   beside the paper's (Table 7).

Source-photo items point at the CUB ``images/`` folder (``images_root`` in the manifest, recorded
relative to the benchmark folder so that a benchmark moved with its CUB folder still finds it); marker
items point at ``rendered/…`` inside the benchmark folder (``Bench.resolve_image`` resolves both).
"""

from __future__ import annotations

import csv
import zlib
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pyarrow as pa
import typer

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.bench.folder import Bench, relative_to_bench, sha256_file, staged_build, write_bench, write_json
from biovqa.records import ITEM_COLUMNS
from biovqa.sources.cub import CubDataset, read_cub
from biovqa.text import normalize_c2
from biovqa.components.c2 import questions as fam
from biovqa.components.c2.kernels import PART_LAYOUT_FILE, SIDE_FOLDER, VOCABULARY_FILE
from biovqa.components.c2.tasks import CATEGORY_OF, FAMILIES, PAPER_COUNTS
from biovqa.components.c2.render import (
    MARKER_COLORS,
    MARKER_SHAPES,
    PNG_SAVE_OPTIONS,
    RADIUS_FRACTION,
    Marker,
    RenderJob,
    marker_radius,
    render_all,
)

GENERATOR = "biovqa.components.c2.build"
#: [CONFLICT resolved] The paper asks open_genus of 11 728 images = 11 788 − one 60-image class
#: but does not say which class lacks a genus; Geococcyx (110, a genus-level CUB class like
#: Sayornis) is our choice. Any one 60-image class reproduces the count.
PAPER_NO_GENUS_CLASSES: tuple[int, ...] = (110,)
MARKER_FOLDER = "rendered/c2/markers"
COLOUR_WORDS_KEY = "colour_words"
#: Images whose items are generated before their rows are turned into Arrow (bounds memory).
IMAGES_PER_CHUNK = 1000

#: items.parquet columns beyond records.ITEM_COLUMNS (the C2 contract with the scorer).
C2_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("family", pa.string()),
    ("category", pa.string()),
    ("answer_letter", pa.string()),
    ("part", pa.string()),
    ("property", pa.string()),
    ("attribute_group", pa.string()),
    ("gold_set", pa.list_(pa.string())),
    ("class_id", pa.int32()),
    ("class_name", pa.string()),
    ("scientific_name", pa.string()),
    ("genus", pa.string()),
    ("kind_category", pa.string()),
    ("kind_modifier", pa.string()),
    ("marker_color", pa.string()),
    ("marker_shape", pa.string()),
)
ITEM_SCHEMA = pa.schema([*ITEM_COLUMNS, *C2_COLUMNS])


def default_names_path() -> Path:
    """The CUB class → scientific name map shipped with biovqa."""
    return Path(str(resources.files("biovqa").joinpath("data", "cub", "cub_names.csv")))


def default_english_names_path() -> Path:
    """The CUB class → English name map shipped with biovqa (from the HCA authors' MIT-licensed
    CUB taxonomy; see ``data/cub/README.md``)."""
    return Path(str(resources.files("biovqa").joinpath("data", "cub", "cub_english_names.csv")))


def with_english_names(naming: dict[int, fam.ClassNaming], path: str | Path,
                       cub: CubDataset) -> dict[int, fam.ClassNaming]:
    """``naming`` with each class's English name (``class_id,cub_name,english_name``; the CUB name
    must match ``classes.txt``), kept only where it differs from the CUB label after C2
    normalization (``Chuck-will's-widow`` for ``Chuck will Widow``)."""
    import dataclasses

    path = Path(path)
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None or [h.strip() for h in header] != ["class_id", "cub_name", "english_name"]:
            raise InputFormatError(f"header must be class_id,cub_name,english_name; found {header}", file=path,
                                   row=1)
        english: dict[int, str] = {}
        for line_no, record in enumerate(reader, start=2):
            if not record:
                continue
            if len(record) != 3 or not record[0].strip().isdigit() or not record[2].strip():
                raise InputFormatError("expected class_id,cub_name,english_name", file=path, row=line_no)
            class_id = int(record[0])
            if class_id not in cub.class_folders or normalize_c2(record[1]) != normalize_c2(cub.class_name(class_id)):
                raise InputFormatError(f"class {class_id} {record[1]!r} is not a CUB class of classes.txt",
                                       file=path, row=line_no, field="cub_name")
            english[class_id] = record[2].strip()
    return {c: dataclasses.replace(n, english_name=english[c])
            if c in english and normalize_c2(english[c]) != normalize_c2(n.class_name) else n
            for c, n in naming.items()}


# --------------------------------------------------------------------------------------------
# name map


def read_name_map(path: str | Path, cub: CubDataset) -> dict[int, fam.ClassNaming]:
    """Read ``class_id,common_name,scientific_name`` (header required) and check it against
    ``classes.txt``: every CUB class must have a row whose common name matches the CUB name
    (after C2 normalization). A scientific name of one word is a genus-only mapping: it gives the
    genus but no binomial (no open_scientific_name item)."""
    path = Path(path)
    if not path.is_file():
        raise MissingResourceError("CUB name map not found", file=path,
                                   hint="omit --names to use the map shipped with biovqa")
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        expected = ["class_id", "common_name", "scientific_name"]
        if header is None or [h.strip() for h in header] != expected:
            raise InputFormatError(f"header must be {','.join(expected)}; found {header}", file=path, row=1)
        rows: dict[int, tuple[str, str]] = {}
        for line_no, record in enumerate(reader, start=2):
            if not record:
                continue
            if len(record) != 3:
                raise InputFormatError(f"expected 3 fields, found {len(record)}", file=path, row=line_no)
            try:
                class_id = int(record[0])
            except ValueError:
                raise InputFormatError(f"class id is not an integer: {record[0]!r}", file=path,
                                       row=line_no, field="class_id") from None
            if class_id not in cub.class_folders:
                raise InputFormatError(f"class id {class_id} is not in classes.txt", file=path,
                                       row=line_no, field="class_id")
            if class_id in rows:
                raise InputFormatError(f"class id {class_id} appears twice", file=path, row=line_no,
                                       field="class_id")
            if normalize_c2(record[1]) != normalize_c2(cub.class_name(class_id)):
                raise InputFormatError(
                    f"common name {record[1]!r} does not match CUB class {cub.class_folders[class_id]!r}",
                    file=path, row=line_no, field="common_name",
                    hint="the map must follow the CUB classes.txt ids and names",
                )
            rows[class_id] = (record[1].strip(), record[2].strip())
    missing = sorted(set(cub.class_folders) - set(rows))
    if missing:
        raise InputFormatError(f"no row for CUB class id(s) {missing[:10]}", file=path,
                               field="class_id", hint="add one row per class of classes.txt")
    class_names = [cub.class_name(c) for c in sorted(cub.class_folders)]
    categories = set(fam.name_categories(class_names))
    naming = {}
    for class_id in sorted(cub.class_folders):
        name = cub.class_name(class_id)
        scientific = rows[class_id][1]
        words = scientific.split()
        head = fam.head_noun(name)
        in_category = head in categories
        naming[class_id] = fam.ClassNaming(
            class_id=class_id,
            class_name=name,
            scientific_name=scientific if len(words) >= 2 else None,
            genus=words[0] if words else None,
            kind_category=head if in_category else None,
            kind_modifier=name[: -len(head)].strip() if in_category else None,
        )
    return naming


# --------------------------------------------------------------------------------------------
# side files


#: Parts whose mean x stands for the head / the rear when the beak / the tail is not visible
#: (facing rule of :func:`facing_left`).
HEAD_PARTS = ("forehead", "crown", "left_eye", "right_eye", "nape", "throat")
REAR_PARTS = ("back",)
LAYOUT_STATISTICS = ("median", "mean")


def normalized_part_xy(cub: CubDataset) -> np.ndarray:
    """Part locations normalised by each image's bounding box: ((x − box_x)/box_w,
    (y − box_y)/box_h), shape (n_images, n_parts, 2)."""
    boxes = cub.bounding_boxes
    width = np.where(boxes[:, 2] > 0, boxes[:, 2], 1.0)[:, None]
    height = np.where(boxes[:, 3] > 0, boxes[:, 3], 1.0)[:, None]
    nx = (cub.part_xy[:, :, 0] - boxes[:, 0:1]) / width
    ny = (cub.part_xy[:, :, 1] - boxes[:, 1:2]) / height
    return np.stack([nx, ny], axis=-1)


def _anchor_x(cub: CubDataset, xy: np.ndarray, first: str, fallback: tuple[str, ...]) -> np.ndarray:
    """x of part ``first`` where visible, else the mean x of the visible ``fallback`` parts, else NaN."""
    index = {name: i for i, name in enumerate(cub.part_names)}
    visible = cub.part_visible
    out = np.full(cub.n_images, np.nan)
    if first in index:
        p = index[first]
        out = np.where(visible[:, p], xy[:, p, 0], np.nan)
    cols = [index[name] for name in fallback if name in index]
    if cols:
        seen = visible[:, cols]
        count = seen.sum(axis=1)
        total = np.where(seen, xy[:, cols, 0], 0.0).sum(axis=1)
        mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        out = np.where(np.isnan(out), mean, out)
    return out


def facing_left(cub: CubDataset, xy: np.ndarray | None = None) -> np.ndarray:
    """Images whose bird faces left: the beak lies left of the tail. Where the beak is not
    visible the mean x of the visible head parts (forehead, crown, eyes, nape, throat) stands
    for it; where the tail is not visible, the back stands for it. An image without a visible
    front or rear anchor keeps its orientation [DEFAULT, paper App. C.5 (Eq. 16)]."""
    xy = normalized_part_xy(cub) if xy is None else xy
    front = _anchor_x(cub, xy, "beak", HEAD_PARTS)
    rear = _anchor_x(cub, xy, "tail", REAR_PARTS)
    with np.errstate(invalid="ignore"):
        return np.asarray(front < rear, dtype=bool)


def part_layout(cub: CubDataset, *, statistic: str = "median", face_right: bool = True
                ) -> dict[str, list[float] | None]:
    """The anatomy-kernel layout (paper App. C.5 (Eq. 16); paper C.5): per part, the **median**
    bounding-box-normalised location over the images where the part is visible, after mirroring
    every bird that faces left (x → 1 − x, see :func:`facing_left`) so that all birds face right.
    Part names are kept when mirroring (z, not x, separates left from right). Parts never visible
    get null. ``statistic="mean"`` and ``face_right=False`` give the pre-0.x layout (diagnostics)."""
    if statistic not in LAYOUT_STATISTICS:
        raise ValueError(f"statistic must be one of {LAYOUT_STATISTICS}, not {statistic!r}")
    xy = normalized_part_xy(cub)
    if face_right:
        flip = facing_left(cub, xy)
        xy[flip, :, 0] = 1.0 - xy[flip, :, 0]
    reduce = np.median if statistic == "median" else np.mean
    visible = cub.part_visible
    layout: dict[str, list[float] | None] = {}
    for p, name in enumerate(cub.part_names):
        seen = visible[:, p]
        if not seen.any():
            layout[fam.part_text(name)] = None
            continue
        layout[fam.part_text(name)] = [round(float(reduce(xy[seen, p, 0])), 6),
                                       round(float(reduce(xy[seen, p, 1])), 6)]
    return layout


# --------------------------------------------------------------------------------------------
# build


def _family_rng(seed: int, family: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(family.encode("utf-8"))])


@staged_build
def build_c2(
    cub_dir: str | Path,
    out: str | Path,
    *,
    names: str | Path | None = None,
    seed: int = 42,
    workers: int = 1,
    partset_mix: str | tuple[float, float, float] = "paper",
    marker_distractors: str = "far",
    no_genus_classes: tuple[int, ...] | list[int] | None = PAPER_NO_GENUS_CLASSES,
) -> Bench:
    """Build the C2 benchmark folder ``out`` from the CUB archive at ``cub_dir``.

    Paper-fidelity options (defaults reproduce the paper's tables; docs/c2-paper-constraints.md):
    ``partset_mix`` — visibility_partset gold kinds, "paper" (.8 single / .1 none / .1 all three),
    "uniform" or three weights "single,none,all"; ``marker_distractors`` — "far" or "visible"
    (how marker_localization picks its two further options); ``no_genus_classes`` — CUB class ids
    asked no open_genus question (the paper's 11 728 = 11 788 − one 60-image class)."""
    out = Path(out)
    try:
        mix = fam.parse_partset_mix(partset_mix)
    except ValueError as exc:
        raise InputFormatError(str(exc), field="partset_mix") from None
    if marker_distractors not in fam.MARKER_DISTRACTORS:
        raise InputFormatError(f"marker_distractors must be one of {', '.join(fam.MARKER_DISTRACTORS)}, "
                               f"not {marker_distractors!r}", field="marker_distractors")
    cub = read_cub(cub_dir)
    names_path = Path(names) if names is not None else default_names_path()
    naming = with_english_names(read_name_map(names_path, cub), default_english_names_path(), cub)
    no_genus = tuple(sorted({int(c) for c in (no_genus_classes or ())}))
    unknown = [c for c in no_genus if c not in cub.class_folders]
    if unknown and set(no_genus) != set(PAPER_NO_GENUS_CLASSES):
        raise InputFormatError(f"no_genus_classes names class id(s) {unknown} not in classes.txt",
                               file=cub.files.get("classes"), field="no_genus_classes")
    truth = fam.AttributeTruth.from_cub(cub)
    categories = fam.name_categories([naming[c].class_name for c in sorted(naming)])
    skipped: dict[str, int] = {}

    rngs = {f: _family_rng(seed, f) for f in ("attr_bare_value", "attr_group_value",
                                               "visibility_partset", "marker_localization", "naming")}
    colors = tuple(MARKER_COLORS)

    rows: dict[str, list[dict[str, Any]]] = {f: [] for f in FAMILIES}
    tables: dict[str, list[pa.Table]] = {f: [] for f in FAMILIES}
    produced = dict.fromkeys(FAMILIES, 0)
    jobs: list[RenderJob] = []
    marker_rows: list[dict[str, Any]] = []
    from biovqa.progress import stage as progress_stage
    from biovqa.progress import track

    for chunk_start in track(range(0, cub.n_images, IMAGES_PER_CHUNK), "C2: generating questions",
                             unit=f"chunks of {IMAGES_PER_CHUNK:,} images"):
        chunk = range(chunk_start, min(cub.n_images, chunk_start + IMAGES_PER_CHUNK))
        bare = fam.attr_bare_value(cub, truth, rngs["attr_bare_value"], skipped, image_rows=chunk)
        group = fam.attr_group_value(cub, truth, rngs["attr_group_value"], skipped, image_rows=chunk)
        partset = fam.visibility_partset(cub, rngs["visibility_partset"], skipped, image_rows=chunk,
                                         mix=mix)
        side = fam.visibility_side(cub, image_rows=chunk)
        for r in chunk:
            k_chunk = r - chunk_start
            image_id = int(cub.image_ids[r])
            rel = cub.image_paths[r]
            source = cub.images_dir / rel
            digest = sha256_file(source)
            class_id = int(cub.image_class_ids[r])
            info = naming[class_id]
            common = {
                "image": rel, "image_sha256": digest, "source_id": str(image_id), "class_id": class_id,
                "class_name": info.class_name, "scientific_name": info.scientific_name,
                "genus": info.genus, "kind_category": info.kind_category,
                "kind_modifier": info.kind_modifier,
            }

            def add(family_rows: list[dict[str, Any]], family: str, image_id: int = image_id,
                    common: dict[str, Any] = common) -> None:
                for k, item in enumerate(family_rows):
                    rows[family].append({"item_id": f"c2-{family}-{image_id:05d}-{k:02d}", **common, **item})

            add(bare[k_chunk], "attr_bare_value")
            add(group[k_chunk], "attr_group_value")
            width, height = (int(v) for v in cub.image_sizes[r])  # from the one image inspector
            plan = fam.plan_markers(cub.part_visible[r], cub.part_xy[r], marker_radius(width, height),
                                    rngs["marker_localization"], colors, MARKER_SHAPES,
                                    far=marker_distractors == "far")
            if plan is None:
                skipped["marker_localization: no visible part"] = skipped.get(
                    "marker_localization: no visible part", 0) + 1
            else:
                item = fam.marker_item(plan, cub.part_visible[r], cub.part_names,
                                       rngs["marker_localization"], xy=cub.part_xy[r],
                                       distractors=marker_distractors)
                rendered = f"{MARKER_FOLDER}/{image_id:05d}.png"
                markers = []  # controls first, the target last (on top where markers touch)
                if plan.color_control is not None:
                    markers.append(_marker(cub, r, plan.color_control, plan.color,
                                           str(plan.color_control_shape)))
                if plan.shape_control is not None:
                    markers.append(_marker(cub, r, plan.shape_control, str(plan.shape_control_color),
                                           plan.shape))
                markers.append(_marker(cub, r, plan.target, plan.color, plan.shape))
                if len(markers) < 3:
                    skipped["marker_localization: fewer than 2 control markers"] = skipped.get(
                        "marker_localization: fewer than 2 control markers", 0) + 1
                jobs.append(RenderJob(source, out / rendered, tuple(markers)))
                marker_rows.append({"item_id": f"c2-marker_localization-{image_id:05d}-00", **common,
                                    **item, "image": rendered})
            add(partset[k_chunk], "visibility_partset")
            add(side[k_chunk], "visibility_side")
            for item in fam.naming_items(info, categories, rngs["naming"],
                                         ask_genus=class_id not in no_genus):
                add([item], item["task"])
        for family, family_rows in rows.items():  # bound memory: dict rows → Arrow per chunk
            if family_rows:
                tables[family].append(_items_table(family_rows))
                produced[family] += len(family_rows)
                family_rows.clear()

    with progress_stage("C2: rendering marker images", total=len(jobs), unit="images") as rendering:
        digests = render_all(jobs, workers=workers, advance=rendering.advance)
    for row, digest in zip(marker_rows, digests):
        row["image_sha256"] = digest
    if marker_rows:
        tables["marker_localization"] = [_items_table(marker_rows)]
    produced["marker_localization"] = len(marker_rows)
    ordered = [t for family in FAMILIES for t in tables[family]]
    table = (pa.concat_tables(ordered) if ordered else ITEM_SCHEMA.empty_table()).combine_chunks()

    side_dir = out / SIDE_FOLDER
    side_dir.mkdir(parents=True, exist_ok=True)
    write_json(out / PART_LAYOUT_FILE, part_layout(cub))
    vocabulary: dict[str, Any] = dict(truth.vocabulary())
    vocabulary[COLOUR_WORDS_KEY] = list(fam.COLOUR_WORDS)
    write_json(out / VOCABULARY_FILE, vocabulary)

    family_counts = {
        f: {"expected_paper_count": PAPER_COUNTS[f], "produced": produced[f],
            "difference": produced[f] - PAPER_COUNTS[f]}
        for f in FAMILIES
    }
    sources: dict[str, str | Path] = {name: path for name, path in cub.files.items()}
    sources["cub_names"] = names_path
    sources["cub_english_names"] = default_english_names_path()
    parameters = {
        "seed": seed,
        "certainty_rule": fam.CERTAINTY_RULE,
        "max_options": fam.MAX_OPTIONS,
        "partset_triples_per_image": fam.PARTSET_TRIPLES_PER_IMAGE,
        "partset_mix": "uniform" if mix is None else dict(zip(("single", "none", "all_three"), mix)),
        "marker_distractors": marker_distractors,
        "no_genus_classes": list(no_genus),
        "part_layout": {"statistic": "median", "orientation": "mirrored so every bird faces right "
                        "(beak right of tail; head parts / back stand in when beak / tail are hidden)"},
        "category_rule": "head noun (last word) of a multi-word CUB common name; one-word names have no category",
        "markers": {"colors": list(MARKER_COLORS), "shapes": list(MARKER_SHAPES),
                    "radius_fraction_of_diagonal": RADIUS_FRACTION, "outline_px": 1,
                    "png": {k: v for k, v in PNG_SAVE_OPTIONS.items()}},
    }
    return write_bench(
        out, table, component="c2", generator=GENERATOR, seed=seed, sources=sources,
        parameters=parameters,
        extra={
            "images_root": relative_to_bench(cub.images_dir, out),  # moves with the bench
            "images": {"source": cub.n_images, "rendered": len(jobs), "total": cub.n_images + len(jobs)},
            "exclusions": dict(sorted(cub.exclusions.items())),
            "exclusion_examples": cub.exclusion_examples,
            "skipped": dict(sorted(skipped.items())),
            "family_counts": family_counts,
            "categories": categories,
            "side_files": {"part_layout": PART_LAYOUT_FILE, "vocabulary": VOCABULARY_FILE},
        },
    )


def _marker(cub: CubDataset, row: int, part: int, color: str, shape: str) -> Marker:
    x, y = cub.part_xy[row, part]
    return Marker(float(x), float(y), color, shape)


def _items_table(rows: list[dict[str, Any]]) -> pa.Table:
    columns: dict[str, list[Any]] = {name: [] for name in ITEM_SCHEMA.names}
    for row in rows:
        family = row["task"]
        row = {**row, "component": "c2", "family": family, "category": CATEGORY_OF[family]}
        for name, values in columns.items():
            values.append(row.get(name))
    return pa.Table.from_pydict(columns, schema=ITEM_SCHEMA)


def build_command(
    cub: Annotated[Path, typer.Option("--cub", help="extracted CUB_200_2011 folder")],
    out: Annotated[Path, typer.Option(help="benchmark folder to write")],
    names: Annotated[Path | None, typer.Option(help="CSV class_id,common_name,scientific_name (default: the map shipped with biovqa)")] = None,
    seed: Annotated[int, typer.Option(help="distractor, option-order and marker seed")] = 42,
    workers: Annotated[int, typer.Option(help="processes for marker rendering (output is identical for any number)")] = 1,
    partset_mix: Annotated[str, typer.Option(help="visibility_partset gold kinds: paper (.8 single/.1 none/.1 all three), uniform, or weights 'single,none,all'")] = "paper",
    marker_distractors: Annotated[str, typer.Option(help="marker_localization further options: far (farthest visible parts from the target, paper) or visible (random visible parts)")] = "far",
    no_genus_class: Annotated[list[int] | None, typer.Option(help="CUB class id asked no open_genus question (repeatable; default 110 reproduces the paper's 11 728; 0 = none)")] = None,
) -> None:
    """Build C2 (fine-grained attribute grounding) from CUB-200-2011."""
    from biovqa.progress import stderr_console

    console = stderr_console()
    no_genus = PAPER_NO_GENUS_CLASSES if not no_genus_class else tuple(c for c in no_genus_class if c)
    bench = build_c2(cub, out, names=names, seed=seed, workers=workers, partset_mix=partset_mix,
                     marker_distractors=marker_distractors, no_genus_classes=no_genus)
    counts = bench.manifest["counts"]
    console.print(f"[green]built C2[/green]: {counts['total']:,} items over "
                  f"{bench.manifest['images']['total']:,} images → {bench.root}")
    for family, entry in bench.manifest["family_counts"].items():
        console.print(f"  {family:22s} {entry['produced']:>9,}  (paper {entry['expected_paper_count']:,})")


__all__ = [
    "C2_COLUMNS",
    "ITEM_SCHEMA",
    "build_c2",
    "build_command",
    "default_names_path",
    "part_layout",
    "read_name_map",
]
