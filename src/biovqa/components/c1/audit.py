"""C1's part of the benchmark verification contract (``biovqa audit``): every rank an item's image
needs is present, reptiles are never asked an order, and the side files scoring reads exist."""

from __future__ import annotations

from biovqa.bench.folder import Bench
from biovqa.components.c1.build.options import GROUPS_WITHOUT_ORDER
from biovqa.components.c1.side_files import SIDE_FOLDER, TREE_FILE, VERNACULAR_FILE
from biovqa.records import TREE_RANKS


def audit_items(bench: Bench) -> list[str]:
    """C1 part of the verification contract: every rank an item's image needs is present."""
    table = bench.items
    frame = table.select(["item_id", "task", "group", "kingdom", *TREE_RANKS, "epithet",
                          "scientific_name", "common_name"]).to_pandas()
    violations: list[str] = []
    required = ["kingdom", "phylum", "class", "order", "family", "genus", "species", "epithet",
                "scientific_name", "common_name"]
    for column in required:
        values = frame[column]
        bad = values.isna() | (values.astype(str).str.strip() == "")
        if column == "order":
            bad &= ~frame["group"].isin(GROUPS_WITHOUT_ORDER)
        for item_id in frame.loc[bad, "item_id"].head(20):
            violations.append(f"{item_id}: required rank '{column}' is null or empty")
        if bad.sum() > 20:
            violations.append(f"… {int(bad.sum()) - 20} more items with empty '{column}'")
    reptile_order = frame["group"].isin(GROUPS_WITHOUT_ORDER) & (frame["task"] == "order")
    for item_id in frame.loc[reptile_order, "item_id"].head(20):
        violations.append(f"{item_id}: reptiles have no order, but an order question exists")
    side = bench.root / SIDE_FOLDER
    for name in (TREE_FILE, VERNACULAR_FILE):
        if not (side / name).exists():
            violations.append(f"{SIDE_FOLDER}/{name}: missing (scoring needs it)")
    return violations
