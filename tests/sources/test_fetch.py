"""``biovqa fetch``: resumable downloads and safe unpacking, against a real HTTP server on
127.0.0.1 started by the test (no other address is ever contacted)."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.sources.fetch import (
    DOWNLOADS,
    MARKER_FILE,
    SOURCES,
    Archive,
    Source,
    download,
    fetch_source,
    parse_pins,
    verification_note,
    with_mirror,
    with_pins,
)


def tiny_tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as bundle:
        for name, payload in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            info.mtime = 0
            bundle.addfile(info, io.BytesIO(payload))
    return buffer.getvalue()


class Server:
    """Serves ``files`` with Range support; ``cut[name] = n`` makes the next full response for
    ``name`` stop after n bytes (the connection drops mid-download)."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.cut: dict[str, int] = {}
        self.ranges: list[str | None] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                name = self.path.lstrip("/")
                if name not in outer.files:
                    self.send_error(404)
                    return
                payload = outer.files[name]
                header = self.headers.get("Range")
                outer.ranges.append(header)
                start = int(header.split("=")[1].split("-")[0]) if header else 0
                if start >= len(payload) and header:
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(payload)}")
                    self.end_headers()
                    return
                body = payload[start:]
                self.send_response(206 if header else 200)
                if header:
                    self.send_header("Content-Range", f"bytes {start}-{len(payload) - 1}/{len(payload)}")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                limit = outer.cut.pop(name, None)
                self.wfile.write(body if limit is None else body[:limit])
                if limit is not None:
                    self.wfile.flush()
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "Server":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def server() -> Iterator[Server]:
    with Server() as running:
        yield running


def test_interrupted_download_resumes_with_a_range_request(tmp_path: Path, server: Server) -> None:
    payload = bytes(range(256)) * 2000  # 512 000 bytes
    server.files["blob.bin"] = payload
    server.cut["blob.bin"] = 100_000
    target = tmp_path / "blob.bin"
    digest = hashlib.sha256(payload).hexdigest()
    with pytest.raises(MissingResourceError, match="interrupted") as caught:
        download(server.url + "blob.bin", target, size=len(payload), sha256=digest)
    assert "run the same command again to resume" in str(caught.value)
    partial = tmp_path / "blob.bin.part"
    assert partial.stat().st_size == 100_000 and not target.exists()
    seen: list[tuple[int, int | None]] = []
    download(server.url + "blob.bin", target, size=len(payload), sha256=digest,
             progress=lambda done, total: seen.append((done, total)))
    assert server.ranges == [None, "bytes=100000-"]
    assert target.read_bytes() == payload and not partial.exists()
    assert seen[-1] == (len(payload), len(payload)) and seen[0][0] > 100_000


def test_wrong_checksum_is_refused_and_removed(tmp_path: Path, server: Server) -> None:
    server.files["x.bin"] = b"not the published bytes"
    with pytest.raises(InputFormatError, match="not the published one"):
        download(server.url + "x.bin", tmp_path / "x.bin", sha256="0" * 64)
    assert not (tmp_path / "x.bin").exists() and not (tmp_path / "x.bin.part").exists()


def test_fetch_unpacks_into_the_builder_layout(tmp_path: Path, server: Server) -> None:
    archive = tiny_tar({"whaleshark.coco/annotations/instances_train2020.json": b'{"images": []}',
                        "whaleshark.coco/images/train2020/000001.jpg": b"\xff\xd8jpeg"})
    server.files["whaleshark.coco.tar.gz"] = archive
    source = Source("tiny", "Tiny", "CC0", "cc0-1.0", "the test",
                    (Archive(server.url + "whaleshark.coco.tar.gz", size=len(archive),
                             sha256=hashlib.sha256(archive).hexdigest()),))
    folder = fetch_source(source, tmp_path / "out")
    assert (folder / "whaleshark.coco/annotations/instances_train2020.json").read_bytes() == b'{"images": []}'
    marker = json.loads((folder / MARKER_FILE).read_text())
    assert marker["files"][0]["sha256"] == hashlib.sha256(archive).hexdigest()
    requests = len(server.ranges)
    assert fetch_source(source, tmp_path / "out") == folder and len(server.ranges) == requests  # complete: no refetch


def test_corrupt_archive_is_a_clear_error_and_leaves_nothing_complete(tmp_path: Path, server: Server) -> None:
    good = tiny_tar({"a/b.txt": b"x" * 5000})
    server.files["broken.tar.gz"] = good[: len(good) // 2] + b"\0" * 64  # truncated gzip stream
    source = Source("broken", "Broken", "CC0", "cc0-1.0", "the test", (Archive(server.url + "broken.tar.gz"),))
    out = tmp_path / "out"
    with pytest.raises(InputFormatError, match="cannot unpack") as caught:
        fetch_source(source, out)
    assert "broken.tar.gz" in str(caught.value)
    assert not (out / "broken").exists()
    assert not (out / ".broken.partial").exists()
    assert not (out / DOWNLOADS / "broken.tar.gz").exists()  # removed, so a rerun downloads afresh


def test_cli_fetches_a_catalogued_source_from_a_local_mirror(tmp_path: Path, server: Server) -> None:
    for archive in SOURCES["lila-reid"].archives:
        stem = archive.filename.split(".")[0]
        server.files[archive.filename] = tiny_tar({f"{stem}.coco/annotations/instances_train2022.json": b"{}"})
    ran = subprocess.run([sys.executable, "-m", "biovqa", "fetch", "lila-reid", "--out", str(tmp_path / "src"),
                          "--mirror", server.url], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    text = " ".join((ran.stdout + ran.stderr).split())
    assert "CDLA-Permissive-1.0" in text and "Attribution" in text
    for name in ("whaleshark", "beluga", "hyena", "leopard", "gzgc"):
        assert (tmp_path / "src/lila-reid" / f"{name}.coco/annotations/instances_train2022.json").is_file()
    unknown = subprocess.run([sys.executable, "-m", "biovqa", "fetch", "nope", "--out", str(tmp_path / "x")],
                             capture_output=True, text=True)
    assert unknown.returncode == 2 and "unknown source" in unknown.stderr + unknown.stdout


def test_every_catalogued_archive_either_is_pinned_or_says_why_not() -> None:
    for source in SOURCES.values():
        for archive in source.archives:
            pinned = archive.sha256 is not None
            assert pinned or archive.unpinned.startswith("not pinned: "), (source.name, archive.filename)
            note = verification_note(archive)
            assert ("verified (sha256" in note) if pinned else ("not verified: no checksum known" in note)


def test_cli_prints_not_verified_and_accepts_pins(tmp_path: Path, server: Server,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from fixtures.cli_runner import cli

    archive = tiny_tar({"CUB_200_2011/classes.txt": b"1 001.Black_footed_Albatross\n"})
    server.files["CUB_200_2011.tgz"] = archive
    digest = hashlib.sha256(archive).hexdigest()
    code, err = cli(["fetch", "cub-200-2011", "--out", tmp_path / "a", "--mirror", server.url], capsys)
    assert code == 0, err
    assert "CUB_200_2011.tgz: not verified: no checksum known (not pinned:" in err
    marker = json.loads((tmp_path / "a/cub-200-2011" / MARKER_FILE).read_text())
    assert marker["files"][0]["verified"] == "none" and marker["files"][0]["sha256"] == digest

    code, err = cli(["fetch", "cub-200-2011", "--out", tmp_path / "b", "--mirror", server.url,
                     "--sha256", digest, "--size", str(len(archive))], capsys)
    assert code == 0, err
    assert "CUB_200_2011.tgz: verified (sha256 and size pinned)" in err
    assert json.loads((tmp_path / "b/cub-200-2011" / MARKER_FILE).read_text())["files"][0]["verified"] == "sha256"

    code, err = cli(["fetch", "cub-200-2011", "--out", tmp_path / "c", "--mirror", server.url,
                     "--sha256", "ab" * 32], capsys)
    assert code == 2 and "not the published one" in err and "sha256" in err
    assert not (tmp_path / "c/cub-200-2011").exists() and not (tmp_path / "c" / DOWNLOADS / "CUB_200_2011.tgz").exists()

    # a folder fetched unpinned, asked for again with a pin it does not match
    code, err = cli(["fetch", "cub-200-2011", "--out", tmp_path / "a", "--sha256", "cd" * 32], capsys)
    assert code == 2 and "fetched earlier with sha256" in err


def test_pins_are_checked_before_anything_is_downloaded(tmp_path: Path, server: Server,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from fixtures.cli_runner import cli

    for archive in (*SOURCES["cub-200-2011"].archives, *SOURCES["lila-reid"].archives):
        server.files[archive.filename] = b"would be served"
    cases = [
        (["cub-200-2011", "--sha256", "xyz"], "64 hexadecimal digits"),
        (["cub-200-2011", "--size", "-3"], "positive number of bytes"),
        (["lila-reid", "--sha256", "ab" * 32], "name the one to pin as FILE=VALUE"),
        (["lila-reid", "--sha256", f"nope.tar.gz={'ab' * 32}"], "has no archive 'nope.tar.gz'"),
        (["cub-200-2011", "--sha256", "ab" * 32, "--sha256", "cd" * 32], "pinned twice"),
    ]
    for argv, message in cases:
        code, err = cli(["fetch", *argv, "--out", tmp_path / "x", "--mirror", server.url], capsys)
        assert code == 2 and message in err, (argv, err)
    assert server.ranges == []  # nothing was requested


def test_a_pinned_archive_among_several(tmp_path: Path, server: Server) -> None:
    for archive in SOURCES["lila-reid"].archives:
        stem = archive.filename.split(".")[0]
        server.files[archive.filename] = tiny_tar({f"{stem}.coco/annotations/instances_train2022.json": b"{}"})
    beluga = server.files["beluga.coco.tar.gz"]
    pinned = with_pins(SOURCES["lila-reid"], sha256=parse_pins(
        [f"beluga.coco.tar.gz={hashlib.sha256(beluga).hexdigest()}"], SOURCES["lila-reid"], flag="--sha256"))
    notes = {a.filename: verification_note(a) for a in pinned.archives}
    assert notes["beluga.coco.tar.gz"] == "beluga.coco.tar.gz: verified (sha256 pinned)"
    assert "not verified" in notes["hyena.coco.tar.gz"]
    folder = fetch_source(with_mirror(pinned, server.url), tmp_path / "out")
    verified = {f["file"]: f["verified"] for f in json.loads((folder / MARKER_FILE).read_text())["files"]}
    assert verified == {"whaleshark.coco.tar.gz": "none", "beluga.coco.tar.gz": "sha256", "hyena.coco.tar.gz": "none",
                        "leopard.coco.tar.gz": "none", "gzgc.coco.tar.gz": "none"}
