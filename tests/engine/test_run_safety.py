"""A run folder has one writer at a time, and no credential reaches anything a run writes or prints.

* two ``biovqa run`` processes on one ``--out``: the second is refused naming the first's pid, the
  first finishes with every item answered once and one session in ``run.json``;
* a loopback server that answers 401 with the request's ``Authorization`` header in its body, and a
  ``--base-url`` carrying ``user:password@``: neither the key nor the password (plain or in HTTP
  Basic form) is in the store, the predictions, ``run.json`` or the terminal output.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fixtures.engine_helpers import make_bench

from biovqa.engine.secrets import Redactor
from biovqa.engine.store import LOCK_FILE, RunLock
from biovqa.errors import BiovqaError


def _run_command(bench: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "biovqa", "run", str(bench), "--out", str(out),
            "--backend", "echo", "--no-progress", *extra]


def test_a_second_run_on_the_same_folder_is_refused(tmp_path: Path) -> None:
    bench = make_bench(tmp_path / "bench", n_images=20).root  # 60 items, 0.1 s each: ~6 s
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    first = subprocess.Popen(_run_command(bench, out, "--option", "delay_s=0.1",
                                          "--flush-rows", "6"),
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (out / LOCK_FILE).exists() or not (out / LOCK_FILE).read_text().strip():
        assert first.poll() is None, first.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    second = subprocess.run(_run_command(bench, out), env=env, capture_output=True, text=True,
                            timeout=120)
    assert first.wait(timeout=120) == 0, first.communicate()
    assert second.returncode == 2
    assert f"in use by biovqa pid {first.pid}" in second.stderr
    assert "Traceback" not in second.stderr
    table = pq.read_table(out / "predictions.parquet")
    assert table.num_rows == 60 and len(set(table.column("item_id").to_pylist())) == 60
    card = json.loads((out / "run.json").read_text())
    assert card["status"] == "complete" and len(card["sessions"]) == 1
    # the lock died with its holder: the same command now resumes everything
    again = subprocess.run(_run_command(bench, out), env=env, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0 and "60 resumed, 0 asked" in again.stderr


def test_run_lock_is_exclusive_within_one_process_too(tmp_path: Path) -> None:
    with RunLock(tmp_path / "run"):
        with pytest.raises(BiovqaError, match=f"biovqa pid {os.getpid()}"):
            RunLock(tmp_path / "run").acquire()
        with pytest.raises(BiovqaError):
            RunLock(tmp_path / "run", shared=True).acquire()  # a merge never reads a live run
    RunLock(tmp_path / "run").acquire().release()


# -- secrets ---------------------------------------------------------------------------------------
class _Reflector(BaseHTTPRequestHandler):
    """401 for every request, echoing the Authorization header (as some gateways do)."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        body = json.dumps({"error": {
            "message": f"invalid credentials: {self.headers.get('Authorization')}",
            "url": f"http://{self.headers.get('Host')}{self.path}"}}).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def reflecting_server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Reflector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_reflected_key_and_url_credentials_are_never_written(
    tmp_path: Path, reflecting_server: int
) -> None:
    key = "sk-live-reflected-SECRET-0123456789abcdef"
    password = "url-password-SECRET-42"
    bench = make_bench(tmp_path / "bench", n_images=2).root
    out = tmp_path / "run"
    env = {**os.environ, "BIOVQA_TEST_KEY": key}
    result = subprocess.run(
        [sys.executable, "-m", "biovqa", "run", str(bench), "--out", str(out),
         "--backend", "openai", "--model", "tiny",
         "--base-url", f"http://alice:{password}@127.0.0.1:{reflecting_server}/v1",
         "--api-key-env", "BIOVQA_TEST_KEY", "--max-retries", "0", "--no-progress"],
        env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert "all 6 of 6 requests failed" in result.stderr
    assert "HTTP 401" in result.stderr and "***" in result.stderr
    basic = base64.b64encode(f"alice:{password}".encode()).decode()
    forbidden = [key.encode(), password.encode(), basic.encode()]
    written = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in written)
    for path in written:
        data = path.read_bytes()
        for secret in forbidden:
            assert secret not in data, (path, secret)
    for secret in (key, password, basic):
        assert secret not in result.stdout + result.stderr
    errors = pq.read_table(out / "predictions.parquet").column("error").to_pylist()
    assert all(e and "HTTP 401" in e and "***" in e for e in errors)
    card = json.loads((out / "run.json").read_text())
    assert "alice" not in json.dumps(card["backend_options"])


def test_redactor_masks_known_secrets_and_credential_shapes() -> None:
    redactor = Redactor(["sk-abcdef123456"])
    assert redactor.text("got Bearer sk-abcdef123456!") == "got Bearer ***!"
    assert redactor.text("Authorization: Basic YWxpY2U6cHc=") == "Authorization: Basic ***"
    assert redactor.text("see https://bob:pw@host/v1") == "see https://***@host/v1"
    # a model's reply keeps its words; only a known secret is masked there
    assert redactor.known("Basic structures of the bearer") == "Basic structures of the bearer"
    assert redactor.text("http://u:p@h:1/v1?x=1") == "http://***@h:1/v1?x=1"
