"""C2's part of ``biovqa demo``: a tiny archive in CUB-200-2011's native layout (generated
images, 12 classes × 3 photos), the C2 benchmark built from it, and the baseline scored."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from biovqa.components.registry import DemoContext


def run_demo(context: DemoContext) -> list[Path]:
    """Write the archive, build, score the baseline; returns the score folder."""
    from biovqa.components.c2.build import build_c2
    from biovqa.synthetic import write_cub

    cub = write_cub(context.folder("cub"), n_classes=12, images_per_class=3, seed=7, image_size=(320, 240))
    bench = build_c2(cub, context.folder("bench-c2"))
    context.say(f"    wrote a 36-image CUB-format archive and built {bench.manifest['counts']['total']} questions "
                f"→ {bench.root}")
    context.benches["c2"] = bench.root
    return [context.score_baseline(bench.root, "c2")]


__all__ = ["run_demo"]
