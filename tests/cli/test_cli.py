"""The command line as a user meets it: real subprocesses, exit codes, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest


def biovqa(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "biovqa", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


@pytest.mark.slow
def test_demo_runs_end_to_end(demo_run: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out, result = demo_run
    assert result.returncode == 0, result.stderr
    report = out / "report" / "index.html"
    assert report.exists() and str(report) in result.stderr.replace("\n", "")
    html = report.read_text()
    assert "<table" in html and "data:image/png;base64," in html
    # one step per built-in component with a demo, then the report
    from biovqa.components.registry import builtin_components

    titles = [c.title for c in builtin_components() if c.demo]
    steps = [line for line in result.stderr.splitlines() if line[:1].isdigit() and "/" in line[:4]]
    assert steps[:-1] == [f"{k}/{len(titles) + 1} {title}" for k, title in enumerate(titles, 1)]
    # the marker names exactly what the demo wrote, so a re-run replaces that and nothing else
    marker = json.loads((out / ".biovqa-demo.json").read_text())
    assert marker["complete"] is True
    assert sorted(marker["entries"]) == sorted(p.name for p in out.iterdir()
                                               if p.name != ".biovqa-demo.json")


def test_a_demo_marker_never_reaches_outside_its_folder(tmp_path: Path) -> None:
    """A damaged or edited marker naming paths outside the folder (or hidden entries) removes
    none of them; the demo's own entries are removed."""
    from biovqa.demo import MARKER_FILE, prepare_demo_folder

    out = tmp_path / "demo"
    (out / "bench-c1").mkdir(parents=True)
    (tmp_path / "precious").mkdir()
    (out / ".hidden").write_text("keep")
    (out / MARKER_FILE).write_text(json.dumps({"written_by": "biovqa demo", "complete": True,
                                               "entries": ["bench-c1", "../precious", str(tmp_path / "precious"),
                                                           ".hidden", "..", "a/../../precious"]}))
    prepare_demo_folder(out)
    assert (tmp_path / "precious").is_dir() and (out / ".hidden").read_text() == "keep"
    assert not (out / "bench-c1").exists()
    assert json.loads((out / MARKER_FILE).read_text())["entries"] == []


HEAVY = ("numpy", "pyarrow", "pandas", "torch", "matplotlib", "PIL")
#: the registry's own modules, which every command imports (not a component's)
REGISTRY_MODULES = ("biovqa.components.registry", "biovqa.components.options")


def _modules_after(*argv: str) -> tuple[list[str], list[str]]:
    """(heavy top-level modules, component modules) imported by ``biovqa ARGV`` in a fresh process."""
    code = ("import sys\nfrom biovqa.cli.main import main\ntry:\n    main(%r)\nexcept SystemExit:\n    pass\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & set(%r)))\n"
            "print(sorted(m for m in sys.modules if m.startswith('biovqa.components.') "
            "and m not in %r))\n") % (list(argv), HEAVY, REGISTRY_MODULES)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    import ast

    heavy, components = done.stdout.strip().splitlines()[-2:]
    return ast.literal_eval(heavy), ast.literal_eval(components)


def test_version_loads_no_component_and_nothing_heavy() -> None:
    assert _modules_after("--version") == ([], [])


def test_help_reads_the_declarations_without_anything_heavy() -> None:
    """``biovqa --help`` lists the commands the component declarations add: the declarations (and
    the task records they derive their tuples from) import no numpy, pyarrow or pandas."""
    heavy, components = _modules_after("--help")
    assert heavy == []
    assert "biovqa.components.c2.tasks" in components  # a declaration that reads its records was loaded


def test_audit_failure_exits_non_zero_without_traceback(bench_copy: Path) -> None:
    from biovqa.bench import open_bench

    bench = open_bench(bench_copy)
    bench.resolve_image(bench.items.column("image")[0].as_py()).unlink()
    result = biovqa("audit", bench_copy)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and "image missing" in result.stderr


def test_bad_predictions_exit_non_zero_without_traceback(tmp_path: Path, demo_bench: Path) -> None:
    """A benchmark item answered twice is a duplicate; ids the benchmark does not hold are named as
    such first (they suggest replies made for another benchmark), duplicated or not."""
    known = pq.read_table(demo_bench / "items.parquet", columns=["item_id"]).column("item_id")[0].as_py()
    pq.write_table(pa.table({"item_id": [known, known], "response": ["a", "b"]}), tmp_path / "p.parquet")
    result = biovqa("score", demo_bench, "--predictions", tmp_path / "p.parquet", "--out", tmp_path / "s")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "duplicate item_id" in result.stderr
    pq.write_table(pa.table({"item_id": ["nope", "nope"], "response": ["a", "b"]}), tmp_path / "q.parquet")
    result = biovqa("score", demo_bench, "--predictions", tmp_path / "q.parquet", "--out", tmp_path / "t")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "another benchmark" in result.stderr


def test_missing_catalog_column_via_build(tmp_path: Path, demo_data: Path, demo_index: Path, demo_images: Path) -> None:
    lines = (demo_data / "catalog.csv").read_text().splitlines()
    header = lines[0].split(",")
    drop = header.index("genus")
    rows = [",".join(v for i, v in enumerate(line.split(",")) if i != drop) for line in lines]
    (tmp_path / "catalog.csv").write_text("\n".join(rows) + "\n")
    result = biovqa("build", "c1", "--catalog", tmp_path / "catalog.csv", "--backbone", demo_index,
                    "--images", demo_images, "--out", tmp_path / "bench")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "field 'genus'" in result.stderr


def test_baseline_run_score_report(tmp_path: Path, demo_bench: Path) -> None:
    run = biovqa("run", demo_bench, "--backend", "baseline", "--out", tmp_path / "run")
    assert run.returncode == 0, run.stderr
    predictions = tmp_path / "run" / "predictions.parquet"
    assert pq.read_table(predictions).num_rows == pq.read_table(demo_bench / "items.parquet").num_rows
    scored = biovqa("score", demo_bench, "-p", predictions, "--out", tmp_path / "scores", "--bootstrap", "100")
    assert scored.returncode == 0, scored.stderr
    assert "Table 3" in scored.stderr and "phy" in scored.stderr  # the headline table is shown
    report = biovqa("report", tmp_path / "scores", "--out", tmp_path / "report")
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "report" / "index.html").exists()
    assert any(p.suffix == ".png" for p in (tmp_path / "report").iterdir())
    assert any(p.suffix == ".csv" for p in (tmp_path / "report").iterdir())


# --- usage errors are click's, exit 2; only bugs say "internal error" -------------------------


@pytest.mark.parametrize(("argv", "says"), [
    (["scor"], "No such command"),
    (["score", "--bogus"], "No such option"),
    (["score"], "Missing argument"),
    (["report"], "Missing"),
    (["run", "bench", "--out", "o", "--limit", "many"], "Invalid value"),
    (["build", "c9"], "No such component 'c9'; known: c1, c2"),
])
def test_usage_errors_exit_2_with_click_usage(argv: list[str], says: str) -> None:
    result = biovqa(*argv)
    assert result.returncode == 2, result.stderr
    assert says in result.stderr and "Usage:" in result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(("argv", "says"), [
    (["build", "c1", "--catalog", "x.csv", "--backbone", "b", "--images", "i", "--out", "o",
      "--authority", "inaturalist"], "field '--authority': expected NAME=PATH, got 'inaturalist'"),
    (["build", "c1", "--catalog", "x.csv", "--backbone", "b", "--images", "i", "--out", "o",
      "--authority", "inat=x.zip"], "unknown common-name authority 'inat'"),
    (["build", "c3", "--source", "wiad=/x", "--out", "o"], "unknown C3 source 'wiad' (did you mean 'waid'?)"),
    (["build", "c3", "--source", "waid=/x", "--source", "WAID=/y", "--out", "o"],
     "C3 source 'waid' is given twice"),
    (["build", "c4", "--catalog", "zebra=/x", "--embedder", "e", "--out", "o"], "unknown C4 catalog 'zebra'"),
    (["build", "bagel", "--items", "dom=x.jsonl", "--out", "o"], "field '--items': domain 'dom' is not one of"),
    (["score", "b", "-p", "p.parquet", "-o", "s", "-O", "tau"], "field '--option': expected NAME=VALUE"),
    (["score", "b", "-p", "p.parquet", "-o", "s", "-O", "a-b=1", "-O", "a_b=2"], "option 'a_b' is given twice"),
    (["run", "b", "--backend", "echo", "--out", "r", "--option", "delay_s=1", "--option", "delay_s=2"],
     "backend option 'delay_s' is given twice"),
])
def test_name_value_arguments_are_checked_before_anything_is_read(tmp_path: Path, argv: list[str],
                                                                 says: str) -> None:
    """Every ``NAME=VALUE`` option is read by one parser (:mod:`biovqa.arguments`), in the
    caller's words; a bad one is one error line, before any file named in it is opened."""
    result = biovqa(*argv, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert says in result.stderr and "Traceback" not in result.stderr


def test_version_and_module_and_console_script() -> None:
    from biovqa import __version__

    assert biovqa("--version").stdout.strip() == f"biovqa {__version__}"
    script = Path(sys.executable).parent / "biovqa"  # the installed console script
    result = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == f"biovqa {__version__}"
    help_text = biovqa("--help").stdout
    for command in ("build", "audit", "run", "score", "report", "demo", "merge", "plan", "taxonomy"):
        assert command in help_text
    build_help = biovqa("build", "--help").stdout
    assert "c1" in build_help and "c2" in build_help


def test_score_options_are_declared_and_checked(tmp_path: Path, demo_bench: Path) -> None:
    run = biovqa("run", demo_bench, "--backend", "baseline", "--out", tmp_path / "run")
    predictions = tmp_path / "run" / "predictions.parquet"
    unknown = biovqa("score", demo_bench, "-p", predictions, "-o", tmp_path / "s", "-O", "tau=20")
    assert run.returncode == 0 and unknown.returncode == 2
    assert "C1 scoring has no option 'tau'" in unknown.stderr and "epithet_last_word" in unknown.stderr
    typo = biovqa("score", demo_bench, "-p", predictions, "-o", tmp_path / "s", "-O", "bootstrp=10")
    assert typo.returncode == 2 and "no option 'bootstrp' (did you mean 'bootstrap'?)" in typo.stderr
    bad = biovqa("score", demo_bench, "-p", predictions, "-o", tmp_path / "s", "-O", "epithet_last_word=maybe")
    assert bad.returncode == 2 and "takes true or false" in bad.stderr
    assert "tau=<a number>" in biovqa("score", "--help").stdout


# --- nothing of the user's is deleted ---------------------------------------------------------


def test_demo_refuses_a_folder_it_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("keep me")
    result = biovqa("demo", "--out", tmp_path / "mine")
    assert result.returncode == 2 and "not written by `biovqa demo`" in result.stderr
    assert (tmp_path / "mine" / "thesis.tex").read_text() == "keep me"
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["thesis.tex"]


@pytest.mark.slow
def test_demo_reruns_into_its_own_folder_and_keeps_other_files(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    assert biovqa("demo", "--out", out).returncode == 0
    (out / "notes.txt").write_text("mine")
    first = (out / "scores-baseline-c1" / "summary.json").read_bytes()
    again = biovqa("demo", "--out", out)
    assert again.returncode == 0, again.stderr
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "scores-baseline-c1" / "summary.json").read_bytes() == first


def test_sweep_is_the_components_own(tmp_path: Path, demo_bench: Path) -> None:
    from biovqa.synthetic import write_cub

    run = biovqa("run", demo_bench, "--backend", "baseline", "--out", tmp_path / "run")
    predictions = tmp_path / "run" / "predictions.parquet"
    refused = biovqa("score", demo_bench, "-p", predictions, "-p", predictions, "-o", tmp_path / "s", "--sweep")
    assert run.returncode == 0 and refused.returncode == 2
    assert "C1 has no sensitivity sweep" in refused.stderr and "c2" in refused.stderr

    cub = write_cub(tmp_path / "cub", n_classes=4, images_per_class=2, seed=5, image_size=(120, 90))
    assert biovqa("build", "c2", "--cub", cub, "--out", tmp_path / "c2").returncode == 0
    floor = biovqa("run", tmp_path / "c2", "--backend", "baseline", "--out", tmp_path / "floor")
    echo = biovqa("run", tmp_path / "c2", "--backend", "echo", "--out", tmp_path / "echo")
    assert floor.returncode == 0 and echo.returncode == 0
    swept = biovqa("score", tmp_path / "c2", "-p", tmp_path / "floor" / "predictions.parquet",
                   "-p", tmp_path / "echo" / "predictions.parquet", "-o", tmp_path / "sweep", "--sweep",
                   "-O", "sweep_size=50")
    assert swept.returncode == 0, swept.stderr
    import json

    result = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert result["subsample"]["rows"] == 50 and len(result["models"]) == 2
    assert len(result["configs"]) == 11  # the eleven kernel configurations
