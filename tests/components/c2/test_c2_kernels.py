"""Worked examples of the paper's similarity kernels (App. C.5, Eqs. 13–18) and kernel properties."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.components.c2 import kernels
from biovqa.components.c2.kernels import KernelConfig, PartLayout

LINEAR = KernelConfig(colour_kernel="linear")


@pytest.mark.parametrize(
    ("c1", "c2", "exponential", "linear", "delta_e"),
    [
        ("blue", "purple", 0.498, 0.791, 20.931),
        ("blue", "green", 0.134, 0.396, 60.370),
        ("blue", "yellow", 0.053, 0.120, 87.976),
        ("brown", "rufous", 0.760, 0.918, 8.223),
        ("yellow", "orange", 0.507, 0.796, 20.391),
        ("black", "white", 0.036, 0.000, 100.000),
    ],
)
def test_colour_pair_table_both_columns(c1, c2, exponential, linear, delta_e):
    assert kernels.colour_similarity(c1, c2) == pytest.approx(exponential, abs=5e-4)
    assert kernels.colour_similarity(c1, c2, LINEAR) == pytest.approx(linear, abs=5e-4)
    # colour-science's sRGB matrix differs from the spec's printed one in the 4th digit
    assert kernels.colour_delta_e_table()[(c1, c2)] == pytest.approx(delta_e, abs=0.01)


def test_ciede2000_sharma_pair_1():
    assert kernels.ciede2000((50, 2.6772, -79.7751), (50, 0, -82.7485)) == pytest.approx(2.0425, abs=5e-5)


def test_delta_e_max_is_black_white():
    assert kernels.colour_delta_e_max() == pytest.approx(100.0, abs=1e-3)


def test_colour_science_leaves_numpy_printing_as_it_was():
    """colour-science sets NumPy's legacy printing on import; the kernels must not let it, or
    every CSV a report writes later in the same process (biovqa demo) changes its digits."""
    import subprocess
    import sys

    code = ("import numpy as np\n"
            "from biovqa.components.c2 import kernels\n"
            "before = np.get_printoptions()\n"
            "kernels.computed_colour_delta_e_table()\n"
            "assert np.get_printoptions() == before, np.get_printoptions()\n"
            "print(str(np.float64(0.8055555555555556)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0.8055555555555556"


def test_shipped_colour_table_equals_colour_science():
    """The ΔE00 table the kernel reads is the one colour-science computes from the anchors. Equal to
    within rounding, not bit for bit: the last digit moves between colour-science and NumPy
    releases (0.4.7 on NumPy 2.4 differs from the shipped table in the last place), which is why
    the table is shipped: scores do not depend on which release is installed."""
    pytest.importorskip("colour")
    shipped, computed = kernels.colour_delta_e_table(), kernels.computed_colour_delta_e_table()
    assert shipped.keys() == computed.keys()
    for pair, value in shipped.items():
        assert value == pytest.approx(computed[pair], rel=1e-12, abs=1e-12), pair
    assert set(kernels.colour_delta_e_table()) == {(a, b) for a in kernels.COLOUR_ANCHORS_SRGB
                                                   for b in kernels.COLOUR_ANCHORS_SRGB}


def test_colour_kernel_does_not_import_colour_science():
    import subprocess
    import sys

    code = ("import sys\n"
            "from biovqa.components.c2 import kernels\n"
            "print(kernels.colour_similarity('blue', 'purple'), 'colour' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    value, imported = out.stdout.split()
    assert float(value) == pytest.approx(math.exp(-20.926285807408657 / 30)) and imported == "False"


def test_colour_table_for_other_anchors_is_refused(monkeypatch):
    from biovqa.errors import MissingResourceError

    monkeypatch.setitem(kernels.COLOUR_ANCHORS_SRGB, "blue", (0, 0, 255))
    kernels.colour_delta_e_table.cache_clear()
    try:
        with pytest.raises(MissingResourceError, match="other colour anchors") as raised:
            kernels.colour_delta_e_table()
        assert "colour_delta_e00.json" in str(raised.value) and "anchors_srgb" in str(raised.value)
    finally:
        monkeypatch.undo()
        kernels.colour_delta_e_table.cache_clear()


def test_iridescent_is_exact_only_and_gray_spelling():
    assert kernels.colour_similarity("iridescent", "iridescent") == 1.0
    assert kernels.colour_similarity("iridescent", "blue") == 0.0
    assert kernels.colour_similarity("Gray", "grey") == 1.0


@pytest.mark.parametrize("tau", [20.0, 40.0, 50.0])
def test_colour_tau_changes_exponential_kernel(tau):
    delta = kernels.colour_delta_e_table()[("blue", "purple")]
    assert kernels.colour_similarity("blue", "purple", KernelConfig(tau=tau)) == pytest.approx(math.exp(-delta / tau))


@pytest.mark.parametrize(
    ("v1", "v2", "scale", "expected"),
    [
        ("shorter than head", "about the same as head", "bill_length", 0.50),
        ("shorter_than_head", "longer_than_head", "bill_length", 0.00),
        ("small (5 - 9 in)", "medium (9 - 16 in)", "size", 0.75),
        ("very_small_(3_-_5_in)", "very_large_(32_-_72_in)", "size", 0.0),
    ],
)
def test_ordinal(v1, v2, scale, expected):
    assert kernels.ordinal_similarity(v1, v2, scale) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("v1", "v2", "expected"),
    [("spotted", "striped", 0.5), ("solid", "striped", 0.0), ("striped", "striped", 1.0),
     ("multi-colored", "spotted", 0.5), ("multi-colored", "multicolored", 1.0)],
)
def test_pattern(v1, v2, expected):
    assert kernels.pattern_similarity(v1, v2) == expected


@pytest.mark.parametrize(
    ("group", "kernel"),
    [("has_wing_color", "colour"), ("has_upper_tail_color", "colour"), ("has_bill_length", "ordinal:bill_length"),
     ("has_size", "ordinal:size"), ("has_breast_pattern", "pattern"), ("has_head_pattern", "exact"),
     ("has_bill_shape", "exact"), ("has_shape", "exact"), ("has_wing_shape", "exact")],
)
def test_kernel_dispatch(group, kernel):
    assert kernels.value_kernel_for_group(group) == kernel


def paper_like_layout() -> PartLayout:
    """A layout with diameter 1 (beak–tail) where part(wing, breast) = 0.808 and
    part(wing, tail) = 0.474, the values the paper's Eq. 17 vectors imply."""
    return PartLayout.from_xy({
        "beak": [1.0, 0.0], "tail": [0.0, 0.0], "breast": [0.718, 0.0],
        "left_wing": [0.526, 0.0], "right_wing": [0.526, 0.0],
    })


@pytest.mark.parametrize(
    ("other", "expected"),
    [("wing color: purple", 0.749), ("breast color: blue", 0.952), ("tail color: yellow", 0.395)],
)
def test_paired_attribute_vectors(other, expected):
    layout = paper_like_layout()
    assert layout.d_max == pytest.approx(1.0)
    assert kernels.paired_attribute_similarity("wing color: blue", other, layout) == pytest.approx(expected, abs=5e-4)


def test_paired_attribute_first_vector_is_layout_independent():
    layout = PartLayout.from_xy({"beak": [0.9, 0.2], "tail": [0.1, 0.6], "left wing": [0.4, 0.4],
                                 "right wing": [0.45, 0.42]})
    assert kernels.paired_attribute_similarity("wing color: blue", "wing color: purple", layout) == pytest.approx(0.749, abs=5e-4)


def test_paired_attribute_alpha_and_other_properties():
    layout = paper_like_layout()
    same_region = kernels.paired_attribute_similarity("wing color: blue", "wing color: purple", layout,
                                                      KernelConfig(alpha=0.3))
    assert same_region == pytest.approx(0.3 * 1.0 + 0.7 * math.exp(-kernels.colour_delta_e_table()[("purple", "blue")] / 30))
    # different properties share no value scale
    cross = kernels.paired_attribute_similarity("wing color: blue", "wing pattern: striped", layout)
    assert cross == pytest.approx(0.5 * (0.5 * 1.0 + 0.0) + 0.0)


def test_parse_trait():
    assert kernels.parse_trait("upper tail color: blue") == kernels.Trait("upper tail", "color", "blue")
    assert kernels.parse_trait("size: small (5 - 9 in)") == kernels.Trait("", "size", "small (5 - 9 in)")
    assert kernels.parse_trait("bill length: shorter than head").attribute_group == "has_bill_length"


@pytest.mark.parametrize(
    ("pred", "gold", "expected"),
    [("both", "left", 0.5), ("both", "none", 0.0), ("left", "right", 0.0), ("none", "none", 1.0)],
)
def test_soft_jaccard_side(pred, gold, expected):
    assert kernels.soft_jaccard(kernels.side_option_set(pred), kernels.side_option_set(gold)) == expected


def test_partset_encoding():
    offered = ["breast", "beak", "left wing"]
    assert kernels.partset_option_set("All three", offered) == frozenset(offered)
    assert kernels.partset_option_set("None", offered) == frozenset()
    assert kernels.partset_option_set("Left_wing", offered) == frozenset({"left wing"})


def test_soft_jaccard_with_anatomy_kappa():
    layout = paper_like_layout()
    kappa = layout.part_similarity
    value = kernels.soft_jaccard({"breast"}, {"left wing"}, kappa)
    m = layout.part_similarity("breast", "left wing")
    assert value == pytest.approx(m / (2 - m))


def test_part_layout_file_roundtrip_and_errors(tmp_path):
    path = tmp_path / "part_layout.json"
    path.write_text(json.dumps({"beak": [1, 0], "tail": [0, 0], "left_eye": [0.9, 0.1], "nape": None}))
    layout = PartLayout.from_file(path)
    assert set(layout.points) == {"beak", "tail", "left eye"}
    assert layout.points["left eye"][2] == -kernels.LATERAL_OFFSET
    assert layout.part_similarity("beak", "tail") == 0.0
    with pytest.raises(MissingResourceError, match="part layout not found"):
        PartLayout.from_file(tmp_path / "absent.json")
    path.write_text('{"beak": [1]}')
    with pytest.raises(InputFormatError, match="beak"):
        PartLayout.from_file(path)
    with pytest.raises(InputFormatError, match="not in the part layout"):
        layout.part_similarity("beak", "antenna")


colour_words = st.sampled_from(kernels.COLOUR_WORDS)
sizes = st.sampled_from(kernels.ORDINAL_SCALES["size"])
patterns = st.sampled_from(["solid", "spotted", "striped", "multi-colored"])
parts = st.sampled_from(["beak", "tail", "breast", "left wing", "right wing"])
side_labels = st.sampled_from(["left", "right", "both", "none"])
configs = st.builds(KernelConfig, tau=st.sampled_from([20.0, 30.0, 40.0, 50.0]),
                    alpha=st.sampled_from([0.3, 0.4, 0.5, 0.6, 0.7]),
                    colour_kernel=st.sampled_from(["exponential", "linear"]))


@settings(max_examples=60, deadline=None)
@given(colour_words, colour_words, configs)
def test_colour_range_symmetry_identity(a, b, config):
    s = kernels.colour_similarity(a, b, config)
    assert 0.0 <= s <= 1.0
    assert s == pytest.approx(kernels.colour_similarity(b, a, config))
    assert kernels.colour_similarity(a, a, config) == 1.0


@settings(max_examples=40, deadline=None)
@given(sizes, sizes, patterns, patterns)
def test_ordinal_pattern_range_symmetry(a, b, p, q):
    for s, t in ((kernels.ordinal_similarity(a, b, "size"), kernels.ordinal_similarity(b, a, "size")),
                 (kernels.pattern_similarity(p, q), kernels.pattern_similarity(q, p))):
        assert 0.0 <= s <= 1.0 and s == t
    assert kernels.ordinal_similarity(a, a, "size") == 1.0
    assert kernels.pattern_similarity(p, p) == 1.0


@settings(max_examples=40, deadline=None)
@given(parts, parts, colour_words, colour_words, configs)
def test_anatomy_and_paired_range_symmetry_identity(p1, p2, c1, c2, config):
    layout = paper_like_layout()
    s = layout.part_similarity(p1, p2)
    assert 0.0 <= s <= 1.0 and s == pytest.approx(layout.part_similarity(p2, p1))
    region = {"left wing": "wing", "right wing": "wing"}
    o1 = f"{region.get(p1, p1)} color: {c1}"
    o2 = f"{region.get(p2, p2)} color: {c2}"
    pair = kernels.paired_attribute_similarity(o1, o2, layout, config)
    assert 0.0 <= pair <= 1.0
    assert pair == pytest.approx(kernels.paired_attribute_similarity(o2, o1, layout, config))
    assert kernels.paired_attribute_similarity(o1, o1, layout, config) == 1.0


@settings(max_examples=40, deadline=None)
@given(side_labels, side_labels)
def test_soft_jaccard_range_symmetry_identity(a, b):
    sa, sb = kernels.side_option_set(a), kernels.side_option_set(b)
    assert 0.0 <= kernels.soft_jaccard(sa, sb) <= 1.0
    assert kernels.soft_jaccard(sa, sb) == kernels.soft_jaccard(sb, sa)
    assert kernels.soft_jaccard(sa, sa) == 1.0


def test_config_validation():
    with pytest.raises(ValueError):
        KernelConfig(colour_kernel="cubic")
    with pytest.raises(ValueError):
        KernelConfig(alpha=1.5)
