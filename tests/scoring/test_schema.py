"""One score schema for every component: build, run, score and report C1 and C2 through the
public path and check the common per-item columns and summary shape."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import biovqa
from biovqa.scoring.schema import ITEM_CORE_COLUMNS, SUMMARY_KEYS, is_estimate


@pytest.fixture(scope="module")
def c2_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from biovqa.synthetic import write_cub

    root = tmp_path_factory.mktemp("c2")
    cub = write_cub(root / "cub", n_classes=6, images_per_class=2, seed=3, image_size=(160, 120))
    return biovqa.build("c2", cub, root / "bench").root


def _estimates(value: object, path: str = "") -> list[tuple[str, dict]]:
    found: list[tuple[str, dict]] = []
    if isinstance(value, dict):
        if "value" in value and ("lo" in value or "hi" in value):
            found.append((path, value))
        for key, inner in value.items():
            found.extend(_estimates(inner, f"{path}.{key}"))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            found.extend(_estimates(inner, f"{path}[{i}]"))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("bootstrap", [0, 40])
def test_every_component_writes_the_one_schema(tmp_path: Path, demo_bench: Path, c2_bench: Path,
                                               bootstrap: int) -> None:
    score_dirs = []
    for name, bench in (("c1", demo_bench), ("c2", c2_bench)):
        predictions = biovqa.run(bench, tmp_path / f"run-{name}", backend="baseline", progress=False)
        out = biovqa.score(bench, predictions, tmp_path / f"scores-{name}", bootstrap=bootstrap,
                           label=f"floor {name}")
        score_dirs.append(out)
        items = pq.read_table(out / "items.parquet")
        core = [column for column, _ in ITEM_CORE_COLUMNS]
        assert items.column_names[: len(core)] == core
        assert set(items.column("component").to_pylist()) == {name}
        assert set(items.column("status").to_pylist()) == {"ok"}
        replies = pq.read_table(predictions).to_pydict()
        by_id = dict(zip(replies["item_id"], replies["response"]))
        assert items.column("response").to_pylist() == [by_id[i] for i in items.column("item_id").to_pylist()]
        summary = json.loads((out / "summary.json").read_text())
        assert set(SUMMARY_KEYS) <= set(summary)
        assert summary["component"] == name and summary["label"] == f"floor {name}"
        assert summary["n_items"] == items.num_rows
        assert summary["statuses"] == {"ok": items.num_rows, "failed": 0, "missing": 0}
        assert summary["options"]["bootstrap"] == bootstrap
        component = biovqa.get_component(name)
        assert set(summary["table3"]) == set(component.table3)  # JSON keys are sorted; order: component.table3
        estimates = _estimates(summary)
        assert estimates and all(is_estimate(e) for _, e in estimates), \
            [p for p, e in estimates if not is_estimate(e)][:5]
        bounded = [e for _, e in estimates if e["lo"] is not None]
        if bootstrap == 0:
            assert bounded == []
        else:
            assert bounded and all(e["lo"] <= e["value"] + 1e-12 and e["value"] <= e["hi"] + 1e-12
                                   for e in bounded)
        # the headline score column is the component's headline metric
        headline = "em" if name == "c1" else "cags"
        assert items.column("score").to_pylist() == pytest.approx(
            [float(v) for v in items.column(headline).to_pylist()])
    index = biovqa.report(score_dirs, tmp_path / "report")
    html = index.read_text()
    assert "C1 hierarchical taxonomic reasoning" in html and "C2 fine-grained attribute grounding" in html
    assert "floor c1" in html and "floor c2" in html


def test_an_old_summary_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(json.dumps({"component": "c1", "pooled": {}}))
    with pytest.raises(biovqa.InputFormatError, match="summary lacks label"):
        biovqa.report([tmp_path], tmp_path / "report")
