"""C2 naming golds carry the English name beside the CUB folder label (a naming reply in
English is a correct answer): a
biologist's "Chuck-will's-widow" or "Brewer's Blackbird" scores as exact, CUB-label replies score
as before, and ``-O english_names=false`` scores the CUB label alone, as the paper."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
from fixtures.bagel_items import write_jsonl
from fixtures.cli_runner import cli

from biovqa.bench import open_bench


def test_english_names_score_as_exact_beside_the_cub_label(tmp_path: Path, capsys) -> None:
    from biovqa.synthetic import write_cub

    # 009.Brewer_Blackbird, 022.Chuck_will_Widow, 001.Black_footed_Albatross, 002.Laysan_Albatross
    cub = write_cub(tmp_path / "cub", images_per_class=2, seed=5, class_ids=(9, 22, 1, 2))
    code, err = cli(["build", "c2", "--cub", cub, "--out", tmp_path / "bench"], capsys)
    assert code == 0, err
    bench = open_bench(tmp_path / "bench")
    naming = [i for i in bench.items.to_pylist() if i["task"] == "open_common_name"]
    english = {i["answer"]: i["gold_set"] for i in naming}
    assert english["Chuck will Widow"] == ["Chuck-will's-widow"]
    assert english["Brewer Blackbird"] == ["Brewer's Blackbird"]
    assert english["Laysan Albatross"] is None  # the English name is the CUB label
    by_gold = {"Chuck will Widow": "Chuck-will's-widow", "Brewer Blackbird": "Brewer's Blackbird",
               "Black footed Albatross": "Black-footed Albatross", "Laysan Albatross": "Laysan Albatross"}
    english_replies = [{"item_id": i["item_id"], "response": by_gold[i["answer"]]} for i in naming]
    cub_replies = [{"item_id": i["item_id"], "response": i["answer"]} for i in naming]

    def scored(replies: list[dict], name: str, *options: str) -> dict[str, tuple[float, bool]]:
        predictions = write_jsonl(tmp_path / f"{name}.jsonl", replies)
        code, err = cli(["score", tmp_path / "bench", "-p", predictions, "-o", tmp_path / f"scores-{name}", "--bootstrap", "0",
                         *options], capsys)
        assert code == 0, err
        rows = pq.read_table(tmp_path / f"scores-{name}" / "items.parquet").to_pylist()
        return {r["gold"]: (r["s"], r["em"]) for r in rows if r["family"] == "open_common_name"}

    english_scores = scored(english_replies, "english")
    assert all(s == 1.0 and em for s, em in english_scores.values()), english_scores
    cub_scores = scored(cub_replies, "cub")
    assert all(s == 1.0 and em for s, em in cub_scores.values())
    # the paper's rule: the CUB label alone (Chuck-will's-widow shares no token with it)
    paper = scored(english_replies, "paper", "-O", "english_names=false")
    assert paper["Chuck will Widow"][0] < 0.5 and not paper["Chuck will Widow"][1]
    assert paper["Laysan Albatross"] == (1.0, True)
    assert scored(cub_replies, "paper-cub", "-O", "english_names=false") == cub_scores
