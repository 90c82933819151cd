"""``hf://owner/name`` through the real ``huggingface_hub``: a released folder placed in a Hugging
Face cache laid out by the library's own conventions (``datasets--owner--name/{blobs,snapshots,
refs,trees}``) opens offline and is verified; an empty or incomplete cache is one clear error.
No network: ``HF_HUB_OFFLINE`` is set throughout."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from biovqa.bench import open_bench
from biovqa.errors import BiovqaError, MissingResourceError

pytest.importorskip("datasets")
huggingface_hub = pytest.importorskip("huggingface_hub")

REPO = "test-owner/Bio-VQA-mini"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def populate_hub_cache(hub_cache: Path, repo_id: str, folder: Path, commit: str = COMMIT) -> Path:
    """Put ``folder`` into ``hub_cache`` as ``snapshot_download`` leaves a dataset it downloaded:
    content-addressed blobs (git sha1, or sha256 for LFS files), a snapshot of relative symlinks,
    ``refs/main`` naming the commit, and the commit's tree listing. Returns the snapshot folder."""
    from huggingface_hub.file_download import repo_folder_name

    storage = hub_cache / repo_folder_name(repo_id=repo_id, repo_type="dataset")
    snapshot = storage / "snapshots" / commit
    entries = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = path.relative_to(folder).as_posix()
        payload = path.read_bytes()
        git_sha1 = hashlib.sha1(b"blob %d\0" % len(payload) + payload).hexdigest()
        sha256 = hashlib.sha256(payload).hexdigest()
        lfs = relative.endswith(".parquet")
        blob = storage / "blobs" / (sha256 if lfs else git_sha1)
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(payload)
        link = snapshot / relative
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
        entries[relative] = {"size": len(payload), "blob_id": git_sha1,
                             **({"lfs_sha256": sha256, "lfs_size": len(payload)} if lfs else {})}
    (storage / "refs").mkdir(parents=True, exist_ok=True)
    (storage / "refs" / "main").write_text(commit)
    try:  # the tree listing lets the library tell a complete snapshot from an interrupted one
        from huggingface_hub._tree_cache import TreeCacheEntry, write_tree_cache
    except ImportError:  # an older huggingface_hub keeps no tree listing
        pass
    else:
        write_tree_cache(str(storage), commit, {k: TreeCacheEntry.from_json(v) for k, v in entries.items()})
    return snapshot


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(exported folder with one component, the built C2 bench, its source photos)."""
    from biovqa.bench.export import export_bench
    from biovqa.components.c2.build import build_c2
    from biovqa.synthetic import write_cub

    root = tmp_path_factory.mktemp("hubcache")
    cub = write_cub(root / "cub", n_classes=3, images_per_class=2, seed=5, image_size=(80, 60))
    bench = build_c2(cub, root / "bench-c2")
    return export_bench([bench.root], root / "release", shard_rows=200), bench.root, bench.images_root()


@pytest.fixture()
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hugging Face cache, offline, for this process (the library reads its settings at
    import, so its constants are patched as the environment would have set them)."""
    from huggingface_hub import constants

    cache = tmp_path / "hf" / "hub"
    cache.mkdir(parents=True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("BIOVQA_CACHE", str(tmp_path / "biovqa-cache"))
    monkeypatch.delenv("BIOVQA_IMAGES", raising=False)
    return cache


def test_offline_with_an_empty_cache_is_one_clear_error(hub_cache: Path) -> None:
    with pytest.raises(MissingResourceError) as caught:
        open_bench(f"hf://{REPO}")
    message = str(caught.value)
    assert f"the dataset {REPO} is not in the Hugging Face cache and HF_HUB_OFFLINE is set" in message
    assert f"hf download {REPO} --repo-type dataset" in message and "give its folder" in message
    assert "Traceback" not in message and "LocalEntryNotFoundError" not in message


def test_a_populated_cache_opens_offline_and_is_verified(hub_cache: Path,
                                                         exported: tuple[Path, Path, Path]) -> None:
    from biovqa.bench.hub import open_release

    release, bench_root, images = exported
    snapshot = populate_hub_cache(hub_cache, REPO, release)
    scanned = huggingface_hub.scan_cache_dir(hub_cache)  # the library recognises the layout
    (repo,) = scanned.repos
    assert (repo.repo_id, repo.repo_type) == (REPO, "dataset")
    assert {r.commit_hash for r in repo.revisions} == {COMMIT} and not scanned.warnings
    assert huggingface_hub.snapshot_download(REPO, repo_type="dataset") == str(snapshot)

    original = open_bench(bench_root)
    for reference in (f"hf://{REPO}", f"hf://{REPO}/c2"):
        bench = open_bench(reference)
        assert bench.items.equals(original.items) and bench.component == "c2"
        assert bench.manifest["release"]["folder"] == str(snapshot.resolve())
        assert bench.manifest["release"]["source_photos_checked"] is False
    checked = open_release(f"hf://{REPO}/c2", images=images)
    assert checked.manifest["release"]["source_photos_checked"] is True
    assert checked.images_root() == images.resolve()


def test_an_incomplete_cached_snapshot_says_so(hub_cache: Path, exported: tuple[Path, Path, Path]) -> None:
    pytest.importorskip("huggingface_hub._tree_cache")
    snapshot = populate_hub_cache(hub_cache, REPO, exported[0])
    shard = sorted((snapshot / "data" / "c2").glob("*.parquet"))[0]
    shard.unlink()  # an interrupted download: the tree listing names a file the snapshot lacks
    with pytest.raises(MissingResourceError, match="cached copy of the dataset .* is incomplete"):
        open_bench(f"hf://{REPO}/c2")


def test_an_altered_cached_shard_is_refused(hub_cache: Path, exported: tuple[Path, Path, Path]) -> None:
    snapshot = populate_hub_cache(hub_cache, REPO, exported[0])
    shard = sorted((snapshot / "data" / "c2").glob("*.parquet"))[0]
    blob = shard.resolve()
    payload = bytearray(blob.read_bytes())
    payload[len(payload) // 2] ^= 0xFF
    blob.write_bytes(bytes(payload))
    with pytest.raises(BiovqaError, match="differs from its recorded sha256"):
        open_bench(f"hf://{REPO}")


def test_the_cli_reads_the_cache_from_the_environment(tmp_path: Path, exported: tuple[Path, Path, Path]) -> None:
    """As a user runs it: HF_HOME and HF_HUB_OFFLINE in the environment, ``--images`` for the photos."""
    release, bench_root, images = exported
    hf_home = tmp_path / "hf-home"
    populate_hub_cache(hf_home / "hub", REPO, release)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1",
           "BIOVQA_CACHE": str(tmp_path / "biovqa-cache")}
    ran = subprocess.run([sys.executable, "-m", "biovqa", "audit", f"hf://{REPO}/c2", "--images", str(images)],
                         capture_output=True, text=True, env=env)
    assert ran.returncode == 0, ran.stderr
    assert "audit passed" in ran.stdout + ran.stderr
    photos = tmp_path / "photos"
    shutil.copytree(images, photos)
    victim = next(i for i in open_bench(bench_root).items.column("image").to_pylist() if not i.startswith("rendered/"))
    (photos / victim).unlink()
    ran = subprocess.run([sys.executable, "-m", "biovqa", "audit", f"hf://{REPO}/c2", "--images", str(photos)],
                         capture_output=True, text=True, env=env)
    assert ran.returncode == 2 and victim in ran.stderr and "Traceback" not in ran.stderr
    empty = {**env, "HF_HOME": str(tmp_path / "empty")}
    ran = subprocess.run([sys.executable, "-m", "biovqa", "audit", f"hf://{REPO}"], capture_output=True,
                         text=True, env=empty)
    assert ran.returncode == 2 and "not in the Hugging Face cache" in " ".join(ran.stderr.split())


def test_no_network_is_one_clear_error(hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Online mode, but the hub cannot be reached: the endpoint is a closed port on 127.0.0.1."""
    import socket

    from huggingface_hub import constants

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(MissingResourceError) as caught:
        open_bench(f"hf://{REPO}")
    message = str(caught.value)
    assert f"cannot download the dataset {REPO} from the Hugging Face hub" in message
    assert "check the network" in message and "HF_HUB_OFFLINE" not in message
