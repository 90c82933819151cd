"""C1's part of ``biovqa demo``: the bundled GBIF Backbone excerpt indexed (native DwC-A layout),
placeholder images drawn for the bundled TreeOfLife-200M-format catalog (its ``demo_image``
column marks rows whose image is missing or too small, to show the exclusions), a small C1
benchmark built from them, and the image-blind baseline scored."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from biovqa.components.registry import DemoContext


def _counted(counts: dict[str, int]) -> str:
    """``{"low_resolution": 1, "missing_image": 2}`` → ``"1 low resolution, 2 missing image"``."""
    return ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in sorted(counts.items()) if n) or "none"


def run_demo(context: DemoContext) -> list[Path]:
    """Index, draw, build (8 questions per group, 2 species per genus), score the baseline."""
    from biovqa.components.c1.build import C1BuildOptions, build_c1
    from biovqa.synthetic import draw_placeholder_images
    from biovqa.taxonomy.index import build_index

    index = context.folder("taxonomy-index")
    build_index(context.data / "backbone", index)
    context.say(f"    indexed the bundled GBIF Backbone excerpt → {index}")
    images = context.folder("images")
    n_images = draw_placeholder_images(context.data / "catalog.csv", images)
    bench = build_c1(context.data / "catalog.csv", index, images, context.folder("bench-c1"),
                     options=C1BuildOptions(per_group=8, species_cap=2, min_side=224))
    excluded = {reason: sum(v.values()) for reason, v in bench.manifest["exclusions"].items()}
    context.say(f"    drew {n_images} placeholder images for the catalog; built {bench.manifest['counts']['total']} "
                f"questions over {bench.manifest['images']} images (excluded: {_counted(excluded)}) → {bench.root}")
    context.benches["c1"] = bench.root
    return [context.score_baseline(bench.root, "c1")]


__all__ = ["run_demo"]
