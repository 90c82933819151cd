"""The public API changes only on purpose: ``__all__`` is pinned and nothing else public leaks."""

import subprocess
import sys
import types

import biovqa

PUBLIC = [
    "AuditError", "Bench", "BiovqaError", "Component", "InputFormatError", "Item",
    "MissingResourceError", "ScoreResult", "__version__", "audit", "build", "get_component",
    "list_components", "open_bench", "report", "run", "score",
]


def test_public_api_is_pinned() -> None:
    assert biovqa.__all__ == PUBLIC
    for name in biovqa.__all__:
        assert hasattr(biovqa, name), name


def test_no_stray_public_names() -> None:
    """Every public attribute of the package is in ``__all__`` or is one of its subpackages."""
    stray = [name for name, value in vars(biovqa).items()
             if not name.startswith("_") and name not in biovqa.__all__
             and not isinstance(value, types.ModuleType) and name != "annotations"]
    assert stray == []


def test_api_functions_are_not_shadowed_by_subpackages() -> None:
    """Importing every stage keeps biovqa.build/run/score/report the API functions."""
    import biovqa.bench.audit  # noqa: F401
    import biovqa.components.c1.build  # noqa: F401
    import biovqa.components.c2.score  # noqa: F401
    import biovqa.engine.runner  # noqa: F401
    import biovqa.reporting.writer  # noqa: F401
    import biovqa.scoring.pipeline  # noqa: F401

    for name in ("audit", "build", "run", "score", "report", "list_components", "get_component"):
        assert callable(getattr(biovqa, name)) and not isinstance(getattr(biovqa, name), types.ModuleType), name


def test_import_is_light() -> None:
    code = ("import sys, biovqa, biovqa.cli.main; "
            "print(sorted(m for m in ('torch','transformers','vllm','ray','openai','pandas','PIL',"
            "'matplotlib','biovqa.components.c1.build','biovqa.components.c2.build') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_help_imports_nothing_heavy() -> None:
    code = ("import sys\nfrom biovqa.cli.main import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('pandas','PIL','matplotlib','biovqa.components.c1.build',"
            "'biovqa.components.c2.build') if m in sys.modules), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stderr.strip().splitlines()[-1] == "[]"
    assert "score" in out.stdout and "build" in out.stdout
