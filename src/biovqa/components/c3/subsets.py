"""The C3 source subsets and count-stratified sampling (components.md §3.1).

[DEFAULT] one subset per (dataset, split/sub-collection), so that there are ten: ``waid-train``,
``waid-valid``, ``waid-test``, ``bees``, ``depondfi``, ``beetles``, ``gzcd``, ``whaleshark``,
``hyena``, ``leopard``. Each subset keeps at most ``per_subset`` (500) images drawn by count
stratification: images are binned by ⌊log2 count⌋ (1, 2–3, 4–7, …) and the bins get equal shares
(left-over shares go to bins that still have images, densest first), so sparse and dense scenes are
balanced. Images with no annotated individual, and beetle plates whose individuals are not exactly
1..N (completeness unverifiable), are discarded and counted. The wildlife catalogs feed their
subsets with every photo whose annotations all survived the reader (a photo that lost one has an
unverifiable count).

Count levels: a subset asks one counting question per image on each canvas showing it (every
annotated individual), except GZCD, which asks three nested ones on the same canvases (components.md §3.2; the paper does not name them, [DEFAULT]
:data:`GZCD_LEVELS`: all animals ⊇ zebras ⊇ Grevy's zebras, from the GGR species codes). A level
whose count is 0 for an image is not asked for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from biovqa.sources.waid import AnnotatedImage

#: subset id → (dataset, plural noun used in the questions)
SUBSET_DATASET: dict[str, tuple[str, str]] = {
    "waid-train": ("waid", "animals"), "waid-valid": ("waid", "animals"), "waid-test": ("waid", "animals"),
    "bees": ("bees", "bees"), "depondfi": ("depondfi", "fish"), "beetles": ("beetles", "beetles"),
    "gzcd": ("gzcd", "animals"), "whaleshark": ("whaleshark", "whale sharks"), "hyena": ("hyena", "hyenas"),
    "leopard": ("leopard", "leopards"),
}
WAID_SPLITS = {"train": "waid-train", "valid": "waid-valid", "val": "waid-valid", "test": "waid-test"}


@dataclass(frozen=True)
class CountLevel:
    """One counting question about an image: the individuals whose label starts with one of
    ``prefixes`` (None: every annotated individual), named ``noun`` in the question."""

    name: str
    noun: str
    prefixes: tuple[str, ...] | None = None

    def count(self, image: AnnotatedImage) -> int:
        if self.prefixes is None:
            return image.count
        return sum(1 for label in image.labels if label.startswith(self.prefixes))


#: GZCD's three nested counting questions per image [DEFAULT] (module docstring).
GZCD_LEVELS: tuple[CountLevel, ...] = (
    CountLevel("animals", "animals"),
    CountLevel("zebras", "zebras", ("zebra",)),
    CountLevel("grevys", "Grevy's zebras", ("zebra_grevys",)),
)
#: subset id → its nested count levels (others: one level, every individual, the subset's noun)
SUBSET_LEVELS: dict[str, tuple[CountLevel, ...]] = {"gzcd": GZCD_LEVELS}


@dataclass
class Subset:
    id: str
    dataset: str
    noun: str
    root: Path
    images: list[AnnotatedImage]
    available: int = 0
    discarded: dict[str, int] = field(default_factory=dict)

    @property
    def levels(self) -> tuple[CountLevel, ...]:
        """The counting questions asked per image (the first is the whole count)."""
        return SUBSET_LEVELS.get(self.id, (CountLevel("all", self.noun),))

    def cluster(self, image: AnnotatedImage) -> str:
        return source_label(self.dataset, self.root, image.path)


def source_label(dataset: str, root: Path, path: Path | str) -> str:
    """``dataset/<path under the source folder>``: names a source photograph in items (clusters,
    ``source_id``) the same wherever the sources lie."""
    path, root = Path(path), Path(root)
    if not path.is_relative_to(root):  # one given relative to the working folder, the other not
        path, root = path.resolve(), root.resolve()
    relative = path.relative_to(root) if path.is_relative_to(root) else path
    return f"{dataset}/{relative.as_posix()}"


def count_bin(count: int) -> int:
    return int(np.floor(np.log2(count))) if count >= 1 else -1


def stratified_sample(images: list[AnnotatedImage], n: int, rng: np.random.Generator) -> list[AnnotatedImage]:
    """At most ``n`` images with equal shares per ⌊log2 count⌋ bin (see the module docstring);
    result sorted by path (deterministic for a seed)."""
    images = sorted(images, key=lambda im: str(im.path))
    if len(images) <= n:
        return images
    bins: dict[int, list[int]] = {}
    for index, image in enumerate(images):
        bins.setdefault(count_bin(image.count), []).append(index)
    keys = sorted(bins, reverse=True)  # densest first
    quota = dict.fromkeys(keys, 0)
    left = n
    while left > 0:
        open_bins = [k for k in keys if quota[k] < len(bins[k])]
        share = max(1, left // len(open_bins))
        for k in open_bins:
            take = min(share, len(bins[k]) - quota[k], left)
            quota[k] += take
            left -= take
            if left == 0:
                break
    chosen: list[int] = []
    for k in sorted(keys):
        members = np.array(bins[k])
        chosen.extend(int(i) for i in rng.choice(members, size=quota[k], replace=False))
    return [images[i] for i in sorted(chosen)]


__all__ = ["GZCD_LEVELS", "SUBSET_DATASET", "SUBSET_LEVELS", "CountLevel", "Subset", "WAID_SPLITS", "count_bin", "source_label",
           "stratified_sample"]
