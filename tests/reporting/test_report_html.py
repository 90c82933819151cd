"""The report over scored runs: leaderboard first, TOC, glossary, exports, escaping, browser data."""

from __future__ import annotations

import csv
import html as html_lib
import re
from pathlib import Path

import pytest

from reporting_hostile import HOSTILE_LABEL, HOSTILE_REPLY  # type: ignore[import-not-found]


@pytest.mark.slow
def test_report_structure(report_dir: Path) -> None:
    html = (report_dir / "index.html").read_text(encoding="utf-8")
    # the leaderboard comes first, before every component section, and the TOC links every section
    assert html.index('id="leaderboard"') < html.index('id="glossary"') < html.index("<h2>C1 hierarchical")
    toc = re.search(r'<nav class="toc".*?</nav>', html, re.S)
    assert toc is not None
    for anchor in re.findall(r'href="#([^"]+)"', toc.group(0)):
        assert f'id="{anchor}"' in html, anchor
    # intervals as value [lo, hi]; marks; glossary with equation numbers
    assert re.search(r'<td class="best[^"]*">0\.\d{3}<br><span class="ci">\[0\.\d{3}, 0\.\d{3}\]</span>', html)
    assert "C.1, Eq. 5" in html and "C.6, Eq. 23" in html
    # specialists first, floor last; the Mean row averages the four generalists only
    rows = re.findall(r'<tr class="kind-(\w+)"><td class="model">([^<]*)</td>', html)
    assert [k for k, _ in rows] == ["specialist", "vlm", "vlm", "vlm", "vlm", "mean", "floor"]
    assert rows[1][1] == "Good-VL-8B"


@pytest.mark.slow
def test_hostile_text_is_escaped_everywhere(report_dir: Path) -> None:
    html = (report_dir / "index.html").read_text(encoding="utf-8")
    assert "<b onmouseover" not in html and "&lt;b onmouseover=&#34;alert(1)&#34;&gt;" in html
    for md in report_dir.glob("*.md"):
        assert "<b onmouseover" not in md.read_text(encoding="utf-8"), md
    runs_tex = (report_dir / "runs.tex").read_text(encoding="utf-8")
    assert "Evil-VL-2B <b onmouseover=\"alert(1)\">" in runs_tex  # LaTeX prints < > as text
    pages = "".join(p.read_text(encoding="utf-8") for p in (report_dir / "browser").glob("page-*.js"))
    assert "<script>" not in pages and "\\u003cscript\\u003e" in pages
    rows = list(csv.reader((report_dir / "runs.csv").open(encoding="utf-8")))
    assert any(HOSTILE_LABEL in row[0] for row in rows)
    assert HOSTILE_REPLY  # the reply itself is checked in the browser test


@pytest.mark.slow
def test_every_table_is_exported_three_ways(report_dir: Path) -> None:
    stems = {p.stem for p in report_dir.glob("*.csv")}
    assert {"table3", "table3_rank_ranges", "runs", "analysis_pairs", "analysis_summary"} <= stems
    for stem in stems:
        assert (report_dir / f"{stem}.md").exists() and (report_dir / f"{stem}.tex").exists(), stem
    assert (report_dir / "analysis_task_rho.png").read_bytes()[:4] == b"\x89PNG"
    tex = (report_dir / "table3.tex").read_text(encoding="utf-8")
    assert tex.count("\\toprule") == 1 and "floor (image-blind)" in tex
    header = next(csv.reader((report_dir / "table3.csv").open(encoding="utf-8")))
    assert header[:3] == ["model", "kind", "phy"] and "phy_lo" in header and "cnt_hi" in header


@pytest.mark.slow
def test_browser_sidecar_files(report_dir: Path) -> None:
    from biovqa.reporting.browser import page_list, read_index, read_page

    index = read_index(report_dir)
    assert [v for v, _ in index["facets"]["component"]] == ["c1", "c3"]
    pages = page_list(index)
    assert len(index["models"]["c1"]) == 6 and len(pages) == index["pages"]
    assert all(len(read_page(report_dir, p["no"])) <= index["page_size"] for p in pages)
    rows = read_page(report_dir, pages[0]["no"])
    assert rows[0]["image"] and (report_dir / rows[0]["image"]).exists()
    assert len(rows[0]["replies"]) == 6 and rows[0]["gold"]


@pytest.mark.slow
def test_table3_markdown_prints_intervals_and_the_report_is_deterministic(report_dir: Path, scored_runs: list[Path],
                                                                          tmp_path: Path) -> None:
    from biovqa.reporting import write_report

    md = (report_dir / "table3.md").read_text(encoding="utf-8")
    assert re.search(r"\| Good-VL-8B \| vlm \| 0\.\d{3} \[0\.\d{3}, 0\.\d{3}\] \|", md)
    again = tmp_path / "again"
    write_report(scored_runs, again)
    first = sorted(p.relative_to(report_dir) for p in report_dir.rglob("*") if p.is_file())
    second = sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert first == second
    differ = [str(p) for p in first if (report_dir / p).read_bytes() != (again / p).read_bytes()]
    assert differ == []


#: tables whose rows are the floor rules (or runs) themselves, beside the models
_FLOOR_ROW_TABLES = {"table3", "runs", "c1_table3", "c3_table3", "c2_table3_c2", "c2_table3"}


@pytest.mark.slow
def test_a_floor_among_the_models_is_never_ranked_averaged_or_best(report_dir: Path) -> None:
    floor = "floor (image-blind)"
    for path in sorted(report_dir.glob("*.csv")):
        text = path.read_text(encoding="utf-8")
        if path.stem in _FLOOR_ROW_TABLES:
            continue
        assert floor not in text, path.name  # no rank, no best_model, no row among the models
    rows = {r["model"]: r for r in csv.DictReader((report_dir / "table3.csv").open(encoding="utf-8"))}
    assert rows[floor]["kind"] == "floor" and rows[floor]["phy_lo"] != ""  # its interval is shown
    vlms = [r for r in rows.values() if r["kind"] == "vlm"]
    assert len(vlms) == 4
    assert abs(float(rows["Mean"]["phy"]) - sum(float(r["phy"]) for r in vlms) / 4) < 1e-9
    pooled = list(csv.DictReader((report_dir / "c1_table18_pooled.csv").open(encoding="utf-8")))
    assert sorted(r["rank"] for r in pooled if r["rank"]) == ["1", "2", "3", "4"]
    md = (report_dir / "c1_table19_per_rank.md").read_text(encoding="utf-8")
    assert "| EM_5cfg |" in md and "| EM_4vlm |" in md  # 4 VLMs and the specialist; the floor is not one
    headline = list(csv.DictReader((report_dir / "c3_table38_headline.csv").open(encoding="utf-8")))
    assert headline and all(r["best_model"] != floor for r in headline)


@pytest.mark.slow
def test_every_column_of_every_table_has_a_glossary_entry_on_the_page(report_dir: Path) -> None:
    """Each column header of each table maps to a glossary term, and that term is listed, spelled
    out with its unit and where the paper defines it; the paper is cited by title and arXiv id once."""
    from biovqa.reporting.glossary import ARXIV, PAPER, explain

    html = (report_dir / "index.html").read_text(encoding="utf-8")
    glossary = html[html.index('<section id="glossary">'):]
    glossary = glossary[:glossary.index("</section>")]
    listed = set(re.findall(r"<dfn>([^<]*)</dfn>", glossary))
    categories = set()
    tables = sorted(report_dir.glob("*.csv"))
    rows = {p: list(csv.reader(p.open(encoding="utf-8"))) for p in tables}
    for table in rows.values():
        categories |= {cell for row in table[1:] for cell in row}
    checked = 0
    for path, table in rows.items():
        for column in table[0]:
            term, reading = explain(column, frozenset(categories))
            assert reading, (path.name, column)
            assert html_lib.escape(term.name, quote=False) in listed, (path.name, column, term.name)
            checked += 1
    assert checked > 100
    assert html.count(ARXIV) == 1 and html.count(html_lib.escape(PAPER, quote=False)) == 1
    for column in ("phy", "cnt", "view"):  # Table 3 headers say task, metric and unit on hover
        assert re.search(rf'<th title="[^"]+ — [^"]+ \([^"]+\)" class="comp comp-C\d">{column}</th>', html)
    for term in ("cags", "HCA", "POR", "S-POR", "TOR", "GS_raw", "kappa_VAS", "rho_within", "margin", "MCC",
                 "kappa", "d′"):
        assert term in listed, term
