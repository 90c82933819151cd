import biovqa


def test_public_api_is_pinned() -> None:
    assert biovqa.__all__ == [
        "AuditError", "Bench", "BiovqaError", "Component", "InputFormatError", "Item",
        "MissingResourceError", "Prediction", "ScoreResult", "__version__", "audit", "build",
        "components", "get_component", "open_bench", "report", "run", "score",
    ]
    for name in biovqa.__all__:
        assert hasattr(biovqa, name), name


def test_import_is_light() -> None:
    import subprocess
    import sys

    code = "import sys, biovqa, biovqa.cli; print(sorted(m for m in ('torch','transformers','vllm','ray','openai') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
