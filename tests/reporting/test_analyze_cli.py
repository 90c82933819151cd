"""``biovqa analyze`` through the command line: tables and analysis.json; too few models exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def _biovqa(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "biovqa", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_analyze_writes_the_tables(scored_runs: list[Path], tmp_path: Path) -> None:
    result = _biovqa("analyze", *scored_runs, "--out", tmp_path / "analysis", "--permutations", "200")
    assert result.returncode == 0, result.stderr
    card = json.loads((tmp_path / "analysis" / "analysis.json").read_text())
    # four generalists (the floor and the [specialist] are left out); C1 and C3 tasks, OCR excluded
    assert len(card["models"]) == 4 and "ocr" not in card["tasks"] and card["permutations"] == 200
    assert set(card["pairs"]) == {"C1-C3"} and 1 / 201 <= card["p_gap"] <= 1
    for stem in ("summary", "components", "pairs", "task_rho", "pc1_loadings", "matrix"):
        for suffix in (".csv", ".md", ".tex"):
            assert (tmp_path / "analysis" / f"{stem}{suffix}").exists(), stem + suffix


@pytest.mark.slow
def test_analyze_with_too_few_models_is_a_clear_error(scored_runs: list[Path], tmp_path: Path) -> None:
    result = _biovqa("analyze", scored_runs[0], "--out", tmp_path / "analysis")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "at least 4 generalist models" in result.stderr.replace("\n", " ")
