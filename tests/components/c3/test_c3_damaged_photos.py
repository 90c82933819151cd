"""C3 build with photos damaged mid-stream (header and end marker intact, so the fast inspector
passes them; Pillow fails only when it decodes them): ``biovqa build c3`` leaves them out as named
exclusions, the build goes on and audits, and the subsets name every photo they discard."""

from __future__ import annotations

import io
import json
import random
import shutil
from pathlib import Path

import pytest
from PIL import Image

from biovqa.components.c3.demo import write_bees, write_beetles, write_waid
from biovqa.components.c3.render import CanvasJob, Panel, render_one
from biovqa.errors import BiovqaError
from biovqa.sources.images import inspect_image_file
from fixtures.cli_runner import cli


def _decodes(data: bytes) -> bool:
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
    except OSError:
        return False
    return True


def damage_mid_stream(path: Path) -> None:
    """Overwrite bytes of the JPEG's entropy-coded segment (between its scan header and its end
    marker) until the file still passes the image inspector but Pillow raises when it decodes it."""
    data = path.read_bytes()
    scan = data.index(b"\xff\xda")
    start = scan + 2 + int.from_bytes(data[scan + 2:scan + 4], "big")
    for seed in range(2000):
        draw = random.Random(seed)
        damaged = bytearray(data)
        for _ in range(16):
            damaged[draw.randrange(start, len(data) - 2)] = draw.randrange(256)
        if not _decodes(bytes(damaged)):
            path.write_bytes(bytes(damaged))
            assert isinstance(inspect_image_file(path), tuple), "the damage must pass the fast inspector"
            return
    raise AssertionError(f"no mid-stream damage of {path} made Pillow fail")


def _manifest(bench: Path) -> dict:
    return json.loads((bench / "manifest.json").read_text(encoding="utf-8"))


BUILD = ["--canvas", "64", "--per-subset", "50", "--grids-per-anchor", "2"]


@pytest.fixture()
def sources(tmp_path: Path) -> dict[str, Path]:
    return {"waid": write_waid(tmp_path / "src" / "waid", {"train": [1, 2, 3, 5, 8, 13, 21, 4, 6]}, size=(120, 90)),
            "bees": write_bees(tmp_path / "src" / "bees", [1, 2, 4, 7, 11, 3, 5, 9], size=(120, 90))}


def _build(out: Path, sources: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    argv: list[str | Path] = ["build", "c3"]
    for name, path in sources.items():
        argv += ["--source", f"{name}={path}"]
    return cli([*argv, "--out", out, *BUILD], capsys)


def test_a_photo_damaged_mid_stream_is_a_named_exclusion_and_the_build_goes_on(
        tmp_path: Path, sources: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    waid_photo = sorted((sources["waid"] / "images" / "train").glob("*.jpg"))[3]
    bees_photo = sources["bees"] / "hive_2.jpg"
    damage_mid_stream(waid_photo)
    damage_mid_stream(bees_photo)

    code, err = _build(tmp_path / "bench", sources, capsys)
    assert code == 0, err
    waid_name = waid_photo.relative_to(sources["waid"]).as_posix()
    assert "undecodable_image" in err and waid_name in err and "hive_2.jpg" in err  # the build's summary
    manifest = _manifest(tmp_path / "bench")
    assert manifest["exclusions"]["waid"]["undecodable_image"] == 1
    assert manifest["exclusion_examples"]["waid"]["undecodable_image"] == [waid_name]
    assert manifest["exclusions"]["bees"]["undecodable_image"] == 1
    assert manifest["exclusion_examples"]["bees"]["undecodable_image"] == ["hive_2.jpg"]
    assert manifest["subsets"]["waid-sheep"]["available"] == 8 and manifest["subsets"]["bees"]["available"] == 7
    assert cli(["audit", tmp_path / "bench"], capsys)[0] == 0

    # the damaged photos are left out as if they were never there: the items (ids, questions,
    # golds, canvases' bytes) equal those of a build from the sources without them
    clean = {name: tmp_path / "clean" / name for name in sources}
    for name, path in sources.items():
        shutil.copytree(path, clean[name])
    removed = clean["waid"] / waid_photo.relative_to(sources["waid"])
    removed.unlink()
    (clean["waid"] / "labels" / "train" / f"{waid_photo.stem}.txt").unlink()
    (clean["bees"] / "hive_2.jpg").unlink()
    (clean["bees"] / "hive_2.xml").unlink()
    assert _build(tmp_path / "bench-clean", clean, capsys)[0] == 0
    damaged_items = (tmp_path / "bench" / "items.parquet").read_bytes()
    assert damaged_items == (tmp_path / "bench-clean" / "items.parquet").read_bytes()
    assert _manifest(tmp_path / "bench-clean")["items_sha256"] == manifest["items_sha256"]


def test_damaged_photos_give_the_same_bench_for_any_number_of_workers(
        tmp_path: Path, sources: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    for photo in sorted((sources["waid"] / "images" / "train").glob("*.jpg"))[:2]:
        damage_mid_stream(photo)
    assert _build(tmp_path / "one", sources, capsys)[0] == 0
    assert cli(["build", "c3", "--source", f"waid={sources['waid']}", "--source", f"bees={sources['bees']}",
                "--out", tmp_path / "two", *BUILD, "--workers", "2"], capsys)[0] == 0
    one, two = _manifest(tmp_path / "one"), _manifest(tmp_path / "two")
    assert one["exclusion_examples"]["waid"]["undecodable_image"] == \
        two["exclusion_examples"]["waid"]["undecodable_image"]
    assert len(one["exclusion_examples"]["waid"]["undecodable_image"]) == 2
    assert one["items_sha256"] == two["items_sha256"]


def test_a_damaged_beetle_plate_leaves_every_beetle_task(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plates = {f"A{k + 32929:011d}.jpg": [(1.2, 0.4), (0.9, 0.35), (1.5, 0.5), (1.1, 0.3)] for k in range(4)}
    beetles = write_beetles(tmp_path / "beetles", plates)
    damage_mid_stream(beetles / "group_images" / "A00000032930.jpg")
    code, err = cli(["build", "c3", "--source", f"beetles={beetles}", "--out", tmp_path / "bench",
                     "--canvas", "64", "--plate-side", "256", "--rpos-items", "8"], capsys)
    assert code == 0, err
    manifest = _manifest(tmp_path / "bench")
    assert manifest["exclusion_examples"]["beetles"]["undecodable_image"] == ["group_images/A00000032930.jpg"]
    import pyarrow.parquet as pq

    items = pq.read_table(tmp_path / "bench" / "items.parquet").to_pylist()
    assert items and not any("A00000032930" in json.dumps(row, default=str) for row in items)
    assert cli(["audit", tmp_path / "bench"], capsys)[0] == 0


def test_subsets_name_the_photos_they_discard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    waid = write_waid(tmp_path / "waid", {"train": [3, 1, 2, 1, 5]}, size=(120, 90))
    for label in sorted((waid / "labels" / "train").glob("train00[13]_*.txt")):
        label.write_text("", encoding="utf-8")  # a photo annotated with no animal
    plates = {"A00000032929.jpg": [(1.2, 0.4), (None, None), (1.0, 0.3)],  # individuals 1 and 3: not 1..N
              "A00000032930.jpg": [(1.1, 0.4), (0.8, 0.3)]}
    beetles = write_beetles(tmp_path / "beetles", plates)
    code, err = cli(["build", "c3", "--source", f"waid={waid}", "--source", f"beetles={beetles}",
                     "--out", tmp_path / "bench", "--canvas", "64", "--plate-side", "256", "--rpos-items", "4"],
                    capsys)
    assert code == 0, err
    manifest = _manifest(tmp_path / "bench")
    subsets = manifest["subsets"]
    empty = sorted(p.relative_to(waid).as_posix() for p in (waid / "images" / "train").glob("train00[13]_*.jpg"))
    assert subsets["waid-sheep"]["discarded"] == {"no annotated individual": 2}
    assert subsets["waid-sheep"]["discarded_examples"] == {"no annotated individual": empty}
    reason = "individuals not 1..N (completeness unverifiable)"
    assert subsets["beetles"]["discarded"] == {reason: 1}
    assert subsets["beetles"]["discarded_examples"] == {reason: ["group_images/A00000032929.jpg"]}
    # every question the build did not generate names the photo it concerned
    folders = {"waid": waid, "beetles": beetles}
    assert manifest["skipped"] and set(manifest["skipped_examples"]) == set(manifest["skipped"])
    for skip, names in manifest["skipped_examples"].items():
        assert 1 <= len(names) <= min(20, manifest["skipped"][skip]), skip
        for name in names:
            source, _, under = name.partition("/")
            assert (folders[source] / under).is_file(), (skip, name)


def test_a_photo_that_stops_decoding_after_the_check_is_one_error_naming_it(tmp_path: Path) -> None:
    photo = tmp_path / "photo.jpg"
    Image.effect_noise((96, 64), 60).convert("RGB").save(photo, format="JPEG", quality=90)
    damage_mid_stream(photo)
    job = CanvasJob(tmp_path / "out.png", (48, 32), (Panel(photo, (0, 0, 48, 32)),))
    with pytest.raises(BiovqaError, match="no longer decodes") as raised:
        render_one(job)
    assert raised.value.file == str(photo)
    assert not (tmp_path / "out.png").exists()


def test_a_damaged_catalog_photo_never_reaches_a_model_as_it_is(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from biovqa.components.c3.demo import demo_gzcd_photos, write_gzcd

    gzcd = write_gzcd(tmp_path / "gzcd", demo_gzcd_photos(), form="coco")
    single_photo = json.loads((gzcd / "final_metadata.json").read_text(encoding="utf-8"))["images"][0]["file_name"]
    damage_mid_stream(gzcd / "images" / single_photo)  # one animal: localization shows it as it is
    code, err = cli(["build", "c3", "--source", f"gzcd={gzcd / 'final_metadata.json'}", "--out", tmp_path / "bench",
                     "--canvas", "64", "--plate-side", "256"], capsys)
    assert code == 0, err
    manifest = _manifest(tmp_path / "bench")
    assert manifest["exclusions"]["gzcd"]["undecodable_image"] == 1  # counted once, for all its uses
    assert manifest["exclusion_examples"]["gzcd"]["undecodable_image"] == [f"images/{single_photo}"]
    import pyarrow.parquet as pq

    items = pq.read_table(tmp_path / "bench" / "items.parquet").to_pylist()
    tasks = {row["task"] for row in items}
    assert {"localization", "viewpoint", "counting"} <= tasks
    assert not any(Path(single_photo).stem in json.dumps(row, default=str) for row in items)
    assert cli(["audit", tmp_path / "bench"], capsys)[0] == 0
