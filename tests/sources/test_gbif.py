"""The GBIF Backbone DwC-A reader: native layout, meta.xml mapping, zip/folder, bad input."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow.compute as pc
import pytest

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.sources.gbif import (
    TAXON_COLUMNS,
    iter_taxon_batches,
    open_backbone,
    read_taxa,
    read_vernaculars,
)
from fixtures.dwca import (
    example_backbone,
    example_taxa,
    example_vernaculars,
    meta_xml,
    write_backbone,
)

#: a real GBIF Backbone Taxonomy slice (kingdom Archaea, 2019-09-16; its README says where from)
ARCHAEA = Path(__file__).resolve().parents[1] / "data" / "gbif_backbone_archaea_2019"


def test_real_slice_parses_with_readme_counts() -> None:
    taxa = read_taxa(ARCHAEA)
    assert taxa.num_rows == 838
    assert taxa.column_names == list(TAXON_COLUMNS)
    statuses = Counter(taxa.column("taxonomicStatus").to_pylist())
    assert statuses == {"accepted": 743, "synonym": 88, "homotypic synonym": 4, "doubtful": 3}
    ranks = Counter(taxa.column("taxonRank").to_pylist())
    assert ranks == {"kingdom": 1, "phylum": 2, "class": 9, "order": 15, "family": 38,
                     "genus": 145, "species": 627, "unranked": 1}
    row = taxa.filter(pc.equal(taxa.column("taxonID"), "1000132")).to_pylist()[0]
    assert row["canonicalName"] == "Methanobacterium thermoflexum"
    assert row["acceptedNameUsageID"] == "1000131"
    assert row["genus"] == "Methanothermobacter"
    assert row["infraspecificEpithet"] is None  # empty = null
    kingdom = taxa.filter(pc.equal(taxa.column("taxonID"), "2")).to_pylist()[0]
    assert kingdom["parentNameUsageID"] is None and kingdom["canonicalName"] == "Archaea"


def test_real_slice_vernaculars() -> None:
    names = read_vernaculars(ARCHAEA)
    assert names.column("vernacularName").to_pylist() == ["arkebakterier", "arkéer"]
    assert set(names.column("language").to_pylist()) == {"sv"}
    assert names.column("taxonID").to_pylist() == ["2", "2"]


def test_stray_quotes_are_kept_verbatim(tmp_path: Path) -> None:
    taxa = read_taxa(example_backbone(tmp_path / "bb"))
    row = taxa.filter(pc.equal(taxa.column("canonicalName"), "Felis concolor")).to_pylist()[0]
    assert row["scientificName"] == 'Felis concolor Linnaeus, 1771 "cougar'
    assert row["namePublishedIn"] == 'Syst. "Nat.'
    assert taxa.num_rows == len(example_taxa())


def test_zip_and_folder_read_the_same(tmp_path: Path) -> None:
    folder = example_backbone(tmp_path / "bb")
    zipped = example_backbone(tmp_path / "backbone", as_zip=True)
    assert zipped.name == "backbone.zip"
    assert read_taxa(folder).equals(read_taxa(zipped))
    assert read_vernaculars(folder).equals(read_vernaculars(zipped))
    assert read_vernaculars(zipped).num_rows == len(example_vernaculars())


def test_columns_are_mapped_through_meta_xml(tmp_path: Path) -> None:
    """A Taxon.tsv with its columns in another order reads the same, by term."""
    reference = example_backbone(tmp_path / "bb")
    shuffled_columns = tuple(reversed(TAXON_COLUMNS))
    folder = tmp_path / "shuffled"
    folder.mkdir()
    (folder / "meta.xml").write_text(meta_xml(shuffled_columns, None), encoding="utf-8")
    lines = (reference / "Taxon.tsv").read_text(encoding="utf-8").splitlines()
    reordered = ["\t".join(reversed(line.split("\t"))) for line in lines]
    (folder / "Taxon.tsv").write_text("\n".join(reordered) + "\n", encoding="utf-8")
    assert read_taxa(folder).equals(read_taxa(reference))
    assert read_vernaculars(folder).num_rows == 0  # no VernacularName extension described


def test_streams_in_batches(tmp_path: Path) -> None:
    archive = open_backbone(example_backbone(tmp_path / "bb"))
    seen: list[int] = []
    batches = list(iter_taxon_batches(archive, ("taxonID", "canonicalName"), block_size=512,
                                      progress=seen.append))
    assert len(batches) > 1
    assert sum(b.num_rows for b in batches) == len(example_taxa())
    assert sum(seen) == (archive.path / "Taxon.tsv").stat().st_size


def _taxon_text_with(tmp_path: Path, line_number: int, line: str) -> Path:
    text = (example_backbone(tmp_path / "good") / "Taxon.tsv").read_text(encoding="utf-8")
    lines = text.splitlines()
    lines.insert(line_number - 1, line)
    return write_backbone(tmp_path / "bad", [], taxon_text="\n".join(lines) + "\n")


@pytest.mark.parametrize("as_zip", [False, True])
def test_wrong_column_count_names_file_row_and_field(tmp_path: Path, as_zip: bool) -> None:
    text = (example_backbone(tmp_path / "good") / "Taxon.tsv").read_text(encoding="utf-8")
    lines = text.splitlines()
    lines[4] = "\t".join(lines[4].split("\t")[:20])  # line 5 loses its last 3 fields
    path = write_backbone(tmp_path / "bad", [], taxon_text="\n".join(lines) + "\n", as_zip=as_zip)
    with pytest.raises(InputFormatError) as caught:
        read_taxa(path)
    error = caught.value
    assert error.file is not None and error.file.endswith("Taxon.tsv")
    assert error.row == 5
    assert error.field == "order"  # the first missing field (column 21)
    assert "expected 23" in str(error) and "found 20" in str(error)


def test_extra_tab_is_reported(tmp_path: Path) -> None:
    text = (example_backbone(tmp_path / "good") / "Taxon.tsv").read_text(encoding="utf-8")
    lines = text.splitlines()
    lines[-1] += "\textra"
    path = write_backbone(tmp_path / "bad", [], taxon_text="\n".join(lines) + "\n")
    with pytest.raises(InputFormatError, match="found 24") as caught:
        read_taxa(path)
    assert caught.value.row == len(lines)


def test_missing_required_column_in_meta_xml(tmp_path: Path) -> None:
    path = example_backbone(tmp_path / "bb")
    meta = (path / "meta.xml").read_text(encoding="utf-8")
    (path / "meta.xml").write_text(
        meta.replace('term="http://rs.gbif.org/terms/1.0/canonicalName"',
                     'term="http://example.org/terms/somethingElse"'), encoding="utf-8")
    with pytest.raises(InputFormatError) as caught:
        read_taxa(path, ("taxonID", "canonicalName"))
    assert caught.value.field == "canonicalName"
    assert caught.value.file is not None and caught.value.file.endswith("meta.xml")


def test_header_that_disagrees_with_meta_xml(tmp_path: Path) -> None:
    path = example_backbone(tmp_path / "bb")
    lines = (path / "Taxon.tsv").read_text(encoding="utf-8").splitlines()
    lines[0] = "\t".join(lines[0].split("\t")[:22])
    (path / "Taxon.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match="header has 22 fields") as caught:
        read_taxa(path)
    assert caught.value.row == 1
    assert caught.value.field == "genus"


@pytest.mark.parametrize("member", ["Taxon.tsv", "meta.xml"])
@pytest.mark.parametrize("as_zip", [False, True])
def test_missing_member(tmp_path: Path, member: str, as_zip: bool) -> None:
    folder = example_backbone(tmp_path / "bb")
    (folder / member).unlink()
    path = folder
    if as_zip:
        import zipfile

        path = tmp_path / "backbone.zip"
        with zipfile.ZipFile(path, "w") as archive:
            for file in sorted(folder.iterdir()):
                archive.write(file, file.name)
    with pytest.raises(InputFormatError, match=f"{member}") as caught:
        read_taxa(path)
    assert caught.value.field == member
    assert "backbone.zip or the folder" in (caught.value.hint or "")


def test_missing_backbone_path(tmp_path: Path) -> None:
    with pytest.raises(MissingResourceError):
        open_backbone(tmp_path / "nowhere.zip")


def test_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "backbone.zip"
    path.write_bytes(b"not a zip")
    with pytest.raises(InputFormatError, match="not a zip"):
        open_backbone(path)


def test_core_must_be_taxon(tmp_path: Path) -> None:
    path = example_backbone(tmp_path / "bb")
    meta = (path / "meta.xml").read_text(encoding="utf-8")
    (path / "meta.xml").write_text(meta.replace("dwc/terms/Taxon", "dwc/terms/Occurrence", 1),
                                   encoding="utf-8")
    with pytest.raises(InputFormatError, match="rowType") as caught:
        open_backbone(path)
    assert caught.value.field == "rowType"
