"""BAGEL: the text-only, closed-book animal-knowledge multiple-choice suite (Shen et al. 2026, "BAGEL: Benchmarking Animal Knowledge Expertise in Language Models").

Modules: :mod:`.items` (the released per-domain JSONL in every accepted form, validation),
:mod:`.prompt` (the evaluation prompt, canonical and inline, and the strict letter parser),
:mod:`.build` (items → benchmark folder, the seeded option re-permutation, floor),
:mod:`.metrics` (pure accuracy functions), :mod:`.score`, :mod:`.report`, :mod:`.demo`.
Items have no image: every request is text only.
"""

from biovqa.components.registry import Component, Option

COMPONENT = Component(
    name="bagel",
    title="BAGEL animal-knowledge MCQ (text only)",
    tasks=("GloBI", "Wikipedia", "bioRxiv", "Xeno-canto"),
    score_options=(
        Option("group_by", str, "",
               "comma-separated meta keys to break accuracy down by (empty: every meta key with at most "
               "50 distinct values)"),
        Option("random_seed", int, 0, "seed of the empirical random-guess baseline"),
        Option("reference", str, "",
               "score folder of the same model on the unpermuted bench: adds the permutation-robustness "
               "section (accuracy delta, agreement)"),
    ),
    table3=("bagel", "globi", "wiki", "biorxiv", "xeno"),
    # facts the shared stages read
    max_new_tokens=5,  # the BAGEL paper's protocol: one capital letter, greedy, about 5 new tokens
    request_mode_parameter="mode",  # BAGEL builds record the request mode as parameters.mode
    explain_columns=("gold", "chosen", "correct"),  # shown beside the parsed answer in a harness explanation
)
