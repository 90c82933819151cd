"""BAGEL: the text-only, closed-book animal-knowledge multiple-choice suite (Shen et al. 2026, "BAGEL: Benchmarking Animal Knowledge Expertise in Language Models").

Role modules: :mod:`.tasks` (the four domains as records), :mod:`.prompts` (the evaluation prompt,
canonical and inline), :mod:`.build` (items → benchmark folder, the seeded option re-permutation),
:mod:`.parse` (the strict letter parser), :mod:`.floor` (the seeded random guess), :mod:`.score`
(per item), :mod:`.summary` (accuracies, format, random baseline, robustness), :mod:`.report`,
:mod:`.demo`; beside them :mod:`.items` (the released per-domain JSONL in every accepted form,
validation) and :mod:`.metrics` (pure accuracy functions).
Items have no image: every request is text only.
"""

from biovqa.components.bagel.tasks import TABLE3, TASKS
from biovqa.components.registry import Component, Option

COMPONENT = Component(
    name="bagel",
    title="BAGEL animal-knowledge MCQ (text only)",
    tasks=tuple(spec.name for spec in TASKS),
    score_options=(
        Option("group_by", str, "",
               "comma-separated meta keys to break accuracy down by (empty: every meta key with at most "
               "50 distinct values)"),
        Option("random_seed", int, 0, "seed of the empirical random-guess baseline"),
        Option("reference", str, "",
               "score folder of the same model on the unpermuted bench: adds the permutation-robustness "
               "section (accuracy delta, agreement)"),
    ),
    table3=TABLE3,
    # facts the shared stages read
    max_new_tokens=5,  # the BAGEL paper's protocol: one capital letter, greedy, about 5 new tokens
    request_mode_parameter="mode",  # BAGEL builds record the request mode as parameters.mode
    # the score columns explaining a reply (a harness explanation, the report's browser)
    explain_columns=("parse_status", "chosen", "gold", "correct"),
    tier_columns=("tier",),
    manifest_counts=("task", "tier"),
)
