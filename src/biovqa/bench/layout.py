"""The names inside a benchmark folder (its layout: :mod:`biovqa.bench.folder`): the items file,
the manifest and the manifest keys that every reader and writer of a folder agrees on. A module of
its own so that the output claims (:mod:`biovqa.bench.outputs`) recognise a benchmark without
importing the folder module."""

from __future__ import annotations

ITEMS_FILE = "items.parquet"
MANIFEST_FILE = "manifest.json"
RENDERED_PREFIX = "rendered/"
#: manifest key of the side-file card: {relative path: {"sha256", "bytes"}}
FILES_KEY = "files"
#: manifest key listing reusable caches inside the folder (relative paths; a rebuild starts from them)
CACHES_KEY = "caches"
REBUILD_HINT = "rebuild the benchmark (`biovqa build …`); `biovqa audit` lists every problem"


__all__ = ["CACHES_KEY", "FILES_KEY", "ITEMS_FILE", "MANIFEST_FILE", "REBUILD_HINT", "RENDERED_PREFIX"]
