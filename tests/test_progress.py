"""biovqa.progress, the one progress helper: live bars on a terminal, one line per stage
in a log, never a repeated line, silent for library callers."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from biovqa.progress import LiveLine, show_progress, stage, stage_sequence, track


def _log_console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=False, width=200), buffer


def test_a_log_gets_one_line_per_outer_stage_and_nothing_for_library_callers() -> None:
    console, buffer = _log_console()
    with stage("quiet", console=console) as step:  # no show_progress(): a library call
        step.advance(3)
    assert buffer.getvalue() == ""
    with show_progress():
        with stage("C9: building", total=4, unit="images", console=console) as step:
            with stage("inner step", console=console):  # speaks through the outer line
                pass
            for _ in range(4):
                step.advance()
        assert list(track(range(3), "C9: scoring", console=console)) == [0, 1, 2]
        with stage_sequence(unit="bytes", console=console) as files:
            task = files.add_task("Taxon.tsv", total=2048)
            files.advance(task, 2048)
            files.add_task("VernacularName.tsv")
    lines = buffer.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == ["C9", "C9", "Taxon.tsv", "VernacularName.tsv"]
    assert lines[0].startswith("C9: building: 4 images in ") and lines[0].endswith(" s")
    assert lines[1].startswith("C9: scoring: 3 items in ")
    assert lines[2].startswith("Taxon.tsv: 2.0 KiB in ")


def test_a_failed_stage_writes_no_line() -> None:
    console, buffer = _log_console()
    with show_progress():
        try:
            with stage("C9: building", console=console):
                raise ValueError("boom")
        except ValueError:
            pass
    assert buffer.getvalue() == ""


def _report_command(scores: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "biovqa", "report", str(scores), "-o", str(out)]


def test_report_logs_each_stage_once_and_draws_bars_on_a_terminal(tmp_path: Path, demo_bench: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "biovqa", "run", str(demo_bench), "--backend", "baseline",
                          "-o", str(tmp_path / "run")], capture_output=True, text=True, check=True)
    scored = subprocess.run([sys.executable, "-m", "biovqa", "score", str(demo_bench), "-p",
                             str(tmp_path / "run" / "predictions.parquet"), "--bootstrap", "50",
                             "-o", str(tmp_path / "scores")], capture_output=True, text=True)
    assert scored.returncode == 0, scored.stderr
    assert "C1: scoring 712 items, 50 bootstrap resamples: " in scored.stderr, run.stderr
    logged = subprocess.run(_report_command(tmp_path / "scores", tmp_path / "report"), capture_output=True,
                            text=True)
    assert logged.returncode == 0, logged.stderr
    lines = logged.stderr.splitlines()
    stages = [line for line in lines if line.startswith("report: ")]
    assert [s.rsplit(":", 1)[0] for s in stages] == [
        "report: leaderboard and rank bootstrap", "report: cross-component analysis",
        "report: C1 tables and figures", "report: item browser"]
    assert len(lines) == len(set(lines)) and "\r" not in logged.stderr
    reader, writer = pty.openpty()
    on_terminal = subprocess.Popen(_report_command(tmp_path / "scores", tmp_path / "report-tty"),
                                   stdin=writer, stdout=writer, stderr=writer)
    os.close(writer)
    seen = b""
    while True:
        try:
            chunk = os.read(reader, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(reader)
    assert on_terminal.wait(timeout=300) == 0
    text = seen.decode(errors="replace")
    assert "━" in text and "✓" in text and "report: item browser" in text  # a live bar, then its line


def test_a_live_line_in_a_log_is_written_when_due_and_its_final_news_once() -> None:
    buffer = io.StringIO()
    line = LiveLine(stream=buffer, log_every_s=3600)
    assert not line.is_terminal and line.due()
    line.draw("3/9 items")
    assert not line.due()  # the next line only after log_every_s
    line.close("9/9 items")
    assert buffer.getvalue().splitlines() == ["3/9 items", "9/9 items"]
    silent = io.StringIO()
    off = LiveLine(stream=silent, enabled=False)
    assert not off.due()
    off.draw("1/1 items")
    off.close("1/1 items")
    assert silent.getvalue() == ""


def test_a_live_line_on_a_terminal_is_redrawn_and_leaves_its_final_news() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    line = LiveLine(stream=screen, interval_s=0)
    assert line.is_terminal
    line.draw("1/2 items [x]")  # brackets are text, not rich markup
    line.draw("2/2 items [x]")
    line.close("2/2 items [x] | ETA 00:00:00")
    assert screen.getvalue().rstrip().endswith("2/2 items [x] | ETA 00:00:00")




class _InterruptedTerminal(io.StringIO):
    """A terminal on which Ctrl-C arrives once, while the text ``interrupt_at`` is being drawn."""

    def __init__(self, interrupt_at: str) -> None:
        super().__init__()
        self.interrupt_at: str | None = interrupt_at

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if self.interrupt_at is not None and self.interrupt_at in text:
            self.interrupt_at = None
            raise KeyboardInterrupt
        return super().write(text)


def test_a_live_line_cut_short_by_ctrl_c_while_drawing_still_closes() -> None:
    """Ctrl-C can land in the terminal write inside the first draw, after the display holds the
    line but before the line knows its id: the half-drawn line is taken off again, and closing
    (as ``biovqa run`` does after writing its interrupted card) leaves the final news instead of
    failing."""
    screen = _InterruptedTerminal("1/2 items")
    line = LiveLine(stream=screen, interval_s=0)
    with pytest.raises(KeyboardInterrupt):
        line.draw("1/2 items")
    display = line._display
    assert display.task_ids == []
    line.close("1/2 items | interrupted")
    assert display.task_ids == [] and not display.live.is_started
    assert screen.getvalue().rstrip().endswith("1/2 items | interrupted")


def test_a_stage_cut_short_by_ctrl_c_while_drawing_stops_its_display() -> None:
    """The same Ctrl-C in a stage's first draw: the stage's own display is stopped (a terminal
    gets its cursor back) and an outer stage's display keeps only its own line."""
    console = Console(file=_InterruptedTerminal("inner step"), force_terminal=True, width=120)
    with show_progress(), stage("outer step", console=console) as outer:
        with pytest.raises(KeyboardInterrupt), stage("inner step", console=console):
            pass
        assert outer._display.task_ids == [outer._task]
    console = Console(file=_InterruptedTerminal("only step"), force_terminal=True, width=120)
    with show_progress():
        started = []
        import rich.progress

        original = rich.progress.Progress.start

        def start(self: rich.progress.Progress) -> None:
            started.append(self)
            original(self)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(rich.progress.Progress, "start", start)
            with pytest.raises(KeyboardInterrupt), stage("only step", console=console):
                pass
    assert len(started) == 1 and not started[0].live.is_started and started[0].task_ids == []
