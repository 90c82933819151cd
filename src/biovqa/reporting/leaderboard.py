"""Table 3: the one leaderboard over every component's headline columns.

Each score folder contributes its component's ``table3`` estimates ({value, lo, hi, n} per
column, in the order the component declares in ``Component.table3``). Runs are joined by model
name (the label with its ``[tags]`` stripped), so one model scored on C1–C4 is one row.

Row kinds, read from the label's tags (the C1 convention, docs/c1-report.md):

* ``floor`` — an image-blind baseline run: the label starts with "floor"/"baseline", carries the
  tag ``[floor]``/``[baseline]``/``[group=baseline]``, or the predictions came from the
  ``baseline`` backend. Floor runs make the Floor row(s), printed last;
* ``specialist`` — tagged ``[specialist]``; printed first, unranked, outside the Mean;
* ``control`` — a text-only control run (summary ``kind`` "text", the HCA control whose image is
  replaced by the leaf label): its own row ``NAME (text-only control)`` below the Mean, never the
  model's visual row, unranked;
* everything else is a generalist (VLM): ranked, marked, averaged in the Mean row.

Floor and control rows keep the 95% intervals their summaries hold.

A run scored on a subset of its benchmark (its summary's ``subset``: a specialist run on some of
the datasets, as the paper runs MegaDescriptor on Grevy's zebra only, Table 3 and Sec. A.4) has
its component's cells noted (``Leaderboard.notes``, :data:`SUBSET_MARK`): the number is not
comparable cell for cell with a run scored on every item.

Marks per column over the generalists: ``best``, ``second``, ``worst``, and ``tie`` for a model
whose interval overlaps the best model's (the paper's rule: overlapping CIs ⇒ statistical tie).
The rank range of a model in a column runs from 1 + (models whose lower bound is above its upper
bound) to n − (models whose upper bound is below its lower bound). Where the score folders allow
it, :func:`with_bootstrap_ranks` replaces that range by the 95% rank interval from a bootstrap
whose resamples all models share (:mod:`biovqa.reporting.replicates`) and adds P(best); the
``rank_methods`` of the board say, per column, which of the two a column's ranks come from.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from biovqa.components.registry import component_rank
from biovqa.scoring.schema import estimate_value, recorded_confidence
from biovqa.stats import CONFIDENCE

_TAGS = re.compile(r"\s*\[([^\[\]]*)\]")
FLOOR, SPECIALIST, GENERALIST, CONTROL = "floor", "specialist", "vlm", "control"
CONTROL_SUFFIX = "(text-only control)"
MEAN_ROW = "Mean"
#: the footnote marker of a cell scored on a subset of the benchmark (``Leaderboard.notes``)
SUBSET_MARK = "†"


@dataclass(frozen=True)
class Run:
    """One score folder as the report reads it."""

    label: str
    component: str
    summary: dict[str, Any]
    path: Path | None = None
    name: str = field(init=False)
    kind: str = field(init=False)
    #: scored on a Bio-VQA-Lite benchmark (its manifest's generator is ``biovqa.lite``)
    lite: bool = False

    def __post_init__(self) -> None:
        name, kind = read_label(self.label, self.summary)
        if self.summary.get("kind") == "text":
            # a text-only control (the HCA control: the image replaced by its leaf label) is its
            # own row, never the model's visual numbers, and never ranked or averaged
            name, kind = f"{name} {CONTROL_SUFFIX}", (FLOOR if kind == FLOOR else CONTROL)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "kind", kind)


@dataclass(frozen=True)
class ModelLabel:
    """A score label read once (``biovqa score --label "Qwen2.5-VL-7B [specialist; params=7B]"``):
    the model's name without its bracketed tag blocks, and the tags in the order written — each
    ``(key, value)`` with the key in lower case and ``value`` None for a bare tag (``[specialist]``)."""

    name: str
    tags: tuple[tuple[str, str | None], ...]


def parse_label(label: str) -> ModelLabel:
    """The one reader of a score label's name and ``[tag; key=value, …]`` blocks (every report
    and component table reads labels through it)."""
    tags: list[tuple[str, str | None]] = []
    for block in _TAGS.findall(label):
        for tag in re.split(r"[;,]", block):
            key, sep, value = tag.partition("=")
            key = key.strip().lower()
            if key:
                tags.append((key, value.strip() if sep else None))
    name = re.sub(r"\s+", " ", _TAGS.sub(" ", label)).strip() or label
    return ModelLabel(name=name, tags=tuple(tags))


#: What :func:`biovqa.reporting.writer.load_runs` appends to the label of a model's second, third …
#: run in one component (`` (2)``), so that both keep a row.
_REPEAT = re.compile(r" \((\d+)\)$")


def repeated_label(label: str, occurrence: int) -> str:
    """The label of a model's ``occurrence``-th run (2, 3, …) in one component."""
    return f"{label} ({occurrence})"


def model_name(label: str) -> str:
    """The model a label names: without its tag blocks (:func:`parse_label`) and without the
    :func:`repeated_label` suffix, so every run and control of one model meets under one name."""
    return parse_label(_REPEAT.sub("", label.strip())).name


def read_label(label: str, summary: dict[str, Any] | None = None) -> tuple[str, str]:
    """(model name without tags, row kind) of a score label."""
    parsed = parse_label(label)
    tags = {f"{key}={value.lower()}" if value else key for key, value in parsed.tags}
    name = parsed.name
    lowered = name.lower()
    if (tags & {"floor", "baseline", "group=baseline", "group=floor"}
            or lowered.startswith(("floor", "baseline")) or _baseline_backend(summary)):
        return name, FLOOR
    if tags & {"specialist", "group=specialist"}:
        return name, SPECIALIST
    return name, GENERALIST


def without_floors(summaries: Sequence[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The ``(label, summary)`` pairs that are models, not image-blind floor runs (:func:`read_label`):
    a component's tables rank, average and pick the best over models only; each shows its floor
    from the rule the summary computed, as a row of its own."""
    return [(label, summary) for label, summary in summaries if read_label(label, summary)[1] != FLOOR]


def _baseline_backend(summary: dict[str, Any] | None) -> bool:
    """Whether the predictions behind ``summary`` came from the ``baseline`` backend: the models
    the score folder records, else (an older score folder) the predictions file it names."""
    provenance = (summary or {}).get("provenance") or {}
    if isinstance(provenance.get("models"), list):
        return provenance["models"] == ["baseline"]
    path = provenance.get("predictions")
    if not path or not Path(path).is_file():
        return False
    try:
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        models = pc.unique(pq.read_table(path, columns=["model"]).column("model")).to_pylist()
    except Exception:  # an unreadable predictions file only means "not known to be a baseline"
        return False
    return models == ["baseline"]


@dataclass(frozen=True)
class Leaderboard:
    """Table 3 as frames sharing one index (rows) and columns (``component:column`` order kept
    in ``columns``; frame columns are the short names, unique across C1–C4)."""

    value: pd.DataFrame
    lo: pd.DataFrame
    hi: pd.DataFrame
    n: pd.DataFrame
    kind: pd.Series
    marks: pd.DataFrame
    rank_lo: pd.DataFrame
    rank_hi: pd.DataFrame
    components: dict[str, list[str]]
    p_best: pd.DataFrame | None = None
    rank_methods: dict[str, str] = field(default_factory=dict)
    #: row → column → why the cell is footnoted, e.g. "scored on Grevy's zebra only"
    notes: dict[str, dict[str, str]] = field(default_factory=dict)
    #: the confidence levels the runs' intervals were computed at (their summaries' bootstrap
    #: section), distinct and sorted; one entry unless runs were scored with other --confidence
    confidences: tuple[float, ...] = (CONFIDENCE,)

    @property
    def generalists(self) -> list[str]:
        return [r for r in self.value.index if self.kind[r] == GENERALIST]


def build_leaderboard(runs: Sequence[Run], columns: Mapping[str, Sequence[str]]) -> Leaderboard:
    """Table 3 over ``runs``; ``columns`` maps component name → its Table 3 columns in order."""
    ordered = [(comp, col) for comp in sorted(columns, key=component_rank) for col in columns[comp]]
    names = [col for _, col in ordered]
    cells: dict[str, dict[str, dict[str, float]]] = {}
    kinds: dict[str, str] = {}
    notes: dict[str, dict[str, str]] = {}
    for run in runs:
        row = cells.setdefault(run.name, {})
        seen = (kinds.get(run.name), run.kind)
        kinds[run.name] = next((k for k in (FLOOR, CONTROL, SPECIALIST) if k in seen), GENERALIST)
        note = subset_note(run.summary)
        for col in columns.get(run.component, ()):
            est = (run.summary.get("table3") or {}).get(col) or {}
            row[col] = {key: estimate_value(est, key) for key in ("value", "lo", "hi", "n")}
            if note and col in (run.summary.get("table3") or {}):
                notes.setdefault(run.name, {})[col] = note

    def frame(key: str, rows: list[str]) -> pd.DataFrame:
        return pd.DataFrame([[cells[r].get(c, {}).get(key, math.nan) for c in names] for r in rows],
                            index=pd.Index(rows, name="model"), columns=names, dtype=float)

    generalists = [r for r in cells if kinds[r] == GENERALIST]
    values = frame("value", generalists)
    standing = _standing(values)
    generalists = sorted(generalists, key=lambda r: (-standing[r], r))
    specialists = sorted(r for r in cells if kinds[r] == SPECIALIST)
    floors = sorted(r for r in cells if kinds[r] in (FLOOR, CONTROL))  # reference rows below the Mean
    rows = specialists + generalists
    value, lo, hi, n = (frame(k, rows) for k in ("value", "lo", "hi", "n"))
    mean = value.loc[generalists].mean(axis=0) if generalists else pd.Series(math.nan, index=names)
    extra = pd.DataFrame([mean.to_numpy()], index=pd.Index([MEAN_ROW], name="model"), columns=names)
    if not generalists:  # no Mean row without models to average
        extra = extra.iloc[:0]
    floor_values = frame("value", floors)
    value = pd.concat([value, extra, floor_values])
    blank = pd.DataFrame(math.nan, index=pd.Index(list(extra.index), name="model"), columns=names)
    lo = pd.concat([lo, blank, frame("lo", floors)])  # floor rows keep the intervals their summaries hold
    hi = pd.concat([hi, blank, frame("hi", floors)])
    n = pd.concat([n, pd.concat([pd.DataFrame(math.nan, index=list(extra.index), columns=names),
                                 frame("n", floors)]).rename_axis("model")])
    kind = pd.Series({**{r: kinds[r] for r in rows}, **{r: "mean" for r in extra.index},
                      **{r: kinds[r] for r in floors}})
    marks, rank_lo, rank_hi = _marks(value.loc[generalists], lo.loc[generalists], hi.loc[generalists])
    marks = marks.reindex(value.index).fillna("")
    components = {comp: list(columns[comp]) for comp in sorted(columns, key=component_rank)}
    recorded = {c for run in runs if (c := recorded_confidence(run.summary)) is not None}
    return Leaderboard(value, lo, hi, n, kind.reindex(value.index), marks, rank_lo, rank_hi, components,
                       notes=notes, confidences=tuple(sorted(recorded)) or (CONFIDENCE,))


def percent(confidence: float) -> str:
    """A confidence level as people write it: 0.95 → "95%"."""
    return f"{100 * confidence:g}%"


def interval_label(board: Leaderboard) -> str:
    """What Table 3's intervals are: "95% CI", or, where runs were scored at other confidence
    levels, each of them ("CI at 90% or 95%, as each run was scored")."""
    levels = [percent(c) for c in board.confidences]
    if len(levels) == 1:
        return f"{levels[0]} CI"
    return f"CI at {', '.join(levels[:-1])} or {levels[-1]}, as each run was scored"


def subset_note(summary: dict[str, Any]) -> str:
    """Why a run's Table 3 cells are footnoted: ``scored on <what the run's selection says>`` (a
    specialist run on some datasets: "scored on Grevy's zebra only"), or ``scored on N of M items``;
    empty for a run scored on every item."""
    subset = summary.get("subset")
    if not isinstance(subset, dict):
        return ""
    description = (subset.get("selection") or {}).get("description")
    if isinstance(description, str) and description.strip():
        return f"scored on {description.strip()}"
    n, of = subset.get("n_items"), subset.get("of")
    return f"scored on {n:,} of {of:,} items" if isinstance(n, int) and isinstance(of, int) else "scored on a subset"


def _standing(values: pd.DataFrame) -> dict[str, float]:
    """Overall standing: the mean over columns of a model's percentile rank in each column it has
    (0 worst … 1 best); a model with no values stands last."""
    if values.empty:
        return {}
    pct = values.rank(axis=0, pct=True, method="average")
    return {r: float(v) if math.isfinite(v) else -1.0 for r, v in pct.mean(axis=1).items()}


def _marks(value: pd.DataFrame, lo: pd.DataFrame, hi: pd.DataFrame
           ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    marks = pd.DataFrame("", index=value.index, columns=value.columns, dtype=object)
    rank_lo = pd.DataFrame(math.nan, index=value.index, columns=value.columns)
    rank_hi = rank_lo.copy()
    for col in value.columns:
        v = value[col].dropna()
        if len(v) < 2:
            continue
        order = v.sort_values(ascending=False, kind="stable")
        best, second, worst = order.index[0], order.index[1], order.index[-1]
        for r in order.index:
            if order[r] == order[best]:
                marks.loc[r, col] = "best"
        for r in order.index:
            if not marks.loc[r, col] and order[r] == order[second]:
                marks.loc[r, col] = "second"
        if not marks.loc[worst, col]:
            marks.loc[worst, col] = "worst"
        b_lo = lo.loc[best, col]
        for r in order.index:
            if marks.loc[r, col] in ("", "second", "worst") and math.isfinite(b_lo) \
                    and math.isfinite(hi.loc[r, col]) and hi.loc[r, col] >= b_lo:
                marks.loc[r, col] = (marks.loc[r, col] + " tie").strip()
        los, his = lo.loc[v.index, col].to_numpy(), hi.loc[v.index, col].to_numpy()
        if np.isfinite(los).all() and np.isfinite(his).all():
            for i, r in enumerate(v.index):
                rank_lo.loc[r, col] = 1 + int((los > his[i]).sum())
                rank_hi.loc[r, col] = len(v) - int((his < los[i]).sum())
    return marks, rank_lo, rank_hi


#: How a column's rank range is found when no bootstrap replicates are available
OVERLAP_METHOD = "95% CI overlap (no shared replicates)"


def with_bootstrap_ranks(board: Leaderboard, runs: Sequence[Run], *, B: int | None = None) -> Leaderboard:
    """``board`` with rank intervals and P(best) from the shared-draw bootstrap in every column
    where each ranked generalist's score folder can be recomputed; other columns keep the
    interval-overlap range (:data:`OVERLAP_METHOD`)."""
    from biovqa.reporting.replicates import RANK_B, bootstrap_ranks

    generalists = board.generalists
    methods = {c: OVERLAP_METHOD for c in board.value.columns}
    p_best = pd.DataFrame(math.nan, index=board.rank_lo.index, columns=board.rank_lo.columns)
    if len(generalists) < 2:
        return dataclasses.replace(board, p_best=p_best, rank_methods=methods)
    ranks = bootstrap_ranks(runs, generalists, board.components, B=RANK_B if B is None else B)
    rank_lo, rank_hi = board.rank_lo.copy(), board.rank_hi.copy()
    for column in board.value.columns:
        ranked = [g for g in generalists if math.isfinite(board.value.loc[g, column])]
        if column not in ranks.methods or len(ranked) < 2 or not np.isfinite(
                ranks.rank_lo.loc[ranked, column].to_numpy()).all():
            continue
        rank_lo[column] = ranks.rank_lo[column].reindex(rank_lo.index)
        rank_hi[column] = ranks.rank_hi[column].reindex(rank_hi.index)
        p_best[column] = ranks.p_best[column].reindex(p_best.index)
        methods[column] = f"{ranks.methods[column]}; B = {ranks.B}, seed {ranks.seed}"
    return dataclasses.replace(board, rank_lo=rank_lo, rank_hi=rank_hi, p_best=p_best, rank_methods=methods)


def interval_text(value: float, lo: float, hi: float, places: int = 3) -> str:
    """``value [lo, hi]`` (just the value when there is no interval; — when missing)."""
    if not math.isfinite(value):
        return "—"
    if math.isfinite(lo) and math.isfinite(hi):
        return f"{value:.{places}f} [{lo:.{places}f}, {hi:.{places}f}]"
    return f"{value:.{places}f}"


def leaderboard_table(board: Leaderboard, places: int = 3) -> pd.DataFrame:
    """Table 3 as printed text: ``value [lo, hi]`` per cell, a ``kind`` column first."""
    shown = pd.DataFrame(index=board.value.index, columns=board.value.columns, dtype=object)
    for r in board.value.index:
        for c in board.value.columns:
            shown.loc[r, c] = interval_text(board.value.loc[r, c], board.lo.loc[r, c], board.hi.loc[r, c], places)
            if board.notes.get(r, {}).get(c):
                shown.loc[r, c] = f"{shown.loc[r, c]} {SUBSET_MARK}"
    shown.insert(0, "kind", board.kind.reindex(shown.index).tolist())
    shown.attrs["title"] = (f"Table 3 — main results across components (value [{interval_label(board)}])"
                            + subset_footnote(board))
    return shown


def subset_notes(board: Leaderboard) -> list[str]:
    """``<row> (<columns>): <note>`` for every group of footnoted cells, in row order."""
    parts = []
    for row in board.value.index:
        by_column = board.notes.get(row, {})
        for note in dict.fromkeys(by_column.values()):
            columns = ", ".join(c for c, n in by_column.items() if n == note)
            parts.append(f"{row} ({columns}): {note}")
    return parts


def subset_footnote(board: Leaderboard) -> str:
    """``; † <row> (<columns>): <note>; …`` for a table title (empty when no cell is footnoted)."""
    parts = subset_notes(board)
    return f"; {SUBSET_MARK} " + "; ".join(parts) if parts else ""


def leaderboard_values(board: Leaderboard) -> pd.DataFrame:
    """Table 3 numbers (for CSV/LaTeX): value, then ``<col>_lo``/``<col>_hi`` per column."""
    out = board.value.copy()
    out.insert(0, "kind", board.kind.reindex(out.index).tolist())
    for c in board.value.columns:
        out[f"{c}_lo"] = board.lo[c]
        out[f"{c}_hi"] = board.hi[c]
    out.attrs["title"] = f"Table 3 — values and interval bounds ({interval_label(board)})"
    return out


def rank_ranges(board: Leaderboard) -> pd.DataFrame:
    """Per generalist and column: the rank interval ``lo–hi`` (bootstrap or interval overlap, as
    ``board.rank_methods`` says)."""
    shown = pd.DataFrame(index=board.rank_lo.index, columns=board.rank_lo.columns, dtype=object)
    for r in shown.index:
        for c in shown.columns:
            a, b = board.rank_lo.loc[r, c], board.rank_hi.loc[r, c]
            shown.loc[r, c] = "—" if not math.isfinite(a) else (f"{int(a)}" if a == b else f"{int(a)}–{int(b)}")
    shown.attrs["title"] = "Rank 95% intervals (1 = best; method per column in the next table)"
    return shown


def rank_methods(board: Leaderboard) -> pd.DataFrame:
    """Per Table 3 column: how its rank intervals were found."""
    frame = pd.DataFrame({"method": [board.rank_methods.get(c, OVERLAP_METHOD) for c in board.value.columns]},
                         index=pd.Index(board.value.columns, name="column"))
    frame.attrs["title"] = "How each column's rank interval was found"
    return frame


def best_probabilities(board: Leaderboard) -> pd.DataFrame:
    """P(best) per generalist and column: the share of bootstrap replicates ranking it first."""
    frame = (board.p_best if board.p_best is not None
             else pd.DataFrame(math.nan, index=board.rank_lo.index, columns=board.rank_lo.columns)).copy()
    frame.index.name = "model"
    frame.attrs["title"] = "P(best): share of bootstrap replicates in which the model ranks first (— = no replicates)"
    return frame


def model_summary(board: Leaderboard) -> pd.DataFrame:
    """Per generalist model and component, in one cell: in how many of the component's Table 3
    columns it is best or tied with the best (overlapping 95% intervals), and the span of its 95%
    rank intervals there. No score is averaged across columns or components: the paper defines no
    overall score, so none is invented."""
    rows: dict[str, dict[str, str]] = {}
    for model in board.generalists:
        row: dict[str, str] = {}
        for component, columns in board.components.items():
            present = [c for c in columns if c in board.value.columns and math.isfinite(board.value.loc[model, c])]
            if not present:
                row[component.upper()] = "—"
                continue
            marks = [str(board.marks.loc[model, c]) for c in present]
            best = sum(m.startswith("best") for m in marks)
            tied = sum("tie" in m for m in marks)
            los = [board.rank_lo.loc[model, c] for c in present if c in board.rank_lo.columns]
            his = [board.rank_hi.loc[model, c] for c in present if c in board.rank_hi.columns]
            finite = [(a, b) for a, b in zip(los, his) if math.isfinite(a) and math.isfinite(b)]
            span = (f"; ranks {int(min(a for a, _ in finite))}–{int(max(b for _, b in finite))} of "
                    f"{len(board.generalists)}") if finite else ""
            row[component.upper()] = f"best in {best}, tied with best in {tied} of {len(present)}{span}"
        rows[model] = row
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=[c.upper() for c in board.components])
    frame.index.name = "model"
    frame.attrs["title"] = ("Per model and component: columns where it is best or tied with the best (overlapping "
                            "95% intervals) and the span of its 95% rank intervals; no overall score is invented")
    return frame
