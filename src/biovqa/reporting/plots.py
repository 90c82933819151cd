"""The one way report figures are drawn and saved (C1–C4 reports, the analysis heat map).

Figures are plain :class:`matplotlib.figure.Figure` objects on the Agg canvas (no pyplot, so no
global backend switch and no figure left open), saved as PNG at a fixed dpi with the
``Software`` metadata removed: the same inputs give the same bytes.

* :func:`figure` — a context manager: a new figure and its axes; on leaving the block the
  layout is tightened and the PNG written to the given path;
* :func:`grouped_bars` — one bar per series and category, side by side, with 95% interval
  whiskers (a missing bound draws no whisker; a missing value draws no bar);
* :func:`series_offsets` — the x offsets of ``n`` side-by-side series within a category slot.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

#: PNG resolution of every report figure
DPI = 120


@contextmanager
def figure(path: str | Path, figsize: tuple[float, float], *, nrows: int = 1, ncols: int = 1,
           sharex: bool = False, dpi: int = DPI) -> Iterator[tuple[Any, Any]]:
    """``with figure(path, (w, h)) as (fig, axes): …`` — draw, and the PNG is written on exit
    (the parent folder is created)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, sharex=sharex)
    yield fig, axes
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi, metadata={"Software": None}, bbox_inches="tight", pad_inches=0.1)


def series_offsets(n_series: int, slot: float = 0.8) -> tuple[np.ndarray, float]:
    """(offset of each series from the slot centre, width of one series) for ``n_series`` drawn
    side by side within ``slot`` of a unit-spaced axis."""
    n = max(1, n_series)
    width = slot / n
    return (np.arange(n) - (n - 1) / 2) * width, width


def whiskers(values: Sequence[float], lo: Sequence[float], hi: Sequence[float]) -> np.ndarray:
    """``2 × n`` error-bar lengths below and above ``values``; 0 where a bound is missing."""
    v, a, b = (np.asarray(x, dtype=float) for x in (values, lo, hi))
    below = np.where(np.isnan(a) | np.isnan(v), 0.0, v - a)
    above = np.where(np.isnan(b) | np.isnan(v), 0.0, b - v)
    return np.clip(np.vstack([below, above]), 0.0, None)


def grouped_bars(ax: Any, categories: Sequence[str],
                 series: Sequence[tuple[str, Sequence[float], Sequence[float], Sequence[float]]],
                 *, rotation: float = 0.0) -> np.ndarray:
    """Draw ``series`` = ``[(label, values, lo, hi), …]`` as side-by-side bars per category with
    interval whiskers; returns the category positions."""
    positions = np.arange(len(categories))
    offsets, width = series_offsets(len(series))
    for offset, (label, values, lo, hi) in zip(offsets, series):
        ax.bar(positions + offset, np.nan_to_num(np.asarray(values, dtype=float)), width, label=label,
               yerr=whiskers(values, lo, hi), capsize=2)
    ax.set_xticks(positions)
    ax.set_xticklabels(list(categories), rotation=rotation, ha="right" if rotation else "center")
    return positions


def legend(ax: Any, n_series: int, *, columns: int = 3, below: bool = False) -> None:
    """A small legend (none without series), always outside the data: ``below`` puts it under the
    axes and their tick labels, otherwise it stands to the right of the axes; frameless. The figure
    is saved with a tight bounding box, so an outside legend is never cut off."""
    if n_series <= 0:
        return
    if below:
        ax.legend(fontsize="small", ncol=min(columns, n_series), frameon=False, loc="upper center",
                  bbox_to_anchor=(0.5, -0.22))
    else:
        ax.legend(fontsize="small", ncol=1, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))


__all__ = ["DPI", "figure", "grouped_bars", "legend", "series_offsets", "whiskers"]
