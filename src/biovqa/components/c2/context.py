"""What scoring a C2 item needs beyond the item: the benchmark-wide context and the chance
baselines of the open families (paper App. C.4, Eqs. 2, 11, 12).

:class:`C2Context` is built from the whole benchmark (so a subsample scores every item exactly as
the full run): the part layout, the common-name → genus index of the genus lift, each open
family's distinct golds (the pool its chance sample is drawn from) and the CUB classes asked a
genus. An open item's baseline b is the mean similarity of a fixed-seed sample of 40 other golds
of its family (:func:`open_baseline_sample`); open_genus under ``genus_baseline="exact"`` uses 40
other CUB classes instead (:func:`genus_class_baseline`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.components.c2 import naming
from biovqa.components.c2.kernels import PartLayout, normalize_c2
from biovqa.components.c2.tasks import FAMILIES, FAMILY, OPEN_FAMILIES

#: Size of the open-item chance sample (paper App. C.4 (Eqs. 2, 11, 12)).
OPEN_BASELINE_SAMPLE = 40
#: Seed of the open-item chance sample (42 + stable hash of the item id).
OPEN_BASELINE_SEED = 42


@dataclass(frozen=True)
class C2Context:
    """What scoring needs beyond one item: the part layout, the common-name → genus index of the
    genus lift, and each open family's distinct gold answers (the pool of the chance baseline).
    Built from the whole benchmark, so a subsample scores every item exactly as the full run."""

    layout: PartLayout | None
    genus_index: naming.GenusIndex
    open_gold_pool: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: open_genus: one (class key, normalized genus) per CUB class asked a genus, sorted (the
    #: pool of the "exact" genus baseline)
    genus_class_pool: tuple[tuple[str, str], ...] = ()
    #: open baselines per family and gold (naming kernels ignore the sweep's settings)
    pool_similarity_cache: dict[str, dict[str, float]] = field(
        default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_items(cls, items: pa.Table, layout: PartLayout | None) -> C2Context:
        codes, _unknown = family_codes(items)
        columns = items.column_names
        pairs: list[tuple[str | None, str | None]] = []
        if "class_name" in columns and "genus" in columns:
            distinct = items.select(["class_name", "genus"]).group_by(
                ["class_name", "genus"], use_threads=False).aggregate([])
            pairs = list(zip(distinct.column("class_name").to_pylist(),
                             distinct.column("genus").to_pylist()))
        genus_index = naming.GenusIndex.from_pairs(sorted(pairs, key=lambda p: (str(p[0]), str(p[1]))))
        pool: dict[str, tuple[str, ...]] = {}
        for family in OPEN_FAMILIES:
            rows = np.flatnonzero(codes == FAMILIES.index(family))
            if len(rows) == 0:
                continue
            golds = open_gold_texts(items, rows, family)
            pool[family] = tuple(sorted({g for g in golds if g}))
        genus_rows = np.flatnonzero(codes == FAMILIES.index("open_genus"))
        class_pool: set[tuple[str, str]] = set()
        if len(genus_rows):
            keys = class_keys(items, genus_rows)
            golds = open_gold_texts(items, genus_rows, "open_genus")
            class_pool = {(k, g) for k, g in zip(keys, golds) if g}
        return cls(layout=layout, genus_index=genus_index, open_gold_pool=pool,
                   genus_class_pool=tuple(sorted(class_pool)))


def class_keys(items: pa.Table, rows: np.ndarray) -> list[str]:
    """The CUB class of each row as a string key: class_id, else class_name, else the answer."""
    take = pa.array(rows)
    n = len(rows)
    ids = items.column("class_id").take(take).to_pylist() if "class_id" in items.column_names else [None] * n
    names = items.column("class_name").take(take).to_pylist() if "class_name" in items.column_names else [None] * n
    answers = items.column("answer").take(take).to_pylist()
    return [f"id:{i}" if i is not None else f"name:{normalize_c2(c)}" if c else f"answer:{normalize_c2(a or '')}"
            for i, c, a in zip(ids, names, answers)]


def family_codes(items: pa.Table) -> tuple[np.ndarray, list[str]]:
    """Index into FAMILIES of every item (-1 for an unknown family) and the unknown names."""
    name = "family" if "family" in items.column_names else "task"
    encoded = pc.dictionary_encode(items.column(name).combine_chunks())
    names = encoded.dictionary.to_pylist()
    lookup = np.array([FAMILIES.index(f) if f in FAMILIES else -1 for f in names] or [-1], dtype=np.int64)
    index = encoded.indices.to_numpy(zero_copy_only=False)
    index = np.nan_to_num(np.asarray(index, dtype=float), nan=-1).astype(np.int64) \
        if encoded.indices.null_count else np.asarray(index, dtype=np.int64)
    codes = np.where(index >= 0, lookup[np.maximum(index, 0)], -1)
    unknown = sorted({str(f) for f, code in zip(names, lookup) if code < 0})
    if encoded.indices.null_count:
        unknown.append("None")
    return codes, unknown


def open_gold_texts(items: pa.Table, rows: np.ndarray, family: str) -> list[str]:
    """Normalized gold strings the open kernels compare against (open_kind_of: the full CUB
    common name [DEFAULT])."""
    answers = items.column("answer").take(pa.array(rows)).to_pylist()
    if family == "open_kind_of" and "class_name" in items.column_names:
        full = items.column("class_name").take(pa.array(rows)).to_pylist()
        categories = items.column("kind_category").take(pa.array(rows)).to_pylist() \
            if "kind_category" in items.column_names else [None] * len(rows)
        return [normalize_c2(f) if f else naming.complete_kind_of(a or "", c)
                for f, a, c in zip(full, answers, categories)]
    return [normalize_c2(a) for a in answers]


def stable_item_hash(item_id: str) -> int:
    """A 64-bit hash of an item id that is the same on every machine and run."""
    return int.from_bytes(hashlib.blake2b(item_id.encode("utf-8"), digest_size=8).digest(), "little")


def splitmix64(values: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer on uint64 arrays (wrapping arithmetic): a fast, well-mixed hash."""
    z = values.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        z += np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def open_baseline_sample(family: str, gold: str, pool: Sequence[str],
                         sample_size: int = OPEN_BASELINE_SAMPLE) -> list[int]:
    """Indices into the family's sorted gold pool of the open-item chance sample for ``gold``:
    the ``sample_size`` other golds with the smallest
    ``splitmix64(seed 42 ⊕ hash(family, gold), pool index)`` keys — a fixed-seed sample without
    replacement (all others when fewer exist). [DEFAULT] The sample is drawn per gold answer,
    not per item, so items that share a gold share their chance baseline (see docs)."""
    gold_index = list(pool).index(gold) if gold in pool else -1
    seed = stable_item_hash(f"{family}\x1f{gold}")
    keys = _baseline_keys(np.array([seed], dtype=np.uint64), len(pool))[0]
    order = [int(i) for i in np.argsort(keys, kind="stable") if int(i) != gold_index]
    return order[:sample_size]


def open_baseline(family: str, gold: str, context: C2Context) -> float:
    """b of an open item: mean s(d, gold) over the gold's chance sample (paper App. C.4 (Eqs. 2, 11, 12))."""
    cache = context.pool_similarity_cache.setdefault(family, {})
    if gold not in cache:
        pool = context.open_gold_pool.get(family, ())
        sample = open_baseline_sample(family, gold, pool)
        kernel = FAMILY[family].kernel
        cache[gold] = (sum(kernel(pool[d], gold, context) for d in sample)  # type: ignore[misc]
                       / len(sample)) if sample else 0.0
    return cache[gold]


def genus_class_baseline(class_key: str, gold: str, context: C2Context,
                         sample_size: int = OPEN_BASELINE_SAMPLE) -> float:
    """b of an open_genus item under ``genus_baseline="exact"``: the share of a fixed-seed
    sample of 40 *other CUB classes* (one gold each; congeneric classes included) whose genus is
    the gold genus — the chance of naming the right genus by answering another class's genus
    (paper b ≈ 0.01 on CUB; docs/c2-paper-constraints.md)."""
    cache = context.pool_similarity_cache.setdefault("open_genus:exact", {})
    key = f"{class_key}\x1f{gold}"
    if key not in cache:
        pool = context.genus_class_pool
        others = [i for i, (k, _g) in enumerate(pool) if k != class_key]
        if not others:
            cache[key] = 0.0
        else:
            seed = stable_item_hash(f"open_genus\x1f{class_key}")
            keys = _baseline_keys(np.array([seed], dtype=np.uint64), len(pool))[0]
            order = sorted(others, key=lambda i: (int(keys[i]), i))[:sample_size]
            cache[key] = sum(1.0 for i in order if pool[i][1] == gold) / len(order)
    return cache[key]


def _baseline_keys(item_hashes: np.ndarray, pool_size: int) -> np.ndarray:
    seeded = splitmix64(item_hashes.astype(np.uint64) ^ np.uint64(OPEN_BASELINE_SEED))
    columns = splitmix64(np.arange(pool_size, dtype=np.uint64))
    return splitmix64(seeded[:, None] ^ columns[None, :])
