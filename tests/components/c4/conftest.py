"""Fixtures of the C4 tests: a synthetic Wild Me catalog, a tiny random DINOv2 built from a
config (no download) and a tiny C4 benchmark built from both."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.c4_benches import PAIRS
from fixtures.wildlife import write_catalog


@pytest.fixture(scope="session")
def c4_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_catalog(tmp_path_factory.mktemp("c4-catalog"), n_individuals=5, images_per_view=3)


@pytest.fixture(scope="session")
def tiny_dinov2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from biovqa.components.c4.demo import build_tiny_dinov2

    return build_tiny_dinov2(tmp_path_factory.mktemp("dinov2") / "model")


@pytest.fixture(scope="session")
def c4_bench(tmp_path_factory: pytest.TempPathFactory, c4_catalog: Path, tiny_dinov2: Path) -> Path:
    from biovqa.components.c4.build import build_c4

    out = tmp_path_factory.mktemp("c4-bench") / "bench"
    return build_c4({"whaleshark": c4_catalog}, tiny_dinov2, out, pairs_per_kind=PAIRS).root
