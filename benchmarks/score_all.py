"""Benchmark: every component's full-size synthetic bench scored at its default B through the path
``biovqa score`` takes, beside a plain reference (reading the replies + an exact match) measured
in the same run.

    python benchmarks/score_all.py [--components c1,c2,c3] [--work benchmarks/_work] [--repeat 1]

The benches come from the per-component benchmarks' own generators (imported, not copied):
``score_c1.make_benchmark`` (890K questions over 100K images), ``score_c2.make_items`` (824 104
items, the paper's family mix), ``score_c3.synthetic`` (132 504 items, the paper's task sizes) and
``score_c4.make_benchmark`` (15 000 pairs over the five catalogs). They are built once and cached under
``--work`` (ignored by git). A component whose generator is not there is skipped with a line
saying so, and the total says which components it covers.

Each component is scored in its own fresh process (``--one``), so its peak resident memory
(``VmHWM``) is its own; the child prints one JSON line. Wall and CPU time (``process_time``:
every thread of the process) are both reported: on a machine shared with other jobs the wall time
mostly measures the wait for a core.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

COMPONENTS = ("c1", "c2", "c3", "c4")


class Unavailable(Exception):
    """A component's full-size bench cannot be made here (its generator is missing)."""


def _bench_c1(folder: Path) -> tuple[Path, Path]:
    import score_c1

    bench = folder / "bench"
    if not (bench / "items.parquet").exists():
        folder.mkdir(parents=True, exist_ok=True)
        score_c1.make_benchmark(folder, 100_000)
    return bench, _without_missing(folder / "predictions.parquet")


def _bench_c2(folder: Path) -> tuple[Path, Path]:
    import pyarrow as pa
    import score_c2

    from biovqa.bench.folder import write_bench, write_parquet
    from biovqa.components.c2 import kernels

    if not (folder / "predictions.parquet").exists():
        # the same folder score_c2.py --cache writes
        items, replies, statuses = score_c2.make_items(sum(score_c2.PAPER_COUNTS.values()))
        write_bench(folder, items, component="c2", generator="benchmarks/score_c2.py", seed=7,
                    sources={}, parameters={"items": items.num_rows, "reply_mix": "realistic"})
        layout = {p: [0.1 + 0.06 * i, 0.2 + 0.04 * ((i * 5) % 15)] for i, p in enumerate(kernels.CUB_PARTS)}
        (folder / "c2").mkdir(exist_ok=True)
        (folder / "c2" / "part_layout.json").write_text(json.dumps(layout))
        write_parquet(pa.table({"item_id": items.column("item_id"),
                                "response": pa.array(replies, pa.string()),
                                "status": pa.array(statuses, pa.string())}), folder / "predictions.parquet")
    return folder, _without_missing(folder / "predictions.parquet")


def _without_missing(path: Path) -> Path:
    """The generators mark a reply that never came as status 'missing'; a predictions file has no
    such rows (a missing reply is an absent row, which ``biovqa score`` scores as missing)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from biovqa.bench.folder import write_parquet

    out = path.with_name("predictions-for-score.parquet")
    if not out.exists():
        table = pq.read_table(path)
        write_parquet(table.filter(pc.not_equal(table.column("status"), "missing")), out)
    return out


def _bench_c3(folder: Path) -> tuple[Path, Path]:
    import score_c3

    from biovqa.bench.folder import write_bench, write_parquet

    bench = folder / "bench"
    if not (bench / "items.parquet").exists():
        items, predictions = score_c3.synthetic(1.0)
        write_bench(bench, items, component="c3", generator="benchmarks/score_c3.py", seed=0,
                    sources={}, parameters={"scale": 1.0})
        write_parquet(predictions, folder / "predictions.parquet")
    return bench, _without_missing(folder / "predictions.parquet")


def _bench_c4(folder: Path) -> tuple[Path, Path]:
    try:
        import score_c4
    except ImportError as exc:
        raise Unavailable(f"c4 skipped: benchmarks/score_c4.py cannot be imported ({exc})") from None
    if not hasattr(score_c4, "make_benchmark"):
        raise Unavailable("c4 skipped: benchmarks/score_c4.py has no make_benchmark(folder)")
    return score_c4.make_benchmark(folder)  # its predictions already leave the missing replies out


BENCHES = {"c1": _bench_c1, "c2": _bench_c2, "c3": _bench_c3, "c4": _bench_c4}


def plain_reference(bench: Path, predictions: Path) -> float:
    """Read the replies and the items' answers and count exact matches (case and outer
    whitespace ignored): the least any scorer does."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    replies = pq.read_table(predictions, columns=["item_id", "response"])
    items = pq.read_table(bench / "items.parquet", columns=["item_id", "answer"])
    joined = items.join(replies, "item_id", join_type="left outer")

    def norm(column: str):
        return pc.utf8_lower(pc.utf8_trim_whitespace(joined.column(column)))

    return float(pc.sum(pc.fill_null(pc.equal(norm("response"), norm("answer")), False)).as_py() or 0)


def peak_rss_mib() -> float:
    """This process's own peak resident memory (``VmHWM``). Not ``ru_maxrss``: Linux carries a
    parent's peak into a forked child, so every child of the parent that built the benches
    reported the parent's 1.7 GiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # no /proc: the best there is


def one(component: str, work: Path) -> dict[str, object]:
    """Score one component (in this process) and measure it."""
    import numpy as np  # noqa: F401  (imported before timing, as the CLI has by then)

    from biovqa.scoring.pipeline import score_predictions

    bench, predictions = BENCHES[component](work / component)
    rss_before = peak_rss_mib()
    t0, c0 = time.perf_counter(), time.process_time()
    matches = plain_reference(bench, predictions)
    t1, c1 = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as out:
        score_predictions(bench, predictions, Path(out) / "scores")
        t2, c2 = time.perf_counter(), time.process_time()
        summary = json.loads((Path(out) / "scores" / "summary.json").read_text())
    return {"component": component, "n_items": summary["n_items"],
            "bootstrap": summary["options"].get("bootstrap"),
            "score_wall": t2 - t1, "score_cpu": c2 - c1, "reference_wall": t1 - t0, "reference_cpu": c1 - c0,
            "reference_matches": matches,
            "peak_rss_mib": peak_rss_mib(),
            "rss_before_mib": rss_before, "load": os.getloadavg()[0],
            "table3": {k: None if v.get("value") is None else round(v["value"], 4)
                       for k, v in summary.get("table3", {}).items() if isinstance(v, dict) and "value" in v}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--components", default=",".join(COMPONENTS))
    parser.add_argument("--work", type=Path, default=HERE / "_work")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--one", choices=COMPONENTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.work)), flush=True)
        return 0
    names = [name.strip() for name in args.components.split(",") if name.strip()]
    available = []
    for name in names:  # build (or reuse) every bench before any timing
        try:
            BENCHES[name](args.work / name)
        except Unavailable as exc:
            print(exc)
            continue
        available.append(name)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MPLBACKEND": "Agg"}
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for run in range(args.repeat):
        rows = []
        for name in available:
            done = subprocess.run([sys.executable, __file__, "--one", name, "--work", str(args.work)],
                                  env=env, capture_output=True, text=True)
            if done.returncode:
                sys.stderr.write(done.stderr)
                return done.returncode
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"run {run + 1}:")
        for r in rows:
            print(f"  {r['component']}: {r['n_items']:>9,} items, B = {r['bootstrap']}: score "
                  f"{r['score_wall']:6.2f} s wall, {r['score_cpu']:6.2f} s CPU, peak RSS "
                  f"{r['peak_rss_mib']:6.0f} MiB | reference {r['reference_wall']:5.2f} s wall, "
                  f"{r['reference_cpu']:5.2f} s CPU | load {r['load']:.1f}")
        total = {key: sum(float(r[key]) for r in rows)
                 for key in ("score_wall", "score_cpu", "reference_wall", "reference_cpu")}
        items = sum(int(r["n_items"]) for r in rows)
        covers = "+".join(r["component"] for r in rows)
        print(f"  total ({covers}): {items:,} items: score {total['score_wall']:.2f} s wall, "
              f"{total['score_cpu']:.2f} s CPU | reference {total['reference_wall']:.2f} s wall, "
              f"{total['reference_cpu']:.2f} s CPU | largest peak RSS "
              f"{max((float(r['peak_rss_mib']) for r in rows), default=0):.0f} MiB")
        print("  table3:", json.dumps({r["component"]: r["table3"] for r in rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
