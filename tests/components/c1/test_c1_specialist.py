"""The BioCLIP-2 specialist for C1 (components.md §1.7)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pyarrow.parquet as pq
import pytest

from biovqa.bench import open_bench
from biovqa.components.c1.specialist import Species, bench_species, read_label_space, run_bioclip2
from biovqa.errors import BiovqaError, InputFormatError


@pytest.fixture(scope="module")
def c1_bench(tmp_path_factory: pytest.TempPathFactory, demo_data: Path, demo_index: Path) -> Path:
    """A private C1 demo build (own photos: the shared demo photos are damaged by other tests)."""
    from fixtures.private_c1 import build_private_c1

    return build_private_c1(tmp_path_factory.mktemp("c1"), demo_data, demo_index)


class LookupEmbedder:
    """Not a model: a deterministic embedder for the answer-reading rules. An image embeds as the
    one-hot vector of a chosen species label; a text as the one-hot vector of its own string. So
    the top-1 species of each image is exactly the one ``choose`` names, and the MCQ picks the
    option whose label string ``choose_option`` names."""

    name = "lookup"
    batch_size = 7

    def __init__(self, labels: Sequence[str], choose: dict[str, str], choose_option: dict[str, str]) -> None:
        self.vocabulary = sorted(set(labels) | {f"a photo of {o}." for o in choose_option.values()})
        self.choose = choose
        self.choose_option = choose_option
        self.images: list[str] = []

    def _onehot(self, text: str) -> np.ndarray:
        vector = np.zeros(len(self.vocabulary), np.float32)
        vector[self.vocabulary.index(text)] = 1.0
        return vector

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._onehot(t) if t in self.vocabulary else np.zeros(len(self.vocabulary), np.float32)
                         for t in texts])

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        out = []
        for image in images:
            key = self.images.pop(0)  # images arrive in sorted order, each once
            vector = self._onehot(self.choose[key])
            if key in self.choose_option:
                vector = vector + 0.5 * self._onehot(f"a photo of {self.choose_option[key]}.")
            out.append(vector)
        return np.stack(out)


def _images_in_call_order(bench_root: Path) -> list[str]:
    return sorted(set(open_bench(bench_root).items.column("image").to_pylist()))  # embedded once each


def test_oracle_top1_answers_every_rank_and_scores_perfectly(tmp_path: Path, c1_bench: Path) -> None:
    bench = open_bench(c1_bench)
    gold = bench_species(bench.items)
    by_image = {r["image"]: r for r in bench.items.to_pylist()}
    choose = {image: next(s for s in gold if s.genus == row["genus"] and s.epithet == row["epithet"]).label()
              for image, row in by_image.items()}
    answers = {r["image"]: r["answer"] for r in bench.items.to_pylist() if r["task"] == "common_name_mcq"}
    embedder = LookupEmbedder([s.label() for s in gold], choose, answers)
    embedder.images = _images_in_call_order(c1_bench)
    predictions = run_bioclip2(c1_bench, embedder, tmp_path / "run", candidates="kingdom")
    replies = pq.read_table(predictions).to_pylist()
    assert [r["response"] for r in replies] == bench.items.column("answer").to_pylist()
    card = json.loads((tmp_path / "run" / "run.json").read_text())
    assert card["kind"] == "specialist" and card["candidates"] == "kingdom" and card["component"] == "c1"
    scored = subprocess.run([sys.executable, "-m", "biovqa", "score", str(c1_bench), "-p", str(predictions),
                             "-o", str(tmp_path / "scores"), "--bootstrap", "0"], capture_output=True, text=True)
    assert scored.returncode == 0, scored.stderr
    summary = json.loads((tmp_path / "scores" / "summary.json").read_text())
    assert summary["label"].startswith("BioCLIP-2")
    values = [cell["value"] for cell in summary["table3"].values() if cell and cell.get("value") is not None]
    assert len(values) >= 8 and all(value == 1.0 for value in values), summary["table3"]


def test_coarse_ranks_are_read_off_the_predicted_lineage(tmp_path: Path, c1_bench: Path) -> None:
    """Every image gets the same wrong species: each answer is that species' lineage, so a rank is
    right exactly for the items whose true lineage shares it."""
    bench = open_bench(c1_bench)
    gold = bench_species(bench.items)
    animal = next(s for s in gold if s.kingdom == "Animalia")
    images = sorted(set(bench.items.column("image").to_pylist()))
    choose = {image: animal.label() for image in images}
    embedder = LookupEmbedder([s.label() for s in gold], choose, {})
    embedder.images = _images_in_call_order(c1_bench)
    run_bioclip2(c1_bench, embedder, tmp_path / "run", candidates="tol")
    replies = dict(zip(bench.items.column("item_id").to_pylist(),
                       pq.read_table(tmp_path / "run" / "predictions.parquet").column("response").to_pylist()))
    expected = {"phylum": animal.phylum, "class": animal.klass, "order": animal.order, "family": animal.family,
                "genus": animal.genus, "species": animal.epithet, "scientific_name": animal.scientific_name,
                "common_name": animal.common_name}
    for row in bench.items.to_pylist():
        if row["task"] in expected:
            assert replies[row["item_id"]] == expected[row["task"]], row["item_id"]
        else:  # MCQ: no option label matches, arg-max falls on the first option
            assert replies[row["item_id"]] == row["options"][0]
    top1 = pq.read_table(tmp_path / "run" / "top1.parquet")
    assert set(top1.column("epithet").to_pylist()) == {animal.epithet}


def test_label_space_file_is_read_and_checked(tmp_path: Path) -> None:
    good = tmp_path / "labels.json"
    good.write_text(json.dumps([[["Animalia", "Chordata", "Amphibia", "Anura", "Hylidae", "Dryophytes", "gratiosus"],
                                 "Barking Treefrog"]]))
    (species,) = read_label_space(good)
    assert species == Species("Animalia", "Chordata", "Amphibia", "Anura", "Hylidae", "Dryophytes", "gratiosus",
                              "Barking Treefrog")
    assert species.label() == ("a photo of Animalia Chordata Amphibia Anura Hylidae Dryophytes gratiosus "
                               "with common name Barking Treefrog.")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([[["Animalia", "Chordata"], "x"]]))
    with pytest.raises(InputFormatError, match="row 1"):
        read_label_space(bad)


@pytest.mark.vision
def test_bioclip2_command_with_a_tiny_open_clip(tmp_path: Path, c1_bench: Path) -> None:
    from fixtures.open_clip_models import build_tiny_open_clip
    from fixtures.vision import require_vision

    require_vision("open_clip")
    model = build_tiny_open_clip(tmp_path / "bioclip-2")
    ran = subprocess.run([sys.executable, "-m", "biovqa", "specialist", "bioclip2", str(c1_bench), "--model",
                          str(model), "--out", str(tmp_path / "run"), "--batch-size", "16", "--device", "cpu"],
                         capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    bench = open_bench(c1_bench)
    predictions = pq.read_table(tmp_path / "run" / "predictions.parquet").to_pylist()
    assert [p["item_id"] for p in predictions] == bench.items.column("item_id").to_pylist()
    top1 = {r["image"]: r for r in pq.read_table(tmp_path / "run" / "top1.parquet").to_pylist()}
    gold = {(s.genus, s.epithet) for s in bench_species(bench.items)}
    for item, reply in zip(bench.items.to_pylist(), predictions):
        species = top1[item["image"]]
        assert (species["genus"], species["epithet"]) in gold  # the benchmark's species as label space
        assert species["kingdom"] == item["kingdom"]  # kingdom candidate set
        if item["task"] == "common_name_mcq":
            assert reply["response"] in item["options"]
        elif item["task"] == "phylum":
            assert reply["response"] == species["phylum"]
        elif item["task"] == "scientific_name":
            assert reply["response"] == f"{species['genus']} {species['epithet']}"
    card = json.loads((tmp_path / "run" / "run.json").read_text())
    assert card["kind"] == "specialist" and card["images"] == len(top1)
    scored = subprocess.run([sys.executable, "-m", "biovqa", "score", str(c1_bench), "-p",
                             str(tmp_path / "run" / "predictions.parquet"), "-o", str(tmp_path / "scores"),
                             "--bootstrap", "0"], capture_output=True, text=True)
    assert scored.returncode == 0, scored.stderr


# --- precomputed label embeddings (BioCLIP's txt_emb_species.npy + .json) -----------------------


def write_label_embeddings(folder: Path, species: Sequence[Species], vectors: np.ndarray, *,
                           orientation: str = "dims_by_species") -> Path:
    """Write a label space in BioCLIP's published form: the names as
    ``[[kingdom, phylum, class, order, family, genus, epithet], common name]`` (an unranked level
    as ""), the float matrix ``[dims × species]`` (or ``[species × dims]``)."""
    folder.mkdir(parents=True, exist_ok=True)
    names = [[[s.kingdom or "", s.phylum or "", s.klass or "", s.order or "", s.family or "", s.genus, s.epithet],
              s.common_name or ""] for s in species]
    (folder / "txt_emb_species.json").write_text(json.dumps(names), encoding="utf-8")
    matrix = vectors.T if orientation == "dims_by_species" else vectors
    np.save(folder / "txt_emb_species.npy", np.ascontiguousarray(matrix, dtype=np.float32))
    return folder


class CountingEmbedder(LookupEmbedder):
    """The lookup embedder, recording every text it was asked to encode."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.encoded: list[str] = []

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        self.encoded.extend(texts)
        return super().embed_texts(texts)


def _oracle(c1_bench: Path) -> tuple[list[Species], CountingEmbedder]:
    bench = open_bench(c1_bench)
    gold = bench_species(bench.items)
    by_image = {r["image"]: r for r in bench.items.to_pylist()}
    choose = {image: next(s for s in gold if s.genus == row["genus"] and s.epithet == row["epithet"]).label()
              for image, row in by_image.items()}
    answers = {r["image"]: r["answer"] for r in bench.items.to_pylist() if r["task"] == "common_name_mcq"}
    embedder = CountingEmbedder([s.label() for s in gold], choose, answers)
    embedder.images = _images_in_call_order(c1_bench)
    return gold, embedder


@pytest.mark.parametrize("orientation", ["dims_by_species", "species_by_dims"])
@pytest.mark.parametrize("candidates", ["kingdom", "group"])
def test_precomputed_label_embeddings_replace_encoding_the_names(tmp_path: Path, c1_bench: Path, orientation: str,
                                                                 candidates: str) -> None:
    gold, embedder = _oracle(c1_bench)
    # the published label space is larger than the benchmark's and in another order
    extra = [Species("Plantae", "Tracheophyta", "Magnoliopsida", "", "Rosaceae", "Rosa", f"fictiva{k}", None)
             for k in range(3)]
    space = [*extra, *reversed(gold)]
    folder = write_label_embeddings(tmp_path / "tol" / "embeddings", space,
                                    embedder.embed_texts([s.label() for s in space]), orientation=orientation)
    embedder.encoded.clear()
    predictions = run_bioclip2(c1_bench, embedder, tmp_path / "run", candidates=candidates,
                               label_embeddings=tmp_path / "tol")  # DIR or DIR/embeddings/
    assert not {s.label() for s in space} & set(embedder.encoded)  # only the MCQ options were encoded
    bench = open_bench(c1_bench)
    assert pq.read_table(predictions).column("response").to_pylist() == bench.items.column("answer").to_pylist()
    card = json.loads((tmp_path / "run" / "run.json").read_text())
    assert card["label_embeddings"] == str(folder.parent)
    assert card["label_space_size"] == (len(space) if candidates == "kingdom" else len(gold))


def test_label_embedding_errors_name_the_problem(tmp_path: Path, c1_bench: Path) -> None:
    gold, embedder = _oracle(c1_bench)
    vectors = embedder.embed_texts([s.label() for s in gold])

    def attempt(folder: Path, **options: Any) -> str:
        embedder.images = _images_in_call_order(c1_bench)
        with pytest.raises(BiovqaError) as caught:
            run_bioclip2(c1_bench, embedder, tmp_path / "run", label_embeddings=folder, **options)
        return str(caught.value)

    one_more = write_label_embeddings(tmp_path / "shape", gold, vectors)
    np.save(one_more / "txt_emb_species.npy", np.ones((vectors.shape[1], len(gold) + 1), np.float32))
    assert f"shape ({vectors.shape[1]}, {len(gold) + 1})" in attempt(one_more)
    assert f"lists {len(gold):,} names" in attempt(one_more)

    narrow = write_label_embeddings(tmp_path / "dims", gold, vectors[:, :-1])
    assert f"{vectors.shape[1] - 1}-dimensional, the model's image embeddings {vectors.shape[1]}" in attempt(narrow)

    flat = write_label_embeddings(tmp_path / "flat", gold, vectors)
    np.save(flat / "txt_emb_species.npy", np.ones(len(gold), np.float32))
    assert "2-D float matrix" in attempt(flat)

    good = write_label_embeddings(tmp_path / "good", gold, vectors)
    other = tmp_path / "other.json"
    names = json.loads((good / "txt_emb_species.json").read_text())
    names[1][0][6] = "renamed"
    other.write_text(json.dumps(names))
    message = attempt(good, labels=other)
    assert "differ at entry 2" in message and "--labels" in message

    missing = write_label_embeddings(tmp_path / "partial", gold[1:], vectors[1:])
    message = attempt(missing, candidates="group")
    assert gold[0].scientific_name in message and "not among" in message

    (tmp_path / "lonely").mkdir()
    np.save(tmp_path / "lonely" / "txt_emb_species.npy", vectors.T)
    assert "lacks txt_emb_species.json" in attempt(tmp_path / "lonely")


def test_cli_label_embedding_mismatch_is_exit_2(tmp_path: Path, c1_bench: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Checked before any model is loaded: no open_clip needed to see the error."""
    from fixtures.cli_runner import cli

    gold = bench_species(open_bench(c1_bench).items)
    folder = write_label_embeddings(tmp_path / "tol", gold, np.eye(len(gold) + 2, dtype=np.float32)[:len(gold)])
    np.save(folder / "txt_emb_species.npy", np.ones((8, len(gold) + 2), np.float32))
    code, err = cli(["specialist", "bioclip2", c1_bench, "--model", tmp_path / "no-model", "--out", tmp_path / "run",
                     "--label-embeddings", folder], capsys)
    assert code == 2 and "txt_emb_species.npy" in err and "neither axis matches" in err
    assert "Traceback" not in err


def test_a_published_entry_with_an_unranked_level_is_read(tmp_path: Path) -> None:
    path = tmp_path / "labels.json"
    path.write_text(json.dumps([[["Animalia", "Chordata", "Aves", "", "Fringillidae", "Serinus", "canaria"],
                                 "Common Canary"]]))
    (species,) = read_label_space(path)
    assert species.order is None and species.label() == \
        "a photo of Animalia Chordata Aves Fringillidae Serinus canaria with common name Common Canary."
    path.write_text(json.dumps([[["Animalia", "Chordata", "Aves", "", "Fringillidae", "Serinus", ""], None]]))
    with pytest.raises(InputFormatError, match="genus and epithet not empty"):
        read_label_space(path)


@pytest.mark.vision
def test_tiny_open_clip_with_its_own_label_embeddings_equals_encoding(tmp_path: Path, c1_bench: Path) -> None:
    """The label embeddings a model would compute, given precomputed, change no prediction."""
    from fixtures.open_clip_models import build_tiny_open_clip
    from fixtures.vision import require_vision

    from biovqa.components.c1.specialist import OpenClipModel

    require_vision("open_clip")
    folder = build_tiny_open_clip(tmp_path / "bioclip-2")
    model = OpenClipModel(folder, device="cpu", batch_size=16)
    gold = bench_species(open_bench(c1_bench).items)
    write_label_embeddings(tmp_path / "tol", gold, model.embed_texts([s.label() for s in gold]))
    encoded = run_bioclip2(c1_bench, model, tmp_path / "encoded", candidates="tol")
    given = run_bioclip2(c1_bench, model, tmp_path / "given", candidates="tol", label_embeddings=tmp_path / "tol")
    assert pq.read_table(given).column("response").equals(pq.read_table(encoded).column("response"))
    ran = subprocess.run([sys.executable, "-m", "biovqa", "specialist", "bioclip2", str(c1_bench), "--model",
                          str(folder), "--out", str(tmp_path / "cli"), "--device", "cpu", "--candidates", "tol",
                          "--label-embeddings", str(tmp_path / "tol")], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert pq.read_table(tmp_path / "cli" / "predictions.parquet").column("response").equals(
        pq.read_table(encoded).column("response"))
