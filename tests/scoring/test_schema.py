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


@pytest.fixture(scope="module")
def c3_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from biovqa.components.c3.demo import build_demo

    root = tmp_path_factory.mktemp("c3")
    return build_demo(root / "bench", root / "sources").root


@pytest.fixture(scope="module")
def c4_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    from biovqa.components.c4.build import build_c4
    from biovqa.components.c4.demo import DEMO_CATALOG, build_tiny_dinov2, write_synthetic_catalog

    root = tmp_path_factory.mktemp("c4")
    catalog = write_synthetic_catalog(root / "catalog")
    return build_c4({DEMO_CATALOG: catalog}, build_tiny_dinov2(root / "dinov2"), root / "bench",
                    pairs_per_kind=4).root


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
                                               c3_bench: Path, c4_bench: Path, bootstrap: int) -> None:
    benches = {"c1": demo_bench, "c2": c2_bench, "c3": c3_bench, "c4": c4_bench}
    assert set(benches) >= {c.name for c in biovqa.list_components() if c.name.startswith("c")}
    score_dirs = []
    for name, bench in benches.items():
        predictions = biovqa.run(bench, tmp_path / f"run-{name}", backend="baseline", progress=False)
        out = biovqa.score(bench, predictions, tmp_path / f"scores-{name}", bootstrap=bootstrap,
                           label=f"floor {name}")
        score_dirs.append(out)
        items = pq.read_table(out / "items.parquet")
        core = [column for column, _ in ITEM_CORE_COLUMNS]
        assert items.column_names[: len(core) + 1] == core + ["truncated"]  # the standard column follows
        assert set(items.column("component").to_pylist()) == {name}
        assert set(items.column("status").to_pylist()) <= {"ok", "failed", "missing"}
        replies = pq.read_table(predictions).to_pydict()
        by_id = dict(zip(replies["item_id"], replies["response"]))
        assert items.column("response").to_pylist() == [by_id[i] for i in items.column("item_id").to_pylist()]
        summary = json.loads((out / "summary.json").read_text())
        assert set(SUMMARY_KEYS) <= set(summary)
        assert summary["component"] == name and summary["label"] == f"floor {name}"
        assert summary["n_items"] == items.num_rows
        assert sum(summary["statuses"].values()) == items.num_rows
        assert summary["n_truncated"] == sum(items.column("truncated").to_pylist())
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
        headline = {"c1": "em", "c2": "cags"}.get(name)
        if headline:
            assert items.column("score").to_pylist() == pytest.approx(
                [float(v) for v in items.column(headline).to_pylist()])
        assert all(v is None or v == v for v in items.column("score").to_pylist())
    index = biovqa.report(score_dirs, tmp_path / "report")
    html = index.read_text()
    for name in benches:
        assert biovqa.get_component(name).title in html and f"floor {name}" in html


def test_an_old_summary_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(json.dumps({"component": "c1", "pooled": {}}))
    with pytest.raises(biovqa.InputFormatError, match="summary lacks label"):
        biovqa.report([tmp_path], tmp_path / "report")


def test_item_ids_held_as_large_string_are_written_as_string() -> None:
    """A bench written from pandas (whose strings arrive as large_string) still scores: the core
    columns carry item_id as the schema's string."""
    import pyarrow as pa

    from biovqa.scoring.schema import core_columns

    items = pa.table({"item_id": pa.array(["a", "b"], pa.large_string()),
                      "task": pa.array(["t", "t"], pa.large_string())})
    aligned = pa.table({"status": ["ok", "missing"], "response": ["x", None]})
    columns = core_columns(items, aligned, component="c2", parsed=pa.array(["x", None]), score=[1.0, 0.0])
    assert columns["item_id"].type == pa.string()
    assert columns["item_id"].to_pylist() == ["a", "b"]
