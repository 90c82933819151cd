"""Turn score folders into a report folder.

For each component present, the component's reporter (registered in :mod:`biovqa.components.registry`)
turns the score summaries into tables and figures; this module writes each table as Markdown and
CSV, keeps the figures as PNG, and assembles ``index.md`` and a self-contained ``index.html``
(figures embedded as data URLs, no external assets) that opens anywhere.
"""

from __future__ import annotations

import base64
import html
import importlib
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from biovqa._version import __version__
from biovqa.bench.folder import staged_folder
from biovqa.components.registry import get_component
from biovqa.errors import BiovqaError
from biovqa.scoring.pipeline import load_summary


def write_report(score_dirs: Sequence[str | Path], out: str | Path) -> Path:
    """Write the report for ``score_dirs`` into ``out``; returns the path of index.html.

    The report is written into a staging folder beside ``out`` and each file is then renamed
    into place (:func:`~biovqa.bench.folder.staged_folder`), so an interrupted run leaves no
    half-written file; files in ``out`` that the report does not write are left alone."""
    if not score_dirs:
        raise BiovqaError("no score folders given", hint="pass one or more folders written by `biovqa score`")
    out = Path(out)
    by_component: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    labels_seen: dict[tuple[str, str], int] = defaultdict(int)
    for score_dir in score_dirs:
        summary = load_summary(score_dir)
        label = str(summary["label"] or Path(score_dir).name)
        component_name = str(summary["component"])
        get_component(component_name)  # an unknown component is an error naming it
        labels_seen[component_name, label] += 1
        if labels_seen[component_name, label] > 1:  # two runs of one model: keep both, named apart
            label = f"{label} ({labels_seen[component_name, label]})"
        by_component[component_name].append((label, summary))

    with staged_folder(out) as stage:
        _write_into(stage, by_component)
    return out / "index.html"


def _write_into(out: Path, by_component: dict[str, list[tuple[str, dict[str, Any]]]]) -> None:
    runs = pd.DataFrame([
        {"model": label, "component": component_name, "items": summary["n_items"],
         **{status: count for status, count in summary["statuses"].items() if status != "ok"},
         "benchmark manifest": str(summary.get("provenance", {}).get("benchmark_manifest_sha256", ""))[:12],
         "predictions": str(summary.get("provenance", {}).get("predictions_sha256", ""))[:12]}
        for component_name, entries in sorted(by_component.items()) for label, summary in entries
    ]).set_index("model")
    sections: list[tuple[str, list[tuple[str, pd.DataFrame]], list[Path]]] = [
        ("Runs scored", [("runs", runs)], [])]
    _safe_csv(runs).to_csv(out / "runs.csv")
    for component_name in sorted(by_component):
        component = get_component(component_name)
        summaries = by_component[component_name]
        tables = component.load("reporter")(summaries)
        figures: list[Path] = []
        figure_fn = _figures_function(component.reporter)
        if figure_fn is not None:
            figures = list(figure_fn(summaries, out))
        written = []
        for name, frame in tables.items():
            stem = f"{component_name}_{name}"
            _safe_csv(frame).to_csv(out / f"{stem}.csv", index=True)
            (out / f"{stem}.md").write_text(_markdown(frame) + "\n", encoding="utf-8")
            written.append((name, frame))
        sections.append((component.title, written, figures))

    (out / "index.md").write_text(_index_markdown(sections), encoding="utf-8")
    (out / "index.html").write_text(_index_html(sections), encoding="utf-8")


def _figures_function(reporter: str) -> Any:
    module_name, _, _ = reporter.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, "figures", None)


def _formatted(frame: pd.DataFrame) -> pd.DataFrame:
    """Every cell as printed text: floats to the table's declared decimals per column
    (``frame.attrs["decimals"]``, the paper's printed precision), else 3; missing values as —."""
    decimals = frame.attrs.get("decimals") or {}
    shown = frame.astype(object).copy()
    for column in frame.columns:
        places = int(decimals.get(str(column), 3))
        shown[column] = [_cell(value, places) for value in frame[column].tolist()]
    return shown


def _markdown(frame: pd.DataFrame) -> str:
    shown = _formatted(frame)
    index_name = frame.index.name or ""
    header = [index_name, *map(str, shown.columns)]
    lines = ["| " + " | ".join(map(_markdown_text, header)) + " |", "|" + "---|" * len(header)]
    for idx, row in shown.iterrows():
        lines.append("| " + " | ".join(map(_markdown_text, [str(idx), *map(str, row.tolist())])) + " |")
    return "\n".join(lines)


def _markdown_text(text: str) -> str:
    """A table cell that renders as the text it is: HTML characters escaped (a model label like
    ``<script>`` stays text), pipes escaped, line breaks folded."""
    text = html.escape(text, quote=False)
    return " ".join(text.split()).replace("|", "\\|")


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _safe_csv(frame: pd.DataFrame) -> pd.DataFrame:
    """Text cells that a spreadsheet would run as a formula (starting with = + - @) get a leading
    apostrophe; numbers are left as they are."""
    def neutral(value: Any) -> Any:
        if isinstance(value, str) and value.startswith(_FORMULA_START):
            return "'" + value
        return value

    safe = frame.map(neutral) if hasattr(frame, "map") else frame.applymap(neutral)
    safe.index = pd.Index([neutral(v) for v in frame.index], name=neutral(frame.index.name) if frame.index.name else None)
    safe.columns = [neutral(c) for c in frame.columns]
    return safe


def _title(name: str, frame: pd.DataFrame | None = None) -> str:
    """The table's own title (``frame.attrs["title"]``) or one made from its name:
    ``table18_pooled`` → ``Table 18 — pooled``; ``em_by_group`` → ``em by group``."""
    import re

    if frame is not None and frame.attrs.get("title"):
        return str(frame.attrs["title"])
    match = re.fullmatch(r"table(\d+)_?(.*)", name)
    if match:
        rest = match.group(2).replace("_", " ")
        return f"Table {match.group(1)}" + (f" — {rest}" if rest else "")
    return name.replace("_", " ")


def _cell(value: Any, places: int = 3) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)) or value is pd.NA:
        return "—"
    if isinstance(value, float):
        return f"{value:.{places}f}"
    return str(value)


def _index_markdown(sections: list[tuple[str, list[tuple[str, pd.DataFrame]], list[Path]]]) -> str:
    parts = [f"# Bio-VQA report\n\nbiovqa {__version__}\n"]
    for title, tables, figures in sections:
        parts.append(f"\n## {title}\n")
        for name, frame in tables:
            parts.append(f"\n### {_markdown_text(_title(name, frame))}\n\n{_markdown(frame)}\n")
        for figure in figures:
            parts.append(f"\n![{figure.stem}]({figure.name})\n")
    return "".join(parts)


_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#1f2328;padding:0 1rem}
h1{font-size:1.6rem} h2{margin-top:2.2rem;border-bottom:1px solid #d0d7de;padding-bottom:.3rem}
table{border-collapse:collapse;margin:.8rem 0 1.6rem;font-size:.88rem}
th,td{border:1px solid #d0d7de;padding:.3rem .6rem;text-align:right}
th:first-child,td:first-child{text-align:left}
thead th{background:#f6f8fa} tbody tr:nth-child(even){background:#fbfcfd}
img{max-width:100%;border:1px solid #d0d7de;margin:.5rem 0}
.meta{color:#57606a;font-size:.85rem}
"""


def _index_html(sections: list[tuple[str, list[tuple[str, pd.DataFrame]], list[Path]]]) -> str:
    body = [f"<h1>Bio-VQA report</h1><p class='meta'>biovqa {html.escape(__version__)}</p>"]
    for title, tables, figures in sections:
        body.append(f"<h2>{html.escape(title)}</h2>")
        for name, frame in tables:
            flat = frame.reset_index() if frame.index.name or not isinstance(frame.index, pd.RangeIndex) else frame
            flat.attrs = dict(frame.attrs)
            shown = _formatted(flat)
            body.append(f"<h3>{html.escape(_title(name, frame))}</h3>")
            body.append(shown.to_html(escape=True, border=0, index=False))
        for figure in figures:
            data = base64.b64encode(figure.read_bytes()).decode("ascii")
            body.append(f"<img alt='{html.escape(figure.stem)}' src='data:image/png;base64,{data}'>")
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Bio-VQA report</title>"
            f"<style>{_STYLE}</style></head><body>{''.join(body)}</body></html>\n")
