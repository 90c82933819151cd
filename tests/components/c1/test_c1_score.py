"""End-to-end C1 scoring on small benchmark folders built with the real tree, synonym index and
vernacular index (no stand-ins)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from biovqa.components.c1.kernels import DEPTH_RANK
from biovqa.components.registry import get_component
from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.bench import open_bench
from biovqa.bench.folder import write_bench
from biovqa.records import TREE_RANKS
from biovqa.components.c1.floor import floor_answers, floor_scores
from biovqa.components.c1.score import score
from biovqa.components.c1.tasks import TASK_NAMES
from biovqa.taxonomy.index import build_index
from biovqa.taxonomy.tree import build_tree
from biovqa.taxonomy.vernacular import build_vernacular_index
from biovqa.text import normalize_c1
from fixtures.dwca import example_backbone

RANK_DEPTH = {rank: depth for depth, rank in enumerate(TREE_RANKS, start=1)}

# (image id, group, phylum, class, order, family, genus, species, common name)
IMAGES = [
    ("frog-1", "Amphibians", "Chordata", "Amphibia", "Anura", "Hylidae", "Dryophytes", "Dryophytes cinereus",
     "Green Treefrog"),
    ("frog-2", "Amphibians", "Chordata", "Amphibia", "Anura", "Hylidae", "Dryophytes", "Dryophytes cinereus",
     "Green Treefrog"),
    ("frog-3", "Amphibians", "Chordata", "Amphibia", "Anura", "Hylidae", "Dryophytes", "Dryophytes cinereus",
     "Green Treefrog"),
    ("frog-4", "Amphibians", "Chordata", "Amphibia", "Anura", "Hylidae", "Dryophytes", "Dryophytes cinereus",
     "Green Treefrog"),
    ("frog-5", "Amphibians", "Chordata", "Amphibia", "Anura", "Hylidae", "Dryophytes", "Dryophytes cinereus",
     "Green Treefrog"),
    ("frog-6", "Amphibians", "Chordata", "Amphibia", "Anura", "Hylidae", "Dryophytes", "Dryophytes gratiosus",
     "Barking Treefrog"),
    ("toad-1", "Amphibians", "Chordata", "Amphibia", "Anura", "Bufonidae", "Anaxyrus", "Anaxyrus americanus",
     "American Toad"),
    ("mouse-1", "Mammals", "Chordata", "Mammalia", "Rodentia", "Muridae", "Mus", "Mus musculus", "House Mouse"),
    ("puma-1", "Mammals", "Chordata", "Mammalia", "Carnivora", "Felidae", "Puma", "Puma concolor", "Cougar"),
    ("lizard-1", "Reptiles", "Chordata", "Squamata", None, "Lacertidae", "Zootoca", "Zootoca vivipara",
     "Viviparous Lizard"),
    ("lizard-2", "Reptiles", "Chordata", "Squamata", None, "Lacertidae", "Zootoca", "Zootoca vivipara",
     "Viviparous Lizard"),
    ("gannet-1", "Birds", "Chordata", "Aves", "Suliformes", "Sulidae", "Morus", "Morus bassanus",
     "Northern Gannet"),
    ("mulberry-1", "Angiosperms", "Tracheophyta", "Magnoliopsida", "Rosales", "Moraceae", "Morus", "Morus alba",
     "White Mulberry"),
]
COLUMNS = ["image", "group", *TREE_RANKS, "common_name"]


def make_bench(root: Path, index: Path | None) -> Path:
    """A C1 benchmark folder for IMAGES: nine (reptiles eight) questions per image, MCQ options =
    the gold and the next three distinct common names, tree and vernacular side files."""
    frame = pd.DataFrame(IMAGES, columns=COLUMNS)
    tree, leaves = build_tree(frame[list(TREE_RANKS)])
    vernacular = build_vernacular_index(frame["common_name"].tolist(), leaves, tree)
    names = list(dict.fromkeys(frame["common_name"]))
    rows = []
    for position, image in enumerate(frame.astype(object).where(frame.notna(), None).to_dict("records")):
        leaf = int(leaves[position])
        for task in TASK_NAMES:
            if task == "order" and image["order"] is None:
                continue
            options = option_nodes = None
            if task in RANK_DEPTH and task != "species":
                answer, target = image[task], int(tree.node_at_depth(np.array([leaf]), RANK_DEPTH[task])[0])
            elif task == "species":
                answer, target = image["species"].split()[1], leaf
            elif task == "scientific_name":
                answer, target = image["species"], leaf
            else:
                answer = image["common_name"]
                target = int(vernacular.lookup([normalize_c1(answer)])[0])
                if task == "common_name_mcq":
                    start = names.index(answer)
                    options = [names[(start + k) % len(names)] for k in range(4)]
                    option_nodes = [int(n) for n in vernacular.lookup([normalize_c1(o) for o in options])]
            rows.append({
                "item_id": f"{image['image']}:{task}", "component": "c1", "task": task,
                "question": f"What is the {task}?", "instruction": "", "options": options, "answer": answer,
                "image": f"{image['image']}.jpg", "image_sha256": None, "source_id": image["image"],
                "group": image["group"], **{rank: image[rank] for rank in TREE_RANKS},
                "epithet": image["species"].split()[1], "scientific_name": image["species"],
                "common_name": image["common_name"], "target_node": target,
                "target_rank": DEPTH_RANK[int(tree.depth[target])],
                "tier": "Easy" if image["group"] != "Reptiles" else "Hard",
                "option_nodes": option_nodes,
            })
    table = pa.Table.from_pylist(rows, schema=pa.schema([
        ("item_id", pa.string()), ("component", pa.string()), ("task", pa.string()), ("question", pa.string()),
        ("instruction", pa.string()), ("options", pa.list_(pa.string())), ("answer", pa.string()),
        ("image", pa.string()), ("image_sha256", pa.string()), ("source_id", pa.string()),
        ("group", pa.string()), *[(rank, pa.string()) for rank in TREE_RANKS], ("epithet", pa.string()),
        ("scientific_name", pa.string()), ("common_name", pa.string()), ("target_node", pa.int32()),
        ("target_rank", pa.string()), ("tier", pa.string()), ("option_nodes", pa.list_(pa.int32())),
    ]))
    extra = {"taxonomy_index": str(index)} if index is not None else None
    write_bench(root, table, component="c1", generator="tests", seed=0, sources={}, parameters={}, extra=extra)
    (root / "c1").mkdir(exist_ok=True)
    tree.save(root / "c1" / "tree.parquet")
    vernacular.save(root / "c1" / "vernacular.parquet")
    return root


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("c1-index")
    out = base / "index"
    build_index(example_backbone(base / "backbone"), out)
    return out


@pytest.fixture(scope="module")
def bench_path(tmp_path_factory: pytest.TempPathFactory, index: Path) -> Path:
    return make_bench(tmp_path_factory.mktemp("c1-bench") / "bench", index)


def predictions_for(bench_path: Path, replies: dict[str, str | None], *, default: str = "gold",
                    statuses: dict[str, str] | None = None) -> pa.Table:
    items = open_bench(bench_path).items
    ids = items.column("item_id").to_pylist()
    answers = items.column("answer").to_pylist()
    responses = [replies.get(i, a if default == "gold" else None) for i, a in zip(ids, answers)]
    status = [(statuses or {}).get(i, "ok") for i in ids]
    responses = [None if s != "ok" else r for r, s in zip(responses, status)]
    return pa.table({"item_id": ids, "response": pa.array(responses, pa.string()), "status": status})


def run(bench_path: Path, replies: dict[str, str | None], **options):
    bench = open_bench(bench_path)
    result = score(bench, predictions_for(bench_path, replies, statuses=options.pop("statuses", None)),
                   {"bootstrap": 50, **options})
    frame = result.items.to_pandas().set_index("item_id")
    return result, frame


TREEFROG = [
    ("frog-1", "Dryophytes cinereus", 1, 1, "exact", math.nan, 1.0),
    ("frog-2", "Hyla cinerea", 0, 1, "synonym", math.nan, 1.0),
    ("frog-3", "Dryophytes gratiosus", 0, 0, "exact", 1.0, 5 / 6),
    ("frog-4", "Anaxyrus americanus", 0, 0, "exact", 3.0, 0.5),
    ("frog-5", "Mus musculus", 0, 0, "exact", 5.0, 1 / 6),
]


@pytest.mark.parametrize(("image", "reply", "em", "em_soft", "parse_status", "severity", "wup"), TREEFROG)
def test_treefrog_through_the_scorer(bench_path: Path, image: str, reply: str, em: int, em_soft: int,
                                     parse_status: str, severity: float, wup: float) -> None:
    replies = {f"{i}:scientific_name": r for i, r, *_ in TREEFROG}
    _, frame = run(bench_path, replies)
    row = frame.loc[f"{image}:scientific_name"]
    assert (row["em"], row["em_soft"], row["parse_status"]) == (em, em_soft, parse_status)
    assert (math.isnan(severity) and pd.isna(row["severity"])) or row["severity"] == severity
    assert row["wup"] == pytest.approx(wup)
    assert row["resolved"]


def test_treefrog_severity_mean_is_three(bench_path: Path) -> None:
    result, _ = run(bench_path, {f"{i}:scientific_name": r for i, r, *_ in TREEFROG})
    block = result.summary["tasks"]["scientific_name"]
    assert block["severity"]["value"] == 3.0
    assert block["n_severity"] == 3
    assert block["revision_lag"]["value"] == pytest.approx(1 / len(IMAGES))


EM_SOFT_TABLE = [
    ("lizard-1:class", "Squamata", "Reptilia", 0, 1),
    ("lizard-2:class", "Squamata", "Crocodylia", 0, 0),
    ("puma-1:scientific_name", "Puma concolor", "Felis concolor", 0, 1),
    ("frog-2:scientific_name", "Dryophytes cinereus", "Hyla cinerea", 0, 1),
]


@pytest.mark.parametrize(("item", "gold", "reply", "em", "em_soft"), EM_SOFT_TABLE)
def test_em_soft_table(bench_path: Path, item: str, gold: str, reply: str, em: int, em_soft: int) -> None:
    _, frame = run(bench_path, {item: reply})
    assert open_bench(bench_path).items.to_pandas().set_index("item_id").loc[item, "answer"] == gold
    assert (frame.loc[item, "em"], frame.loc[item, "em_soft"]) == (em, em_soft)


def test_soft_credit_resolves_to_the_gold_node(bench_path: Path) -> None:
    _, frame = run(bench_path, {"lizard-1:class": "Reptilia"})
    row = frame.loc["lizard-1:class"]
    assert row["resolved_node"] == row["target_node"] and row["wup"] == 1 and pd.isna(row["severity"])


def test_epithet_quirk_and_bare_epithets(bench_path: Path) -> None:
    replies = {"frog-1:species": "Dryophytes cinereus", "frog-2:species": "gratiosus",
               "frog-3:species": "The species epithet is cinereus.", "frog-4:species": ""}
    _, frame = run(bench_path, replies)
    assert frame.loc["frog-1:species", "em"] == 1  # last word kept
    assert frame.loc["frog-2:species", "parse_status"] == "epithet"
    assert frame.loc["frog-2:species", "severity"] == 1.0  # Dryophytes gratiosus: same genus
    assert frame.loc["frog-3:species", "em"] == 1
    assert frame.loc["frog-4:species", "parse_status"] == "unresolved"
    _, strict = run(bench_path, replies, epithet_last_word=False)
    assert strict.loc["frog-1:species", "em"] == 0
    assert strict.loc["frog-1:species", "em_soft"] == 1  # [DEFAULT] binomials compared for EM_soft


def test_vernacular_unresolved_and_homonyms(bench_path: Path) -> None:
    replies = {"frog-1:common_name": "barking treefrog", "frog-2:common_name": "a small brown bird",
               "gannet-1:family": "Morus", "mulberry-1:family": "Morus"}
    _, frame = run(bench_path, replies)
    assert frame.loc["frog-1:common_name", "parse_status"] == "vernacular"
    assert frame.loc["frog-1:common_name", "severity"] == 1.0
    row = frame.loc["frog-2:common_name"]
    assert row["parse_status"] == "unresolved" and row["wup"] == 0 and row["lin"] == 0 and pd.isna(row["severity"])
    # the homonymous genus resolves to the node on the gold's lineage: severity 0 for both
    assert frame.loc["gannet-1:family", "severity"] == 0.0
    assert frame.loc["mulberry-1:family", "severity"] == 0.0
    assert frame.loc["gannet-1:family", "resolved_node"] != frame.loc["mulberry-1:family", "resolved_node"]


def test_mcq_option_matching(bench_path: Path) -> None:
    items = open_bench(bench_path).items.to_pandas().set_index("item_id")
    options = list(items.loc["puma-1:common_name_mcq", "options"])
    other = [o for o in options if o != "Cougar"]
    replies = {"puma-1:common_name_mcq": "I think it is the cougar.",
               "frog-6:common_name_mcq": "barking treefrog",
               "toad-1:common_name_mcq": " and ".join(list(items.loc["toad-1:common_name_mcq", "options"])[:2]),
               "mouse-1:common_name_mcq": "no idea"}
    _, frame = run(bench_path, replies)
    assert frame.loc["puma-1:common_name_mcq", "em"] == 1
    assert frame.loc["frog-6:common_name_mcq", "em"] == 1
    assert frame.loc["frog-6:common_name_mcq", "em_soft"] == 1
    assert pd.isna(frame.loc["toad-1:common_name_mcq", "mcq_choice"])  # two options named: none chosen
    assert frame.loc["toad-1:common_name_mcq", "em"] == 0
    assert frame.loc["mouse-1:common_name_mcq", "parse_status"] == "unresolved"
    _, wrong = run(bench_path, {"puma-1:common_name_mcq": other[0]})
    assert wrong.loc["puma-1:common_name_mcq", "parse_status"] == "option"
    assert wrong.loc["puma-1:common_name_mcq", "em"] == 0 and wrong.loc["puma-1:common_name_mcq", "severity"] > 0


def test_missing_and_failed_predictions_are_wrong_and_counted(bench_path: Path) -> None:
    result, frame = run(bench_path, {}, statuses={"frog-1:phylum": "failed", "frog-2:phylum": "missing"})
    assert frame["status"].value_counts().to_dict() == {"ok": len(frame) - 2, "failed": 1, "missing": 1}
    assert frame.loc["frog-1:phylum", "parse_status"] == "failed"
    assert frame.loc["frog-2:phylum", "parse_status"] == "missing"
    assert frame.loc["frog-1:phylum", "em"] == 0
    assert result.summary["tasks"]["phylum"]["unresolved"]["value"] == pytest.approx(2 / len(IMAGES))


def test_summary_shape_and_values_for_perfect_replies(bench_path: Path) -> None:
    result, frame = run(bench_path, {})
    summary = result.summary
    assert frame["em"].all() and frame["wup"].eq(1).all()
    assert set(summary["tasks"]) == set(TASK_NAMES)
    assert summary["tasks"]["order"]["n"] == len(IMAGES) - 2  # reptiles have no order question
    assert summary["pooled"]["n"] == result.items.num_rows
    assert summary["pooled"]["em"] == {"value": 1.0, "lo": 1.0, "hi": 1.0, "n": result.items.num_rows}
    assert summary["pooled"]["severity"] == {"value": None, "lo": None, "hi": None, "n": 0}
    assert summary["table3"]["phy"] == summary["tasks"]["phylum"]["em"]
    assert list(summary["table3"]) == ["phy", "cls", "ord", "fam", "gen", "spc", "sci", "com"]
    assert summary["recognition_recall"]["gap"]["value"] == 0.0
    assert summary["hierarchy"]["pooled"]["hca"]["value"] == 1.0
    assert summary["hierarchy"]["n_images"] == len(IMAGES)
    assert set(summary["groups"]) == {row[1] for row in IMAGES}
    assert set(summary["tiers"]) == {"Easy", "Hard"}
    assert summary["task_group"]["genus"]["Birds"]["n"] == 1
    assert summary["bootstrap"] == {"B": 50, "seed": 42, "confidence": 0.95, "cluster": "image (source_id)"}
    json.dumps(summary, allow_nan=True)


def test_cell_intervals_only_where_asked_and_the_same_resamples(bench_path: Path) -> None:
    """By default the group, tier and per-group hierarchy cells are point estimates (null bounds);
    ``cell_intervals`` bootstraps them too, and every other number stays the same."""
    replies = {"frog-3:species": "gratiosus", "lizard-1:family": "Colubridae", "frog-1:genus": "Hyla"}
    plain, _ = run(bench_path, replies)
    every, _ = run(bench_path, replies, cell_intervals=True)
    birds, reptiles = plain.summary["groups"]["Birds"], plain.summary["hierarchy"]["groups"]["Reptiles"]
    assert birds["em"]["lo"] is None and birds["em"]["hi"] is None and birds["em"]["value"] is not None
    assert reptiles["hca"]["lo"] is None and plain.summary["tiers"]["Easy"]["wup"]["hi"] is None
    assert every.summary["groups"]["Birds"]["em"]["lo"] is not None
    assert every.summary["hierarchy"]["groups"]["Reptiles"]["hca"]["hi"] is not None
    for section in ("tasks", "pooled", "open_pooled", "recognition_recall", "table3"):
        assert plain.summary[section] == every.summary[section], section
    assert plain.summary["hierarchy"]["pooled"] == every.summary["hierarchy"]["pooled"]
    for label, block in every.summary["groups"].items():  # same values, bounds added
        assert {k: v["value"] for k, v in block.items() if isinstance(v, dict)} == \
            {k: v["value"] for k, v in plain.summary["groups"][label].items() if isinstance(v, dict)}


def test_hierarchical_consistency_per_group(bench_path: Path) -> None:
    # lizard-1: right everywhere but family → HCA 0, leaf right; no order level for reptiles
    result, _ = run(bench_path, {"lizard-1:family": "Colubridae"})
    reptiles = result.summary["hierarchy"]["groups"]["Reptiles"]
    assert reptiles["hca"]["value"] == 0.5
    assert reptiles["acc_leaf"]["value"] == 1.0
    assert reptiles["por"]["value"] == pytest.approx((4 / 5 + 1) / 2)
    assert reptiles["spor_prefix"]["value"] == pytest.approx((2 / 5 + 1) / 2)
    assert math.isnan(reptiles["per_level"]["order"])


def test_floor_answers_score_the_floor(bench_path: Path) -> None:
    bench = open_bench(bench_path)
    answers = floor_answers(bench.items)
    replies = {i: answers[t] for i, t in zip(bench.items.column("item_id").to_pylist(),
                                             bench.items.column("task").to_pylist())}
    result, _ = run(bench_path, replies)
    floors = floor_scores(bench.items)
    for task in TASK_NAMES:
        if task == "common_name_mcq":
            continue
        assert result.summary["tasks"][task]["em"]["value"] == pytest.approx(floors[task]), task
        assert result.summary["tasks"][task]["headroom"]["value"] == pytest.approx(0.0, abs=1e-12)


def test_deterministic(bench_path: Path) -> None:
    replies = {f"{i}:scientific_name": r for i, r, *_ in TREEFROG}
    first, _ = run(bench_path, replies)
    second, _ = run(bench_path, replies)
    assert json.dumps(first.summary, sort_keys=True) == json.dumps(second.summary, sort_keys=True)
    assert first.items.equals(second.items)


def test_missing_synonym_index_is_an_error(tmp_path: Path) -> None:
    bench_path = make_bench(tmp_path / "bench", None)
    bench = open_bench(bench_path)
    with pytest.raises(MissingResourceError) as error:
        score(bench, predictions_for(bench_path, {}), {"bootstrap": 10})
    assert "taxonomy" in str(error.value)
    with pytest.raises(MissingResourceError):
        score(bench, predictions_for(bench_path, {}), {"bootstrap": 10, "backbone": tmp_path / "nowhere"})


def test_predictions_in_any_order_score_alike_and_a_short_table_is_refused(bench_path: Path, tmp_path: Path) -> None:
    """The pipeline aligns the replies (and checks ids and statuses once, naming the file's rows);
    the scorer takes them aligned and refuses a table of the wrong length."""
    from biovqa.bench.folder import write_parquet
    from biovqa.scoring.pipeline import score_predictions

    predictions = predictions_for(bench_path, {"frog-1:genus": "Hyla", "lizard-1:family": "Colubridae"})
    order = list(range(predictions.num_rows))[::-1]
    write_parquet(predictions, tmp_path / "in-order.parquet")
    write_parquet(predictions.take(order), tmp_path / "reversed.parquet")
    outs = [score_predictions(bench_path, tmp_path / f"{name}.parquet", tmp_path / name, options={"bootstrap": 10})
            for name in ("in-order", "reversed")]
    first, second = (pq.read_table(out / "items.parquet") for out in outs)
    assert first.equals(second)
    assert json.loads((outs[0] / "summary.json").read_text())["tasks"] == \
        json.loads((outs[1] / "summary.json").read_text())["tasks"]
    with pytest.raises(InputFormatError, match="predictions have"):
        score(open_bench(bench_path), predictions.slice(1), {"bootstrap": 10})


def test_registered_scorer_runs_on_the_built_demo_benchmark(demo_bench: Path) -> None:
    from biovqa.components.c1.floor import floor_responses

    bench = open_bench(demo_bench)
    scorer = get_component("c1").load("scorer")
    replies = floor_responses(bench.items)
    predictions = pa.table({"item_id": bench.items.column("item_id"), "response": replies,
                            "status": ["ok"] * bench.items.num_rows})
    result = scorer(bench, predictions, {"bootstrap": 20})
    floors = floor_scores(bench.items)
    for task in ("phylum", "class", "genus", "scientific_name", "common_name_mcq"):
        assert result.summary["tasks"][task]["em"]["value"] == pytest.approx(floors[task])
        assert result.summary["tasks"][task]["floor"] == pytest.approx(floors[task])
    assert result.items.num_rows == bench.items.num_rows
    assert {"tier", "exposure", "prevalence_tier"} <= set(result.items.column_names)


REPLY_POOL = ["Chordata", "Amphibia", "Reptilia", "Hyla cinerea", "Felis concolor", "Dryophytes", "gratiosus",
              "cinereus", "Barking Treefrog", "Cougar", "Morus", "Mus musculus", "a small brown bird", "",
              "The family is Hylidae.", "Puma concolor", "Squamata", "Crocodylia", "White Mulberry"]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(REPLY_POOL), min_size=len(IMAGES) * 9, max_size=len(IMAGES) * 9))
def test_invariants_for_any_replies(bench_path: Path, pool: list[str]) -> None:
    ids = open_bench(bench_path).items.column("item_id").to_pylist()
    _, frame = run(bench_path, dict(zip(ids, pool)), bootstrap=1)
    assert (frame["em"] <= frame["em_soft"]).all()
    assert frame["wup"].between(0, 1).all() and frame["lin"].between(0, 1).all()
    on_gold = frame["resolved_node"] == frame["target_node"]
    assert (frame.loc[on_gold, "wup"] == 1).all() and (frame.loc[on_gold, "lin"] == 1).all()
    expect_severity = frame["resolved"] & (frame["em_soft"] == 0)
    assert (frame["severity"].notna() == expect_severity).all()
    assert (frame.loc[~frame["resolved"], "wup"] == 0).all()
    assert frame["severity"].dropna().between(0, 6).all()
