"""The paper's printed numbers (results.md) as report inputs: Table 3 rows as score runs."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pandas as pd
import pytest

from biovqa.components.registry import get_component
from biovqa.reporting.leaderboard import Run

RESULTS = Path("/work/shared/spec/results.md")
SPECIALISTS = ("BioCLIP-2 (tol)", "MegaDescriptor")


@pytest.fixture(scope="session")
def paper_blocks() -> list[pd.DataFrame]:
    """Every ```csv block of results.md, in order (§1 Table 3 first, §2 Table 4 second)."""
    if not RESULTS.exists():
        pytest.skip("the spec's results.md is not available")
    text = RESULTS.read_text(encoding="utf-8")
    return [pd.read_csv(io.StringIO(b), dtype=str) for b in re.findall(r"```csv\n(.*?)```", text, re.S)]


@pytest.fixture()
def paper_runs(paper_blocks: list[pd.DataFrame]) -> list[Run]:
    """Table 3's rows (not the Mean) as one run per model and component, labelled by the tag
    convention: specialists tagged, the Floor row as the image-blind baseline."""
    runs = []
    for _, row in paper_blocks[0].iterrows():
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


HOSTILE_REPLY = ('<script>document.body.dataset.pwned = "script"</script>'
                 '"><img src=x onerror="document.body.dataset.pwned = \'img\'">')
HOSTILE_LABEL = 'Evil-VL-2B <b onmouseover="alert(1)">'
#: (label, share of items answered with the gold) — answers are otherwise a wrong option / number
MODELS = (("Good-VL-8B", 0.8), ("Mid-VL-4B", 0.5), (HOSTILE_LABEL, 0.3), ("Weak-VL-1B", 0.15),
          ("Spec-CLIP [specialist]", 0.9))


def _reply(model: str, share: float, item: dict[str, object]) -> str:
    import hashlib

    h = int(hashlib.sha256(f"{model}|{item['item_id']}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    gold = str(item["answer"])
    if h < share:
        return gold
    options = [str(o) for o in (item.get("options") or []) if str(o) != gold]
    if options:
        return options[int(h * 1000) % len(options)]
    return gold + " sp." if not gold.isdigit() else str(int(gold) + 1 + int(h * 3))


@pytest.fixture(scope="session")
def scored_runs(tmp_path_factory: pytest.TempPathFactory, demo_bench: Path) -> list[Path]:
    """Score folders of four models and the image-blind baseline on the C1 demo bench and the C3
    demo bench, through the public run/score path; one model's label and one reply are hostile."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import biovqa
    from biovqa.components.c3.demo import build_demo
    from biovqa.engine.runner import RunOptions, run_benchmark

    root = tmp_path_factory.mktemp("report-runs")
    c3 = build_demo(root / "bench-c3", root / "c3-sources").root
    out: list[Path] = []
    for comp, bench in (("c1", demo_bench), ("c3", c3)):
        items = pq.read_table(bench / "items.parquet", columns=["item_id", "answer", "options"]).to_pylist()
        for k, (label, share) in enumerate(MODELS):
            replies = [_reply(label, share, item) for item in items]
            if label == HOSTILE_LABEL:
                replies[0] = HOSTILE_REPLY
            predictions = root / f"pred-{comp}-{k}.parquet"
            pq.write_table(pa.table({"item_id": [i["item_id"] for i in items], "response": replies,
                                     "status": ["ok"] * len(items), "model": [label] * len(items)}), predictions)
            out.append(biovqa.score(bench, predictions, root / f"scores-{comp}-{k}", label=label, bootstrap=50))
        run = run_benchmark(bench, root / f"run-baseline-{comp}", RunOptions(backend="baseline", progress=False))
        out.append(biovqa.score(bench, run.predictions_path, root / f"scores-{comp}-floor",
                                label="floor (image-blind)", bootstrap=50))
    return out


@pytest.fixture(scope="session")
def report_dir(tmp_path_factory: pytest.TempPathFactory, scored_runs: list[Path]) -> Path:
    from biovqa.reporting import write_report

    out = tmp_path_factory.mktemp("report") / "report"
    write_report(scored_runs, out)
    return out
