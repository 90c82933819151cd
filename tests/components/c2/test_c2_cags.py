"""cags and its companions (the paper's App. C.4, Eqs. 2, 11, 12, 22, and its derived values) through
the scorer."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from fixtures.c2_items import c2_item, predictions_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.components.c2 import similarity
from biovqa.components.c2.score import load_context, score
from biovqa.components.c2.cags import chance_adjusted, score_items
from biovqa.components.c2.context import open_baseline_sample

B_BLUE = (0.498 + 0.134 + 0.053) / 3


@pytest.mark.parametrize(
    ("s", "exact", "summary", "paper"),
    [(1.000, 1.000000, 1.0000, 1.000), (0.498, 0.349460, 0.3495, 0.350),
     (0.134, -0.122246, -0.1222, -0.122), (0.053, -0.227214, -0.2272, -0.227)],
)
def test_table_16_cags(s, exact, summary, paper):
    value = float(chance_adjusted(np.array([s]), np.array([B_BLUE]))[0])
    assert value == pytest.approx(exact, abs=1e-6)
    assert round(value, 4) == pytest.approx(summary)  # Table 16's worked colour example, to 4 decimals
    # the paper prints 0.350 for 0.34946 (rounded from unrounded kernel values)
    assert value == pytest.approx(paper, abs=6e-4)


def test_every_family_finds_its_kernel_by_name():
    """A family's kernel is the function of :mod:`.similarity` of its name (kind-of answers are
    common names, scored alike)."""
    from biovqa.components.c2.tasks import FAMILY

    assert all(family.kernel is getattr(similarity, name) for name, family in FAMILY.items())
    assert FAMILY["open_kind_of"].kernel is similarity.open_common_name


def test_cags_guard_and_sign():
    out = chance_adjusted(np.array([1.0, 0.5, 0.0]), np.array([1.0, 1.0, 0.5]))
    assert out.tolist() == [1.0, 0.0, -1.0]


def test_table_16_through_the_colour_kernel(make_bench):
    options = ["purple", "blue", "green", "yellow"]
    rows = [c2_item("attr_bare_value", f"i{k}", "blue", options, part="wing", property="color",
                    attribute_group="has_wing_color") for k in range(4)]
    bench = make_bench(rows)
    result = score(bench, predictions_for(bench, ["(B) blue", "(A) purple", "(C) green", "(D) yellow"]),
                   {"bootstrap": 0})
    got = result.items.column("cags").to_pylist()
    assert got == pytest.approx([1.0, 0.350, -0.122, -0.227], abs=1.5e-3)
    assert result.items.column("b").to_pylist() == pytest.approx([B_BLUE] * 4, abs=1e-3)
    assert result.items.column("em").to_pylist() == [1, 0, 0, 0]


SIDE = ["Left", "Right", "Both", "None"]


@pytest.mark.parametrize(
    ("gold", "reply", "expected"),
    [("Both", "(A) Left", 0.25), ("Both", "(D) None", -0.5), ("Left", "(C) Both", 0.40),
     ("Left", "(B) Right", -0.20), ("None", "(A) Left", 0.0), ("None", "(D) None", 1.0)],
)
def test_visibility_side_cags(make_bench, gold, reply, expected):
    bench = make_bench([c2_item("visibility_side", "s1", gold, SIDE, part="eye")])
    result = score(bench, predictions_for(bench, [reply]), {"bootstrap": 0})
    assert result.items.column("cags")[0].as_py() == pytest.approx(expected, abs=5e-4)


@pytest.mark.parametrize(("reply", "expected"), [("(E) All three", 3 / 11), ("(A) breast", -1 / 11), ("(B) beak", 1.0)])
def test_visibility_partset_cags(make_bench, reply, expected):
    options = ["breast", "beak", "left wing", "None", "All three"]
    bench = make_bench([c2_item("visibility_partset", "p1", "beak", options, gold_set=["beak"])])
    result = score(bench, predictions_for(bench, [reply]), {"bootstrap": 0})
    assert result.items.column("b")[0].as_py() == pytest.approx(1 / 12)
    assert result.items.column("cags")[0].as_py() == pytest.approx(expected, abs=5e-4)


def test_anat_in_vis_uses_part_similarity(make_bench):
    options = ["breast", "beak", "left wing", "None", "All three"]
    bench = make_bench([c2_item("visibility_partset", "p1", "beak", options, gold_set=["beak"])])
    exact = score(bench, predictions_for(bench, ["(A) breast"]), {"bootstrap": 0})
    soft = score(bench, predictions_for(bench, ["(A) breast"]), {"bootstrap": 0, "visibility_kernel": "anatomy"})
    assert soft.items.column("s")[0].as_py() > exact.items.column("s")[0].as_py() == 0.0


def test_parse_failure_and_missing_score_zero(make_bench):
    options = ["purple", "blue", "green", "yellow"]
    rows = [c2_item("attr_bare_value", f"i{k}", "blue", options, part="wing", property="color",
                    attribute_group="has_wing_color") for k in range(3)]
    bench = make_bench(rows)
    preds = predictions_for(bench, ["no idea", None, None], ["ok", "missing", "failed"])
    items = score(bench, preds, {"bootstrap": 0}).items
    assert items.column("parse_status").to_pylist() == ["failed", "missing", "missing"]
    assert items.column("status").to_pylist() == ["ok", "missing", "failed"]
    assert items.column("s").to_pylist() == [0.0] * 3
    assert items.column("cags").to_pylist() == [0.0] * 3
    assert items.column("severity").to_pylist() == [1.0] * 3


def test_open_items_naming_kernels_and_em(make_bench):
    names = [("Song Sparrow", "Melospiza", "Melospiza melodia"), ("Fox Sparrow", "Passerella", "Passerella iliaca"),
             ("Lincoln Sparrow", "Melospiza", "Melospiza lincolnii"), ("California Gull", "Larus", "Larus californicus"),
             ("Western Gull", "Larus", "Larus occidentalis")]
    rows = []
    for k, (common, genus, sci) in enumerate(names):
        shared = {"class_name": common, "genus": genus, "scientific_name": sci}
        rows.append(c2_item("open_common_name", f"c{k}", common, **shared))
        rows.append(c2_item("open_scientific_name", f"s{k}", sci, **shared))
        rows.append(c2_item("open_genus", f"g{k}", genus, **shared))
    rows.append(c2_item("open_kind_of", "k0", "California", class_name="California Gull", genus="Larus",
                        kind_category="Gull", kind_modifier="California"))
    rows.append(c2_item("open_kind_of", "k1", "Western", class_name="Western Gull", genus="Larus",
                        kind_category="Gull", kind_modifier="Western"))
    bench = make_bench(rows)
    replies = {"c0": "Fox Sparrow", "s0": "Melospiza georgiana", "g0": "Melospiza", "c1": "Song Sparrow",
               "c2": "Song Sparrow", "k0": "California", "k1": "California Gull"}
    ids = bench.items.column("item_id").to_pylist()
    result = score(bench, predictions_for(bench, [replies.get(i, "") for i in ids]), {"bootstrap": 0})
    by_id = {row["item_id"]: row for row in result.items.to_pylist()}
    assert by_id["c0"]["s"] == pytest.approx(0.700)
    assert by_id["s0"]["s"] == pytest.approx(0.575, abs=5e-4)
    assert by_id["g0"]["em"] == 1 and by_id["g0"]["s"] == 1.0
    assert by_id["c2"]["s"] == pytest.approx(0.75)  # genus lift: Song and Lincoln Sparrow are Melospiza
    assert by_id["k0"]["em"] == 1 and by_id["k0"]["s"] == 1.0
    assert by_id["k1"]["em"] == 0 and by_id["k1"]["s"] == pytest.approx(0.75)  # both Larus: lifted
    assert by_id["c3"]["parse_status"] == "failed" and by_id["c3"]["cags"] == 0.0
    # b: every other gold of the family (fewer than 40 exist)
    context = load_context(bench)
    pool = context.open_gold_pool["open_common_name"]
    assert len(pool) == 5
    expected_b = np.mean([similarity.open_common_name(p, "song sparrow", context)
                          for p in pool if p != "song sparrow"])
    assert by_id["c0"]["b"] == pytest.approx(expected_b)


def test_open_baseline_sample_is_fixed_and_excludes_gold():
    pool = [f"name {k:03d}" for k in range(200)]
    first = open_baseline_sample("open_common_name", "name 003", pool)
    again = open_baseline_sample("open_common_name", "name 003", pool)
    other = open_baseline_sample("open_common_name", "name 004", pool)
    assert first == again and first != other
    assert len(first) == 40 == len(set(first)) and 3 not in first
    assert sorted(open_baseline_sample("open_genus", "name 000", pool[:10])) == list(range(1, 10))


def test_category_mcq_is_exact_match(make_bench):
    options = ["Waxwing", "Nutcracker", "Waterthrush", "Grebe", "Gull"]
    bench = make_bench([c2_item("category_mcq", "m1", "Gull", options), c2_item("category_mcq", "m2", "Gull", options)])
    items = score(bench, predictions_for(bench, ["(E) Gull", "(D) Grebe"]), {"bootstrap": 0}).items
    assert items.column("cags").to_pylist() == [1.0, 0.0]
    assert items.column("b").to_pylist() == [0.0, 0.0]


def test_marker_needs_layout(make_bench):
    options = ["beak", "breast", "left leg", "left eye", "left wing"]
    bench = make_bench([c2_item("marker_localization", "k1", "beak", options, marker_color="yellow",
                                marker_shape="dot")], layout=None)
    with pytest.raises(MissingResourceError, match="part_layout"):
        score(bench, predictions_for(bench, ["(A) beak"]), {"bootstrap": 0})


def test_bad_inputs_are_named(make_bench):
    options = ["purple", "blue"]
    bench = make_bench([c2_item("attr_bare_value", "i0", "blue", options, part="wing", property="color",
                                attribute_group="has_wing_color")])
    with pytest.raises(InputFormatError, match="rows"):
        score(bench, pa.table({"item_id": ["i0", "i1"], "response": ["a", "b"], "status": ["ok", "ok"]}))
    with pytest.raises(InputFormatError, match="does not match"):
        score(bench, pa.table({"item_id": ["zz"], "response": ["a"], "status": ["ok"]}))
    bad_gold = make_bench([c2_item("attr_bare_value", "i0", "orange", options, part="wing", property="color",
                                   attribute_group="has_wing_color")])
    with pytest.raises(InputFormatError, match="not one of its options") as err:
        score(bad_gold, predictions_for(bad_gold, ["(A) purple"]))
    assert err.value.row == 1 and err.value.field == "answer"
    wrong_family = c2_item("attr_bare_value", "i0", "blue", options, part="wing", property="color",
                           attribute_group="has_wing_color")
    wrong_family["family"] = wrong_family["task"] = "visibility_side"
    bench = make_bench([wrong_family])
    with pytest.raises(InputFormatError, match="routes to 'attr_bare_value'"):
        score(bench, predictions_for(bench, ["(A) purple"]))


def _color_item_stored_as(make_bench, family: str, gold: str = "blue"):
    """A bench of one wing-colour item (options purple, blue) stored under ``family``."""
    row = c2_item("attr_bare_value", "i0", gold, ["purple", "blue"], part="wing", property="color",
                  attribute_group="has_wing_color")
    row["family"] = row["task"] = family
    return make_bench([row])


def test_routing_failure_is_reported_before_a_later_steps_failure(make_bench):
    """The routing check runs on a worker thread beside the later steps; when both fail (here a
    gold that is not an option), the routing error is the one reported, as when the steps ran
    one after another."""
    bench = _color_item_stored_as(make_bench, "visibility_side", gold="orange")
    with pytest.raises(InputFormatError, match="routes to 'attr_bare_value'") as err:
        score(bench, predictions_for(bench, ["(A) purple"]))
    assert err.value.field == "question" and err.value.row == 1


def test_unknown_family_and_missing_prediction_column(make_bench):
    bench = _color_item_stored_as(make_bench, "attr_mystery")
    with pytest.raises(InputFormatError, match="unknown C2 family 'attr_mystery'") as err:
        score(bench, predictions_for(bench, ["(A) purple"]))
    assert err.value.row == 1 and err.value.field == "family"
    with pytest.raises(InputFormatError, match="lack a required column") as err:
        score(bench, pa.table({"item_id": ["i0"], "response": ["(A) purple"]}))
    assert err.value.field == "status"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(min_value=0, max_value=2**31))
def test_distractor_guesser_averages_zero(make_bench, seed):
    """Answering a uniformly random distractor has expected cags 0 on every item (the chance
    level of Eq. 12); uniform guessing over all k options has expected cags 1/k."""
    rng = np.random.default_rng(seed)
    colours = ["blue", "brown", "purple", "rufous", "grey", "yellow", "olive", "green", "black", "white"]
    rows, distractor_replies = [], []
    for k in range(30):
        options = list(rng.choice(colours, size=5, replace=False))
        gold = options[int(rng.integers(5))]
        rows.append(c2_item("attr_bare_value", f"i{k}", gold, options, part="wing", property="color",
                            attribute_group="has_wing_color"))
        distractor_replies.append([f"({'ABCDE'[j]}) {o}" for j, o in enumerate(options) if o != gold])
    bench = make_bench(rows)
    total = np.zeros(30)
    for d in range(4):
        result = score(bench, predictions_for(bench, [r[d] for r in distractor_replies]), {"bootstrap": 0})
        total += np.array(result.items.column("cags").to_pylist())
    assert np.abs(total / 4).max() < 1e-9


def test_scoring_is_deterministic(make_bench):
    options = ["purple", "blue", "green", "yellow"]
    rows = [c2_item("attr_bare_value", f"i{k}", "blue", options, part="wing", property="color",
                    attribute_group="has_wing_color") for k in range(20)]
    bench = make_bench(rows)
    preds = predictions_for(bench, [["(A) purple", "(B) blue", "green"][k % 3] for k in range(20)])
    first = score(bench, preds, {"bootstrap": 50})
    second = score(bench, preds, {"bootstrap": 50})
    assert first.items.equals(second.items)
    assert first.summary == second.summary


def test_score_items_direct(make_bench):
    options = ["purple", "blue"]
    bench = make_bench([c2_item("attr_bare_value", "i0", "blue", options, part="wing", property="color",
                                attribute_group="has_wing_color")])
    table = score_items(bench.items, predictions_for(bench, ["(B) Red"]), load_context(bench))
    assert table.column("parse_status")[0].as_py() == "parsed"  # "red" is no option: letter only


def test_a_gold_outside_the_options_falls_back_on_its_answer_letter(make_bench):
    """Step 3: where the stored answer is none of the options' texts (nor "(X) text"), the
    item's ``answer_letter`` names the gold option; only such items read that column."""
    options = ["purple", "blue", "green", "yellow"]
    rows = [c2_item("attr_bare_value", "i0", "blue", options, part="wing", property="color",
                    attribute_group="has_wing_color"),
            c2_item("attr_bare_value", "i1", "cobalt", options, part="wing", property="color",
                    attribute_group="has_wing_color", answer_letter="B")]
    bench = make_bench(rows)
    items = score(bench, predictions_for(bench, ["(B) blue", "(B) blue"]), {"bootstrap": 0}).items
    assert items.column("gold_letter").to_pylist() == ["B", "B"]
    assert items.column("em").to_pylist() == [1, 1]
