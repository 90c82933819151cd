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
    assert "<script>" not in page and "<img src=x" not in page and "&lt;script&gt;" in page
    markdown = (tmp_path / "report" / "index.md").read_text()
    assert "<script>" not in markdown and "<img src=x" not in markdown
    row = next(line for line in markdown.splitlines() if "alert(1)" in line)
    assert row.count(" | ") == markdown.splitlines()[markdown.splitlines().index(row) - 1].count(" | ") or \
        "\\|" in row  # the label's pipe is escaped, not a column break
    assert "\nnext" not in markdown.replace("\r", "")
    with open(tmp_path / "report" / "runs.csv", newline="") as handle:
        models = [row[0] for row in csv.reader(handle)][1:]
    assert "'" + FORMULA in models and FORMULA not in models
