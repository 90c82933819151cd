"""The component registry: declared options, and components/backends from installed packages
(real ``*.dist-info`` entry points on ``sys.path``, found by importlib.metadata)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from biovqa.components import registry
from biovqa.errors import BiovqaError
from fixtures.cli_runner import cli

PLUGIN = '''
from biovqa.components.registry import Command, Component, Option

COMPONENT = Component(
    name="labx", title="Lab X counting", tasks=("count",), builder="labx_plugin:build",
    build_function="labx_plugin:build", floor="labx_plugin:floor", scorer="labx_plugin:score",
    reporter="labx_plugin:tables", score_options=(Option("tolerance", int, 0, "counts within ±k"),),
    table3=("cnt",), commands=(Command("labx-calibrate", "labx_plugin:calibrate", "calibrate the counter"),
                               Command("labx-ceiling", "labx_plugin:calibrate", "a ceiling", group="specialist")))


def calibrate(strength: int = 1) -> None:
    """Calibrate Lab X's counter."""
    import sys

    print(f"calibrated at {strength}", file=sys.stderr)


def create(model, **options):
    return ("labx backend", model, options)
'''


def install_plugin(root: Path, entry_points: str) -> None:
    """A minimal installed distribution: a module plus its dist-info with entry_points.txt."""
    (root / "labx_plugin.py").write_text(PLUGIN)
    info = root / "labx_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: labx-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.fixture()
def fresh_registry(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_OPTIONAL_ROLES_PENDING", set())
    monkeypatch.setattr(registry, "_BROKEN", {})
    monkeypatch.setattr(registry, "_LOADED", False)
    yield registry


def test_a_component_from_an_installed_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               fresh_registry, capsys: pytest.CaptureFixture[str]) -> None:
    install_plugin(tmp_path, "[biovqa.components]\nlabx = labx_plugin:COMPONENT\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    names = [c.name for c in fresh_registry.list_components()]
    assert names == ["c1", "c2", "c3", "c4", "bagel", "hca", "labx"]  # built-ins first, then plug-ins
    labx = fresh_registry.get_component("labx")
    assert labx.resolve_score_options({"tolerance": "2"})["tolerance"] == 2
    # the commands it declares join the command line (loaded when asked for by name)
    assert cli(["labx-calibrate", "--strength", "3"], capsys) == (0, "calibrated at 3")
    assert cli(["specialist", "labx-ceiling"], capsys) == (0, "calibrated at 1")
    sys.modules.pop("labx_plugin", None)


def test_a_component_reads_its_own_sources_only_when_asked_for(
        fresh_registry, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asking for one component (``biovqa score`` on C1) looks up that component's optional roles
    alone; every other component's are found when it is first handed out, the same as when
    every role is spelled out at once."""
    read: list[str] = []
    original = registry._top_level_names

    def recording(module: str) -> frozenset[str]:
        read.append(module)
        return original(module)

    monkeypatch.setattr(registry, "_top_level_names", recording)
    c1 = fresh_registry.get_component("c1")
    assert read and all(module.startswith("biovqa.components.c1.") for module in read)
    assert c1.preparer == "biovqa.components.c1.score:prepare" and c1.figures == "biovqa.components.c1.report:figures"
    listed = fresh_registry.list_components()
    assert {module.split(".")[2] for module in read} == {"c1", "c2", "c3", "c4", "bagel", "hca"}
    for component in listed:
        assert component == registry._builtin_declarations()[[c.name for c in listed].index(component.name)]
    read.clear()
    fresh_registry.get_component("c2")
    assert read == []  # found once


def test_a_broken_plugin_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry) -> None:
    install_plugin(tmp_path, "[biovqa.components]\nlabx = labx_plugin:NOT_THERE\nlaby = labx_plugin:create\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(registry.PluginWarning) as caught:
        names = [c.name for c in fresh_registry.list_components()]
    assert names == ["c1", "c2", "c3", "c4", "bagel", "hca"]  # the built-ins still load
    said = sorted(str(w.message) for w in caught)
    assert len(said) == 2
    assert said[0].startswith("the component plug-in 'labx' (labx_plugin:NOT_THERE, entry-point group "
                              "biovqa.components) failed to load: AttributeError:")
    assert "'laby' (labx_plugin:create" in said[1] and "is a function, not a biovqa Component" in said[1]
    assert all("fix or uninstall the package" in line and "\n" not in line for line in said)
    with pytest.raises(BiovqaError, match="plug-in 'labx'"):
        fresh_registry.get_component("labx")
    assert set(fresh_registry.plugin_errors()) == {"labx", "laby"}
    sys.modules.pop("labx_plugin", None)


BROKEN_ON_IMPORT = "raise RuntimeError('labx needs a licence server\\nsecond line of detail')\n"


def test_a_broken_plugin_leaves_every_other_command_working(tmp_path: Path, demo_bench: Path) -> None:
    """The user's path: an installed distribution whose component and backend modules raise on
    import, and one whose object is not a Component; ``biovqa`` in a subprocess."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    site = tmp_path / "site"
    site.mkdir()
    install_plugin(site, "[biovqa.components]\nlabx = labx_broken:COMPONENT\nlaby = labx_plugin:create\n"
                         "[biovqa.backends]\nlabx-api = labx_broken:create\n")
    (site / "labx_broken.py").write_text(BROKEN_ON_IMPORT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}

    def biovqa(*args: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "biovqa", *map(str, args)], capture_output=True,
                              text=True, env=env, timeout=300)

    version = biovqa("--version")
    assert version.returncode == 0 and version.stdout.startswith("biovqa "), version.stderr
    assert version.stderr == ""  # --version loads no component, so nothing to warn about
    top_help = biovqa("--help")
    assert top_help.returncode == 0 and "score" in top_help.stdout, top_help.stderr
    assert top_help.stderr == ""  # the command list reads the built-in declarations only
    c4_help = biovqa("c4", "--help")  # a built-in component's own command, declared
    assert c4_help.returncode == 0 and "embed" in c4_help.stdout and c4_help.stderr == "", c4_help.stderr
    score_help = biovqa("score", "--help")
    assert score_help.returncode == 0 and "tau=<a number>" in score_help.stdout, score_help.stderr

    items = pq.read_table(demo_bench / "items.parquet", columns=["item_id"])
    predictions = tmp_path / "predictions.parquet"
    pq.write_table(pa.table({"item_id": items["item_id"], "response": ["Animalia"] * items.num_rows}),
                   predictions)
    scored = biovqa("score", demo_bench, "-p", predictions, "-o", tmp_path / "scores", "--bootstrap", "0")
    assert scored.returncode == 0, scored.stderr
    assert (tmp_path / "scores" / "summary.json").is_file()
    warnings = [line for line in scored.stderr.splitlines() if line.startswith("warning: the component plug-in")]
    assert warnings == [
        "warning: the component plug-in 'labx' (labx_broken:COMPONENT, entry-point group biovqa.components) "
        "failed to load: RuntimeError: labx needs a licence server; fix or uninstall the package that "
        "provides it (`pip show` names it)",
        "warning: the component plug-in 'laby' (labx_plugin:create, entry-point group biovqa.components) "
        "is a function, not a biovqa Component; fix or uninstall the package that provides it "
        "(`pip show` names it)",
    ]
    build = biovqa("build", "labx", "--help")
    assert build.returncode == 2 and "error: the component plug-in 'labx'" in build.stderr
    backend = biovqa("run", demo_bench, "--backend", "labx-api", "--model", "m", "--out", tmp_path / "run")
    assert backend.returncode == 2
    assert "backend 'labx-api' (labx_broken:create) failed to load: RuntimeError: labx needs a licence server" \
        in backend.stderr
    for result in (version, top_help, c4_help, score_help, scored, build, backend):
        assert "Traceback" not in result.stdout + result.stderr


def test_a_backend_from_an_installed_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from biovqa.engine.backends import available_backends, create_backend

    install_plugin(tmp_path, "[biovqa.backends]\nlabx = labx_plugin:create\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert available_backends()["labx"] == "labx_plugin:create"
    assert create_backend("labx", "tiny", temperature=0) == ("labx backend", "tiny", {"temperature": 0})
    sys.modules.pop("labx_plugin", None)


def test_score_options_are_typed_and_checked() -> None:
    c2 = registry.get_component("c2")
    resolved = c2.resolve_score_options({"tau": "20", "prefer_text": "yes", "bootstrap": 0})
    assert resolved["tau"] == 20.0 and resolved["prefer_text"] is True and resolved["bootstrap"] == 0
    assert resolved["alpha"] == 0.5  # defaults filled in
    with pytest.raises(BiovqaError, match="no option 'epithet_last_word'"):
        c2.resolve_score_options({"epithet_last_word": True})
    with pytest.raises(BiovqaError, match="one of exponential, linear"):
        c2.resolve_score_options({"colour_kernel": "cubic"})
    with pytest.raises(BiovqaError, match=r"must lie in \[0.0, 1.0\]"):
        c2.resolve_score_options({"alpha": 2})
    with pytest.raises(BiovqaError, match="a whole number"):
        c2.resolve_score_options({"bootstrap": "ten"})


def test_registering_a_name_twice_is_an_error() -> None:
    with pytest.raises(BiovqaError, match="already registered"):
        registry.register(registry.get_component("c1"))


def test_every_role_of_every_registered_component_resolves() -> None:
    """Each role of each registered component, found by convention or named, imports: the
    callables are callable, ``task_specs`` is the tuple of the component's spec records."""
    for component in registry.list_components():
        roles = [*registry.ROLE_CONVENTIONS,
                 *(r for r in (*registry.OPTIONAL_ROLE_CONVENTIONS, "figures") if getattr(component, r))]
        for role in roles:
            loaded = component.load(role)
            if role == "task_specs":  # one frozen spec record per task, in the declaration's order
                assert tuple(spec.name for spec in loaded) == component.tasks, component.name
            else:
                assert callable(loaded), (component.name, role)
        for command in component.commands:
            module, _, attribute = command.target.partition(":")
            assert hasattr(importlib.import_module(module), attribute), (component.name, command)
    by_name = {c.name: c for c in registry.list_components()}
    assert by_name["c2"].scorer == "biovqa.components.c2.score:score"
    assert by_name["hca"].build_function == "biovqa.components.hca.build:build_hca"
    assert by_name["c2"].sweep == "biovqa.components.c2.sweep:run_sweep" and by_name["c1"].sweep is None
    assert [c.name for c in registry.list_components() if c.rank_inputs] == ["c1", "c2", "c3", "c4"]
    assert by_name["c2"].figures == "biovqa.components.c2.report:figures"  # beside the reporter
    # the scorer's preparer, beside it where its module defines ``prepare``
    assert [c.name for c in registry.list_components() if c.preparer] == ["c1", "c2", "c3"]
    assert by_name["c1"].preparer == "biovqa.components.c1.score:prepare"


def test_a_role_module_without_the_role_is_not_taken_for_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry) -> None:
    """A convention's module is chosen only where it defines the attribute (read from its
    source, without importing it): an ``audit.py`` of helpers is no auditor."""
    package = tmp_path / "labw_bench"
    package.mkdir()
    files = {"__init__.py": "from biovqa.components.registry import Component\n"
                            "COMPONENT = Component(name='labw', title='Lab W', tasks=('t',))\n",
             "build.py": "def build_command(out): ...\ndef build_labw(out): ...\n",
             "floor.py": "from labw_bench.rules import floor_responses\n",
             "rules.py": "def floor_responses(items): return 'floor'\n",
             "score.py": "score = print\n", "report.py": "def tables(summaries): ...\n",
             "audit.py": "raise RuntimeError('never imported to list the roles')\ndef helper(): ...\n",
             "tasks.py": "TASKS: tuple = ('t',)\n"}
    for name, text in files.items():
        (package / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    labw = fresh_registry.register(registry.Component(name="labw", title="Lab W", tasks=("t",),
                                                      package="labw_bench"))
    assert (labw.floor, labw.scorer, labw.auditor, labw.task_specs, labw.demo) == (
        "labw_bench.floor:floor_responses", "labw_bench.score:score", None, "labw_bench.tasks:TASKS", None)
    assert labw.load("floor")(None) == "floor" and labw.load("task_specs") == ("t",)
    for name in [m for m in sys.modules if m == "labw_bench" or m.startswith("labw_bench.")]:
        sys.modules.pop(name)


def test_options_are_resolved_once_into_a_frozen_record() -> None:
    c3 = registry.get_component("c3")
    options = c3.resolve_score_options({"vas_weights": "1, 0.5,0,0,0", "bootstrap": "7"})
    assert options.vas_weights == (1.0, 0.5, 0.0, 0.0, 0.0) and options.bootstrap == 7
    assert options["bootstrap"] == 7 and dict(options)["seed"] == 42  # read as a mapping too
    assert c3.resolve_score_options(options) is options  # a record passes through unchanged
    assert options.replace(bootstrap=0).bootstrap == 0 and options.bootstrap == 7
    with pytest.raises(AttributeError):
        options.bootstrap = 3  # type: ignore[misc]
    assert options.as_json()["vas_weights"] == [1.0, 0.5, 0.0, 0.0, 0.0]
    import copy
    import pickle

    for copied in (pickle.loads(pickle.dumps(options)), copy.deepcopy(options)):
        assert type(copied) is type(options) and dict(copied) == dict(options)
    for bad, says in (("1,2,0,0,0", r"must lie in \[0.0, 1.0\] \(each number\)"),
                      ("1,0,0", "takes 5 comma-separated numbers, got 3"),
                      ("1,x,0,0,0", "takes 5 comma-separated numbers"),
                      ("0.5,0,0,0,0", "an exact viewpoint .* earns 1")):
        with pytest.raises(BiovqaError, match=says):
            c3.resolve_score_options({"vas_weights": bad})
    seen: list[object] = []
    scorer = registry.Component(name="c3", title="", tasks=(), scorer="builtins:print")._with_resolved_options(
        lambda bench, predictions, options: seen.append(options))
    scorer(None, None, {"bootstrap": "3"})
    assert type(seen[0]).__name__ == "C3ScoreOptions" and seen[0].bootstrap == 3  # type: ignore[attr-defined]


def test_a_bad_list_option_is_refused_before_the_predictions_are_read(
        tmp_path: Path, demo_bench: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``biovqa score`` of a C3 benchmark (its items are not read before the options either)."""
    import pyarrow.parquet as pq

    from biovqa.bench.folder import write_bench

    bench = tmp_path / "bench"
    write_bench(bench, pq.read_table(demo_bench / "items.parquet").slice(0, 3), component="c3",
                generator="tests", seed=0, sources={}, parameters={})
    code, err = cli(["score", bench, "-p", tmp_path / "no-such-predictions.parquet", "-o", tmp_path / "scores",
                     "-O", "vas_weights=1,0.25,0.1"], capsys)
    assert code == 2 and "vas_weights" in err and "takes 5 comma-separated numbers, got 3" in err, err
    assert "no-such-predictions" not in err  # refused before the predictions file was looked at


def test_the_confidence_option_sets_every_interval_and_is_recorded_as_confidence(
        tmp_path: Path, demo_bench: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--confidence`` (or ``-O confidence=``) is the intervals' confidence level; ``level`` is no
    score option (in biovqa a level is a level of a hierarchy)."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    items = pq.read_table(demo_bench / "items.parquet", columns=["item_id", "answer"]).to_pylist()
    predictions = tmp_path / "predictions.parquet"
    replies = [item["answer"] if k % 2 else "no idea" for k, item in enumerate(items)]  # half right
    pq.write_table(pa.table({"item_id": [item["item_id"] for item in items], "response": replies}), predictions)
    summaries = {}
    for confidence, flags in ((0.5, ["--confidence", "0.5"]), (0.95, ["-O", "confidence=0.95"])):
        out = tmp_path / f"scores-{confidence}"
        code, err = cli(["score", demo_bench, "-p", predictions, "-o", out, "--bootstrap", "200", *flags], capsys)
        assert code == 0, err
        assert f"{100 * confidence:g} % interval" in err  # the headline table names its confidence
        summaries[confidence] = json.loads((out / "summary.json").read_text())
    for confidence, summary in summaries.items():
        assert summary["options"]["confidence"] == summary["bootstrap"]["confidence"] == confidence
        assert "level" not in summary["options"] and "level" not in summary["bootstrap"]
    narrow, wide = summaries[0.5]["table3"]["phy"], summaries[0.95]["table3"]["phy"]
    assert narrow["value"] == wide["value"] and wide["lo"] <= narrow["lo"] <= narrow["hi"] <= wide["hi"]
    assert wide["hi"] - wide["lo"] > narrow["hi"] - narrow["lo"]
    code, err = cli(["score", demo_bench, "-p", predictions, "-o", tmp_path / "refused", "-O", "level=0.9"], capsys)
    assert code == 2 and "no option 'level'" in err, err
    code, err = cli(["score", demo_bench, "-p", predictions, "-o", tmp_path / "refused", "--confidence", "90"], capsys)
    assert code == 2 and "must lie in [0.5, 0.999]" in err and "a fraction: 0.9 for 90%" in err, err


CONVENTIONAL_PLUGIN = {
    "__init__.py": "from biovqa.components.registry import Component\n"
                   "COMPONENT = Component(name='labz', title='Lab Z', tasks=('t',),\n"
                   "                      scorer='labz_bench.scoring:run')\n",
    "build.py": "def build_command(out): ...\ndef build_labz(out): ...\n",
    "floor.py": "def floor_responses(items): ...\n",
    "scoring.py": "def run(bench, predictions, options): ...\n",
    "sweep.py": "def run_sweep(bench, by_model, options): return {}\n",
}


def test_a_plugin_package_is_found_by_convention_with_one_override(  # its report.py is missing
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry) -> None:
    package = tmp_path / "labz_bench"
    package.mkdir()
    for name, text in CONVENTIONAL_PLUGIN.items():
        (package / name).write_text(text)
    info = tmp_path / "labz_bench-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: labz-bench\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[biovqa.components]\nlabz = labz_bench:COMPONENT\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    labz = fresh_registry.get_component("labz")
    assert (labz.builder, labz.build_function, labz.floor, labz.scorer, labz.sweep, labz.auditor) == (
        "labz_bench.build:build_command", "labz_bench.build:build_labz", "labz_bench.floor:floor_responses",
        "labz_bench.scoring:run", "labz_bench.sweep:run_sweep", None)
    assert labz.load("sweep")(None, {}, {}) == {}
    with pytest.raises(BiovqaError, match=r"its reporter labz_bench.report:tables cannot be loaded: "
                                          r"module 'labz_bench.report' does not exist"):
        labz.load("reporter")
    for name in [m for m in sys.modules if m == "labz_bench" or m.startswith("labz_bench.")]:
        sys.modules.pop(name)


def test_a_deferred_summary_is_aggregated_once_and_its_resources_released_once() -> None:
    """ScoreResult(aggregate=…): the summary is computed on its first read (biovqa score writes
    the per-item table meanwhile), release runs once after it, or from close when it is never read."""
    import pyarrow as pa

    from biovqa.components.registry import ScoreResult

    calls: list[str] = []
    table = pa.table({"item_id": ["a"]})

    def aggregate() -> dict:
        calls.append("aggregate")
        return {"n": 1}

    result = ScoreResult(items=table, aggregate=aggregate, release=lambda: calls.append("release"))
    assert calls == []
    assert result.summary == {"n": 1} and result.summary == {"n": 1}
    result.close()
    assert calls == ["aggregate", "release"]

    with ScoreResult(items=table, aggregate=aggregate, release=lambda: calls.append("closed unread")):
        pass
    assert calls[-1] == "closed unread" and calls.count("aggregate") == 1

    def failing() -> dict:
        raise ValueError("the bootstrap failed")

    broken = ScoreResult(items=table, aggregate=failing, release=lambda: calls.append("released after failure"))
    with pytest.raises(ValueError, match="bootstrap failed"):
        broken.summary
    assert calls[-1] == "released after failure"
    with pytest.raises(RuntimeError, match="aggregation failed"):
        broken.summary
    with pytest.raises(TypeError, match="summary or an aggregate"):
        ScoreResult(items=table, summary={"n": 1}, aggregate=aggregate)
    with pytest.raises(TypeError, match="summary or an aggregate"):
        ScoreResult(items=table)
