"""Bio-VQA-Lite: stratified per-task subsets (components.md §6)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from biovqa.bench import open_bench
from biovqa.bench.audit import audit_bench
from biovqa.bench.lite import make_lite
from biovqa.bench.strata import largest_remainder


@pytest.fixture(scope="module")
def c1_bench(tmp_path_factory: pytest.TempPathFactory, demo_data: Path, demo_index: Path) -> Path:
    """A private C1 demo build (own photos: the shared demo photos are damaged by other tests)."""
    from fixtures.private_c1 import build_private_c1

    return build_private_c1(tmp_path_factory.mktemp("c1"), demo_data, demo_index)


def test_lite_strata_counts_on_the_c1_bench(tmp_path: Path, c1_bench: Path) -> None:
    full = open_bench(c1_bench)
    lite = make_lite(c1_bench, tmp_path / "lite", per_task=20)
    items = lite.items
    per_task = Counter(items.column("task").to_pylist())
    assert set(per_task.values()) == {20} and set(per_task) == set(full.items.column("task").to_pylist())
    record = lite.manifest["lite"]
    assert record["columns"] == ["group", "tier"] and record["seed"] == 42
    full_rows = full.items.select(["task", "group", "tier"]).to_pylist()
    lite_rows = items.select(["task", "group", "tier"]).to_pylist()
    for task, entry in record["tasks"].items():
        available = Counter((r["group"], r["tier"]) for r in full_rows if r["task"] == task)
        selected = Counter((r["group"], r["tier"]) for r in lite_rows if r["task"] == task)
        quota = largest_remainder({key: n for key, n in available.items()}, 20)
        assert entry["selected"] == 20 and entry["available"] == sum(available.values())
        for cell in entry["strata"]:
            key = tuple(cell["stratum"])
            assert cell["available"] == available[key]
            assert cell["selected"] == selected[key] == quota[key]
    # the phylum task: 80 items in 10 groups × {Degenerate} → 2 per group
    phylum = record["tasks"]["phylum"]["strata"]
    assert all(cell["selected"] == 2 for cell in phylum) and len(phylum) == 10
    ids = items.column("item_id").to_pylist()
    assert ids == sorted(ids)
    assert set(ids) <= set(full.items.column("item_id").to_pylist())
    assert lite.manifest["lite"]["parent_manifest_sha256"] == full.manifest_sha256
    assert "180 items" in audit_bench(lite.root)


def test_a_limit_run_asks_the_items_of_the_lite_bench(tmp_path: Path, c1_bench: Path) -> None:
    """``biovqa run --limit N`` and ``biovqa lite --per-task N`` draw one sample: same items."""
    from biovqa.engine.selection import Selection, select_items

    lite = make_lite(c1_bench, tmp_path / "lite", per_task=15, seed=3)
    limited = select_items(open_bench(c1_bench).items, Selection(limit=15, seed=3))
    assert sorted(limited.column("item_id").to_pylist()) == lite.items.column("item_id").to_pylist()


def test_lite_is_deterministic_and_seeded(tmp_path: Path, c1_bench: Path) -> None:
    a = make_lite(c1_bench, tmp_path / "a", per_task=10)
    b = make_lite(c1_bench, tmp_path / "b", per_task=10)
    assert (a.root / "items.parquet").read_bytes() == (b.root / "items.parquet").read_bytes()
    other = make_lite(c1_bench, tmp_path / "c", per_task=10, seed=7)
    assert other.items.column("item_id").to_pylist() != a.items.column("item_id").to_pylist()


@pytest.mark.slow
def test_cli_lite(tmp_path: Path, c1_bench: Path) -> None:
    ran = subprocess.run([sys.executable, "-m", "biovqa", "lite", str(c1_bench), "--per-task", "500",
                          "--out", str(tmp_path / "lite")], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    # fewer than 500 items per task: every item is kept
    assert open_bench(tmp_path / "lite").items.num_rows == open_bench(c1_bench).items.num_rows
    bad = subprocess.run([sys.executable, "-m", "biovqa", "lite", str(c1_bench), "--per-task", "0",
                          "--out", str(tmp_path / "bad")], capture_output=True, text=True)
    assert bad.returncode == 2 and "--per-task" in bad.stderr + bad.stdout and "Traceback" not in bad.stderr


def test_c2_strata_are_family_by_option_count(tmp_path: Path) -> None:
    from biovqa.components.c2.build import build_c2
    from biovqa.synthetic import write_cub

    cub = write_cub(tmp_path / "cub", n_classes=4, images_per_class=2, seed=7, image_size=(96, 72))
    full = build_c2(cub, tmp_path / "bench-c2")
    lite = make_lite(full.root, tmp_path / "lite", per_task=6)
    record = lite.manifest["lite"]
    assert record["columns"] == ["category", "family", "n_options"]
    rows = full.items.to_pylist()
    for task, entry in record["tasks"].items():
        available = Counter((r["category"], r["family"], str(len(r["options"] or []))) for r in rows
                            if r["task"] == task)
        quota = largest_remainder(dict(available), 6)
        assert {tuple(c["stratum"]): c["selected"] for c in entry["strata"]} == quota
        assert entry["selected"] == min(6, sum(available.values()))
    # rendered marker images travel with the Lite folder; the audit re-checks them and the photos
    assert any(i.startswith("rendered/") for i in lite.items.column("image").to_pylist())
    assert "component c2" in audit_bench(lite.root)


def test_a_lite_c1_bench_scores_with_its_parents_taxonomy_index(tmp_path: Path, c1_bench: Path) -> None:
    import biovqa

    lite = make_lite(c1_bench, tmp_path / "lite", per_task=10)
    parent = open_bench(c1_bench)  # both record the index relative to their own folder
    assert ((lite.root / lite.manifest["taxonomy_index"]).resolve()
            == (parent.root / parent.manifest["taxonomy_index"]).resolve())
    predictions = biovqa.run(lite.root, tmp_path / "run", backend="baseline", progress=False)
    scores = biovqa.score(lite.root, predictions, tmp_path / "scores", label="floor", bootstrap=0)
    summary = json.loads((Path(scores) / "summary.json").read_text())
    assert summary["n_items"] == lite.items.num_rows and summary["taxonomy_index"]
