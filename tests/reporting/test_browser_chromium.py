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

from reporting_hostile import HOSTILE_REPLY  # type: ignore[import-not-found]

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


def _pages(report: Path) -> tuple[dict, dict[int, list[dict]]]:
    text = (report / "browser" / "manifest.js").read_text(encoding="utf-8")
    manifest = json.loads(text.removeprefix("window.BIOVQA_BROWSER=").rstrip().rstrip(";"))
    rows = {}
    for page in manifest["pages"]:
        body = (report / page["file"]).read_text(encoding="utf-8")
        rows[page["no"]] = json.loads(body[body.index(",") + 1:body.rindex(")")])
    return manifest, rows


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
    manifest, rows = _pages(report_dir)
    tier = next(t for t in manifest["facets"]["tier"] if any(
        p["component"] == "c3" and t in p["tiers"] for p in manifest["pages"]))
    dom = _dom(report_dir, f"#browser?component=c3&tier={tier}")
    shown = _items(dom)
    c3_ids = {r["id"]: r for p in manifest["pages"] if p["component"] == "c3" for r in rows[p["no"]]}
    assert shown and all(i in c3_ids and c3_ids[i]["tier"] == tier for i in shown)
    first = next(p for p in manifest["pages"] if p["component"] == "c3" and tier in p["tiers"])
    assert set(shown) == {r["id"] for r in rows[first["no"]] if r["tier"] == tier}
    assert re.search(r'<select id="f-component">.*<option value="c3" selected', dom, re.S) or 'value="c3"' in dom
    shot = tmp_path / "browser-filtered.png"
    _chromium(f"--screenshot={shot}", "--window-size=1400,1400",
              (report_dir / "index.html").as_uri() + f"#browser?component=c3&tier={tier}", cwd=report_dir)
    assert shot.stat().st_size > 10_000


def test_hostile_reply_shows_as_text_and_runs_nothing(report_dir: Path, tmp_path: Path) -> None:
    manifest, rows = _pages(report_dir)
    page = next(p for p in manifest["pages"] if any(
        rep and rep[1] == HOSTILE_REPLY for r in rows[p["no"]] for rep in r["replies"]))
    same = [p for p in manifest["pages"] if p["component"] == page["component"] and p["task"] == page["task"]]
    fragment = f"#browser?component={page['component']}&task={page['task']}&page={same.index(page) + 1}"
    dom = _dom(report_dir, fragment)
    assert html_lib.escape(HOSTILE_REPLY, quote=False) in dom  # the reply is a text node
    assert "data-pwned" not in dom and '<img src="x"' not in dom
    assert "<script>document.body" not in dom
    shot = tmp_path / "browser-hostile.png"
    _chromium(f"--screenshot={shot}", "--window-size=1400,1400",
              (report_dir / "index.html").as_uri() + fragment, cwd=report_dir)
    assert shot.stat().st_size > 10_000
