"""The six C2 similarity kernels s(ŷ, y) ∈ [0, 1] (paper App. C.5; paper Eqs. 13–18).

Every kernel is a pure scalar function of two normalized values (paper App. K.5) plus, where it
needs one, a :class:`PartLayout` or the :class:`KernelConfig` of the sensitivity sweep. The
vectorised scorer evaluates them once per distinct value pair and gathers the results, so these
functions are both the reference and the hot path's building blocks.

* colour (Eq. 13): ``exp(−ΔE00/τ)`` (default τ = 30) or ``max(0, 1 − ΔE00/ΔEmax)``, ΔE00 by
  CIEDE2000 from ``colour-science`` between the sRGB anchors of the 15 CUB colour words;
  "iridescent" matches only itself.
* ordinal (Eq. 14): ``1 − |rank₁ − rank₂| / rank_max`` on bill length and size.
* pattern (Eq. 15): 1 if equal, 0.5 if both ∈ {spotted, striped, multi-colored}, else 0.
* anatomy (Eq. 16): ``max(0, 1 − ‖p₁ − p₂‖₂ / d_max)`` on the CUB part layout.
* paired attribute (Eq. 17): ``α·g(r₁, r₂) + (1 − α)·v(v₁, v₂)`` with
  ``g = 0.5·part(r₁, r₂) + 0.5·1[property₁ = property₂]``.
* soft Jaccard (Eq. 18): ``M / (|A| + |B| − M)``, ``M = Σ_{a∈A} max_{b∈B} κ(a, b)``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.text import normalize_c2 as _normalize_c2

#: Kernels are called once per distinct value pair; their inputs repeat, so normalization is memoized.
normalize_c2 = lru_cache(maxsize=1 << 16)(_normalize_c2)

#: The C2 side files of a benchmark folder, relative to it: written by the builder, the part layout
#: read by the scorer (:meth:`PartLayout.from_file`).
SIDE_FOLDER = "c2"
PART_LAYOUT_FILE = f"{SIDE_FOLDER}/part_layout.json"
VOCABULARY_FILE = f"{SIDE_FOLDER}/vocabulary.json"

#: The 15 CUB colour words (normalized spelling: "grey").
COLOUR_WORDS: tuple[str, ...] = (
    "blue", "brown", "iridescent", "purple", "rufous", "grey", "yellow", "olive", "green",
    "pink", "orange", "black", "white", "red", "buff",
)
#: [DEFAULT] sRGB anchors of paper App. C.5 (Eq. 13) (fitted to the paper's pair table); iridescent has none.
COLOUR_ANCHORS_SRGB: dict[str, tuple[int, int, int]] = {
    "blue": (0, 80, 220),
    "purple": (128, 0, 165),
    "green": (0, 131, 1),
    "yellow": (255, 246, 0),
    "orange": (245, 178, 0),
    "brown": (139, 69, 19),
    "rufous": (166, 52, 7),
    "black": (0, 0, 0),
    "white": (255, 255, 255),
    "grey": (128, 128, 128),
    "olive": (128, 128, 0),
    "pink": (255, 192, 203),
    "red": (255, 0, 0),
    "buff": (240, 220, 130),
}
EXACT_ONLY_COLOURS = frozenset({"iridescent"})

#: Ordered scales of the ordinal kernel (paper App. C.5 (Eq. 14)); rank = position.
ORDINAL_SCALES: dict[str, tuple[str, ...]] = {
    "bill_length": ("shorter than head", "about the same as head", "longer than head"),
    "size": ("very small", "small", "medium", "large", "very large"),
}
#: Pattern values that earn half credit against each other (paper App. C.5 (Eq. 15)), hyphens removed.
PATTERN_TEXTURED = frozenset({"spotted", "striped", "multicolored"})
PATTERN_VALUES = frozenset({"solid"}) | PATTERN_TEXTURED

#: The 15 CUB parts in natural language (parts.txt with ``_`` → space).
CUB_PARTS: tuple[str, ...] = (
    "back", "beak", "belly", "breast", "crown", "forehead", "left eye", "left leg", "left wing",
    "nape", "right eye", "right leg", "right wing", "tail", "throat",
)
#: [DEFAULT] lateral offset separating left from right parts (paper App. C.5 (Eq. 16)).
LATERAL_OFFSET = 0.05
#: Regions of the paired-attribute options → layout parts whose mean location stands for them
#: (paper App. C.5 (Eq. 17) [DEFAULT]; "head" and the whole bird (size, shape) are our additions).
REGION_PARTS: dict[str, tuple[str, ...]] = {
    "bill": ("beak",),
    "wing": ("left wing", "right wing"),
    "primary": ("left wing", "right wing"),
    "leg": ("left leg", "right leg"),
    "eye": ("left eye", "right eye"),
    "upperparts": ("back",),
    "underparts": ("belly",),
    "upper tail": ("tail",),
    "under tail": ("tail",),
    "head": ("crown", "forehead", "nape"),
    "": CUB_PARTS,
}
PROPERTIES = ("color", "pattern", "shape", "length", "size")


@dataclass(frozen=True, slots=True)
class KernelConfig:
    """One kernel configuration of the sensitivity sweep (paper App. I.1); defaults = paper."""

    tau: float = 30.0
    alpha: float = 0.5
    colour_kernel: str = "exponential"  # or "linear"
    prefer_text: bool = False
    visibility_kernel: str = "exact"  # or "anatomy" ("anat in vis")
    #: open_genus chance baseline: "exact" = share of 40 sampled other CUB classes whose genus
    #: is the gold genus (the paper's b ≈ 0.01); "graded" = mean genus kernel over 40 distinct
    #: other genera (paper App. C.4 (Eqs. 2, 11, 12) read literally, b ≈ 0.08)
    genus_baseline: str = "exact"
    #: open_common_name: the class's English name (the item's gold_set) scores as its CUB label
    #: does; False scores the CUB label alone, as the paper
    english_names: bool = True

    def __post_init__(self) -> None:
        if self.colour_kernel not in ("exponential", "linear"):
            raise ValueError(f"colour_kernel must be 'exponential' or 'linear', not {self.colour_kernel!r}")
        if self.visibility_kernel not in ("exact", "anatomy"):
            raise ValueError(f"visibility_kernel must be 'exact' or 'anatomy', not {self.visibility_kernel!r}")
        if self.genus_baseline not in ("exact", "graded"):
            raise ValueError(f"genus_baseline must be 'exact' or 'graded', not {self.genus_baseline!r}")
        if not self.tau > 0:
            raise ValueError(f"tau must be positive, not {self.tau}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], not {self.alpha}")


DEFAULT_CONFIG = KernelConfig()


# ---------------------------------------------------------------------------------------------
# colour (Eq. 13)


@lru_cache(maxsize=1)
def _colour() -> Any:
    """The ``colour-science`` module, imported with NumPy's print options kept: importing it sets
    ``legacy="1.13"`` process-wide, which turns ``str(np.float64)`` into 12 significant digits and
    so changed every CSV a report wrote later in the same process (``biovqa demo`` scores C2, then
    writes the report)."""
    options = np.get_printoptions()
    try:
        import colour
    finally:
        np.set_printoptions(**options)
    return colour


def srgb_to_lab(rgb: Iterable[float]) -> np.ndarray:
    """CIE-Lab (D65) of an sRGB triple in 0–255, through ``colour-science``."""
    colour = _colour()
    d65 = colour.CCS_ILLUMINANTS["CIE 1931 2 Degree Standard Observer"]["D65"]
    xyz = colour.sRGB_to_XYZ(np.asarray(list(rgb), dtype=float) / 255.0)
    return np.asarray(colour.XYZ_to_Lab(xyz, d65), dtype=float)


def ciede2000(lab1: Iterable[float], lab2: Iterable[float]) -> float:
    """CIEDE2000 colour difference ΔE00 (kL = kC = kH = 1) of two Lab colours."""
    colour = _colour()
    return float(colour.delta_E(np.asarray(list(lab1), float), np.asarray(list(lab2), float),
                                method="CIE 2000"))


#: The ΔE00 table of the anchor colours, shipped as package data (``biovqa/data/cub``): importing
#: colour-science to recompute 14 × 14 numbers cost more than scoring 800K items (≈ 2–5 s).
COLOUR_TABLE_RESOURCE = ("cub", "colour_delta_e00.json")


def computed_colour_delta_e_table() -> dict[tuple[str, str], float]:
    """ΔE00 between every pair of anchored colour words, computed with colour-science (the
    reference the shipped table is written from and tested against)."""
    labs = {name: srgb_to_lab(rgb) for name, rgb in COLOUR_ANCHORS_SRGB.items()}
    return {(a, b): ciede2000(labs[a], labs[b]) for a in labs for b in labs}


def colour_table_document(table: Mapping[tuple[str, str], float]) -> dict[str, Any]:
    """The shipped file's content for ``table``: the anchors it was computed from and ΔE00 per
    pair (``delta_e00[a][b]``), floats written exactly (JSON keeps every bit of a float)."""
    names = list(COLOUR_ANCHORS_SRGB)
    return {"about": "CIEDE2000 (kL = kC = kH = 1) between the sRGB anchors of the C2 colour kernel, "
                     "through CIE-Lab (D65), computed with colour-science",
            "anchors_srgb": {name: list(COLOUR_ANCHORS_SRGB[name]) for name in names},
            "delta_e00": {a: {b: table[(a, b)] for b in names} for a in names}}


@lru_cache(maxsize=1)
def colour_delta_e_table() -> dict[tuple[str, str], float]:
    """ΔE00 between every pair of anchored colour words, read from the shipped table (written by
    :func:`computed_colour_delta_e_table`; a test recomputes it to within rounding: the last digit
    moves between colour-science releases, the shipped table does not). A table computed for other
    anchors than :data:`COLOUR_ANCHORS_SRGB` is refused."""
    from importlib import resources

    folder, name = COLOUR_TABLE_RESOURCE
    document = json.loads(resources.files("biovqa").joinpath("data", folder, name).read_text(encoding="utf-8"))
    anchors = {key: tuple(value) for key, value in document.get("anchors_srgb", {}).items()}
    if anchors != COLOUR_ANCHORS_SRGB:
        raise MissingResourceError(
            "the shipped colour table was computed for other colour anchors than the kernel's",
            file=f"biovqa/data/{folder}/{name}", field="anchors_srgb",
            hint="rewrite it from kernels.computed_colour_delta_e_table() (see its test)")
    return {(a, b): float(value) for a, row in document["delta_e00"].items() for b, value in row.items()}


@lru_cache(maxsize=1)
def colour_delta_e_max() -> float:
    """ΔEmax of the linear colour kernel: the largest anchor-pair ΔE00 (black–white = 100)."""
    return max(colour_delta_e_table().values())


def colour_similarity(c1: str, c2: str, config: KernelConfig = DEFAULT_CONFIG) -> float:
    """Colour kernel, Eq. 13: 1 on identity, exact match for iridescent (and for words without an
    anchor), else ``exp(−ΔE00/τ)`` or, for the linear variant, ``max(0, 1 − ΔE00/ΔEmax)``."""
    a, b = normalize_c2(c1), normalize_c2(c2)
    if a == b:
        return 1.0
    if a not in COLOUR_ANCHORS_SRGB or b not in COLOUR_ANCHORS_SRGB:
        return 0.0
    delta = colour_delta_e_table()[(a, b)]
    if config.colour_kernel == "linear":
        return max(0.0, 1.0 - delta / colour_delta_e_max())
    return math.exp(-delta / config.tau)


# ---------------------------------------------------------------------------------------------
# ordinal (Eq. 14), pattern (Eq. 15), exact

_PARENTHETICAL = re.compile(r"\s*\([^)]*\)")


def ordinal_rank(value: str, scale: str) -> int | None:
    """Rank of ``value`` on an ordinal scale; CUB's bracketed ranges ("small (5 - 9 in)") are
    ignored. None when the value is not on the scale."""
    text = _PARENTHETICAL.sub("", normalize_c2(value)).strip()
    try:
        return ORDINAL_SCALES[scale].index(text)
    except ValueError:
        return None


def ordinal_similarity(v1: str, v2: str, scale: str) -> float:
    """Ordinal kernel, Eq. 14: ``1 − |rank(v1) − rank(v2)| / rank_max`` (exact match for values
    off the scale)."""
    r1, r2 = ordinal_rank(v1, scale), ordinal_rank(v2, scale)
    if r1 is None or r2 is None:
        return exact_similarity(v1, v2)
    return 1.0 - abs(r1 - r2) / (len(ORDINAL_SCALES[scale]) - 1)


def _pattern_key(value: str) -> str:
    return normalize_c2(value).replace("-", "").replace(" ", "")


def pattern_similarity(v1: str, v2: str) -> float:
    """Pattern kernel, Eq. 15: 1 if equal, 0.5 if both textured (spotted/striped/multi-colored)."""
    a, b = _pattern_key(v1), _pattern_key(v2)
    if a == b:
        return 1.0
    if a in PATTERN_TEXTURED and b in PATTERN_TEXTURED:
        return 0.5
    return 0.0


def exact_similarity(v1: str, v2: str) -> float:
    """1 if the normalized values are equal, else 0."""
    return 1.0 if normalize_c2(v1) == normalize_c2(v2) else 0.0


def value_kernel_for_group(attribute_group: str) -> str:
    """Kernel dispatch of attr_bare_value by CUB attribute group (paper App. C.5):
    ``*_color`` → colour; bill_length, size → ordinal; ``*_pattern`` (not head) → pattern; else exact."""
    group = attribute_group.removeprefix("has_")
    if group.endswith("_color"):
        return "colour"
    if group in ORDINAL_SCALES:
        return "ordinal:" + group
    if group.endswith("_pattern") and group != "head_pattern":
        return "pattern"
    return "exact"


def value_similarity(attribute_group: str, v1: str, v2: str,
                     config: KernelConfig = DEFAULT_CONFIG) -> float:
    """Similarity of two values of one CUB attribute group, through the group's kernel."""
    kernel = value_kernel_for_group(attribute_group)
    if kernel == "colour":
        return colour_similarity(v1, v2, config)
    if kernel == "pattern":
        return pattern_similarity(v1, v2)
    if kernel.startswith("ordinal:"):
        return ordinal_similarity(v1, v2, kernel.partition(":")[2])
    return exact_similarity(v1, v2)


# ---------------------------------------------------------------------------------------------
# anatomy (Eq. 16)


def _lateral_z(part: str) -> float:
    if part.startswith("left "):
        return -LATERAL_OFFSET
    if part.startswith("right "):
        return LATERAL_OFFSET
    return 0.0


@dataclass(frozen=True)
class PartLayout:
    """Mean bounding-box-normalized location of each CUB part, plus a lateral z offset
    (paper App. C.5 (Eq. 16)). ``d_max`` is the layout diameter (largest pairwise distance)."""

    points: Mapping[str, tuple[float, float, float]]
    d_max: float = field(init=False)

    def __post_init__(self) -> None:
        coords = np.array(list(self.points.values()), dtype=float)
        if len(coords) < 2:
            raise ValueError("a part layout needs at least two parts")
        diffs = coords[:, None, :] - coords[None, :, :]
        object.__setattr__(self, "d_max", float(np.sqrt((diffs**2).sum(-1)).max()))

    @classmethod
    def from_xy(cls, xy: Mapping[str, Iterable[float]]) -> PartLayout:
        """Layout from ``{part: [x, y]}``; part names may use ``_`` (CUB) or spaces."""
        points = {}
        for name, value in xy.items():
            part = normalize_c2(name)
            x, y = (float(v) for v in list(value)[:2])
            points[part] = (x, y, _lateral_z(part))
        return cls(points=points)

    @classmethod
    def from_file(cls, path: str | Path) -> PartLayout:
        """Read ``c2/part_layout.json`` written by the C2 builder (parts never visible are null
        there and left out)."""
        path = Path(path)
        if not path.exists():
            raise MissingResourceError(
                "C2 part layout not found", file=path,
                hint="re-build the benchmark with `biovqa build c2`; the anatomy kernel needs it")
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputFormatError(f"part layout is not valid JSON: {exc.msg}", file=path,
                                   row=exc.lineno) from None
        if not isinstance(payload, dict):
            raise InputFormatError("part layout must be a JSON object {part: [x, y]}", file=path)
        payload = {name: value for name, value in payload.items() if value is not None}
        for name, value in payload.items():
            if not (isinstance(value, list) and len(value) >= 2
                    and all(isinstance(v, (int, float)) for v in value[:2])):
                raise InputFormatError("expected [x, y] numbers", file=path, field=name)
        return cls.from_xy(payload)

    def point(self, part: str) -> tuple[float, float, float]:
        key = normalize_c2(part)
        if key not in self.points:
            raise InputFormatError(f"part {part!r} is not in the part layout",
                                   hint=f"known parts: {', '.join(sorted(self.points))}")
        return self.points[key]

    def region_point(self, region: str) -> tuple[float, float, float]:
        """Location of a paired-attribute region: the mean of its parts (REGION_PARTS), or the
        same-named part."""
        key = normalize_c2(region)
        cache: dict[str, tuple[float, float, float]] = self.__dict__.setdefault("_regions", {})
        cached = cache.get(key)
        if cached is not None:
            return cached
        coords = [self.point(p) for p in REGION_PARTS.get(key, (key,))]
        x, y, z = (sum(c[i] for c in coords) / len(coords) for i in range(3))
        cache[key] = (x, y, z)
        return x, y, z

    def distance_similarity(self, p1: Iterable[float], p2: Iterable[float]) -> float:
        return max(0.0, 1.0 - math.dist(tuple(p1), tuple(p2)) / self.d_max)

    def part_similarity(self, part1: str, part2: str) -> float:
        """Anatomy kernel, Eq. 16: ``max(0, 1 − ‖p1 − p2‖₂ / d_max)``."""
        if normalize_c2(part1) == normalize_c2(part2):
            return 1.0
        return self.distance_similarity(self.point(part1), self.point(part2))

    def region_similarity(self, region1: str, region2: str) -> float:
        if normalize_c2(region1) == normalize_c2(region2):
            return 1.0
        return self.distance_similarity(self.region_point(region1), self.region_point(region2))


# ---------------------------------------------------------------------------------------------
# paired attribute (Eq. 17)


@dataclass(frozen=True, slots=True)
class Trait:
    """A relative-salience option ``"{region} {property}: {value}"`` split into its parts."""

    region: str
    prop: str
    value: str

    @property
    def attribute_group(self) -> str:
        name = f"{self.region} {self.prop}".strip().replace(" ", "_")
        return "has_" + name


@lru_cache(maxsize=1 << 14)
def parse_trait(option: str) -> Trait:
    """Split ``"wing color: blue"`` → Trait("wing", "color", "blue"); ``"size: small"`` has the
    whole bird as its region (""). Text without a colon is a value of unknown region/property."""
    text = normalize_c2(option)
    head, sep, value = text.partition(":")
    if not sep:
        return Trait(region="", prop="", value=text)
    words = head.split()
    prop = words[-1] if words and words[-1] in PROPERTIES else ""
    region = " ".join(words[:-1] if prop else words)
    return Trait(region=region, prop=prop, value=value.strip())


def trait_value_similarity(t1: Trait, t2: Trait, config: KernelConfig = DEFAULT_CONFIG) -> float:
    """v of Eq. 17: the property's value kernel when both traits share the property (head
    pattern and shapes compare exactly); values of different properties share no scale → 0."""
    if t1.prop != t2.prop:
        return 0.0
    group1, group2 = t1.attribute_group, t2.attribute_group
    kernel1, kernel2 = value_kernel_for_group(group1), value_kernel_for_group(group2)
    if kernel1 != kernel2:
        return exact_similarity(t1.value, t2.value)
    return value_similarity(group1, t1.value, t2.value, config)


def paired_attribute_similarity(option1: str, option2: str, layout: PartLayout,
                                config: KernelConfig = DEFAULT_CONFIG) -> float:
    """Paired-attribute kernel, Eq. 17: ``α·g + (1 − α)·v`` with
    ``g = 0.5·part(r1, r2) + 0.5·1[property1 = property2]`` (paper App. C.5 (Eq. 17) [DEFAULT])."""
    t1, t2 = parse_trait(option1), parse_trait(option2)
    if t1 == t2:
        return 1.0
    region_term = layout.region_similarity(t1.region, t2.region)
    g = 0.5 * region_term + 0.5 * (1.0 if t1.prop == t2.prop else 0.0)
    v = trait_value_similarity(t1, t2, config)
    return config.alpha * g + (1.0 - config.alpha) * v


def paired_attribute_matrix(options: Sequence[str], layout: PartLayout,
                            config: KernelConfig = DEFAULT_CONFIG) -> np.ndarray:
    """:func:`paired_attribute_similarity` for every pair of ``options`` at once: entry
    ``[i, j]`` = s(option i, option j). The region term is computed with arrays; value kernels
    once per distinct value pair within each (property, kernel) class."""
    texts = [normalize_c2(o) for o in options]
    traits = [parse_trait(o) for o in texts]
    size = len(traits)
    points = np.array([layout.region_point(t.region) for t in traits], dtype=float).reshape(size, 3)
    distance = np.sqrt(((points[:, None, :] - points[None, :, :]) ** 2).sum(-1))
    region_code = _codes([t.region for t in traits])
    same_region = region_code[:, None] == region_code[None, :]
    region = np.where(same_region, 1.0, np.maximum(0.0, 1.0 - distance / layout.d_max))
    props = np.array([t.prop for t in traits], dtype=object)
    same_prop = props[:, None] == props[None, :]
    g = 0.5 * region + 0.5 * np.where(same_prop, 1.0, 0.0)

    values = sorted({t.value for t in traits})
    value_id = np.array([values.index(t.value) for t in traits], dtype=np.int64)
    kernel_of = [value_kernel_for_group(t.attribute_group) for t in traits]
    classes = sorted({(t.prop, k) for t, k in zip(traits, kernel_of)})
    class_id = np.array([classes.index((t.prop, k)) for t, k in zip(traits, kernel_of)], dtype=np.int64)
    v = np.where(same_prop & (value_id[:, None] == value_id[None, :]), 1.0, 0.0)
    for c, (prop, _kernel) in enumerate(classes):
        members = np.flatnonzero(class_id == c)
        group = traits[members[0]].attribute_group
        local = sorted({int(value_id[m]) for m in members})
        small = np.array([[value_similarity(group, values[a], values[b], config) for b in local]
                          for a in local], dtype=float).reshape(len(local), len(local))
        position = np.searchsorted(local, value_id[members])
        v[np.ix_(members, members)] = small[np.ix_(position, position)]
    matrix = config.alpha * g + (1.0 - config.alpha) * v
    trait_code = _codes(traits)
    return np.where(trait_code[:, None] == trait_code[None, :], 1.0, matrix)


def _codes(values: Sequence[object]) -> np.ndarray:
    """Dense integer codes of hashable values (equal values, equal codes)."""
    seen: dict[object, int] = {}
    return np.array([seen.setdefault(v, len(seen)) for v in values], dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# soft Jaccard (Eq. 18)


def soft_jaccard(predicted: Iterable[str], gold: Iterable[str],
                 element_similarity: Callable[[str, str], float] | None = None) -> float:
    """Soft Jaccard, Eq. 18: ``M / (|A| + |B| − M)`` with ``M = Σ_{a∈A} max_{b∈B} κ(a, b)``;
    A = predicted set, B = gold set; κ = exact match unless given; sJac(∅, ∅) = 1 [DEFAULT]."""
    a_set, b_set = sorted(set(predicted)), sorted(set(gold))
    if not a_set and not b_set:
        return 1.0
    if not a_set or not b_set:
        return 0.0
    kappa = element_similarity or (lambda x, y: 1.0 if x == y else 0.0)
    matched = sum(max(kappa(a, b) for b in b_set) for a in a_set)
    return matched / (len(a_set) + len(b_set) - matched)


SIDE_SETS: dict[str, frozenset[str]] = {
    "left": frozenset({"left"}),
    "right": frozenset({"right"}),
    "both": frozenset({"left", "right"}),
    "none": frozenset(),
}


def side_option_set(option: str) -> frozenset[str]:
    """visibility_side encoding: Left={L}, Right={R}, Both={L,R}, None=∅."""
    key = normalize_c2(option)
    if key not in SIDE_SETS:
        raise InputFormatError(f"visibility_side option {option!r} is not Left/Right/Both/None")
    return SIDE_SETS[key]


def partset_option_set(option: str, offered_parts: Iterable[str]) -> frozenset[str]:
    """visibility_partset encoding: a part x → {x}, None → ∅, All three → the offered parts."""
    key = normalize_c2(option)
    if key == "none":
        return frozenset()
    if key == "all three":
        return frozenset(normalize_c2(p) for p in offered_parts)
    return frozenset({key})


def visibility_element_similarity(layout: PartLayout | None, config: KernelConfig,
                                  side_part: str | None = None) -> Callable[[str, str], float] | None:
    """κ of the soft Jaccard: exact match, or part similarity for the "anat in vis" sweep.
    For visibility_side the elements left/right become "left {part}"/"right {part}"."""
    if config.visibility_kernel == "exact":
        return None
    if layout is None:
        raise MissingResourceError("the 'anat in vis' kernel needs the C2 part layout")
    if side_part is None:
        return layout.part_similarity
    part = normalize_c2(side_part)
    return lambda a, b: layout.part_similarity(f"{a} {part}", f"{b} {part}")
