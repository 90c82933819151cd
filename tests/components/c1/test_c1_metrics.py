"""Worked examples of metrics.md §2 on the pure C1 formulas."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from biovqa.components.c1.floor import (
    floor_answers,
    floor_scores,
    headroom,
    item_weighted_score,
    recognition_recall_gap,
)
from biovqa.components.c1.kernels import information_content, lin_similarity, severity_of, wu_palmer
from biovqa.components.c1.parse import last_word
from biovqa.text import normalize_c1

# §2.7 green treefrog: N = 900 000; |Chordata| = 450 000; |Anura| = 7 500; |Dryophytes| = 30; species 1.
N = 900_000
SIZES = {"root": N, "Chordata": 450_000, "Anura": 7_500, "Dryophytes": 30, "species": 1}
DEPTHS = {"root": 0, "Chordata": 1, "Anura": 3, "Dryophytes": 5, "species": 6}
TREEFROG = [
    # answer, LCA, EM, EM_soft, severity, wup, lin
    ("Dryophytes cinereus", "species", 1, 1, 0, 1.0, 1.0),
    ("Hyla cinerea", "species", 0, 1, 0, 1.0, 1.0),
    ("Dryophytes gratiosus", "Dryophytes", 0, 0, 1, 5 / 6, 0.7519),
    ("Anaxyrus americanus", "Anura", 0, 0, 3, 0.5, 0.3492),
    ("Mus musculus", "Chordata", 0, 0, 5, 1 / 6, 0.0506),
]


@pytest.mark.parametrize(("answer", "lca", "em", "em_soft", "sev", "wup", "lin"), TREEFROG)
def test_treefrog_table(answer: str, lca: str, em: int, em_soft: int, sev: int, wup: float, lin: float) -> None:
    ic = information_content(np.array([SIZES[lca], SIZES["species"]]), N)
    got_wup = wu_palmer(np.array([DEPTHS[lca]]), np.array([6]), np.array([6]))[0]
    got_lin = lin_similarity(ic[:1], ic[1:], ic[1:])[0]
    got_sev = severity_of(np.array([6]), np.array([DEPTHS[lca]]))[0]
    assert got_wup == pytest.approx(wup, abs=5e-5)
    assert got_lin == pytest.approx(lin, abs=5e-5)
    assert got_sev == sev


def test_treefrog_severity_mean_over_wrong_resolved_answers() -> None:
    wrong = [row[4] for row in TREEFROG if row[3] == 0]
    assert np.mean(wrong) == 3.0


def test_lin_uses_log_ratio_and_root_has_zero_information() -> None:
    ic = information_content(np.array([N, 30, 1]), N)
    assert ic[0] == 0.0
    assert lin_similarity(ic[1:2], ic[2:], ic[2:])[0] == pytest.approx(math.log(30_000) / math.log(N))
    assert wu_palmer(np.array([0]), np.array([0]), np.array([0]))[0] == 0.0  # guarded denominator


@pytest.mark.parametrize(("reply", "normalized"), [
    ("The phylum is Chordata.", "chordata"),
    ("  Answer: Dryophytes   cinereus ", "dryophytes cinereus"),
    ("Cooper's Hawk", "coopers hawk"),
    ("Black-footed albatross", "blackfooted albatross"),  # punctuation removed (paper C.1)
    ("Épinette", "epinette"),
])
def test_normalizer(reply: str, normalized: str) -> None:
    assert normalize_c1(reply) == normalized


@pytest.mark.parametrize(("reply", "kept"), [
    ("Dryophytes cinereus", "cinereus"), ("cinereus", "cinereus"), ("", ""), ("   ", ""),
    ("  it is cinereus\n", "cinereus"),
])
def test_epithet_last_word_quirk(reply: str, kept: str) -> None:
    assert last_word([reply]) == [kept]


COUNTS = {"phylum": 100_000, "class": 100_000, "order": 90_000, "family": 100_000, "genus": 100_000,
          "species": 100_000, "scientific_name": 100_000, "common_name": 100_000, "common_name_mcq": 100_000}
TYPES = ("phylum", "class", "order", "family", "genus", "species", "scientific_name", "common_name",
         "common_name_mcq")


@pytest.mark.parametrize(("model", "per_type", "pooled"), [
    ("Qwen3-VL-30B-A3B", (.864, .731, .757, .612, .417, .072, .221, .107, .772), 0.5031),
    ("BioCLIP-2 (tol)", (.925, .874, .821, .775, .691, .545, .544, .500, .966), 0.7370),
])
def test_pooled_item_weighted_score(model: str, per_type: tuple[float, ...], pooled: float) -> None:
    assert item_weighted_score(dict(zip(TYPES, per_type)), COUNTS) == pytest.approx(pooled, abs=5e-5)


@pytest.mark.parametrize(("score", "floor", "expected"), [(.725, .5, .450), (.545, .1, .494)])
def test_headroom(score: float, floor: float, expected: float) -> None:
    assert headroom(score, floor) == pytest.approx(expected, abs=5e-4)


# Table 20: open-ended and MCQ common-name EM of the 18 VLMs
OPEN_COMMON = [.078, .065, .044, .062, .025, .107, .047, .024, .064, .020, .043, .054, .015, .027, .016, .004,
               .009, .003]
MCQ_COMMON = [.809, .775, .752, .753, .707, .772, .687, .653, .689, .643, .657, .655, .595, .592, .574, .465,
              .443, .382]


def test_recognition_recall_gap_18_model_means() -> None:
    gap, ratio = recognition_recall_gap(float(np.mean(MCQ_COMMON)), float(np.mean(OPEN_COMMON)))
    assert gap == pytest.approx(.606, abs=1e-3)  # printed means .645 − .039
    assert round(ratio, 1) == 16.4


def test_recognition_recall_gap_printed_means() -> None:
    assert recognition_recall_gap(.645, .039)[0] == pytest.approx(.606, abs=5e-4)
    assert recognition_recall_gap(.677, .085)[0] == pytest.approx(.592, abs=5e-4)
    assert math.isnan(recognition_recall_gap(0.5, 0.0)[1])


def test_floor_is_the_most_frequent_answer_per_type() -> None:
    items = pa.table({
        "task": ["phylum"] * 4 + ["genus"] * 3,
        "answer": ["Chordata", "chordata", "Arthropoda", "Chordata", "Abies", "Picea", "Abies"],
    })
    assert floor_answers(items) == {"phylum": "Chordata", "genus": "Abies"}
    assert floor_scores(items) == {"genus": pytest.approx(2 / 3), "phylum": 0.75}
    # ties: the smallest normalized answer wins
    tie = pa.table({"task": ["genus", "genus"], "answer": ["Picea", "Abies"]})
    assert floor_answers(tie) == {"genus": "Abies"}
