"""The question generators of the ten C2 families (paper Table 7, paper App. K.2).

Each generator takes the parsed CUB archive (:class:`biovqa.sources.cub.CubDataset`), the
derived per-image truth (:class:`AttributeTruth`), naming facts and a seeded generator, and
returns a list of item rows (dicts with the C2 item columns). Generators are pure: the same
inputs and seed give the same rows in the same order. ``image_rows`` restricts a generator to a
range of images; calling it on consecutive ranges with the same generator object gives the same
rows as one call over all images (the builder works in chunks to bound memory).

Certainty rule [DEFAULT, paper §3.2, App. A.2], recorded in the manifest:

* a value is **true** of an image if ``is_present = 1`` and certainty ≥ 3 ("probably",
  "definitely");
* a value with ``is_present = 1`` and certainty ≤ 2 ("not visible", "guessing") is
  **uncertain**: never a gold, never a distractor, and a group whose only positives are uncertain
  asks no question;
* a value is **false** (an eligible distractor) if ``is_present = 0`` — i.e. it is absent from the
  image's positive set at every certainty;
* only **attested** values are offered: values true of at least one image of the archive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from biovqa.components.c2.prompts import LETTERS, MCQ_INSTRUCTION, TEMPLATES, mcq_question, open_instruction
from biovqa.sources.cub import CubDataset

SIDE_LABELS: tuple[str, ...] = ("Left", "Right", "Both", "None")
SIDE_PARTS: tuple[str, ...] = ("eye", "leg", "wing")
PARTSET_NONE = "None"
PARTSET_ALL = "All three"
PARTSET_TRIPLES_PER_IMAGE = 10
MAX_OPTIONS = 5
TRUE_MIN_CERTAINTY = 3
PROPERTIES: tuple[str, ...] = ("color", "pattern", "shape", "length", "size")
#: The 15 CUB colour words (paper §3.2, App. A.2).
COLOUR_WORDS: tuple[str, ...] = (
    "blue", "brown", "iridescent", "purple", "rufous", "grey", "yellow", "olive", "green", "pink",
    "orange", "black", "white", "red", "buff",
)

CERTAINTY_RULE: dict[str, Any] = {
    "true": f"is_present = 1 and certainty >= {TRUE_MIN_CERTAINTY} (probably, definitely)",
    "uncertain": f"is_present = 1 and certainty < {TRUE_MIN_CERTAINTY}: never gold, never a distractor",
    "false": "is_present = 0 (absent from the positive set at every certainty): eligible distractor",
    "attested": "a value is offered only if it is true of at least one image of the archive",
    "attr_bare_value_gold": "the true value with the highest certainty; ties broken by the seeded generator",
    "attr_group_value_gold": "one item per true trait of the image",
    "true_min_certainty": TRUE_MIN_CERTAINTY,
}


def split_group(group: str) -> tuple[str | None, str]:
    """``has_upper_tail_color`` → (``upper tail``, ``color``); ``has_size`` → (None, ``size``)."""
    tokens = group.removeprefix("has_").split("_")
    part = " ".join(tokens[:-1]) or None
    return part, tokens[-1]


def group_label(group: str) -> str:
    """Natural-language ``{part} {property}``: ``has_bill_color`` → ``bill color``."""
    part, prop = split_group(group)
    return prop if part is None else f"{part} {prop}"


def value_text(value: str) -> str:
    """``curved_(up_or_down)`` → ``curved (up or down)``."""
    return value.replace("_", " ").strip()


def part_text(native: str) -> str:
    """``left_eye`` → ``left eye``."""
    return native.replace("_", " ")


# --------------------------------------------------------------------------------------------
# derived facts


@dataclass(frozen=True)
class AttributeTruth:
    """Per-image truth of every attribute under :data:`CERTAINTY_RULE`."""

    true: np.ndarray  # bool (n_images, n_attributes)
    false: np.ndarray  # bool (n_images, n_attributes)
    attested: np.ndarray  # bool (n_attributes,)
    group_index: np.ndarray  # int (n_attributes,), index into groups
    groups: tuple[str, ...]  # in first-appearance order
    values: tuple[str, ...]  # natural-language value text per attribute

    @classmethod
    def from_cub(cls, cub: CubDataset, *, true_min_certainty: int = TRUE_MIN_CERTAINTY) -> AttributeTruth:
        true = cub.is_present & (cub.certainty >= true_min_certainty)
        false = ~cub.is_present
        groups: list[str] = []
        index = []
        for group in cub.attribute_groups:
            if group not in groups:
                groups.append(group)
            index.append(groups.index(group))
        return cls(
            true=true,
            false=false,
            attested=np.asarray(true.any(axis=0), dtype=bool),
            group_index=np.asarray(index, dtype=np.int64),
            groups=tuple(groups),
            values=tuple(value_text(v) for v in cub.attribute_values),
        )

    def vocabulary(self) -> dict[str, list[str]]:
        """Attested values per group, in attribute order."""
        out: dict[str, list[str]] = {g: [] for g in self.groups}
        for a, group in enumerate(self.group_index):
            if self.attested[a]:
                out[self.groups[group]].append(self.values[a])
        return out


@dataclass(frozen=True)
class ClassNaming:
    """Naming facts of one CUB class (paper §3.2, App. A.2, naming families)."""

    class_id: int
    class_name: str  # CUB display name
    scientific_name: str | None  # the mapped binomial (None where the map gives none)
    genus: str | None
    kind_category: str | None  # head noun of a multi-word CUB name (see name_categories)
    kind_modifier: str | None  # the class name without its head noun
    #: the English name a biologist writes ("Chuck-will's-widow" for CUB's "Chuck will Widow"),
    #: scored as exact beside the CUB label (open_common_name's gold_set); None when it is the label
    english_name: str | None = None


def head_noun(class_name: str) -> str:
    """Category of a CUB common name: its last word (``California Gull`` → ``Gull``)."""
    return class_name.split()[-1]


def name_categories(class_names: list[str]) -> list[str]:
    """The naming categories: head nouns of the multi-word CUB names, sorted [DERIVED].

    A one-word name (Cardinal, Mallard, Sayornis, …: 10 CUB classes) has no head noun apart from
    itself, so it has no category and no "kind" modifier. This reproduces the paper's 11 191
    category_mcq / open_kind_of items (11 788 images minus the ≈597 of those 10 classes) and its
    Table 8 example, where "Nutcracker" (one CUB class) is offered as a category. The spec's
    default "categories spanning ≥ 2 classes" covers only 167 classes (≈9 850 images).
    """
    return sorted({head_noun(name) for name in class_names if len(name.split()) >= 2})


# --------------------------------------------------------------------------------------------
# generators


def _shuffled(options: list[str], rng: np.random.Generator) -> list[str]:
    order = rng.permutation(len(options))
    return [options[i] for i in order]


def _mcq_row(family: str, stem: str, options: list[str], gold: str, **fields: Any) -> dict[str, Any]:
    return {
        "task": family,
        "question": mcq_question(stem, options),
        "instruction": MCQ_INSTRUCTION,
        "options": options,
        "answer": gold,
        "answer_letter": LETTERS[options.index(gold)],
        **fields,
    }


def _open_row(family: str, question: str, gold: str, **fields: Any) -> dict[str, Any]:
    return {
        "task": family,
        "question": question,
        "instruction": open_instruction(family),
        "options": None,
        "answer": gold,
        "answer_letter": None,
        **fields,
    }


def _group_members(truth: AttributeTruth) -> np.ndarray:
    """(n_groups, max_group_size) attribute indexes per group, padded with -1."""
    sizes = np.bincount(truth.group_index, minlength=len(truth.groups))
    members = np.full((len(truth.groups), int(sizes.max())), -1, dtype=np.int64)
    for g in range(len(truth.groups)):
        found = np.flatnonzero(truth.group_index == g)
        members[g, : found.size] = found
    return members


def _keys_by_group(keys: np.ndarray, members: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Random keys arranged ``[..., group, slot]``; +inf where the slot is padding or not allowed."""
    picked = np.where(members >= 0, keys[..., np.maximum(members, 0)], np.inf)
    return np.where((members >= 0) & allowed[..., np.maximum(members, 0)], picked, np.inf)


def _bump(skipped: dict[str, int], reason: str, n: int = 1) -> None:
    skipped[reason] = skipped.get(reason, 0) + n


def attr_bare_value(cub: CubDataset, truth: AttributeTruth, rng: np.random.Generator,
                    skipped: dict[str, int],
        image_rows: range | None = None) -> list[list[dict[str, Any]]]:
    """One item per (image, group) with a true value; gold = the most certain true value (ties:
    seeded); distractors = up to four attested values false of the image, so options =
    min(5, 1 + #eligible). Random choices are smallest-random-key selections (vectorised)."""
    members = _group_members(truth)
    n_groups = len(truth.groups)
    labels = [group_label(g) for g in truth.groups]
    parts = [split_group(g) for g in truth.groups]
    per_image: list[list[dict[str, Any]]] = []
    for row in image_rows if image_rows is not None else range(cub.n_images):
        keys = rng.random((2, truth.true.shape[1]))
        shuffle_keys = rng.random((n_groups, MAX_OPTIONS))
        # gold: highest certainty among true values, then smallest key
        gold_score = np.where(truth.true[row], cub.certainty[row] * 2.0 - keys[0], -np.inf)
        gold_by_group = np.where(members >= 0, gold_score[np.maximum(members, 0)], -np.inf)
        has_true = np.asarray(np.isfinite(gold_by_group).any(axis=1), dtype=bool)
        gold_slot = gold_by_group.argmax(axis=1)
        eligible = truth.false[row] & truth.attested
        distractor_keys = _keys_by_group(keys[1], members, eligible)
        n_eligible = np.isfinite(distractor_keys).sum(axis=1)
        order = np.argsort(distractor_keys, axis=1, kind="stable")
        items: list[dict[str, Any]] = []
        for g in range(n_groups):
            if not has_true[g]:
                continue
            if n_eligible[g] == 0:
                _bump(skipped, "attr_bare_value: no eligible distractor")
                continue
            gold_attr = int(members[g, gold_slot[g]])
            chosen = members[g, order[g, : min(MAX_OPTIONS - 1, int(n_eligible[g]))]]
            gold = truth.values[gold_attr]
            candidates = [gold, *(truth.values[a] for a in chosen)]
            shuffle = np.argsort(shuffle_keys[g, : len(candidates)], kind="stable")
            options = [candidates[i] for i in shuffle]
            part, prop = parts[g]
            items.append(_mcq_row(
                "attr_bare_value", TEMPLATES["attr_bare_value"].format(part_property=labels[g]),
                options, gold, part=part, property=prop, attribute_group=truth.groups[g],
            ))
        per_image.append(items)
    return per_image


def attr_group_value(cub: CubDataset, truth: AttributeTruth, rng: np.random.Generator,
                     skipped: dict[str, int],
        image_rows: range | None = None) -> list[list[dict[str, Any]]]:
    """One item per true trait of the image; options are ``{part} {property}: {value}``; the four
    distractors are attested traits false of the image, from four distinct other groups (groups
    and values chosen by smallest random key, vectorised over the image's items)."""
    members = _group_members(truth)
    n_groups = len(truth.groups)
    n_attributes = truth.true.shape[1]
    labels = [group_label(g) for g in truth.groups]
    parts = [split_group(g) for g in truth.groups]
    trait_text = [f"{labels[truth.group_index[a]]}: {truth.values[a]}" for a in range(n_attributes)]
    per_image: list[list[dict[str, Any]]] = []
    for row in image_rows if image_rows is not None else range(cub.n_images):
        gold_attrs = np.flatnonzero(truth.true[row])
        if gold_attrs.size == 0:
            per_image.append([])
            continue
        eligible = truth.false[row] & truth.attested
        n_items = gold_attrs.size
        value_keys = _keys_by_group(rng.random((n_items, n_attributes)), members, eligible)
        best_slot = value_keys.argmin(axis=2)  # (items, groups)
        group_ok = np.isfinite(value_keys.min(axis=2))
        gold_groups = truth.group_index[gold_attrs]
        group_ok[np.arange(n_items), gold_groups] = False
        group_keys = np.where(group_ok, rng.random((n_items, n_groups)), np.inf)
        group_order = np.argsort(group_keys, axis=1, kind="stable")[:, : MAX_OPTIONS - 1]
        enough = group_ok.sum(axis=1) >= MAX_OPTIONS - 1
        shuffles = np.argsort(rng.random((n_items, MAX_OPTIONS)), axis=1, kind="stable")
        items: list[dict[str, Any]] = []
        for k, gold_attr in enumerate(gold_attrs):
            if not enough[k]:
                _bump(skipped, "attr_group_value: fewer than 4 distractor groups")
                continue
            distractors = [int(members[g, best_slot[k, g]]) for g in group_order[k]]
            candidates = [trait_text[int(gold_attr)], *(trait_text[a] for a in distractors)]
            options = [candidates[i] for i in shuffles[k]]
            g = int(gold_groups[k])
            part, prop = parts[g]
            items.append(_mcq_row("attr_group_value", TEMPLATES["attr_group_value"], options,
                                  candidates[0], part=part, property=prop,
                                  attribute_group=truth.groups[g]))
        per_image.append(items)
    return per_image


@dataclass(frozen=True)
class MarkerPlan:
    """Where the three markers of one image go (part indexes into ``cub.part_names``)."""

    target: int
    color: str
    shape: str
    color_control: int | None  # same colour, other shape
    color_control_shape: str | None
    shape_control: int | None  # same shape, other colour
    shape_control_color: str | None


def plan_markers(visible: np.ndarray, xy: np.ndarray, radius: float, rng: np.random.Generator,
                 colors: tuple[str, ...], shapes: tuple[str, ...], *, far: bool = False
                 ) -> MarkerPlan | None:
    """Target on a random visible part; each control on another visible part, preferring parts at
    least three marker radii from the markers already placed (so markers do not overlap). With
    ``far`` the controls go on the visible parts farthest from the target (marker_distractors
    "far"), otherwise on random ones."""
    parts = np.flatnonzero(visible)
    if parts.size == 0:
        return None
    target = int(rng.choice(parts))
    color = colors[int(rng.integers(len(colors)))]
    shape = shapes[int(rng.integers(len(shapes)))]
    placed = [target]

    def pick() -> int | None:
        free = [int(p) for p in parts if p not in placed]
        if not free:
            return None
        apart = [p for p in free
                 if min(float(np.hypot(*(xy[p] - xy[q]))) for q in placed) >= 3 * radius]
        if far:
            pool = apart if apart else free
            choice = max(pool, key=lambda p: (float(np.hypot(*(xy[p] - xy[target]))), -p))
        else:
            choice = int(rng.choice(apart if apart else free))
        placed.append(choice)
        return choice

    color_control = pick()
    shape_control = pick()
    other_shapes = [s for s in shapes if s != shape]
    other_colors = [c for c in colors if c != color]
    return MarkerPlan(
        target=target, color=color, shape=shape,
        color_control=color_control,
        color_control_shape=None if color_control is None else other_shapes[int(rng.integers(len(other_shapes)))],
        shape_control=shape_control,
        shape_control_color=None if shape_control is None else other_colors[int(rng.integers(len(other_colors)))],
    )


#: How marker_localization picks its distractor parts (the two control markers and the two
#: further options): "far" = the visible parts farthest from the target in the image (the
#: paper's per-model (EM, GS_raw, cags) need a chance baseline b well below a random part's;
#: docs/c2-paper-constraints.md), "visible" = random visible parts (pre-fidelity behaviour).
MARKER_DISTRACTORS: tuple[str, ...] = ("far", "visible")


def marker_item(plan: MarkerPlan, visible: np.ndarray, part_names: tuple[str, ...],
                rng: np.random.Generator, *, xy: np.ndarray | None = None,
                distractors: str = "far") -> dict[str, Any]:
    """Options: the target part, the control parts, two further visible parts (``distractors``:
    the farthest from the target in pixels, ties in random order, or random ones), then (only
    if the bird shows fewer than five parts) invisible ones — five in all, shuffled."""
    if distractors not in MARKER_DISTRACTORS:
        raise ValueError(f"marker distractors must be one of {MARKER_DISTRACTORS}, not {distractors!r}")
    chosen = [plan.target] + [p for p in (plan.color_control, plan.shape_control) if p is not None]
    rest_visible = [int(p) for p in rng.permutation(np.flatnonzero(visible)) if p not in chosen]
    if distractors == "far":
        if xy is None:
            raise ValueError("far marker distractors need the part locations (xy)")
        target_xy = xy[plan.target]
        rest_visible.sort(key=lambda p: -float(np.hypot(*(xy[p] - target_xy))))  # stable: ties keep rng order
    rest_hidden = [int(p) for p in rng.permutation(np.flatnonzero(~visible)) if p not in chosen]
    options_idx = (chosen + rest_visible + rest_hidden)[:MAX_OPTIONS]
    options = _shuffled([part_text(part_names[p]) for p in options_idx], rng)
    gold = part_text(part_names[plan.target])
    stem = TEMPLATES["marker_localization"].format(color=plan.color, shape=plan.shape)
    return _mcq_row("marker_localization", stem, options, gold, part=gold,
                    marker_color=plan.color, marker_shape=plan.shape)


#: Named mixes of visibility_partset gold kinds (single visible part, none visible, all three).
#: "paper" = .8/.1/.1 (8/1/1 triples per image), a mix inside the region where the published
#: (EM, GS_raw, cags) of all 16 models are attainable (single ≈ .78–.83; .6/.1/.3 fits 13 of 16;
#: docs/c2-paper-constraints.md); "uniform" = the kind drawn uniformly among those the image
#: allows, with duplicates re-drawn (the pre-fidelity behaviour: ≈ .41/.10/.48 on CUB).
PARTSET_MIXES: dict[str, tuple[float, float, float] | None] = {
    "paper": (0.8, 0.1, 0.1),
    "uniform": None,
}
PARTSET_KINDS: tuple[str, ...] = ("one", "none", "all")


def parse_partset_mix(value: str | tuple[float, ...] | None) -> tuple[float, float, float] | None:
    """A mix name of :data:`PARTSET_MIXES`, or three non-negative weights "single,none,all"
    (normalized); None = "uniform"."""
    if value is None:
        return PARTSET_MIXES["paper"]
    if isinstance(value, str):
        key = value.strip().lower()
        if key in PARTSET_MIXES:
            return PARTSET_MIXES[key]
        parts: list[str | float] = list(key.replace(":", ",").replace("/", ",").split(","))
    else:
        parts = list(value)
    try:
        weights = tuple(float(v) for v in parts)
    except ValueError:
        raise ValueError(f"partset mix must be one of {sorted(PARTSET_MIXES)} or three weights "
                         f"'single,none,all', not {value!r}") from None
    if len(weights) != 3 or min(weights) < 0 or sum(weights) <= 0:
        raise ValueError(f"partset mix needs three non-negative weights 'single,none,all', not {value!r}")
    total = sum(weights)
    return (weights[0] / total, weights[1] / total, weights[2] / total)


def partset_quotas(weights: tuple[float, float, float], capacity: tuple[int, int, int],
                   total: int = PARTSET_TRIPLES_PER_IMAGE) -> tuple[int, int, int]:
    """How many triples of each kind (single, none, all) one image gets: ``total`` split by the
    weights with largest remainders (ties: single, none, all), each capped at the number of
    distinct triples of that kind the image allows; the shortfall goes to the kinds with room,
    again in proportion to their weights (then in kind order)."""
    quotas = [0, 0, 0]
    remaining = min(total, sum(capacity))
    open_kinds = [k for k in range(3) if capacity[k] > 0]
    while remaining > 0 and open_kinds:
        weight = sum(weights[k] for k in open_kinds)
        shares = [(remaining * weights[k] / weight) if weight > 0 else remaining / len(open_kinds)
                  for k in open_kinds]
        floors = [int(v) for v in shares]
        order = sorted(range(len(open_kinds)), key=lambda i: (-(shares[i] - floors[i]), open_kinds[i]))
        for i in order[: remaining - sum(floors)]:
            floors[i] += 1
        for i, k in enumerate(open_kinds):
            take = min(floors[i], capacity[k] - quotas[k])
            quotas[k] += take
            remaining -= take
        open_kinds = [k for k in open_kinds if quotas[k] < capacity[k]]
    return quotas[0], quotas[1], quotas[2]


def _comb(n: int, k: int) -> int:
    from math import comb

    return comb(n, k) if n >= k else 0


def visibility_partset(cub: CubDataset, rng: np.random.Generator,
                       skipped: dict[str, int],
        image_rows: range | None = None,
        mix: tuple[float, float, float] | None = PARTSET_MIXES["paper"]) -> list[list[dict[str, Any]]]:
    """Ten distinct part triples per image with exactly one correct option: one of the three
    visible (gold = that part), none visible (None), or all three (All three).

    With a ``mix`` (weights of single / none / all) each image gets fixed quotas of the three
    kinds (:func:`partset_quotas`, 6/1/3 for the paper's mix), its triples drawn without
    duplicates within each kind and the ten items shuffled. With ``mix=None`` ("uniform") the kind
    is drawn uniformly among the kinds the image allows, then the triple uniformly within it."""
    per_image = []
    names = [part_text(p) for p in cub.part_names]
    for row in image_rows if image_rows is not None else range(cub.n_images):
        visible = np.flatnonzero(cub.part_visible[row])
        hidden = np.flatnonzero(~cub.part_visible[row])
        triples = (_partset_uniform(visible, hidden, rng) if mix is None
                   else _partset_quota(visible, hidden, rng, mix))
        items: list[dict[str, Any]] = []
        for triple in triples:
            order = [triple[i] for i in rng.permutation(3)]
            offered = [names[p] for p in order]
            shown = [names[p] for p in order if cub.part_visible[row, p]]
            gold = PARTSET_NONE if not shown else PARTSET_ALL if len(shown) == 3 else shown[0]
            options = [*offered, PARTSET_NONE, PARTSET_ALL]
            items.append(_mcq_row("visibility_partset", TEMPLATES["visibility_partset"], options, gold,
                                  gold_set=shown))
        if len(items) < PARTSET_TRIPLES_PER_IMAGE:
            skipped["visibility_partset: image allows fewer than 10 triples"] = skipped.get(
                "visibility_partset: image allows fewer than 10 triples", 0) + 1
        per_image.append(items)
    return per_image


def _draw_triple(kind: str, visible: np.ndarray, hidden: np.ndarray, rng: np.random.Generator) -> list[int]:
    if kind == "one":
        return [int(rng.choice(visible)), *(int(p) for p in rng.choice(hidden, 2, replace=False))]
    if kind == "none":
        return [int(p) for p in rng.choice(hidden, 3, replace=False)]
    return [int(p) for p in rng.choice(visible, 3, replace=False)]


def _partset_uniform(visible: np.ndarray, hidden: np.ndarray, rng: np.random.Generator) -> list[list[int]]:
    kinds = []
    if visible.size >= 1 and hidden.size >= 2:
        kinds.append("one")
    if hidden.size >= 3:
        kinds.append("none")
    if visible.size >= 3:
        kinds.append("all")
    seen: set[tuple[int, ...]] = set()
    out: list[list[int]] = []
    attempts = 0
    while len(out) < PARTSET_TRIPLES_PER_IMAGE and kinds and attempts < 2000:
        attempts += 1
        triple = _draw_triple(kinds[int(rng.integers(len(kinds)))], visible, hidden, rng)
        key = tuple(sorted(triple))
        if key in seen:
            continue
        seen.add(key)
        out.append(triple)
    return out


def _partset_quota(visible: np.ndarray, hidden: np.ndarray, rng: np.random.Generator,
                   mix: tuple[float, float, float]) -> list[list[int]]:
    capacity = (visible.size * _comb(hidden.size, 2), _comb(hidden.size, 3), _comb(visible.size, 3))
    quotas = partset_quotas(mix, capacity)
    out: list[list[int]] = []
    for kind, quota in zip(PARTSET_KINDS, quotas):
        seen: set[tuple[int, ...]] = set()
        while len(seen) < quota:  # quota ≤ the distinct triples of the kind, so this ends
            triple = _draw_triple(kind, visible, hidden, rng)
            key = tuple(sorted(triple))
            if key not in seen:
                seen.add(key)
                out.append(triple)
    return [out[i] for i in rng.permutation(len(out))]


def visibility_side(cub: CubDataset, image_rows: range | None = None) -> list[list[dict[str, Any]]]:
    """Eye, leg and wing: gold = Left / Right / Both / None from the CUB visibility flags."""
    index = {name: i for i, name in enumerate(cub.part_names)}
    per_image = []
    for row in image_rows if image_rows is not None else range(cub.n_images):
        items: list[dict[str, Any]] = []
        for part in SIDE_PARTS:
            left = bool(cub.part_visible[row, index[f"left_{part}"]])
            right = bool(cub.part_visible[row, index[f"right_{part}"]])
            gold = "Both" if left and right else "Left" if left else "Right" if right else "None"
            shown = [s for s, v in (("Left", left), ("Right", right)) if v]
            items.append(_mcq_row("visibility_side", TEMPLATES["visibility_side"].format(side_part=part),
                                  list(SIDE_LABELS), gold, part=part, gold_set=shown))
        per_image.append(items)
    return per_image


def naming_items(naming: ClassNaming, categories: list[str], rng: np.random.Generator,
                 *, ask_genus: bool = True) -> list[dict[str, Any]]:
    """category_mcq, open_common_name, open_scientific_name, open_genus, open_kind_of for one
    image (families whose gold the class lacks are not asked; ``ask_genus=False`` drops the
    open_genus item of a class the paper asks no genus for, keeping its genus for the lift)."""
    items: list[dict[str, Any]] = []
    if naming.kind_category is not None:
        others = [c for c in categories if c != naming.kind_category]
        distractors = [others[i] for i in rng.choice(len(others), size=min(4, len(others)), replace=False)]
        options = _shuffled([naming.kind_category, *distractors], rng)
        items.append(_mcq_row("category_mcq", TEMPLATES["category_mcq"], options, naming.kind_category))
    items.append(_open_row("open_common_name", TEMPLATES["open_common_name"], naming.class_name,
                           gold_set=[naming.english_name] if naming.english_name else None))
    if naming.scientific_name is not None:
        items.append(_open_row("open_scientific_name", TEMPLATES["open_scientific_name"],
                               naming.scientific_name))
    if naming.genus is not None and ask_genus:
        items.append(_open_row("open_genus", TEMPLATES["open_genus"], naming.genus))
    if naming.kind_category is not None and naming.kind_modifier:
        items.append(_open_row("open_kind_of",
                               TEMPLATES["open_kind_of"].format(category=naming.kind_category.lower()),
                               naming.kind_modifier))
    return items
