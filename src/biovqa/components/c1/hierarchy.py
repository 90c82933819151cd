"""C1's hierarchical consistency metrics (HCA, Acc_leaf, POR, S-POR, TOR; HCA paper §2.2, App. B.2):
the shared pure functions of :mod:`biovqa.stats.hierarchy`, where their definitions are."""

from __future__ import annotations

# The metrics are pure functions shared with the hierarchical 4-way VQA component; they live in
# biovqa.stats.hierarchy (components do not import each other) and are re-exported here.
from biovqa.stats.hierarchy import (
    HIERARCHICAL_METRICS,
    acc_leaf,
    hca,
    hca_at_depth,
    hierarchical_per_image,
    hierarchical_summary,
    per_level_accuracy,
    por,
    scaled_hca,
    spor,
    spor_prefix,
    tor,
)

__all__ = ["HIERARCHICAL_METRICS", "acc_leaf", "hca", "hca_at_depth", "hierarchical_per_image",
           "hierarchical_summary", "per_level_accuracy", "por", "scaled_hca", "spor", "spor_prefix", "tor"]
