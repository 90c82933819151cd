"""Pure BAGEL metrics (the BAGEL paper's Table 4): item-weighted accuracies, histograms, robustness.

No I/O: arrays and mappings in, numbers out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from biovqa.components.bagel.items import LETTERS

#: Chance accuracy of a uniform guess over four options.
ANALYTIC_RANDOM_BASELINE = 0.25


def overall_from_domains(accuracies: Mapping[str, float], sizes: Mapping[str, int]) -> float:
    """Item-weighted (micro) overall accuracy ``Σ_d n_d·acc_d / Σ_d n_d`` (the BAGEL paper's Table 4) — the
    paper's Table 4 "Overall", not the mean of the domain columns."""
    total = sum(sizes[d] for d in accuracies)
    return sum(accuracies[d] * sizes[d] for d in accuracies) / total


def letter_histogram(letters: Sequence[str | None]) -> dict[str, float | None]:
    """Fraction of parsed replies naming each letter (None when no reply parsed)."""
    parsed = [letter for letter in letters if letter is not None]
    if not parsed:
        return {letter: None for letter in LETTERS}
    return {letter: parsed.count(letter) / len(parsed) for letter in LETTERS}


def gold_positions(gold_letters: Sequence[str]) -> dict[str, float]:
    """Fraction of items whose gold answer sits at each letter (the dataset's position balance)."""
    n = len(gold_letters)
    return {letter: (sum(1 for g in gold_letters if g == letter) / n if n else float("nan")) for letter in LETTERS}


def permutation_agreement(chosen: Sequence[str | None], chosen_reference: Sequence[str | None]) -> float:
    """Share of items on which two runs chose the same option text (an unparsed reply in either
    run counts as disagreement): biovqa's position-robustness check."""
    if not chosen:
        return float("nan")
    same = [a is not None and a == b for a, b in zip(chosen, chosen_reference)]
    return float(np.mean(same))
