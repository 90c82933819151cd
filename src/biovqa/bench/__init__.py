"""Benchmark folders on disk: items.parquet + manifest.json (+ images), and their audit."""

from biovqa.bench.folder import Bench, open_bench, sha256_file, write_bench, write_json

__all__ = ["Bench", "open_bench", "sha256_file", "write_bench", "write_json"]
