"""Regenerate the demo data bundled with biovqa (src/biovqa/data/demo/).

Writes a TreeOfLife-200M-format catalog (catalog.csv) and a GBIF Backbone excerpt in the native
Darwin Core Archive layout (backbone/meta.xml, Taxon.tsv, VernacularName.tsv). The taxa and
their classification are real; uuids are derived deterministically. The excerpt covers all ten
organismal groups, plain synonyms (Hyla cinerea, Felis concolor), the pro-parte synonym Reptilia,
non-English catalog common names (Swedish "gran", "åkergroda") with English Backbone vernaculars,
and reptiles (no order). A few catalog rows exercise the exclusion rules (see `demo_image`).
With torch and transformers installed it also writes c4-embeddings.parquet: the crop embeddings
of the demo's synthetic C4 catalog, made by a tiny random DINOv2 (seed 0) through the path of
`biovqa c4 embed`.

    python scripts/make_demo_data.py
"""

from __future__ import annotations

import csv
import uuid
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "biovqa" / "data" / "demo"
NAMESPACE = uuid.UUID("6f1c2b8e-5d1a-4c47-9a55-0b6f8a7c1d11")

# kingdom, phylum, class, order (None for reptiles), family, genus, species, catalog common name
SPECIES = [
    ("Animalia", "Chordata", "Amphibia", "Anura", "Hylidae", "Dryophytes", "Dryophytes cinereus", "Green Treefrog"),
    ("Animalia", "Chordata", "Amphibia", "Anura", "Hylidae", "Dryophytes", "Dryophytes gratiosus", "Barking Treefrog"),
    ("Animalia", "Chordata", "Amphibia", "Anura", "Bufonidae", "Anaxyrus", "Anaxyrus americanus", "American Toad"),
    ("Animalia", "Chordata", "Amphibia", "Anura", "Ranidae", "Rana", "Rana arvalis", "åkergroda"),
    ("Animalia", "Chordata", "Amphibia", "Caudata", "Salamandridae", "Notophthalmus", "Notophthalmus viridescens", "Eastern Newt"),
    ("Plantae", "Tracheophyta", "Magnoliopsida", "Fagales", "Fagaceae", "Quercus", "Quercus alba", "Eastern White Oak"),
    ("Plantae", "Tracheophyta", "Magnoliopsida", "Fagales", "Fagaceae", "Quercus", "Quercus rubra", "Northern Red Oak"),
    ("Plantae", "Tracheophyta", "Magnoliopsida", "Asterales", "Asteraceae", "Helianthus", "Helianthus annuus", "Common Sunflower"),
    ("Plantae", "Tracheophyta", "Liliopsida", "Asparagales", "Orchidaceae", "Cypripedium", "Cypripedium acaule", "Pink Lady's Slipper"),
    ("Animalia", "Arthropoda", "Arachnida", "Araneae", "Araneidae", "Argiope", "Argiope aurantia", "Yellow Garden Spider"),
    ("Animalia", "Arthropoda", "Arachnida", "Araneae", "Araneidae", "Araneus", "Araneus diadematus", "Cross Orbweaver"),
    ("Animalia", "Arthropoda", "Arachnida", "Araneae", "Salticidae", "Phidippus", "Phidippus audax", "Bold Jumping Spider"),
    ("Animalia", "Arthropoda", "Arachnida", "Opiliones", "Phalangiidae", "Phalangium", "Phalangium opilio", "Common Harvestman"),
    ("Animalia", "Chordata", "Aves", "Passeriformes", "Turdidae", "Turdus", "Turdus migratorius", "American Robin"),
    ("Animalia", "Chordata", "Aves", "Passeriformes", "Cardinalidae", "Cardinalis", "Cardinalis cardinalis", "Northern Cardinal"),
    ("Animalia", "Chordata", "Aves", "Accipitriformes", "Accipitridae", "Buteo", "Buteo jamaicensis", "Red-tailed Hawk"),
    ("Animalia", "Chordata", "Aves", "Charadriiformes", "Laridae", "Larus", "Larus californicus", "California Gull"),
    ("Plantae", "Bryophyta", "Bryopsida", "Polytrichales", "Polytrichaceae", "Polytrichum", "Polytrichum commune", "Common Haircap Moss"),
    ("Plantae", "Bryophyta", "Bryopsida", "Hypnales", "Hylocomiaceae", "Hylocomium", "Hylocomium splendens", "Stairstep Moss"),
    ("Plantae", "Bryophyta", "Sphagnopsida", "Sphagnales", "Sphagnaceae", "Sphagnum", "Sphagnum palustre", "Prairie Sphagnum"),
    ("Plantae", "Bryophyta", "Bryopsida", "Bryales", "Bryaceae", "Bryum", "Bryum argenteum", "Silvergreen Bryum Moss"),
    ("Animalia", "Chordata", "Actinopterygii", "Perciformes", "Centrarchidae", "Lepomis", "Lepomis macrochirus", "Bluegill"),
    ("Animalia", "Chordata", "Actinopterygii", "Salmoniformes", "Salmonidae", "Salmo", "Salmo trutta", "Brown Trout"),
    ("Animalia", "Chordata", "Actinopterygii", "Cypriniformes", "Cyprinidae", "Cyprinus", "Cyprinus carpio", "Common Carp"),
    ("Animalia", "Chordata", "Elasmobranchii", "Carcharhiniformes", "Carcharhinidae", "Carcharhinus", "Carcharhinus leucas", "Bull Shark"),
    ("Plantae", "Tracheophyta", "Pinopsida", "Pinales", "Pinaceae", "Picea", "Picea abies", "gran"),
    ("Plantae", "Tracheophyta", "Pinopsida", "Pinales", "Pinaceae", "Pinus", "Pinus strobus", "Eastern White Pine"),
    ("Plantae", "Tracheophyta", "Pinopsida", "Pinales", "Cupressaceae", "Juniperus", "Juniperus virginiana", "Eastern Red Cedar"),
    ("Plantae", "Tracheophyta", "Pinopsida", "Pinales", "Pinaceae", "Abies", "Abies balsamea", "Balsam Fir"),
    ("Animalia", "Arthropoda", "Insecta", "Lepidoptera", "Nymphalidae", "Danaus", "Danaus plexippus", "Monarch"),
    ("Animalia", "Arthropoda", "Insecta", "Hymenoptera", "Apidae", "Apis", "Apis mellifera", "Western Honey Bee"),
    ("Animalia", "Arthropoda", "Insecta", "Coleoptera", "Coccinellidae", "Coccinella", "Coccinella septempunctata", "Seven-spotted Lady Beetle"),
    ("Animalia", "Arthropoda", "Insecta", "Odonata", "Libellulidae", "Libellula", "Libellula pulchella", "Twelve-spotted Skimmer"),
    ("Animalia", "Chordata", "Mammalia", "Carnivora", "Felidae", "Puma", "Puma concolor", "Cougar"),
    ("Animalia", "Chordata", "Mammalia", "Rodentia", "Sciuridae", "Sciurus", "Sciurus carolinensis", "Eastern Gray Squirrel"),
    ("Animalia", "Chordata", "Mammalia", "Artiodactyla", "Cervidae", "Odocoileus", "Odocoileus virginianus", "White-tailed Deer"),
    ("Animalia", "Chordata", "Mammalia", "Carnivora", "Procyonidae", "Procyon", "Procyon lotor", "Common Raccoon"),
    ("Animalia", "Chordata", "Squamata", None, "Lacertidae", "Zootoca", "Zootoca vivipara", "Viviparous Lizard"),
    ("Animalia", "Chordata", "Squamata", None, "Colubridae", "Thamnophis", "Thamnophis sirtalis", "Common Garter Snake"),
    ("Animalia", "Chordata", "Testudines", None, "Emydidae", "Chrysemys", "Chrysemys picta", "Painted Turtle"),
    ("Animalia", "Chordata", "Crocodylia", None, "Alligatoridae", "Alligator", "Alligator mississippiensis", "American Alligator"),
]
IMAGES_PER_SPECIES = 3
# English vernaculars in the Backbone excerpt (plus the Swedish ones the catalog carries).
VERNACULAR = [
    ("Picea abies", "gran", "sv"),
    ("Picea abies", "Norway Spruce", "en"),
    ("Rana arvalis", "åkergroda", "sv"),
    ("Rana arvalis", "Moor Frog", "en"),
    ("Puma concolor", "Cougar", "en"),
    ("Dryophytes cinereus", "Green Treefrog", "en"),
    ("Lepomis macrochirus", "Bluegill", "en"),
    ("Bryum argenteum", "Silver Moss", "en"),
]
SYNONYMS = [  # (name, rank, status, accepted name)
    ("Hyla cinerea", "species", "synonym", "Dryophytes cinereus"),
    ("Felis concolor", "species", "synonym", "Puma concolor"),
    ("Reptilia", "class", "proparte synonym", "Squamata"),
    ("Reptilia", "class", "proparte synonym", "Testudines"),
    ("Reptilia", "class", "proparte synonym", "Crocodylia"),
    ("Reptilia", "class", "proparte synonym", "Sphenodontia"),
]
TAXON_COLUMNS = [
    "taxonID", "datasetID", "parentNameUsageID", "acceptedNameUsageID", "originalNameUsageID",
    "scientificName", "scientificNameAuthorship", "canonicalName", "genericName", "specificEpithet",
    "infraspecificEpithet", "taxonRank", "nameAccordingTo", "namePublishedIn", "taxonomicStatus",
    "nomenclaturalStatus", "taxonRemarks", "kingdom", "phylum", "class", "order", "family", "genus",
]
VERNACULAR_COLUMNS = ["taxonID", "vernacularName", "language", "country", "countryCode", "sex",
                      "lifeStage", "source"]
RANKS = ["kingdom", "phylum", "class", "order", "family", "genus", "species"]
DATASET = "d7dddbf4-2cf0-4f39-9b2a-bb099caae36c"


def catalog_rows() -> list[dict[str, str]]:
    rows = []
    for kingdom, phylum, klass, order, family, genus, species, common in SPECIES:
        for k in range(IMAGES_PER_SPECIES):
            rows.append({
                "uuid": str(uuid.uuid5(NAMESPACE, f"{species}/{k}")),
                "kingdom": kingdom, "phylum": phylum, "class": klass, "order": order or "",
                "family": family, "genus": genus, "species": species, "scientific_name": species,
                "common_name": common, "resolution_status": "exact", "demo_image": "ok",
            })
    # rows the contract must exclude, one reason each
    base = dict(rows[0])
    rows.append(base | {"uuid": str(uuid.uuid5(NAMESPACE, "no-family")), "family": "", "demo_image": "ok"})
    rows.append(base | {"uuid": str(uuid.uuid5(NAMESPACE, "missing-image")), "demo_image": "missing"})
    rows.append(base | {"uuid": str(uuid.uuid5(NAMESPACE, "tiny-image")), "demo_image": "small"})
    rows.append(base | {"uuid": str(uuid.uuid5(NAMESPACE, "fungus")), "kingdom": "Fungi",
                        "phylum": "Basidiomycota", "class": "Agaricomycetes", "order": "Agaricales",
                        "family": "Amanitaceae", "genus": "Amanita", "species": "Amanita muscaria",
                        "scientific_name": "Amanita muscaria", "common_name": "Fly Agaric"})
    return sorted(rows, key=lambda r: r["uuid"])


def backbone_rows() -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    ids: dict[tuple[str, ...], int] = {}
    taxa: list[dict[str, str]] = []
    next_id = [1000]

    def add(path: tuple[str, ...], rank: str, lineage: dict[str, str], parent: int | None) -> int:
        if path in ids:
            return ids[path]
        next_id[0] += 1
        taxon_id = next_id[0]
        ids[path] = taxon_id
        name = path[-1]
        row = {c: "" for c in TAXON_COLUMNS}
        row.update({
            "taxonID": str(taxon_id), "datasetID": DATASET,
            "parentNameUsageID": "" if parent is None else str(parent),
            "scientificName": name, "canonicalName": name, "taxonRank": rank,
            "taxonomicStatus": "accepted", **lineage,
        })
        if rank == "species":
            row["genericName"], row["specificEpithet"] = name.split()
        taxa.append(row)
        return taxon_id

    accepted: dict[str, int] = {}
    extra = [("Animalia", "Chordata", "Sphenodontia", None, "Sphenodontidae", "Sphenodon", "Sphenodon punctatus", "")]
    for record in SPECIES + extra:
        values = dict(zip(RANKS, record[:7]))
        parent = None
        lineage: dict[str, str] = {}
        path: tuple[str, ...] = ()
        for rank in RANKS:
            value = values[rank]
            if not value:
                continue
            path = path + (value,)
            lineage[rank] = value
            parent = add(path, rank, {k: v for k, v in lineage.items() if k != "species"}, parent)
            accepted.setdefault(value, parent)
    for name, rank, status, target in SYNONYMS:
        next_id[0] += 1
        target_row = next(r for r in taxa if r["taxonID"] == str(accepted[target]))
        row = {c: "" for c in TAXON_COLUMNS}
        row.update({
            "taxonID": str(next_id[0]), "datasetID": DATASET,
            "parentNameUsageID": target_row["parentNameUsageID"],
            "acceptedNameUsageID": target_row["taxonID"], "scientificName": name,
            "canonicalName": name, "taxonRank": rank, "taxonomicStatus": status,
            **{r: target_row[r] for r in RANKS[:-1]},
        })
        if rank == "species":
            row["genericName"], row["specificEpithet"] = name.split()
        taxa.append(row)
    vernacular = []
    for name, text, language in VERNACULAR:
        row = {c: "" for c in VERNACULAR_COLUMNS}
        row.update({"taxonID": str(accepted[name]), "vernacularName": text, "language": language,
                    "source": "biovqa demo excerpt"})
        vernacular.append(row)
    return taxa, vernacular


META_XML = """<archive xmlns="http://rs.tdwg.org/dwc/text/" metadata="eml.xml">
  <core encoding="UTF-8" fieldsTerminatedBy="\\t" linesTerminatedBy="\\n" fieldsEnclosedBy="" ignoreHeaderLines="1" rowType="http://rs.tdwg.org/dwc/terms/Taxon">
    <files>
      <location>Taxon.tsv</location>
    </files>
    <id index="0" />
{core_fields}
  </core>
  <extension encoding="UTF-8" fieldsTerminatedBy="\\t" linesTerminatedBy="\\n" fieldsEnclosedBy="" ignoreHeaderLines="1" rowType="http://rs.gbif.org/terms/1.0/VernacularName">
    <files>
      <location>VernacularName.tsv</location>
    </files>
    <coreid index="0" />
{vernacular_fields}
  </extension>
</archive>
"""
TERMS = {
    "canonicalName": "http://rs.gbif.org/terms/1.0/canonicalName",
    "genericName": "http://rs.gbif.org/terms/1.0/genericName",
    "vernacularName": "http://rs.tdwg.org/dwc/terms/vernacularName",
    "language": "http://purl.org/dc/terms/language",
    "source": "http://purl.org/dc/terms/source",
    "sex": "http://rs.tdwg.org/dwc/terms/sex",
    "lifeStage": "http://rs.tdwg.org/dwc/terms/lifeStage",
    "country": "http://rs.tdwg.org/dwc/terms/country",
    "countryCode": "http://rs.tdwg.org/dwc/terms/countryCode",
}


def _term(name: str) -> str:
    return TERMS.get(name, f"http://rs.tdwg.org/dwc/terms/{name}")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rows = catalog_rows()
    with open(OUT / "catalog.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    taxa, vernacular = backbone_rows()
    backbone = OUT / "backbone"
    backbone.mkdir(exist_ok=True)
    for name, columns, data in (("Taxon.tsv", TAXON_COLUMNS, taxa),
                                ("VernacularName.tsv", VERNACULAR_COLUMNS, vernacular)):
        with open(backbone / name, "w", encoding="utf-8", newline="") as handle:
            handle.write("\t".join(columns) + "\n")
            for row in data:
                handle.write("\t".join(row[c] for c in columns) + "\n")
    core = "\n".join(f'    <field index="{i}" term="{_term(c)}"/>' for i, c in enumerate(TAXON_COLUMNS))
    vern = "\n".join(f'    <field index="{i}" term="{_term(c)}"/>' for i, c in enumerate(VERNACULAR_COLUMNS) if i)
    (backbone / "meta.xml").write_text(META_XML.format(core_fields=core, vernacular_fields=vern), encoding="utf-8")
    print(f"wrote {len(rows)} catalog rows and {len(taxa)} taxa to {OUT}")
    write_c4_embeddings()


def write_c4_embeddings() -> None:
    """C4: the crop embeddings of the demo's synthetic Wild Me catalog, made through the same
    path as `biovqa c4 embed` with a tiny random DINOv2 (seed 0), so that `biovqa demo` builds
    C4 without torch. Skipped (with a note) where torch and transformers are not installed."""
    import tempfile

    from biovqa.components.c4.demo import models_available, write_demo_embeddings

    if not models_available():
        print("c4-embeddings.parquet left as it is: making it needs torch and transformers")
        return
    with tempfile.TemporaryDirectory() as workdir:
        path = write_demo_embeddings(OUT / "c4-embeddings.parquet", workdir)
    print(f"wrote the C4 demo embeddings to {path}")


if __name__ == "__main__":
    main()
