"""Fixtures for the run-stage tests: tiny offline VLMs, test images, a real OpenAI-compatible server.

* ``tiny_model_dir(kind)`` builds a tiny random LLaVA or Gemma3 (see ``tiny_models.py``) once per
  session and caches it; ``tiny_llava_dir`` / ``tiny_gemma3_dir`` are shortcuts.
* ``tiny_images`` are four small distinct PNGs.
* ``transformers_server`` starts ``transformers serve`` with the tiny LLaVA on 127.0.0.1 (a free
  port, ``HF_HUB_OFFLINE=1``) once per session, waits on ``/health`` and stops it at the end.

Everything needing torch/transformers skips cleanly where they are not installed.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tiny_models import TINY_MODEL_BUILDERS, write_test_images

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``tiny_model_dir("llava" | "gemma3")`` → a saved tiny model folder (built once)."""
    built: dict[str, Path] = {}

    def get(kind: str) -> Path:
        pytest.importorskip("torch")
        pytest.importorskip("transformers")
        if kind not in built:
            built[kind] = TINY_MODEL_BUILDERS[kind](tmp_path_factory.mktemp(f"tiny-{kind}") / kind)
        return built[kind]

    return get


@pytest.fixture(scope="session")
def tiny_llava_dir(tiny_model_dir: Callable[[str], Path]) -> Path:
    return tiny_model_dir("llava")


@pytest.fixture(scope="session")
def tiny_gemma3_dir(tiny_model_dir: Callable[[str], Path]) -> Path:
    return tiny_model_dir("gemma3")


@pytest.fixture(scope="session")
def tiny_images(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_test_images(tmp_path_factory.mktemp("tiny-images"), count=4)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_health(url: str, process: subprocess.Popen, log: Path, deadline_s: float) -> None:
    import httpx

    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"transformers serve exited early:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"transformers serve not healthy after {deadline_s} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="session")
def transformers_server(
    tiny_llava_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """A real ``transformers serve`` of the tiny LLaVA on 127.0.0.1; yields base_url and model."""
    executable = shutil.which("transformers") or str(Path(sys.executable).parent / "transformers")
    if not Path(executable).exists():
        pytest.skip("the transformers CLI is not installed")
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    environment = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            [executable, "serve", str(tiny_llava_dir), "--host", "127.0.0.1", "--port", str(port),
             "--device", "cpu"],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=environment,
            start_new_session=True,
        )
    try:
        wait_for_health(f"http://127.0.0.1:{port}/health", process, log, deadline_s=90.0)
        yield {"base_url": f"http://127.0.0.1:{port}/v1", "model": str(tiny_llava_dir)}
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=15)
