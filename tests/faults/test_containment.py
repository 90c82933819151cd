"""No path read from a file leads outside its folder: through the real command line in a
subprocess, every escape (``..``, an absolute path, a symlink out) in a built benchmark, an exported
release or a source annotation exits 2 naming the file, row, field and path; nothing outside is
read (a run against a loopback OpenAI-compatible server receives no byte of it) or written."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from PIL import Image

from biovqa.bench.folder import sha256_file

#: bytes that make the outside file recognisable wherever they travel (base64 in a request body)
MARKER = b"BIOVQA-OUTSIDE-SECRET-0123456789" * 4


def biovqa(*args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[int, str]:
    """Run ``python -m biovqa ARGS``; (exit code, stdout + stderr with whitespace folded)."""
    ran = subprocess.run([sys.executable, "-m", "biovqa", *map(str, args)], capture_output=True, text=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}, cwd=cwd, timeout=300)
    return ran.returncode, " ".join((ran.stdout + ran.stderr).split())


def assert_refused(code: int, output: str, *fragments: str) -> None:
    assert code == 2, output
    assert "Traceback" not in output and "internal error" not in output, output
    for fragment in fragments:
        assert fragment in output, (fragment, output)


@pytest.fixture()
def outside(tmp_path: Path) -> Path:
    """A real photo outside every folder biovqa is given, carrying :data:`MARKER`."""
    folder = tmp_path / "outside"
    folder.mkdir()
    path = folder / "secret.png"
    Image.new("RGB", (8, 8), (200, 10, 10)).save(path)
    with open(path, "ab") as handle:
        handle.write(MARKER)
    return path


def _rewrite_items(bench: Path, change: Callable[[pa.Table], pa.Table]) -> None:
    """Change the items and re-hash them in the manifest: a crafted benchmark, not a damaged one."""
    table = change(pq.read_table(bench / "items.parquet"))
    pq.write_table(table, bench / "items.parquet")
    manifest = json.loads((bench / "manifest.json").read_text(encoding="utf-8"))
    manifest["items_sha256"] = sha256_file(bench / "items.parquet")
    (bench / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def _set_first(table: pa.Table, column: str, value: str | None) -> pa.Table:
    values = table.column(column).to_pylist()
    values[0] = value
    index = table.column_names.index(column)
    return table.set_column(index, column, pa.array(values, table.schema.field(column).type))


def _escape(kind: str, bench: Path, outside: Path) -> str:
    images = Path(json.loads((bench / "manifest.json").read_text(encoding="utf-8"))["images_root"])
    if kind == "dotdot":
        return os.path.relpath(outside, images)
    if kind == "absolute":
        return str(outside)
    link = images / "innocent.png"
    link.symlink_to(outside)
    return "innocent.png"


ESCAPES = ["dotdot", "absolute", "symlink"]


@pytest.mark.parametrize("kind", ESCAPES)
def test_audit_refuses_an_item_image_outside_the_benchmark(kind: str, bench_copy: Path, outside: Path) -> None:
    image = _escape(kind, bench_copy, outside)
    _rewrite_items(bench_copy, lambda t: _set_first(t, "image", image))
    code, output = biovqa("audit", bench_copy)
    assert_refused(code, output, "items.parquet row 1", "field 'image'", repr(image), "leaves its folder")


@pytest.mark.parametrize("kind", ESCAPES)
def test_a_run_against_a_loopback_server_sends_no_outside_byte(kind: str, tmp_path: Path, bench_copy: Path,
                                                                outside: Path) -> None:
    from fixtures.scripted_server import chat_reply, scripted_server

    image = _escape(kind, bench_copy, outside)
    _rewrite_items(bench_copy, lambda t: _set_first(t, "image", image))
    encoded = base64.b64encode(outside.read_bytes())
    with scripted_server(lambda request: chat_reply("Animalia")) as server:
        code, output = biovqa("run", bench_copy, "--backend", "openai", "--model", "tiny", "--base-url",
                              server.base_url, "-o", tmp_path / "run", "--no-progress")
        bodies = list(server.bodies)
    assert_refused(code, output, "items.parquet", "row 1", "field 'image'", repr(image))
    assert not any(encoded[:64] in body or MARKER in body for body in bodies)
    assert not (tmp_path / "run" / "predictions.parquet").exists()


def test_the_loopback_check_would_see_a_photo_that_was_sent(tmp_path: Path, bench_copy: Path) -> None:
    """The control for the test above: a run on an intact benchmark does send its photos as base64,
    so finding none of the outside file's bytes means none were sent."""
    from biovqa.bench import open_bench
    from fixtures.scripted_server import chat_reply, scripted_server

    bench = open_bench(bench_copy)
    photos = {base64.b64encode(bench.resolve_image(image).read_bytes())
              for image in set(bench.items.column("image").to_pylist())}
    with scripted_server(lambda request: chat_reply("Animalia")) as server:
        code, output = biovqa("run", bench_copy, "--backend", "openai", "--model", "tiny", "--base-url",
                              server.base_url, "-o", tmp_path / "run", "--no-progress", "--limit", "1")
        bodies = list(server.bodies)
    assert code == 0, output
    assert bodies and all(any(photo in body for photo in photos) for body in bodies)


def test_a_bench_whose_items_lost_their_image_hash_fails_the_audit(bench_copy: Path) -> None:
    _rewrite_items(bench_copy, lambda t: _set_first(t, "image_sha256", None))
    code, output = biovqa("audit", bench_copy)
    assert_refused(code, output, "image_sha256", "no recorded content hash")


# ------------------------------------------------------------------------------ releases


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """An exported C2 release (rendered marker images and source photos) and its photos folder."""
    pytest.importorskip("datasets")
    from biovqa.bench.export import export_bench
    from biovqa.components.c2.build import build_c2
    from biovqa.synthetic import write_cub

    root = tmp_path_factory.mktemp("release")
    cub = write_cub(root / "cub", n_classes=4, images_per_class=2, seed=7, image_size=(96, 72))
    bench = build_c2(cub, root / "bench-c2")
    out = export_bench([bench.root], root / "Bio-VQA", shard_rows=100)
    return out, bench.images_root()


@pytest.fixture()
def copy(tmp_path: Path, release: tuple[Path, Path]) -> Path:
    target = tmp_path / "work" / "Bio-VQA"
    shutil.copytree(release[0], target)
    return target


def _card(copy: Path) -> dict:
    return json.loads((copy / "biovqa" / "release.json").read_text(encoding="utf-8"))


def _write_card(copy: Path, card: dict) -> None:
    (copy / "biovqa" / "release.json").write_text(json.dumps(card), encoding="utf-8")


def _edit_shard(copy: Path, kind: str, change: Callable[[pa.Table, int], pa.Table]) -> None:
    """Change the first row of ``kind`` (``rendered`` | ``source``) in the shard holding one, and
    record the shard's new sha256 in the card (a crafted release, not a damaged one)."""
    card = _card(copy)
    for shard in card["components"]["c2"]["shards"]:
        path = copy / shard["path"]
        table = pq.read_table(path)
        rows = pc.indices_nonzero(pc.equal(table.column("image_kind"), kind))
        if len(rows):
            pq.write_table(change(table, int(rows[0].as_py())), path)
            shard["sha256"] = sha256_file(path)
            _write_card(copy, card)
            return
    raise AssertionError(f"the release has no {kind} image")


def _set_row(table: pa.Table, row: int, **values: object) -> pa.Table:
    for column, value in values.items():
        column_values = table.column(column).to_pylist()
        column_values[row] = value
        table = table.set_column(table.column_names.index(column), column,
                                 pa.array(column_values, table.schema.field(column).type))
    return table


def _cache_env(tmp_path: Path) -> dict[str, str]:
    return {"BIOVQA_CACHE": str(tmp_path / "work" / "cache"), "HF_HOME": str(tmp_path / "work" / "hf")}


@pytest.mark.parametrize("path", ["rendered/../../../../escaped.png", "rendered//ESCAPE/escaped.png",
                                  "ESCAPE/escaped.png"])
def test_a_release_never_writes_a_rendered_image_outside_its_cache(path: str, tmp_path: Path, copy: Path) -> None:
    target = str(tmp_path / "escaped-here")
    path = path.replace("ESCAPE", target.lstrip("/"))
    if not path.startswith("rendered/"):
        path = "/" + path

    _edit_shard(copy, "rendered", lambda table, row: _set_row(table, row, image=path))
    before = sorted(p for p in tmp_path.rglob("*") if "cache" not in p.parts)
    code, output = biovqa("audit", copy / "data" / "c2", env=_cache_env(tmp_path))
    assert_refused(code, output, "field 'image'", "data/c2")
    assert "leaves its folder" in output or "must lie under rendered/" in output
    after = sorted(p for p in tmp_path.rglob("*") if "cache" not in p.parts)
    assert after == before and not list(tmp_path.rglob("escaped.png")) and not Path("/escaped.png").exists()


def test_a_release_shard_path_outside_the_release_is_not_followed(tmp_path: Path, copy: Path) -> None:
    card = _card(copy)
    shard = card["components"]["c2"]["shards"][0]
    outside = tmp_path / "outside-shard.parquet"
    shutil.copyfile(copy / shard["path"], outside)
    shard["path"] = os.path.relpath(outside, copy)
    _write_card(copy, card)
    code, output = biovqa("audit", copy / "data" / "c2", env=_cache_env(tmp_path))
    assert_refused(code, output, "release.json", "field 'components.c2.shards[0].path'", repr(shard["path"]))


def test_a_release_source_photo_outside_the_images_folder_is_not_opened(tmp_path: Path, copy: Path,
                                                                        release: tuple[Path, Path],
                                                                        outside: Path) -> None:
    images = tmp_path / "images"
    shutil.copytree(release[1], images)
    escape = os.path.relpath(outside, images)

    digest = sha256_file(outside)
    _edit_shard(copy, "source", lambda table, row: _set_row(table, row, image=escape, image_sha256=digest))
    code, output = biovqa("audit", copy / "data" / "c2", "--images", images, env=_cache_env(tmp_path))
    assert_refused(code, output, "field 'image'", repr(escape), "leaves its folder")


RELEASE_CARD_LIES: dict[str, tuple[Callable[[dict], None], list[str]]] = {
    "row count lies": (lambda c: c.__setitem__("rows", c["rows"] + 1), ["field 'components.c2.rows'"]),
    "shard row count lies": (lambda c: (c["shards"][0].__setitem__("rows", c["shards"][0]["rows"] - 1),
                                        c.__setitem__("rows", c["rows"] - 1)),
                             ["field 'components.c2.shards[0].rows'", "the release card says"]),
    "items_schema not base64": (lambda c: c.__setitem__("items_schema", "not base64 at all!"),
                                ["field 'components.c2.items_schema'", "base64"]),
    "items_schema not text": (lambda c: c.__setitem__("items_schema", 12), ["field 'components.c2.items_schema'"]),
    "shards an object": (lambda c: c.__setitem__("shards", {"path": "data/c2/x.parquet"}),
                         ["field 'components.c2.shards'", "must be a list"]),
    "shard without sha256": (lambda c: c["shards"][0].pop("sha256"), ["field 'components.c2.shards[0]'"]),
    "files a list": (lambda c: c.__setitem__("files", ["c2/part_layout.json"]), ["field 'components.c2.files'"]),
    "side file outside": (lambda c: c["files"].__setitem__("../../../../../etc/hostname", "0" * 64),
                          ["field 'components.c2.files'", "leaves its folder"]),
    "entry not an object": (lambda c: c.clear() or c.update({"x": 1}), ["field 'components.c2.rows'"]),
}


@pytest.mark.parametrize("case", sorted(RELEASE_CARD_LIES))
def test_audit_fails_on_a_release_card_that_lies(case: str, tmp_path: Path, copy: Path) -> None:
    change, says = RELEASE_CARD_LIES[case]
    card = _card(copy)
    change(card["components"]["c2"])
    _write_card(copy, card)
    code, output = biovqa("audit", copy / "data" / "c2", env=_cache_env(tmp_path))
    assert_refused(code, output, *says)


def test_audit_fails_on_an_edited_bench_manifest_even_after_a_cached_rebuild(tmp_path: Path, copy: Path,
                                                                             release: tuple[Path, Path]) -> None:
    env = {**_cache_env(tmp_path), "BIOVQA_IMAGES": str(release[1])}
    assert biovqa("audit", copy / "data" / "c2", env=env)[0] == 0  # rebuilt into the cache, audited
    manifest = copy / "biovqa" / "c2" / "manifest.json"
    edited = json.loads(manifest.read_text(encoding="utf-8"))
    edited["seed"] = 999
    manifest.write_text(json.dumps(edited), encoding="utf-8")
    code, output = biovqa("audit", copy / "data" / "c2", env=env)
    assert_refused(code, output, "manifest.json", "field 'manifest_sha256'", "edited")


def test_audit_of_a_release_without_images_counts_the_missing_photos(tmp_path: Path, copy: Path) -> None:
    code, output = biovqa("audit", copy / "data" / "c2", env=_cache_env(tmp_path))
    assert code == 2, output
    assert output.count("image missing") == 1, output  # one line with the count, not one per photo
    assert "1 audit violation(s)" in output and "--images" in output


# ------------------------------------------------------------------------------ source annotations


def _photo(path: Path, size: tuple[int, int] = (120, 90)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, (120, 90, 60)).save(path)


BEE_XML = """<?xml version="1.0" encoding="UTF-8"?>
<annotation><folder>ML-Data</folder><filename>{name}</filename>
<size><width>120</width><height>90</height><depth>3</depth></size>
<object><name>bee</name><bndbox><xmin>10</xmin><ymin>10</ymin><xmax>30</xmax><ymax>30</ymax></bndbox></object>
</annotation>
"""


def test_a_bees_filename_linking_outside_is_refused_by_the_build(tmp_path: Path, outside: Path) -> None:
    folder = tmp_path / "bees" / "ML-Data"
    for k in range(3):
        _photo(folder / f"p{k}.png")
        (folder / f"p{k}.xml").write_text(BEE_XML.format(name=f"p{k}.png"), encoding="utf-8")
    (folder / "evil.png").symlink_to(outside)  # a shipped link to a file outside the source
    (folder / "evil.xml").write_text(BEE_XML.format(name="evil.png"), encoding="utf-8")
    code, output = biovqa("build", "c3", "--source", f"bees={folder}", "--out", tmp_path / "bench",
                          "--per-subset", "4", "--canvas", "64")
    assert_refused(code, output, "evil.xml", "field 'filename'", "'evil.png'", "symlink leads outside")
    assert not (tmp_path / "bench").exists()


def test_a_beetle_picture_id_climbing_out_is_refused_by_the_build(tmp_path: Path, outside: Path) -> None:
    from biovqa.components.c3.demo import write_beetles

    root = write_beetles(tmp_path / "beetles", {"A_001.jpg": [(1.2, 0.6)], "A_002.jpg": [(1.0, 0.5)]})
    csv_path = next(root.rglob("BeetleMeasurements.csv")) if root.is_dir() else root
    escape = os.path.relpath(outside, csv_path.parent / "group_images")
    text = csv_path.read_text(encoding="utf-8")
    csv_path.write_text(text.replace("A_002.jpg", escape), encoding="utf-8")
    row = next(n for n, line in enumerate(csv_path.read_text(encoding="utf-8").splitlines(), start=1)
               if escape in line)
    code, output = biovqa("build", "c3", "--source", f"beetles={csv_path.parent}", "--out", tmp_path / "bench",
                          "--per-subset", "4", "--canvas", "64", "--plate-side", "128")
    assert_refused(code, output, "BeetleMeasurements.csv", f"row {row}", "field 'pictureID'", repr(escape))
    assert not (tmp_path / "bench").exists()


@pytest.mark.parametrize("kind", ["dotdot", "absolute"])
def test_a_coco_file_name_outside_the_images_folder_is_refused(kind: str, tmp_path: Path, outside: Path) -> None:
    from biovqa.errors import PathEscapeError
    from biovqa.sources.wildlife import read_wildlife_catalog
    from fixtures.wildlife import write_raw_coco

    annotation = {"id": 1, "image_id": 1, "bbox": [4.0, 4.0, 20.0, 16.0], "theta": 0.0, "viewpoint": "left",
                  "name": "ind-1", "category_id": 0, "uuid": "u1"}
    path = write_raw_coco(tmp_path / "leopard.coco", [annotation], n_images=1)
    payload = json.loads(path.read_text(encoding="utf-8"))
    images_dir = tmp_path / "leopard.coco" / "images" / "train2022"
    payload["images"][0]["file_name"] = os.path.relpath(outside, images_dir) if kind == "dotdot" else str(outside)
    path.write_text(json.dumps(payload), encoding="utf-8")
    with pytest.raises(PathEscapeError) as refused:
        read_wildlife_catalog(tmp_path / "leopard.coco")
    assert (refused.value.file, refused.value.row, refused.value.field) == (str(path), 1, "images[].file_name")


def test_a_gbif_core_location_outside_the_archive_is_refused(tmp_path: Path) -> None:
    from fixtures.dwca import example_backbone

    folder = example_backbone(tmp_path / "backbone")
    shutil.copyfile(folder / "Taxon.tsv", tmp_path / "Taxon.tsv")  # a readable file just outside
    meta = folder / "meta.xml"
    meta.write_text(meta.read_text(encoding="utf-8").replace("<location>Taxon.tsv</location>",
                                                             "<location>../Taxon.tsv</location>"), encoding="utf-8")
    code, output = biovqa("taxonomy", "index", folder, "-o", tmp_path / "index")
    assert_refused(code, output, "meta.xml", "field 'location'", "'../Taxon.tsv'", "climbs out")
    assert not (tmp_path / "index").exists()


def _hca_released(tmp_path: Path, lines: list[dict]) -> tuple[Path, Path]:
    cub = tmp_path / "CUB_200_2011"
    for name in ("001.A/a1.jpg", "002.B/b1.jpg"):
        _photo(cub / "images" / name, (24, 16))
    released = tmp_path / "released.jsonl"
    released.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return released, cub


def _hca_line(image: str, **levels: object) -> dict:
    line: dict = {"image": image, "label": "a"}
    line.update(levels or {"level1": "x", "choices_level1": ["x", "y"], "level2": "a", "choices_level2": ["a", "b"]})
    return line


@pytest.mark.parametrize("case", ["dotdot", "symlink"])
def test_a_released_hca_image_outside_the_images_folder_is_refused(case: str, tmp_path: Path,
                                                                   outside: Path) -> None:
    image = "images/../../outside/secret.png" if case == "dotdot" else "images/evil.png"
    released, cub = _hca_released(tmp_path, [_hca_line("images/001.A/a1.jpg"), _hca_line(image)])
    if case == "symlink":
        (cub / "images" / "evil.png").symlink_to(outside)
    code, output = biovqa("build", "hca", "--out", tmp_path / "bench", "--released", released,
                          "--images-root", cub, "--template-set", "cub", "--template", "2")
    assert_refused(code, output, "released.jsonl", "row 2", "field 'image'")
    assert not (tmp_path / "bench").exists()


def test_released_hca_level_keys_beyond_int16_are_a_named_error(tmp_path: Path) -> None:
    huge = {"level1": "x", "choices_level1": ["x", "y"], "level40000": "a", "choices_level40000": ["a", "b"]}
    released, cub = _hca_released(tmp_path, [_hca_line("images/001.A/a1.jpg", **huge)])
    code, output = biovqa("build", "hca", "--out", tmp_path / "bench", "--released", released,
                          "--images-root", cub, "--template-set", "cub", "--template", "2")
    assert_refused(code, output, "released.jsonl", "row 1", "field 'level40000'", "32767")


def test_a_side_file_linking_outside_the_benchmark_is_refused(bench_copy: Path, outside: Path) -> None:
    (bench_copy / "evil.json").symlink_to(outside)
    manifest = json.loads((bench_copy / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"]["evil.json"] = {"sha256": sha256_file(outside), "bytes": outside.stat().st_size}
    (bench_copy / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    code, output = biovqa("audit", bench_copy)
    assert_refused(code, output, "manifest.json", "'evil.json'", "leaves the benchmark folder")


@pytest.mark.parametrize("case", ["dotdot", "absolute", "symlink"])
def test_an_hca_image_list_naming_a_photo_outside_is_refused(case: str, tmp_path: Path, outside: Path) -> None:
    photos = tmp_path / "photos"
    _photo(photos / "a1.jpg", (24, 16))
    image = {"dotdot": "../outside/secret.png", "absolute": str(outside), "symlink": "evil.png"}[case]
    if case == "symlink":
        (photos / "evil.png").symlink_to(outside)
    taxonomy = tmp_path / "taxonomy.json"
    taxonomy.write_text(json.dumps({"a": ["animalia", "x", "a"], "b": ["animalia", "y", "b"]}), encoding="utf-8")
    listing = tmp_path / "images.csv"
    listing.write_text(f"image,label\na1.jpg,a\n{image},b\n", encoding="utf-8")
    code, output = biovqa("build", "hca", "--out", tmp_path / "bench", "--taxonomy", taxonomy, "--images", listing,
                          "--images-root", photos)
    assert_refused(code, output, "field 'image'", repr(image))
    if case != "symlink":  # read as text: the list's row is named
        assert_refused(code, output, "images.csv", "row 3")
    assert not (tmp_path / "bench").exists()
