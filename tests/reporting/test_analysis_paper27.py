"""Supplement J's 27-task analysis (the 27 task columns; the rows the paper does not print imputed) built the way ``biovqa analyze`` builds
it — from score summaries — here with the summaries carrying the paper's per-task tables (Table 75
C1 groups, Table 33 C2 families, Table 3 C3 tasks, Table 86 C4 species) and the imputations below for the rows the paper does
not print; every number of the 27-column reconstruction is reproduced."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biovqa.components import get_component
from biovqa.reporting.analysis import cross_component, paper27_availability, paper27_matrix, paper27_tasks
from biovqa.reporting.leaderboard import Run

#: the 27 tasks as the components declare them: (task label, the summary key it is read under)
C1_GROUPS = [(c.label, c.path[1]) for c in get_component("c1").analysis_columns]
C2_FAMILIES = [(c.label, c.path[1]) for c in get_component("c2").analysis_columns]
C3_TASKS = tuple(c.label for c in get_component("c3").analysis_columns if not c.control)
C4_SPECIES = [(c.label, c.path[1]) for c in get_component("c4").analysis_columns]
PAPER27 = paper27_tasks()

SPECIALISTS = ("BioCLIP-2 (tol)", "BioCLIP-2 (kingdom)", "MegaDescriptor")
#: derived: Llama-3.2-Vision's random d′ per species from Table 52's means
LLAMA_C4 = (-.413, .726, .410, .292, -.506)
#: Table 3 category standing in for a family of the two models Table 33 lacks (imputed)
FAMILY_CATEGORY = {"attr_bare": "mrp", "attr_group": "sal", "marker": "loc", "vis_set": "loc", "vis_side": "loc"}
RECONSTRUCTED = {"C1-C2": .637, "C1-C3": .777, "C1-C4": .232, "C2-C3": .928, "C2-C4": .307, "C3-C4": .298}
INTERNAL = {"C1": .842, "C2": .691, "C3": .640, "C4": .385}
ALPHA = {"C1": .985, "C2": .899, "C3": .923, "C4": .761}


def _estimate(value: float) -> dict[str, object]:
    return {"value": float(value), "lo": None, "hi": None, "n": 1}


@pytest.fixture()
def paper27_runs(paper_tables: dict[int, pd.DataFrame]) -> list[Run]:
    table3 = paper_tables[3].set_index("model")
    groups = paper_tables[75].set_index("model")
    families = paper_tables[33].set_index("model").rename(index={"InternVL3.5-30B": "InternVL3.5-30B-A3B"})
    species = paper_tables[86].set_index("model")
    pooled = paper_tables[18].set_index("model")["EM"].astype(float)
    models = [m for m in table3.index if m not in ("Mean", "Floor", *SPECIALISTS)]
    listed = [m for m in models if m in groups.index]
    # imputed: a model without Table 75's row gets its pooled EM × the group profile
    # (mean group EM / mean pooled EM over the models printed)
    profile = {label: groups.loc[listed, label].astype(float).mean() / pooled[listed].mean() for label, _ in C1_GROUPS}
    runs = []
    for model in models:
        c1 = {group: {"em": _estimate(groups.loc[model, label] if model in groups.index else pooled[model] * profile[label])}
              for label, group in C1_GROUPS}
        c2 = {family: {"cags": _estimate(families.loc[model, label] if model in families.index
                                         else table3.loc[model, FAMILY_CATEGORY[label]])} for label, family in C2_FAMILIES}
        c3 = {column: _estimate(table3.loc[model, column]) for column in (*C3_TASKS, "ocr")}
        if model in species.index:
            dprime = [float(species.loc[model, label]) for label, _ in C4_SPECIES]
        else:  # Vicuna answers one constant: d′ = 0; Llama from Table 52's means
            dprime = list(LLAMA_C4) if model == "Llama-3.2-Vision" else [0.0] * 5
        c4 = {dataset: {"random": {"dprime": _estimate(d)}} for (_, dataset), d in zip(C4_SPECIES, dprime)}
        runs += [Run(model, "c1", {"groups": c1}), Run(model, "c2", {"families": c2}),
                 Run(model, "c3", {"table3": c3}), Run(model, "c4", {"cells": c4})]
    return runs


def test_the_27_tasks_are_read_from_the_summaries(paper27_runs: list[Run]) -> None:
    matrix, blocks = paper27_matrix(paper27_runs)
    assert matrix.shape == (18, 27) and not matrix.isna().any().any()
    assert [sum(1 for b in blocks.values() if b == c) for c in ("C1", "C2", "C3", "C4")] == [10, 5, 7, 5]
    assert matrix.loc["Qwen3-VL-32B", "Amph"] == .485 and matrix.loc["Qwen3-VL-32B", "beluga"] == 1.027
    assert matrix.loc["Molmo2-8B", "vis_side"] == .746 and matrix.loc["Gemma-4-12B", "view"] == .331
    availability = paper27_availability(paper27_runs)
    assert availability["models_with_value"].tolist() == [18] * 27
    assert availability.loc["grevys_zebra", "summary_path"] == "cells.gzcd.random.dprime"
    assert set(PAPER27) == set(availability.index)


def test_the_27_column_reconstruction_is_reproduced(paper27_runs: list[Run]) -> None:
    analysis = cross_component(paper27_runs, B=200, design="paper27")
    assert analysis is not None and analysis.matrix.shape == (18, 27)
    assert {pair: round(float(r), 3) for pair, r in analysis.pairs["rho"].items()} == RECONSTRUCTED
    assert {c: round(float(r), 3) for c, r in analysis.components["internal_rho"].items()} == INTERNAL
    # the reconstructed α is the standardized α of the mean Pearson r; the paper's printed
    # α (C1 .981 from internal ρ .841) is the standardized α of the internal Spearman ρ
    assert {c: round(float(a), 3) for c, a in analysis.components["alpha_std_pearson"].items()} == ALPHA
    assert analysis.components.loc["C1", "alpha_std"] == pytest.approx(10 * .842 / (1 + 9 * .842), abs=2e-4)
    assert (round(analysis.within, 3), round(analysis.across, 3)) == (.722, .443)
    assert round(analysis.pc1_share, 3) == .587
    assert analysis.p_gap < 0.05 and not analysis.imputed.to_numpy().any()


@pytest.mark.slow
def test_analyze_builds_the_27_task_matrix_from_score_folders(scored_runs: list[Path], tmp_path: Path) -> None:
    from biovqa.reporting.writer import write_analysis

    out = write_analysis(scored_runs, tmp_path / "analysis", B=50)
    card = json.loads((out / "analysis.json").read_text())
    assert card["design"] == "paper27"
    # the demo runs hold C1 and C3: C1 group columns and the seven C3 tasks, never OCR
    assert set(card["tasks"].values()) == {"C1", "C3"} and "ocr" not in card["tasks"]
    assert {t for t, c in card["tasks"].items() if c == "C3"} <= set(C3_TASKS)
    tasks = pd.read_csv(out / "paper27_tasks.csv", index_col=0)
    assert tasks.loc["cnt", "models_with_value"] == 4 and tasks.loc["beluga", "models_with_value"] == 0
    assert np.isfinite(card["within"])
