"""The item browser's sidecar files on a large synthetic report (≥ 100 000 items, score folders
only, built in seconds): the start-up index stays a few KiB whatever the item count, every item
lands on exactly one page of its (component, task, group, tier) cell, and model text is escaped."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from biovqa.reporting.browser import PAGE_SIZE, page_list, read_index, read_page, write_browser
from biovqa.reporting.leaderboard import Run
from reporting_hostile import HOSTILE_REPLY  # type: ignore[import-not-found]

TASKS = ("phylum", "class", "order", "family", "genus", "species", "scientific_name", "common_name", "mcq")
GROUPS = ("Amphibians", "Angiosperms", "Arachnids", "Birds", "Bryophytes", "Fish", "Gymnosperms", "Insects",
          "Mammals", "Reptiles")
TIERS = ("Easy", "Medium", "Hard")
LARGE = 100_000
INDEX_LIMIT = 64 * 1024


def write_large_scores(root: Path, n: int, models: int = 2) -> list[Run]:
    """Score folders of ``models`` models over ``n`` C1-like items (9 tasks × 10 groups × 3 tiers);
    the last model skips every 7th item and one reply is hostile."""
    runs = []
    for m in range(models):
        keep = [k for k in range(n) if m < models - 1 or k % 7]
        replies = [HOSTILE_REPLY if k == 12_345 else f"answer {k % 97}" for k in keep]
        table = pa.table({
            "item_id": [f"c1-{k:07d}" for k in keep],
            "task": pa.array([TASKS[k % len(TASKS)] for k in keep]).dictionary_encode(),
            "group": pa.array([GROUPS[(k // 9) % len(GROUPS)] for k in keep]).dictionary_encode(),
            "tier": pa.array([TIERS[(k // 90) % len(TIERS)] for k in keep]).dictionary_encode(),
            "status": pa.array(["ok"] * len(keep)).dictionary_encode(),
            "response": replies, "parsed": replies,
            "score": [float((k + m) % 2) for k in keep]})
        folder = root / f"scores-m{m}"
        folder.mkdir(parents=True)
        pq.write_table(table, folder / "items.parquet")
        runs.append(Run(f"Model-{m + 1}", "c1", {"provenance": {"benchmark": str(root / "no-bench")}}, folder))
    return runs


@pytest.fixture(scope="session")
def large_browser(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report folder holding only ``browser/`` for LARGE items × 2 models."""
    root = tmp_path_factory.mktemp("browser-large")
    write_browser(write_large_scores(root, LARGE), root / "report")
    return root / "report"


def startup_bytes(report: Path) -> int:
    """Bytes the page loads before the user opens anything: the browser's index only."""
    return (report / "browser" / "index.js").stat().st_size


@pytest.mark.slow
def test_startup_index_is_small_and_independent_of_item_count(large_browser: Path, tmp_path: Path) -> None:
    index = read_index(large_browser)
    assert index["items"] == LARGE and startup_bytes(large_browser) < INDEX_LIMIT
    assert len(index["cells"]) == len(TASKS) * len(GROUPS) * len(TIERS)
    assert not (large_browser / "browser" / "manifest.js").exists()
    # the same facets over a tenth of the items: the index differs only in the counts' digits
    small = write_browser(write_large_scores(tmp_path, LARGE // 10), tmp_path / "report")
    assert small["items"] == LARGE // 10 and len(small["cells"]) == len(index["cells"])
    assert abs(startup_bytes(large_browser) - startup_bytes(tmp_path / "report")) < 4 * len(index["cells"]) + 256


@pytest.mark.slow
def test_every_item_is_on_one_page_of_its_cell(large_browser: Path) -> None:
    index = read_index(large_browser)
    pages = page_list(index)
    assert [p["no"] for p in pages] == list(range(1, index["pages"] + 1))
    for cell in index["cells"]:
        assert cell[5] == math.ceil(cell[6] / PAGE_SIZE)
    assert {k: sum(c for _, c in index["facets"][k]) for k in index["facets"]} == dict.fromkeys(index["facets"], LARGE)
    seen: list[str] = []
    for page in pages[::37] + pages[-1:]:  # a spread of pages, the last included
        rows = read_page(large_browser, page["no"])
        assert 0 < len(rows) <= PAGE_SIZE
        assert all((r["task"], r["group"], r["tier"]) == (page["task"], page["group"], page["tier"]) for r in rows)
        assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)
        seen += [r["id"] for r in rows]
        for r in rows:
            k = int(r["id"].removeprefix("c1-"))
            assert (r["replies"][1] is None) == (k % 7 == 0) and r["replies"][0][0] == "ok"
    assert len(seen) == len(set(seen))
    # page counts per filter: all pages of the tier "Hard" hold exactly its items (one spelling: "hard")
    hard = [p for p in pages if p["tier"] == "hard"]
    assert sum(len(read_page(large_browser, p["no"])) for p in hard) == dict(index["facets"]["tier"])["hard"]
    assert not any(p["tier"] == "Hard" for p in pages)


@pytest.mark.slow
def test_hostile_reply_is_escaped_in_page_data(large_browser: Path) -> None:
    found = [(p, r) for p in page_list(read_index(large_browser)) if p["task"] == TASKS[12_345 % len(TASKS)]
             for r in read_page(large_browser, p["no"]) if r["id"] == "c1-0012345"]
    assert len(found) == 1 and found[0][1]["replies"][0][1] == HOSTILE_REPLY
    raw = (large_browser / found[0][0]["file"]).read_text(encoding="utf-8")
    assert "<" not in raw and ">" not in raw and "\\u003cscript\\u003e" in raw


def write_scores(root: Path, component: str, columns: dict[str, list[object]]) -> Run:
    """One score folder of ``component`` holding ``columns`` beside two plain replies."""
    folder = root / f"scores-{component}"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"item_id": ["a", "b"], "task": ["t", "t"], "status": ["ok", "ok"],
                             "response": ["1", "2"], "parsed": ["1", "2"], "score": [1.0, 0.0],
                             **columns}), folder / "items.parquet")
    return Run("Model-1", component, {}, folder)


def test_facets_and_explaining_columns_are_the_components_declared_ones(tmp_path: Path) -> None:
    """C3 declares its group (dataset) and tier columns (tier, then condition: the first with a
    value) and the score columns explaining a reply; a column another component declares
    (C1's group, em_soft) is neither a facet nor shown, and the gold is shown once, as the gold."""
    run = write_scores(tmp_path, "c3", {
        "group": ["Birds", "Birds"], "dataset": ["waid", "beetles"], "tier": ["Easy", None],
        "condition": ["same", "different"], "gold": ["3", "4"], "pred_number": [3.0, 5.0],
        "em_soft": [1.0, 0.0]})
    index = write_browser([run], tmp_path / "report")
    assert index["facets"]["group"] == [["beetles", 1], ["waid", 1]]
    assert index["facets"]["tier"] == [["different", 1], ["easy", 1]]
    rows = {r["id"]: r for p in page_list(index) for r in read_page(tmp_path / "report", p["no"])}
    assert rows["b"]["gold"] == "4" and rows["b"]["replies"][0][4] == {"pred_number": 5.0}


def test_a_plug_in_without_declared_facets_puts_its_items_in_one_cell(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from biovqa.components import registry

    monkeypatch.setitem(registry._REGISTRY, "labx", registry.Component(name="labx", title="Lab X", tasks=("t",)))
    run = write_scores(tmp_path, "labx", {"group": ["Birds", "Fish"], "tier": ["easy", "hard"],
                                          "parse_status": ["ok", "ok"]})
    index = write_browser([run], tmp_path / "report")
    assert index["facets"]["group"] == [["", 2]] and index["facets"]["tier"] == [["", 2]]
    assert [r["replies"][0][4] for r in read_page(tmp_path / "report", 1)] == [{}, {}]
