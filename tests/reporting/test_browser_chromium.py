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
    first = next(p for p in pages if p["component"] == "c3" and p["tier"] == tier)
    assert shown == [r["id"] for r in rows[first["no"]]] and all(r["tier"] == tier for r in rows[first["no"]])
    assert re.search(r'<select id="f-component">.*<option value="c3" selected', dom, re.S) or 'value="c3"' in dom
    shot = tmp_path / "browser-filtered.png"
    _chromium(f"--screenshot={shot}", "--window-size=1400,1400",
              (report_dir / "index.html").as_uri() + f"#browser?component=c3&tier={tier}", cwd=report_dir)
    assert shot.stat().st_size > 10_000


def test_hostile_reply_shows_as_text_and_runs_nothing(report_dir: Path, tmp_path: Path) -> None:
    pages, rows = _pages(report_dir)
    page = next(p for p in pages if any(rep and rep[1] == HOSTILE_REPLY for r in rows[p["no"]] for rep in r["replies"]))
    same = [p for p in pages if p["component"] == page["component"] and p["task"] == page["task"]]
    fragment = f"#browser?component={page['component']}&task={page['task']}&page={same.index(page) + 1}"
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
        filters: ["component", "task", "group", "tier"].map(function (k) { return document.getElementById("f-" + k).value; })});
      document.body.appendChild(pre); return; }
    if (s[0] === "pick") { var e = document.getElementById("f-" + s[1]); e.value = s[2]; e.dispatchEvent(new Event("change")); }
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
    group, tier = "Birds", "Hard"
    dom, probe = _drive(report_dir, large_browser, [["pick", "group", group], ["pick", "tier", tier],
                                                    ["click", "next"], ["click", "next"]])
    chosen = [p for p in page_list(index) if p["group"] == group and p["tier"] == tier]
    assert len(chosen) > 3
    assert _items(dom) == [r["id"] for r in read_page(large_browser, chosen[2]["no"])]
    assert probe["hash"] == f"#browser?group={group}&tier={tier}&page=3"
    assert f"page 3 of {len(chosen)} " in probe["info"]
    # each list counts the items left under the other filters
    tier_no = [v for v, _ in index["facets"]["tier"]].index(tier)
    group_no = [v for v, _ in index["facets"]["group"]].index(group)
    left = sum(c[6] for c in index["cells"] if c[2] == group_no and c[3] == tier_no)
    assert f'<option value="{group}">{group} ({left:,})</option>' in dom
    # the scripts the page asked for from browser/: the index, then only the pages it showed (the
    # first page unfiltered, then with the group alone, then the three with group and tier)
    loaded = sorted(name.rsplit("/browser/", 1)[1] for name in probe["loaded"] if "/browser/" in name)
    shown = [page_list(index)[0], next(p for p in page_list(index) if p["group"] == group), *chosen[:3]]
    assert loaded == sorted({"index.js", *(p["file"].removeprefix("browser/") for p in shown)})


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
    assert _items(dom) == [r["id"] for r in read_page(report_dir, next(p for p in pages if p["component"] == "c3")["no"])]
    dom, probe = _drive(report_dir, folder, [["pick", "component", blank["component"]], ["pick", "tier", "(none)"]])
    assert probe["hash"] == f"#browser?component={blank['component']}&tier=(none)"
    assert _items(dom) == [r["id"] for r in read_page(report_dir, blank["no"])]
    assert all(r["tier"] == "" for r in read_page(report_dir, blank["no"]))
