"""The component registry: declared options, and components/backends from installed packages
(real ``*.dist-info`` entry points on ``sys.path``, found by importlib.metadata)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from biovqa.components import registry
from biovqa.errors import BiovqaError

PLUGIN = '''
from biovqa.components.registry import Component, Option

COMPONENT = Component(
    name="labx", title="Lab X counting", tasks=("count",), builder="labx_plugin:build",
    build_function="labx_plugin:build", floor="labx_plugin:floor", scorer="labx_plugin:score",
    reporter="labx_plugin:tables", score_options=(Option("tolerance", int, 0, "counts within ±k"),),
    table3=("cnt",))


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
    monkeypatch.setattr(registry, "_LOADED", False)
    yield registry


def test_a_component_from_an_installed_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               fresh_registry) -> None:
    install_plugin(tmp_path, "[biovqa.components]\nlabx = labx_plugin:COMPONENT\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    names = [c.name for c in fresh_registry.list_components()]
    assert names == ["c1", "c2", "c3", "c4", "bagel", "hca", "labx"]  # built-ins first, then plug-ins
    labx = fresh_registry.get_component("labx")
    assert labx.resolve_score_options({"tolerance": "2"})["tolerance"] == 2
    sys.modules.pop("labx_plugin", None)


def test_a_broken_plugin_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry) -> None:
    install_plugin(tmp_path, "[biovqa.components]\nlabx = labx_plugin:NOT_THERE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(BiovqaError, match="plug-in 'labx'"):
        fresh_registry.list_components()
    sys.modules.pop("labx_plugin", None)


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
