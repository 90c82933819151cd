"""C4's own audit checks (``biovqa audit``), beyond the shared ones: the pair rules of the
conditions hold in the stored items (paper appendix H.7)."""

from __future__ import annotations

from biovqa.bench.folder import Bench


def audit_items(bench: Bench) -> list[str]:
    """C4's own audit: every easy and hard pair is its anchor's rule partner, i.e. its stored
    similarity is the anchor's pool maximum (easy same-ID, hard different-ID) or minimum (hard
    same-ID, easy different-ID). Random pairs have no similarity rule to check."""
    columns = ["item_id", "condition", "same", "similarity", "pool_min_similarity", "pool_max_similarity"]
    wrong = []
    for row in bench.items.select(columns).to_pylist():
        if row["condition"] not in ("easy", "hard"):
            continue
        most_similar = (row["condition"] == "easy") == row["same"]
        extreme = row["pool_max_similarity"] if most_similar else row["pool_min_similarity"]
        if row["similarity"] is None or extreme is None or abs(row["similarity"] - extreme) > 1e-6:
            wrong.append(row["item_id"])
    if not wrong:
        return []
    return [f"{len(wrong)} easy/hard pair(s) are not their anchor's rule partner (similarity is not the anchor's "
            f"pool maximum or minimum): {', '.join(wrong[:5])}"]


__all__ = ["audit_items"]
