"""Benchmark: build the taxonomy index from a synthetic GBIF Backbone of the real size and shape.

Generates a Backbone DwC-A (meta.xml, Taxon.tsv with all 23 columns, VernacularName.tsv) in a
temporary folder outside the repository, then

1. builds the index with :func:`biovqa.taxonomy.index.build_index` in a child process and reports
   wall time, Taxon rows/s and the child's peak RSS (must stay well under 24 GiB);
2. times ``TaxonomyIndex.accepted_targets`` for 300K distinct query names;
3. builds the same synonym relation with a plain ``csv.reader`` + dict reference on a subset of
   rows, reports its rows/s, and checks both give the same relation on that subset.

Shape of the synthetic Backbone (defaults for ``--rows 7700000``, roughly the real mix):
accepted species 40 %, accepted infraspecific 8 %, doubtful 4 %, accepted genus … kingdom 5 %,
synonyms 42 % (heterotypic/homotypic/plain, 1 % of synonym names pro-parte with 2–4 targets,
a few misapplied), unranked 1 %; 2 % of names are long (60–120 characters); 1 % of rows carry a
stray unbalanced ``"`` in scientificName/namePublishedIn; 1.5 vernacular rows per 10 taxa in
mixed languages.

Usage::

    python benchmarks/gbif_index.py --rows 200000          # quick
    python benchmarks/gbif_index.py                        # full size (~7.7M rows, minutes)
    python benchmarks/gbif_index.py --zip                  # also zip it and build from the zip
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

REAL_ROWS = 7_700_000
LOOKUP_NAMES = 300_000
SYLLABLES = np.array(
    ["ab", "ac", "ad", "al", "am", "an", "ar", "as", "at", "ba", "be", "bi", "bo", "ca", "ce",
     "ci", "co", "cu", "da", "de", "di", "do", "el", "em", "en", "er", "es", "fa", "fe", "fi",
     "ga", "ge", "gi", "go", "ha", "he", "hi", "ho", "il", "in", "is", "la", "le", "li", "lo",
     "lu", "ma", "me", "mi", "mo", "mu", "na", "ne", "ni", "no", "nu", "ob", "or", "os", "pa",
     "pe", "pi", "po", "ra", "re", "ri", "ro", "ru", "sa", "se", "si", "so", "ta", "te", "ti",
     "to", "tu", "ul", "um", "ur", "us", "va", "ve", "vi", "xa", "ya", "za", "ze", "zo", "th",
     "ph", "ch", "ps", "rh"], dtype=object)
LANGUAGES = np.array(["en", "en", "en", "de", "fr", "es", "sv", "da", "nl", "ja", "zh", "pt"], dtype=object)


def _words(rng: np.random.Generator, n: int, min_syllables: int, max_syllables: int,
           long_share: float = 0.0) -> np.ndarray:
    """Random pronounceable words (object array); a share of them very long."""
    counts = rng.integers(min_syllables, max_syllables + 1, size=n)
    if long_share:
        counts = np.where(rng.random(n) < long_share, rng.integers(25, 50, size=n), counts)
    joined = pc.take(pa.array(SYLLABLES.tolist(), pa.string()),
                     pa.array(rng.integers(0, len(SYLLABLES), size=int(counts.sum()))))
    offsets = np.r_[0, np.cumsum(counts)].astype(np.int32)
    lists = pa.ListArray.from_arrays(pa.array(offsets), joined)
    return pc.binary_join(lists, "").to_numpy(zero_copy_only=False)


def generate_backbone(folder: Path, rows: int, seed: int = 42) -> dict[str, int]:
    """Write a synthetic Backbone DwC-A into ``folder``; returns counts by kind."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from biovqa.sources.gbif import TAXON_COLUMNS, VERNACULAR_COLUMNS
    from fixtures.dwca import meta_xml  # the test fixture writes the same meta.xml

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "meta.xml").write_text(meta_xml(), encoding="utf-8")

    # higher ranks: kingdom 8, phylum, class, order, family, genus, sized like the Backbone
    n_higher = {"kingdom": 8, "phylum": max(2, rows // 77_000), "class": max(3, rows // 22_000),
                "order": max(4, rows // 5_000), "family": max(5, rows // 500)}
    n_genus = max(6, int(rows * 0.05) - sum(n_higher.values()))
    n_species = int(rows * 0.40)
    n_infra = int(rows * 0.08)
    n_doubtful = int(rows * 0.04)
    n_unranked = int(rows * 0.01)
    n_higher_total = sum(n_higher.values()) + n_genus
    n_synonym = rows - n_higher_total - n_species - n_infra - n_doubtful - n_unranked
    counts = {"higher": n_higher_total, "species": n_species, "infraspecific": n_infra,
              "doubtful": n_doubtful, "unranked": n_unranked, "synonym": n_synonym}

    ids = rng.permutation(np.arange(1, rows + 1, dtype=np.int64)) + 1_000_000
    cursor = 0

    def take(n: int) -> np.ndarray:
        nonlocal cursor
        chosen = ids[cursor:cursor + n]
        cursor += n
        return chosen

    columns: dict[str, list[pa.Array]] = {c: [] for c in TAXON_COLUMNS}
    lineage_cols = ("kingdom", "phylum", "class", "order", "family", "genus")

    def add(block: dict[str, np.ndarray], n: int) -> None:
        # to Arrow at once: compact, and the Python strings can be freed
        for c in TAXON_COLUMNS:
            columns[c].append(_as_strings(block[c]) if c in block else pa.nulls(n, pa.string()))

    # higher taxa: a random tree
    parent_ids: np.ndarray = np.array([], dtype=np.int64)
    parent_lineage: dict[str, np.ndarray] = {}
    levels = [*n_higher.items(), ("genus", n_genus)]
    level_ids: dict[str, np.ndarray] = {}
    level_lineage: dict[str, dict[str, np.ndarray]] = {}
    for depth, (rank, n) in enumerate(levels):
        suffix = {"kingdom": "a", "phylum": "ota", "class": "opsida", "order": "ales",
                  "family": "aceae", "genus": ""}[rank]
        names = np.char.capitalize(_words(rng, n, 2, 4).astype(str)).astype(object) + suffix
        # make names unique per rank (homonyms across ranks are fine and realistic)
        names = names + np.where(pd_duplicated(names), np.arange(n).astype(str).astype(object), "")
        this_ids = take(n)
        lineage = {}
        if depth == 0:
            parent = np.full(n, None, dtype=object)
            for c in lineage_cols:
                lineage[c] = np.full(n, None, dtype=object)
        else:
            pick = rng.integers(0, len(parent_ids), size=n)
            parent = parent_ids[pick].astype(object)
            for c in lineage_cols:
                lineage[c] = parent_lineage[c][pick]
        lineage[rank] = names
        add({"taxonID": this_ids.astype(object), "parentNameUsageID": parent,
             "canonicalName": names, "scientificName": names + " Author, 1850",
             "scientificNameAuthorship": np.full(n, "Author, 1850", dtype=object),
             "taxonRank": np.full(n, rank, dtype=object),
             "taxonomicStatus": np.full(n, "accepted", dtype=object), **lineage}, n)
        parent_ids, parent_lineage = this_ids, lineage
        level_ids[rank], level_lineage[rank] = this_ids, lineage

    genus_ids, genus_lineage = level_ids["genus"], level_lineage["genus"]

    def species_block(n: int, status: str, long_share: float) -> tuple[dict[str, np.ndarray], np.ndarray]:
        pick = rng.integers(0, len(genus_ids), size=n)
        genus = genus_lineage["genus"][pick]
        epithet = _words(rng, n, 2, 5, long_share=long_share)
        names = genus + " " + epithet
        author = np.where(rng.random(n) < 0.5, "(Linnaeus, 1758)", "Smith & Jones, 1901").astype(object)
        block = {"parentNameUsageID": genus_ids[pick].astype(object), "canonicalName": names,
                 "scientificName": names + " " + author, "scientificNameAuthorship": author,
                 "genericName": genus, "specificEpithet": epithet,
                 "taxonRank": np.full(n, "species", dtype=object),
                 "taxonomicStatus": np.full(n, status, dtype=object),
                 **{c: genus_lineage[c][pick] for c in lineage_cols}}
        return block, pick

    species_ids = take(n_species)
    block, _ = species_block(n_species, "accepted", 0.02)
    block["taxonID"] = species_ids.astype(object)
    quotes = rng.random(n_species) < 0.01
    block["scientificName"] = np.where(quotes, block["scientificName"] + ' "sensu lato', block["scientificName"])
    block["namePublishedIn"] = np.where(rng.random(n_species) < 0.3, 'Bull. "Soc. Zool. 12: 3', None)
    add(block, n_species)
    species_names, species_lineage = block["canonicalName"], {c: block[c] for c in lineage_cols}

    infra_ids = take(n_infra)
    pick = rng.integers(0, n_species, size=n_infra)
    infra_names = species_names[pick] + " " + _words(rng, n_infra, 2, 4)
    add({"taxonID": infra_ids.astype(object), "parentNameUsageID": species_ids[pick].astype(object),
         "canonicalName": infra_names, "scientificName": infra_names,
         "taxonRank": rng.choice(np.array(["subspecies", "variety", "form"], dtype=object), n_infra),
         "taxonomicStatus": np.full(n_infra, "accepted", dtype=object),
         **{c: species_lineage[c][pick] for c in lineage_cols}}, n_infra)

    block, _ = species_block(n_doubtful, "doubtful", 0.0)
    block["taxonID"] = take(n_doubtful).astype(object)
    block["taxonRemarks"] = np.full(n_doubtful, "name of uncertain application", dtype=object)
    add(block, n_doubtful)

    # synonyms: mostly species, pointing at accepted species (a few at genera / infraspecific)
    n_proparte_names = max(1, int(n_synonym * 0.01) // 3)
    proparte_targets = rng.integers(2, 5, size=n_proparte_names)
    n_proparte_rows = int(proparte_targets.sum())
    n_plain = n_synonym - n_proparte_rows
    for start in range(0, n_plain, 1_000_000):  # in chunks, to bound the generator's memory
        n = min(1_000_000, n_plain - start)
        block, _ = species_block(n, "synonym", 0.02)
        status = rng.choice(np.array(["synonym", "heterotypic synonym", "homotypic synonym",
                                      "misapplied"], dtype=object), n, p=[0.55, 0.25, 0.199, 0.001])
        target = rng.integers(0, n_species, size=n)
        accepted = species_ids[target].astype(object)
        to_genus = rng.random(n) < 0.05
        accepted = np.where(to_genus, genus_ids[rng.integers(0, len(genus_ids), n)].astype(object), accepted)
        to_infra = rng.random(n) < 0.03
        accepted = np.where(to_infra, infra_ids[rng.integers(0, n_infra, n)].astype(object), accepted)
        block.update({"taxonID": take(n).astype(object), "acceptedNameUsageID": accepted,
                      "taxonomicStatus": status,
                      **{c: species_lineage[c][target] for c in lineage_cols}})
        add(block, n)
        del block
    # pro-parte synonyms: one row per accepted target, same canonicalName
    pp_names = np.repeat(np.char.capitalize(_words(rng, n_proparte_names, 3, 5).astype(str)).astype(object)
                         + " " + _words(rng, n_proparte_names, 2, 4), proparte_targets)
    pp_target = rng.integers(0, n_species, size=n_proparte_rows)
    add({"taxonID": take(n_proparte_rows).astype(object),
         "acceptedNameUsageID": species_ids[pp_target].astype(object),
         "canonicalName": pp_names, "scientificName": pp_names + " auct.",
         "taxonRank": np.full(n_proparte_rows, "species", dtype=object),
         "taxonomicStatus": np.full(n_proparte_rows, "proparte synonym", dtype=object),
         **{c: species_lineage[c][pp_target] for c in lineage_cols}}, n_proparte_rows)
    counts["proparte_names"] = n_proparte_names

    n_left = rows - cursor
    add({"taxonID": take(n_left).astype(object),
         "acceptedNameUsageID": species_ids[rng.integers(0, n_species, n_left)].astype(object),
         "canonicalName": np.where(rng.random(n_left) < 0.5, None, _words(rng, n_left, 3, 6)),
         "scientificName": _words(rng, n_left, 3, 6) + " incertae sedis",
         "taxonRank": np.full(n_left, "unranked", dtype=object),
         "taxonomicStatus": np.full(n_left, "synonym", dtype=object)}, n_left)

    order = pa.array(rng.permutation(rows))  # the real file is not ordered by rank
    full = {c: pa.concat_arrays(parts).take(order) for c, parts in columns.items() if c != "datasetID"}
    columns.clear()
    full["datasetID"] = pa.array(np.full(rows, "7ddf754f-d193-4cc9-b351-99906754a03b", dtype=object), pa.string())
    _write_tsv(folder / "Taxon.tsv", TAXON_COLUMNS, full)
    del full

    n_vernacular = rows * 15 // 100
    pick = rng.integers(0, n_species, size=n_vernacular)
    _write_tsv(folder / "VernacularName.tsv", VERNACULAR_COLUMNS, {
        "taxonID": species_ids[pick].astype(object),
        "vernacularName": _words(rng, n_vernacular, 2, 3) + " " + _words(rng, n_vernacular, 2, 3),
        "language": rng.choice(LANGUAGES, n_vernacular),
        "source": np.full(n_vernacular, "Catalogue of Life", dtype=object),
    })
    counts["vernacular_rows"] = n_vernacular
    return counts


def pd_duplicated(values: np.ndarray) -> np.ndarray:
    import pandas as pd

    return pd.Series(values).duplicated().to_numpy()


def _as_strings(values: np.ndarray | pa.Array) -> pa.Array:
    if isinstance(values, pa.Array):
        return values
    try:
        return pa.array(values, pa.string())
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return pa.array(values, pa.int64()).cast(pa.string())


def _write_tsv(path: Path, header: tuple[str, ...], data: dict[str, np.ndarray | pa.Array],
               chunk: int = 500_000) -> None:
    """Tab-separated, no quoting, empty = null (the Backbone's format)."""
    n = len(next(iter(data.values())))
    with open(path, "wb") as handle:
        handle.write(("\t".join(header) + "\n").encode())
        for start in range(0, n, chunk):
            size = min(chunk, n - start)
            arrays = [_as_strings(data[c][start:start + size]) if c in data else pa.nulls(size, pa.string())
                      for c in header]
            lines = pc.binary_join_element_wise(*arrays, "\t", null_handling="replace",
                                                null_replacement="")
            lines = pc.binary_join_element_wise(lines, pa.scalar("", pa.string()), "\n")
            handle.write(pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(lines)], pa.int32()),
                                                                 lines), "")[0].as_py().encode())


# --------------------------------------------------------------------------------------------


def _build_child(backbone: str, out: str, queue: multiprocessing.Queue) -> None:
    from biovqa.taxonomy.index import build_index

    started = time.perf_counter()
    card = build_index(backbone, out)
    seconds = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    queue.put({"card": card, "seconds": seconds, "peak_rss_gib": peak_kib / 2**20})


def _generate_child(folder: str, rows: int, queue: multiprocessing.Queue) -> None:
    counts = generate_backbone(Path(folder), rows)
    queue.put({"counts": counts, "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20})


def _run_in_child(target, *args) -> dict:
    """Run ``target(*args, queue)`` in a fresh process and return what it put on the queue."""
    import queue as queue_module

    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    process = context.Process(target=target, args=(*args, results))
    process.start()
    while True:
        try:
            result = results.get(timeout=2)
            break
        except queue_module.Empty:
            if not process.is_alive():
                raise SystemExit(f"{target.__name__} failed (exit code {process.exitcode})") from None
    process.join()
    return result


def generate_in_child(folder: Path, rows: int) -> dict:
    """Generate in a separate process so its memory is gone before the build is measured."""
    return _run_in_child(_generate_child, str(folder), rows)


def build_in_child(backbone: Path, out: Path) -> dict:
    return _run_in_child(_build_child, str(backbone), str(out))


def reference_relation(folder: Path, limit: int) -> tuple[dict[str, set[str]], float, int]:
    """The synonym relation with csv.reader + dicts over the first ``limit`` rows (same rules as
    the index: accepted/doubtful of rank kingdom…species map to themselves and shadow synonyms;
    other statuses map to their accepted target; chains followed)."""
    from biovqa.text import normalize_c1

    ranks = {"kingdom", "phylum", "class", "order", "family", "genus", "species"}
    started = time.perf_counter()
    accepted: dict[str, str] = {}
    synonyms: list[tuple[str, str]] = []
    pointer: dict[str, str] = {}
    with open(folder / "Taxon.tsv", encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader)
        at = {c: header.index(c) for c in ("taxonID", "acceptedNameUsageID", "canonicalName",
                                           "taxonRank", "taxonomicStatus")}
        count = 0
        for row in reader:
            if count >= limit:
                break
            count += 1
            name, status = row[at["canonicalName"]], row[at["taxonomicStatus"]]
            if not name:
                continue
            if status in ("accepted", "doubtful"):
                if row[at["taxonRank"]] in ranks:
                    accepted[row[at["taxonID"]]] = name
            elif row[at["acceptedNameUsageID"]]:
                synonyms.append((row[at["taxonID"]], name))
                pointer[row[at["taxonID"]]] = row[at["acceptedNameUsageID"]]
    normalized_cache: dict[str, str] = {}

    def norm(text: str) -> str:
        if text not in normalized_cache:
            normalized_cache[text] = normalize_c1(text)
        return normalized_cache[text]

    relation: dict[str, set[str]] = {}
    for name in accepted.values():
        if norm(name):
            relation.setdefault(norm(name), set()).add(norm(name))
    accepted_names = set(relation)
    for taxon_id, name in synonyms:
        target = pointer[taxon_id]
        for _ in range(4):
            if target in accepted or target not in pointer:
                break
            target = pointer[target]
        if target in accepted and norm(name) and norm(name) not in accepted_names:
            relation.setdefault(norm(name), set()).add(norm(accepted[target]))
    seconds = time.perf_counter() - started
    return relation, seconds, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=REAL_ROWS, help="Taxon rows (default: real size)")
    parser.add_argument("--reference-rows", type=int, default=300_000,
                        help="rows for the csv.reader reference and the equality check")
    parser.add_argument("--lookups", type=int, default=LOOKUP_NAMES)
    parser.add_argument("--zip", action="store_true", help="also build from a backbone.zip")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()

    from biovqa.taxonomy.index import TaxonomyIndex

    work = Path(tempfile.mkdtemp(prefix="biovqa-gbif-bench-"))
    try:
        print(f"work folder: {work}")
        started = time.perf_counter()
        generated = generate_in_child(work / "backbone", args.rows)
        size = (work / "backbone" / "Taxon.tsv").stat().st_size
        print(f"generated {args.rows:,} Taxon rows ({size / 2**30:.2f} GiB) in "
              f"{time.perf_counter() - started:.1f} s (generator peak RSS "
              f"{generated['peak_rss_gib']:.2f} GiB): {generated['counts']}")

        result = build_in_child(work / "backbone", work / "index")
        card = result["card"]
        rate = args.rows / result["seconds"]
        print(f"build_index (folder): {result['seconds']:.1f} s, {rate:,.0f} rows/s, "
              f"peak RSS {result['peak_rss_gib']:.2f} GiB")
        print(f"  counts: {card['counts']}")
        if args.zip:
            import zipfile

            started = time.perf_counter()
            with zipfile.ZipFile(work / "backbone.zip", "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
                for member in ("meta.xml", "Taxon.tsv", "VernacularName.tsv"):
                    archive.write(work / "backbone" / member, member)
            print(f"zipped in {time.perf_counter() - started:.1f} s "
                  f"({(work / 'backbone.zip').stat().st_size / 2**20:.0f} MiB)")
            zipped = build_in_child(work / "backbone.zip", work / "index_zip")
            print(f"build_index (zip):    {zipped['seconds']:.1f} s, "
                  f"{args.rows / zipped['seconds']:,.0f} rows/s, peak RSS {zipped['peak_rss_gib']:.2f} GiB")
            same = all((work / "index" / p).read_bytes() == (work / "index_zip" / p).read_bytes()
                       for p in ("taxa.parquet", "names.parquet", "vernaculars.parquet"))
            print(f"  zip and folder indexes byte-identical: {same}")

        index = TaxonomyIndex.open(work / "index")
        rng = np.random.default_rng(1)
        names = index.names.column("name")
        known = pc.unique(names).to_numpy(zero_copy_only=False)
        n_known = min(len(known), int(args.lookups * 0.8))
        query = np.concatenate([rng.choice(known, n_known, replace=False),
                                np.array([f"unknown name {i}" for i in range(args.lookups - n_known)], dtype=object)])
        query_array = pa.array(query.tolist(), pa.string())
        started = time.perf_counter()
        targets = index.accepted_targets(query_array)
        first = time.perf_counter() - started
        started = time.perf_counter()
        targets = index.accepted_targets(query_array)
        warm = time.perf_counter() - started
        print(f"accepted_targets({len(query):,} names): {first:.2f} s incl. loading names.parquet, "
              f"{warm:.2f} s warm; {targets.num_rows:,} rows")
        started = time.perf_counter()
        reference = {}
        relation_rows = index.names.select(["name", "accepted"]).to_pylist()
        for row in relation_rows:
            reference.setdefault(row["name"], set()).add(row["accepted"])
        dict_build = time.perf_counter() - started
        started = time.perf_counter()
        hits = sum(len(reference.get(q, ())) for q in query.tolist())
        dict_lookup = time.perf_counter() - started
        pairs = len(set(zip(targets.column("name").to_pylist(), targets.column("accepted").to_pylist())))
        print(f"  plain dict reference: building the dict {dict_build:.1f} s, lookup {dict_lookup:.2f} s; "
              f"distinct (name, accepted) pairs: Arrow {pairs:,}, dict {hits:,} (equal: {pairs == hits}); "
              f"Arrow warm lookup / dict lookup time = {warm / max(dict_lookup, 1e-9):.1f}x")

        subset = min(args.reference_rows, args.rows)
        relation, seconds, count = reference_relation(work / "backbone", subset)
        print(f"csv.reader + dict reference on {count:,} rows: {seconds:.1f} s, {count / seconds:,.0f} rows/s "
              f"(index build: {rate:,.0f} rows/s, {rate / (count / seconds):.1f}x)")
        # equality on the subset: build the index on the same first rows
        sub = work / "subset"
        sub.mkdir()
        shutil.copy(work / "backbone" / "meta.xml", sub / "meta.xml")
        (sub / "VernacularName.tsv").write_text("taxonID\tvernacularName\tlanguage\tcountry\tcountryCode\tsex\tlifeStage\tsource\n")
        with open(work / "backbone" / "Taxon.tsv", "rb") as source, open(sub / "Taxon.tsv", "wb") as target:
            for number, line in enumerate(source):
                if number > subset:
                    break
                target.write(line)
        from biovqa.taxonomy.index import build_index

        build_index(sub, work / "subset_index")
        sub_index = TaxonomyIndex.open(work / "subset_index")
        ours: dict[str, set[str]] = {}
        for row in sub_index.names.select(["name", "accepted"]).to_pylist():
            ours.setdefault(row["name"], set()).add(row["accepted"])
        print(f"  subset relation equal to the reference: {ours == relation} "
              f"({len(ours):,} names, {sum(len(v) > 1 for v in ours.values()):,} with ≥2 targets)")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
