"""C4 individual re-identification (Wild Me / LILA catalogs and GZCD).

Role modules: :mod:`.tasks` (the three conditions and five catalogs as records), :mod:`.prompts`
(the C4 prompt), :mod:`.build` (catalogs → pairs → canvases → items), :mod:`.parse` (the yes/no
parser), :mod:`.floor`, :mod:`.score` (per item), :mod:`.summary` (signal detection per dataset ×
condition, pooled, stratified bootstrap), :mod:`.report`, :mod:`.rank`, :mod:`.audit`,
:mod:`.demo`; beside them :mod:`.metrics` (d′, c, accuracy, balanced accuracy, MCC, κ from
counts), :mod:`.embed` (crops, DINOv2 embeddings, the per-crop cache), :mod:`.pairs` (pair
construction, AUC), :mod:`.render` (side-by-side canvases), :mod:`.specialist` (MegaDescriptor).
"""

from biovqa.components.c4.tasks import TABLE3, TASKS
from biovqa.components.registry import AnalysisColumn, Command, Component, Option

COMPONENT = Component(
    name="c4",
    title="C4 individual re-identification",
    tasks=tuple(spec.name for spec in TASKS),
    score_options=(
        Option("bootstrap", int, 2000,
               "bootstrap resamples within each dataset x condition (C4 default 2000; 0: none)", low=0),
    ),
    table3=tuple(TABLE3),
    rank_columns=("item_id", "condition", "same", "said_yes", "score"),
    # facts the shared stages read
    max_new_tokens=8,  # App. B.2
    lite_strata=("dataset", "same"),
    sources=("lila-reid", "gzcd"),
    analysis_columns=tuple(AnalysisColumn(label, ("cells", dataset, "random", "dprime")) for label, dataset in (
        ("whale_shark", "whaleshark"), ("hyena", "hyena"), ("leopard", "leopard"), ("grevys_zebra", "gzcd"),
        ("beluga", "beluga"))),  # App. J.1: random-pairing d' per species (Table 86)
    commands=(Command("c4", "biovqa.cli.c4:c4_app",
                      help="C4 re-identification: embed catalogs once for `biovqa build c4 --embeddings`."),
              Command("megadescriptor", "biovqa.cli.specialist:megadescriptor_command", group="specialist",
                      help="C4 ceiling: MegaDescriptor cosine similarity, threshold fitted on random")),
    # the score columns explaining a reply (a harness explanation, the report's browser)
    explain_columns=("parse_status", "said_yes", "similarity", "gold", "correct"),
    group_columns=("dataset", "species"),
    tier_columns=("condition",),
)
