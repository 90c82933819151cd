"""C3 — quantitative spatial reasoning: build the benchmark from the native source datasets.

``biovqa build c3 --source waid=PATH --source bees=PATH … --out BENCH``. Sources (any subset):
``waid`` (WAID folder), ``bees`` (Boxes on Bees ``ML-Data``), ``depondfi`` (``Images/`` +
``Keypoints/``), ``beetles`` (``BeetleMeasurements.csv`` + ``group_images/``), and the wildlife
catalogs ``gzcd``, ``whaleshark``, ``hyena``, ``leopard`` (read by :mod:`biovqa.sources.wildlife`
when that reader is installed). A task whose sources are missing is skipped; the manifest says so
(``skipped_tasks``).

Pipeline: read → decode every photo an item will show once (an undecodable one is the exclusion
``undecodable_image``; :class:`~.sources.DecodeCheck`) → count-stratified subsets (:mod:`.subsets`) → items
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

The package's modules follow the pipeline's seams: :mod:`.sources` (reading the native datasets
into records, the decode check, the counting subsets and what their counts rest on), :mod:`.items`
(the questions of each task and the items table), :mod:`.geometry` (canvases, boxes, directions);
this module runs them in order and writes the folder.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from biovqa.bench.folder import Bench, relative_to_bench, staged_build, write_bench
from biovqa.components.c3.build.items import (COUNTING_PARTNERS, GRIDS_PER_ANCHOR, ITEM_SCHEMA, PANEL_SCALE_RANGE,
                                              RC_MARGIN, RD_MARGIN, Builder, image_counts, items_table,
                                              median_ratios)
from biovqa.components.c3.build.geometry import RPOS_BOUNDARY_DEG
from biovqa.components.c3.build.sources import (SOURCE_NAMES, DecodeCheck, counting_sources, declared_complete,
                                                parse_sources, read_catalogs, read_subsets, source_forms)
from biovqa.components.c3.prompts import COUNTING_TIERS
from biovqa.components.c3.render import COLOURS, render_all
from biovqa.components.c3.tasks import (ABSOLUTE_DISTANCE, COUNTING, LOCALIZATION, OCR, RELATIVE_COUNTING,
                                        RELATIVE_DISTANCE, RELATIVE_POSITION, TASKS, VIEWPOINT)
from biovqa.errors import BiovqaError

GENERATOR = "biovqa.components.c3.build"


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
    counting_tiers: tuple[str, ...] | list[str] = COUNTING_TIERS,
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
    paths = parse_sources(sources)
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
    declared = declared_complete(complete_counts)
    out = Path(out)
    manifest: dict[str, Any] = {"exclusions": {}, "exclusion_examples": {}, "files": {}, "ignored_object_names": {}}
    roots: dict[str, Path] = {}
    from biovqa.progress import stage as progress_stage

    with progress_stage("C3: reading the wildlife catalogs"):
        catalogs, gzcd_images, gzcd_form = read_catalogs(paths, manifest, roots, catalog_reader)
    decode = DecodeCheck(manifest, roots, workers)
    if catalogs:
        with progress_stage("C3: decoding the catalogs' photos"):
            for name, records in catalogs.items():  # every record is shown (localization) or drawn (viewpoint)
                failing = decode.failing(name, [Path(r["path"]) for r in records])
                catalogs[name] = [r for r in records if Path(r["path"]) not in failing]
    counting_basis = counting_sources(paths, gzcd_form, declared)
    if gzcd_images is not None and not counting_basis["gzcd"]["counting"]:
        gzcd_images = None
    with progress_stage(f"C3: reading {len(paths)} source(s), sampling their subsets and decoding their photos"):
        subsets, beetles = read_subsets(paths, per_subset, seed, manifest, roots, gzcd_images, decode)
    tiers = tuple(counting_tiers)
    if not tiers or set(tiers) - set(COUNTING_TIERS):
        raise BiovqaError(f"counting tiers are {', '.join(COUNTING_TIERS)}, got {', '.join(tiers)}",
                          field="counting_tiers")
    builder = Builder(out, seed, canvas, plate_side, tiers, counting_partners, grids_per_anchor, dict(roots))
    skipped_tasks: dict[str, str] = {}
    if subsets:
        builder.counting(subsets)
        builder.relative_counting(subsets)
    else:
        skipped_tasks[COUNTING.name] = skipped_tasks[RELATIVE_COUNTING.name] = (
            "no counting source given (waid, bees, depondfi, beetles, or gzcd with vouched counts)")
    plates = beetles.plates if beetles is not None else []
    if beetles is not None:
        builder.absolute_distance(plates)
        builder.relative_distance(plates)
        builder.relative_position(plates, rpos_items)
        builder.ocr(plates)
    else:
        for beetle_task in (ABSOLUTE_DISTANCE, RELATIVE_DISTANCE, RELATIVE_POSITION, OCR):
            skipped_tasks[beetle_task.name] = "source 'beetles' not given"
    for name, records in sorted(catalogs.items()):
        builder.localization(name, records)
        builder.viewpoint(name, records)
    if not catalogs:
        reason = "no wildlife catalog source (gzcd, whaleshark, hyena, leopard) given"
        skipped_tasks[LOCALIZATION.name] = skipped_tasks[VIEWPOINT.name] = reason

    with progress_stage("C3: rendering canvases", total=len(builder.jobs), unit="images") as rendering:
        digests = render_all(builder.jobs, workers=workers, advance=rendering.advance)
    for row, job_index in builder.job_rows:
        row["image_sha256"] = digests[job_index]
    ordered = [row for task in TASKS for row in builder.rows[task.name]]
    table = items_table(ordered) if ordered else ITEM_SCHEMA.empty_table()
    produced = {t.name: len(builder.rows[t.name]) for t in TASKS}
    per_subset_items: dict[str, dict[str, int]] = {}
    for task in (COUNTING.name, RELATIVE_COUNTING.name):
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
            "source_forms": source_forms(paths, roots, gzcd_form),
            "counting_sources": counting_basis,
            "subsets": {s.id: {"dataset": s.dataset, "noun": s.noun, "available": s.available,
                               "selected": len(s.images), "discarded": s.discarded,
                               # per reason, the first photos discarded (named under the source folder)
                               "discarded_examples": s.discarded_examples,
                               "count_levels": [level.name for level in s.levels],
                               "count_min": min((im.count for im in s.images), default=None),
                               "count_max": max((im.count for im in s.images), default=None),
                               "items": per_subset_items.get(s.id, {})}
                        for s in subsets},
            "counting_items_vs_median_subset": median_ratios(per_subset_items),
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
            RELATIVE_POSITION.name: builder.relative_position_record,
            "images": image_counts(builder),
            "task_counts": {t.name: {"produced": produced[t.name], "expected_paper_count": t.paper_count,
                                     "difference": produced[t.name] - t.paper_count} for t in TASKS},
        },
    )


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


__all__ = ["GENERATOR", "build_c3", "build_command"]
