"""Hierarchical consistency metrics (hierarchy.md §6): HCA, Acc_leaf, POR, S-POR, TOR.

Input is a boolean matrix ``correct`` (images × levels, top level first) with a mask ``present``
of the levels each image is scored on. An absent level (reptiles have no order) is removed from
that image's path: its neighbours become adjacent, and ``L_i`` counts present levels only. Every
function returns one value per image; :func:`hierarchical_summary` gives their means. A wrong or
unparseable answer is ``False`` and is never dropped. With ``c_ij`` the correctness of level ``j``
of image ``i`` on its compacted path ``j = 1 … L_i``:

* HCA_i = Π_j c_ij;  Acc_leaf_i = c_{i,L_i};  POR_i = (1/L_i) Σ_j c_ij
* S-POR_i (paper) = longest run of consecutive correct levels / L_i
* S-POR_i (prefix, reference code) = longest correct prefix from the top / L_i
* TOR_i = (1/(L_i − 1)) Σ_{j<L_i} c_ij·c_{i,j+1}; for L_i = 1, TOR_i = c_i1 ([DEFAULT]; the
  reference code uses 0)

Per image: HCA ≤ S-POR(prefix) ≤ S-POR ≤ POR, HCA ≤ Acc_leaf, HCA ≤ TOR.

On the means, :func:`scaled_hca` gives HCA / Acc_leaf (hierarchy.md §6 item 9): the share of
leaf-correct images whose whole path is right (19.73 / 41.66 = 47.4 % in the worked example).
"""

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
