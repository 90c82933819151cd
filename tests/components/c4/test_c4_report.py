"""C4 report tables: one unit convention (Tables 51/88 as fractions like every other table) and
the figure through the shared plotting helper."""

from __future__ import annotations

from pathlib import Path

import pytest

from biovqa.components.c4 import report


def _summary(easy: float, hard: float, lo: float, hi: float) -> dict:
    cell = {"dprime": {"value": 0.5}, "c": {"value": -0.1}, "acc": {"value": 0.6}}
    return {"table3": {"dprime": {"value": 0.5}, "acc": {"value": 0.6}},
            "pooled": {"easy": {**cell, "acc": {"value": easy}}, "random": cell, "hard": {**cell, "acc": {"value": hard}}},
            "cells": {"gzcd": {"easy": cell, "random": cell, "hard": cell}},
            "ordering": {"easy_minus_hard_acc": {"difference": easy - hard, "lo": lo, "hi": hi}}}


def test_easy_minus_hard_is_printed_as_fractions() -> None:
    out = report.tables([("A", _summary(0.8124, 0.6, 0.19, 0.2348)), ("B", _summary(0.7, 0.65, 0.03, 0.07))])
    table = out["table51_easy_minus_hard"]
    assert list(table.columns) == ["model", "acc_easy", "acc_hard", "difference", "ci95_lo", "ci95_hi"]
    assert table["model"].tolist() == ["A", "B"]  # sorted by the difference
    assert table.iloc[0].tolist()[1:] == [0.812, 0.6, pytest.approx(0.212), 0.19, 0.235]
    assert "fractions" in table.attrs["title"]
    assert (table.iloc[:, 1:].abs() <= 1).all().all()


def test_figure_is_deterministic(tmp_path: Path) -> None:
    summaries = [("A", _summary(0.8, 0.6, 0.1, 0.3))]
    first = report.figures(summaries, tmp_path / "a")
    second = report.figures(summaries, tmp_path / "b")
    assert [p.name for p in first] == ["c4_dprime_c.png"]
    assert first[0].read_bytes() == second[0].read_bytes() and first[0].read_bytes()[:4] == b"\x89PNG"
