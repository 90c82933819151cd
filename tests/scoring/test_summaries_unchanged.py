"""Every number of every demo summary equals the one biovqa computed before the one-shape refactor
(the component role layout, one bootstrap engine, one statistics toolkit), or the change is named
here. ``tests/data/pre_refactor/demo_summaries.json`` holds the summaries ``biovqa demo`` wrote at
commit 94c96e3, the last before that refactor, flattened to ``/key/key`` paths.

The named changes:

* **Renamed keys, same numbers** (one name per concept across components): the bootstrap section's
  ``level`` → ``confidence`` and ``resamples`` → ``B`` (so the score option ``level`` →
  ``confidence``); C1's ``resolution`` and C4's ``parse`` sections → ``format`` (C4's ``tiers``
  there → ``parse_status``); BAGEL's difficulty ``levels`` → ``tiers``.
* **C1 intervals only where a table prints them**: by default the group, tier and per-group
  hierarchy cells get point estimates; ``-O cell_intervals=true`` gives every interval of before,
  equal up to the float32 rounding of the image-bootstrap products (≤ 1e-6 relative).
* **C2's intervals from draws per class** (items of one family with the same scores drawn as one
  class: the item bootstrap's distribution from another stream, 2026-12-07): its bounds move by
  Monte Carlo noise only, each within a quarter of the interval's earlier width (at most 13 % on
  the demo, B = 200); its point estimates and counts are unchanged.
* **C4's z-scores (d′, c) from biovqa's own Φ⁻¹** (Wichura's AS 241 in NumPy, 2026-12-07) instead
  of SciPy's ``ndtri``, whose import cost more than scoring C4: the same to about 1e-15 relative.
* **New keys** (the ``format`` section's ``parse_status`` counts of C4, the confidence of each
  interval) are not compared: there was nothing before.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

PRE_REFACTOR = Path(__file__).parents[1] / "data" / "pre_refactor" / "demo_summaries.json"

#: (score folder, pattern, replacement): the keys renamed since, per score folder ("" = every one)
RENAMED: tuple[tuple[str, str, str], ...] = (
    ("", r"^/bootstrap/level$", "/bootstrap/confidence"),
    ("", r"^/bootstrap/resamples$", "/bootstrap/B"),
    ("", r"^/options/level$", "/options/confidence"),
    ("scores-baseline-c1", r"^/resolution/", "/format/"),
    ("scores-baseline-c4", r"^/parse/tiers/", "/format/parse_status/"),
    ("scores-baseline-c4", r"^/parse/", "/format/"),
    ("scores-baseline-bagel", r"^/levels/", "/tiers/"),
)
#: relative tolerance: C1's image bootstrap sums in float32 products (exact elsewhere, up to the
#: order in which another CPU's BLAS adds)
TOLERANCE = {"scores-baseline-c1": 1e-6}
DEFAULT_TOLERANCE = 1e-9
#: score folders whose interval bounds come from another stream of the same resampling scheme
#: now: each bound within this share of the interval's earlier width
NEW_STREAM = {"scores-baseline-c2": 0.25}


def _flat(value: object, path: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _flat(item, f"{path}/{key}").items()}
    if isinstance(value, list):
        return {k: v for index, item in enumerate(value) for k, v in _flat(item, f"{path}/{index}").items()}
    return {path: value}


def _renamed(folder: str, key: str) -> str:
    for scope, pattern, replacement in RENAMED:
        if scope in ("", folder):
            key = re.sub(pattern, replacement, key)
    return key


@pytest.mark.slow
def test_every_demo_summary_number_equals_the_pre_refactor_value(
        demo_run: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    from biovqa.scoring.pipeline import score_predictions

    out, result = demo_run
    assert result.returncode == 0, result.stderr
    before = json.loads(PRE_REFACTOR.read_text())["summaries"]
    assert sorted(before) == sorted(p.name for p in out.glob("scores-*"))
    # C1 again with every cell's interval, as before the refactor (the demo's B = 200 kept)
    c1 = json.loads((out / "scores-baseline-c1" / "summary.json").read_text())
    assert c1["options"]["cell_intervals"] is False and c1["groups"]["Amphibians"]["em"]["hi"] is None
    cells = score_predictions(out / "bench-c1", out / "run-baseline-c1" / "predictions.parquet", tmp_path / "c1",
                              options={**c1["options"], "cell_intervals": True}, label=c1["label"])
    compared = 0
    for folder, numbers in sorted(before.items()):
        summary_path = (cells if folder == "scores-baseline-c1" else out / folder) / "summary.json"
        now = _flat(json.loads(summary_path.read_text()))
        tolerance = TOLERANCE.get(folder, DEFAULT_TOLERANCE)
        for key, value in numbers.items():
            if key == "/options/cell_intervals":
                continue
            new_key = _renamed(folder, key)
            assert new_key in now, f"{folder}: {key} (now {new_key}) is gone"
            if folder in NEW_STREAM and key.endswith(("/lo", "/hi")) and value is not None:
                width = numbers[key[:-3] + "/hi"] - numbers[key[:-3] + "/lo"]
                assert abs(now[new_key] - value) <= NEW_STREAM[folder] * width, f"{folder}: {key}"
                compared += 1
                continue
            assert now[new_key] == pytest.approx(value, rel=tolerance, abs=tolerance), f"{folder}: {key}"
            compared += 1
    assert compared > 4_000
