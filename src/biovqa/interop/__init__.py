"""Bio-VQA in the evaluation harnesses model builders already use, and their logs scored here.

* :mod:`biovqa.interop.inspect_tasks` — the components as inspect_ai tasks (``biovqa/c1`` …),
  found through inspect's entry-point group; each sample is the request biovqa's engine would
  send, and its scorer is the component's own per-item scorer.
* :mod:`biovqa.interop.lmms_eval` — ``biovqa export BENCH --format lmms-eval``: a task folder
  lmms-eval loads with ``--include_path``.
* :mod:`biovqa.interop.logs` — inspect ``.eval``/``.json`` logs (or a folder of them) and
  lmms-eval ``--log_samples`` JSONL read as predictions, so ``biovqa score -p LOG`` works.

Nothing here imports inspect_ai or lmms-eval until it is used (the ``[inspect]`` extra).
"""

from __future__ import annotations

from biovqa.interop.prompts import HarnessRequest, harness_requests

__all__ = ["HarnessRequest", "harness_requests"]
