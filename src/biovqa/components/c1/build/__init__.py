"""C1 — hierarchical taxonomic reasoning: build the benchmark from a TreeOfLife-200M catalog.

Pipeline (paper §3.1, App. A.1):

1. read the catalog and assign each row to one of the ten organismal groups (Table 5);
2. keep rows with a complete lineage phylum→species and a common name (reptiles: no order),
   resolving common names to English (Backbone vernaculars, user overrides);
3. per group, order candidates deterministically (sort by uuid, seeded shuffle), apply the
   per-species cap, and walk the order checking each image on disk (exists, shorter side ≥
   ``min_side``) until ``per_group`` images are taken — relaxing the cap first, then the
   resolution, where a group runs short (Gymnosperms in the paper);
4. ask each image at eight ranks plus the common-name MCQ (reptiles: no order question), with
   templates and instructions verbatim from paper App. K.1;
5. attach difficulty tiers (paper App. E) and write the benchmark folder.

Rows are excluded, never silently: every exclusion is counted per reason in the manifest.

Modules: :mod:`.options` (build options, Table 5 groups), :mod:`.candidates` (catalog rows →
candidates, English names), :mod:`.images` (image folder, size probes, the per-group walk),
:mod:`.items` (questions, MCQ options, tiers). This module holds the entry points.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import numpy as np
import pyarrow as pa
import typer

from biovqa.arguments import parse_name_values
from biovqa.bench.folder import Bench, relative_to_bench, staged_build, write_bench, write_parquet
from biovqa.components.c1.build.candidates import _candidates, apply_higher_rank_names, resolve_common_names
from biovqa.components.c1.build.images import _select
from biovqa.components.c1.build.items import _attach_tiers, make_items
from biovqa.components.c1.build.options import GROUPS, C1BuildOptions
from biovqa.components.c1.side_files import COMMON_NAMES_FILE, SIDE_FOLDER, TREE_FILE, VERNACULAR_FILE
from biovqa.errors import BiovqaError
from biovqa.sources.treeoflife import read_catalog
from biovqa.taxonomy.inaturalist import AUTHORITIES

__all__ = ["GENERATOR", "C1BuildOptions", "build_c1", "build_command"]

GENERATOR = "biovqa.components.c1.build"

@staged_build
def build_c1(
    catalog: str | Path,
    backbone: str | Path,
    images: str | Path,
    out: str | Path,
    *,
    options: C1BuildOptions = C1BuildOptions(),
    common_name_overrides: str | Path | None = None,
    prevalence_method: str = "item_weighted",
    console: Any | None = None,
) -> Bench:
    """Build a C1 benchmark folder; see the module docstring."""
    from biovqa.taxonomy.index import TaxonomyIndex
    from biovqa.taxonomy.vernacular import build_vernacular_index

    catalog, backbone, images, out = Path(catalog), Path(backbone), Path(images), Path(out)
    from biovqa.taxonomy.english import HIGHER_RANK_POLICIES

    if options.higher_rank_names not in HIGHER_RANK_POLICIES:
        raise BiovqaError(f"unknown --higher-rank-names {options.higher_rank_names!r}", field="higher_rank_names",
                          hint=f"choose from {', '.join(HIGHER_RANK_POLICIES)}")
    unknown_groups = [g for g in options.groups if g not in GROUPS]
    if unknown_groups:
        raise BiovqaError(f"unknown organismal group(s) {unknown_groups}", field="groups",
                          hint=f"choose from {', '.join(GROUPS)}")
    overrides = Path(common_name_overrides) if common_name_overrides else None
    index = TaxonomyIndex.open(backbone)
    index.verify()  # every part matches the SHA-256 its card records
    say = console.print if console is not None else (lambda *a, **k: None)

    say(f"reading catalog {catalog}")
    table = read_catalog(catalog)
    frame, exclusions, tree, tree_card = _candidates(table, options)
    from biovqa.taxonomy.inaturalist import open_authority

    authorities = tuple(open_authority(name, path) for name, path in options.authorities)
    frame, stages = resolve_common_names(frame, index, overrides, authorities)
    unresolved = frame["common_name_source"] == "unresolved"
    if unresolved.any():
        counts = frame.loc[unresolved, "group"].value_counts()
        exclusions["no_english_common_name"] = {str(g): int(n) for g, n in counts.items()}
        frame = frame[~unresolved]
    examples: dict[str, list[str]] = {}  # per reason, the first image files excluded
    frame, higher_rank = apply_higher_rank_names(frame, index, options.higher_rank_names, exclusions, examples)
    say(f"{len(frame):,} candidate images; checking image files in {images}")
    from biovqa.progress import stage

    with stage("C1: images accepted", total=options.per_group * frame["group"].nunique(),
               unit="images", console=console) as accepted:
        selected, relaxed = _select(frame, images, options, exclusions, advance=accepted.advance,
                                    examples=examples)
    if selected.empty:
        raise BiovqaError("no catalog row passed the filters", file=catalog,
                          hint="check the image folder and the --per-group/--min-side options")
    leaf_nodes = selected["leaf"].to_numpy(np.int32)
    vernacular = build_vernacular_index(selected["common_name_en"].tolist(), leaf_nodes, tree)
    item_table = _attach_tiers(make_items(selected, tree, leaf_nodes, vernacular, options.seed), tree,
                               leaf_nodes, vernacular, prevalence_method)

    side = out / SIDE_FOLDER
    side.mkdir(parents=True, exist_ok=True)
    tree.save(side / TREE_FILE)
    vernacular.save(side / VERNACULAR_FILE)
    replaced = selected[(selected["common_name_source"] != "catalog") | selected["higher_rank"].notna()][
        ["uuid", "species", "common_name", "common_name_en", "common_name_source", "higher_rank"]
    ].rename(columns={"common_name": "catalog_common_name"})
    write_parquet(pa.Table.from_pandas(replaced.reset_index(drop=True), preserve_index=False),
                  side / COMMON_NAMES_FILE)

    parameters = options.as_manifest() | {"prevalence_method": prevalence_method}
    bench = write_bench(
        out,
        item_table,
        component="c1",
        generator=GENERATOR,
        seed=options.seed,
        sources={"catalog": catalog, "common_name_overrides": overrides} if overrides else {"catalog": catalog},
        parameters=parameters,
        extra={
            # relative to the benchmark folder: no builder path, and a benchmark moved together
            # with its photos and index still finds them (Bench.images_root, the C1 scorer)
            "images_root": relative_to_bench(images, out),
            "taxonomy_index": relative_to_bench(backbone, out),
            "taxonomy_index_card": _index_card(backbone),
            "images": int(len(selected)),
            "exclusions": exclusions,
            "exclusion_examples": {reason: examples[reason] for reason in sorted(examples)},
            "relaxations": relaxed,
            "common_names": {
                "replaced": int((selected["common_name_source"] != "catalog").sum()),
                "by_source": {str(k): int(v) for k, v in selected["common_name_source"].value_counts().sort_index().items()},
                "file": f"{SIDE_FOLDER}/{COMMON_NAMES_FILE}",
                # distinct (species, catalog name) pairs settled by each stage, in stage order
                "stages": stages,
                "authorities": {a.name: a.card() for a in authorities},
                # catalog names that are really a higher rank's name (candidates, before the
                # image checks) and what the build did with them
                "higher_rank": higher_rank,
            },
            # the tree is the catalog's (every row with a complete lineage, all groups, before
            # sampling): taxa (= N of Lin) and the catalog images it holds (= c(root))
            "tree": {"file": f"{SIDE_FOLDER}/{TREE_FILE}", **tree_card},
        },
    )
    return bench


def _index_card(index_dir: Path) -> dict[str, Any]:
    import json

    card = index_dir / "index.json"
    if not card.exists():
        return {}
    data = json.loads(card.read_text(encoding="utf-8"))
    keep = ("sources", "rows", "biovqa_version", "source_sha256", "counts", "accepted_statuses",
            "synonym_statuses")
    return {k: v for k, v in data.items() if k in keep}


def build_command(
    catalog: Annotated[Path, typer.Option(help="TreeOfLife-200M catalog (.parquet or .csv)")],
    backbone: Annotated[Path, typer.Option(help="taxonomy index from `biovqa taxonomy index`")],
    images: Annotated[Path, typer.Option(help="folder of <uuid>.<ext> images")],
    out: Annotated[Path, typer.Option(help="benchmark folder to write")],
    per_group: Annotated[int, typer.Option(help="images per organismal group")] = 10_000,
    seed: Annotated[int, typer.Option(help="sampling, template and distractor seed")] = 42,
    min_side: Annotated[int, typer.Option(help="minimum shorter image side in pixels")] = 224,
    species_cap: Annotated[int, typer.Option(help="images per species per group before relaxing")] = 50,
    group: Annotated[Optional[list[str]], typer.Option(help="restrict to these groups (repeatable)")] = None,
    common_names: Annotated[Optional[Path], typer.Option(help="CSV scientific_name,common_name of overrides")] = None,
    prevalence_method: Annotated[str, typer.Option(help="item_weighted (E.3) or taxon_rank (D.9)")] = "item_weighted",
    authority: Annotated[Optional[list[str]], typer.Option(
        help="stage-2 common-name authority as NAME=PATH, repeatable, in order of preference; "
             "inaturalist=inaturalist-taxonomy.dwca.zip (zip or unpacked folder)")] = None,
    higher_rank_names: Annotated[str, typer.Option(
        help="catalog common names that are really a higher rank's name (an ancestor's vernacular, "
             "'... And Allied ...'): keep (the paper), replace with the species' own English "
             "vernacular in the Backbone, or exclude the images; counted in the manifest either way")] = "keep",
) -> None:
    """Build C1 (hierarchical taxonomic reasoning) from a TreeOfLife-200M catalog."""
    from biovqa.progress import stderr_console

    console = stderr_console()
    authorities = parse_name_values(authority, option="--authority", what="common-name authority",
                                    form="NAME=PATH", names=AUTHORITIES, key=str.lower,
                                    hint="e.g. --authority inaturalist=inaturalist-taxonomy.dwca.zip")
    options = C1BuildOptions(per_group=per_group, seed=seed, min_side=min_side,
                             species_cap=species_cap, groups=tuple(group) if group else tuple(GROUPS),
                             authorities=tuple(authorities.items()), higher_rank_names=higher_rank_names)
    bench = build_c1(catalog, backbone, images, out, options=options,
                     common_name_overrides=common_names, prevalence_method=prevalence_method,
                     console=console)
    counts = bench.manifest["counts"]
    console.print(f"[green]built C1[/green]: {counts['total']:,} items over {bench.manifest['images']:,} images → {bench.root}")
