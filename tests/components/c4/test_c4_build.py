"""C4 end to end on a synthetic Wild Me catalog with a tiny random DINOv2 built from a config:
build (pairs, canvases, manifest checks, cache, determinism), baseline run, score, report; the
MegaDescriptor specialist with a tiny timm Swin; bad catalogs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from fixtures.c4_benches import PAIRS
from PIL import Image

import biovqa
from biovqa.components.c4.prompts import C4_PROMPT
from biovqa.errors import BiovqaError

pytestmark = pytest.mark.slow


def test_items_canvases_and_manifest(c4_bench: Path) -> None:
    bench = biovqa.open_bench(c4_bench)
    items = bench.items.to_pylist()
    assert len(items) == 3 * 2 * PAIRS
    assert {i["task"] for i in items} == {"easy", "random", "hard"}
    for condition in ("easy", "random", "hard"):
        cell = [i for i in items if i["condition"] == condition]
        assert sum(i["same"] for i in cell) == PAIRS and sum(not i["same"] for i in cell) == PAIRS
        assert len({frozenset((i["left_annotation"], i["right_annotation"])) for i in cell}) == len(cell)
    for item in items:
        assert f"{item['question']}\n{item['instruction']}" == C4_PROMPT
        assert item["answer"] == ("Yes" if item["same"] else "No")
        assert (item["left_identity"] == item["right_identity"]) == item["same"]
    easy_same = [i for i in items if i["condition"] == "easy" and i["same"]]
    assert all(i["similarity"] == pytest.approx(i["pool_max_similarity"], abs=1e-6) for i in easy_same)
    hard_diff = [i for i in items if i["condition"] == "hard" and not i["same"]]
    assert all(i["similarity"] == pytest.approx(i["pool_max_similarity"], abs=1e-6) for i in hard_diff)
    hard_same = [i for i in items if i["condition"] == "hard" and i["same"]]
    assert all(i["similarity"] == pytest.approx(i["pool_min_similarity"], abs=1e-6) for i in hard_same)
    item = items[0]
    with Image.open(bench.resolve_image(item["image"])) as canvas:
        assert canvas.height == 672 and canvas.mode == "RGB"
        gutter = np.asarray(canvas)[:, item["left_panel_width"]:item["left_panel_width"] + 16]
        assert (gutter == 255).all()
    manifest = bench.manifest
    checks = manifest["construction_checks"]["whaleshark"]
    assert set(checks) == {"easy", "random", "hard"} and checks["easy"]["auc"] == 1.0
    assert checks["random"]["margin"] is not None
    entry = manifest["datasets"]["whaleshark"]
    assert entry["exclusions"] == {"no viewpoint": 1, "unknown identity": 1}
    (unknown,) = entry["exclusion_examples"]["unknown identity"]  # named: its row and photo
    assert unknown.startswith("row ") and unknown.endswith(".jpg)")
    assert entry["conditions"]["random"]["produced_per_kind"] == PAIRS
    assert manifest["embedding"]["whaleshark"] == {"crops": 30}
    assert biovqa.audit(c4_bench)


def test_rebuild_is_byte_identical_and_embeds_nothing_twice(tmp_path: Path, c4_bench: Path, c4_catalog: Path,
                                                             tiny_dinov2: Path) -> None:
    from biovqa.components.c4.build import build_c4
    from biovqa.components.c4.embed import DinoEmbedder

    class CountingDino(DinoEmbedder):
        embedded = 0

        def embed(self, images):  # type: ignore[no-untyped-def]
            CountingDino.embedded += len(images)
            return super().embed(images)

    cache = c4_bench / "c4" / next(p.name for p in (c4_bench / "c4").glob("embeddings-*.parquet"))
    again = build_c4({"whaleshark": c4_catalog}, CountingDino(tiny_dinov2), tmp_path / "again",
                     pairs_per_kind=PAIRS, cache=cache, workers=2)
    assert CountingDino.embedded == 0
    assert (again.root / "items.parquet").read_bytes() == (c4_bench / "items.parquet").read_bytes()
    first = sorted((c4_bench / "rendered").rglob("*.png"))
    second = sorted((again.root / "rendered").rglob("*.png"))
    assert [p.relative_to(c4_bench) for p in first] == [p.relative_to(again.root) for p in second]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(first, second))


def test_baseline_score_report(tmp_path: Path, c4_bench: Path) -> None:
    predictions = biovqa.run(c4_bench, tmp_path / "run", backend="baseline", progress=False)
    scores = biovqa.score(c4_bench, predictions, tmp_path / "scores", label="floor", bootstrap=50)
    summary = json.loads((scores / "summary.json").read_text())
    assert summary["component"] == "c4" and set(summary["table3"]) == {"dprime", "acc"}
    assert summary["table3"]["acc"]["value"] == 0.5 and summary["table3"]["dprime"]["value"] == pytest.approx(0)
    assert summary["construction_checks"]["whaleshark"]["easy"]["auc"] == 1.0
    items = pq.read_table(scores / "items.parquet")
    assert items.column_names[:7] == ["item_id", "component", "task", "status", "response", "parsed", "score"]
    index = biovqa.report([scores], tmp_path / "report")
    assert "C4 individual re-identification" in index.read_text()
    assert (tmp_path / "report" / "c4_dprime_c.png").is_file()
    assert (tmp_path / "report" / "c4_table49_dprime.csv").is_file()


@pytest.mark.vision
def test_specialist_megadescriptor(tmp_path: Path, c4_bench: Path) -> None:
    from fixtures.vision import require_vision

    require_vision("timm")  # timm needs a working torchvision
    from fixtures.wildlife import build_tiny_megadescriptor

    from biovqa.components.c4.specialist import run_specialist

    model = build_tiny_megadescriptor(tmp_path / "megadescriptor")
    predictions = run_specialist(c4_bench, model, tmp_path / "run")
    results = json.loads((tmp_path / "run" / "specialist.json").read_text())
    cells = results["datasets"]["whaleshark"]["conditions"]
    assert set(cells) == {"easy", "random", "hard"} and results["datasets"]["whaleshark"]["fitted_on"] == "random"
    assert json.loads((tmp_path / "run" / "run.json").read_text())["kind"] == "specialist"
    scores = biovqa.score(c4_bench, predictions, tmp_path / "scores", bootstrap=0)
    summary = json.loads((scores / "summary.json").read_text())
    assert summary["label"] == "MegaDescriptor-L-384 [specialist]"
    assert summary["pooled"]["random"]["acc"]["value"] == pytest.approx(cells["random"]["acc"])


def test_identity_with_one_image_only_gives_no_pairs(tmp_path: Path, tiny_dinov2: Path) -> None:
    from fixtures.wildlife import write_raw_coco

    from biovqa.components.c4.build import build_c4

    annotations = [{"id": k, "image_id": 1, "bbox": [2.0, 2.0, 30.0, 20.0], "viewpoint": "left",
                    "name": f"solo-{k}"} for k in range(3)]
    write_raw_coco(tmp_path / "leopard.coco", annotations, n_images=1)
    with pytest.raises(BiovqaError, match="no C4 pair"):
        build_c4({"leopard": tmp_path / "leopard.coco"}, tiny_dinov2, tmp_path / "bench", pairs_per_kind=2)
    with pytest.raises(BiovqaError, match="unknown C4 catalog"):
        build_c4(["zebra=/x"], tiny_dinov2, tmp_path / "bench")
