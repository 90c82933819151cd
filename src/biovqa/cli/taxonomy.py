"""``biovqa taxonomy …``: build and inspect the cached GBIF Backbone index."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from biovqa.cli._app import OverwriteOption, console


def index_command(
    backbone: Annotated[Path, typer.Argument(help="GBIF Backbone DwC-A: backbone.zip or its unpacked folder")],
    out: Annotated[Path, typer.Option("--out", "-o", help="index folder to write")],
    overwrite: OverwriteOption = False,
) -> None:
    """Build the taxonomy index (accepted taxa, synonym map, vernacular names) from the Backbone."""
    from biovqa.bench.folder import claim_output
    from biovqa.taxonomy.index import build_index

    with claim_output(out, command="taxonomy index", overwrite=overwrite):
        card = build_index(backbone, out, console=console)
    counts, timing = card["counts"], card["timing"]
    console.print(
        f"[green]index written[/green] to {out}: {card['rows']:,} Taxon rows in "
        f"{timing['seconds']:.1f} s ({timing['rows_per_second']:,.0f} rows/s); "
        f"{counts['accepted_taxa']:,} accepted taxa, {counts['names']:,} names, "
        f"{counts['name_target_pairs']:,} name→taxon pairs, "
        f"{counts.get('english_vernacular_rows', 0):,} English vernaculars"
    )


def lookup_command(
    index: Annotated[Path, typer.Argument(help="index folder from `biovqa taxonomy index`")],
    names: Annotated[list[str], typer.Argument(help="names to resolve (normalized as C1 answers are)")],
) -> None:
    """Print the accepted taxa each name resolves to (the synonym relation S of EM_soft)."""
    from biovqa.taxonomy.index import TaxonomyIndex
    from biovqa.text import normalize_c1

    taxonomy = TaxonomyIndex.open(index)
    normalized = [normalize_c1(n) for n in names]
    targets = taxonomy.accepted_targets(normalized)
    english = taxonomy.english_vernacular(targets.column("accepted_name").to_pylist())
    table = Table("query", "normalized", "accepted name", "rank", "status", "English name")
    found: dict[str, list[dict]] = {}
    for row in targets.to_pylist():
        found.setdefault(row["name"], []).append(row)
    for query, key in zip(names, normalized):
        rows = found.get(key)
        if not rows:
            table.add_row(query, key, "[red]not in the Backbone[/red]", "", "", "")
            continue
        for row in rows:
            table.add_row(query, key, row["accepted_name"], row["rank"], row["status"],
                          english.get(row["accepted_name"], ""))
    Console().print(table)


def register(taxonomy_app: typer.Typer) -> None:
    """Add ``index`` and ``lookup`` to the ``biovqa taxonomy`` group."""
    taxonomy_app.command("index")(index_command)
    taxonomy_app.command("lookup")(lookup_command)
