"""Model labels and other text from outside reach reports as text, never as markup or formulas."""

from __future__ import annotations

import csv
from pathlib import Path

import biovqa

HOSTILE = "<script>alert(1)</script> | <img src=x onerror=alert(2)>\nnext"
FORMULA = "=HYPERLINK(\"http://x\",\"y\")"


def test_labels_are_escaped_in_markdown_html_and_csv(tmp_path: Path, demo_bench: Path) -> None:
    predictions = biovqa.run(demo_bench, tmp_path / "run", backend="baseline", progress=False)
    folders = [biovqa.score(demo_bench, predictions, tmp_path / name, bootstrap=0, label=label)
               for name, label in (("a", HOSTILE), ("b", FORMULA))]
    index = biovqa.report(folders, tmp_path / "report")
    page = index.read_text()
    # the page has its own script tags; the label's never becomes one
    assert "<script>alert" not in page and "<img src=x" not in page and "&lt;script&gt;alert(1)" in page
    markdown = (tmp_path / "report" / "index.md").read_text()
    assert "<script>" not in markdown and "<img src=x" not in markdown
    row = next(line for line in markdown.splitlines() if "alert(1)" in line)
    assert row.count(" | ") == markdown.splitlines()[markdown.splitlines().index(row) - 1].count(" | ") or \
        "\\|" in row  # the label's pipe is escaped, not a column break
    assert "\nnext" not in markdown.replace("\r", "")
    with open(tmp_path / "report" / "runs.csv", newline="") as handle:
        models = [row[0] for row in csv.reader(handle)][1:]
    assert "'" + FORMULA in models and FORMULA not in models
    # the leaderboard exports: CSV neutralised, LaTeX specials escaped, browser data as \u escapes
    with open(tmp_path / "report" / "table3.csv", newline="") as handle:
        rows = [row[0] for row in csv.reader(handle)][1:]
    assert "'" + FORMULA in rows and FORMULA not in rows
    tex = (tmp_path / "report" / "table3.tex").read_text()
    assert "\\begin{tabular}" in tex and "alert(1)" in tex and "\nnext" not in tex
    sidecar = "".join(p.read_text() for p in (tmp_path / "report" / "browser").glob("*.js"))
    assert "<script>" not in sidecar and "\\u003cscript\\u003ealert(1)" in sidecar


def test_latex_cells_escape_the_special_characters() -> None:
    import pandas as pd

    from biovqa.reporting.writer import _latex

    frame = pd.DataFrame({"model": ["50% & $x_1$ #{}~^\\"], "v": [0.5]}).set_index("model")
    body = _latex(frame).splitlines()
    row = next(line for line in body if "0.500" in line)
    assert row == r"50\% \& \$x\_1\$ \#\{\}\textasciitilde{}\textasciicircum{}\textbackslash{} & 0.500 \\"
