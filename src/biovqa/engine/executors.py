"""Where batches run: in this process, or on Ray actors (one model replica per GPU).

An executor creates the backend(s), reports the backend's facts for the run card and its batch-size
hints, and hands each batch's replies to a callback *in the calling process* — so only one process
ever writes the prediction store, and the predictions file (sorted by item id) is the same whatever
order replies come back in.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from biovqa.errors import BiovqaError
from biovqa.engine.backends import create_backend
from biovqa.engine.backends.base import Backend, Reply, Request

if TYPE_CHECKING:
    from biovqa.bench import Bench
    from biovqa.engine.runner import RunOptions

OnBatch = Callable[[int, list[Reply]], None]


class Executor(Protocol):
    name: str

    def start(self) -> None: ...

    def describe(self) -> dict[str, Any]: ...

    def batch_hints(self) -> dict[str, int]: ...

    def run(self, batches: Sequence[Sequence[Request]], on_batch: OnBatch) -> None: ...

    def close(self) -> None: ...


def _hints(backend: Any) -> dict[str, int]:
    hints = {}
    for name in ("batch_tokens", "max_batch_items"):
        value = getattr(backend, name, None)
        if value:
            hints[name] = int(value)
    return hints


def physical_cores() -> int:
    """Physical CPU cores this process may use (``/proc/cpuinfo`` core ids within the affinity
    mask; the logical count where that is unknown)."""
    import os

    try:
        allowed = set(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS/Windows
        return max(1, os.cpu_count() or 1)
    cores: set[tuple[str, str]] = set()
    try:
        processor = physical = core = None
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in [*handle, ""]:
                name, _, value = line.partition(":")
                name, value = name.strip(), value.strip()
                if name == "processor":
                    processor = int(value)
                elif name == "physical id":
                    physical = value
                elif name == "core id":
                    core = value
                elif not name and processor is not None:
                    if processor in allowed and core is not None:
                        cores.add((physical or "0", core))
                    processor = physical = core = None
    except (OSError, ValueError):
        cores = set()
    return max(1, min(len(cores) or len(allowed), len(allowed)))


def default_threads(workers: int = 1) -> int:
    """Intra-op threads per worker: the physical cores shared evenly among the workers, and no
    more than the cores left idle by the machine's current load (1-minute load average, rounded:
    a load of 0.45 on 2 cores leaves 2, a load of 1.6 leaves 0 → 1), at least one.
    Oversubscribed torch thread pools are many times slower than one thread
    (benchmarks/engine_threads.py), but truncating a near-idle machine's leftover (2 − 0.45 → 1)
    made runs about 20% slower."""
    import os

    cores = physical_cores()
    share = max(1, cores // max(1, workers))
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - Windows
        busy = 0.0
    return max(1, min(share, round(cores - busy)))


def apply_threads(threads: int | None, backend: str) -> int | None:
    """Set torch's intra-op threads for a torch backend (``threads`` or the default); returns
    the number set, None where the backend does not run torch here."""
    if backend not in ("transformers", "vllm"):
        return None
    import torch

    count = int(threads) if threads else default_threads()
    if count < 1:
        raise BiovqaError(f"threads must be at least 1, got {threads}", field="--threads")
    torch.set_num_threads(count)
    return count


class InProcessExecutor:
    """One backend in this process; batches run one after another."""

    name = "inprocess"

    def __init__(self, backend: str, model: str, options: dict[str, Any], bench: Any,
                 threads: int | None = None) -> None:
        self.backend_name = backend
        self.model = model
        self.options = options
        self.bench = bench
        self.threads = threads
        self.threads_set: int | None = None
        self.backend: Backend | None = None

    def start(self) -> None:
        self.threads_set = apply_threads(self.threads, self.backend_name)
        self.backend = create_backend(self.backend_name, self.model, bench=self.bench,
                                      **self.options)

    def describe(self) -> dict[str, Any]:
        assert self.backend is not None
        facts = dict(self.backend.describe())
        if self.threads_set is not None:
            facts["threads"] = self.threads_set
        return facts

    def batch_hints(self) -> dict[str, int]:
        return _hints(self.backend)

    def run(self, batches: Sequence[Sequence[Request]], on_batch: OnBatch) -> None:
        assert self.backend is not None
        for index, batch in enumerate(batches):
            on_batch(index, self.backend.generate(batch))

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()
            self.backend = None


class BackendHost:
    """The body of a Ray actor: one backend replica (Ray places it on its own GPU)."""

    def __init__(self, backend: str, model: str, options: dict[str, Any],
                 bench_root: str | None, threads: int | None = None) -> None:
        self.threads_set = apply_threads(threads, backend)
        bench = None
        if bench_root is not None:
            from biovqa.bench import open_bench

            bench = open_bench(bench_root)
        self.backend = create_backend(backend, model, bench=bench, **options)

    def describe(self) -> dict[str, Any]:
        facts = dict(self.backend.describe())
        if self.threads_set is not None:
            facts["threads"] = self.threads_set
        return facts

    def batch_hints(self) -> dict[str, int]:
        return _hints(self.backend)

    def generate(self, requests: list[Request]) -> list[Reply]:
        return self.backend.generate(requests)

    def close(self) -> None:
        self.backend.close()


class RayExecutor:
    """Batches dealt to Ray actors, each holding one backend replica.

    ``replicas`` defaults to the cluster's GPU count (1 on a CPU-only cluster); each actor asks Ray
    for ``gpus_per_replica`` GPUs (default 1 when the cluster has GPUs, else 0). At most
    ``in_flight`` batches wait on each actor, so a slow replica never starves the others; replies
    go back to the driver, which alone writes the store.
    """

    name = "ray"

    def __init__(self, backend: str, model: str, options: dict[str, Any], bench_root: Path | None,
                 *, replicas: int | None = None, gpus_per_replica: float | None = None,
                 address: str | None = None, in_flight: int = 2,
                 threads: int | None = None) -> None:
        self.threads = threads
        self.backend_name = backend
        self.model = model
        self.options = options
        self.bench_root = None if bench_root is None else str(bench_root)
        self.replicas = replicas
        self.gpus_per_replica = gpus_per_replica
        self.address = address
        self.in_flight = max(1, in_flight)
        self.actors: list[Any] = []
        self._ray: Any = None

    def start(self) -> None:
        try:
            import ray
        except ImportError:
            raise BiovqaError("the Ray executor needs ray", field="--executor",
                              hint="pip install 'biovqa[ray]'") from None
        self._ray = ray
        if not ray.is_initialized():
            ray.init(address=self.address, log_to_driver=False, include_dashboard=False)
        gpus_available = float(ray.cluster_resources().get("GPU", 0))
        gpus = self.gpus_per_replica
        if gpus is None:
            gpus = 1.0 if gpus_available >= 1 else 0.0
        replicas = self.replicas or (int(gpus_available // gpus) if gpus else 1) or 1
        if gpus and replicas * gpus > gpus_available:
            raise BiovqaError(
                f"{replicas} replicas × {gpus} GPU need {replicas * gpus:g} GPUs, the Ray cluster "
                f"has {gpus_available:g}", field="--replicas",
                hint="lower --replicas or --gpus-per-replica")
        actor_class = ray.remote(num_gpus=gpus, num_cpus=0 if gpus else 1)(BackendHost)
        threads = self.threads or default_threads(replicas)
        self.actors = [actor_class.remote(self.backend_name, self.model, self.options,
                                          self.bench_root, threads) for _ in range(replicas)]

    def describe(self) -> dict[str, Any]:
        facts = self._ray.get(self.actors[0].describe.remote())
        facts["ray_replicas"] = len(self.actors)
        return facts

    def batch_hints(self) -> dict[str, int]:
        return self._ray.get(self.actors[0].batch_hints.remote())

    def run(self, batches: Sequence[Sequence[Request]], on_batch: OnBatch) -> None:
        ray = self._ray
        pending: dict[Any, tuple[int, int]] = {}  # ref → (batch index, actor index)
        load = [0] * len(self.actors)
        next_batch = 0
        while next_batch < len(batches) or pending:
            while next_batch < len(batches) and min(load) < self.in_flight:
                actor = load.index(min(load))
                ref = self.actors[actor].generate.remote(list(batches[next_batch]))
                pending[ref] = (next_batch, actor)
                load[actor] += 1
                next_batch += 1
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                index, actor = pending.pop(ref)
                load[actor] -= 1
                on_batch(index, ray.get(ref))

    def close(self) -> None:
        if self._ray is None:
            return
        for actor in self.actors:
            with contextlib.suppress(self._ray.exceptions.RayError):
                self._ray.get(actor.close.remote())  # a dead actor has nothing left to release
            self._ray.kill(actor)
        self.actors = []


def make_executor(options: RunOptions, bench: Bench) -> Executor:
    """The executor ``options.executor`` names (``inprocess`` or ``ray``)."""
    assert options.model is not None
    if options.executor == "inprocess":
        return InProcessExecutor(options.backend, options.model, dict(options.backend_options),
                                 bench, threads=options.threads)
    if options.executor == "ray":
        return RayExecutor(options.backend, options.model, dict(options.backend_options),
                           bench.root, replicas=options.replicas,
                           gpus_per_replica=options.gpus_per_replica, address=options.ray_address,
                           threads=options.threads)
    raise BiovqaError(f"unknown executor {options.executor!r}", field="--executor",
                      hint="use inprocess or ray")
