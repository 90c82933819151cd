"""Benchmark: build C1 from a 100K-image catalog (890K questions), images already on disk.

Generates, in a temporary folder (not in the repository), a TreeOfLife-200M-format catalog of the
real shape (10 groups × 10 000 images, ~626 families / 2 311 genera / 3 403 species), one small
PNG per row, and a matching GBIF Backbone excerpt; then times ``build_c1`` against a plain
reference: the same selection done row by row in Python (per-row dict lookups, per-item string
formatting, no vectorised tiers). Target: ≤ 30 s for the full build on a 2-core machine.

    python benchmarks/build_c1.py            # full size (100 000 images)
    python benchmarks/build_c1.py --images 20000
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

GROUPS = [
    ("Animalia", "Chordata", ["Amphibia"], "Amphibians"),
    ("Plantae", "Tracheophyta", ["Magnoliopsida", "Liliopsida"], "Angiosperms"),
    ("Animalia", "Arthropoda", ["Arachnida"], "Arachnids"),
    ("Animalia", "Chordata", ["Aves"], "Birds"),
    ("Plantae", "Bryophyta", ["Bryopsida", "Sphagnopsida"], "Bryophytes"),
    ("Animalia", "Chordata", ["Actinopterygii", "Elasmobranchii"], "Fish"),
    ("Plantae", "Tracheophyta", ["Pinopsida"], "Gymnosperms"),
    ("Animalia", "Arthropoda", ["Insecta"], "Insects"),
    ("Animalia", "Chordata", ["Mammalia"], "Mammals"),
    ("Animalia", "Chordata", ["Squamata", "Testudines", "Crocodylia"], "Reptiles"),
]
WORDS = ("red blue green common eastern western northern southern great little black white golden "
         "spotted striped brown grey yellow silver long short broad slender tufted crested marsh wood "
         "river rock sand desert mountain forest meadow garden field").split()
NOUNS = ("frog toad lily oak spider hawk moss trout shark pine beetle deer lizard turtle fern wasp "
         "owl finch sparrow bass snake rose maple moth").split()


def synthetic_catalog(n_images: int, seed: int = 7) -> list[dict[str, str]]:
    rng = np.random.default_rng(seed)
    rows = []
    per_group = n_images // len(GROUPS)
    species_per_group = 340
    for g, (kingdom, phylum, classes, group) in enumerate(GROUPS):
        species = []
        for s in range(species_per_group):
            klass = classes[s % len(classes)]
            order = None if group == "Reptiles" else f"Ordo{g}x{s % 7}ales"
            family = f"Fam{g}x{s % 63}idae"
            genus = f"Genus{g}x{s % 231}"
            epithet = f"ep{s}"
            common = f"{WORDS[(s * 7 + g) % len(WORDS)].title()} {WORDS[(s * 3) % len(WORDS)]} {NOUNS[(s + g) % len(NOUNS)]} {s}"
            species.append((klass, order, family, genus, f"{genus} {epithet}", common))
        weights = 1.0 / np.arange(1, species_per_group + 1) ** 0.8
        picks = rng.choice(species_per_group, size=per_group + per_group // 10, p=weights / weights.sum())
        for k, s in enumerate(picks):
            klass, order, family, genus, binomial, common = species[s]
            uid = hashlib.md5(f"{group}/{k}".encode()).hexdigest()
            rows.append({
                "uuid": f"{uid[:8]}-{uid[8:12]}-{uid[12:16]}-{uid[16:20]}-{uid[20:]}",
                "kingdom": kingdom, "phylum": phylum, "class": klass, "order": order or "",
                "family": family, "genus": genus, "species": binomial, "scientific_name": binomial,
                "common_name": common,
            })
    return rows


def write_inputs(root: Path, rows: list[dict[str, str]]) -> tuple[Path, Path, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    catalog = root / "catalog.parquet"
    pq.write_table(pa.Table.from_pylist(rows), catalog)
    images = root / "images"
    images.mkdir()
    template = root / "template.png"
    Image.new("RGB", (256, 240), (90, 120, 60)).save(template)
    payload = template.read_bytes()

    def write(row: dict[str, str]) -> None:
        # same pixels, distinct bytes: an ancillary text chunk keeps each file's hash unique
        (images / f"{row['uuid']}.png").write_bytes(payload[:-12] + _text_chunk(row["uuid"]) + payload[-12:])

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, rows))
    backbone = root / "backbone"
    backbone.mkdir()
    columns = ["taxonID", "datasetID", "parentNameUsageID", "acceptedNameUsageID", "originalNameUsageID",
               "scientificName", "scientificNameAuthorship", "canonicalName", "genericName", "specificEpithet",
               "infraspecificEpithet", "taxonRank", "nameAccordingTo", "namePublishedIn", "taxonomicStatus",
               "nomenclaturalStatus", "taxonRemarks", "kingdom", "phylum", "class", "order", "family", "genus"]
    ranks = ["kingdom", "phylum", "class", "order", "family", "genus", "species"]
    seen: dict[tuple[str, ...], int] = {}
    lines = ["\t".join(columns)]
    for row in rows:
        parent = ""
        path: tuple[str, ...] = ()
        for rank in ranks:
            value = row[rank]
            if not value:
                continue
            path += (value,)
            if path not in seen:
                seen[path] = len(seen) + 1
                record = dict.fromkeys(columns, "")
                record.update(taxonID=str(seen[path]), parentNameUsageID=parent, scientificName=value,
                              canonicalName=value, taxonRank=rank, taxonomicStatus="accepted")
                lines.append("\t".join(record[c] for c in columns))
            parent = str(seen[path])
    (backbone / "Taxon.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    from biovqa.demo import demo_data_dir

    shutil.copy(demo_data_dir() / "backbone" / "meta.xml", backbone / "meta.xml")
    (backbone / "VernacularName.tsv").write_text(
        "taxonID\tvernacularName\tlanguage\tcountry\tcountryCode\tsex\tlifeStage\tsource\n"
        "1\tanimals\ten\t\t\t\t\tsynthetic\n", encoding="utf-8")
    return catalog, backbone, images


def _text_chunk(text: str) -> bytes:
    import struct
    import zlib

    data = b"Comment\x00" + text.encode()
    return struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))


def reference_build(catalog: Path, images: Path, per_group: int) -> int:
    """The plain way: row-by-row Python over the catalog, per-image PIL open and hash, per-item
    string formatting. Produces the same number of questions; used only as the timing reference."""
    import pyarrow.parquet as pq
    from PIL import Image

    from biovqa.components.c1.build.options import GROUPS as GROUP_FILTERS
    from biovqa.components.c1.prompts import INSTRUCTIONS, NAME_TEMPLATES, RANK_TEMPLATES
    from biovqa.components.c1.tasks import TASK_NAMES as TASKS

    rows = pq.read_table(catalog).to_pylist()
    rows.sort(key=lambda r: r["uuid"])
    taken: dict[str, int] = {}
    items = []
    rng = np.random.default_rng(42)
    for row in rows:
        group = next((g for g, (rank, values) in GROUP_FILTERS.items() if row[rank] in values), None)
        if group is None or taken.get(group, 0) >= per_group:
            continue
        path = images / f"{row['uuid']}.png"
        with Image.open(path) as im:
            if min(im.size) < 224:
                continue
        hashlib.sha256(path.read_bytes()).hexdigest()
        taken[group] = taken.get(group, 0) + 1
        for task in TASKS:
            if task == "order" and group == "Reptiles":
                continue
            templates = NAME_TEMPLATES if task in ("scientific_name", "common_name") else RANK_TEMPLATES
            question = templates[int(rng.integers(len(templates)))].format(rank=task, label="animal")
            items.append({"item_id": f"c1:{row['uuid']}:{task}", "question": question,
                          "instruction": INSTRUCTIONS[task]})
    return len(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=100_000)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    from biovqa.components.c1.build import C1BuildOptions, build_c1
    from biovqa.taxonomy.index import build_index

    root = Path(tempfile.mkdtemp(prefix="biovqa-bench-c1-"))
    try:
        started = time.perf_counter()
        rows = synthetic_catalog(args.images)
        catalog, backbone, images = write_inputs(root, rows)
        build_index(backbone, root / "index")
        print(f"inputs: {len(rows):,} catalog rows, images and backbone written in {time.perf_counter() - started:.1f} s")
        per_group = args.images // len(GROUPS)

        started = time.perf_counter()
        bench = build_c1(catalog, root / "index", images, root / "bench",
                         options=C1BuildOptions(per_group=per_group))
        ours = time.perf_counter() - started
        n_items = bench.manifest["counts"]["total"]
        print(f"biovqa build c1: {n_items:,} questions over {bench.manifest['images']:,} images in {ours:.1f} s "
              f"({n_items / ours:,.0f} questions/s)")

        started = time.perf_counter()
        n_reference = reference_build(catalog, images, per_group)
        plain = time.perf_counter() - started
        print(f"plain reference (selection, hashing and question text only, no tiers/MCQ): {n_reference:,} questions in {plain:.1f} s")
        print(f"ratio reference/ours: {plain / ours:.2f}×   target: ours ≤ 30 s → {'PASS' if ours <= 30 else 'FAIL'}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
