"""Every C3 worked example of the paper's Appendix C.6 at its printed precision, through the public path:
a tiny bench built by the real builder from native-format fixtures (or, for the catalog tasks,
written in the C3 item schema), predictions written to a file, scored by
``biovqa.scoring.pipeline.score_predictions``."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fixtures.c3_benches import cli_score, summary, write_items_bench, write_predictions

from biovqa.components.c3.build import build_c3
from biovqa.components.c3.demo import write_bees, write_beetles, write_waid
from biovqa.scoring.pipeline import score_predictions


def _score(bench: Path, replies: dict[str, str], tmp_path: Path, name: str = "s") -> tuple[dict, dict]:
    predictions = write_predictions(tmp_path / f"{name}.parquet", replies)
    out = score_predictions(bench, predictions, tmp_path / f"scores-{name}", options={"bootstrap": 0})
    items = pq.read_table(out / "items.parquet").to_pydict()
    return summary(out), items


def _counting_bench(tmp_path: Path, waid: list[int], bees: list[int]) -> tuple[Path, dict[str, int]]:
    src = tmp_path / "src"
    sources = {"waid": write_waid(src / "waid", {"test": waid}, size=(120, 90)),
               "bees": write_bees(src / "bees", bees, pollen=0, size=(200, 150))}
    bench = build_c3(sources, tmp_path / "bench", counting_tiers=("easy",), canvas=64)
    items = bench.items.to_pydict()
    golds = {i: int(g) for i, t, g in zip(items["item_id"], items["task"], items["gold_number"]) if t == "counting"}
    return bench.root, golds


def test_cas_table(tmp_path: Path) -> None:
    bench, golds = _counting_bench(tmp_path, [10] * 5, [100])
    tens = sorted(i for i, g in golds.items() if g == 10)
    (hundred,) = [i for i, g in golds.items() if g == 100]
    replies = dict(zip(tens, ["10", "12", "15", "20", "90"]))
    replies[hundred] = "95"
    _, items = _score(bench, replies, tmp_path)
    cas = dict(zip(items["item_id"], items["cas"]))
    em = dict(zip(items["item_id"], items["correct"]))
    assert [round(cas[i], 3) for i in tens] == [1.000, 0.800, 0.500, 0.000, 0.000]
    assert [em[i] for i in tens] == [1, 0, 0, 0, 0]
    assert round(cas[hundred], 3) == 0.950 and em[hundred] == 0


def test_macro_versus_micro_cas(tmp_path: Path) -> None:
    # S1 = the two bee photos {(10, 12), (10, 10)}, S2 = the one WAID photo {(100, 95)}
    bench, golds = _counting_bench(tmp_path, [100], [10, 10])
    tens = sorted(i for i, g in golds.items() if g == 10)
    (hundred,) = [i for i, g in golds.items() if g == 100]
    s, _ = _score(bench, {tens[0]: "12", tens[1]: "10", hundred: "95"}, tmp_path)
    assert len(s["counting"]["subsets"]) == 2
    assert round(s["table3"]["cnt"]["value"], 3) == 0.925
    assert round(s["counting"]["micro_cas"]["value"], 4) == 0.9167
    assert s["counting"]["subsets"]["bees"]["cas"]["value"] == pytest.approx(0.9)


def test_a_constant_count_has_zero_rank_correlation_and_unparsed_replies_score_zero(tmp_path: Path) -> None:
    bench, golds = _counting_bench(tmp_path, [3, 5, 8], [20])
    ids = sorted(golds)
    s, items = _score(bench, {i: "5" for i in ids[:-1]} | {ids[-1]: "There are many bees"}, tmp_path)
    assert s["counting"]["corpora"]["waid"]["spearman"]["value"] == 0.0
    assert s["format"]["counting"]["n_unparsed"] == 1
    assert dict(zip(items["item_id"], items["cas"]))[ids[-1]] == 0.0


def test_a_count_too_large_for_a_float_scores_zero_instead_of_failing(tmp_path: Path) -> None:
    bench, golds = _counting_bench(tmp_path, [3, 5], [20])
    ids = sorted(golds)
    huge = "1" + "0" * 400  # Python's int, not representable as a float
    s, items = _score(bench, {ids[0]: huge, ids[1]: str(golds[ids[1]])}, tmp_path)
    cas = dict(zip(items["item_id"], items["cas"]))
    assert cas[ids[0]] == 0.0 and cas[ids[1]] == 1.0
    assert dict(zip(items["item_id"], items["pred_number"]))[ids[0]] == float("inf")
    assert s["format"]["counting"]["n_parsed"] == 2


def test_absolute_distance_per_type_constant_floor_is_7_of_9(tmp_path: Path) -> None:
    lengths = [1.0, 1.1, 1.2, 1.5, 2.0]
    widths = [0.4, 0.45, 0.5, 0.8, None]
    root = write_beetles(tmp_path / "beetles", {"A00000000001.jpg": list(zip(lengths, widths))}, cm_pix=40.0)
    bench = build_c3({"beetles": root}, tmp_path / "bench", plate_side=256, rpos_items=8)
    items = bench.items.to_pydict()
    rows = [(i, g) for i, t, g in zip(items["item_id"], items["task"], items["gold_number"]) if t == "absolute_distance"]
    assert len(rows) == 9
    s, _ = _score(bench.root, {i: f"{g:.4f} cm" for i, g in rows}, tmp_path)
    section = s["absolute_distance"]
    assert round(section["floor"]["acc20"]["value"], 4) == 0.7778
    assert section["floor"]["constants"] == pytest.approx({"length": 1.2, "width": 0.48})
    assert s["table3"]["adst"]["value"] == 1.0 and section["rho_within"]["value"] == pytest.approx(1.0)
    assert section["kappa"]["value"] == pytest.approx(0.0, abs=1e-9)
    # a constant answer: ρ_within 0 and compression κ 1
    s, _ = _score(bench.root, {i: "1.2 cm" for i, _ in rows}, tmp_path, "constant")
    assert s["absolute_distance"]["rho_within"]["value"] == 0.0
    assert s["absolute_distance"]["kappa"]["value"] == pytest.approx(1.0)


def _localization_bench(tmp_path: Path, n: int, size: tuple[int, int], gold: tuple[float, ...]) -> Path:
    rows = [{"task": "localization", "answer": "[0, 0, 0, 0]", "image_width": size[0], "image_height": size[1],
             "gold_box": list(gold)} for _ in range(n)]
    return write_items_bench(tmp_path / "bench-lcl", rows)


def test_localization_format_detection_example(tmp_path: Path) -> None:
    bench = _localization_bench(tmp_path, 1, (4000, 3000), (854, 819, 3009, 2322))
    s, items = _score(bench, {"c3-localization-0000": "[214, 273, 752, 774]"}, tmp_path)
    assert round(items["iou"][0], 4) == 0.9986 and items["box_convention"][0] == "n1000 xyxy"
    conventions = s["localization"]["conventions"]
    assert round(conventions["abs xywh"], 4) == 0.0067
    assert round(conventions["n1000 xywh"], 4) == 0.4930
    assert conventions["abs xyxy"] == 0.0
    s, items = _score(bench, {"c3-localization-0000": "[854, 819, 2155, 1503]"}, tmp_path, "exact")
    assert items["iou"][0] == pytest.approx(1.0) and items["box_convention"][0] == "abs xywh"


def test_localization_headline_is_mean_parsed_iou_times_parse_rate(tmp_path: Path) -> None:
    bench = _localization_bench(tmp_path, 1000, (1000, 1000), (0, 0, 100, 100))
    replies = {f"c3-localization-{k:04d}": ("[0, 0, 100, 17]" if k < 523 else "The zebra is in the center")
               for k in range(1000)}
    s, _ = _score(bench, replies, tmp_path)
    section = s["localization"]
    assert round(section["miou_parsed"]["value"], 3) == 0.170 and round(section["parse_rate"]["value"], 3) == 0.523
    assert round(s["table3"]["lcl"]["value"], 3) == 0.089
    assert section["floor"]["miou"]["value"] == pytest.approx(1.0)  # every gold box is the same


def _viewpoint_bench(tmp_path: Path, golds: list[str]) -> Path:
    return write_items_bench(tmp_path / "bench-view", [{"task": "viewpoint", "answer": g, "tier": "species"}
                                                       for g in golds])


def test_viewpoint_synthetic_example_and_constant_answers(tmp_path: Path) -> None:
    golds = ["right", "right", "right", "left", "frontleft"]
    bench = _viewpoint_bench(tmp_path, golds)
    ids = [f"c3-viewpoint-{k:04d}" for k in range(5)]
    s, items = _score(bench, dict(zip(ids, ["right", "frontright", "left", "left", "left"])), tmp_path)
    assert items["vas"] == pytest.approx([1, 0.25, 0, 1, 0.25])
    v = s["viewpoint"]
    assert v["em"]["value"] == pytest.approx(0.4) and v["vas"]["value"] == pytest.approx(0.5)
    assert round(v["macro_vas"]["value"], 4) == 0.5556 and round(v["kappa_vas"]["value"], 4) == 0.2816
    assert items["ang_err"] == pytest.approx([0, 45, 180, 0, 45]) and v["ang_err"]["value"] == pytest.approx(54.0)
    s, _ = _score(bench, dict.fromkeys(ids, "right"), tmp_path, "constant")
    v = s["viewpoint"]
    assert v["vas"]["value"] == pytest.approx(0.6) and round(v["macro_vas"]["value"], 4) == 0.3333
    assert v["kappa_vas"]["value"] == pytest.approx(0.0, abs=1e-12)


def test_viewpoint_floor_macro_vas_is_0_170_when_all_ten_labels_occur(tmp_path: Path) -> None:
    from biovqa.components.c3.prompts import VIEWPOINTS

    bench = _viewpoint_bench(tmp_path, list(VIEWPOINTS))
    s, _ = _score(bench, {f"c3-viewpoint-{k:04d}": "right" for k in range(10)}, tmp_path)
    assert round(s["viewpoint"]["macro_vas"]["value"], 3) == 0.170
    assert s["viewpoint"]["kappa_vas"]["value"] == pytest.approx(0.0, abs=1e-12)


def test_ocr_character_accuracies(tmp_path: Path) -> None:
    bench = write_items_bench(tmp_path / "bench-ocr", [{"task": "ocr", "answer": "A00000012435"},
                                                       {"task": "ocr", "answer": "A00000987654"}])
    s, items = _score(bench, {"c3-ocr-0000": "A00000012345", "c3-ocr-0001": "A00000987654"}, tmp_path)
    assert items["correct"][0] == 0
    assert round(items["char_acc"][0], 4) == 0.8333 and round(items["suffix_char_acc"][0], 4) == 0.6667
    assert s["ocr"]["prefix"] == "A00000"


def test_ocr_constant_string_exploit_gives_0_675(tmp_path: Path) -> None:
    codes = []
    for i in range(20):  # each suffix position: digit 1 in 7 of 20 codes, no other digit more than twice
        codes.append("A00000" + "".join("1" if i < 7 else str(2 + (i + p) % 8) for p in range(6)))
    bench = write_items_bench(tmp_path / "bench-ocr", [{"task": "ocr", "answer": c} for c in codes])
    s, _ = _score(bench, {f"c3-ocr-{k:04d}": c for k, c in enumerate(codes)}, tmp_path)
    floor = s["ocr"]["floor"]
    assert floor["code"] == "A00000111111" and floor["em"]["value"] == pytest.approx(7 / 20)
    assert floor["suffix_char_acc"]["value"] == pytest.approx(0.35)
    assert round(floor["char_acc"]["value"], 3) == 0.675


def test_relative_tasks_balanced_accuracy_chance_floor_and_lift(tmp_path: Path) -> None:
    rows = [{"task": "relative_counting", "answer": g, "condition": "same", "options": ["A", "B", "C", "D"]}
            for g in "AAAB"]
    bench = write_items_bench(tmp_path / "bench-rc", rows)
    s, _ = _score(bench, {f"c3-relative_counting-{k:04d}": "Image A" for k in range(4)}, tmp_path)
    rc = s["relative_counting"]
    assert rc["accuracy"]["value"] == 0.75 and rc["balanced_accuracy"]["value"] == 0.5
    assert rc["floor"]["balanced_accuracy"]["value"] == 0.25
    assert rc["lift"]["value"] == pytest.approx((0.5 - 0.25) / 0.75) and rc["margin"]["value"] == pytest.approx(0.25)
    assert rc["pos_bias"]["value"] == 1.0


def test_a_yxyx_box_scores_under_table_43s_eight_formats_unless_the_option_asks(tmp_path: Path) -> None:

    # gold (x1, y1, x2, y2) = (100, 300, 400, 900) on a 1000 × 1000 photo, answered as (y1, x1, y2, x2)
    bench = _localization_bench(tmp_path, 1, (1000, 1000), (100, 300, 400, 900))
    predictions = write_predictions(tmp_path / "p.parquet", {"c3-localization-0000": "[300, 100, 900, 400]"})
    s = cli_score(bench, predictions, tmp_path / "eight")
    items = pq.read_table(tmp_path / "eight" / "items.parquet").to_pydict()
    # best of the eight: abs xywh → (300, 100, 1000, 500) clipped; overlap 100 × 200 over 280 000 +
    # 180 000 − 20 000 = 1/22
    assert items["box_convention"][0] == "abs xywh" and items["iou"][0] == pytest.approx(1 / 22)
    assert round(s["table3"]["lcl"]["value"], 4) == 0.0455
    assert len(s["localization"]["conventions"]) == 8 and not any("yxyx" in c for c in s["localization"]["conventions"])
    assert s["options"]["box_yxyx"] is False
    s = cli_score(bench, predictions, tmp_path / "twelve", "box_yxyx=true")
    assert s["options"]["box_yxyx"] is True and len(s["localization"]["conventions"]) == 12
    assert s["localization"]["convention"] == "abs yxyx" and s["table3"]["lcl"]["value"] == pytest.approx(1.0)


def test_relative_position_lift_is_taken_on_balanced_accuracy_as_table_3_reports(tmp_path: Path) -> None:

    golds = ["left", "left", "left", "right"]
    rows = [{"task": "relative_position", "answer": g, "options": ["left", "right", "top", "bottom"]} for g in golds]
    bench = write_items_bench(tmp_path / "bench-rpos", rows)
    predictions = write_predictions(tmp_path / "p.parquet", {f"c3-relative_position-{k:04d}": "left" for k in range(4)})
    s = cli_score(bench, predictions, tmp_path / "scores")
    rpos = s["relative_position"]
    assert rpos["accuracy"]["value"] == 0.75 and rpos["balanced_accuracy"]["value"] == 0.5
    assert s["table3"]["rpos"]["value"] == 0.5
    # Eq. 24 on balanced accuracy against Table 3's .250 floor: (.5 − .25)/(1 − .25) = 1/3 (on accuracy: 2/3)
    assert rpos["lift"]["value"] == pytest.approx(1 / 3) and rpos["margin"]["value"] == pytest.approx(0.25)
    # Table 45 prints accuracy less the majority direction's share (.75 here)
    assert rpos["margin_table45"]["value"] == pytest.approx(0.0)


def test_a_bench_that_keeps_the_condition_in_its_tier_is_one_error(tmp_path: Path) -> None:
    """A C3 bench built before relative counting's same/different moved from ``tier`` to its own
    ``condition`` column is refused, naming the file and the column."""
    from biovqa.bench.folder import write_bench
    from biovqa.errors import BiovqaError

    bench = write_items_bench(tmp_path / "new", [{"task": "relative_counting", "answer": "A", "condition": "same"}])
    items = pq.read_table(bench / "items.parquet")
    old = items.drop_columns(["condition"]).set_column(items.schema.get_field_index("tier"), "tier",
                                                         items.column("condition"))
    write_bench(tmp_path / "old", old, component="c3", generator="tests", seed=0, sources={}, parameters={})
    with pytest.raises(BiovqaError, match="no 'condition' column") as caught:
        _score(tmp_path / "old", {"c3-relative_counting-0000": "Image A"}, tmp_path)
    assert caught.value.field == "condition" and caught.value.file == str(tmp_path / "old" / "items.parquet")


def test_every_c3_lift_is_on_its_table_3_metric(tmp_path: Path) -> None:
    """Each section's lift is Eq. 24 applied to the task's Table 3 column and its floor."""
    count = {"task": "counting", "subset": "bees", "dataset": "bees", "tier": "easy"}
    rows_and_replies = [
        ({**count, "answer": "4", "gold_number": 4.0}, "4"), ({**count, "answer": "6", "gold_number": 6.0}, "3"),
        ({**count, "answer": "4", "gold_number": 4.0}, "5"),
        *[({"task": "relative_counting", "answer": g, "condition": "same"}, r) for g, r in zip("AABC", "AACA")],
        *[({"task": "relative_distance", "answer": g, "measure": "length"}, f"Beetle {r}") for g, r in zip("ABBD", "ABAA")],
        *[({"task": "relative_position", "answer": g, "options": ["left", "right", "top", "bottom"]}, r)
          for g, r in (("left", "left"), ("left", "left"), ("left", "right"), ("right", "left"), ("top", "top"))],
        *[({"task": "absolute_distance", "answer": str(g), "gold_number": g, "measure": m}, f"{r} cm")
          for g, m, r in ((1.0, "length", 1.1), (1.5, "length", 1.0), (2.0, "length", 2.6), (0.5, "width", 0.5))],
        *[({"task": "localization", "answer": "[0, 0, 0, 0]", "image_width": 100, "image_height": 100, "gold_box": b}, r)
          for b, r in (([10, 10, 50, 50], "[10, 10, 40, 40]"), ([20, 20, 80, 60], "[0, 0, 50, 50]"))],
        *[({"task": "viewpoint", "answer": g, "tier": "red_box"}, r)
          for g, r in (("right", "right"), ("right", "frontright"), ("left", "left"), ("back", "left"))],
        *[({"task": "ocr", "answer": g}, r) for g, r in (("A00000012345", "A00000012345"), ("A00000099999", "A00000012345"),
                                                        ("A00000011111", "A00000011111"))],
    ]
    bench = write_items_bench(tmp_path / "bench-all", [row for row, _ in rows_and_replies])
    replies = {f"c3-{row['task']}-{k:04d}": reply for k, (row, reply) in enumerate(rows_and_replies)}
    s, _ = _score(bench, replies, tmp_path)
    floors = {"cnt": ("counting", "cas"), "rcnt": ("relative_counting", "balanced_accuracy"),
              "rdst": ("relative_distance", "balanced_accuracy"), "rpos": ("relative_position", "chance"),
              "adst": ("absolute_distance", "acc20"), "lcl": ("localization", "miou"),
              "view": ("viewpoint", "macro_vas"), "ocr": ("ocr", "em")}
    for column, (task, floor_name) in floors.items():
        value, floor = s["table3"][column]["value"], s[task]["floor"][floor_name]["value"]
        assert 0 < floor < 1 and value != floor, column
        assert s[task]["lift"]["value"] == pytest.approx((value - floor) / (1 - floor)), column
        assert s[task]["margin"]["value"] == pytest.approx(value - floor), column


def test_bootstrap_defaults_follow_the_papers_resample_counts(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    import biovqa

    from biovqa.cli.main import app

    defaults = {name: biovqa.get_component(name).resolve_score_options({})["bootstrap"] for name in ("c2", "c3", "c4")}
    assert defaults == {"c2": 1000, "c3": 2000, "c4": 2000}
    bench = _viewpoint_bench(tmp_path, ["right", "left", "left"])
    predictions = write_predictions(tmp_path / "p.parquet", {f"c3-viewpoint-{k:04d}": "left" for k in range(3)})
    result = CliRunner().invoke(app, ["score", str(bench), "-p", str(predictions), "-o", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    s = summary(tmp_path / "s")
    assert s["options"]["bootstrap"] == 2000 and s["bootstrap"]["B"] == 2000
    assert s["viewpoint"]["em"]["lo"] <= s["viewpoint"]["em"]["value"] <= s["viewpoint"]["em"]["hi"]
    assert cli_score(bench, predictions, tmp_path / "none")["bootstrap"]["B"] == 0
