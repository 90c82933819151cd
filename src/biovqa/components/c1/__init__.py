"""C1 hierarchical taxonomic reasoning (TreeOfLife-200M images, GBIF Backbone taxonomy).

Modules: :mod:`.tasks` (question types, templates, ranks), :mod:`.build` (selection, items,
floor, audit), :mod:`.tiers` (prevalence and confusability tiers), :mod:`.resolve` (a reply
to a tree node), :mod:`.hierarchy` (HCA, POR, TOR), :mod:`.score` (per-item metrics),
:mod:`.summary` (aggregates with cluster-bootstrap intervals), :mod:`.report` (tables, plots).
"""

from pathlib import Path

from biovqa.components.registry import AnalysisColumn, Command, Component, Option

COMPONENT = Component(
    name="c1",
    title="C1 hierarchical taxonomic reasoning",
    tasks=("phylum", "class", "order", "family", "genus", "species", "scientific_name",
           "common_name", "common_name_mcq"),
    auditor="biovqa.components.c1.build:audit_items",  # beside the build it checks, not in audit.py
    score_options=(
        Option("backbone", Path, None,
               "taxonomy index for EM_soft (default: the one recorded when the benchmark was built)"),
        Option("epithet_last_word", bool, True,
               "keep only the last word of a species-epithet reply (the paper's parser)"),
    ),
    table3=("phy", "cls", "ord", "fam", "gen", "spc", "sci", "com"),
    rank_columns=("item_id", "task", "source_id", "score"),
    # facts the shared stages read
    max_new_tokens=15,  # paper App. B.2
    preset_system_message=True,  # Gemma's taxonomy-expert system message (App. B.2)
    lite_strata=("group", "tier"),  # organismal group x difficulty tier
    sources=("treeoflife-200m", "gbif-backbone"),
    analysis_columns=tuple(AnalysisColumn(label, ("groups", group, "em")) for label, group in (
        ("Amph", "Amphibians"), ("Angio", "Angiosperms"), ("Arach", "Arachnids"), ("Birds", "Birds"),
        ("Bryo", "Bryophytes"), ("Fish", "Fish"), ("Gymno", "Gymnosperms"), ("Insect", "Insects"),
        ("Mamm", "Mammals"), ("Rept", "Reptiles"))),  # App. J.1: EM per organismal group (Table 75)
    commands=(Command("bioclip2", "biovqa.cli.specialist:bioclip2_command", group="specialist",
                      help="C1 ceiling: BioCLIP-2 top-1 species per image answers every rank"),),
)
