"""Spreadsheet formulas and Markdown links from labels and item fields never survive into a
report table: every CSV cell of every table (the BAGEL tables included) is neutralised, every
Markdown cell escaped (issue: report injection)."""

from __future__ import annotations

import copy
import csv
import json
import unicodedata
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

#: a label that is a formula after a carriage return, a link, an image and raw HTML
HOSTILE_LABEL = "\r=HYPERLINK(\"http://evil\") [click](http://evil) ![x](http://evil/x.png) <img src=x>"
#: item fields a BAGEL table shows (dimension, tier): a formula, after a space, full-width
HOSTILE_FIELDS = ("=1+1", " =1+1", "\uff1d1+1", "\t@SUM(A1)", "+1")


def _is_formula(cell: str) -> bool:
    head = cell.lstrip(" \t\r\n\u00a0\u3000")
    return bool(head) and unicodedata.normalize("NFKC", head[0]) in "=+-@" and not cell.startswith("'")


@pytest.fixture(scope="module")
def bagel_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import biovqa
    from biovqa.components.bagel.build import build_bagel
    from biovqa.components.bagel.demo import DEMO_ITEMS
    from biovqa.engine.runner import RunOptions, run_benchmark
    from biovqa.reporting import write_report

    root = tmp_path_factory.mktemp("injection")
    items = copy.deepcopy(DEMO_ITEMS)
    hostile = [row for rows in items.values() for row in rows]
    for k, row in enumerate(hostile):
        row["dimension"] = HOSTILE_FIELDS[k % len(HOSTILE_FIELDS)]
        row["meta"] = {**row.get("meta", {}), "taxon_class": HOSTILE_FIELDS[(k + 1) % len(HOSTILE_FIELDS)]}
    (root / "items").mkdir()
    arguments = []
    for name, rows in items.items():
        path = root / "items" / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        arguments.append(f"Wiki={path}" if name == "wikipedia" else str(path))
    bench = build_bagel(arguments, root / "bench").root
    ids = pq.read_table(bench / "items.parquet", columns=["item_id"]).column("item_id").to_pylist()
    pq.write_table(pa.table({"item_id": ids, "response": ["A"] * len(ids), "status": ["ok"] * len(ids),
                             "model": ["m"] * len(ids)}), root / "pred.parquet")
    scores = [biovqa.score(bench, root / "pred.parquet", root / "scores-hostile", label=HOSTILE_LABEL, bootstrap=20)]
    floor = run_benchmark(bench, root / "run-floor", RunOptions(backend="baseline", progress=False))
    scores.append(biovqa.score(bench, floor.predictions_path, root / "scores-floor", label="floor", bootstrap=20))
    out = root / "report"
    write_report(scores, out)
    return out


def test_every_csv_cell_is_neutralised(bagel_report: Path) -> None:
    tables = sorted(bagel_report.glob("*.csv"))
    bagel = [p for p in tables if p.name.startswith("bagel_")]
    assert len(bagel) >= 5  # the BAGEL tables are written and checked like every other
    seen = 0
    for path in tables:
        text = path.read_text(encoding="utf-8")
        rows = list(csv.reader(text.splitlines()))
        for n, row in enumerate(rows):
            for cell in row:
                assert not _is_formula(cell), (path.name, n, cell)
        seen += sum(HOSTILE_LABEL.strip()[:10] in cell for row in rows for cell in row)
        assert "\r" not in text, path.name  # a carriage return never starts a row of its own
    assert seen >= 2  # the hostile label is in the tables, neutralised, not dropped
    fields = " ".join(p.read_text(encoding="utf-8") for p in bagel)
    assert "'=1+1" in fields and "' =1+1" in fields and "'\uff1d1+1" in fields


def test_every_markdown_cell_is_escaped(bagel_report: Path) -> None:
    for path in sorted(bagel_report.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        assert "](http" not in text and "<img" not in text and "![" not in text.replace("\\![", ""), path.name
    table = (bagel_report / "runs.md").read_text(encoding="utf-8")
    assert "\\[click\\]\\(http://evil\\)" in table and "&lt;img src=x&gt;" in table
