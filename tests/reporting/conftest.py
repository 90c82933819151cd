"""The paper's printed numbers (tests/reporting/data/paper_table*.csv) as report inputs: Table 3 rows
as score runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from biovqa.components.registry import get_component
from biovqa.reporting.leaderboard import Run
from reporting_hostile import HOSTILE_LABEL, HOSTILE_REPLY  # shared with the tests

#: the paper's tables the tests read, transcribed as printed (one csv per table, its first line says which)
PAPER_TABLES = Path(__file__).parent / "data"
SPECIALISTS = ("BioCLIP-2 (tol)", "MegaDescriptor")


@pytest.fixture(scope="session")
def paper_tables() -> dict[int, pd.DataFrame]:
    """The paper's printed tables by number (3, 4, 18, 33, 75, 86), every cell a string as printed."""
    return {int(path.stem.removeprefix("paper_table")): pd.read_csv(path, dtype=str, comment="#")
            for path in sorted(PAPER_TABLES.glob("paper_table*.csv"))}


@pytest.fixture()
def paper_runs(paper_tables: dict[int, pd.DataFrame]) -> list[Run]:
    """Table 3's rows (not the Mean) as one run per model and component, labelled by the tag
    convention: specialists tagged, the Floor row as the image-blind baseline."""
    runs = []
    for _, row in paper_tables[3].iterrows():
        name = str(row["model"])
        if name == "Mean":
            continue
        label = {"Floor": "floor (image-blind)"}.get(name, name)
        if name in SPECIALISTS:
            label += " [specialist]"
        for comp in ("c1", "c2", "c3", "c4"):
            t3 = {c: {"value": float(row[c]), "lo": None, "hi": None, "n": 1}
                  for c in get_component(comp).table3 if isinstance(row[c], str)}
            if t3:
                runs.append(Run(label, comp, {"table3": t3}))
    return runs


#: (label, share of items answered with the gold) — answers are otherwise a wrong option / number
MODELS = (("Good-VL-8B", 0.8), ("Mid-VL-4B", 0.5), (HOSTILE_LABEL, 0.3), ("Weak-VL-1B", 0.15),
          ("Spec-CLIP [specialist]", 0.9))


def _reply(model: str, share: float, item: dict[str, object]) -> str:
    import hashlib

    h = int(hashlib.sha256(f"{model}|{item['item_id']}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    gold = str(item["answer"])
    if h < share:
        return gold
    if gold in ("Yes", "No"):  # C4: the wrong answer is the other one
        return "No" if gold == "Yes" else "Yes"
    options = [str(o) for o in (item.get("options") or []) if str(o) != gold]
    if options:
        return options[int(h * 1000) % len(options)]
    return gold + " sp." if not gold.isdigit() else str(int(gold) + 1 + int(h * 3))


@pytest.fixture(scope="session")
def scored_runs(tmp_path_factory: pytest.TempPathFactory, demo_bench: Path) -> list[Path]:
    """Score folders of four models and the image-blind baseline on the C1 demo bench and the C3
    demo bench, through the public run/score path; one model's label and one reply are hostile."""
    from biovqa.components.c3.demo import build_demo

    root = tmp_path_factory.mktemp("report-runs")
    c3 = build_demo(root / "bench-c3", root / "c3-sources").root
    return _score_models(root, (("c1", demo_bench), ("c3", c3)))


def _score_models(root: Path, benches: tuple[tuple[str, Path], ...],
                  options: dict[str, dict[str, object]] | None = None) -> list[Path]:
    """Every model of MODELS and the baseline scored on each (component, bench), with the
    component's extra score ``options``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import biovqa
    from biovqa.engine.runner import RunOptions, run_benchmark

    out: list[Path] = []
    for comp, bench in benches:
        items = pq.read_table(bench / "items.parquet", columns=["item_id", "answer", "options"]).to_pylist()
        for k, (label, share) in enumerate(MODELS):
            replies = [_reply(label, share, item) for item in items]
            if label == HOSTILE_LABEL:
                replies[0] = HOSTILE_REPLY
            predictions = root / f"pred-{comp}-{k}.parquet"
            pq.write_table(pa.table({"item_id": [i["item_id"] for i in items], "response": replies,
                                     "status": ["ok"] * len(items), "model": [label] * len(items)}), predictions)
            out.append(biovqa.score(bench, predictions, root / f"scores-{comp}-{k}", label=label, bootstrap=50,
                                    **(options or {}).get(comp, {})))
        run = run_benchmark(bench, root / f"run-baseline-{comp}", RunOptions(backend="baseline", progress=False))
        out.append(biovqa.score(bench, run.predictions_path, root / f"scores-{comp}-floor",
                                label="floor (image-blind)", bootstrap=50, **(options or {}).get(comp, {})))
    return out


@pytest.fixture(scope="session")
def report_dir(tmp_path_factory: pytest.TempPathFactory, scored_runs: list[Path]) -> Path:
    from biovqa.reporting import write_report

    out = tmp_path_factory.mktemp("report") / "report"
    write_report(scored_runs, out)
    return out


def c2_bench(path: Path) -> Path:
    """A small C2 bench in the C2 item schema: every category, MCQ and open families."""
    from fixtures.c2_items import c2_item, write_c2_bench

    colours = ["purple", "blue", "green", "yellow"]
    rows = [c2_item("attr_bare_value", f"a{k:02d}", colours[k % 4], colours, part="wing", property="color",
                    attribute_group="has_wing_color") for k in range(16)]
    rows += [c2_item("attr_group_value", f"s{k:02d}", colours[(k + 1) % 4], colours, part="back",
                     property="color", attribute_group="has_back_color") for k in range(16)]
    rows += [c2_item("visibility_side", f"v{k:02d}", "Both", ["Left", "Right", "Both", "None"], part="eye")
             for k in range(12)]
    rows += [c2_item("open_genus", f"g{k:02d}", g, class_name=c, genus=g)
             for k, (c, g) in enumerate([("California Gull", "Larus"), ("Fox Sparrow", "Passerella")] * 5)]
    write_c2_bench(path, rows)
    return path


@pytest.fixture(scope="session")
def all_component_runs(tmp_path_factory: pytest.TempPathFactory, scored_runs: list[Path]) -> list[Path]:
    """``scored_runs`` (C1, C3) plus the same models on a small C2 bench and on the C4 demo bench
    (synthetic Wild Me catalog, tiny random DINOv2: needs torch and transformers)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from biovqa.components.c4.build import build_c4
    from biovqa.components.c4.demo import DEMO_CATALOG, build_tiny_dinov2, write_synthetic_catalog

    root = tmp_path_factory.mktemp("report-runs-c2-c4")
    c4 = build_c4({DEMO_CATALOG: write_synthetic_catalog(root / "c4-catalog")},
                  build_tiny_dinov2(root / "c4-embedder"), root / "bench-c4", pairs_per_kind=6).root
    return scored_runs + _score_models(root, (("c2", c2_bench(root / "bench-c2")), ("c4", c4)))


@pytest.fixture(scope="session")
def score_models() -> Callable[..., list[Path]]:
    """The scorer of the fixtures above, for tests that score the same models on other benches."""
    return _score_models
