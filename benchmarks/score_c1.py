"""Benchmark: score a C1 benchmark of the real size (890 000 items over 100 000 images).

Builds, in a temporary folder, a synthetic C1 benchmark folder (tree of ~626 families / 2 311
genera / 3 403 species, 10 groups × 10 000 images, nine questions per image, eight for reptiles),
a GBIF Backbone excerpt with synonyms (including the pro-parte "Reptilia") indexed by
``biovqa.taxonomy.index.build_index``, and synthetic replies: gold answers with boilerplate, synonyms,
wrong names at the asked and at other ranks, vernacular names, bare epithets, unresolvable strings,
missing and failed predictions. Then:

1. scores it with ``biovqa.components.c1.score.score`` (reading the items, the tree, the vernacular and
   synonym indexes, per-item scores, all aggregates and the B = 1000 image bootstrap);
2. scores it with a plain per-item Python reference of the same rules (scalar normalizer, dict
   lookups, parent-pointer LCA; point aggregates only, no bootstrap);
3. asserts the two agree on every item and on every per-task mean, and prints both times.

    python benchmarks/score_c1.py                 # full size
    python benchmarks/score_c1.py --images 20000  # quicker
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

# One BLAS thread: on a shared 2-core machine a second OpenBLAS thread spin-waits on a busy core and
# makes the bootstrap's matrix products ~10× slower (measured); set it before NumPy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pandas as pd
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the Backbone writer of the test fixtures

from biovqa.components.c1.tasks import ASKED_DEPTH
from biovqa.components.c1.kernels import DEPTH_RANK
from biovqa.components.c1.tiers import (
    confusability_tiers,
    distractor_nodes,
    exposure_counts,
    prevalence_tiers,
    unified_tier,
)
from biovqa.bench import open_bench
from biovqa.bench.folder import write_bench
from biovqa.records import TREE_RANKS
from biovqa.components.c1.score import score
from biovqa.components.c1.tasks import TASK_NAMES as TASKS
from biovqa.taxonomy.index import TaxonomyIndex, build_index
from biovqa.taxonomy.tree import BenchmarkTree, build_tree
from biovqa.taxonomy.vernacular import VernacularIndex, build_vernacular_index
from biovqa.text import normalize_c1
from fixtures.dwca import taxon, write_backbone

GROUPS = [  # group, kingdom, phylum, classes, has order
    ("Amphibians", "Animalia", "Chordata", ["Amphibia"], True),
    ("Angiosperms", "Plantae", "Tracheophyta", ["Magnoliopsida", "Liliopsida"], True),
    ("Arachnids", "Animalia", "Arthropoda", ["Arachnida"], True),
    ("Birds", "Animalia", "Chordata", ["Aves"], True),
    ("Bryophytes", "Plantae", "Bryophyta", ["Bryopsida", "Sphagnopsida"], True),
    ("Fish", "Animalia", "Chordata", ["Actinopterygii", "Elasmobranchii"], True),
    ("Gymnosperms", "Plantae", "Tracheophyta", ["Pinopsida"], True),
    ("Insects", "Animalia", "Arthropoda", ["Insecta"], True),
    ("Mammals", "Animalia", "Chordata", ["Mammalia"], True),
    ("Reptiles", "Animalia", "Chordata", ["Squamata", "Testudines", "Crocodylia"], False),
]
N_FAMILIES, N_GENERA, N_SPECIES = 626, 2311, 3403
SYLLABLES = ["ba", "ca", "da", "fa", "ga", "la", "ma", "na", "pa", "ra", "sa", "ta", "va", "xa", "ze", "mi", "lo", "nu", "ri", "so", "ti", "vo"]
ADJECTIVES = ["red", "blue", "green", "common", "eastern", "western", "northern", "southern", "great", "little", "black", "white", "golden", "spotted", "striped", "brown", "grey", "yellow", "silver", "long", "short", "broad", "slender", "tufted", "crested"]
NOUNS = ["frog", "toad", "lily", "oak", "spider", "hawk", "moss", "trout", "shark", "pine", "beetle", "deer", "lizard", "turtle", "fern", "owl", "finch"]
JUNK = ["a small brown bird", "I cannot tell from this image", "unknown", "", "some kind of plant"]


def word(index: int, length: int = 3) -> str:
    parts = []
    for _ in range(length):
        parts.append(SYLLABLES[index % len(SYLLABLES)])
        index //= len(SYLLABLES)
    return "".join(parts)


def synthetic_lineages(rng: np.random.Generator) -> pd.DataFrame:
    """One row per species: group, kingdom, phylum … species (binomial), common name."""
    n_groups = len(GROUPS)
    family_group = np.sort(np.arange(N_FAMILIES) % n_groups)
    genus_family = np.sort(np.concatenate([np.arange(N_FAMILIES), rng.integers(0, N_FAMILIES, N_GENERA - N_FAMILIES)]))
    species_genus = np.sort(np.concatenate([np.arange(N_GENERA), rng.integers(0, N_GENERA, N_SPECIES - N_GENERA)]))
    rows = []
    for s, genus in enumerate(species_genus):
        family = genus_family[genus]
        group, kingdom, phylum, classes, has_order = GROUPS[family_group[family]]
        klass = classes[family % len(classes)]
        order = f"{word(family // 4 + 500).capitalize()}ales" if has_order else None
        genus_name = f"{word(genus + 1000).capitalize()}us"
        epithet = word(int(rng.integers(0, 700)) + 3000, 2) + "ensis"
        common = f"{ADJECTIVES[s % len(ADJECTIVES)]} {word(s + 7000, 2)} {NOUNS[family % len(NOUNS)]}"
        if s % 10 == 1 and species_genus[s - 1] == genus:  # some congeners share a common name
            common = rows[-1]["common_name"]
        rows.append({"group": group, "kingdom": kingdom, "phylum": phylum, "class": klass, "order": order,
                     "family": f"{word(family + 2000).capitalize()}idae", "genus": genus_name,
                     "species": f"{genus_name} {epithet}", "epithet": epithet, "common_name": common})
    return pd.DataFrame(rows).drop_duplicates("species").reset_index(drop=True)


def backbone_rows(species: pd.DataFrame, rng: np.random.Generator) -> tuple[list[dict], dict[str, str]]:
    """Accepted taxa for every tree node, plus synonyms: 15% of species get an old binomial, 5% of
    genera an old genus name, and "Reptilia" is a pro-parte synonym of the reptile classes."""
    rows, ids, synonym_of = [], {}, {}
    next_id = iter(range(1, 10**7))
    for _, row in species.iterrows():
        parent = None
        lineage = {"kingdom": row["kingdom"]}
        for rank in ("kingdom", *TREE_RANKS):
            name = row[rank]
            if pd.isna(name):
                continue
            if rank != "kingdom":
                lineage[rank] = name
            key = (rank, name)
            if key not in ids:
                ids[key] = next(next_id)
                rows.append(taxon(ids[key], name, rank, parent=parent,
                                  lineage={k: v for k, v in lineage.items() if k != "species"}))
            parent = ids[key]
    for _, row in species.iterrows():
        if rng.random() < 0.15:
            old = f"{word(int(rng.integers(0, 5000)) + 9000).capitalize()}a {row['epithet']}"
            rows.append(taxon(next(next_id), old, "species", accepted=ids[("species", row["species"])],
                              status="synonym"))
            synonym_of[row["species"]] = old
    for genus in sorted(species["genus"].unique()):
        if rng.random() < 0.05:
            old = f"{word(int(rng.integers(0, 5000)) + 20000).capitalize()}ia"
            rows.append(taxon(next(next_id), old, "genus", accepted=ids[("genus", genus)], status="synonym"))
            synonym_of[genus] = old
    for klass in ("Squamata", "Testudines", "Crocodylia"):
        rows.append(taxon(next(next_id), "Reptilia", "class", accepted=ids[("class", klass)],
                          status="proparte synonym"))
        synonym_of[klass] = "Reptilia"
    return rows, synonym_of


def make_benchmark(folder: Path, n_images: int, seed: int = 7) -> Path:
    rng = np.random.default_rng(seed)
    species = synthetic_lineages(rng)
    rows, synonym_of = backbone_rows(species, rng)
    index_path = folder / "index"
    build_index(write_backbone(folder / "backbone", rows), index_path)

    tree, species_nodes = build_tree(species[list(TREE_RANKS)])
    # images: Zipf-like species frequencies within each group
    images = []
    per_group = n_images // len(GROUPS)
    for group, *_ in GROUPS:
        members = np.flatnonzero(species["group"].to_numpy() == group)
        weights = 1.0 / np.arange(1, len(members) + 1) ** 0.9
        picks = rng.choice(members, size=per_group, p=weights / weights.sum())
        images.extend(picks.tolist())
    images = np.asarray(images)
    image_species = species.iloc[images].reset_index(drop=True)
    image_leaf = species_nodes[images]
    vernacular = build_vernacular_index(image_species["common_name"].tolist(), image_leaf, tree)
    names = sorted(image_species["common_name"].unique())

    item_rows = []
    for i, row in enumerate(image_species.itertuples(index=False)):
        image = f"img{i:06d}"
        for task in TASKS:
            if task == "order" and pd.isna(row.order):
                continue
            item_rows.append((image, i, task))
    frame = pd.DataFrame(item_rows, columns=["source_id", "image_row", "task"])
    lineage = image_species.iloc[frame["image_row"].to_numpy()].reset_index(drop=True)
    leaf = image_leaf[frame["image_row"].to_numpy()]
    tasks = frame["task"].to_numpy(object)
    answer = np.empty(len(frame), dtype=object)
    target = leaf.astype(np.int64).copy()
    for task in TASKS:
        rows_t = tasks == task
        if task in ("phylum", "class", "order", "family", "genus"):
            answer[rows_t] = lineage.loc[rows_t, task].to_numpy(object)
            target[rows_t] = tree.node_at_depth(leaf[rows_t], ASKED_DEPTH[task])
        elif task == "species":
            answer[rows_t] = lineage.loc[rows_t, "epithet"].to_numpy(object)
        elif task == "scientific_name":
            answer[rows_t] = lineage.loc[rows_t, "species"].to_numpy(object)
        else:
            answer[rows_t] = lineage.loc[rows_t, "common_name"].to_numpy(object)
            found = vernacular.lookup([normalize_c1(a) for a in answer[rows_t]])
            target[rows_t] = np.where(found >= 0, found, leaf[rows_t])
    # MCQ options: gold + three other common names of the same class, shuffled
    mcq = np.flatnonzero(tasks == "common_name_mcq")
    by_class = {k: sorted(g["common_name"].unique()) for k, g in image_species.groupby("class")}
    options: list[list[str] | None] = [None] * len(frame)
    option_nodes: list[list[int] | None] = [None] * len(frame)
    gold_position = np.zeros(len(mcq), dtype=np.int64)
    for k, r in enumerate(mcq):
        pool = [n for n in by_class[lineage.at[r, "class"]] if n != answer[r]]
        if len(pool) < 3:
            pool = [n for n in names if n != answer[r]]
        picks = [pool[j] for j in rng.choice(len(pool), size=3, replace=False)]
        opts = [answer[r], *picks]
        order = rng.permutation(4)
        options[r] = [opts[j] for j in order]
        gold_position[k] = int(np.argmin(order))
        option_nodes[r] = [int(n) for n in vernacular.lookup([normalize_c1(o) for o in options[r]])]
    exposure = exposure_counts(tree, image_leaf)
    prevalence = prevalence_tiers(lineage["group"].to_numpy(object), tasks, target, exposure[target],
                                  tree.names[target])
    mcq_tier = np.full(len(frame), None, dtype=object)
    confusability = confusability_tiers(tree, target[mcq], distractor_nodes(np.array([option_nodes[r] for r in mcq]),
                                                                            gold_position))
    mcq_tier[mcq] = confusability.tier
    items = pa.table({
        "item_id": frame["source_id"] + ":" + frame["task"],
        "component": pa.array(["c1"] * len(frame)),
        "task": tasks,
        "question": pa.array(["What is it?"] * len(frame)),
        "instruction": pa.array([""] * len(frame)),
        "options": pa.array(options, pa.list_(pa.string())),
        "answer": answer,
        "image": frame["source_id"] + ".jpg",
        "image_sha256": pa.nulls(len(frame), pa.string()),
        "source_id": frame["source_id"],
        "group": lineage["group"],
        **{rank: lineage[rank] for rank in TREE_RANKS},
        "epithet": lineage["epithet"],
        "scientific_name": lineage["species"],
        "common_name": lineage["common_name"],
        "target_node": pa.array(target, pa.int32()),
        "target_rank": np.asarray(DEPTH_RANK, dtype=object)[tree.depth[target]],
        "exposure": exposure[target],
        "prevalence_tier": prevalence.tier,
        "mcq_tier": mcq_tier,
        "tier": unified_tier(tasks, prevalence.tier, mcq_tier),
        "option_nodes": pa.array(option_nodes, pa.list_(pa.int32())),
    })
    bench_path = folder / "bench"
    write_bench(bench_path, items, component="c1", generator="benchmarks/score_c1.py", seed=seed, sources={},
                parameters={}, extra={"taxonomy_index": str(index_path)})
    (bench_path / "c1").mkdir(exist_ok=True)
    tree.save(bench_path / "c1" / "tree.parquet")
    vernacular.save(bench_path / "c1" / "vernacular.parquet")
    write_replies(folder, items, lineage, synonym_of, names, rng)
    return bench_path


def write_replies(folder: Path, items: pa.Table, lineage: pd.DataFrame, synonym_of: dict[str, str],
                  common_names: list[str], rng: np.random.Generator) -> None:
    tasks = items.column("task").to_numpy(zero_copy_only=False)
    answers = items.column("answer").to_numpy(zero_copy_only=False)
    options = items.column("options").to_pylist()
    by_rank = {rank: sorted(lineage[rank].dropna().unique()) for rank in TREE_RANKS}
    epithets = sorted(lineage["epithet"].unique())
    draws = rng.random(len(tasks))
    picks = rng.integers(0, 1 << 30, len(tasks))
    replies: list[str | None] = []
    statuses: list[str] = []
    for i, (task, gold, u, pick) in enumerate(zip(tasks, answers, draws, picks)):
        status, reply = "ok", None
        if u > 0.97:
            status = "failed"
        elif u > 0.94:
            status = "missing"
        elif task == "common_name_mcq":
            opts = options[i]
            reply = (gold if u < 0.55 else opts[pick % 4] if u < 0.85 else f"I think it is the {opts[pick % 4]}."
                     if u < 0.9 else JUNK[pick % len(JUNK)])
        elif u < 0.40:
            reply = gold if pick % 3 else f"The {task.replace('_', ' ')} is {gold}."
        elif u < 0.48:
            key = lineage.at[i, "species"] if task in ("species", "scientific_name") else gold
            reply = synonym_of.get(key, gold.lower())
        elif u < 0.75:
            if task in ("common_name",):
                reply = common_names[pick % len(common_names)]
            elif task == "species":
                reply = epithets[pick % len(epithets)]
            else:
                rank = "species" if task == "scientific_name" else task
                reply = by_rank[rank][pick % len(by_rank[rank])]
        elif u < 0.82:
            rank = TREE_RANKS[pick % 6]
            reply = by_rank[rank][(pick // 7) % len(by_rank[rank])]
        elif u < 0.88:
            reply = common_names[pick % len(common_names)]
        else:
            reply = JUNK[pick % len(JUNK)]
        replies.append(reply)
        statuses.append(status)
    pa_table = pa.table({"item_id": items.column("item_id"), "response": pa.array(replies, pa.string()),
                         "status": pa.array(statuses, pa.string())})
    import pyarrow.parquet as pq

    pq.write_table(pa_table, folder / "predictions.parquet")


# ------------------------------------------------------------------------------------------------
# the plain reference


def reference_scores(bench_path: Path, predictions: pa.Table, epithet_last_word: bool = True) -> pd.DataFrame:
    """The C1 per-item rules, one item at a time in plain Python."""
    bench = open_bench(bench_path)
    tree = BenchmarkTree.load(bench_path / "c1" / "tree.parquet")
    parent = tree.parent.tolist()
    depth = tree.depth.tolist()
    n_total = tree.subtree_size[0]
    ic = [0.0 if s == n_total else -math.log(s / n_total) for s in tree.subtree_size.tolist()]
    name_nodes: dict[str, list[int]] = {}
    for node, name in enumerate(tree.names.tolist()):
        if node:
            name_nodes.setdefault(normalize_c1(name), []).append(node)
    vernacular_index = VernacularIndex.load(bench_path / "c1" / "vernacular.parquet")
    vernacular = dict(zip(vernacular_index.names.tolist(), vernacular_index.nodes.tolist()))
    relation = TaxonomyIndex.open(bench.manifest["taxonomy_index"]).names
    synonyms: dict[str, set[str]] = {}
    for name, accepted in zip(relation.column("name").to_pylist(), relation.column("accepted_name").to_pylist()):
        synonyms.setdefault(name, set()).add(normalize_c1(accepted))

    def ancestors(node: int) -> list[int]:
        path = []
        while node != -1:
            path.append(node)
            node = parent[node]
        return path

    def lca(a: int, b: int) -> int:
        seen = set(ancestors(a))
        while b not in seen:
            b = parent[b]
        return b

    def choose(candidates: list[int], gold: int, asked: int) -> int:
        gold_path = set(ancestors(gold))

        def key(node: int) -> tuple[bool, bool, int]:
            on_lineage = node in gold_path or gold in ancestors(node)
            return (not on_lineage, depth[node] != asked, node)

        return min(candidates, key=key)

    out = []
    items = bench.items.to_pylist()
    replies = predictions.column("response").to_pylist()
    statuses = predictions.column("status").to_pylist()
    for item, reply, status in zip(items, replies, statuses):
        task, gold_node = item["task"], item["target_node"]
        asked = ASKED_DEPTH.get(task, -1)
        answered = status == "ok" and reply is not None
        text = reply if answered else ""
        if task == "species" and epithet_last_word:
            words = text.split()
            text = words[-1] if words else ""
        parsed, gold = normalize_c1(text), normalize_c1(item["answer"])
        choice = -1
        if task == "common_name_mcq":
            keys = [normalize_c1(o) for o in item["options"]]

            def pick(value: str, keys: list[str] = keys) -> int:
                if value in keys:
                    return keys.index(value)
                inside = [j for j, k in enumerate(keys) if k and value and k in value]
                return inside[0] if len(inside) == 1 else -1

            choice = pick(parsed) if answered else -1
            em = choice >= 0 and choice == pick(gold)
            em_soft = em
        else:
            em = answered and parsed == gold
            candidate = parsed
            if task == "species" and answered and parsed and " " not in parsed:
                candidate = f"{normalize_c1(item['genus'])} {parsed}"
            gold_key = normalize_c1(item["species"]) if task == "species" else gold
            em_soft = em or (answered and gold_key in synonyms.get(candidate, ()))
        one_word = task == "species" and answered and bool(parsed) and " " not in parsed
        resolved, resolution = -1, ("unresolved" if answered else ("failed" if status == "failed" else "missing"))
        if em_soft:
            resolved, resolution = gold_node, ("exact" if em else "synonym")
        elif answered and parsed:
            steps = []
            if choice >= 0 and item["option_nodes"] is not None and item["option_nodes"][choice] >= 0:
                steps.append(([item["option_nodes"][choice]], "option"))
            if one_word:
                steps.append((name_nodes.get(candidate, []), "epithet"))
            steps.append((name_nodes.get(parsed, []), "exact"))
            if one_word:
                steps.append(([n for a in synonyms.get(candidate, ()) for n in name_nodes.get(a, [])], "epithet"))
            steps.append(([n for a in synonyms.get(parsed, ()) for n in name_nodes.get(a, [])], "synonym"))
            steps.append(([vernacular[parsed]] if parsed in vernacular else [], "vernacular"))
            for candidates, label in steps:
                if candidates:
                    resolved, resolution = choose(candidates, gold_node, asked), label
                    break
        if resolved >= 0:
            meet = lca(resolved, gold_node)
            if resolved == gold_node:
                wup = lin = 1.0
            else:
                total_depth = depth[resolved] + depth[gold_node]
                wup = 2 * depth[meet] / total_depth if total_depth else 0.0
                total_ic = ic[resolved] + ic[gold_node]
                lin = 2 * ic[meet] / total_ic if total_ic else 0.0
            severity = float(depth[gold_node] - depth[meet]) if not em_soft else math.nan
        else:
            wup = lin = 0.0
            severity = math.nan
        out.append((item["item_id"], task, int(em), int(em_soft), resolution, resolved, severity, wup, lin, choice))
    return pd.DataFrame(out, columns=["item_id", "task", "em", "em_soft", "parse_status", "resolved_node", "severity",
                                      "wup", "lin", "mcq_choice"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=100_000)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--keep", type=Path, default=None, help="build here instead of a temporary folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        bench_path = folder / "bench"
        if not (bench_path / "items.parquet").exists():
            bench_path = make_benchmark(folder, args.images)
        import pyarrow.parquet as pq

        predictions = pq.read_table(folder / "predictions.parquet")
        print(f"synthetic benchmark ready in {time.perf_counter() - started:.1f} s")

        timings, cpu = {}, {}
        for B in (1, args.bootstrap):
            bench = open_bench(bench_path)  # fresh: reading the items is timed too
            started, started_cpu = time.perf_counter(), time.process_time()
            result = score(bench, predictions, {"bootstrap": B})
            timings[B] = time.perf_counter() - started
            cpu[B] = time.process_time() - started_cpu
        n_items = result.items.num_rows
        tree = BenchmarkTree.load(bench_path / "c1" / "tree.parquet")
        print(f"{n_items:,} items, {result.summary['n_images']:,} images; tree {tree.n_nodes:,} nodes "
              f"({int((tree.depth == 4).sum())} families, {int((tree.depth == 5).sum())} genera, "
              f"{int((tree.depth == 6).sum())} species)")
        print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        for B, seconds in timings.items():
            print(f"vectorised scorer, B={B} bootstrap: {seconds:6.2f} s wall, {cpu[B]:6.2f} s CPU")

        started, started_cpu = time.perf_counter(), time.process_time()
        reference = reference_scores(bench_path, predictions)
        reference_means = reference.groupby("task")[["em", "em_soft", "wup", "lin"]].mean()
        reference_severity = reference.groupby("task")["severity"].mean()
        reference_seconds = time.perf_counter() - started
        reference_cpu = time.process_time() - started_cpu
        print(f"plain per-item reference (no bootstrap): {reference_seconds:6.2f} s wall, {reference_cpu:6.2f} s CPU")

        ours = result.items.to_pandas()
        for column in ("item_id", "em", "em_soft", "parse_status"):
            mismatch = np.flatnonzero(ours[column].to_numpy() != reference[column].to_numpy())
            assert not len(mismatch), (column, ours.iloc[mismatch[:3]].to_dict("records"),
                                       reference.iloc[mismatch[:3]].to_dict("records"))
        assert (ours["resolved_node"].fillna(-1).astype(int).to_numpy() == reference["resolved_node"].to_numpy()).all()
        assert (ours["mcq_choice"].fillna(-1).astype(int).to_numpy() == reference["mcq_choice"].to_numpy()).all()
        np.testing.assert_allclose(ours["severity"].to_numpy(float), reference["severity"].to_numpy(float),
                                   equal_nan=True)
        np.testing.assert_allclose(ours["wup"], reference["wup"], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(ours["lin"], reference["lin"], rtol=1e-12, atol=1e-12)
        for task, block in result.summary["tasks"].items():
            for metric in ("em", "em_soft", "wup", "lin"):
                assert math.isclose(block[metric]["value"], reference_means.at[task, metric], rel_tol=1e-9)
            assert math.isclose(block["severity"]["value"], reference_severity[task], rel_tol=1e-9)
        print(f"all {n_items:,} items and every per-task mean agree")
        shares = ours["parse_status"].value_counts(normalize=True).round(3).to_dict()
        print(f"parse status mix: {shares}")
        for B, seconds in timings.items():
            print(f"speed-up vs reference (B={B}): {reference_seconds / seconds:5.1f}× wall, "
                  f"{reference_cpu / cpu[B]:5.1f}× CPU")
        # Like for like: the reference computes per-item quantities and per-type point means only;
        # time the same work on our side (per-item rules, the item table, per-type means).
        started, started_cpu = time.perf_counter(), time.process_time()
        per_item = per_item_scores(bench_path, predictions)
        like_seconds = time.perf_counter() - started
        like_cpu = time.process_time() - started_cpu
        assert per_item.equals(result.items)
        print(f"per-item quantities + per-type means only: {like_seconds:6.2f} s wall, {like_cpu:6.2f} s CPU "
              f"→ {reference_seconds / like_seconds:5.1f}× wall, {reference_cpu / like_cpu:5.1f}× CPU vs the reference")


def per_item_scores(bench_path: Path, predictions: pa.Table) -> pa.Table:
    """The scorer's per-item part (the same functions ``score`` calls) plus per-type means."""
    from biovqa.components.c1 import score as scorer

    bench = open_bench(bench_path)
    settings = scorer.resolved_options()
    tree, synonyms, vernacular, _ = scorer.load_resources(bench, None)
    items = scorer._scoring_columns(bench)
    task_index = scorer._check_items(items, None)
    replies, status = scorer._check_predictions(items, predictions)
    target = items.column("target_node").to_numpy(zero_copy_only=False).astype(np.int64)
    is_mcq = task_index == TASKS.index(scorer.MCQ_TASK)
    mcq_options, mcq_option_nodes = scorer._mcq_arrays(items, is_mcq, None)
    ok, failed = scorer.SCORE_STATUSES.index("ok"), scorer.SCORE_STATUSES.index("failed")
    result = scorer.score_replies(
        task_index=task_index, task_names=TASKS, answers=items.column("answer"), genera=items.column("genus"),
        binomials=items.column("species"), target_nodes=target, replies=replies, answered=status == ok,
        failed=status == failed, mcq_options=mcq_options, mcq_option_nodes=mcq_option_nodes, tree=tree,
        synonyms=synonyms, vernacular=vernacular, epithet_last_word=settings.epithet_last_word)
    counts = np.bincount(task_index, minlength=len(TASKS))
    for values in (result.em, result.em_soft, result.wup, result.lin):
        np.bincount(task_index, weights=np.asarray(values, dtype=np.float64), minlength=len(TASKS)) / counts
    return scorer._item_table(items, predictions, result)


if __name__ == "__main__":
    main()
