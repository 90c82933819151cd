"""The cached Backbone index: the synonym relation S of EM_soft (metrics.md §2.2), determinism,
zip/folder equality, bad input, English vernaculars."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.sources.gbif import read_taxa
from biovqa.taxonomy.index import TaxonomyIndex, build_index
from biovqa.taxonomy.index_format import NAMES_FILE, TARGET_COLUMNS, TAXA_FILE, VERNACULARS_FILE
from biovqa.text import normalize_c1
from fixtures.dwca import example_backbone, example_taxa, example_vernaculars, taxon, write_backbone

#: a real GBIF Backbone Taxonomy slice (kingdom Archaea, 2019-09-16; its README says where from)
ARCHAEA = Path(__file__).resolve().parents[1] / "data" / "gbif_backbone_archaea_2019"
PARTS = (TAXA_FILE, NAMES_FILE, VERNACULARS_FILE)


@pytest.fixture(scope="module")
def example_index(tmp_path_factory: pytest.TempPathFactory) -> TaxonomyIndex:
    root = tmp_path_factory.mktemp("example")
    build_index(example_backbone(root / "backbone"), root / "index")
    return TaxonomyIndex.open(root / "index")


def _targets(index: TaxonomyIndex, name: str) -> set[str]:
    table = index.accepted_targets([normalize_c1(name)])
    return set(table.column("accepted").to_pylist())


# metrics.md §2.2, table after Eq. 7: gold y, answer ŷ, S(ŷ), EM, EM_soft
EM_SOFT_TABLE = [
    ("Squamata", "Reptilia", {"Squamata", "Testudines", "Crocodylia", "Sphenodontia"}, 0, 1),
    ("Squamata", "Crocodylia", {"Crocodylia"}, 0, 0),
    ("Puma concolor", "Felis concolor", {"Puma concolor"}, 0, 1),
    ("Dryophytes cinereus", "Hyla cinerea", {"Dryophytes cinereus"}, 0, 1),
]


@pytest.mark.parametrize(("gold", "answer", "expected_set", "em", "em_soft"), EM_SOFT_TABLE)
def test_em_soft_table(example_index: TaxonomyIndex, gold: str, answer: str,
                       expected_set: set[str], em: int, em_soft: int) -> None:
    targets = example_index.accepted_targets([normalize_c1(answer)])
    assert set(targets.column("accepted_name").to_pylist()) == expected_set
    assert set(targets.column("accepted").to_pylist()) == {normalize_c1(n) for n in expected_set}
    exact = int(normalize_c1(answer) == normalize_c1(gold))
    soft = int(exact == 1 or normalize_c1(gold) in set(targets.column("accepted").to_pylist()))
    assert (exact, soft) == (em, em_soft)


def test_reptilia_has_four_targets_with_pro_parte_status(example_index: TaxonomyIndex) -> None:
    table = example_index.accepted_targets(["reptilia"])
    assert table.column_names == list(TARGET_COLUMNS)
    assert table.to_pylist() == [
        {"name": "reptilia", "accepted": a, "accepted_name": a.capitalize(), "rank": "class",
         "status": "proparte synonym"}
        for a in ("crocodylia", "sphenodontia", "squamata", "testudines")
    ]


def test_accepted_and_doubtful_names_map_to_themselves_only(example_index: TaxonomyIndex) -> None:
    table = example_index.accepted_targets(["puma concolor", "felis leo", "chordata"])
    assert table.to_pylist() == [
        {"name": "chordata", "accepted": "chordata", "accepted_name": "Chordata", "rank": "phylum",
         "status": "accepted"},
        {"name": "felis leo", "accepted": "felis leo", "accepted_name": "Felis leo",
         "rank": "species", "status": "doubtful"},
        {"name": "puma concolor", "accepted": "puma concolor", "accepted_name": "Puma concolor",
         "rank": "species", "status": "accepted"},
    ]


def test_relation_is_one_way(example_index: TaxonomyIndex) -> None:
    # the accepted name never resolves to its synonym
    assert _targets(example_index, "Dryophytes cinereus") == {"dryophytes cinereus"}
    assert _targets(example_index, "Squamata") == {"squamata"}


def test_unknown_and_out_of_rank_names_give_no_rows(example_index: TaxonomyIndex) -> None:
    table = example_index.accepted_targets(["a small brown bird", "", "puma concolor couguar"])
    assert table.num_rows == 0
    assert table.column_names == list(TARGET_COLUMNS)


def test_output_is_sorted_and_distinct_and_accepts_arrow(example_index: TaxonomyIndex) -> None:
    query = pa.array(["reptilia", "hyla cinerea", "reptilia", None, "anura"], pa.string())
    table = example_index.accepted_targets(query)
    keys = list(zip(table.column("name").to_pylist(), table.column("accepted").to_pylist()))
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert table.num_rows == 4 + 1 + 1


def test_accepted_name_shadows_a_synonym_homonym(tmp_path: Path) -> None:
    rows = example_taxa() + [
        # a synonym usage of the accepted genus name "Puma", pointing elsewhere: ignored
        taxon(8000001, "Puma", "genus", accepted=2435022, status="synonym"),
        # a synonym chain: Felis couguar -> Felis concolor (synonym) -> Puma concolor
        taxon(8000002, "Felis couguar", "species", accepted=5219426, status="synonym"),
        # a synonym whose accepted taxon is a subspecies (not a target rank): left out
        taxon(8000003, "Felis couguar couguar", "subspecies", accepted=7193927, status="synonym"),
    ]
    root = write_backbone(tmp_path / "bb", rows)
    card = build_index(root, tmp_path / "index")
    index = TaxonomyIndex.open(tmp_path / "index")
    assert _targets(index, "Puma") == {"puma"}
    assert _targets(index, "Felis couguar") == {"puma concolor"}
    assert _targets(index, "Felis couguar couguar") == set()
    assert card["counts"]["synonym_rows_shadowed_by_accepted_name"] == 1
    assert card["counts"]["synonym_rows_unresolved"] == 1
    # that one points at a subspecies, a row that exists: not a dangling acceptedNameUsageID
    assert card["counts"]["synonym_rows_accepted_id_not_found"] == 0
    index.verify()  # the card's part hashes match the parts just written


def test_real_slice_every_synonym_resolves_to_its_accepted_name(tmp_path: Path) -> None:
    card = build_index(ARCHAEA, tmp_path / "index")
    index = TaxonomyIndex.open(tmp_path / "index")
    taxa = read_taxa(ARCHAEA).to_pylist()
    by_id = {row["taxonID"]: row for row in taxa}
    accepted_names = {normalize_c1(r["canonicalName"]) for r in taxa
                      if r["taxonomicStatus"] in ("accepted", "doubtful")}
    synonyms = [r for r in taxa if r["taxonomicStatus"] not in ("accepted", "doubtful")]
    assert len(synonyms) == 92
    targets = index.accepted_targets(sorted({normalize_c1(r["canonicalName"]) for r in synonyms}))
    resolved: dict[str, set[str]] = {}
    for name, accepted in zip(targets.column("name").to_pylist(), targets.column("accepted").to_pylist()):
        resolved.setdefault(name, set()).add(accepted)
    checked = 0
    for row in synonyms:
        name = normalize_c1(row["canonicalName"])
        if name in accepted_names:
            continue  # an accepted homonym wins (none in this slice)
        expected = normalize_c1(by_id[row["acceptedNameUsageID"]]["canonicalName"])
        assert expected in resolved[name], row["taxonID"]
        checked += 1
    assert checked == 92
    example = index.accepted_targets(["methanobacterium thermoflexum"]).to_pylist()
    assert example == [{"name": "methanobacterium thermoflexum",
                        "accepted": "methanothermobacter thermoflexus",
                        "accepted_name": "Methanothermobacter thermoflexus", "rank": "species",
                        "status": "synonym"}]
    assert card["rows"] == 838 and card["counts"]["accepted_taxa"] == 746
    kingdom_row = index.taxa.filter(pc.equal(index.taxa.column("taxon_id"), 2)).to_pylist()[0]
    assert kingdom_row["name"] == "Archaea" and kingdom_row["rank"] == "kingdom"


def test_taxa_table_holds_lineage_and_parent(example_index: TaxonomyIndex) -> None:
    taxa = example_index.taxa
    row = taxa.filter(pc.equal(taxa.column("name"), "Dryophytes cinereus")).to_pylist()[0]
    assert row["rank"] == "species" and row["parent_id"] == 9546789
    assert [row[r] for r in ("kingdom", "phylum", "class", "order", "family", "genus")] == [
        "Animalia", "Chordata", "Amphibia", "Anura", "Hylidae", "Dryophytes"]
    assert set(taxa.column("rank").to_pylist()) <= {"kingdom", "phylum", "class", "order",
                                                    "family", "genus", "species"}


def test_zip_and_folder_give_the_same_index(tmp_path: Path) -> None:
    build_index(example_backbone(tmp_path / "bb"), tmp_path / "from_folder")
    card = build_index(example_backbone(tmp_path / "backbone", as_zip=True), tmp_path / "from_zip")
    for part in PARTS:
        assert (tmp_path / "from_folder" / part).read_bytes() == (tmp_path / "from_zip" / part).read_bytes()
    assert list(card["sources"]) == ["backbone.zip"]


def test_build_is_deterministic(tmp_path: Path) -> None:
    backbone = example_backbone(tmp_path / "bb")
    first = build_index(backbone, tmp_path / "a")
    second = build_index(backbone, tmp_path / "b")
    for part in PARTS:
        assert (tmp_path / "a" / part).read_bytes() == (tmp_path / "b" / part).read_bytes()
    assert first["files"] == second["files"] and first["source_sha256"] == second["source_sha256"]


def test_card_contents(tmp_path: Path) -> None:
    card = build_index(example_backbone(tmp_path / "bb"), tmp_path / "index")
    on_disk = json.loads((tmp_path / "index" / "index.json").read_text(encoding="utf-8"))
    assert on_disk == card
    assert card["rows"] == len(example_taxa())
    assert card["counts"]["vernacular_rows"] == len(example_vernaculars())
    assert card["timing"]["rows_per_second"] > 0
    assert set(card["sources"]) == {"meta.xml", "Taxon.tsv", "VernacularName.tsv"}
    assert len(card["source_sha256"]) == 64 and card["biovqa_version"]


def test_open_is_lazy_and_missing_index_has_hint(tmp_path: Path, example_index: TaxonomyIndex) -> None:
    fresh = TaxonomyIndex.open(example_index.root)
    assert "names" not in fresh.__dict__ and "taxa" not in fresh.__dict__
    fresh.accepted_targets(["anura"])
    assert "names" in fresh.__dict__
    with pytest.raises(MissingResourceError) as caught:
        TaxonomyIndex.open(tmp_path / "nothing")
    assert "build it with `biovqa taxonomy index BACKBONE --out INDEX`" in str(caught.value)


@pytest.mark.parametrize(
    ("bad_line", "field"),
    [("abc" + "\t" * 22, "taxonID"), ("", "taxonID"),
     ("77\t\tnot-a-number" + "\t" * 20, "parentNameUsageID")],
)
def test_bad_rows_name_line_and_field(tmp_path: Path, bad_line: str, field: str) -> None:
    text = (example_backbone(tmp_path / "good") / "Taxon.tsv").read_text(encoding="utf-8")
    lines = text.splitlines()
    lines.insert(3, bad_line)  # becomes line 4
    if bad_line == "":
        lines[3] = ""
    root = write_backbone(tmp_path / "bad", [], taxon_text="\n".join(lines) + "\n")
    with pytest.raises(InputFormatError) as caught:
        build_index(root, tmp_path / "index")
    assert caught.value.row == 4
    assert caught.value.field == field
    assert caught.value.file is not None and caught.value.file.endswith("Taxon.tsv")


def test_english_vernacular_rule(example_index: TaxonomyIndex) -> None:
    chosen = example_index.english_vernacular(
        ["Picea abies", "Rana arvalis", "Dryophytes cinereus", "Zootoca vivipara", "Felis catus"])
    assert chosen == {
        "Picea abies": "Norway spruce",  # 2 sources beat "common spruce" (1)
        "Rana arvalis": "Moor frog",  # the only en row; sv/da rows ignored
        "Dryophytes cinereus": "green treefrog",  # tie on sources: the shorter name
        "Zootoca vivipara": "common lizard",
    }
    assert example_index.english_vernacular_candidates(["Picea abies"]) == {
        "Picea abies": ["Norway spruce", "common spruce"]}


def test_vernacular_languages(example_index: TaxonomyIndex) -> None:
    tags = example_index.vernacular_languages(["Picea abies", "Picea abies", "Rana arvalis"],
                                              ["gran", "norway spruce", "nothing"])
    assert tags == [frozenset({"sv"}), frozenset({"en"}), frozenset()]


def test_fast_normalization_equals_normalize_c1_array() -> None:
    import pyarrow as pa

    from biovqa.taxonomy.index_builder import _normalize
    from biovqa.text import normalize_c1_array

    values = pa.array([
        "Puma concolor", "The species is Puma", "A b", "An", "Species x", "Class Aves",
        "Order Anura", "answer is Felis", "Its name", "Abies alba x", "Rød-Gran", "Cooper's hawk",
        "Felis  catus", " Felis", "Felis ", "Zootoca vivipara", "Hyla cinerea (sic)", "×Cupressocyparis",
        "", None, "Puma concolor", "canis lupus", "Kingdom", "kingdom Animalia", "ÆSCHNA", "straße",
    ], pa.string())
    assert _normalize(values).to_pylist() == normalize_c1_array(values).to_pylist()


def test_homonymous_accepted_taxa(tmp_path: Path) -> None:
    """Two accepted genera "Morus" (a plant and a bird) give one output row; a same-named taxon of
    another rank gives its own row; a synonym pointing at both kinds resolves to each."""
    rows = example_taxa() + [
        taxon(3001, "Morus", "genus", lineage={"kingdom": "Plantae", "genus": "Morus"}),
        taxon(3002, "Morus", "genus", lineage={"kingdom": "Animalia", "genus": "Morus"}),
        taxon(3003, "Morus", "species", status="doubtful"),
        taxon(3004, "Sula bassana", "species", accepted=3002, status="synonym"),
        taxon(3005, "Sula bassana", "species", accepted=3003, status="synonym"),
    ]
    build_index(write_backbone(tmp_path / "bb", rows), tmp_path / "index")
    index = TaxonomyIndex.open(tmp_path / "index")
    table = index.accepted_targets(["morus", "sula bassana"])
    assert [(r["name"], r["accepted"], r["rank"], r["status"]) for r in table.to_pylist()] == [
        ("morus", "morus", "genus", "accepted"),
        ("morus", "morus", "species", "doubtful"),
        ("sula bassana", "morus", "genus", "synonym"),
        ("sula bassana", "morus", "species", "synonym"),
    ]
    assert index.names.filter(pc.equal(index.names.column("name"), "morus")).num_rows == 3


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="AaBbZz éÆß'-. ()×\t", max_size=12), max_size=30))
def test_fast_normalization_property(values: list[str]) -> None:
    from biovqa.taxonomy.index_builder import _normalize
    from biovqa.text import normalize_c1_array

    array = pa.array(values, pa.string())
    assert _normalize(array).to_pylist() == normalize_c1_array(array).to_pylist()


def test_repeated_taxon_id_is_an_error(tmp_path: Path) -> None:
    rows = example_taxa()
    rows.append(taxon(44, "Chordata duplicate", "phylum"))  # id 44 is line 3 (Chordata)
    root = write_backbone(tmp_path / "bb", rows)
    with pytest.raises(InputFormatError, match="repeats line 3") as caught:
        build_index(root, tmp_path / "index")
    assert caught.value.row == len(rows) + 1
    assert caught.value.field == "taxonID"
