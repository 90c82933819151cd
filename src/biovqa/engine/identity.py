"""What a run's answers depend on beyond the model id and revision: its *identity*.

The store header and every store key carry it, so a run folder refuses to resume (and two stores
refuse to merge) when any of it changes:

* ``dtype`` and the processor settings the backend actually used (pixel limits, image size, and
  a hash of every image-processor setting);
* the answer-affecting backend options (anything but transport and batching knobs);
* the checkpoint's own chat template (``chat_template_sha256``, from the backend's facts);
* the weights: for a local folder a cheap but sound fingerprint (every file's size, the full bytes
  of small files such as configs and templates, each safetensors header, and 64 evenly spaced
  4 KiB samples of every large file); for a Hugging Face cache snapshot the repository, the commit
  and the content-addressed blob names its files link to.

A hub id needs no fingerprint: its resolved commit is already the store's revision.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from pathlib import Path
from typing import Any

#: Backend options that change how requests travel or are batched, never what a model answers.
OPERATIONAL_OPTIONS = frozenset({
    "device", "batch_size", "base_url", "api_key_env", "concurrency", "rpm", "timeout_s",
    "max_retries", "backoff_base_s", "backoff_cap_s", "retry_after_cap_s", "threads",
    "tensor_parallel_size", "gpu_memory_utilization", "revision", "preset", "shared_prefix",
    # the echo backend's fault injection: simulated transport failures and delays
    "fail_every", "fail_salt", "delay_s",
})
#: Files at most this large are hashed whole; larger ones are sampled.
SMALL_FILE_BYTES = 1 << 20
SAMPLE_COUNT = 64
SAMPLE_BYTES = 4096
#: safetensors headers larger than this are not JSON headers (a damaged or foreign file).
MAX_SAFETENSORS_HEADER = 100 << 20
_SNAPSHOT = re.compile(r"models--(?P<repo>[^/]+)/snapshots/(?P<commit>[0-9a-f]{40})$")


def _sampled_digest(path: Path, size: int, digest: Any) -> None:
    with path.open("rb") as handle:
        if path.suffix == ".safetensors" and size >= 8:
            (header_length,) = struct.unpack("<Q", handle.read(8))
            if header_length <= min(MAX_SAFETENSORS_HEADER, size - 8):
                digest.update(handle.read(header_length))
        if size <= SAMPLE_COUNT * SAMPLE_BYTES:
            handle.seek(0)
            digest.update(handle.read())
            return
        span = size - SAMPLE_BYTES
        for index in range(SAMPLE_COUNT):
            handle.seek(span * index // (SAMPLE_COUNT - 1))
            digest.update(handle.read(SAMPLE_BYTES))


def weights_fingerprint(model: str) -> dict[str, Any] | None:
    """A fingerprint of a local checkpoint folder (None for anything that is not a folder).

    Cost: one ``stat`` per file, the whole of each small file and ``64 × 4 KiB`` of each large
    one — about 0.3 MB read per weight shard, whatever its size.
    """
    folder = Path(model).expanduser()
    if not folder.is_dir():
        return None
    folder = folder.resolve() if not _SNAPSHOT.search(folder.as_posix()) else folder
    snapshot = _SNAPSHOT.search(Path(model).expanduser().as_posix().rstrip("/"))
    files = sorted(p for p in folder.rglob("*")
                   if p.is_file() and not any(part.startswith(".") for part in
                                               p.relative_to(folder).parts))
    if snapshot is not None:
        blobs = hashlib.sha256()
        for path in files:
            blobs.update(f"{path.relative_to(folder).as_posix()}\0"
                         f"{path.resolve().name}\0".encode())
        return {"kind": "hf-snapshot", "repo": snapshot["repo"].replace("--", "/"),
                "commit": snapshot["commit"], "files": len(files),
                "sha256": blobs.hexdigest()}
    digest = hashlib.sha256()
    total = 0
    for path in files:
        size = path.stat().st_size
        total += size
        digest.update(f"{path.relative_to(folder).as_posix()}\0{size}\0".encode())
        if size <= SMALL_FILE_BYTES:
            digest.update(path.read_bytes())
        else:
            _sampled_digest(path, size, digest)
    return {"kind": "local", "files": len(files), "bytes": total, "sha256": digest.hexdigest()}


def run_identity(facts: dict[str, Any], backend_options: dict[str, Any],
                 model: str) -> dict[str, Any]:
    """The identity recorded in the store header: JSON-able, deterministic (sorted keys)."""
    options = {str(k): v for k, v in sorted(backend_options.items())
               if str(k) not in OPERATIONAL_OPTIONS and str(k) != "dtype"}
    identity: dict[str, Any] = {
        "dtype": facts.get("dtype"),
        "processor": facts.get("processor"),
        "options": options,
        "processor_settings_sha256": facts.get("processor_settings_sha256"),
        "chat_template_sha256": facts.get("chat_template_sha256"),
        "weights": weights_fingerprint(model),
    }
    return json.loads(json.dumps(identity, sort_keys=True, default=str))


def identity_digest(identity: dict[str, Any]) -> str:
    """A short digest of an identity, folded into every store key."""
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def identity_differences(ours: Any, theirs: Any, prefix: str = "") -> list[str]:
    """Dotted paths where two identities differ, each with both values (for error messages)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        lines: list[str] = []
        for name in sorted(set(ours) | set(theirs)):
            lines.extend(identity_differences(ours.get(name), theirs.get(name),
                                              f"{prefix}{name}."))
        return lines
    if ours == theirs:
        return []
    return [f"{prefix.rstrip('.')}: {ours!r} → {theirs!r}"]
