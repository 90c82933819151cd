"""Turn score folders into a report folder.

For each component present, the component's reporter (registered in :mod:`biovqa.components.registry`)
turns the score summaries into tables and figures. This module adds the cross-component Table 3
(:mod:`~biovqa.reporting.leaderboard`), the cross-component analysis
(:mod:`~biovqa.reporting.analysis`) and the per-item browser (:mod:`~biovqa.reporting.browser`);
writes every table as Markdown, CSV and LaTeX; keeps the figures as PNG; and assembles ``index.md``
and ``index.html`` (Jinja2, autoescaped; figures embedded as data URLs, no external assets except
the browser's lazily loaded ``browser/`` sidecar files).
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from biovqa.components.registry import component_rank
from biovqa._version import __version__
from biovqa.bench.folder import sha256_file, staged_folder
from biovqa.components.registry import get_component
from biovqa.errors import BiovqaError
from biovqa.reporting.leaderboard import (GENERALIST, Leaderboard, Run, best_probabilities, build_leaderboard,
                                          interval_label, repeated_label,
                                          leaderboard_table, leaderboard_values, model_summary, rank_methods, rank_ranges,
                                          with_bootstrap_ranks)
from biovqa.scoring.pipeline import load_summary

Section = tuple[str, list[tuple[str, pd.DataFrame]], list[Path]]


Warn = Callable[[str], None]


def _warn(message: str) -> None:
    warnings.warn(message, UserWarning, stacklevel=3)


def _candidates(recorded: Any, from_scores: Any, score_dir: Path) -> list[Path]:
    """Where an input named in a score folder may be, in order: the path relative to the score
    folder, the recorded absolute path, and (older score folders recorded a path relative to
    wherever scoring ran) the recorded relative path against the score folder and each folder
    above it — never the current working directory, so a report does not depend on it."""
    found: list[Path] = []
    if isinstance(from_scores, str) and from_scores:
        found.append(score_dir / from_scores)
    if isinstance(recorded, str) and recorded:
        path = Path(recorded)
        found += [path] if path.is_absolute() else [base / path for base in (score_dir, *score_dir.parents)]
    return found


def locate_inputs(summary: dict[str, Any], score_dir: str | Path, warn: Warn = _warn) -> dict[str, Any]:
    """``summary`` with its provenance's ``benchmark`` and ``predictions`` replaced by the absolute
    paths where they are now (found as :func:`_candidates` says; a benchmark whose manifest hash
    matches the recorded one first), or None with a warning naming the score folder when gone."""
    score_dir = Path(score_dir).resolve()
    provenance = dict(summary.get("provenance") or {})
    benches = [c for c in _candidates(provenance.get("benchmark"), provenance.get("benchmark_from_scores"), score_dir)
               if (c / "manifest.json").is_file()]
    recorded_sha = provenance.get("benchmark_manifest_sha256")
    matching = [c for c in benches if recorded_sha and sha256_file(c / "manifest.json") == recorded_sha]
    bench: Path | None = (matching or benches or [None])[0]  # type: ignore[list-item]
    if bench is None and provenance.get("benchmark"):
        warn(f"score folder {score_dir}: its benchmark {provenance['benchmark']} is gone; the item browser "
             "shows these items without question, options, gold or image")
    elif bench is not None and not matching:
        warn(f"score folder {score_dir}: the benchmark at {bench} is not the one it was scored on "
             "(manifest hash differs); the item browser shows it anyway")
    predictions = next((c for c in _candidates(provenance.get("predictions"), provenance.get("predictions_from_scores"),
                                               score_dir) if c.is_file()), None)
    if predictions is None and provenance.get("predictions") and not isinstance(provenance.get("models"), list):
        warn(f"score folder {score_dir}: its predictions {provenance['predictions']} are gone; whether it is "
             "an image-blind baseline run is read from its label alone")
    provenance["benchmark"] = str(bench.resolve()) if bench is not None else None
    provenance["predictions"] = str(predictions.resolve()) if predictions is not None else None
    return {**summary, "provenance": provenance}


def load_runs(score_dirs: Sequence[str | Path], warn: Warn = _warn) -> list[Run]:
    """The score folders as :class:`Run` records; two runs of one model in one component keep
    both, the second named ``label (2)``. Inputs a score folder names are found from the folder
    itself (:func:`locate_inputs`), whatever the working directory."""
    if not score_dirs:
        raise BiovqaError("no score folders given", hint="pass one or more folders written by `biovqa score`")
    runs: list[Run] = []
    labels_seen: dict[tuple[str, str, bool, str], int] = defaultdict(int)
    for score_dir in score_dirs:
        summary = locate_inputs(load_summary(score_dir), score_dir, warn)
        label = str(summary["label"] or Path(score_dir).name)
        component_name = str(summary["component"])
        get_component(component_name)  # an unknown component is an error naming it
        lite = is_lite(summary)
        # a model's visual run and its text-only control are two kinds, not two runs of one model
        key = (component_name, label, lite, str(summary.get("kind") or ""))
        labels_seen[key] += 1
        if labels_seen[key] > 1:  # two runs of one model: keep both, named apart
            label = repeated_label(label, labels_seen[key])
        runs.append(Run(label, component_name, summary, Path(score_dir).resolve(), lite=lite))
    return runs


def is_lite(summary: dict[str, Any]) -> bool:
    """Whether a score folder's benchmark is a Bio-VQA-Lite one (its manifest's generator is
    ``biovqa.lite``, :mod:`biovqa.bench.lite`); unknown when the benchmark folder is gone (then
    not Lite)."""
    import json

    bench = (summary.get("provenance") or {}).get("benchmark")
    manifest = Path(str(bench)) / "manifest.json" if bench else None
    if manifest is None or not manifest.is_file():
        return False
    try:
        return json.loads(manifest.read_text(encoding="utf-8")).get("generator") == "biovqa.lite"
    except (OSError, ValueError, AttributeError):
        return False


def table3_columns(runs: Sequence[Run]) -> dict[str, list[str]]:
    """Component name → its declared Table 3 columns, for the components present."""
    return {name: list(get_component(name).table3) for name in sorted({r.component for r in runs}, key=component_rank)
            if get_component(name).table3}


#: the report's own index: what it holds, machine-readable; also what marks a folder as a report
#: (``biovqa report`` replaces such a folder whole and refuses any other non-empty one)
REPORT_INDEX = "index.json"


def write_report(score_dirs: Sequence[str | Path], out: str | Path, *, with_paper: bool = False,
                 warn: Warn = _warn) -> Path:
    """Write the report for ``score_dirs`` into ``out``; returns the path of index.html.

    The report is written into a staging folder beside ``out`` and each file is then renamed
    into place (:func:`~biovqa.bench.folder.staged_folder`), so an interrupted run leaves no
    half-written file. ``biovqa report`` claims ``out`` first (:func:`~biovqa.bench.folder.claim_output`:
    one writer at a time, an earlier report replaced whole, any other non-empty folder refused).
    ``with_paper`` adds the paper's published Table 3 rows (:mod:`~biovqa.reporting.paper`);
    ``warn`` receives each warning (an input a score folder names is gone)."""
    runs = load_runs(score_dirs, warn)
    out = Path(out)
    with staged_folder(out) as stage:
        _write_into(stage, runs, with_paper=with_paper)
        _write_index(stage, runs, with_paper)
    return out / "index.html"


def _write_index(stage: Path, runs: Sequence[Run], with_paper: bool) -> None:
    """``index.json``: the report's files and the runs behind it (no paths: the same score folders
    give the same bytes wherever they lie)."""
    import json

    files = sorted(p.relative_to(stage).as_posix() for p in stage.rglob("*") if p.is_file()
                   and not p.relative_to(stage).as_posix().startswith("browser/"))
    index = {"generator": "biovqa report", "version": __version__, "with_paper": with_paper,
             "runs": [{"label": r.label, "component": r.component, "kind": r.kind} for r in runs],
             "files": files, "browser": (stage / "browser").is_dir()}
    (stage / REPORT_INDEX).write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _write_table(out: Path, stem: str, frame: pd.DataFrame) -> None:
    """The table as CSV, Markdown and LaTeX; a table without rows is not written at all."""
    if len(frame) == 0:
        return
    _safe_csv(_typed(frame)).to_csv(out / f"{stem}.csv", index=not _numbered(frame))  # row numbers say nothing
    (out / f"{stem}.md").write_text(_markdown(frame) + "\n", encoding="utf-8")
    (out / f"{stem}.tex").write_text(_latex(frame), encoding="utf-8")


def _write_into(out: Path, runs: list[Run], *, with_paper: bool = False) -> None:
    from biovqa.reporting.analysis import analysis_tables, cross_component, heatmap, paper27_availability
    from biovqa.reporting.browser import write_browser
    from biovqa.reporting.lite import full_vs_lite

    lite_runs = [r for r in runs if r.lite]
    if lite_runs and len(lite_runs) < len(runs):  # full and Lite runs: the report is the full one
        runs = [r for r in runs if not r.lite]
    else:
        lite_runs = []
    lite_frame = full_vs_lite(runs, lite_runs) if lite_runs else None
    if lite_frame is not None:
        _write_table(out, "lite_spearman", lite_frame)

    by_component: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for run in runs:
        by_component[run.component].append((run.label, run.summary))
    runs_frame = pd.DataFrame([
        {"model": run.label, "component": run.component, "kind": run.kind, "items": run.summary["n_items"],
         **{status: count for status, count in run.summary["statuses"].items() if status != "ok"},
         "replies truncated for parsing": run.summary.get("n_truncated", 0),
         "benchmark manifest": str(run.summary.get("provenance", {}).get("benchmark_manifest_sha256", ""))[:12],
         "predictions": str(run.summary.get("provenance", {}).get("predictions_sha256", ""))[:12]}
        for run in sorted(runs, key=lambda r: component_rank(r.component))
    ]).set_index("model")
    runs_frame.attrs["title"] = "Runs scored"
    _write_table(out, "runs", runs_frame)

    from biovqa.progress import stage as progress_stage

    columns = table3_columns(runs)
    with progress_stage("report: leaderboard and rank bootstrap"):
        board = with_bootstrap_ranks(build_leaderboard(runs, columns), runs) if columns else None
    if board is not None and with_paper:
        from biovqa.reporting.paper import with_published

        board = with_published(board)  # reference rows: never ranked or averaged (after the ranks)
    headline: list[tuple[str, pd.DataFrame]] = []
    if board is not None:
        values = leaderboard_values(board)
        _write_table(out, "table3", values)
        shown = leaderboard_table(board)  # Markdown and LaTeX print value [lo, hi]; the CSV keeps numbers
        (out / "table3.md").write_text(_markdown(shown) + "\n", encoding="utf-8")
        (out / "table3.tex").write_text(_latex(shown), encoding="utf-8")
        _write_table(out, "table3_rank_ranges", rank_ranges(board))
        _write_table(out, "table3_rank_methods", rank_methods(board))
        _write_table(out, "table3_p_best", best_probabilities(board))
        headline = [("table3", shown)]
        if board.generalists:
            per_model = model_summary(board)
            _write_table(out, "table3_model_summary", per_model)
            headline.append(("table3_model_summary", per_model))
        if len(board.generalists) > 1:
            headline += [("table3_rank_ranges", rank_ranges(board)), ("table3_rank_methods", rank_methods(board)),
                         ("table3_p_best", best_probabilities(board))]
        if len(board.generalists) > 1:
            from biovqa.reporting.paired import paired_differences

            paired = paired_differences(runs, board.generalists)
            _write_table(out, "paired_differences", paired)
            headline.append(("paired_differences", paired))
    with progress_stage("report: cross-component analysis"):
        analysis = cross_component(runs) if board is not None else None
    analysis_frames = analysis_tables(analysis) if analysis is not None else {}
    if analysis is not None:
        analysis_frames["paper27_tasks"] = paper27_availability(runs)
    analysis_figures = [heatmap(analysis, out)] if analysis is not None else []
    for name, frame in analysis_frames.items():
        _write_table(out, f"analysis_{name}", frame)

    sections: list[Section] = [("Runs scored", [("runs", runs_frame)], [])]
    for component_name in sorted(by_component, key=component_rank):
        component = get_component(component_name)
        summaries = by_component[component_name]
        with progress_stage(f"report: {component_name.upper()} tables and figures"):
            tables = component.load("reporter")(summaries)
            figures: list[Path] = []
            if component.figures:
                figures = list(component.load("figures")(summaries, out))
        written = []
        for name, frame in tables.items():
            if len(frame) == 0:  # an empty table is not written, nor shown
                continue
            _write_table(out, f"{component_name}_{name}", frame)
            written.append((name, frame))
        sections.append((component.title, written, figures))

    with progress_stage("report: item browser"):
        write_browser(runs, out)
    md_sections: list[Section] = [("Leaderboard (Table 3)", headline, [])] if headline else []
    if lite_frame is not None:
        md_sections.append(("Full vs Lite", [("lite_spearman", lite_frame)], []))
    if analysis_frames:
        md_sections.append(("Cross-component analysis", list(analysis_frames.items()), analysis_figures))
    (out / "index.md").write_text(_index_markdown(md_sections + sections), encoding="utf-8")
    paired_frame = dict(headline).get("paired_differences")
    (out / "index.html").write_text(_index_html(sections, board, analysis_frames, runs, paired_frame,
                                                analysis_figures, lite_frame), encoding="utf-8")


#: columns that hold whole numbers (ranks, counts): printed as integers when every value is one
_INTEGER_COLUMN = re.compile(r"(?i)(?:^|[_\s])(?:rank|ranks|n|count|counts|items|img|ques|models|pages|missing"
                            r"|failed|images|pairs|shift|pages)(?:$|[_\s])")


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its rank and count columns (by name, or ``frame.attrs["integers"]``) as
    integers where every value is whole: the report's one unit convention prints ``3``, not
    ``3.000``, for a rank (a float column of fractions is left alone, even when a value is 1.0)."""
    declared = {str(c) for c in frame.attrs.get("integers") or ()}
    out = frame.copy()
    out.attrs = dict(frame.attrs)
    for column in frame.columns:
        values = frame[column]
        if not (str(column) in declared or _INTEGER_COLUMN.search(str(column))):
            continue
        if values.dtype == object:  # numbers and None mixed (a rank left blank for a specialist)
            numbers = pd.to_numeric(values, errors="coerce")
            if numbers.notna().sum() != values.notna().sum() or any(isinstance(v, bool) for v in values):
                continue
            values = numbers.astype(float)
        if not pd.api.types.is_float_dtype(values.dtype):
            continue
        finite = values.dropna().to_numpy(dtype=float)
        if len(finite) and np.isfinite(finite).all() and (finite == np.round(finite)).all():
            out[column] = values.astype("Int64")
    return out


def _formatted(frame: pd.DataFrame) -> pd.DataFrame:
    """Every cell as printed text: whole-number columns as integers (:func:`_typed`), floats to the
    table's declared decimals per column (``frame.attrs["decimals"]``, the paper's printed
    precision), else 3; missing values as —."""
    frame = _typed(frame)
    decimals = frame.attrs.get("decimals") or {}
    shown = frame.astype(object).copy()
    for column in frame.columns:
        places = int(decimals.get(str(column), 3))
        shown[column] = [_cell(value, places) for value in frame[column].tolist()]
    return shown


def _numbered(frame: pd.DataFrame) -> bool:
    """Whether the rows are only numbered (a plain RangeIndex): then no index column is printed."""
    return isinstance(frame.index, pd.RangeIndex) and not frame.index.name


def _markdown(frame: pd.DataFrame) -> str:
    shown = _formatted(frame)
    lead = [] if _numbered(frame) else [frame.index.name or ""]
    header = [*lead, *map(str, shown.columns)]
    lines = ["| " + " | ".join(map(_markdown_text, header)) + " |", "|" + "---|" * len(header)]
    for idx, row in shown.iterrows():
        first = [] if not lead else [str(idx)]
        lines.append("| " + " | ".join(map(_markdown_text, [*first, *map(str, row.tolist())])) + " |")
    return "\n".join(lines)


_MARKDOWN_LINK = re.compile(r"\]\s*[(\[]|!\[")


def _markdown_text(text: str) -> str:
    """A table cell that renders as the text it is: HTML characters escaped (a model label like
    ``<script>`` stays text), backslashes and pipes escaped, link and image syntax
    (``[x](url)``, ``![x](url)``, ``[x][ref]``) broken by escaping its brackets, line breaks folded."""
    text = html.escape(text, quote=False).replace("\\", "\\\\")
    text = " ".join(text.split()).replace("|", "\\|")
    if _MARKDOWN_LINK.search(text):
        text = re.sub(r"([\[\]()!])", r"\\\1", text)
    return text


#: what a spreadsheet runs as a formula when a cell starts with it (after NFKC: ＝ is =)
_FORMULA_START = ("=", "+", "-", "@")


def _neutral_cell(value: Any) -> Any:
    """A text cell a spreadsheet shows as text: line breaks folded (a break cannot start a row of
    its own), and a leading apostrophe where the text, after any leading whitespace or control
    characters (tab, carriage return), starts a formula (``=``, ``+``, ``-``, ``@``, also their
    full-width forms such as ``＝``). Numbers are left as they are."""
    if not isinstance(value, str):
        return value
    import unicodedata

    folded = " ".join(value.splitlines()) if ("\r" in value or "\n" in value) else value
    head = folded.lstrip(" \t\x0b\x0c\u00a0\u3000")
    head = "".join(ch for ch in head[:8] if unicodedata.category(ch)[0] != "C" and not ch.isspace())[:1]
    if head and unicodedata.normalize("NFKC", head).startswith(_FORMULA_START) or folded[:1] in ("\t", "\r"):
        return "'" + folded
    return folded


def _safe_csv(frame: pd.DataFrame) -> pd.DataFrame:
    """Every text cell, index value and column name neutralised (:func:`_neutral_cell`)."""
    safe = frame.map(_neutral_cell) if hasattr(frame, "map") else frame.applymap(_neutral_cell)
    safe.index = pd.Index([_neutral_cell(v) for v in frame.index],
                          name=_neutral_cell(frame.index.name) if frame.index.name else None)
    safe.columns = [_neutral_cell(c) for c in frame.columns]
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


def _anchor(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def _html_table(frame: pd.DataFrame) -> Any:
    """A table as escaped HTML (pandas escapes every cell), marked safe for the template."""
    from markupsafe import Markup

    flat = frame.reset_index() if frame.index.name or not isinstance(frame.index, pd.RangeIndex) else frame
    flat.attrs = dict(frame.attrs)
    return Markup(_formatted(flat).to_html(escape=True, border=0, index=False))


def _board_context(board: Leaderboard) -> dict[str, Any]:
    from biovqa.reporting.glossary import COLUMNS, TERMS
    from biovqa.reporting.leaderboard import SUBSET_MARK, interval_text, subset_notes

    def long(column: str) -> str:
        task, metric = COLUMNS.get(column, (column, ""))
        term = TERMS.get(metric)
        return f"{task} — {term.spelled} ({term.unit})" if term else task

    groups = [(name.upper(), [{"name": c, "long": long(c)} for c in cols]) for name, cols in board.components.items()]
    component_of = {c: name.upper() for name, cols in board.components.items() for c in cols}
    rows = []
    for model in board.value.index:
        cells = []
        for col in board.value.columns:
            value, lo, hi = board.value.loc[model, col], board.lo.loc[model, col], board.hi.loc[model, col]
            text = interval_text(value, lo, hi)
            main, _, ci = text.partition(" ")
            cells.append({"value": main, "ci": ci, "mark": board.marks.loc[model, col],
                          "component": component_of.get(col, ""), "note": board.notes.get(model, {}).get(col, "")})
        rows.append({"name": model, "kind": board.kind[model], "cells": cells})
    return {"groups": groups, "rows": rows, "mark": SUBSET_MARK, "footnotes": subset_notes(board)}


def _index_html(sections: list[Section], board: Leaderboard | None, analysis: dict[str, pd.DataFrame],
                runs: list[Run], paired: pd.DataFrame | None = None,
                analysis_figures: Sequence[Path] = (), lite: pd.DataFrame | None = None) -> str:
    from biovqa.reporting.glossary import ARXIV, COLUMNS, ORDERED, PAPER, TERMS
    from biovqa.reporting.html import render_page
    from biovqa.reporting.paper import PUBLISHED, SOURCE

    rendered = []
    toc = [{"id": "leaderboard", "title": "Leaderboard (Table 3)"}]
    if lite is not None:
        toc.append({"id": "lite", "title": "Full vs Lite"})
    if analysis:
        toc.append({"id": "analysis", "title": "Cross-component analysis"})
    toc.append({"id": "glossary", "title": "Glossary"})
    for title, tables, figures in sections:
        sid = _anchor(title)
        toc.append({"id": sid, "title": title})
        rendered.append({
            "id": sid, "title": title,
            "figures": [{"alt": f.stem, "data": base64.b64encode(f.read_bytes()).decode("ascii")} for f in figures],
            "tables": [{"id": f"{sid}-{_anchor(name)}", "title": _title(name, frame), "html": _html_table(frame)}
                       for name, frame in tables]})
    toc.append({"id": "browser", "title": "Item browser"})
    used = set(board.value.columns) if board is not None else set()
    context = {
        "version": __version__, "runs": runs, "components": [c.upper() for c in sorted({r.component for r in runs}, key=component_rank)],
        "toc": toc, "sections": rendered,
        "board": _board_context(board) if board is not None else None,
        "ci_label": interval_label(board) if board is not None else "95% CI",
        "ranks": _html_table(rank_ranges(board)) if board is not None and len(board.generalists) > 1 else None,
        "rank_methods": _html_table(rank_methods(board)) if board is not None and len(board.generalists) > 1 else None,
        "p_best": _html_table(best_probabilities(board)) if board is not None and len(board.generalists) > 1 else None,
        "paired": _html_table(paired) if paired is not None and len(paired) else None,
        "lite": _html_table(lite) if lite is not None else None,
        "analysis": [{"title": _title(name, frame), "html": _html_table(frame)} for name, frame in analysis.items()],
        "analysis_figures": [{"alt": f.stem, "data": base64.b64encode(f.read_bytes()).decode("ascii")}
                             for f in analysis_figures],
        "columns": [(c, COLUMNS[c][0], TERMS[COLUMNS[c][1]]) for c in COLUMNS if c in used],
        "terms": list(ORDERED),  # every term a report can show, so a glossary reads the same in every report
        "paper": PAPER, "arxiv": ARXIV,
        "published": SOURCE if board is not None and (board.kind == PUBLISHED).any() else None,
        "summary": _html_table(model_summary(board)) if board is not None and board.generalists else None,
    }
    return render_page(context)


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def _latex_text(text: str) -> str:
    """Text safe in a LaTeX table cell: the ten special characters escaped, line breaks folded."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in " ".join(str(text).split()))


def _latex(frame: pd.DataFrame) -> str:
    """A ``tabular`` (booktabs rules) of the table as printed, with its title as a comment."""
    shown = _formatted(frame)
    lead = [] if _numbered(frame) else [frame.index.name or ""]
    header = [*lead, *map(str, shown.columns)]
    lines = [f"% {_latex_text(_title('', frame) or '')}", "\\begin{tabular}{" + "l" * len(lead) + "r" * len(shown.columns) + "}",
             "\\toprule", " & ".join(map(_latex_text, header)) + r" \\", "\\midrule"]
    for idx, row in shown.iterrows():
        first = [] if not lead else [str(idx)]
        lines.append(" & ".join(map(_latex_text, [*first, *map(str, row.tolist())])) + r" \\")
    lines += ["\\bottomrule", "\\end{tabular}", ""]
    return "\n".join(lines)


def write_analysis(score_dirs: Sequence[str | Path], out: str | Path, *, B: int = 2000, seed: int = 42,
                   include_ocr: bool = False, design: str = "paper27") -> Path:
    """Run the analysis over ``score_dirs`` and write its tables (CSV, Markdown, LaTeX) and
    ``analysis.json`` into ``out``; returns ``out``. Too few generalist models is an error."""
    from biovqa.reporting.analysis import (MIN_MODELS, analysis_tables, cross_component,
                                           paper27_availability)

    runs = load_runs(score_dirs)
    analysis = cross_component(runs, B=B, seed=seed, exclude=() if include_ocr else None, design=design)
    if analysis is None:
        generalists = sorted({r.name for r in runs if r.kind == GENERALIST})
        raise BiovqaError(
            f"the cross-component analysis needs at least {MIN_MODELS} generalist models with two or more "
            f"varying tasks; got {len(generalists)} model(s)",
            hint="pass the score folders of more models (floor and [specialist] runs are not counted)")
    tables = analysis_tables(analysis)
    out = Path(out)
    with staged_folder(out) as stage:
        for name, frame in tables.items():
            _write_table(stage, name, frame)
        if design == "paper27":
            _write_table(stage, "paper27_tasks", paper27_availability(runs))
        card = {"design": design, "models": list(map(str, analysis.matrix.index)), "tasks": analysis.blocks,
                "within": analysis.within, "across": analysis.across, "p_gap": analysis.p_gap,
                "permutations": B, "seed": seed, "pc1_share": analysis.pc1_share,
                "sensitivity_gap": None if math.isnan(analysis.sensitivity_gap) else analysis.sensitivity_gap,
                "dropped_in_sensitivity": list(analysis.dropped),
                "pairs": {p: {k: (v if not isinstance(v, float) or math.isfinite(v) else None)
                              for k, v in row.items()} for p, row in analysis.pairs.to_dict("index").items()}}
        (stage / "analysis.json").write_text(json.dumps(card, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return out
