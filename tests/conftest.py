"""Shared fixtures: the bundled demo data built into a C1 benchmark once per session."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: tiny offline VLMs, test images and a real OpenAI-compatible server (tests/fixtures/models.py)
pytest_plugins = ["fixtures.models"]


@pytest.fixture(scope="session")
def demo_data() -> Path:
    from biovqa.demo import demo_data_dir

    return demo_data_dir()


@pytest.fixture(scope="session")
def demo_index(tmp_path_factory: pytest.TempPathFactory, demo_data: Path) -> Path:
    from biovqa.taxonomy.index import build_index

    out = tmp_path_factory.mktemp("index") / "index"
    build_index(demo_data / "backbone", out)
    return out


@pytest.fixture(scope="session")
def demo_images(tmp_path_factory: pytest.TempPathFactory, demo_data: Path) -> Path:
    from biovqa.synthetic import draw_placeholder_images

    images = tmp_path_factory.mktemp("images") / "images"
    draw_placeholder_images(demo_data / "catalog.csv", images)
    return images


@pytest.fixture(scope="session")
def demo_bench(tmp_path_factory: pytest.TempPathFactory, demo_data: Path, demo_index: Path,
               demo_images: Path) -> Path:
    from biovqa.components.c1.build import C1BuildOptions, build_c1

    out = tmp_path_factory.mktemp("bench") / "bench-c1"
    build_c1(demo_data / "catalog.csv", demo_index, demo_images, out,
             options=C1BuildOptions(per_group=8, species_cap=2))
    return out


@pytest.fixture()
def bench_copy(tmp_path: Path, demo_bench: Path, demo_images: Path, demo_index: Path) -> Path:
    """A private copy of the demo benchmark, its images included, that a test may damage (its
    manifest names the copied images and the shared index by absolute path, which readers accept
    beside the relative paths a build records)."""
    import json

    target = tmp_path / "bench"
    shutil.copytree(demo_bench, target)
    images = tmp_path / "images"
    shutil.copytree(demo_images, images)
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    manifest["images_root"] = str(images)
    manifest["taxonomy_index"] = str(demo_index.resolve())
    (target / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return target



@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """``biovqa demo`` run once per session as a user runs it (a subprocess): its folder and the
    finished process (exit status, the lines it printed)."""
    out = tmp_path_factory.mktemp("demo") / "demo"
    result = subprocess.run([sys.executable, "-m", "biovqa", "demo", "--out", str(out)], capture_output=True,
                            text=True, timeout=600)
    return out, result
