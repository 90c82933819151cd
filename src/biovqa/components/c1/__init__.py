"""C1 hierarchical taxonomic reasoning (TreeOfLife-200M images, GBIF Backbone taxonomy).

Role modules (the registry finds them by name): :mod:`.tasks` (one record per question type),
:mod:`.prompts` (templates and instructions, paper App. K.1), :mod:`.build` (selection, items,
naming), :mod:`.parse` (a reply to a tree node), :mod:`.floor` (image-blind floor),
:mod:`.score` (per-item metrics), :mod:`.summary` (aggregates with image-cluster bootstrap
intervals), :mod:`.report` (tables, plots), :mod:`.rank` (the leaderboard's rank bootstrap
inputs), :mod:`.audit` (the benchmark's own checks). Helpers: :mod:`.kernels` (per-item taxonomic
similarities), :mod:`.tiers` (prevalence and confusability tiers), :mod:`.hierarchy` (HCA, POR,
TOR), :mod:`.specialist` (the BioCLIP-2 zero-shot row).
"""

from pathlib import Path

from biovqa.components.c1.tasks import TABLE3_COLUMNS, TASK_NAMES
from biovqa.components.registry import AnalysisColumn, Command, Component, Option

COMPONENT = Component(
    name="c1",
    title="C1 hierarchical taxonomic reasoning",
    tasks=TASK_NAMES,
    score_options=(
        Option("backbone", Path, None,
               "taxonomy index for EM_soft (default: the one recorded when the benchmark was built)"),
        Option("epithet_last_word", bool, True,
               "keep only the last word of a species-epithet reply (the paper's parser)"),
        Option("cell_intervals", bool, False,
               "bootstrap intervals also for every group, tier and per-group hierarchy cell (by default "
               "those get point estimates: the tables print intervals only per question type and pooled)"),
    ),
    table3=tuple(TABLE3_COLUMNS),
    rank_columns=("item_id", "task", "source_id", "score"),
    # facts the shared stages read
    max_new_tokens=15,  # paper App. B.2
    preset_system_message=True,  # Gemma's taxonomy-expert system message (App. B.2)
    lite_strata=("group", "tier"),  # organismal group x difficulty tier
    manifest_counts=("task", "group", "tier"),
    sources=("treeoflife-200m", "gbif-backbone"),
    analysis_columns=tuple(AnalysisColumn(label, ("groups", group, "em")) for label, group in (
        ("Amph", "Amphibians"), ("Angio", "Angiosperms"), ("Arach", "Arachnids"), ("Birds", "Birds"),
        ("Bryo", "Bryophytes"), ("Fish", "Fish"), ("Gymno", "Gymnosperms"), ("Insect", "Insects"),
        ("Mamm", "Mammals"), ("Rept", "Reptiles"))),  # App. J.1: EM per organismal group (Table 75)
    commands=(Command("bioclip2", "biovqa.cli.specialist:bioclip2_command", group="specialist",
                      help="C1 ceiling: BioCLIP-2 top-1 species per image answers every rank"),),
    # the score columns explaining a reply (a harness explanation, the report's browser)
    explain_columns=("resolved_node", "lca_rank", "severity", "em_soft", "parse_status", "em"),
    group_columns=("group", "family", "species"),
    tier_columns=("tier", "prevalence_tier"),
)
