"""BAGEL leaderboard tables from score summaries (BAGEL paper, Shen et al. 2026, Table 4).

``tables(summaries)`` takes ``[(model label, summary dict), …]`` and returns:

* ``table4`` — accuracy per domain (GloBI, Wiki, bioRxiv, Xeno-canto) and the item-weighted
  Overall, as in the paper's Table 4, with the analytic random baseline 0.25 and the seeded
  empirical random guess;
* ``dimensions`` — accuracy per domain / dimension (rows) and model (columns);
* ``tiers`` — accuracy per difficulty tier (easy, medium, hard);
* ``format`` — parse-failure rate and the letter-emission histogram per model;
* ``gold_positions`` — the dataset's gold-position histogram (from the first summary);
* ``groups`` — accuracy per meta key and value (when any was grouped);
* ``robustness`` — accuracy delta and agreement of permuted runs (when scored with a reference).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from biovqa.components.bagel.items import LETTERS
from biovqa.components.bagel.tasks import DOMAINS, TASKS
from biovqa.scoring.schema import estimate_value

DECIMALS = 4
#: Table 4's column names.
TABLE4_COLUMNS: dict[str, str] = {spec.name: spec.table4 for spec in TASKS}



def tables(summaries: list[tuple[str, dict]]) -> dict[str, pd.DataFrame]:
    out: dict[str, pd.DataFrame] = {}
    rows = []
    for label, summary in summaries:
        row: dict[str, Any] = {"model": label}
        for domain in DOMAINS:
            row[TABLE4_COLUMNS[domain]] = estimate_value(summary.get("domains", {}).get(domain))
        row["Overall"] = estimate_value(summary.get("overall"))
        rows.append(row)
    if summaries:
        first = summaries[0][1]
        empirical = first.get("random_baseline", {}).get("empirical")
        by_domain = first.get("random_baseline", {}).get("domains", {})
        rows.append({"model": "Empirical Random Guess",
                     **{TABLE4_COLUMNS[d]: estimate_value(by_domain.get(d)) for d in DOMAINS}, "Overall": estimate_value(empirical)})
        rows.append({"model": "Random (analytic)", **{c: 0.25 for c in TABLE4_COLUMNS.values()}, "Overall": 0.25})
    out["table4"] = pd.DataFrame(rows).round(DECIMALS)

    def by_model(section: str) -> pd.DataFrame:
        frame = pd.DataFrame({label: {key: estimate_value(est) for key, est in summary.get(section, {}).items()}
                              for label, summary in summaries})
        return frame.sort_index().round(DECIMALS).rename_axis(section[:-1]).reset_index()

    out["dimensions"] = by_model("dimensions")
    out["tiers"] = by_model("tiers")
    out["format"] = pd.DataFrame([
        {"model": label, "parse_failure_rate": estimate_value(summary["format"]["parse_failure_rate"]),
         **{f"emits_{letter}": estimate_value(summary["format"]["letter_histogram"].get(letter)) for letter in LETTERS}}
        for label, summary in summaries]).round(DECIMALS)
    if summaries:
        positions = summaries[0][1].get("gold_positions", {})
        out["gold_positions"] = pd.DataFrame([{"position": letter, "share": positions.get(letter)}
                                                    for letter in LETTERS]).round(DECIMALS)
    group_rows = [{"model": label, "key": key, "value": value, "accuracy": estimate_value(est), "n": est["n"]}
                  for label, summary in summaries for key, values in summary.get("groups", {}).items()
                  for value, est in values.items()]
    if group_rows:
        out["groups"] = pd.DataFrame(group_rows).round(DECIMALS)
    robust = [{"model": label, **{k: v for k, v in summary["robustness"].items() if k != "reference"}}
              for label, summary in summaries if "robustness" in summary]
    if robust:
        out["robustness"] = pd.DataFrame(robust).round(DECIMALS)
    return out
