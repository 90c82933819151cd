"""Default intra-op threads: the idle cores, rounded, shared among the workers."""

from __future__ import annotations

import os

import pytest

from biovqa.engine import executors


@pytest.mark.parametrize(("cores", "load", "workers", "expected"), [
    (2, 0.0, 1, 2),    # idle: every core
    (2, 0.45, 1, 2),   # near idle: 1.55 cores left rounds to 2 (truncating gave 1, ~20% slower)
    (2, 0.6, 1, 1),    # 1.4 left
    (2, 1.6, 1, 1),    # 0.4 left: still one thread
    (2, 5.0, 1, 1),    # overloaded: one thread
    (8, 0.3, 2, 4),    # idle, two workers: half the cores each
    (8, 5.4, 2, 3),    # 2.6 left rounds to 3, under the share of 4
    (16, 0.0, 3, 5),   # 16 // 3
])
def test_default_threads_rounds_the_idle_cores(monkeypatch: pytest.MonkeyPatch, cores: int,
                                               load: float, workers: int, expected: int) -> None:
    monkeypatch.setattr(executors, "physical_cores", lambda: cores)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    assert executors.default_threads(workers) == expected
