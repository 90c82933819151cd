"""Fixtures of the C2 scorer tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fixtures.c2_items import LAYOUT, write_c2_bench

from biovqa.bench.folder import Bench


@pytest.fixture
def make_bench(tmp_path: Path) -> Callable[..., Bench]:
    counter = {"n": 0}

    def make(rows: list[dict[str, Any]], layout: dict | None = LAYOUT) -> Bench:
        counter["n"] += 1
        return write_c2_bench(tmp_path / f"bench{counter['n']}", rows, layout)
    return make
