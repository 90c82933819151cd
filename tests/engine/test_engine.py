from __future__ import annotations

import hashlib
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from fixtures.engine_helpers import make_bench, make_items, register_floor_component

from biovqa.errors import BiovqaError, MissingResourceError
from biovqa.records import PREDICTION_SCHEMA
from biovqa.engine.backends import create_backend, load_factory
from biovqa.engine.backends.base import Backend, Request
from biovqa.engine.runner import (
    LiveProgress,
    RunOptions,
    Selection,
    build_requests,
    image_keys,
    make_batches,
    order_image_first,
    parse_shard,
    request_key,
    resolve_preset,
    run_benchmark,
    select_items,
    shard_by_image,
    stratified_sample,
)
from biovqa.engine.presets import GEMMA_SYSTEM_MESSAGE, INTERNVL_ENGLISH_PREFIX


# -- selection -----------------------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [("0/1", (0, 1)), ("2/3", (2, 3)), ("0/8", (0, 8))])
def test_parse_shard(text: str, expected: tuple[int, int]) -> None:
    assert parse_shard(text) == expected


@pytest.mark.parametrize("text", ["3/3", "-1/2", "1/0", "1", "a/b", "1/2/3"])
def test_parse_shard_rejects_bad_values(text: str) -> None:
    with pytest.raises(BiovqaError) as info:
        parse_shard(text)
    assert info.value.field == "--shard"


def test_stratified_sample_is_per_task_proportional_and_order_free() -> None:
    items = make_items(n_images=30)
    sample = stratified_sample(items, 9, seed=42)
    per_task = Counter(sample.column("task").to_pylist())
    assert per_task == {"order": 9, "family": 9, "species": 9}
    # each task's 30 items spread evenly over 3 groups x 3 tiers (10 per group): 3 per group
    for task in ("order", "family", "species"):
        groups = Counter(g for g, t in zip(sample.column("group").to_pylist(),
                                           sample.column("task").to_pylist()) if t == task)
        assert groups == {"Birds": 3, "Insects": 3, "Mammals": 3}
    shuffled = items.take(pa.array(np.random.default_rng(0).permutation(items.num_rows)))
    again = stratified_sample(shuffled, 9, seed=42)
    assert sorted(again.column("item_id").to_pylist()) == sorted(
        sample.column("item_id").to_pylist())
    other_seed = stratified_sample(items, 9, seed=7)
    assert set(other_seed.column("item_id").to_pylist()) != set(sample.column("item_id").to_pylist())


def test_shards_partition_by_image() -> None:
    items = make_items(n_images=20)
    shards = [shard_by_image(items, i, 3) for i in range(3)]
    ids = [set(s.column("item_id").to_pylist()) for s in shards]
    assert sum(len(s) for s in ids) == items.num_rows
    assert set().union(*ids) == set(items.column("item_id").to_pylist())
    images = [set(s.column("image").to_pylist()) for s in shards]
    assert not (images[0] & images[1]) and not (images[1] & images[2])
    assert sorted(len(s) for s in images) == [6, 7, 7]


def test_selection_filters_then_limits_then_shards() -> None:
    items = make_items(n_images=30)
    limited = select_items(items, Selection(tasks=("order", "species"), limit=5))
    assert Counter(limited.column("task").to_pylist()) == {"order": 5, "species": 5}
    parts = [select_items(items, Selection(tasks=("order", "species"), limit=5, shard=(i, 2)))
             for i in range(2)]
    assert sorted(i for p in parts for i in p.column("item_id").to_pylist()) == sorted(
        limited.column("item_id").to_pylist())
    assert select_items(items, Selection(components=("C1",))).num_rows == items.num_rows
    assert select_items(items, Selection(components=("c2",))).num_rows == 0


def test_image_key_prefers_the_content_hash(tmp_path: Path) -> None:
    bench = make_bench(tmp_path / "b", n_images=2)
    keys = image_keys(bench.items).to_pylist()
    assert keys == bench.items.column("image_sha256").to_pylist()
    no_hash = make_items(n_images=2)
    assert image_keys(no_hash).to_pylist() == no_hash.column("image").to_pylist()


# -- requests ------------------------------------------------------------------------------------
def test_requests_are_image_first_and_keyed_stably(tmp_path: Path) -> None:
    bench = make_bench(tmp_path / "b", n_images=6)
    preset, wrap = resolve_preset("some/unknown-model")
    plan = build_requests(bench, bench.items, preset, wrap, "m", "r1")
    images = [r.image_path for r in plan.requests]
    # every image's questions are consecutive
    seen: list[Path] = []
    for path in images:
        if not seen or seen[-1] != path:
            assert path not in seen
            seen.append(path)
    assert all(p is not None and p.exists() for p in images)
    assert len({r.key for r in plan.requests}) == len(plan)
    again = build_requests(bench, bench.items.take(pa.array(list(range(bench.items.num_rows))[::-1])),
                           preset, wrap, "m", "r1")
    assert [r.key for r in again.requests] == [r.key for r in plan.requests]
    first = plan.requests[0]
    row = {r["item_id"]: r for r in bench.items.to_pylist()}[first.item_id]
    assert first.prompt == f"{row['question']}\n{row['instruction']}"
    assert first.system is None and first.max_new_tokens == 15
    assert order_image_first(bench.items).column("item_id").to_pylist() == [
        r.item_id for r in plan.requests]


@pytest.mark.parametrize("change", ["model", "revision", "max_new_tokens"])
def test_keys_change_with_model_revision_and_decoding(tmp_path: Path, change: str) -> None:
    bench = make_bench(tmp_path / "b", n_images=2)
    preset, wrap = resolve_preset("some/unknown-model")
    base = build_requests(bench, bench.items, preset, wrap, "m", "r1")
    args = {"model": "m", "revision": "r1", "max_new_tokens": None}
    args[change] = {"model": "m2", "revision": "r2", "max_new_tokens": 16}[change]
    other = build_requests(bench, bench.items, preset, wrap, args["model"], args["revision"],
                           max_new_tokens=args["max_new_tokens"])
    assert not {r.key for r in base.requests} & {r.key for r in other.requests}


@pytest.mark.parametrize("model, component, system, prefix", [
    ("gemma-3-12b", "c1", GEMMA_SYSTEM_MESSAGE, None),
    ("google/gemma-3-12b-it", "c2", GEMMA_SYSTEM_MESSAGE, None),
    ("gemma-3-12b", "c4", None, None),
    ("OpenGVLab/InternVL3-8B-Instruct", "c1", None, INTERNVL_ENGLISH_PREFIX),
    ("OpenGVLab/InternVL3-8B-Instruct", "c4", None, INTERNVL_ENGLISH_PREFIX),
    ("Qwen/Qwen2.5-VL-7B-Instruct", "c1", None, None),
])
def test_requests_carry_the_model_wrappers(tmp_path: Path, model: str, component: str,
                                           system: str | None, prefix: str | None) -> None:
    bench = make_bench(tmp_path / "b", n_images=2, component=component)
    preset, wrap = resolve_preset(model)
    plan = build_requests(bench, bench.items, preset, wrap, model, "r")
    for request in plan.requests:
        assert request.system == system
        assert request.prompt.startswith(f"{prefix} What is") if prefix else \
            request.prompt.startswith("What is")
        assert request.max_new_tokens == {"c1": 15, "c2": 48, "c4": 8}[component]


# -- batching ------------------------------------------------------------------------------------
def _check_batches(keys: list[str], tokens: np.ndarray, batches: list[tuple[int, int]],
                   budget: int, max_items: int) -> None:
    assert [a for a, _ in batches] == [0] + [b for _, b in batches[:-1]]
    assert batches[-1][1] == len(keys)
    for start, end in batches:
        assert end > start
        assert end - start <= max_items
        assert tokens[start:end].sum() <= budget or end - start == 1
    # an image is split only when it cannot fit one batch on its own
    for start, end in batches[1:]:
        if keys[start] == keys[start - 1]:
            group = [i for i, k in enumerate(keys) if k == keys[start]]
            assert tokens[group].sum() > budget or len(group) > max_items


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 400)), min_size=1, max_size=40),
       st.integers(50, 2000), st.integers(1, 12))
def test_batches_respect_budget_and_keep_images_together(groups: list[tuple[int, int]],
                                                         budget: int, max_items: int) -> None:
    keys = [f"img{g}" for g, (count, _) in enumerate(groups) for _ in range(count)]
    tokens = np.array([t for count, t in groups for _ in range(count)], dtype=np.int64)
    batches = make_batches(keys, tokens, batch_tokens=budget, max_batch_items=max_items)
    _check_batches(keys, tokens, batches, budget, max_items)


def test_batches_example() -> None:
    keys = ["a", "a", "b", "b", "b", "c"]
    tokens = np.array([10, 10, 10, 10, 10, 50])
    assert make_batches(keys, tokens, batch_tokens=50, max_batch_items=10) == [(0, 5), (5, 6)]
    assert make_batches(keys, tokens, batch_tokens=40, max_batch_items=10) == [(0, 2), (2, 5),
                                                                               (5, 6)]
    # image b is split (3 > 2 requests); its tail shares a batch with the next image
    assert make_batches(keys, tokens, batch_tokens=1000, max_batch_items=2) == [(0, 2), (2, 4),
                                                                                (4, 6)]
    assert make_batches([], np.array([], dtype=np.int64)) == []


# -- progress ------------------------------------------------------------------------------------
def test_live_progress_reports_rates_failures_and_eta() -> None:
    import io

    stream = io.StringIO()
    progress = LiveProgress(4, stream=stream, interval_s=0, log_every_s=0, skipped=2,
                            parse_ok=lambda request, reply: reply.text == "yes")
    from biovqa.engine.backends.base import Reply

    requests = [Request(key=str(i), item_id=str(i), prompt="q") for i in range(3)]
    progress.advance(requests, [Reply("0", "yes", prompt_tokens=5, completion_tokens=1),
                                Reply("1", "no", prompt_tokens=5, completion_tokens=1),
                                Reply("2", None, status="failed", error="x")])
    snap = progress.snapshot()
    assert (snap["done"], snap["total"], snap["failed"], snap["skipped"]) == (3, 4, 1, 2)
    assert snap["parse_failure_rate"] == 0.5
    assert snap["tokens_per_s"] > 0 and snap["eta_s"] is not None
    text = stream.getvalue()
    assert "3/4 items (2 resumed)" in text and "1 failed" in text and "parse failures 50.0%" in text


# -- backends registry ---------------------------------------------------------------------------
def test_registry_imports_lazily_and_reports_unknown_names() -> None:
    with pytest.raises(BiovqaError, match="unknown backend"):
        load_factory("no-such-backend")
    echo = create_backend("echo", "echo", delay_s=0)
    assert isinstance(echo, Backend)
    with pytest.raises(BiovqaError, match="does not take"):
        create_backend("echo", "echo", temperature=1.0)
    via_target = create_backend("biovqa.engine.backends.baseline:create_echo", "echo")
    assert via_target.name == "echo"


# -- whole runs ----------------------------------------------------------------------------------
def test_run_writes_sorted_predictions_and_resumes(tmp_path: Path) -> None:
    bench = make_bench(tmp_path / "b", n_images=8)
    out = tmp_path / "run"
    result = run_benchmark(bench.root, out, RunOptions(backend="echo", progress=False))
    table = pq.read_table(result.predictions_path)
    assert table.schema == PREDICTION_SCHEMA
    ids = table.column("item_id").to_pylist()
    assert ids == sorted(ids) == sorted(bench.items.column("item_id").to_pylist())
    assert set(table.column("status").to_pylist()) == {"ok"}
    assert set(table.column("model").to_pylist()) == {"echo"}
    # the echo backend answers with a hash of exactly what the model sees
    row = {r["item_id"]: r for r in bench.items.to_pylist()}[ids[0]]
    seen = "\x1f".join(("", f"{row['question']}\n{row['instruction']}", row["image"]))
    assert table.column("response")[0].as_py() == "echo-" + hashlib.sha256(
        seen.encode()).hexdigest()[:16]
    assert (result.selected, result.resumed, result.asked) == (24, 0, 24)
    before = result.predictions_path.read_bytes()
    again = run_benchmark(bench.root, out, RunOptions(backend="echo", progress=False))
    assert (again.resumed, again.asked) == (24, 0)
    assert again.predictions_path.read_bytes() == before
    assert [s["asked"] for s in again.card["sessions"]] == [24, 0]


def test_failures_are_recorded_and_retried_on_request(tmp_path: Path) -> None:
    bench = make_bench(tmp_path / "b", n_images=10)
    out = tmp_path / "run"
    first = run_benchmark(bench.root, out, RunOptions(
        backend="echo", backend_options={"fail_every": 3}, progress=False))
    table = pq.read_table(first.predictions_path)
    failed = [r for r in table.to_pylist() if r["status"] == "failed"]
    assert 0 < len(failed) == first.failed < table.num_rows
    assert all(r["response"] is None and r["error"] for r in failed)
    kept = run_benchmark(bench.root, out, RunOptions(backend="echo", progress=False))
    assert kept.asked == 0 and kept.failed == first.failed
    retried = run_benchmark(bench.root, out, RunOptions(backend="echo", retry_failed=True,
                                                        progress=False))
    assert retried.asked == first.failed and retried.failed == 0
    final = pq.read_table(retried.predictions_path)
    assert final.num_rows == table.num_rows  # nothing recorded twice
    assert set(final.column("status").to_pylist()) == {"ok"}


def test_limit_and_shard_runs_only_their_items(tmp_path: Path) -> None:
    bench = make_bench(tmp_path / "b", n_images=12)
    result = run_benchmark(bench.root, tmp_path / "run", RunOptions(
        backend="echo", selection=Selection(tasks=("order",), limit=4, shard=(1, 2)),
        progress=False))
    table = pq.read_table(result.predictions_path)
    expected = select_items(bench.items, Selection(tasks=("order",), limit=4, shard=(1, 2)))
    assert table.column("item_id").to_pylist() == sorted(expected.column("item_id").to_pylist())
    assert result.card["selection"]["shard"] == "1/2"


def test_empty_selection_is_an_error(tmp_path: Path) -> None:
    bench = make_bench(tmp_path / "b", n_images=2)
    with pytest.raises(BiovqaError, match="no items"):
        run_benchmark(bench.root, tmp_path / "run", RunOptions(
            backend="echo", selection=Selection(tasks=("nothing",)), progress=False))


def test_run_card_records_provenance(tmp_path: Path) -> None:
    bench = make_bench(tmp_path / "b", n_images=3)
    result = run_benchmark(bench.root, tmp_path / "run", RunOptions(
        backend="echo", backend_options={"revision": "abc123"}, progress=False))
    card = result.card
    assert card["status"] == "complete"
    assert card["model"] == "echo" and card["revision"] == "abc123"
    assert card["benchmark"]["manifest_sha256"] == bench.manifest_sha256
    assert card["decoding"] == {"greedy": True, "max_new_tokens": {"c1": 15}}
    assert len(card["prompt_template_hash"]) == 64
    assert card["environment"]["biovqa"] and card["started"] and card["ended"]
    assert card["items"]["ok"] == 9 and card["items_per_s"] > 0


def test_baseline_backend_answers_with_the_component_floor(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    register_floor_component(monkeypatch, tmp_path)
    bench = make_bench(tmp_path / "b", n_images=10)
    result = run_benchmark(bench.root, tmp_path / "run", RunOptions(backend="baseline",
                                                                    progress=False))
    table = pq.read_table(result.predictions_path)
    # the floor is the most frequent answer per task over the WHOLE benchmark
    expected = {"order": "order-0", "family": "family-0", "species": "species-0"}
    tasks = {r["item_id"]: r["task"] for r in bench.items.to_pylist()}
    assert all(r["response"] == expected[tasks[r["item_id"]]] for r in table.to_pylist())
    assert set(table.column("model").to_pylist()) == {"baseline"}
    # a shard gets the same floor answers as the full run
    shard = run_benchmark(bench.root, tmp_path / "shard", RunOptions(
        backend="baseline", selection=Selection(shard=(0, 3)), progress=False))
    part = pq.read_table(shard.predictions_path)
    full = {r["item_id"]: r["response"] for r in table.to_pylist()}
    assert all(full[r["item_id"]] == r["response"] for r in part.to_pylist())


def test_baseline_without_floor_rules_says_so(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    components = importlib.import_module("biovqa.components.registry")

    components.list_components()
    monkeypatch.setitem(components._REGISTRY, "c1", components.Component(
        name="c1", title="t", tasks=("order",), builder="x:y", build_function="x:y",
        floor="no_such_module_xyz:floor",
        scorer="x:y", reporter="x:y"))
    bench = make_bench(tmp_path / "b", n_images=2)
    with pytest.raises(MissingResourceError, match="floor rules"):
        run_benchmark(bench.root, tmp_path / "run", RunOptions(backend="baseline",
                                                               progress=False))


BROKEN_BACKEND = '''
from biovqa.engine.backends.base import Reply


class Broken:
    name = "broken"

    def generate(self, requests):
        return [Reply(key=r.key, text="x") for r in requests][:-1]

    def describe(self):
        return {"revision": "0"}

    def close(self):
        pass


def create(model, **options):
    return Broken()
'''


def test_a_backend_breaking_its_contract_stops_the_run(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "engine_test_broken_backend.py").write_text(BROKEN_BACKEND, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    bench = make_bench(tmp_path / "b", n_images=2)
    with pytest.raises(BiovqaError, match="broke its contract"):
        run_benchmark(bench.root, tmp_path / "run", RunOptions(
            model="m", backend="engine_test_broken_backend:create", progress=False))


INTERRUPTING_BACKEND = '''
from biovqa.engine.backends.base import Reply


class Interrupting:
    name = "interrupting"
    calls = 0

    def generate(self, requests):
        Interrupting.calls += 1
        if Interrupting.calls == 3:
            raise KeyboardInterrupt
        return [Reply(key=r.key, text="x") for r in requests]

    def describe(self):
        return {"revision": "0"}

    def close(self):
        pass


def create(model, **options):
    return Interrupting()
'''


def test_an_interrupted_run_keeps_its_replies_and_says_so(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    (tmp_path / "engine_test_interrupting.py").write_text(INTERRUPTING_BACKEND, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    bench = make_bench(tmp_path / "b", n_images=6)
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(bench.root, out, RunOptions(
            model="m", backend="engine_test_interrupting:create", max_batch_items=3,
            flush_rows=1000, flush_seconds=1000, progress=False))
    card = json.loads((out / "run.json").read_text())
    assert card["status"] == "interrupted"
    resumed = run_benchmark(bench.root, out, RunOptions(
        model="m", backend="engine_test_interrupting:create", max_batch_items=3, progress=False))
    assert resumed.resumed == 6  # the two batches answered before Ctrl-C were kept
    assert resumed.card["status"] == "complete"
    assert [s["status"] for s in resumed.card["sessions"]] == ["interrupted", "complete"]


def test_a_folder_of_another_model_is_refused_before_loading_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from biovqa.engine import executors

    bench = make_bench(tmp_path / "b", n_images=2)
    out = tmp_path / "run"
    run_benchmark(bench.root, out, RunOptions(backend="echo", progress=False))
    started: list[str] = []
    monkeypatch.setattr(executors.InProcessExecutor, "start",
                        lambda self: started.append(self.backend_name))
    with pytest.raises(BiovqaError, match="already holds predictions") as info:
        run_benchmark(bench.root, out, RunOptions(model="gemma-3-12b", backend="echo",
                                                  progress=False))
    assert "model (model)" in str(info.value) and started == []


@pytest.mark.parametrize("model", ["some/unknown-model", "gemma-3-12b",
                                   "OpenGVLab/InternVL3-8B-Instruct"])
@pytest.mark.parametrize("component", ["c1", "c4"])
def test_vectorised_keys_equal_request_key(tmp_path: Path, model: str, component: str) -> None:
    bench = make_bench(tmp_path / "b", n_images=3, component=component)
    preset, wrap = resolve_preset(model)
    plan = build_requests(bench, bench.items, preset, wrap, "m", "r")
    rows = {r["item_id"]: r for r in bench.items.to_pylist()}
    for request, image_key in zip(plan.requests, plan.image_keys):
        row = rows[request.item_id]
        system, user_text = wrap(preset, component, f"{row['question']}\n{row['instruction']}")
        assert (request.system, request.prompt) == (system, user_text)
        assert request.key == request_key(row["item_id"], row["question"], row["instruction"],
                                          row["options"], image_key, system, user_text,
                                          request.max_new_tokens, "m", "r")


def test_a_wrapper_that_is_not_a_fixed_prefix_still_works(tmp_path: Path) -> None:
    bench = make_bench(tmp_path / "b", n_images=2)
    preset, _ = resolve_preset("some/unknown-model")

    def shouting(preset: object, component: str, prompt: str) -> tuple[str | None, str]:
        return "sys", prompt.upper()

    plan = build_requests(bench, bench.items, preset, shouting, "m", "r")
    assert all(r.prompt == r.prompt.upper() and r.system == "sys" for r in plan.requests)


def test_mixed_components_get_their_own_wrappers(tmp_path: Path) -> None:
    from biovqa.bench import write_bench

    items = pa.concat_tables([make_items(2, component="c1"), make_items(2, component="c4")])
    bench = write_bench(tmp_path / "mixed", items, component="c1", generator="t", seed=1,
                        sources={}, parameters={})
    preset, wrap = resolve_preset("gemma-3-12b")
    plan = build_requests(bench, bench.items, preset, wrap, "m", "r")
    by_component = {r.item_id.split("-")[0]: r for r in plan.requests}
    assert by_component["c1"].system == GEMMA_SYSTEM_MESSAGE
    assert by_component["c4"].system is None
    assert (by_component["c1"].max_new_tokens, by_component["c4"].max_new_tokens) == (15, 8)
