"""The C3 counting subsets and count-stratified sampling (paper §3.3 and Sec. A.3).

The paper aggregates its five ecological datasets (WAID, Boxes on Bees, 2018-NEON-beetles,
DePondFi, GZCD; Table 2) into ten 500-image counting subsets and names the wildlife re-ID catalogs
only for localization and viewpoint; it does not give the composition. [DEFAULT] WAID, by far the
largest and the only one with several species, gives one subset per annotated class
(``waid-sheep``, ``waid-cattle``, ``waid-seal``, ``waid-camelus``, ``waid-kiang``,
``waid-zebra``: each photo goes to the class most of its boxes carry, ties to the class listed first
in ``classes.txt``); Boxes on Bees, DePondFi, the beetle plates and GZCD give one subset each: six
plus four is ten. The re-ID catalogs never form counting subsets: they annotate the individuals of
interest, not every animal in the frame.

Each subset keeps at most ``per_subset`` (500) images drawn by count stratification: images are
binned by ⌊log2 count⌋ (1, 2–3, 4–7, …) and the bins get equal shares (left-over shares go to bins
that still have images, densest first), so sparse and dense scenes are balanced. Images with no
annotated individual, and beetle plates whose individuals are not exactly 1..N (completeness
unverifiable), are discarded, counted per reason and named (the first 20, by their path under the
source folder), like every exclusion a reader records.

Count levels: a subset asks one counting question per image on each canvas showing it (every
annotated individual), except GZCD, which asks three nested ones on the same canvases (the paper:
"three nested questions per image", Sec. A.3, without naming them; [DEFAULT] :data:`GZCD_LEVELS`:
all animals ⊇ zebras ⊇ Grevy's zebras, from the GGR species codes). A level whose count is 0 for an
image is not asked for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from biovqa.errors import BiovqaError
from biovqa.sources.validate import count_exclusion, relative_name
from biovqa.sources.waid import AnnotatedImage

#: subset id → (dataset, plural noun used in the questions)
SUBSET_DATASET: dict[str, tuple[str, str]] = {
    "bees": ("bees", "bees"), "depondfi": ("depondfi", "fish"), "beetles": ("beetles", "beetles"),
    "gzcd": ("gzcd", "animals"),
}
#: the sources whose photos may form counting subsets: the paper's five ecological datasets
COUNTING_DATASETS: tuple[str, ...] = ("waid", "bees", "depondfi", "beetles", "gzcd")


def waid_subset(image: AnnotatedImage, classes: tuple[str, ...]) -> str:
    """``waid-<class>``: the class most of the photo's boxes carry (ties: the class listed first in
    ``classes.txt``, ``classes``); the subset's questions still ask for every annotated animal."""
    counts = {label: image.labels.count(label) for label in set(image.labels)}
    order = {name: k for k, name in enumerate(classes)}
    best = min(counts, key=lambda label: (-counts[label], order.get(label, len(order)), label))
    return f"waid-{best}"


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
    #: reason → the first photos discarded for it, by their path under ``root``
    discarded_examples: dict[str, list[str]] = field(default_factory=dict)

    def discard(self, reason: str, paths: list[Path]) -> None:
        """Count and name the photos left out of the subset for ``reason``."""
        root = Path(self.root)
        names = (relative_name(path, root) if Path(path).is_relative_to(root)
                 else relative_name(Path(path).resolve(), root.resolve()) for path in paths)
        count_exclusion(self.discarded, self.discarded_examples, reason, names, len(paths))

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
    if not path.is_relative_to(root):  # a reader's invariant: never name a photo by a host path
        raise BiovqaError(f"the {dataset} photo does not lie under its source folder {root}", file=path,
                          hint="photos must lie inside the folder their annotation file names them under")
    return f"{dataset}/{path.relative_to(root).as_posix()}"


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


__all__ = ["COUNTING_DATASETS", "GZCD_LEVELS", "SUBSET_DATASET", "SUBSET_LEVELS", "CountLevel", "Subset", "count_bin",
           "source_label", "stratified_sample", "waid_subset"]
