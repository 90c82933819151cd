"""The exit status of a command stopped by a signal is 128 + that first signal, even when more
interrupts land while it unwinds: pyarrow re-emits a signal after cancelling one of its reads, and
a user may press Ctrl-C twice. A late interrupt must never turn into an unhandled
KeyboardInterrupt, which makes Python end the process "by SIGINT" (status -2) after the message;
nor may an interrupt that unwound through exec'd source text, which CPython remembers until exit
under ``python -m`` (biovqa/__main__.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# a command that, once SIGTERM arrives, keeps firing simulated Ctrl-Cs at the main thread from
# another thread for the rest of the process's life: while its own cleanup runs, while the CLI
# restores the signals' handlers, reports and exits
APP = textwrap.dedent("""
    import _thread, os, signal, threading, time
    import typer
    from biovqa.cli._app import run_app

    app = typer.Typer()

    def flood():
        while True:
            _thread.interrupt_main()
            time.sleep(0.0005)

    @app.command()
    def work(cleanup: float = 0.3) -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        finally:
            threading.Thread(target=flood, daemon=True).start()
            deadline = time.monotonic() + cleanup
            while time.monotonic() < deadline:
                try:
                    sum(range(1000))
                except KeyboardInterrupt:
                    pass

    class Unprintable(Exception):
        def __str__(self) -> str:  # Ctrl-C lands while the error is being reported
            raise KeyboardInterrupt

    @app.command()
    def fail() -> None:
        raise Unprintable()

    run_app(app)
""")


def _app(tmp_path: Path, command: str) -> tuple[int, str]:
    """Run APP's ``command`` in a fresh process: (exit status, standard error)."""
    script = tmp_path / "app.py"
    script.write_text(APP, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), command], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONHASHSEED": "0"})
    assert "Traceback" not in done.stderr
    return done.returncode, " ".join(done.stderr.split())


@pytest.mark.parametrize("repeat", range(3))
def test_a_command_stopped_by_sigterm_exits_143_through_a_flood_of_late_interrupts(tmp_path: Path, repeat: int) -> None:
    code, stderr = _app(tmp_path, "work")
    assert code == 128 + signal.SIGTERM, (code, stderr)
    assert "interrupted (SIGTERM)" in stderr


def test_ctrl_c_landing_while_an_error_is_reported_ends_as_interrupted(tmp_path: Path) -> None:
    code, stderr = _app(tmp_path, "fail")
    assert code == 128 + signal.SIGINT, (code, stderr)
    assert "interrupted (Ctrl-C)" in stderr


# a backend whose creation is interrupted inside code that exec() runs from source text, as a
# Ctrl-C can land while a library makes a dataclass or a named tuple during a lazy import
INTERRUPTED_IN_EXEC = textwrap.dedent("""
    import os, signal

    def create(model, **options):
        exec("os.kill(os.getpid(), signal.{name})\\nsum(range(10 ** 6))", {{"os": os, "signal": signal}})
""")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_python_m_biovqa_exits_128_plus_the_signal_after_an_interrupt_inside_exec(
        tmp_path: Path, demo_bench: Path, signum: int) -> None:
    """``python -m biovqa``: CPython would end this process "killed by SIGINT" (-2) once an
    interrupt has unwound through exec'd text, whatever status the command chose."""
    site = tmp_path / "site"
    site.mkdir()
    name = signal.Signals(signum).name
    (site / "interrupting_backend.py").write_text(INTERRUPTED_IN_EXEC.format(name=name), encoding="utf-8")
    env = {**os.environ, "PYTHONHASHSEED": "0",
           "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "biovqa", "run", str(demo_bench), "--backend",
                           "interrupting_backend:create", "--model", "m", "-o", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=120, env=env)
    said = " ".join(done.stderr.split())
    assert done.returncode == 128 + signum, (done.returncode, said)
    assert f"interrupted ({'Ctrl-C' if signum == signal.SIGINT else name})" in said
    assert "Traceback" not in done.stderr
