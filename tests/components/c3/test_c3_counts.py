"""C3 item counts: shared two-panel counting canvases (both sides asked), distinct partners per
photo and tier, several relative-counting grids per anchor asked "most" and/or "least", GZCD's
nested levels on the same canvases, the build options, and the defaults' per-subset counts."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from biovqa.components.c3.build import build_c3
from biovqa.components.c3.build.items import COUNTING_PARTNERS, GRIDS_PER_ANCHOR
from biovqa.components.c3.build.pairing import partner_pairs
from biovqa.components.c3.demo import write_bees, write_depondfi, write_gzcd, write_waid
from fixtures.cli_runner import cli

TINY = {"canvas": 64, "plate_side": 128}
N = 10  # photos per dataset


def _distinct_counts(n: int) -> list[int]:
    """Strictly increasing counts, each ≥ 10 % and ≥ 1 above the one before: any four photos have a
    unique most and a unique least with the relative-counting margin."""
    out = [1]
    while len(out) < n:
        out.append(max(out[-1] + 1, -(-out[-1] * 11 // 10)))
    return out


@pytest.fixture(scope="module")
def three_datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("c3counts")
    counts = _distinct_counts(3 * N)
    return {"bees": write_bees(root / "bees", counts[0::3], size=(120, 90)),
            "depondfi": write_depondfi(root / "depondfi", counts[1::3], size=(90, 90)),
            "waid": write_waid(root / "waid", {"train": counts[2::3]}, size=(120, 90))}


@pytest.fixture(scope="module")
def default_build(tmp_path_factory: pytest.TempPathFactory, three_datasets: dict[str, Path]) -> object:
    return build_c3(three_datasets, tmp_path_factory.mktemp("c3b") / "bench", **TINY)


def _rows(bench: object, task: str) -> list[dict]:
    items = bench.items.to_pylist()  # type: ignore[attr-defined]
    return [{**r, "payload": json.loads(r["answer_payload"])} for r in items if r["task"] == task]


def test_partner_pairs_are_distinct_regular_and_seeded() -> None:
    photos = [object() for _ in range(32)]
    for across in (False, True):
        entries = [(f"d{k % 4}", p) for k, p in enumerate(photos)] if across else [("s", p) for p in photos]
        for partners in (1, 2, 3, 4, 5):
            pairs = partner_pairs(entries, partners, np.random.default_rng(7), across=across)
            keys = [frozenset((id(a), id(b))) for a, b in pairs]
            assert len(set(keys)) == len(keys) and all(len(k) == 2 for k in keys)  # no pair twice, no self-pair
            degree: dict[int, int] = defaultdict(int)
            for a, b in pairs:
                degree[id(a)] += 1
                degree[id(b)] += 1
            assert max(degree.values()) == partners
            if partners % 2 == 0:  # even: every photo gets exactly that many distinct partners
                assert sorted(degree.values()) == [partners] * len(photos)
            group = {id(p): g for g, p in entries}
            if across:
                assert all(group[id(a)] != group[id(b)] for a, b in pairs)
            again = partner_pairs(entries, partners, np.random.default_rng(7), across=across)
            assert [(id(a), id(b)) for a, b in again] == [(id(a), id(b)) for a, b in pairs]
    # a pool smaller than the number of partners: every pair once (the complete graph)
    few = [("s", object()) for _ in range(4)]
    assert len(partner_pairs(few, 4, np.random.default_rng(0), across=False)) == 6
    # one group only: nothing to pair across groups
    assert partner_pairs(few, 4, np.random.default_rng(0), across=True) == []


def test_two_panel_canvases_are_shared_by_their_left_and_right_photographs(default_build: object) -> None:
    by_image: dict[str, list[dict]] = defaultdict(list)
    for row in _rows(default_build, "counting"):
        by_image[row["image"]].append(row)
    for image, rows in by_image.items():
        tiers = {r["tier"] for r in rows}
        assert len(tiers) == 1
        if tiers == {"easy"}:
            assert len(rows) == 1 and rows[0]["payload"]["panel"] is None
            continue
        assert sorted(r["payload"]["panel"] for r in rows) == ["left", "right"]  # every count here is > 0
        left, right = sorted(rows, key=lambda r: r["payload"]["panel"])
        assert left["cluster"] != right["cluster"] and left["image_sha256"] == right["image_sha256"]
        assert left["payload"]["other_count"] == right["payload"]["count"]
        assert right["payload"]["other_count"] == left["payload"]["count"]
        if rows[0]["tier"] == "medium":
            assert left["subset"] != right["subset"]
        else:
            assert left["subset"] == right["subset"]
    assert len({r["item_id"] for r in _rows(default_build, "counting")}) == len(_rows(default_build, "counting"))


def test_each_photo_gets_distinct_partners_per_tier(default_build: object) -> None:
    partners: dict[tuple[str, str], list[str]] = defaultdict(list)
    by_image: dict[str, list[dict]] = defaultdict(list)
    for row in _rows(default_build, "counting"):
        if row["tier"] != "easy":
            by_image[row["image"]].append(row)
    for rows in by_image.values():
        a, b = rows
        partners[(a["cluster"], a["tier"])].append(b["cluster"])
        partners[(b["cluster"], b["tier"])].append(a["cluster"])
    assert len(partners) == 2 * 3 * N  # every photo, both two-panel tiers
    for (_, tier), others in partners.items():
        assert len(others) == len(set(others)) == COUNTING_PARTNERS


def test_defaults_give_the_papers_per_subset_counts(default_build: object) -> None:
    manifest = default_build.manifest  # type: ignore[attr-defined]
    assert manifest["parameters"]["counting_partners"] == COUNTING_PARTNERS == 4
    assert manifest["parameters"]["grids_per_anchor"] == GRIDS_PER_ANCHOR
    grids = round(N * GRIDS_PER_ANCHOR)
    for sid in ("bees", "depondfi", "waid-sheep"):
        items = manifest["subsets"][sid]["items"]
        assert items["counting"] == N * (1 + 4 + 4)  # easy 1 + medium 4 + hard 4 per photo
        # every grid has a unique most and least here, so each is asked twice
        assert items["relative_counting"] == 2 * grids
    counting = _rows(default_build, "counting")
    assert {t: sum(r["tier"] == t for r in counting) for t in ("easy", "medium", "hard")} == {
        "easy": 3 * N, "medium": 3 * N * 4, "hard": 3 * N * 4}
    images = manifest["images"]
    canvases = 3 * N + 2 * (3 * N * 4 // 2) + 3 * grids  # easy + two-panel pairs + grids
    assert images["by_task"]["counting"] + images["by_task"]["relative_counting"] == canvases
    assert images["expected_paper_count"] == 78139
    assert images["difference"] == images["produced"] - 78139
    assert manifest["task_counts"]["counting"]["expected_paper_count"] == 53498


def test_relative_counting_grids_are_asked_most_and_least(default_build: object) -> None:
    by_image: dict[str, list[dict]] = defaultdict(list)
    for row in _rows(default_build, "relative_counting"):
        by_image[row["image"]].append(row)
    letters: dict[str, int] = defaultdict(int)
    for rows in by_image.values():
        assert sorted(r["payload"]["extreme"] for r in rows) == ["least", "most"]
        counts = rows[0]["payload"]["counts"]
        for r in rows:
            pick = max if r["payload"]["extreme"] == "most" else min
            assert r["answer"] == pick(counts, key=counts.get)
            assert r["payload"]["counts"] == counts
            letters[r["answer"]] += 1
    assert set(letters) == {"A", "B", "C", "D"}
    conditions = {r["condition"] for r in _rows(default_build, "relative_counting")}
    assert {r["tier"] for r in _rows(default_build, "relative_counting")} == {None}  # a condition, not a tier
    assert conditions == {"same", "different"}


def test_outputs_are_identical_across_runs_and_workers(tmp_path: Path, three_datasets: dict[str, Path],
                                                       default_build: object) -> None:
    again = build_c3(three_datasets, tmp_path / "again", workers=2, **TINY)
    assert again.manifest["items_sha256"] == default_build.manifest["items_sha256"]  # type: ignore[attr-defined]
    for image in sorted(set(again.items.column("image").to_pylist()))[::5]:
        assert again.resolve_image(image).read_bytes() == default_build.resolve_image(image).read_bytes()  # type: ignore[attr-defined]


def test_gzcd_nested_levels_share_the_canvases(tmp_path: Path, three_datasets: dict[str, Path]) -> None:
    g, p = "zebra_grevys", "zebra_plains"
    sources = {"gzcd": write_gzcd(tmp_path / "gzcd", [[g], [g, g, p], [g, p, p], [g, g], [g, g, g, p], [p]]),
               "bees": three_datasets["bees"]}
    bench = build_c3(sources, tmp_path / "b", counting_partners=2, grids_per_anchor=1, complete_counts=("gzcd",),
                     **TINY)
    by_side: dict[tuple[str, str | None], set[str]] = defaultdict(set)
    for row in _rows(bench, "counting"):
        if row["subset"] == "gzcd":
            by_side[(row["image"], row["payload"]["panel"])].add(row["payload"]["level"])
    assert by_side and all(levels <= {"animals", "zebras", "grevys"} for levels in by_side.values())
    # a photo with a Grevy's zebra is asked all three levels on each canvas it is on
    assert sum(levels == {"animals", "zebras", "grevys"} for levels in by_side.values()) >= 5 * 3
    assert bench.manifest["images"]["by_task"]["counting"] < len(_rows(bench, "counting"))


def test_cli_options_reach_the_manifest(tmp_path: Path, three_datasets: dict[str, Path],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench"
    code, err = cli(["build", "c3", "--source", f"bees={three_datasets['bees']}", "--source",
                     f"depondfi={three_datasets['depondfi']}", "--out", out, "--canvas", "64",
                     "--counting-partners", "2", "--grids-per-anchor", "1.5"], capsys)
    assert code == 0, err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["parameters"]["counting_partners"] == 2 and manifest["parameters"]["grids_per_anchor"] == 1.5
    for sid in ("bees", "depondfi"):
        assert manifest["subsets"][sid]["items"] == {"counting": N * (1 + 2 + 2), "relative_counting": 2 * 15}
    assert "images" in err and "78,139" in err
    code, err = cli(["build", "c3", "--source", f"bees={three_datasets['bees']}", "--out", tmp_path / "x",
                     "--counting-partners", "-1"], capsys)
    assert code == 2 and "counting-partners" in err
