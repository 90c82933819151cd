"""``biovqa taxonomy index`` and ``biovqa taxonomy lookup``."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from biovqa.cli.taxonomy import register
from biovqa.errors import MissingResourceError
from fixtures.dwca import example_backbone


@pytest.fixture()
def app() -> typer.Typer:
    taxonomy_app = typer.Typer()
    register(taxonomy_app)
    return taxonomy_app


def test_index_then_lookup(tmp_path: Path, app: typer.Typer) -> None:
    runner = CliRunner()
    backbone = example_backbone(tmp_path / "backbone", as_zip=True)
    result = runner.invoke(app, ["index", str(backbone), "--out", str(tmp_path / "index")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "index" / "index.json").is_file()
    assert "rows/s" in result.output and "index written" in result.output

    result = runner.invoke(app, ["lookup", str(tmp_path / "index"), "Reptilia", "The species is Hyla cinerea.",
                                 "a small brown bird"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for expected in ("Squamata", "Testudines", "Crocodylia", "Sphenodontia", "Dryophytes cinereus",
                     "green treefrog", "not in the Backbone"):
        assert expected in result.output


def test_lookup_without_index_raises_with_hint(tmp_path: Path, app: typer.Typer) -> None:
    result = CliRunner().invoke(app, ["lookup", str(tmp_path / "missing"), "Anura"])
    assert isinstance(result.exception, MissingResourceError)
    assert "biovqa taxonomy index BACKBONE --out INDEX" in str(result.exception)


def test_full_cli_exits_cleanly_on_missing_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from biovqa.cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(["taxonomy", "lookup", str(tmp_path / "missing"), "Anura"])
    assert exited.value.code == 2
    assert "taxonomy index not found" in capsys.readouterr().err
