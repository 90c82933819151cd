"""Selected images → C1 items: nine questions per image (eight for reptiles) with the paper's
templates and instructions, the MCQ options and their distractors, and the difficulty tiers
(paper App. E)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.components.c1.build.options import GROUPS_WITHOUT_ORDER
from biovqa.components.c1.kernels import DEPTH_RANK
from biovqa.components.c1.prompts import (
    KINGDOM_LABEL,
    MCQ_TEMPLATE,
    NAME_TEMPLATES,
    RANK_TEMPLATES,
    RANK_WORD,
)
from biovqa.components.c1.tasks import TASK_NAMES, TASKS
from biovqa.errors import BiovqaError
from biovqa.records import TREE_RANKS
from biovqa.taxonomy.tree import RANK_DEPTH, BenchmarkTree
from biovqa.text import normalize_c1_array


def _label(kingdoms: np.ndarray) -> np.ndarray:
    return np.array([KINGDOM_LABEL.get(k, "organism") for k in kingdoms], dtype=object)


def _mcq_options(
    selected: pd.DataFrame, rng: np.random.Generator, draws: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """Gold + three distractor common names per image, drawn uniformly from the species of the
    target's class (paper §3.1), no two options equal after normalization, shuffled.

    Vectorised: ``draws`` uniform candidates per image, the first three acceptable kept; the few
    images left short (tiny classes, name collisions) fall back to a full permutation of the
    class, then of all species. Returns (n, 4) arrays of option names and option species."""
    species_table = (
        selected[["class", "species", "common_name_en"]]
        .drop_duplicates("species").sort_values("species").reset_index(drop=True)
    )
    pool_species = species_table["species"].to_numpy(dtype=object)
    pool_names = species_table["common_name_en"].to_numpy(dtype=object)
    norm = normalize_c1_array(pa.array(pool_names.tolist(), pa.string())).to_pylist()
    name_id = pd.factorize(pd.Series(norm, dtype=object))[0].astype(np.int64)
    species_id = {s: i for i, s in enumerate(pool_species)}
    class_codes, class_names = pd.factorize(species_table["class"], sort=True)
    order = np.argsort(class_codes, kind="stable")
    class_start = np.searchsorted(class_codes[order], np.arange(len(class_names)))
    class_size = np.bincount(class_codes, minlength=len(class_names))

    gold = np.array([species_id[s] for s in selected["species"]], dtype=np.int64)
    gold_name = name_id[gold]
    klass = class_codes[gold]
    n = len(gold)
    candidates = order[class_start[klass][:, None] + (rng.random((n, draws)) * class_size[klass][:, None]).astype(np.int64)]
    picks = np.full((n, 3), -1, dtype=np.int64)
    count = np.zeros(n, dtype=np.int64)
    for k in range(draws):
        candidate = candidates[:, k]
        name = name_id[candidate]
        fresh = (name != gold_name) & (count < 3)
        for j in range(3):
            fresh &= ~((picks[:, j] >= 0) & (name_id[np.maximum(picks[:, j], 0)] == name))
        rows = np.flatnonzero(fresh)
        picks[rows, count[rows]] = candidate[rows]
        count[rows] += 1
    for row in np.flatnonzero(count < 3):
        members = order[class_start[klass[row]]:class_start[klass[row]] + class_size[klass[row]]]
        used = {gold_name[row], *(name_id[p] for p in picks[row] if p >= 0)}
        for pool in (members, np.arange(len(pool_species))):
            for candidate in rng.permutation(pool):
                if count[row] == 3:
                    break
                if name_id[candidate] not in used:
                    picks[row, count[row]] = candidate
                    count[row] += 1
                    used.add(name_id[candidate])
        if count[row] < 3:
            raise BiovqaError(
                f"cannot draw three distinct distractor common names for {pool_species[gold[row]]!r}",
                hint="the selection holds fewer than four species with distinct English common names",
            )
    option_ids = np.concatenate([gold[:, None], picks], axis=1)
    option_ids = np.take_along_axis(option_ids, rng.permuted(np.tile(np.arange(4), (n, 1)), axis=1), axis=1)
    gold_names = selected["common_name_en"].to_numpy(dtype=object)
    names = pool_names[option_ids]
    # the gold option carries this image's own common-name spelling
    names[option_ids == gold[:, None]] = gold_names
    return names, pool_species[option_ids]


@dataclass(frozen=True)
class ItemColumns:
    """Item columns as arrays (one entry per question) plus the per-image context the tier
    computation needs. Kept out of pandas on purpose: 890K-row string frames cost seconds."""

    columns: dict[str, pa.Array]
    context: dict[str, np.ndarray]  # per-question object arrays the tier code reads
    task_index: np.ndarray  # question → position in TASK_NAMES
    image_index: np.ndarray  # question → row of ``selected``
    option_nodes: np.ndarray  # (n_images, 4) tree nodes of the MCQ options
    gold_position: np.ndarray  # (n_images,) which option is the gold


def _list_column(per_image: np.ndarray, image_index: np.ndarray, present: np.ndarray, value_type: pa.DataType) -> pa.Array:
    """A list<value_type> column holding ``per_image[image_index]`` where ``present``, else null."""
    rows = np.flatnonzero(present)
    width = per_image.shape[1]
    lengths = np.where(present, width, 0)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    values = pa.array(per_image[image_index[rows]].ravel().tolist(), value_type)
    return pa.ListArray.from_arrays(pa.array(offsets), values, mask=pa.array(~present))


def make_items(selected: pd.DataFrame, tree: BenchmarkTree, leaf_nodes: np.ndarray, vernacular: Any,
               seed: int) -> ItemColumns:
    """One row per question, image-grouped (tasks in Table 6 order)."""
    n = len(selected)
    has_order = ~selected["group"].isin(GROUPS_WITHOUT_ORDER).to_numpy()
    asked = np.ones((n, len(TASK_NAMES)), dtype=bool)
    asked[:, TASK_NAMES.index("order")] = has_order
    image_index, task_index = np.nonzero(asked)
    tasks = np.array(TASK_NAMES, dtype=object)[task_index]
    per_image = {c: selected[c].to_numpy(dtype=object) for c in (
        "uuid", "kingdom", *TREE_RANKS, "epithet", "common_name_en", "common_name_source", "group",
        "file", "image_sha256")}
    labels = _label(per_image["kingdom"])[image_index]

    template_rng = np.random.default_rng(seed)
    rank_pick = template_rng.integers(0, len(RANK_TEMPLATES), size=len(tasks))
    name_pick = template_rng.integers(0, len(NAME_TEMPLATES), size=len(tasks))
    options, option_species = _mcq_options(selected, np.random.default_rng(seed))
    species_leaf = dict(zip(per_image["species"].tolist(), leaf_nodes.tolist()))
    option_leaves = np.vectorize(species_leaf.__getitem__, otypes=[np.int64])(option_species)
    # options resolve like any common name (paper App. E: "MCQ distractors resolve through
    # the same index"), falling back to the species they were drawn from
    resolved = vernacular.lookup(normalize_c1_array(pa.array(options.ravel().tolist(), pa.string())))
    option_nodes = np.where(resolved >= 0, resolved, option_leaves.ravel()).reshape(options.shape)
    gold_position = np.argmax(option_species == per_image["species"][:, None], axis=1)

    gold_source = {
        "phylum": "phylum", "class": "class", "order": "order", "family": "family", "genus": "genus",
        "species": "epithet", "scientific_name": "species", "common_name": "common_name_en",
        "common_name_mcq": "common_name_en",
    }
    questions = np.empty(len(tasks), dtype=object)
    answers = np.empty(len(tasks), dtype=object)
    for task in TASK_NAMES:
        where = np.flatnonzero(task_index == TASK_NAMES.index(task))
        if not len(where):
            continue
        images_of = image_index[where]
        answers[where] = per_image[gold_source[task]][images_of]
        if task == "common_name_mcq":
            questions[where] = [
                MCQ_TEMPLATE.format(label=lab, o1=o[0], o2=o[1], o3=o[2], o4=o[3])
                for lab, o in zip(labels[where].tolist(), options[images_of].tolist())
            ]
            continue
        templates = NAME_TEMPLATES if task in ("scientific_name", "common_name") else RANK_TEMPLATES
        picks = name_pick[where] if templates is NAME_TEMPLATES else rank_pick[where]
        formatted = [t.format(rank=RANK_WORD[task], label=lab) for t in templates for lab in ("animal", "plant", "organism")]
        label_code = np.searchsorted(np.array(["animal", "organism", "plant"]), labels[where].astype(str))
        label_slot = np.array([0, 2, 1])[label_code]  # sorted order → formatted order
        questions[where] = np.asarray(formatted, dtype=object)[picks * 3 + label_slot]

    is_mcq = tasks == "common_name_mcq"
    instruction_of = pa.array([task.instruction for task in TASKS], pa.string())
    take_image = pa.array(image_index)

    def from_image(column: str) -> pa.Array:  # Arrow's take beats object-array conversion
        return pa.array(per_image[column], pa.string(), from_pandas=True).take(take_image)

    columns: dict[str, Any] = {
        "item_id": pc.binary_join_element_wise("c1", from_image("uuid"),
                                               pa.array(tasks, pa.string()), ":"),
        "component": pa.array(np.full(len(tasks), "c1", dtype=object), pa.string()),
        "task": pa.array(tasks, pa.string()),
        "question": pa.array(questions, pa.string()),
        "instruction": instruction_of.take(pa.array(task_index)),
        "options": _list_column(options, image_index, is_mcq, pa.string()),
        "answer": pa.array(answers, pa.string(), from_pandas=True),
        "image": from_image("file"),
        "image_sha256": from_image("image_sha256"),
        "source_id": from_image("uuid"),
        "group": from_image("group"),
        "kingdom": from_image("kingdom"),
        **{rank: from_image(rank) for rank in TREE_RANKS},
        "epithet": from_image("epithet"),
        "scientific_name": from_image("species"),
        "common_name": from_image("common_name_en"),
        "common_name_source": from_image("common_name_source"),
        "width": pa.array(selected["width"].to_numpy(np.int32)[image_index]),
        "height": pa.array(selected["height"].to_numpy(np.int32)[image_index]),
    }
    context = {"group": per_image["group"][image_index],
               "common_name": per_image["common_name_en"][image_index]}
    return ItemColumns(columns, context, task_index, image_index, option_nodes, gold_position)


def _attach_tiers(built: ItemColumns, tree: BenchmarkTree, image_leaves: np.ndarray,
                  vernacular: Any, prevalence_method: str) -> pa.Table:
    """Resolve each item's target node (Table 29: exact → vernacular → lineage → anchor) and
    attach the 13 difficulty columns of paper §3.1 (paper App. E)."""
    from biovqa.components.c1 import tiers as c1_tiers

    columns = built.columns
    code = built.task_index
    tasks = np.asarray(TASK_NAMES, dtype=object)[code]
    leaf = image_leaves[built.image_index].astype(np.int64)
    target = leaf.copy()
    method = np.full(len(tasks), "exact", dtype=object)
    for rank in ("phylum", "class", "order", "family", "genus"):
        rows = code == TASK_NAMES.index(rank)
        target[rows] = tree.node_at_depth(leaf[rows], RANK_DEPTH[rank])
    method[code == TASK_NAMES.index("species")] = "lineage"  # the epithet is read off the lineage
    is_mcq = code == TASK_NAMES.index("common_name_mcq")
    named_rows = np.flatnonzero(is_mcq | (code == TASK_NAMES.index("common_name")))
    common = normalize_c1_array(columns["common_name"].take(pa.array(named_rows)))
    found = vernacular.lookup(common)
    target[named_rows] = np.where(found >= 0, found, leaf[named_rows])
    method[named_rows] = np.where(found >= 0, "vernacular", "lineage")
    anchor = target < 0  # a rank the lineage lacks: fall back to the lowest lineage node
    target[anchor] = leaf[anchor]
    method[anchor] = "anchor"

    # exposure c(t) counts catalog images beneath t (Eq. 29, E.3), not selected images
    item_exposure = c1_tiers.catalog_exposure(tree)[target]
    prevalence = c1_tiers.prevalence_tiers(
        built.context["group"], tasks, target, item_exposure, tree.names[target], method=prevalence_method)

    n = len(tasks)
    mcq_rows = np.flatnonzero(is_mcq)
    images_of = built.image_index[mcq_rows]
    tiers = c1_tiers.confusability_tiers(
        tree, target[mcq_rows],
        c1_tiers.distractor_nodes(built.option_nodes[images_of], built.gold_position[images_of]))
    ndd = np.zeros(n, dtype=np.int8)
    ndd[mcq_rows] = tiers.ndd
    meet = np.full(n, None, dtype=object)
    meet[mcq_rows] = tiers.meet_rank
    confusability = np.full(n, np.nan)
    confusability[mcq_rows] = tiers.confusability
    mcq_tier = np.full(n, None, dtype=object)
    mcq_tier[mcq_rows] = tiers.tier
    unified = c1_tiers.unified_tier(tasks, prevalence.tier, mcq_tier)
    arrays = dict(columns) | {
        "target_node": pa.array(target.astype(np.int32)),
        "target_rank": pa.array(np.asarray(DEPTH_RANK, dtype=object)[tree.depth[target]], pa.string()),
        "reference_cell": pa.array(np.where(is_mcq, np.array(None, dtype=object), prevalence.reference_cell), pa.string()),
        "resolution_method": pa.array(method, pa.string()),
        "exposure": pa.array(item_exposure.astype(np.int64)),
        "log10_exposure": pa.array(c1_tiers.log10_exposure(item_exposure)),
        "prevalence_percentile": pa.array(prevalence.percentile, from_pandas=True),
        "prevalence_tier": pa.array(prevalence.tier, pa.string()),
        "ndd": pa.array(ndd, mask=~is_mcq),
        "ndd_rank": pa.array(meet, pa.string()),
        "confusability": pa.array(confusability, from_pandas=True),
        "mcq_tier": pa.array(mcq_tier, pa.string()),
        "tier": pa.array(unified, pa.string()),
        "tier_method": pa.array(np.where(is_mcq, "confusability", "prevalence"), pa.string()),
        "option_nodes": _list_column(built.option_nodes.astype(np.int32), built.image_index, is_mcq, pa.int32()),
    }
    return pa.table(arrays)
