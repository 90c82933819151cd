"""C2 fine-grained attribute grounding (CUB-200-2011).

Modules: :mod:`.tasks` (one record per question family, from which every family tuple and Table 3
column is derived), :mod:`.prompts` (the paper's prompts), :mod:`.questions` (the family
generators), :mod:`.build` (the benchmark folder), :mod:`.render` (part markers), :mod:`.floor`
(image-blind replies), :mod:`.parse` (the five-step reply parser), :mod:`.kernels` and
:mod:`.naming` (pure similarity kernels), :mod:`.similarity` (each family's kernel over its items),
:mod:`.context` (benchmark-wide scoring context, open chance baselines), :mod:`.cags` (per-item
scores), :mod:`.score` (the scorer), :mod:`.summary` (aggregates), :mod:`.rank` (the rank
bootstrap's inputs), :mod:`.sweep` (kernel sensitivity), :mod:`.report` (tables, figures).
"""

from biovqa.components.c2.tasks import FAMILIES, TABLE3, TASKS
from biovqa.components.registry import AnalysisColumn, Component, Option

COMPONENT = Component(
    name="c2",
    title="C2 fine-grained attribute grounding",
    tasks=FAMILIES,
    score_options=(
        Option("prefer_text", bool, False,
               "when an MCQ reply's letter and option text disagree, take the text (default: the letter)"),
        Option("tau", float, 30.0, "colour kernel scale τ in CIEDE2000 units (Eq. 13)", low=1e-9, high=1e9),
        Option("alpha", float, 0.5, "weight of the graded part of the salience kernel", low=0.0, high=1.0),
        Option("colour_kernel", str, "exponential", "colour similarity kernel",
               choices=("exponential", "linear")),
        Option("visibility_kernel", str, "exact", "visibility kernel (anatomy: partial credit by part distance)",
               choices=("exact", "anatomy")),
        Option("genus_baseline", str, "exact",
               "open_genus chance baseline: exact (share of 40 sampled other CUB classes with the gold "
               "genus; reproduces the paper, b ≈ 0.01) or graded (mean genus kernel over 40 distinct "
               "other genera, b ≈ 0.08)", choices=("exact", "graded")),
        Option("english_names", bool, True,
               "open_common_name: the English name (Chuck-will's-widow, Brewer's Blackbird) scores as exact beside "
               "the CUB label; false scores the CUB label alone, as the paper (CUB-label replies score the same "
               "either way)"),
        Option("sweep_size", int, 60000, "items drawn for the kernel sweep (--sweep)", low=1),
    ),
    table3=TABLE3,
    rank_columns=("item_id", "family", "cags"),
    # facts the shared stages read
    max_new_tokens=48,  # App. B.2 gives none for C2: biovqa's default
    preset_system_message=True,  # Gemma's taxonomy-expert system message (App. B.2)
    lite_strata=("category", "family", "n_options"),
    sources=("cub-200-2011",),
    analysis_columns=tuple(AnalysisColumn(f.short, ("families", f.name, "cags"))
                           for f in TASKS if f.category != "naming"),  # App. J.1, Table 33
    # the score columns explaining a reply (a harness explanation, the report's browser)
    explain_columns=("severity", "parse_status", "s", "b", "gold", "em", "cags"),
    group_columns=("family", "category"),
)
