"""English common names (components.md §1.5): triage, Backbone replacement, overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.taxonomy.english import (
    english_common_names,
    english_word_share,
    english_words,
    passes_gate,
    read_overrides,
    triage_common_name,
)
from biovqa.taxonomy.index import TaxonomyIndex, build_index
from fixtures.dwca import example_backbone


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TaxonomyIndex:
    root = tmp_path_factory.mktemp("english")
    build_index(example_backbone(root / "backbone"), root / "index")
    return TaxonomyIndex.open(root / "index")


def test_word_list_is_bundled() -> None:
    words = english_words()
    assert 70_000 < len(words) < 80_000
    assert {"norway", "spruce", "frog", "warbler", "grey", "gray"} <= words
    assert "gran" not in words


@pytest.mark.parametrize(
    ("name", "verdict"),
    [
        ("gran", "not_english"),  # Swedish (Picea abies)
        ("åkergroda", "non_ascii"),  # Swedish (Rana arvalis)
        ("Spidssnudet frø", "non_ascii"),  # Danish
        ("Rød-Gran", "non_ascii"),
        ("Norway spruce", "word_list"),
        ("Moor frog", "word_list"),
        ("Eastern White Oak", "word_list"),
        ("green treefrog", "word_list"),  # 1 of 2 tokens is a word: share 0.5 ≥ 0.5
        ("Cooper's Hawk", "word_list"),
        ("grey herons", "word_list"),  # plural of a listed word
        ("Trädgårdsmyra", "non_ascii"),
        ("Gewone dennenwants", "not_english"),  # Dutch, ASCII
        ("", "empty"),
        (None, "empty"),
    ],
)
def test_triage(name: str | None, verdict: str) -> None:
    assert triage_common_name(name) == verdict


def test_word_share() -> None:
    assert english_word_share("green treefrog") == pytest.approx(0.5)
    assert english_word_share("Norway spruce") == pytest.approx(1.0)
    assert english_word_share("123") == 0.0


def test_paper_examples_are_replaced_from_the_backbone(index: TaxonomyIndex) -> None:
    names, sources = english_common_names(
        ["gran", "åkergroda", "Spidssnudet frø", "green treefrog", "Eastern White Oak"],
        ["Picea abies", "Rana arvalis", "Rana arvalis", "Dryophytes cinereus", "Quercus alba"],
        index, None)
    assert names == ["Norway spruce", "Moor frog", "Moor frog", "green treefrog", "Eastern White Oak"]
    assert sources == ["gbif_en", "gbif_en", "gbif_en", "catalog", "catalog"]


def test_language_tag_in_the_backbone_decides_first(index: TaxonomyIndex) -> None:
    # "puma" is tagged en for Puma concolor (also de) → accepted as given
    names, sources = english_common_names(["puma", "common spruce"], ["Puma concolor", "Picea abies"],
                                          index, None)
    assert (names, sources) == (["puma", "common spruce"], ["catalog", "catalog"])


def test_synonym_species_follow_to_the_accepted_name(index: TaxonomyIndex) -> None:
    names, sources = english_common_names([None, "Pinus abies"], ["Hyla cinerea", "Pinus abies"],
                                          index, None)
    assert names == ["green treefrog", "Norway spruce"]
    assert sources == ["gbif_en", "gbif_en"]


def test_unresolved_without_english_anywhere(index: TaxonomyIndex) -> None:
    names, sources = english_common_names(["kattdjur", float("nan")], ["Felis catus", "Unknown species"],
                                          index, None)
    assert names == [None, None]
    assert sources == ["unresolved", "unresolved"]


def test_without_index_rejected_names_are_unresolved() -> None:
    names, sources = english_common_names(["gran", "Norway spruce"], ["Picea abies", "Picea abies"],
                                          None, None)
    assert names == [None, "Norway spruce"]
    assert sources == ["unresolved", "catalog"]


def _write_csv(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_override_wins_over_catalog_and_backbone(tmp_path: Path, index: TaxonomyIndex) -> None:
    overrides = _write_csv(tmp_path / "names.csv",
                           "scientific_name,common_name,source\n"
                           "Picea abies,European spruce,Flora Europaea\n"
                           "Felis catus,domestic cat,MSW3\n"
                           "\n"
                           "Dryophytes cinereus,\"Green Tree Frog, the\",x\n")
    names, sources = english_common_names(
        ["gran", "house cat", "kattdjur", "green treefrog"],
        ["Picea abies", "Felis catus", "Felis catus", "Hyla cinerea"],
        index, overrides)
    assert names == ["European spruce", "domestic cat", "domestic cat", "Green Tree Frog, the"]
    assert sources == ["override"] * 4  # Hyla cinerea: override given for its accepted name


@pytest.mark.parametrize(
    ("text", "row", "field", "message"),
    [
        ("scientific,common_name\nPicea abies,x\n", 1, "scientific_name", "missing column"),
        ("scientific_name,common_name\nPicea abies,\n", 2, "common_name", "empty value"),
        ("scientific_name,common_name\n,spruce\n", 2, "scientific_name", "empty value"),
        ("scientific_name,common_name\nPicea abies,a\nFelis catus,b\nPicea  abies,c\n", 4,
         "common_name", "second, different"),
        ("scientific_name,common_name\nPicea abies,a,extra\n", 2, None, "expected 2 fields"),
        ("", 1, None, "empty file"),
    ],
)
def test_override_csv_errors(tmp_path: Path, text: str, row: int, field: str | None,
                             message: str) -> None:
    path = _write_csv(tmp_path / "names.csv", text)
    with pytest.raises(InputFormatError, match=message) as caught:
        read_overrides(path)
    assert caught.value.row == row
    assert caught.value.field == field
    assert caught.value.file == str(path)


def test_override_file_missing(tmp_path: Path) -> None:
    with pytest.raises(MissingResourceError):
        read_overrides(tmp_path / "none.csv")


def test_repeated_identical_override_is_fine(tmp_path: Path) -> None:
    path = _write_csv(tmp_path / "n.csv", "scientific_name,common_name\nPicea abies,x\nPicea abies,x\n")
    assert read_overrides(path) == {"picea abies": "x"}


@pytest.mark.parametrize(
    ("candidate", "passes"),
    [("Norway spruce", True), ("Picea abies", False), ("abies", False), ("spruce species", False),
     ("Picea sp.", False), ("", False), ("puma", True)],
)
def test_gate(candidate: str, passes: bool) -> None:
    assert passes_gate(candidate, ["Picea abies", "Puma concolor"]) is passes


def test_length_mismatch() -> None:
    with pytest.raises(ValueError):
        english_common_names(["a"], [], None, None)
