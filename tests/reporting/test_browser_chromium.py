"""The report in a real headless Chromium (Debian `chromium`, installed by .ci/run): leaderboard,
TOC and item browser render, filters work, hostile model text shows as text and runs nothing.
Screenshots are saved under the test's tmp path."""

from __future__ import annotations

import html as html_lib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from biovqa.reporting.browser import page_list, read_index, read_page
from reporting_hostile import HOSTILE_REPLY  # type: ignore[import-not-found]
from test_browser import INDEX_LIMIT, large_browser, startup_bytes  # type: ignore[import-not-found]  # noqa: F401

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
         "--virtual-time-budget=8000", "--run-all-compositor-stages-before-draw"]


def _chromium(*args: str, cwd: Path) -> str:
    result = subprocess.run([str(CHROMIUM), *FLAGS, *args], capture_output=True, text=True, timeout=120, cwd=cwd)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _dom(report: Path, fragment: str = "") -> str:
    return _chromium("--dump-dom", (report / "index.html").as_uri() + fragment, cwd=report)


def _pages(report: Path) -> tuple[list[dict], dict[int, list[dict]]]:
    pages = page_list(read_index(report))
    return pages, {p["no"]: read_page(report, p["no"]) for p in pages}


def _items(dom: str) -> list[str]:
    return re.findall(r'<div class="item" data-item="([^"]+)">', dom)


def _listed(report: Path, **facets: str) -> tuple[list[str], list[tuple[dict, int]]]:
    """The item ids a filter lists, in order (its cells' pages concatenated), and each page with
    the number of items before it in that list: the browser shows them page_size at a time."""
    index = read_index(report)
    ids: list[str] = []
    pages = []
    for page in page_list(index):
        if all(page[k] == v for k, v in facets.items()):
            pages.append((page, len(ids)))
            ids += [r["id"] for r in read_page(report, page["no"])]
    return ids, pages


def _screen(report: Path, page_no: int, **facets: str) -> tuple[list[str], set[str]]:
    """The ids on screen page ``page_no`` (1-based) of a filter, and the page files holding them."""
    ids, pages = _listed(report, **facets)
    size = read_index(report)["page_size"]
    start, end = (page_no - 1) * size, page_no * size
    files = {p["file"] for p, before in pages if before < end and before + len(read_page(report, p["no"])) > start}
    return ids[start:end], files


def test_leaderboard_toc_and_browser_render(report_dir: Path, tmp_path: Path) -> None:
    dom = _dom(report_dir)
    assert 'id="table3"' in dom and "Good-VL-8B" in dom and dom.count('<tr class="kind-vlm">') == 4
    assert '<nav class="toc"' in dom and 'href="#browser"' in dom
    items = _items(dom)
    assert items, "the browser showed no item"
    assert re.search(r'<img src="browser/thumbs/[0-9a-f]+\.jpg"', dom)
    assert "page 1 of" in dom and "data-pwned" not in dom
    shot = tmp_path / "report-top.png"
    _chromium(f"--screenshot={shot}", "--window-size=1400,1800", (report_dir / "index.html").as_uri(), cwd=report_dir)
    assert shot.stat().st_size > 10_000


def test_filters_select_items(report_dir: Path, tmp_path: Path) -> None:
    pages, rows = _pages(report_dir)
    tier = next(p["tier"] for p in pages if p["component"] == "c3" and p["tier"])
    dom = _dom(report_dir, f"#browser?component=c3&tier={tier}")
    shown = _items(dom)
    expected, _ = _screen(report_dir, 1, component="c3", tier=tier)
    assert shown == expected and len(shown) == min(50, len(_listed(report_dir, component="c3", tier=tier)[0]))
    assert re.search(r'<select id="f-component">.*<option value="c3" selected', dom, re.S) or 'value="c3"' in dom
    shot = tmp_path / "browser-filtered.png"
    _chromium(f"--screenshot={shot}", "--window-size=1400,1400",
              (report_dir / "index.html").as_uri() + f"#browser?component=c3&tier={tier}", cwd=report_dir)
    assert shot.stat().st_size > 10_000


def test_hostile_reply_shows_as_text_and_runs_nothing(report_dir: Path, tmp_path: Path) -> None:
    pages, rows = _pages(report_dir)
    page = next(p for p in pages if any(rep and rep[1] == HOSTILE_REPLY for r in rows[p["no"]] for rep in r["replies"]))
    ids, _ = _listed(report_dir, component=page["component"], task=page["task"])
    hostile = next(r["id"] for r in rows[page["no"]] if any(rep and rep[1] == HOSTILE_REPLY for rep in r["replies"]))
    fragment = f"#browser?component={page['component']}&task={page['task']}&page={ids.index(hostile) // 50 + 1}"
    dom = _dom(report_dir, fragment)
    assert html_lib.escape(HOSTILE_REPLY, quote=False) in dom  # the reply is a text node
    assert "data-pwned" not in dom and '<img src="x"' not in dom
    assert "<script>document.body" not in dom
    shot = tmp_path / "browser-hostile.png"
    _chromium(f"--screenshot={shot}", "--window-size=1400,1400",
              (report_dir / "index.html").as_uri() + fragment, cwd=report_dir)
    assert shot.stat().st_size > 10_000


#: acts as a user would — each step ["pick", filter, value] or ["click", button id], 0.8 s apart —
#: then writes what it sees (address, page line, the scripts asked for) into <pre id="probe">
DRIVER = """<script>
(function (steps) {
  function step() { var s = steps.shift();
    if (!s) { var pre = document.createElement("pre"); pre.id = "probe";
      pre.textContent = JSON.stringify({hash: location.hash, info: document.getElementById("pageinfo").textContent,
        loaded: Array.prototype.map.call(document.scripts, function (e) { return e.src; }),
        overlay: document.getElementById("overlay").hidden ? null : document.getElementById("overlay-img").getAttribute("src"),
        filters: ["component", "task", "group", "tier"].map(function (k) { return document.getElementById("f-" + k).value; })});
      document.body.appendChild(pre); return; }
    if (s[0] === "pick") { var e = document.getElementById("f-" + s[1]); e.value = s[2];
      e.dispatchEvent(new Event("input")); e.dispatchEvent(new Event("change")); }
    else if (s[0] === "check") { var c = document.getElementById("f-" + s[1]); c.checked = true; c.dispatchEvent(new Event("change")); }
    else if (s[0] === "enlarge") { document.querySelector("#items img").click(); }
    else { document.getElementById(s[1]).click(); }
    setTimeout(step, 800); }
  setTimeout(step, 300);
})(STEPS);
</script>"""


def _drive(report_dir: Path, folder: Path, steps: list[list[str]]) -> tuple[str, dict]:
    """The DOM after ``steps`` on report_dir's page opened beside ``folder``'s browser/, and the probe."""
    page = (report_dir / "index.html").read_text(encoding="utf-8")
    (folder / "probe.html").write_text(page.replace("</body>", DRIVER.replace("STEPS", json.dumps(steps)) + "</body>"),
                                       encoding="utf-8")
    dom = _chromium("--dump-dom", (folder / "probe.html").as_uri(), cwd=folder)
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, "the driver did not finish"
    return dom, json.loads(html_lib.unescape(found.group(1)))


def test_filter_then_page_in_a_large_report(report_dir: Path, large_browser: Path) -> None:  # noqa: F811
    """≥ 100 000 items: start-up loads index.js only (a few KiB); filtering and paging load just the
    pages shown, and show the right items."""
    index = read_index(large_browser)
    assert index["items"] >= 100_000 and startup_bytes(large_browser) < INDEX_LIMIT
    group, tier = "Birds", "hard"  # one spelling per tier: the browser lower-cases them
    dom, probe = _drive(report_dir, large_browser, [["pick", "group", group], ["pick", "tier", tier],
                                                    ["click", "next"], ["click", "next"]])
    chosen, _ = _listed(large_browser, group=group, tier=tier)
    assert len(chosen) > 150
    third, third_files = _screen(large_browser, 3, group=group, tier=tier)
    assert _items(dom) == third and len(third) == 50  # fixed-size pages, across cells
    assert probe["hash"] == f"#browser?group={group}&tier={tier}&page=3"
    assert f"page 3 of {-(-len(chosen) // 50)} ({len(chosen):,} items)" in probe["info"]
    # each list counts the items left under the other filters
    tier_no = [v for v, _ in index["facets"]["tier"]].index(tier)
    group_no = [v for v, _ in index["facets"]["group"]].index(group)
    left = sum(c[6] for c in index["cells"] if c[2] == group_no and c[3] == tier_no)
    assert f'<option value="{group}">{group} ({left:,})</option>' in dom
    # the scripts the page asked for from browser/: the index, then only the pages it showed (the
    # first page unfiltered, then with the group alone, then the three with group and tier)
    loaded = sorted(name.rsplit("/browser/", 1)[1] for name in probe["loaded"] if "/browser/" in name)
    shown = set().union(_screen(large_browser, 1)[1], _screen(large_browser, 1, group=group)[1],
                        *(_screen(large_browser, k, group=group, tier=tier)[1] for k in (1, 2, 3)))
    assert loaded == sorted({"index.js", *(f.removeprefix("browser/") for f in shown)})


def test_filters_follow_each_other_and_empty_values(report_dir: Path, tmp_path: Path) -> None:
    """A C1 task, then component C3: the task goes back to "all". Items without a tier are chosen
    as "(none)" and are the only ones shown."""
    pages = page_list(read_index(report_dir))
    c1_task = next(p["task"] for p in pages if p["component"] == "c1")
    assert not any(p["component"] == "c3" and p["task"] == c1_task for p in pages)
    blank = next(p for p in pages if p["tier"] == "")  # the demo benches have items without a tier
    folder = tmp_path / "report"
    shutil.copytree(report_dir / "browser", folder / "browser")
    dom, probe = _drive(report_dir, folder, [["pick", "task", c1_task], ["pick", "component", "c3"]])
    assert probe["filters"] == ["c3", "", "", ""]
    assert _items(dom) == _screen(report_dir, 1, component="c3")[0]
    dom, probe = _drive(report_dir, folder, [["pick", "component", blank["component"]], ["pick", "tier", "(none)"]])
    assert probe["hash"] == f"#browser?component={blank['component']}&tier=(none)"
    assert _items(dom) == _screen(report_dir, 1, component=blank["component"], tier="")[0]
    assert all(r["tier"] == "" for r in read_page(report_dir, blank["no"]))


def _shown(dom: str) -> list[dict]:
    """Per item on screen: its id and each reply row's cells (model, status, reply, parsed, score, why)."""
    out = []
    for block in re.findall(r'<div class="item" data-item="[^"]+">.*?</table>', dom, re.S):
        item = re.search(r'data-item="([^"]+)"', block).group(1)  # type: ignore[union-attr]
        rows = [[html_lib.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
                for tr in re.findall(r"<tr>(.*?)</tr>", block, re.S)]
        out.append({"id": item, "replies": [r for r in rows if r]})
    return out


def test_search_model_filter_sort_and_enlarge(report_dir: Path, tmp_path: Path) -> None:
    """What a user triaging failures does: search a reply text, keep one model's wrong answers,
    sort by score, open an image large, jump to one item by id."""
    pages, rows = _pages(report_dir)
    folder = tmp_path / "report"
    shutil.copytree(report_dir / "browser", folder / "browser")
    c3 = [r for p in pages if p["component"] == "c3" for r in rows[p["no"]]]
    word = next(r["gold"] for r in c3 if r["gold"] and not r["gold"].isdigit() and len(r["gold"]) > 3)
    expected = [r["id"] for r in c3 if word.lower() in " ".join([r["id"], r["question"], r["gold"], *r["options"],
                *[(rep[1] or "") + " " + (rep[2] or "") for rep in r["replies"] if rep]]).lower()]
    dom, probe = _drive(report_dir, folder, [["pick", "component", "c3"], ["pick", "q", word]])
    assert _items(dom) == expected[:50] and f"({len(expected):,} items found)" in probe["info"]
    assert "q=" in probe["hash"]
    # one model's incorrect answers, lowest score first: every reply row of that model is below 1
    dom, probe = _drive(report_dir, folder, [["pick", "component", "c3"], ["pick", "model", "Good-VL-8B"],
                                             ["pick", "answer", "incorrect"], ["pick", "sort", "asc"]])
    shown = _shown(dom)
    assert shown
    scores = [float(next(r for r in item["replies"] if r[0] == "Good-VL-8B")[4]) for item in shown]
    assert all(v < 1 for v in scores) and scores == sorted(scores)
    assert all(len(r) == 6 for item in shown for r in item["replies"] if r[1] == "ok")  # the score explained
    # models disagree: no item where every model scored the same
    dom, _ = _drive(report_dir, folder, [["pick", "component", "c1"], ["check", "disagree"]])
    for item in _shown(dom):
        assert len({r[4] for r in item["replies"] if r[1] == "ok"}) > 1
    # click a thumbnail: the large copy opens
    dom, probe = _drive(report_dir, folder, [["pick", "component", "c1"], ["enlarge"]])
    assert probe["overlay"] and probe["overlay"].startswith("browser/large/") and (folder / probe["overlay"]).exists()
    # a link to one item
    target = c3[7]["id"]
    shutil.copy(report_dir / "index.html", folder / "index.html")
    dom = _chromium("--dump-dom", (folder / "index.html").as_uri() + f"#browser?item={target}", cwd=folder)
    assert _items(dom) == [target]
    shot = tmp_path / "browser-search.png"
    _chromium(f"--screenshot={shot}", "--window-size=1280,1400",
              (report_dir / "index.html").as_uri() + f"#browser?component=c3&q={word}", cwd=report_dir)
    assert shot.stat().st_size > 10_000


def test_table3_at_1280_px_keeps_the_model_column_and_shows_one_component(report_dir: Path, tmp_path: Path) -> None:
    dom = _dom(report_dir)
    assert dom.count('<tr class="kind-vlm">') == 4 and 'class="model"' in dom
    assert '<button type="button" data-comp="C3">C3</button>' in dom
    shot = tmp_path / "table3-1280.png"
    _chromium(f"--screenshot={shot}", "--window-size=1280,1000", (report_dir / "index.html").as_uri() + "#leaderboard",
              cwd=report_dir)
    assert shot.stat().st_size > 10_000
