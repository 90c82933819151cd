"""The report writer prints each table at its declared precision under its own title."""

from __future__ import annotations

import pandas as pd

from biovqa.reporting.writer import _formatted, _markdown, _title


def test_declared_decimals_and_title_are_used() -> None:
    frame = pd.DataFrame({"model": ["a", "b"], "severity": [0.5312, None], "fall": [8.66, 20.71],
                          "n": [3, 4]}).set_index("model")
    frame.attrs["decimals"] = {"severity": 2, "fall": 1}
    frame.attrs["title"] = "Table 21 — severity by question type"
    shown = _formatted(frame)
    assert shown["severity"].tolist() == ["0.53", "—"] and shown["fall"].tolist() == ["8.7", "20.7"]
    assert shown["n"].tolist() == ["3", "4"]
    assert "| a | 0.53 | 8.7 | 3 |" in _markdown(frame)
    assert _title("table21_severity", frame) == "Table 21 — severity by question type"
    assert _title("table18_pooled") == "Table 18 — pooled"
