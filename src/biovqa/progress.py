"""Progress on long steps: the one helper every build, score, report, export and fetch uses.

A *stage* is a named step (``"C3: rendering canvases"``) with an optional total::

    from biovqa.progress import stage

    with stage("C3: rendering canvases", total=len(jobs), unit="images") as step:
        for job in jobs:
            render(job)
            step.advance()

On a terminal it is a live rich bar (description, bar, done/total, elapsed, time left) that
disappears when the stage ends and leaves one line: ``✓ C3: rendering canvases: 1,234 images in
12.3 s``. Elsewhere (a log, a pipe, CI) nothing is drawn while it runs and that one line is printed
when it ends, so a log holds one line per stage and never a repeated one. Stages inside a stage
share the outer one's display (rich can show one live display at a time) and, off a terminal, print
nothing: the outer line speaks for them.

Progress is shown only where the ``biovqa`` command turned it on (:func:`show_progress`): library
calls stay silent unless their caller asks. ``BIOVQA_PROGRESS=0`` turns it off everywhere.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

_CONSOLE: list[Any] = []
#: whether stages draw and log at all (the CLI turns this on), and whether stage lines are logged
_SHOWN: ContextVar[bool] = ContextVar("biovqa_progress_shown", default=False)
_LOGGED: ContextVar[bool] = ContextVar("biovqa_progress_logged", default=True)
#: the live display of the outermost running stage (None off a terminal or when none runs)
_LIVE: ContextVar[Any] = ContextVar("biovqa_progress_live", default=None)
_DEPTH: ContextVar[int] = ContextVar("biovqa_progress_depth", default=0)


def stderr_console() -> Any:
    """The one rich console on stderr that biovqa's messages and progress share (two consoles
    drawing at once would tear each other's lines)."""
    if not _CONSOLE:
        from rich.console import Console

        _CONSOLE.append(Console(stderr=True, soft_wrap=True))
    return _CONSOLE[0]


@contextmanager
def show_progress(shown: bool = True) -> Iterator[None]:
    """Turn stages on (or off) for the block; the ``biovqa`` command runs every command inside
    ``show_progress()``."""
    token = _SHOWN.set(shown and os.environ.get("BIOVQA_PROGRESS", "1") != "0")
    try:
        yield
    finally:
        _SHOWN.reset(token)


@contextmanager
def without_stage_lines() -> Iterator[None]:
    """Keep the live bars on a terminal but log no stage lines (``biovqa demo`` prints its own
    numbered steps)."""
    token = _LOGGED.set(False)
    try:
        yield
    finally:
        _LOGGED.reset(token)


@dataclass
class Stage:
    """A running stage: :meth:`advance` it as work is done, set :attr:`total` once it is known."""

    description: str
    total: int | None
    unit: str
    done: int = 0
    started: float = field(default_factory=time.perf_counter)
    _display: Any = None
    _task: Any = None

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._display is not None:
            self._display.update(self._task, completed=self.done, total=self.total)

    def update(self, *, done: int | None = None, total: int | None = None,
               description: str | None = None) -> None:
        """Set the count (a download reports bytes so far), the total or the description."""
        if done is not None:
            self.done = done
        if total is not None:
            self.total = total
        if description is not None:
            self.description = description
        if self._display is not None:
            self._display.update(self._task, completed=self.done, total=self.total,
                                 description=self.description)

    def summary(self) -> str:
        elapsed = time.perf_counter() - self.started
        amount = _amount(self.done, self.unit) if self.done or self.total else ""
        return f"{self.description}: {amount + ' in ' if amount else ''}{elapsed:.1f} s"


def _amount(n: int, unit: str) -> str:
    if unit == "bytes":
        for size, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
            if n >= size:
                return f"{n / size:,.1f} {name}"
        return f"{n:,} bytes"
    return f"{n:,} {unit}"


def _new_display(console: Any, unit: str) -> Any:
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    counts = (DownloadColumn(), TransferSpeedColumn()) if unit == "bytes" else (MofNCompleteColumn(),)
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), *counts,
                    TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=True)


@contextmanager
def stage(description: str, *, total: int | None = None, unit: str = "items",
          console: Any | None = None) -> Iterator[Stage]:
    """A named step of a long command (see the module docstring); ``unit="bytes"`` shows sizes
    and a transfer rate. The line is written only when the stage finishes (not when it fails)."""
    current = Stage(description, total, unit)
    if not _SHOWN.get():
        yield current
        return
    console = console if console is not None else stderr_console()
    depth = _DEPTH.get()
    depth_token = _DEPTH.set(depth + 1)
    live = _LIVE.get()
    own_display = None
    try:
        if console.is_terminal:
            if live is None:
                own_display = live = _new_display(console, unit)
                live.start()
            current._display = live
            current._task = _add_line(live, description, total=total)
        live_token = _LIVE.set(live)
        try:
            yield current
        finally:
            _LIVE.reset(live_token)
            if current._display is not None:
                current._display.remove_task(current._task)
            if own_display is not None:
                own_display.stop()
        if _LOGGED.get() and (depth == 0 or console.is_terminal):
            mark = "[green]✓[/green] " if console.is_terminal else ""
            from rich.markup import escape

            console.print(f"{mark}{escape(current.summary())}", highlight=False)
    finally:
        if own_display is not None and own_display.live.is_started:  # interrupted before the yield
            own_display.stop()
        _DEPTH.reset(depth_token)


def _add_line(display: Any, description: str, total: int | None) -> Any:
    """``display.add_task``, undone when an interrupt lands in the redraw inside it: the line is
    then on the display, but its id never reached the caller, which could not remove it."""
    before = set(display.task_ids)
    try:
        return display.add_task(description, total=total)
    except BaseException:
        for task in set(display.task_ids) - before:
            display.remove_task(task)
        raise


class StageSequence:
    """Stages one after another under rich's ``Progress`` names (``add_task``, ``advance``,
    ``update(task, advance=n)``; use it in a ``with`` block), for code that reports progress
    through a callback: each :meth:`add_task` ends the previous stage (its line is written) and
    starts the next. ``enabled=False`` counts without showing anything."""

    def __init__(self, console: Any | None = None, unit: str = "items", *, enabled: bool = True) -> None:
        self._console = console
        self._unit = unit
        self._enabled = enabled
        self._open: Any = None

    def add_task(self, description: str, total: int | None = None) -> Stage:
        self.close()
        if not self._enabled:
            return Stage(description, total, self._unit)
        self._open = stage(description, total=total, unit=self._unit, console=self._console)
        return self._open.__enter__()  # type: ignore[no-any-return]

    @staticmethod
    def advance(task: Stage, n: int = 1) -> None:
        task.advance(n)

    @staticmethod
    def update(task: Stage, *, advance: int = 0, completed: int | None = None,
               total: int | None = None) -> None:
        task.update(done=task.done + advance if completed is None else completed, total=total)

    def close(self, failed: BaseException | None = None) -> None:
        if self._open is not None:
            opened, self._open = self._open, None
            if failed is None:
                opened.__exit__(None, None, None)
            else:
                opened.__exit__(type(failed), failed, failed.__traceback__)

    def __enter__(self) -> "StageSequence":
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        self.close(exc)


def stage_sequence(*, unit: str = "items", console: Any | None = None,
                   enabled: bool = True) -> StageSequence:
    """A :class:`StageSequence` (``with stage_sequence(...) as progress:``)."""
    return StageSequence(console, unit, enabled=enabled)


def track(values: Iterable[T], description: str, *, total: int | None = None,
          unit: str = "items", console: Any | None = None) -> Iterator[T]:
    """Each of ``values``, advancing a stage once per value."""
    if total is None and hasattr(values, "__len__"):
        total = len(values)  # type: ignore[arg-type]
    with stage(description, total=total, unit=unit, console=console) as step:
        for value in values:
            yield value
            step.advance()



class LiveLine:
    """One status line of a long loop whose total is known but whose news is more than a count
    (``biovqa run``: items, rates, failures, ETA), drawn by the same console as the stages.

    On a terminal the line is redrawn in place at most every ``interval_s`` (inside the running
    stage's live display when there is one, else its own) and left behind once when it closes;
    elsewhere it is written as a new line at most every ``log_every_s``, so that a batch job's log
    stays short. ``enabled=False`` draws nothing. ``stream`` (a file) replaces the stderr console.
    """

    def __init__(self, *, stream: Any = None, enabled: bool = True, interval_s: float = 0.5,
                 log_every_s: float = 30.0) -> None:
        self.enabled = enabled
        self._console = stderr_console() if stream is None else _file_console(stream)
        self.is_terminal = bool(self._console.is_terminal)
        self.interval_s = interval_s if self.is_terminal else log_every_s
        self._last_draw: float | None = None
        self._display: Any = None
        self._own_display = False
        self._task: Any = None

    def due(self) -> bool:
        """Whether :meth:`draw` would be seen now (the first call always is)."""
        return self.enabled and (self._last_draw is None
                                 or time.monotonic() - self._last_draw >= self.interval_s)

    def draw(self, text: str) -> None:
        if not self.enabled:
            return
        from rich.markup import escape

        self._last_draw = time.monotonic()
        if not self.is_terminal:
            self._console.print(escape(text), highlight=False)
            return
        if self._display is None:
            self._display = _LIVE.get()
            if self._display is None:
                from rich.progress import Progress, SpinnerColumn, TextColumn

                self._display = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                         console=self._console, transient=True)
                self._display.start()
                self._own_display = True
        if self._task is None:
            self._task = _add_line(self._display, escape(text), total=None)
        else:
            self._display.update(self._task, description=escape(text))

    def close(self, final: str | None = None) -> None:
        """End the line; ``final`` (the last news) is written once, on a terminal or in a log."""
        if self._display is not None:
            if self._task is not None:
                self._display.remove_task(self._task)
                self._task = None
            if self._own_display:
                self._display.stop()
            self._display = None
        if self.enabled and final is not None:
            from rich.markup import escape

            self._console.print(escape(final), highlight=False)


def _file_console(stream: Any) -> Any:
    from rich.console import Console

    return Console(file=stream, soft_wrap=True)


__all__ = ["LiveLine", "Stage", "StageSequence", "show_progress", "stage", "stage_sequence", "stderr_console", "track",
           "without_stage_lines"]
