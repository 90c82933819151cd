"""C1's per-item taxonomic similarity kernels on the benchmark tree (paper App. C.2–C.3): mistake
severity (Eq. 8), Wu–Palmer (Eqs. 1, 9), Lin with information content (Eq. 10). Pure NumPy
functions of depths and information contents; :func:`biovqa.components.c1.parse.score_replies`
applies them to each reply's resolved node and its lowest common ancestor with the gold."""

from __future__ import annotations

import numpy as np

from biovqa.records import TREE_RANKS

#: Depth in the benchmark tree → rank name, root included (depth 0).
DEPTH_RANK: tuple[str, ...] = ("root", *TREE_RANKS)


def wu_palmer(lca_depth: np.ndarray, predicted_depth: np.ndarray, gold_depth: np.ndarray) -> np.ndarray:
    """Wu–Palmer similarity (Eqs. 1, 9): ``2·d(ℓ) / (d(ŷ) + d(y))``."""
    lca_depth = np.asarray(lca_depth, dtype=np.float64)
    total = np.asarray(predicted_depth, dtype=np.float64) + np.asarray(gold_depth, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, 2.0 * lca_depth / np.where(total > 0, total, 1.0), 0.0)


def lin_similarity(lca_ic: np.ndarray, predicted_ic: np.ndarray, gold_ic: np.ndarray) -> np.ndarray:
    """Lin similarity (Eq. 10): ``2·IC(ℓ) / (IC(ŷ) + IC(y))`` with ``IC(c) = −ln(|subtree(c)|/N)``."""
    lca_ic = np.asarray(lca_ic, dtype=np.float64)
    total = np.asarray(predicted_ic, dtype=np.float64) + np.asarray(gold_ic, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, 2.0 * lca_ic / np.where(total > 0, total, 1.0), 0.0)


def information_content(subtree_sizes: np.ndarray, n_nodes: int) -> np.ndarray:
    """IC(c) = −ln(|subtree(c)| / N) (Eq. 10)."""
    return -np.log(np.asarray(subtree_sizes, dtype=np.float64) / float(n_nodes))


def severity_of(gold_depth: np.ndarray, lca_depth: np.ndarray) -> np.ndarray:
    """Mistake severity of one wrong, resolved reply (Eq. 8): ``d(y) − d(LCA(ŷ, y))``."""
    return np.asarray(gold_depth, dtype=np.float64) - np.asarray(lca_depth, dtype=np.float64)
