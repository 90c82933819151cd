"""C4 conditions mean what the paper says, through ``biovqa build c4`` / ``score`` / ``report``:
easy and hard pairs are always the anchor's rule partner under reuse pressure (burst frames,
mutual nearest neighbours), precomputed embeddings build without a model, catalogs that cannot
give identities are refused before any model loads, and the base-install demo reports C4."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fixtures.c4_benches import PixelEmbedder, designed_catalogs
from fixtures.cli_runner import cli

import biovqa
from biovqa.components.c4.embed import EMBEDDER_METADATA, crop_key, load_crop
from biovqa.components.c4.pairs import auc
from biovqa.sources.wildlife import read_wildlife_catalog

REPOSITORY = Path(__file__).resolve().parents[3]
#: sitecustomize that makes torch and its dependants unimportable, as on a base install
BASE_INSTALL = '''
import sys
from importlib.abc import MetaPathFinder

class _BaseInstall(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"torch", "torchvision", "transformers", "timm", "open_clip", "vllm"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _BaseInstall())
'''


def _burst_catalog(root: Path, *, n_individuals: int = 6) -> tuple[Path, Path]:
    """A one-viewpoint catalog of ``n_individuals`` × 4 photos and its embeddings file, laid out
    as burst frames: each individual is seen in two scenes, two near-identical frames per scene,
    and the scenes are shared between individuals. Similarities: the other frame of the same
    burst ≈ 1 (mutual nearest neighbours), another individual in the same scene ≈ .6, the same
    individual in the other scene ≈ .3, anything else ≈ 0. So the rule partners separate
    completely: easy AUC must be 1, hard AUC 0."""
    from biovqa.components.c4.demo import write_synthetic_catalog

    coco = write_synthetic_catalog(root, n_individuals=n_individuals, images_per_view=4, viewpoints=("left",),
                                   extras=False, lossless=True, seed=5)
    catalog = read_wildlife_catalog(coco, "whaleshark")
    identities = sorted({a.identity for a in catalog.annotations})
    dims = 2 + 3 * n_individuals + len(catalog.annotations)
    rng = np.random.default_rng(3)
    keys, vectors, seen = [], [], {}
    for k, annotation in enumerate(catalog.annotations):
        person = identities.index(annotation.identity)
        frame = seen.setdefault(person, 0)
        seen[person] += 1
        scene = frame // 2
        vector = np.zeros(dims)
        vector[scene] = np.sqrt(0.6)  # the scene both individuals share
        vector[2 + person] = np.sqrt(0.3)  # the individual
        vector[2 + n_individuals + 2 * person + scene] = np.sqrt(0.1)  # this individual in this scene
        vector[2 + 3 * n_individuals + k] = 0.01 + 0.01 * rng.random()  # the frame: breaks ties
        keys.append(crop_key(load_crop(annotation)))
        vectors.append((vector / np.linalg.norm(vector)).astype(np.float32))
    table = pa.table({"sha256": pa.array(keys), "vector": pa.array([v.tolist() for v in vectors],
                                                                    pa.list_(pa.float32()))})
    table = table.replace_schema_metadata({EMBEDDER_METADATA: json.dumps(
        {"model": "designed-burst-vectors", "fingerprint": "burst", "crop": "crop"}).encode()})
    embeddings = root / "burst-embeddings.parquet"
    pq.write_table(table, embeddings)
    return coco, embeddings


def test_easy_and_hard_pairs_are_rule_partners_under_reuse_pressure(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    coco, embeddings = _burst_catalog(tmp_path / "catalog")
    code, err = cli(["build", "c4", "--catalog", f"whaleshark={coco}", "--embeddings", embeddings,
                     "--pairs", "20", "--out", tmp_path / "bench"], capsys)
    assert code == 0, err
    bench = biovqa.open_bench(tmp_path / "bench")
    manifest = bench.manifest
    checks = manifest["construction_checks"]["whaleshark"]
    assert checks["easy"]["auc"] == 1.0 and checks["hard"]["auc"] == 0.0
    conditions = manifest["datasets"]["whaleshark"]["conditions"]
    # the two frames of a burst are each other's nearest match: the second anchor of each burst
    # has its rule partner taken and gives no easy same-ID pair, so easy falls short (recorded)
    assert conditions["easy"]["same_found"] == 12 and conditions["easy"]["anchors_skipped_partner_taken"]["same"] == 12
    assert conditions["easy"]["produced_per_kind"] == 12 and conditions["easy"]["shortfall_per_kind"] == 8
    assert conditions["easy"]["short"] is True
    assert sum(conditions["hard"]["anchors_skipped_partner_taken"].values()) > 0
    items = bench.items.to_pylist()
    for item in items:
        if item["condition"] == "random":
            continue
        most_similar = (item["condition"] == "easy") == item["same"]
        extreme = item["pool_max_similarity"] if most_similar else item["pool_min_similarity"]
        assert item["similarity"] == pytest.approx(extreme, abs=1e-6), item["item_id"]
    hard_same = [i["similarity"] for i in items if i["condition"] == "hard" and i["same"]]
    assert max(hard_same) < 0.5  # never the near-duplicate frame
    code, err = cli(["audit", bench.root], capsys)  # the audit checks the rule partner of every pair
    assert code == 0, err
    import dataclasses

    from biovqa.components.c4.audit import audit_items

    walked = [dict(i) for i in items]  # what walking down the list gave: a hard pair off its rule
    first_hard = next(i for i in walked if i["condition"] == "hard" and i["same"])
    first_hard["similarity"] = first_hard["pool_max_similarity"]
    tampered = dataclasses.replace(bench)
    tampered.__dict__["items"] = pa.Table.from_pylist(walked, schema=bench.items.schema)
    assert audit_items(bench) == [] and first_hard["item_id"] in audit_items(tampered)[0]
    predictions = biovqa.run(bench.root, tmp_path / "run", backend="baseline", progress=False)
    code, err = cli(["score", bench.root, "-p", predictions, "-o", tmp_path / "scores", "--bootstrap", "0"], capsys)
    assert code == 0, err
    summary = json.loads((tmp_path / "scores" / "summary.json").read_text())
    assert summary["construction_checks"]["whaleshark"]["easy"]["auc"] == 1.0
    assert summary["construction_checks"]["whaleshark"]["hard"]["auc"] == 0.0
    values = np.array([i["similarity"] for i in items if i["condition"] == "hard"])
    same = np.array([i["same"] for i in items if i["condition"] == "hard"])
    assert auc(values, same) == 0.0


def test_ggr_table_is_refused_before_the_embedder_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "ggr_output.csv"
    table.write_text("uuid,image uuid,annot species,bbox x,bbox y,bbox w,bbox h,image fname\r\n"
                     "a1,00000001-0000-0000-0000-000000000000,zebra_grevys,1,2,30,20,001.jpg\r\n", encoding="utf-8")
    # the embedder does not exist: an error about the catalog proves it was checked first
    code, err = cli(["build", "c4", "--catalog", f"gzcd={table}", "--embedder", tmp_path / "no-such-model",
                     "--out", tmp_path / "bench"], capsys)
    assert code == 2
    assert "detection table" in err and "no individual identities" in err and "final_metadata.json" in err
    assert str(table) in err and "JSON" not in err.split("hint")[0]
    assert not (tmp_path / "bench").exists()


def test_embeddings_file_must_cover_every_crop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from biovqa.demo import demo_data_dir

    coco, _ = _burst_catalog(tmp_path / "catalog")
    code, err = cli(["build", "c4", "--catalog", f"whaleshark={coco}", "--embeddings",
                     demo_data_dir() / "c4-embeddings.parquet", "--out", tmp_path / "bench"], capsys)
    assert code == 2 and "has no vector for the crop of 24 of 24 annotations" in err and "biovqa c4 embed" in err
    code, err = cli(["build", "c4", "--catalog", f"whaleshark={coco}", "--out", tmp_path / "bench"], capsys)
    assert code == 2 and "give --embedder" in err and not (tmp_path / "bench").exists()
    unnamed = tmp_path / "unnamed.parquet"
    pq.write_table(pa.table({"sha256": ["0" * 64], "vector": [[1.0, 0.0]]}), unnamed)
    code, err = cli(["build", "c4", "--catalog", f"whaleshark={coco}", "--embeddings", unnamed,
                     "--out", tmp_path / "bench"], capsys)
    assert code == 2 and "does not say which model made it" in err


@pytest.mark.models
def test_embed_once_then_build_without_the_model(tmp_path: Path, tiny_dinov2: Path, c4_catalog: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    embeddings = tmp_path / "embeddings.parquet"
    code, err = cli(["c4", "embed", "--catalog", f"whaleshark={c4_catalog}", "--embedder", tiny_dinov2,
                     "--out", embeddings], capsys)
    assert code == 0, err
    code, err = cli(["build", "c4", "--catalog", f"whaleshark={c4_catalog}", "--embeddings", embeddings,
                     "--pairs", "4", "--out", tmp_path / "from-file"], capsys)
    assert code == 0, err
    code, err = cli(["build", "c4", "--catalog", f"whaleshark={c4_catalog}", "--embedder", tiny_dinov2,
                     "--pairs", "4", "--out", tmp_path / "from-model"], capsys)
    assert code == 0, err
    from_file, from_model = biovqa.open_bench(tmp_path / "from-file"), biovqa.open_bench(tmp_path / "from-model")
    assert from_file.items.equals(from_model.items)  # the same pairs and canvases either way
    embedder = from_file.manifest["parameters"]["embedder"]
    assert embedder["model"] == tiny_dinov2.name and embedder["precomputed"] is True
    assert embedder["fingerprint"] == from_model.manifest["parameters"]["embedder"]["fingerprint"]
    assert str(tmp_path) not in json.dumps(from_model.manifest)  # no builder path in the manifest
    # --whole-photo embeds what the canvases show: whole photos, not crops
    code, err = cli(["build", "c4", "--catalog", f"whaleshark={c4_catalog}", "--embeddings", embeddings,
                     "--whole-photo", "--out", tmp_path / "refused"], capsys)
    assert code == 2 and "holds crop embeddings" in err
    code, err = cli(["build", "c4", "--catalog", f"whaleshark={c4_catalog}", "--embedder", tiny_dinov2,
                     "--whole-photo", "--pairs", "4", "--out", tmp_path / "whole"], capsys)
    assert code == 0, err
    whole = biovqa.open_bench(tmp_path / "whole")
    assert whole.manifest["parameters"]["embedder"]["crop"] == "whole photo"
    cache = pq.read_table(tmp_path / "whole" / whole.manifest["embedding"]["cache"])
    annotations = [a for a in read_wildlife_catalog(c4_catalog, "whaleshark").annotations if a.identity]
    assert set(cache.column("sha256").to_pylist()) == {crop_key(load_crop(a, whole_photo=True)) for a in annotations}


@pytest.mark.slow
def test_base_install_demo_reports_c4(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(BASE_INSTALL, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(REPOSITORY / "src")]),
           "MPLBACKEND": "Agg"}
    probe = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "No module named 'torch'" in probe.stderr
    done = subprocess.run([sys.executable, "-m", "biovqa", "demo", "--out", str(tmp_path / "demo")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "skipped C4" not in done.stdout + done.stderr
    report = (tmp_path / "demo" / "report" / "index.html").read_text(encoding="utf-8")
    assert "C4 individual re-identification" in report
    summary = json.loads((tmp_path / "demo" / "scores-baseline-c4" / "summary.json").read_text())
    assert summary["table3"]["acc"]["value"] == 0.5
    assert biovqa.open_bench(tmp_path / "demo" / "bench-c4").manifest["parameters"]["embedder"]["precomputed"]


def _two_dataset_bench(root: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A whale shark + Grevy's zebra bench built from designed embeddings (no model)."""
    catalogs, embeddings = designed_catalogs(root, catalog_seeds={"whaleshark": 21, "gzcd": 22}, vector_seed=11)
    code, err = cli(["build", "c4", *(a for name, coco in catalogs.items() for a in ("--catalog", f"{name}={coco}")),
                     "--embeddings", embeddings, "--pairs", "6", "--out", root / "bench"], capsys)
    assert code == 0, err
    return root / "bench"


def test_specialist_on_one_dataset_is_scored_and_reported_on_it(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from scipy.stats import norm

    from biovqa.components.c4.specialist import run_specialist

    bench = _two_dataset_bench(tmp_path, capsys)
    predictions = run_specialist(bench, PixelEmbedder(), tmp_path / "run-md", datasets=["gzcd"])
    results = json.loads((tmp_path / "run-md" / "specialist.json").read_text())["datasets"]["gzcd"]["conditions"]
    code, err = cli(["score", bench, "-p", predictions, "-o", tmp_path / "scores-md", "--bootstrap", "200"], capsys)
    assert code == 0, err
    summary = json.loads((tmp_path / "scores-md" / "summary.json").read_text())
    n_gzcd = sum(1 for d in biovqa.open_bench(bench).items.column("dataset").to_pylist() if d == "gzcd")
    assert summary["subset"]["n_items"] == n_gzcd and summary["subset"]["of"] == 2 * n_gzcd
    assert summary["statuses"]["missing"] == 0 and list(summary["cells"]) == ["gzcd"]
    # Table 3: d′ = √2·z(AUC) of the random condition, accuracy of the fitted threshold
    random_auc = results["random"]["auc"]
    assert summary["table3"]["dprime"]["value"] == pytest.approx(np.sqrt(2) * norm.ppf(random_auc), abs=1e-9)
    assert summary["table3"]["acc"]["value"] == pytest.approx(results["random"]["acc"])
    assert summary["table3"]["dprime"]["lo"] is not None
    for condition in ("easy", "random", "hard"):
        assert summary["pooled"][condition]["auc"]["value"] == pytest.approx(results[condition]["auc"])
    # a VLM-style run on the whole bench, then one report
    baseline = biovqa.run(bench, tmp_path / "run-floor", backend="baseline", progress=False)
    code, err = cli(["score", bench, "-p", baseline, "-o", tmp_path / "scores-floor", "--bootstrap", "0"], capsys)
    assert code == 0, err
    code, err = cli(["report", tmp_path / "scores-md", tmp_path / "scores-floor", "--out", tmp_path / "report"], capsys)
    assert code == 0, err
    import pandas as pd

    table3 = pd.read_csv(tmp_path / "report" / "c4_table3.csv")
    specialist = table3[table3["model"] == "MegaDescriptor-L-384"].iloc[0]
    assert specialist["scored_on"] == "Grevy's zebra only"
    assert specialist["dprime"] == pytest.approx(round(np.sqrt(2) * norm.ppf(random_auc), 3))
    assert set(table3["scored_on"]) == {"Grevy's zebra only", "all"}
    table53 = pd.read_csv(tmp_path / "report" / "c4_table53_specialist.csv")
    assert list(table53["condition"]) == ["easy", "random", "hard"]
    assert table53["AUC"].tolist() == pytest.approx([round(results[c]["auc"], 3) for c in ("easy", "random", "hard")])
    assert "MegaDescriptor-L-384" not in set(pd.read_csv(tmp_path / "report" / "c4_table49_dprime.csv")["model"])
