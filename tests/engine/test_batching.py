"""Batch bounds: the run's own settings win, then the backend's declared hints, then the engine's
defaults; the model-free backends declare that they need no bounds (the engine keeps no table of
backend names)."""

from __future__ import annotations

from biovqa.engine.backends import create_backend
from biovqa.engine.batching import DEFAULT_BATCH_TOKENS, DEFAULT_MAX_BATCH_ITEMS, batch_bounds
from biovqa.engine.executors import InProcessExecutor


def test_the_run_setting_wins_then_the_backends_hints_then_the_defaults() -> None:
    hints = {"batch_tokens": 10_000, "max_batch_items": 3}
    assert batch_bounds({}) == (DEFAULT_BATCH_TOKENS, DEFAULT_MAX_BATCH_ITEMS) == (32_768, 64)
    assert batch_bounds(hints) == (10_000, 3)
    assert batch_bounds(hints, batch_tokens=500) == (500, 3)
    assert batch_bounds(hints, max_batch_items=7) == (10_000, 7)


def test_the_model_free_backends_declare_their_bounds() -> None:
    echo = create_backend("echo", "echo")
    assert (echo.batch_tokens, echo.max_batch_items) == (1 << 40, 4096)
    executor = InProcessExecutor("echo", "echo", {}, bench=None)
    executor.start()  # what the run loop asks
    assert batch_bounds(executor.batch_hints()) == (1 << 40, 4096)
    executor.close()
