"""``biovqa fetch SOURCE --out DIR``: download a public source and unpack it where the builders read.

Downloads go to ``DIR/.downloads/<file>.part`` and resume with an HTTP ``Range`` request when run
again after an interruption; a finished file is checked against its size and sha256 where the
catalogue knows them, then renamed to ``DIR/.downloads/<file>``. Archives are unpacked into a
staging folder ``DIR/.<source>.partial`` that is renamed to ``DIR/<source>`` only when every
archive unpacked, with ``.biovqa-fetch.json`` (what was fetched, with sha256s) written last — so a
folder without that file was never completed, and a corrupt archive leaves nothing that looks
complete.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import shutil
import tarfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from biovqa.errors import BiovqaError, InputFormatError, MissingResourceError

MARKER_FILE = ".biovqa-fetch.json"
DOWNLOADS = ".downloads"
CHUNK = 1 << 20


@dataclass(frozen=True)
class Archive:
    """One file of a source: where it is, what it should be, and how to unpack it."""

    url: str
    size: int | None = None
    sha256: str | None = None
    unpack: str = "auto"  # auto (by suffix) | tar | zip | none (copy the file as is)
    into: str = ""  # sub-folder of the source folder to unpack into

    @property
    def filename(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Source:
    """A public source dataset: its files, licence and the folder layout the builders read."""

    name: str
    title: str
    licence: str
    licence_id: str
    attribution: str
    archives: tuple[Archive, ...] = ()
    layout: str = ""
    hub_repo: str | None = None  # fetched with huggingface_hub instead of plain HTTP
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


LILA_WILDME = "https://lilawildlife.blob.core.windows.net/lila-wildlife/wild-me/"

SOURCES: dict[str, Source] = {
    s.name: s
    for s in (
        Source("cub-200-2011", "CUB-200-2011", "research and non-commercial use (Caltech); images from Flickr",
               "other", "Wah, Branson, Welinder, Perona, Belongie (2011), Caltech-UCSD Birds-200-2011",
               (Archive("https://data.caltech.edu/records/65de6-vh076/files/CUB_200_2011.tgz"),),
               layout="cub-200-2011/CUB_200_2011/{images.txt,classes.txt,parts/,attributes/,images/} "
                      "→ `biovqa build c2 DIR/cub-200-2011`"),
        Source("gbif-backbone", "GBIF Backbone Taxonomy", "CC BY 4.0", "cc-by-4.0",
               "GBIF Secretariat, GBIF Backbone Taxonomy, https://doi.org/10.15468/39omei",
               (Archive("https://hosted-datasets.gbif.org/datasets/backbone/current/backbone.zip", unpack="zip"),),
               layout="gbif-backbone/{Taxon.tsv,VernacularName.tsv,meta.xml} → `biovqa taxonomy build`"),
        Source("neon-beetles", "2018-NEON-beetles", "CC BY-SA 4.0", "cc-by-sa-4.0",
               "Imageomics Institute, 2018-NEON-beetles (BeetlePalooza), NEON data",
               hub_repo="imageomics/2018-NEON-beetles",
               layout="neon-beetles/{BeetleMeasurements.csv,group_images/,individual_metadata.csv}"),
        Source("waid", "WAID (Wildlife Aerial Images from Drone)", "see the WAID repository", "other",
               "Mou et al., WAID, https://github.com/xiaohuicui/WAID",
               (Archive("https://github.com/xiaohuicui/WAID/archive/refs/heads/main.zip", unpack="zip"),),
               layout="waid/WAID-main/WAID/{classes.txt,images/,labels/}"),
        Source("lila-reid", "Wild Me re-ID sets on LILA (whale shark, beluga, hyena, leopard, GZGC)",
               "CDLA-Permissive-1.0", "cdla-permissive-1.0", "Wild Me and LILA BC, https://lila.science",
               tuple(Archive(LILA_WILDME + f"{name}.coco.tar.gz", unpack="tar")
                     for name in ("whaleshark", "beluga", "hyena", "leopard", "gzgc")),
               layout="lila-reid/<name>.coco/{annotations/instances_train<YEAR>.json,images/train<YEAR>/}"),
        Source("gzcd", "GZCD (Grevy's Zebra Census Dataset)", "see the dataset card", "other",
               "Imageomics Institute, GZCD (GGR 2016/2018)", hub_repo="imageomics/GZCD",
               layout="gzcd/{images/,initial_metadata.json,final_metadata.json}"),
        Source("treeoflife-200m", "TreeOfLife-200M", "CC0 metadata; images under their providers' licences",
               "cc0-1.0", "Imageomics Institute, TreeOfLife-200M (GBIF, EOL, BIOSCAN-5M, FathomNet)",
               hub_repo=None,
               note="images are not redistributable: download them with Imageomics' TreeOfLife-toolbox, "
                    "then check them against the released sha256 (`biovqa audit`)."),
        Source("bees", "Boxes on Bees (and Pollen)", "see LILA", "other", "LILA BC, Boxes on Bees and Pollen",
               note="download from https://lila.science/datasets/boxes-on-bees-and-pollen"),
        Source("depondfi", "DePondFi", "CC BY 4.0", "cc-by-4.0", "DePondFi (NCVPRIPG), Mendeley Data 7w45jx35hd",
               note="download from Mendeley Data (7w45jx35hd)"),
    )
}


def licence_note(source: Source) -> str:
    return f"{source.title}: licence {source.licence}. Attribution: {source.attribution}."


def get_source(name: str) -> Source:
    if name not in SOURCES:
        raise BiovqaError(f"unknown source {name!r}; known: {', '.join(sorted(SOURCES))}", field="SOURCE")
    return SOURCES[name]


def with_mirror(source: Source, mirror: str) -> Source:
    """The same source with every archive fetched from ``mirror`` + its file name (a local mirror)."""
    base = mirror if mirror.endswith("/") else mirror + "/"
    return replace(source, archives=tuple(replace(a, url=base + a.filename) for a in source.archives))


# ----------------------------------------------------------------------------------------------


def download(url: str, destination: Path, *, size: int | None = None, sha256: str | None = None,
             progress: Callable[[int, int | None], None] | None = None, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``destination``, resuming ``destination.part`` with a Range request;
    check size and sha256 when given. Returns ``destination``."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    if destination.is_file():
        _check(destination, url, size, sha256, remove=False)
        return destination
    partial = destination.with_name(destination.name + ".part")
    start = partial.stat().st_size if partial.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={start}-"} if start else {})
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and start and (size is None or start == size):
            os.replace(partial, destination)  # the partial file already holds everything
            _check(destination, url, size, sha256, remove=True)
            return destination
        raise MissingResourceError(f"download failed: HTTP {exc.code} {exc.reason}", file=url) from None
    except (urllib.error.URLError, OSError) as exc:
        raise MissingResourceError(f"cannot reach the server: {exc}", file=url,
                                   hint="check the network; run again to resume") from None
    with response:
        if start and response.status != 206:
            start = 0  # the server ignored the range: start over
        total = _total_length(response, start)
        done = start
        try:
            with open(partial, "ab" if start else "wb") as handle:
                while True:
                    chunk = response.read(CHUNK)
                    if not chunk:
                        break
                    handle.write(chunk)
                    done += len(chunk)
                    if progress:
                        progress(done, total)
        except (OSError, ValueError, http.client.IncompleteRead) as exc:
            raise MissingResourceError(f"download interrupted after {done:,} bytes ({type(exc).__name__})",
                                       file=url, hint="run the same command again to resume") from None
    if total is not None and done < total:
        raise MissingResourceError(f"download interrupted after {done:,} of {total:,} bytes", file=url,
                                   hint="run the same command again to resume")
    os.replace(partial, destination)
    _check(destination, url, size, sha256, remove=True)
    return destination


def _total_length(response: Any, start: int) -> int | None:
    content_range = response.headers.get("Content-Range")
    if content_range and "/" in content_range:
        tail = content_range.rsplit("/", 1)[1]
        return int(tail) if tail.isdigit() else None
    length = response.headers.get("Content-Length")
    return start + int(length) if length and length.isdigit() else None


def _check(path: Path, url: str, size: int | None, sha256: str | None, *, remove: bool) -> None:
    problem = None
    if size is not None and path.stat().st_size != size:
        problem = f"size {path.stat().st_size:,} bytes, expected {size:,}"
    elif sha256 is not None:
        with open(path, "rb") as handle:
            actual = hashlib.file_digest(handle, "sha256").hexdigest()
        if actual != sha256:
            problem = f"sha256 {actual}, expected {sha256}"
    if problem:
        if remove:
            path.unlink(missing_ok=True)
        raise InputFormatError(f"downloaded file is not the published one: {problem}", file=path,
                               hint=f"it was removed; run again to download {url} afresh")


def _unpack(archive: Path, kind: str, target: Path) -> None:
    name = archive.name.lower()
    if kind == "auto":
        kind = ("zip" if name.endswith(".zip") else
                "tar" if name.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")) else "none")
    target.mkdir(parents=True, exist_ok=True)
    try:
        if kind == "tar":
            with tarfile.open(archive) as bundle:
                bundle.extractall(target, filter="data")
        elif kind == "zip":
            with zipfile.ZipFile(archive) as bundle:
                for member in bundle.namelist():
                    resolved = (target / member).resolve()
                    if not resolved.is_relative_to(target.resolve()):
                        raise InputFormatError(f"archive member {member!r} points outside the folder",
                                               file=archive)
                bundle.extractall(target)
        else:
            shutil.copyfile(archive, target / archive.name)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
        archive.unlink(missing_ok=True)
        raise InputFormatError(f"cannot unpack the archive ({type(exc).__name__}: {exc})", file=archive,
                               hint="the download is corrupt and was removed; run again to download it afresh") from None


def fetch_source(source: Source, out: str | Path, *, console: Any | None = None) -> Path:
    """Fetch ``source`` into ``out/<source.name>``; returns that folder (unchanged when complete)."""
    out = Path(out)
    target = out / source.name
    if (target / MARKER_FILE).is_file():
        return target
    if target.exists():
        raise BiovqaError("the folder exists but was not completed by `biovqa fetch`", file=target,
                          hint="remove it (or choose another --out) and run again")
    if source.hub_repo:
        return _fetch_hub(source, out, target)
    if not source.archives:
        raise MissingResourceError(f"{source.title} cannot be fetched automatically: {source.note}",
                                   field="SOURCE")
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for archive in source.archives:
        destination = out / DOWNLOADS / archive.filename
        files.append(_download_with_progress(archive, destination, console))
    stage = out / f".{source.name}.partial"
    shutil.rmtree(stage, ignore_errors=True)
    try:
        for archive, path in zip(source.archives, files):
            _unpack(path, archive.unpack, stage / archive.into)
        marker = {"source": source.name, "licence": source.licence, "attribution": source.attribution,
                  "files": [{"url": a.url, "file": p.name, "bytes": p.stat().st_size,
                             "sha256": _sha256(p)} for a, p in zip(source.archives, files)]}
        (stage / MARKER_FILE).write_text(json.dumps(marker, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(stage, target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return target


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _download_with_progress(archive: Archive, destination: Path, console: Any | None) -> Path:
    if console is None:
        return download(archive.url, destination, size=archive.size, sha256=archive.sha256)
    from rich.progress import DownloadColumn, Progress, TransferSpeedColumn

    with Progress(*Progress.get_default_columns(), DownloadColumn(), TransferSpeedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task(archive.filename, total=archive.size)

        def update(done: int, total: int | None) -> None:
            bar.update(task, completed=done, total=total)

        return download(archive.url, destination, size=archive.size, sha256=archive.sha256, progress=update)


def _fetch_hub(source: Source, out: Path, target: Path) -> Path:
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise MissingResourceError("fetching a Hugging Face dataset needs huggingface_hub",
                                   hint="pip install 'biovqa[release]'") from None
    stage = out / f".{source.name}.partial"
    try:
        snapshot_download(str(source.hub_repo), repo_type="dataset", local_dir=stage)
    except Exception as exc:  # network, auth, offline mode
        raise MissingResourceError(f"cannot download {source.hub_repo} from the Hugging Face hub "
                                   f"({type(exc).__name__}: {exc})", field="SOURCE",
                                   hint="check the network; run again to resume") from None
    marker = {"source": source.name, "licence": source.licence, "attribution": source.attribution,
              "hub_repo": source.hub_repo}
    (stage / MARKER_FILE).write_text(json.dumps(marker, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(stage, target)
    return target
