"""Per-component scorers: parse replies, compute per-item quantities, aggregate with CIs."""
