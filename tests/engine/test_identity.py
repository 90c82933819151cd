"""Run identity: a run folder refuses to resume when anything that could change the answers did.

Each case runs the real transformers backend on a tiny random LLaVA (a private copy of the
fixture folder, so it can be changed in place), then changes one thing and checks that the same
``--out`` is refused with a message naming the difference, while an unchanged rerun resumes all.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fixtures.engine_helpers import make_bench

from biovqa.engine.identity import identity_differences, weights_fingerprint
from biovqa.engine.runner import RunOptions, Selection, run_benchmark
from biovqa.errors import BiovqaError

pytestmark = [pytest.mark.models]


@pytest.fixture()
def llava_copy(tmp_path: Path, tiny_model_dir: Callable[[str], Path]) -> Path:
    return Path(shutil.copytree(tiny_model_dir("llava"), tmp_path / "llava-copy"))


def _run(bench: Path, out: Path, model: Path, **backend_options: object):
    options = RunOptions(model=str(model), backend="transformers", max_new_tokens=2,
                         backend_options={"device": "cpu", **backend_options},
                         selection=Selection(limit=1), progress=False, threads=1)
    return run_benchmark(bench, out, options)


def _refused(bench: Path, out: Path, model: Path, **backend_options: object) -> str:
    with pytest.raises(BiovqaError) as caught:
        _run(bench, out, model, **backend_options)
    return caught.value.render()


def test_unchanged_rerun_resumes_and_dtype_change_is_refused(tmp_path: Path,
                                                             llava_copy: Path) -> None:
    bench = make_bench(tmp_path / "b", n_images=2).root
    out = tmp_path / "run"
    first = _run(bench, out, llava_copy, dtype="float32")
    assert first.asked == first.selected > 0
    card = json.loads((out / "run.json").read_text())
    assert card["identity"]["dtype"] == "float32" and card["identity"]["weights"]["kind"] == "local"
    assert card["threads"] == 1  # --threads reached torch and the card
    assert card["preset"]["matched_by"] == "default"  # the tiny model is no paper model
    assert card["tokens"]["planned"] > 0 and card["tokens"]["actual"] > 0
    again = _run(bench, out, llava_copy, dtype="float32")
    assert again.asked == 0 and again.resumed == first.selected
    message = _refused(bench, out, llava_copy, dtype="bfloat16")
    assert "dtype: 'float32' → 'bfloat16'" in message
    card = json.loads((out / "run.json").read_text())
    assert card["dtype"] == "float32"  # the refused run did not rewrite the card


def test_processor_setting_change_is_refused(tmp_path: Path, llava_copy: Path) -> None:
    bench = make_bench(tmp_path / "b", n_images=2).root
    out = tmp_path / "run"
    _run(bench, out, llava_copy)
    config_path = llava_copy / "processor_config.json"  # transformers 5 nests the image processor
    config = json.loads(config_path.read_text())
    config["image_processor"]["image_mean"] = [0.25, 0.25, 0.25]
    config_path.write_text(json.dumps(config))
    assert "processor_settings_sha256" in _refused(bench, out, llava_copy)


def test_weights_replaced_in_place_are_refused(tmp_path: Path, llava_copy: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    bench = make_bench(tmp_path / "b", n_images=2).root
    out = tmp_path / "run"
    _run(bench, out, llava_copy)
    weights = llava_copy / "model.safetensors"
    before = weights_fingerprint(str(llava_copy))
    size = weights.stat().st_size
    generator = torch.Generator().manual_seed(7)
    tensors = {name: torch.randn(t.shape, generator=generator).to(t.dtype)
               for name, t in load_file(weights).items()}
    save_file(tensors, weights, metadata={"format": "pt"})
    assert weights.stat().st_size == size  # same shapes: only the values changed
    after = weights_fingerprint(str(llava_copy))
    assert before != after
    message = _refused(bench, out, llava_copy)
    assert "weights.sha256" in message


def test_chat_template_change_is_refused(tmp_path: Path, llava_copy: Path) -> None:
    bench = make_bench(tmp_path / "b", n_images=2).root
    out = tmp_path / "run"
    _run(bench, out, llava_copy)
    templates = [p for p in llava_copy.iterdir() if "chat_template" in p.name]
    assert templates, "the tiny LLaVA saves its chat template beside the weights"
    for path in templates:
        path.write_text(path.read_text().replace("ASSISTANT:", "ANSWER:"))
    assert "chat_template_sha256" in _refused(bench, out, llava_copy)


def test_llava_and_gemma3_chat_templates_differ(tiny_model_dir: Callable[[str], Path]) -> None:
    from biovqa.engine.backends.transformers import create

    hashes = []
    for kind in ("llava", "gemma3"):
        backend = create(str(tiny_model_dir(kind)), device="cpu")
        hashes.append(backend.describe()["chat_template_sha256"])
        backend.close()
    assert None not in hashes and hashes[0] != hashes[1]


def test_fingerprint_of_an_hf_cache_snapshot_is_its_commit(tmp_path: Path) -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    snapshot = tmp_path / "hub" / "models--google--gemma-3-12b-it" / "snapshots" / commit
    blobs = tmp_path / "hub" / "models--google--gemma-3-12b-it" / "blobs"
    snapshot.mkdir(parents=True)
    blobs.mkdir()
    (blobs / "abc123").write_text("{}")
    (snapshot / "config.json").symlink_to(blobs / "abc123")
    found = weights_fingerprint(str(snapshot))
    assert found is not None
    assert (found["kind"], found["repo"], found["commit"]) == (
        "hf-snapshot", "google/gemma-3-12b-it", commit)


def test_identity_differences_name_the_nested_field() -> None:
    ours = {"dtype": "float32", "weights": {"sha256": "a", "files": 3}}
    theirs = {"dtype": "float32", "weights": {"sha256": "b", "files": 3}}
    assert identity_differences(ours, theirs) == ["weights.sha256: 'a' → 'b'"]
