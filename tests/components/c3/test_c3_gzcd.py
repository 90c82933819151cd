"""C3 from GZCD (either native form) and the Wild Me catalogs: three nested counting questions per
GZCD photo (the GGR table only when declared complete), catalogs never as counting subsets, and
``biovqa build c3 --source gzcd=PATH``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from biovqa.components.c3.build import build_c3
from biovqa.components.c3.demo import write_gzcd
from biovqa.sources.wildlife import write_coco_catalog
from fixtures.cli_runner import cli

G, P, R = "zebra_grevys", "zebra_plains", "giraffe_reticulated"
PHOTOS = [[G], [G, G, P], [G, R, R], [R], [G, G, G, P, R]]
TINY = {"canvas": 64, "plate_side": 128}


def _counting(bench: object, subset: str) -> list[tuple[str, str, str, dict]]:
    items = bench.items.to_pydict()  # type: ignore[attr-defined]
    return [(i, q, a, json.loads(p)) for t, s, i, q, a, p in zip(items["task"], items["subset"], items["item_id"],
                                                                 items["question"], items["answer"],
                                                                 items["answer_payload"])
            if t == "counting" and s == subset]


@pytest.mark.parametrize("form", ["table", "coco"])
def test_gzcd_asks_three_nested_counting_questions_per_photo(tmp_path: Path, form: str) -> None:
    # the COCO release counts by default; the GGR detection table only when declared complete
    declared = ("gzcd",) if form == "table" else ()
    bench = build_c3({"gzcd": write_gzcd(tmp_path / "gzcd", PHOTOS, form=form)}, tmp_path / "b",
                     counting_tiers=("easy",), complete_counts=declared, **TINY)
    rows = _counting(bench, "gzcd")
    asked: dict[str, dict[str, int]] = {}
    for item_id, question, answer, payload in rows:
        photo = item_id.split("-")[3]
        asked.setdefault(photo, {})[payload["level"]] = int(answer)
        noun = {"animals": "animals", "zebras": "zebras", "grevys": "Grevy's zebras"}[payload["level"]]
        assert question == f"How many {noun} are there in this image?"
        assert payload["count"] == int(answer)
    expected = sorted(tuple(sorted((k, v) for k, v in {"animals": len(p), "zebras": sum(s.startswith("zebra") for s in p),
                                                       "grevys": p.count(G)}.items() if v)) for p in PHOTOS)
    assert sorted(tuple(sorted(d.items())) for d in asked.values()) == expected
    for counts in asked.values():  # nested: each level's count is at most the one above it
        assert counts["animals"] >= counts.get("zebras", 0) >= counts.get("grevys", 0)
    # the giraffe-only photo gets one question, the other four get three
    assert len(rows) == 3 * 4 + 1
    assert bench.manifest["skipped"]["counting gzcd: no zebras in the photograph (level not asked)"] == 1
    assert bench.manifest["subsets"]["gzcd"]["count_levels"] == ["animals", "zebras", "grevys"]
    assert bench.manifest["subsets"]["gzcd"]["items"]["counting"] == 13
    # GZCD also feeds localization (single-annotation photos) and viewpoint
    counts = bench.manifest["counts"]["by_task"]
    assert counts["localization"] == 2 and counts["viewpoint"] == sum(map(len, PHOTOS))


def test_gzcd_contributes_about_three_times_the_median_subset(tmp_path: Path) -> None:
    from biovqa.components.c3.demo import write_bees, write_depondfi

    sources = {"gzcd": write_gzcd(tmp_path / "gzcd", [[G, P], [G], [G, G], [G, R]]),
               "bees": write_bees(tmp_path / "bees", [2, 4, 6, 8]),
               "depondfi": write_depondfi(tmp_path / "dp", [1, 2, 3, 5])}
    bench = build_c3(sources, tmp_path / "b", complete_counts=("gzcd",), **TINY)
    ratios = bench.manifest["counting_items_vs_median_subset"]
    assert ratios["paper_gzcd_ratio"] == 2.9
    assert ratios["ratios"]["gzcd"] == 3.0 and ratios["ratios"]["bees"] == 1.0


def _hyena(root: Path, views: list[str | None], per_image: list[int]) -> Path:
    images = [{"id": k + 1, "file_name": f"{k:03d}.jpg", "width": 120, "height": 80} for k in range(len(per_image))]
    annotations, n = [], 0
    for k, count in enumerate(per_image):
        for j in range(count):
            entry = {"id": n + 1, "image_id": k + 1, "bbox": [5.0 + 30 * j, 10.0, 25.0, 30.0], "theta": 0.0,
                     "name": f"ind{n}", "category_id": 0}
            if views[n] is not None:
                entry["viewpoint"] = views[n]
            annotations.append(entry)
            n += 1
    write_coco_catalog(root, annotations, images, categories=[{"id": 0, "name": "hyena"}])
    for image in images:
        Image.new("RGB", (120, 80), (100, 90, 80)).save(root / "images" / "train2022" / image["file_name"])
    return root


def test_wild_me_catalogs_form_no_counting_subsets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the paper's ten subsets come from its five ecological datasets; re-ID catalogs serve
    # localization and viewpoint only (they annotate individuals of interest, not every animal)
    root = _hyena(tmp_path / "hyena.coco", ["left", "right", "back", None, "up", "front"], [1, 2, 2, 1])
    bench = build_c3({"hyena": root}, tmp_path / "b", **TINY)
    assert bench.manifest["subsets"] == {}
    assert bench.manifest["counting_sources"]["hyena"]["counting"] is False
    assert "re-identification catalog" in bench.manifest["counting_sources"]["hyena"]["why"]
    assert "counting" in bench.manifest["skipped_tasks"]
    assert bench.manifest["counts"]["by_task"]["localization"] == 2  # the two one-animal photos
    code, err = cli(["build", "c3", "--source", f"hyena={root}", "--complete-counts", "hyena", "--out",
                     tmp_path / "x"], capsys)
    assert code == 2 and "re-identification catalog" in err and "Traceback" not in err


def test_cli_builds_c3_from_either_gzcd_form(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for form in ("table", "coco"):
        source = write_gzcd(tmp_path / form, PHOTOS[:3], form=form)
        code, err = cli(["build", "c3", "--source", f"gzcd={source}", "--out", tmp_path / f"bench-{form}",
                         "--canvas", "64"], capsys)
        assert code == 0, err
        assert (tmp_path / f"bench-{form}" / "items.parquet").exists()
    neither = tmp_path / "neither"
    neither.mkdir()
    code, err = cli(["build", "c3", "--source", f"gzcd={neither}", "--out", tmp_path / "x"], capsys)
    assert code == 2
    assert str(neither) in err and "final_metadata.json" in err and "Traceback" not in err
