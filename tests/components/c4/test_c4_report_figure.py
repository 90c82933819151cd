"""C4 in ``biovqa report``: the d′/c figure a reader can decode (error bars from the summaries'
intervals, metric names on the axes, the legend outside the panels, specialist and floor runs
marked as such), no header-only Table 53 without a specialist, and Table 3 on the report page
footnoting a specialist's C4 cells scored on one dataset only."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fixtures.c4_benches import PixelEmbedder, designed_catalogs
from fixtures.cli_runner import cli

import biovqa
from biovqa.components.c4 import report
from biovqa.components.c4.tasks import CONDITIONS

VLMS = (("Sharp-VL", 0.85), ("Dull-VL", 0.6))


def _reply(model: str, share: float, item_id: str, gold: str) -> str:
    h = int(hashlib.sha256(f"{model}|{item_id}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return gold if h < share else ("No" if gold == "Yes" else "Yes")


@pytest.fixture(scope="module")
def score_folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A whale shark + Grevy's zebra bench (designed embeddings, ``biovqa build c4``), scored for
    two VLMs, the image-blind baseline and the specialist run on Grevy's zebra only."""
    from biovqa.components.c4.build import build_c4
    from biovqa.components.c4.specialist import run_specialist

    root = tmp_path_factory.mktemp("c4-report")
    catalogs, embeddings = designed_catalogs(root, catalog_seeds={"whaleshark": 31, "gzcd": 32}, vector_seed=5)
    bench = build_c4(catalogs, None, root / "bench", embeddings=embeddings, pairs_per_kind=6).root
    items = pq.read_table(bench / "items.parquet", columns=["item_id", "answer"]).to_pylist()
    folders = {}
    for k, (label, share) in enumerate(VLMS):
        predictions = root / f"pred-{k}.parquet"
        pq.write_table(pa.table({"item_id": [i["item_id"] for i in items],
                                 "response": [_reply(label, share, i["item_id"], str(i["answer"])) for i in items],
                                 "status": ["ok"] * len(items), "model": [label] * len(items)}), predictions)
        folders[label] = biovqa.score(bench, predictions, root / f"scores-{k}", label=label, bootstrap=200)
    floor = biovqa.run(bench, root / "run-floor", backend="baseline", progress=False)
    folders["floor"] = biovqa.score(bench, floor, root / "scores-floor", bootstrap=200)
    specialist = run_specialist(bench, PixelEmbedder(), root / "run-md", datasets=["gzcd"])
    # unlabelled: the label comes from the run card, "MegaDescriptor-L-384 [specialist]"
    folders["specialist"] = biovqa.score(bench, specialist, root / "scores-md", bootstrap=200)
    return folders


def _summaries(folders: dict[str, Path]) -> list[tuple[str, dict]]:
    out = []
    for folder in folders.values():
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        out.append((summary["label"], summary))
    return out


def test_figure_error_bars_are_the_summaries_intervals(score_folders: dict[str, Path]) -> None:
    from matplotlib.container import ErrorbarContainer
    from matplotlib.figure import Figure

    summaries = _summaries(score_folders)
    axes = Figure(figsize=(12, 6)).subplots(2, 3)
    ticks = report.draw_dprime_c(axes, summaries)
    assert ticks == ["Whale shark", "Grevy's zebra", "Pooled"]
    assert axes[0][0].get_ylabel().startswith("d′") and axes[1][0].get_ylabel().startswith("criterion c")
    assert [ax.get_title() for ax in axes[0]] == [f"{c} pairs" for c in CONDITIONS]
    assert all(ax.get_xticklabels()[0].get_rotation() == 35 for row in axes for ax in row)
    labels = [h.get_label() for h in axes[0][2].containers]
    assert labels[:4] == ["Sharp-VL", "Dull-VL", "baseline (floor)",
                          "MegaDescriptor-L-384 (specialist, Grevy's zebra only)"]
    # where its similarity separates the pairs perfectly, √2·z(AUC) is not finite: said, not left blank
    perfect = [s["pooled"][c]["auc"]["value"] == 1.0 for c in CONDITIONS for label, s in summaries
               if "[specialist]" in label]
    assert labels[4:] == ([f"{report.PERFECT_AUC_LABEL} (MegaDescriptor-L-384)"] if any(perfect) else [])
    for row, key in enumerate(("dprime", "c")):
        for column, condition in enumerate(CONDITIONS):
            containers, checked = axes[row][column].containers[:len(summaries)], 0
            assert len(containers) == len(summaries) and all(isinstance(c, ErrorbarContainer) for c in containers)
            for container, (label, s) in zip(containers, summaries):
                specialist = "[specialist]" in label
                field = "dprime_auc" if specialist and key == "dprime" else key
                cells = [s["cells"].get("whaleshark", {}).get(condition, {}).get(field),
                         s["cells"]["gzcd"][condition][field], s["pooled"][condition][field]]
                data_line, _, (bars,) = container.lines
                ys = data_line.get_ydata()
                if specialist:  # scored on Grevy's zebra only: no whale shark point
                    assert cells[0] is None and np.isnan(ys[0])
                segments = {round(float(seg[0][0])): seg for seg in bars.get_segments() if len(seg)}
                for slot, estimate in enumerate(cells):
                    if estimate is None or estimate["lo"] is None or estimate["lo"] == estimate["hi"]:
                        continue
                    assert ys[slot] == pytest.approx(estimate["value"])
                    segment = segments[slot]
                    assert segment[0][1] == pytest.approx(estimate["lo"]) and segment[1][1] == pytest.approx(
                        estimate["hi"])
                    checked += 1
            assert checked >= len(VLMS) * 3  # every VLM's interval at both datasets and pooled
    # each VLM has at least one real interval drawn in every panel (not all whiskers of length 0)
    first = axes[0][1].containers[0].lines[2][0].get_segments()
    assert any(abs(seg[1][1] - seg[0][1]) > 0 for seg in first)


def test_report_draws_the_figure_and_marks_the_subset_in_table3(tmp_path: Path, score_folders: dict[str, Path],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, err = cli(["report", *score_folders.values(), "--out", tmp_path / "report"], capsys)
    assert code == 0, err
    png = tmp_path / "report" / "c4_dprime_c.png"
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "report" / "c4_table53_specialist.csv").is_file()
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    table3 = page[page.index('<table id="table3">'):page.index("</table>", page.index('<table id="table3">'))]
    row = table3[table3.index(">MegaDescriptor-L-384<"):]
    row = row[:row.index("</tr>")]
    assert row.count('title="scored on Grevy&#39;s zebra only"') == 2  # both C4 cells, d′ and accuracy
    assert row.count("<sup class=\"subset\">†</sup>") == 2
    assert "<sup" not in table3[:table3.index(">MegaDescriptor-L-384<")]  # the other rows are on every item
    assert "MegaDescriptor-L-384 (dprime, acc): scored on Grevy&#39;s zebra only" in page
    markdown = (tmp_path / "report" / "index.md").read_text(encoding="utf-8")
    assert "† MegaDescriptor-L-384 (dprime, acc): scored on Grevy's zebra only" in markdown


def test_no_header_only_table53_without_a_specialist(tmp_path: Path, score_folders: dict[str, Path],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    models = [folder for key, folder in score_folders.items() if key != "specialist"]
    code, err = cli(["report", *models, "--out", tmp_path / "report"], capsys)
    assert code == 0, err
    out = tmp_path / "report"
    assert not list(out.glob("c4_table53_*")) and (out / "c4_table49_dprime.csv").is_file()
    assert "Table 53" not in (out / "index.html").read_text(encoding="utf-8")
    assert "†" not in (out / "index.md").read_text(encoding="utf-8")
