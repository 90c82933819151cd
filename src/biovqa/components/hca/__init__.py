"""Hierarchical 4-way VQA (Tan, Qing, Gong 2025, "Vision LLMs Are Bad at Hierarchical Visual Understanding, and LLMs Are
the Bottleneck", below the HCA paper): one 4-option question per image and taxonomy level,
scored on whole paths (HCA, Acc_leaf, POR, S-POR, TOR), and its text-only control (§3.3.1: the image
replaced by the leaf label).

Role modules: :mod:`.tasks` (the visual and text tasks and the path metrics as records),
:mod:`.prompts` (Table 12 and §3.3.1 templates, system prompts, the prompt variants),
:mod:`.build` (visual and text benches), :mod:`.parse` (biovqa's strict parsers), :mod:`.floor`,
:mod:`.score` (per item), :mod:`.summary` (path metrics, levels, depth, format), :mod:`.report`,
:mod:`.demo`; beside them :mod:`.taxonomy` (paths root→leaf from a taxonomy JSON, a C1 bench or
released items), :mod:`.distractors` (the ``taxonomy``, ``random`` and ``similarity`` policies)
and :mod:`.released` (the released item JSON lines).
"""

from biovqa.components.hca.tasks import TABLE3, TASKS
from biovqa.components.registry import Component, Option

COMPONENT = Component(
    name="hca",
    title="Hierarchical 4-way VQA (HCA) and its text-only control",
    tasks=tuple(spec.name for spec in TASKS),
    table3=tuple(TABLE3),
    score_options=(
        Option("score_unscored_levels", bool, False,
               "also score the levels the bench asks but leaves out of the paths (the kingdom of the HCA "
               "authors' iNat items, recorded as the manifest's unscored_levels)"),
    ),
    # facts the shared stages read
    max_new_tokens=10,  # HCA paper section 2.4: 5-10; the upper end, so "B. Anseriformes" arrives whole
    # the score columns explaining a reply (a harness explanation, the report's browser)
    explain_columns=("parse_status", "level_name", "gold", "correct"),
    group_columns=("dataset",),
)
