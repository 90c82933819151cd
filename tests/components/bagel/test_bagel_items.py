"""The BAGEL loader: every form bagel.md §9.1 accepts and the row-level errors of §9.2."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from fixtures.bagel_items import APPENDIX_B, write_jsonl

from biovqa.components.bagel.items import load_items
from biovqa.errors import InputFormatError


def test_every_accepted_form_loads_to_the_same_gold(tmp_path: Path) -> None:
    items = load_items([write_jsonl(tmp_path / "all.jsonl", APPENDIX_B)])
    assert [item.item_id for item in items] == [row["id"] for row in APPENDIX_B]
    # letter in a dict, text in a list, index in a list, text under correct_answer, letter in a list
    assert [item.gold_letter for item in items] == ["B", "B", "A", "A", "B"]
    assert [item.domain for item in items] == ["Wikipedia", "Wikipedia", "GloBI", "bioRxiv", "Xeno-canto"]
    assert items[3].dimension == "Result Interpretation"  # the source schema's trailing space stripped
    assert items[0].options[1] == "Phoenicoparrus andinus" and items[0].tier == "easy"
    assert items[2].meta == {"scientific_name": "Pearsonema plica", "taxon_class": "Enoplea"}


def test_domain_aliases_and_a_domain_given_with_the_file(tmp_path: Path) -> None:
    rows = [{k: v for k, v in APPENDIX_B[0].items() if k != "domain"}]
    items = load_items([f"Wiki={write_jsonl(tmp_path / 'wiki.jsonl', rows)}"])
    assert items[0].domain == "Wikipedia"
    for alias, name in [("wiki", "Wikipedia"), ("XENO-CANTO", "Xeno-canto"), ("biorxiv", "bioRxiv")]:
        row = dict(APPENDIX_B[0], domain=alias)
        assert load_items([write_jsonl(tmp_path / f"{alias}.jsonl", [row])])[0].domain == name


def test_extra_fields_join_meta_and_a_missing_id_comes_from_file_and_line(tmp_path: Path) -> None:
    row = {k: v for k, v in APPENDIX_B[1].items() if k != "id"} | {"taxon_order": "Phoenicopteriformes"}
    item = load_items([write_jsonl(tmp_path / "wiki.jsonl", ["", row])])[0]
    assert item.item_id == "wiki-000002"
    assert item.meta["taxon_order"] == "Phoenicopteriformes"


def _broken(change: dict[str, Any], drop: str | None = None) -> dict[str, Any]:
    row = copy.deepcopy(APPENDIX_B[1]) | change
    if drop:
        row.pop(drop)
    return row


@pytest.mark.parametrize(("row", "field", "message"), [
    (_broken({"options": ["Chirp", "Peep", "Whistle"]}), "options", "options must be 4"),
    (_broken({"options": ["Chirp", "Peep", "Peep", "Growl"]}), "options", "not distinct"),
    (_broken({"options": ["Chirp", " ", "Whistle", "Growl"]}), "options", "option B is empty"),
    (_broken({"options": {"A": "x", "B": "y", "C": "z", "E": "w"}}), "options", "exactly the keys"),
    (_broken({"answer": "Hoot"}), "answer", "matches no option"),
    (_broken({"answer": 4}), "answer", "not in 0–3"),
    (_broken({"answer": True}), "answer", "not a letter"),
    (_broken({}, drop="answer"), "answer", "no gold answer"),
    (_broken({"correct_answer": "A"}), "answer", "disagree"),
    (_broken({"domain": "Reddit"}), "domain", "not one of"),
    (_broken({}, drop="domain"), "domain", "no domain"),
    (_broken({"level": "trivial"}), "level", "not one of easy, medium, hard"),
    (_broken({"question": ""}), "question", "empty"),
    (_broken({"meta": ["x"]}), "meta", "JSON object"),
])
def test_bad_rows_name_file_line_and_field(tmp_path: Path, row: dict, field: str, message: str) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [APPENDIX_B[0], row])
    with pytest.raises(InputFormatError) as caught:
        load_items([path])
    error = caught.value
    assert (error.file, error.row, error.field) == (str(path), 2, field)
    assert message in error.message


def test_gold_text_matching_two_options_is_refused(tmp_path: Path) -> None:
    row = _broken({"options": ["Peep", "peep", "Whistle", "Growl"], "answer": "Whistle "})
    assert load_items([write_jsonl(tmp_path / "ok.jsonl", [row])])[0].gold_letter == "C"
    with pytest.raises(InputFormatError, match="not a letter A–D"):
        load_items([write_jsonl(tmp_path / "bad.jsonl", [_broken({"answer": "Hoot"})])])


def test_bad_json_repeated_ids_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(InputFormatError, match="not valid JSON") as caught:
        load_items([write_jsonl(tmp_path / "a.jsonl", [APPENDIX_B[0], "{oops"])])
    assert caught.value.row == 2
    with pytest.raises(InputFormatError, match="repeats") as caught:
        load_items([write_jsonl(tmp_path / "b.jsonl", [APPENDIX_B[0], APPENDIX_B[0]])])
    assert caught.value.field == "id"
    with pytest.raises(InputFormatError, match="no such item file"):
        load_items([tmp_path / "absent.jsonl"])
