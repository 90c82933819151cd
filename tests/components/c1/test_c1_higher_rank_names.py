"""C1 catalog common names that are really a higher rank's name (TaxonoPy fills a species without
a name of its own from a higher rank): counted, kept (the paper), replaced or excluded, through
``biovqa build c1``. The two *Laelia rosea* are homonyms — a moth (Erebidae) and an orchid — so the
replacement must take each one's own vernacular, not the pooled names of the binomial."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fixtures.cli_runner import cli
from fixtures.dwca import taxon, write_backbone
from PIL import Image

from biovqa.bench.folder import open_bench
from biovqa.taxonomy.index import build_index

MOTHS = {"kingdom": "Animalia", "phylum": "Arthropoda", "class": "Insecta", "order": "Lepidoptera",
         "family": "Erebidae"}
ORCHIDS = {"kingdom": "Plantae", "phylum": "Tracheophyta", "class": "Liliopsida", "order": "Asparagales",
           "family": "Orchidaceae"}
AARDVARK = {"kingdom": "Animalia", "phylum": "Chordata", "class": "Mammalia"}
ALLIED = "Underwing, Tiger, Tussock, And Allied Moths"
WATCHED = ("moth-rosea", "moth-dispar", "orchid-rosea", "orchid-anceps")


def _backbone(path: Path) -> Path:
    def lineage(base: dict[str, str], depth: int, genus: str | None = None) -> dict[str, str]:
        kept = dict(list(base.items())[:depth])
        return {**kept, "genus": genus} if genus else kept

    taxa = [
        taxon(1, "Animalia", "kingdom"), taxon(54, "Arthropoda", "phylum", parent=1, lineage=lineage(MOTHS, 1)),
        taxon(216, "Insecta", "class", parent=54, lineage=lineage(MOTHS, 2)),
        taxon(797, "Lepidoptera", "order", parent=216, lineage=lineage(MOTHS, 3)),
        taxon(4532185, "Erebidae", "family", parent=797, lineage=lineage(MOTHS, 4)),
        taxon(1001, "Laelia", "genus", parent=4532185, lineage=lineage(MOTHS, 5)),
        taxon(1002, "Laelia rosea", "species", parent=1001, lineage=lineage(MOTHS, 5, "Laelia")),
        taxon(1003, "Lymantria", "genus", parent=4532185, lineage=lineage(MOTHS, 5)),
        taxon(1004, "Lymantria dispar", "species", parent=1003, lineage=lineage(MOTHS, 5, "Lymantria")),
        taxon(6, "Plantae", "kingdom"), taxon(7707728, "Tracheophyta", "phylum", parent=6, lineage=lineage(ORCHIDS, 1)),
        taxon(196, "Liliopsida", "class", parent=7707728, lineage=lineage(ORCHIDS, 2)),
        taxon(1169, "Asparagales", "order", parent=196, lineage=lineage(ORCHIDS, 3)),
        taxon(7689, "Orchidaceae", "family", parent=1169, lineage=lineage(ORCHIDS, 4)),
        taxon(2001, "Laelia", "genus", parent=7689, lineage=lineage(ORCHIDS, 5)),
        taxon(2002, "Laelia rosea", "species", parent=2001, lineage=lineage(ORCHIDS, 5, "Laelia")),
        taxon(2003, "Laelia anceps", "species", parent=2001, lineage=lineage(ORCHIDS, 5, "Laelia")),
        # a monotypic genus: the species' name is also its genus's
        taxon(44, "Chordata", "phylum", parent=1, lineage={"kingdom": "Animalia"}),
        taxon(359, "Mammalia", "class", parent=44, lineage={"kingdom": "Animalia", "phylum": "Chordata"}),
        taxon(3001, "Orycteropus", "genus", parent=359, lineage=AARDVARK),
        taxon(3002, "Orycteropus afer", "species", parent=3001, lineage={**AARDVARK, "genus": "Orycteropus"}),
    ]
    vernaculars = [
        {"taxonID": 1001, "vernacularName": "Tussock moths", "language": "en"},  # the moth genus only
        {"taxonID": 3001, "vernacularName": "Aardvark", "language": "en"},
        {"taxonID": 3002, "vernacularName": "Aardvark", "language": "en"},
        {"taxonID": 1002, "vernacularName": "Rosy tussock moth", "language": "en"},
        {"taxonID": 1004, "vernacularName": "Spongy moth", "language": "en"},
        {"taxonID": 1004, "vernacularName": "Schwammspinner", "language": "de"},
        {"taxonID": 7689, "vernacularName": "Orchids", "language": "en"},  # plural: still the family's
        {"taxonID": 7689, "vernacularName": "Orchideeën", "language": "nl"},
        {"taxonID": 2002, "vernacularName": "Rose laelia", "language": "en"},
        # Laelia anceps has no vernacular of its own
    ]
    return write_backbone(path, taxa, vernaculars)


def _row(uuid: str, lineage: dict[str, str], binomial: str, common: str) -> dict[str, str]:
    return {"uuid": uuid, **lineage, "genus": binomial.split()[0], "species": binomial,
            "scientific_name": binomial, "common_name": common}


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("higher-rank")
    build_index(_backbone(root / "backbone"), root / "index")
    rows = [
        _row("moth-rosea", MOTHS, "Laelia rosea", ALLIED),          # TaxonoPy's family name
        _row("moth-dispar", MOTHS, "Lymantria dispar", "Spongy moth"),  # its own name: kept as is
        _row("orchid-rosea", ORCHIDS, "Laelia rosea", "Orchid"),       # the family's vernacular
        _row("orchid-anceps", ORCHIDS, "Laelia anceps", "Orchid"),     # … and no name of its own
    ]
    # species with names of their own (not in the Backbone), so that every MCQ has distractors
    fillers = [
        _row("moth-caja", MOTHS, "Arctia caja", "Garden tiger moth"),
        _row("moth-nupta", MOTHS, "Catocala nupta", "Red underwing"),
        _row("moth-chrysorrhoea", MOTHS, "Euproctis chrysorrhoea", "Brown-tail moth"),
        _row("orchid-calceolus", ORCHIDS, "Cypripedium calceolus", "Lady's-slipper orchid"),
        _row("orchid-apifera", ORCHIDS, "Ophrys apifera", "Bee orchid"),
        _row("orchid-mascula", ORCHIDS, "Orchis mascula", "Early-purple orchid"),
        _row("orchid-militaris", ORCHIDS, "Orchis militaris", "Military orchid"),
    ]
    rows += fillers
    pq.write_table(pa.Table.from_pylist(rows), root / "catalog.parquet")
    (root / "images").mkdir()
    for row in rows:
        Image.new("RGB", (8, 8), (120, 90, 60)).save(root / "images" / f"{row['uuid']}.png")
    return {"catalog": root / "catalog.parquet", "index": root / "index", "images": root / "images"}


def _build(sources: dict[str, Path], out: Path, capsys: pytest.CaptureFixture[str],
           *policy: str) -> tuple[int, str]:
    return cli(["build", "c1", "--catalog", sources["catalog"], "--backbone", sources["index"],
                "--images", sources["images"], "--out", out, "--per-group", 8, "--species-cap", 4,
                "--min-side", 1, "--group", "Insects", "--group", "Angiosperms", *policy], capsys)


def _names(bench: Path) -> dict[str, str]:
    rows = open_bench(bench).items.to_pylist()
    return {r["source_id"]: r["common_name"] for r in rows
            if r["task"] == "common_name" and r["source_id"] in WATCHED}


def test_keep_is_the_default_counts_them_and_keeps_the_catalogs_names(
        sources: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _build(sources, tmp_path / "bench", capsys)
    assert code == 0, err
    manifest = json.loads((tmp_path / "bench" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["parameters"]["higher_rank_names"] == "keep"
    higher = manifest["common_names"]["higher_rank"]
    assert higher["policy"] == "keep" and higher["images"] == 3 and higher["pairs"] == 3
    assert higher["by_reason"] == {"and_allied": 1, "family": 2}
    assert f"Laelia rosea (Erebidae): {ALLIED!r} [and_allied]" in higher["examples"]
    assert "Laelia rosea (Orchidaceae): 'Orchid' [family]" in higher["examples"]
    assert _names(tmp_path / "bench") == {"moth-rosea": ALLIED, "moth-dispar": "Spongy moth",
                                          "orchid-rosea": "Orchid", "orchid-anceps": "Orchid"}
    side = pq.read_table(tmp_path / "bench" / "c1" / "common_names.parquet").to_pylist()
    assert {(r["uuid"], r["higher_rank"]) for r in side} == {
        ("moth-rosea", "and_allied"), ("orchid-rosea", "family"), ("orchid-anceps", "family")}


def test_replace_takes_each_homonyms_own_vernacular_and_excludes_a_species_without_one(
        sources: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _build(sources, tmp_path / "bench", capsys, "--higher-rank-names", "replace")
    assert code == 0, err
    assert _names(tmp_path / "bench") == {"moth-rosea": "Rosy tussock moth", "moth-dispar": "Spongy moth",
                                          "orchid-rosea": "Rose laelia"}
    manifest = json.loads((tmp_path / "bench" / "manifest.json").read_text(encoding="utf-8"))
    higher = manifest["common_names"]["higher_rank"]
    assert (higher["policy"], higher["replaced"], higher["excluded"]) == ("replace", 2, 1)
    reason = "higher_rank_common_name_without_species_name"
    assert manifest["exclusions"][reason] == {"Angiosperms": 1}
    assert manifest["exclusion_examples"][reason] == ["orchid-anceps"]
    sources_of = {r["uuid"]: r["common_name_source"]
                  for r in pq.read_table(tmp_path / "bench" / "c1" / "common_names.parquet").to_pylist()}
    assert sources_of == {"moth-rosea": "gbif_en", "orchid-rosea": "gbif_en"}


def test_exclude_drops_the_images_counted_and_named(
        sources: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _build(sources, tmp_path / "bench", capsys, "--higher-rank-names", "exclude")
    assert code == 0, err
    assert _names(tmp_path / "bench") == {"moth-dispar": "Spongy moth"}
    manifest = json.loads((tmp_path / "bench" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["exclusions"]["higher_rank_common_name"] == {"Angiosperms": 2, "Insects": 1}
    assert sorted(manifest["exclusion_examples"]["higher_rank_common_name"]) == [
        "moth-rosea", "orchid-anceps", "orchid-rosea"]
    assert manifest["common_names"]["higher_rank"]["excluded"] == 3


def test_an_unknown_policy_is_one_clear_error(
        sources: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _build(sources, tmp_path / "bench", capsys, "--higher-rank-names", "drop")
    assert code == 2 and "higher_rank_names" in err and "keep, replace, exclude" in err, err
    assert "Traceback" not in err and not (tmp_path / "bench").exists()


def test_homonyms_and_a_species_sharing_its_genus_name_are_not_flagged(sources: dict[str, Path]) -> None:
    """The Backbone lookups behind the build's verdicts: an ancestor is matched on its kingdom (the
    orchid genus *Laelia* is not the moth genus whose vernacular is "Tussock moths"), and a name
    that is the species' own is never a higher rank's, even when its genus has it too."""
    from biovqa.taxonomy.english import higher_rank_names
    from biovqa.taxonomy.index import TaxonomyIndex

    index = TaxonomyIndex.open(sources["index"])
    lineages = [{**ORCHIDS, "genus": "Laelia", "species": "Laelia rosea"},
                {**MOTHS, "genus": "Laelia", "species": "Laelia rosea"},
                {**AARDVARK, "order": "Tubulidentata", "family": "Orycteropodidae", "genus": "Orycteropus",
                 "species": "Orycteropus afer"}]
    found = higher_rank_names(lineages, ["Tussock moths", "Tussock moth", "Aardvark"], index)
    assert found.reasons == [None, "genus", None]
    assert found.species_names == [None, "Rosy tussock moth", None]
    # without an index only the "... and allied ..." form can be told
    bare = higher_rank_names(lineages[:2], [ALLIED, "Orchid"], None)
    assert bare.reasons == ["and_allied", None] and bare.species_names == [None, None]
