"""Paper numbers reproduced through the public path: build a benchmark, write predictions files,
``score_predictions``, then the report tables and ``write_report``.

The benchmark mirrors the paper's C1 at a tenth of its size: 10 organismal groups × 1 000 images,
9 questions per image except order (Reptiles have no order), so 10 000 items per question type
and 9 000 at order (the paper: 100 000 and 90 000). Every printed 3-decimal EM is then an exact
hit count (EM × 10 000, EM × 9 000). A model's predictions answer the gold on exactly that many
items of each type and "no idea" on the rest. Expected values are the paper's printed numbers
(results.md §3, metrics.md §2.9, hierarchy.md §6), never recomputed here.
"""

from __future__ import annotations

import math
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from biovqa.bench import open_bench
from biovqa.components.c1.report import tables
from biovqa.reporting import write_report
from biovqa.scoring.pipeline import load_summary, score_predictions

pytestmark = pytest.mark.slow

PER_GROUP = 1_000
TASKS = ("phylum", "class", "order", "family", "genus", "species", "scientific_name", "common_name",
         "common_name_mcq")
WRONG = "no idea"

# results.md §3.3 (paper Table 72): EM per question type, phy cls ord fam gen spc sci com mcq
TABLE72 = {
    "BioCLIP-2 (kingdom)": (.985, .871, .816, .772, .691, .547, .546, .502, .966),
    "BioCLIP-2 (tol)": (.925, .874, .821, .775, .691, .545, .544, .500, .966),
    "Qwen3-VL-30B-A3B": (.864, .731, .757, .612, .417, .072, .221, .107, .772),
    "Qwen3-VL-32B": (.831, .615, .712, .612, .444, .066, .244, .078, .809),
    "Qwen3-VL-8B": (.887, .680, .720, .589, .406, .046, .202, .065, .775),
    "InternVL3-38B": (.911, .683, .638, .484, .355, .054, .189, .044, .752),
    "Qwen2.5-VL-7B": (.763, .504, .673, .541, .420, .047, .269, .062, .753),
    "Gemma-3-12B": (.790, .688, .626, .429, .225, .048, .093, .047, .687),
    "InternVL3.5-38B": (.746, .636, .624, .363, .271, .038, .128, .025, .707),
    "Gemma-4-12B": (.880, .686, .578, .363, .183, .021, .065, .043, .657),
    "InternVL3-8B": (.827, .497, .478, .322, .262, .032, .124, .020, .643),
    "Qwen2.5-VL-3B": (.416, .457, .477, .454, .358, .040, .206, .064, .689),
    "Llama-3.2-Vision": (.545, .482, .518, .434, .234, .031, .104, .054, .655),
    "InternVL3.5-8B": (.819, .531, .421, .266, .191, .023, .077, .015, .595),
    "Molmo2-8B": (.823, .563, .469, .286, .137, .021, .038, .016, .574),
    "Pixtral-12B": (.688, .501, .530, .349, .187, .029, .079, .027, .592),
    "InternVL3.5-30B-A3B": (.486, .469, .545, .310, .240, .034, .118, .024, .653),
    "Phi-3.5-Vision": (.748, .359, .267, .191, .066, .013, .023, .009, .443),
    "LLaVA-NeXT-Mistral": (.364, .392, .408, .162, .029, .005, .015, .004, .465),
    "LLaVA-NeXT-Vicuna": (.662, .343, .290, .100, .028, .003, .015, .003, .382),
}
SPECIALISTS = ("BioCLIP-2 (kingdom)", "BioCLIP-2 (tol)")

# results.md §3.2 (paper Table 19): rank, EM_20cfg, step_20cfg, EM_18vlm, step_18vlm, gap
TABLE19 = [
    ("phylum", .748, None, .725, None, .023),
    ("class", .578, -.170, .545, -.180, .033),
    ("order", .568, -.010, .541, -.004, .027),
    ("family", .421, -.147, .382, -.159, .039),
    ("genus", .292, -.129, .247, -.135, .045),
    ("scientific name", .165, -.127, .123, -.124, .042),
    ("species epithet", .086, -.079, .035, -.088, .051),
    ("common name MCQ", .677, None, .645, None, .032),
    ("common name", .085, -.592, .039, -.606, .046),
]


def label(model: str) -> str:
    """The score label: specialists carry the ``[specialist]`` tag (docs/c1-report.md)."""
    return f"{model} [specialist]" if model in SPECIALISTS else model


@pytest.fixture(scope="module")
def paper_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo catalog's rows copied (fresh uuids) until every group has 1 000 images."""
    from biovqa.components.c1.build import C1BuildOptions, build_c1
    from biovqa.components.c1.build.candidates import assign_groups
    from biovqa.demo import demo_data_dir
    from biovqa.synthetic import draw_placeholder_images
    from biovqa.taxonomy.index import build_index

    root = tmp_path_factory.mktemp("paper")
    source = demo_data_dir()
    catalog = pd.read_csv(source / "catalog.csv", dtype=str)
    catalog = catalog[catalog["demo_image"] == "ok"]
    copies = math.ceil(1.25 * PER_GROUP / assign_groups(catalog).value_counts().min())  # with a margin
    rows = [catalog.assign(uuid=[str(uuid.uuid5(uuid.NAMESPACE_URL, f"{u}/{k}")) for u in catalog["uuid"]])
            for k in range(copies)]
    pd.concat(rows).to_csv(root / "catalog.csv", index=False)
    build_index(source / "backbone", root / "index")
    draw_placeholder_images(root / "catalog.csv", root / "images", size=8)
    build_c1(root / "catalog.csv", root / "index", root / "images", root / "bench",
             options=C1BuildOptions(per_group=PER_GROUP, species_cap=10**6, min_side=1))
    return root / "bench"


@pytest.fixture(scope="module")
def bench_items(paper_bench: Path) -> pa.Table:
    return open_bench(paper_bench).items


def test_bench_mirrors_the_paper_item_counts(bench_items: pa.Table) -> None:
    counts = pd.Series(bench_items.column("task").to_pylist()).value_counts()
    assert counts["order"] == 9_000
    assert all(counts[t] == 10_000 for t in TASKS if t != "order")
    assert len(set(bench_items.column("source_id").to_pylist())) == 10_000


def write_predictions(items: pa.Table, correct: np.ndarray, path: Path) -> Path:
    gold = np.asarray(items.column("answer").to_pylist(), dtype=object)
    replies = np.where(correct, gold, WRONG)
    pq.write_table(pa.table({"item_id": items.column("item_id"), "response": pa.array(replies.tolist())}), path)
    return path


def table72_replies(items: pa.Table, values: tuple[float, ...], seed: int) -> np.ndarray:
    """Right on exactly EM_t × n_t items of each type (spread at random over the images)."""
    task = np.asarray(items.column("task").to_pylist(), dtype=object)
    correct = np.zeros(items.num_rows, dtype=bool)
    rng = np.random.default_rng(seed)
    for name, value in zip(TASKS, values):
        rows = np.flatnonzero(task == name)
        hits = round(value * len(rows))
        assert hits == value * len(rows) or abs(hits - value * len(rows)) < 1e-6
        correct[rng.permutation(rows)[:hits]] = True
    return correct


@pytest.fixture(scope="module")
def paper_runs(paper_bench: Path, bench_items: pa.Table, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The 20 configurations of Table 72 scored; one score folder each, in Table 72 order."""
    root = tmp_path_factory.mktemp("runs")
    folders = []
    for k, (model, values) in enumerate(TABLE72.items()):
        predictions = write_predictions(bench_items, table72_replies(bench_items, values, seed=k),
                                        root / f"predictions-{k}.parquet")
        folders.append(score_predictions(paper_bench, predictions, root / f"scores-{k}",
                                         options={"bootstrap": 0}, label=label(model)))
    return folders


@pytest.fixture(scope="module")
def paper_summaries(paper_runs: list[Path]) -> list[tuple[str, dict]]:
    return [(load_summary(folder)["label"], load_summary(folder)) for folder in paper_runs]


@pytest.fixture(scope="module")
def paper_tables(paper_summaries) -> dict[str, pd.DataFrame]:
    return tables(paper_summaries)


@pytest.mark.parametrize(("model", "pooled"), [("Qwen3-VL-30B-A3B", 0.5031), ("BioCLIP-2 (tol)", 0.7370)])
def test_pooled_em_is_item_weighted(paper_summaries, paper_tables, model: str, pooled: float) -> None:
    """metrics.md §2.9: pooled = (100k·Σ_{t≠order} EM_t + 90k·EM_order) / 890k → 0.5031 / 0.7370."""
    summary = dict(paper_summaries)[label(model)]
    for task, value in zip(TASKS, TABLE72[model]):  # the per-type EMs the pooled value is built from
        assert round(summary["tasks"][task]["em"]["value"], 3) == value
    assert round(summary["pooled"]["em"]["value"], 4) == pooled
    assert summary["pooled"]["em"]["n"] == 89_000
    row = paper_tables["table18_pooled"].loc[model]
    assert row["EM"] == round(pooled, 3)
    assert (row["Img"], row["Ques"]) == (10_000, 89_000)


def test_table18_ranks_generalists_only(paper_tables) -> None:
    frame = paper_tables["table18_pooled"]
    assert list(frame.columns) == ["rank", "Img", "Ques", "EM", "EM_soft", "wup", "lin"]
    assert list(frame.index[:2]) == ["BioCLIP-2 (kingdom)", "BioCLIP-2 (tol)"]  # Table 18: .743, .737
    assert frame["rank"].iloc[:2].isna().all()
    assert frame.loc["BioCLIP-2 (kingdom)", "EM"] == .743
    assert frame["rank"].iloc[2:].tolist() == list(range(1, 19))
    assert frame.index[2] == "Qwen3-VL-30B-A3B" and frame.index[-1] == "LLaVA-NeXT-Vicuna"
    # .503 / .743: "the strongest generalist recovers roughly 68% of the specialist pooled accuracy"
    assert round(frame.loc["Qwen3-VL-30B-A3B", "EM"] / frame.loc["BioCLIP-2 (kingdom)", "EM"], 2) == .68


def test_table19_twenty_configurations_against_eighteen_vlms(paper_tables) -> None:
    frame = paper_tables["table19_per_rank"]
    assert list(frame.columns) == ["EM_20cfg", "step_20cfg", "EM_18vlm", "step_18vlm", "gap"]
    assert list(frame.index) == [row[0] for row in TABLE19]
    for rank, em_all, step_all, em_vlm, step_vlm, gap in TABLE19:
        got = frame.loc[rank]
        assert got["EM_20cfg"] == em_all, rank
        assert got["EM_18vlm"] == em_vlm, rank
        assert got["gap"] == gap, rank
        for column, expected in (("step_20cfg", step_all), ("step_18vlm", step_vlm)):
            assert (math.isnan(got[column]) if expected is None else got[column] == expected), (rank, column)
    # "the gap widens from .023 at phylum to .051 at species"
    assert frame["gap"].idxmax() == "species epithet"


def test_table19_fall_ratios(paper_tables) -> None:
    """results.md §3.2: EM falls 8.7× from phylum to species epithet over 20 configurations,
    20.7× over the 18 VLMs."""
    frame = paper_tables["table19_fall"]
    assert frame.loc["20 configurations", "fall"] == 8.7
    assert frame.loc["18 VLMs", "fall"] == 20.7


def test_table20_means_of_both_blocks(paper_tables) -> None:
    """results.md §3.5: 18-model mean .039 / .645 (gap .606), 20-config mean .085 / .677."""
    frame = paper_tables["table20_recognition_recall"]
    assert frame.loc["18-VLM mean", ["open_ended", "mcq4"]].tolist() == [.039, .645]
    assert frame.loc["20-configuration mean", ["open_ended", "mcq4"]].tolist() == [.085, .677]
    assert frame.loc["18-VLM mean", "gap"] == .606
    assert frame.loc["18-VLM mean", "ratio"] == 16.4  # metrics.md §2.11: 16.4×
    assert frame.loc["Qwen3-VL-32B", "gap"] == .731 and frame.index[0] == "Qwen3-VL-32B"


def test_table81_generalists_only(paper_tables) -> None:
    frame = paper_tables["table81_by_size"]
    assert len(frame) == 18 and "BioCLIP-2 (tol)" not in frame.index
    assert frame.loc["Qwen3-VL-30B-A3B", ["family", "params_B"]].tolist() == ["Qwen3-VL", 30.0]
    assert frame.loc["Qwen2.5-VL-3B", "EM"] == .350
    assert frame.index[0] == "Qwen2.5-VL-3B"  # Table 81 is sorted by size


def test_scaled_hca_through_score(paper_bench: Path, bench_items: pa.Table, tmp_path: Path) -> None:
    """hierarchy.md §6: HCA 19.73, Acc_leaf 41.66 → 19.73 / 41.66 = 47.4 % of the leaf-correct
    images are path-consistent. Of the 10 000 images, 1 973 answer phylum … species right, 2 193
    more get the species right and the phylum wrong, the rest get everything wrong."""
    task = np.asarray(bench_items.column("task").to_pylist(), dtype=object)
    image = np.asarray(bench_items.column("source_id").to_pylist(), dtype=object)
    images = np.unique(image)
    position = {name: k for k, name in enumerate(images)}
    index = np.array([position[name] for name in image])
    path_right = index < 1_973
    leaf_right = index < 4_166
    correct = np.where(task == "species", leaf_right, path_right)
    folder = score_predictions(paper_bench, write_predictions(bench_items, correct, tmp_path / "p.parquet"),
                               tmp_path / "scores", options={"bootstrap": 0}, label="hierarchy probe")
    summary = load_summary(folder)
    pooled = summary["hierarchy"]["pooled"]
    assert round(pooled["hca"]["value"] * 100, 2) == 19.73
    assert round(pooled["acc_leaf"]["value"] * 100, 2) == 41.66
    assert round(pooled["hca_scaled"]["value"] * 100, 1) == 47.4
    assert set(pooled["hca_scaled"]) == {"value", "lo", "hi", "n"} and pooled["hca_scaled"]["n"] == 10_000
    assert tables([("hierarchy probe", summary)])["hierarchy"].loc["hierarchy probe", "hca_scaled"] == .474


def test_every_table_renders_in_the_html_report(paper_runs: list[Path], paper_tables, tmp_path: Path) -> None:
    index = write_report(paper_runs, tmp_path / "report")
    page = index.read_text(encoding="utf-8")
    for name in paper_tables:
        assert (tmp_path / "report" / f"c1_{name}.csv").exists(), name
    import html

    for name, frame in paper_tables.items():
        title = frame.attrs.get("title")
        if title:  # the writer shows each table's own readable title
            assert f"{html.escape(title)}</h3>" in page, title
    assert "<NA>" not in page and ">nan<" not in page.lower() and ">None<" not in page
    c1_section = page[page.index("<h2>C1"):]
    assert "[specialist]" not in c1_section  # tags are stripped from the row names (kept under "Runs")
    assert "<td>BioCLIP-2 (tol)</td>" in page
