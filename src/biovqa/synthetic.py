"""Synthetic source data in the native on-disk formats, for the demo and the tests.

* :func:`draw_placeholder_images` — one deterministic PNG per row of a TreeOfLife-200M-format
  catalog (the bundled C1 demo catalog marks rows whose image should be missing or too small).
* :func:`write_cub` — a tiny CUB-200-2011 archive in the exact native layout (images.txt,
  classes.txt with all 200 real classes, image_class_labels.txt, train_test_split.txt,
  bounding_boxes.txt, parts/parts.txt, parts/part_locs.txt,
  attributes/image_attribute_labels.txt, attributes/certainties.txt, images/<class>/<file>.jpg,
  and attributes.txt beside the CUB folder as in the real tarball). Vocabularies are the real
  ones shipped with biovqa; labels, part locations and boxes come from a seeded generator; one
  image gets the real archive's six-token label lines.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

import numpy as np
import pyarrow.csv as pacsv
from PIL import Image, ImageDraw


def draw_placeholder_images(catalog: Path, images: Path, *, size: int = 256) -> int:
    """Write one deterministic PNG per catalog row (``demo_image``: ok → size², small → 64²,
    missing → none); returns how many were written."""
    images.mkdir(parents=True, exist_ok=True)
    table = pacsv.read_csv(catalog).select(["uuid", "species", "demo_image"]).to_pylist()
    written = 0
    for row in table:
        if row["demo_image"] == "missing":
            continue
        side = 64 if row["demo_image"] == "small" else size
        digest = hashlib.sha256(f"{row['species']}|{row['uuid']}".encode()).digest()
        background = tuple(60 + b % 150 for b in digest[:3])
        image = Image.new("RGB", (side, side), background)
        draw = ImageDraw.Draw(image)
        for k in range(4):
            x0, y0 = digest[4 + k] % side, digest[8 + k] % side
            box = (min(x0, side - 1 - x0), min(y0, side - 1 - y0), max(x0, side - 1 - x0), max(y0, side - 1 - y0))
            draw.ellipse(box, outline=tuple(255 - c for c in background), width=3)
        image.save(images / f"{row['uuid']}.png", format="PNG", optimize=False)
        written += 1
    return written


def _vocabulary(name: str) -> str:
    return resources.files("biovqa").joinpath("data", "cub", "vocabulary", name).read_text("utf-8")


#: Default classes: several gulls, albatrosses and terns (multi-species categories), plus
#: single-class heads (Cardinal, Sayornis, Frigatebird) and a genus-only class.
DEFAULT_CLASS_IDS: tuple[int, ...] = (59, 60, 1, 2, 141, 142, 17, 103, 44, 110, 14, 15)


def write_cub(
    path: str | Path,
    n_classes: int = 6,
    images_per_class: int = 3,
    seed: int = 0,
    *,
    image_size: tuple[int, int] = (96, 72),
    attributes_at_root: bool = True,
    class_ids: tuple[int, ...] | None = None,
) -> Path:
    """Write a tiny CUB archive under ``path`` and return its ``CUB_200_2011`` folder."""
    rng = np.random.default_rng(seed)
    path = Path(path)
    cub = path / "CUB_200_2011"
    for sub in ("images", "parts", "attributes"):
        (cub / sub).mkdir(parents=True, exist_ok=True)
    classes_text = _vocabulary("classes.txt")
    (cub / "classes.txt").write_text(classes_text, encoding="utf-8")
    folders = {int(i): name.strip() for i, name in (line.split(" ", 1) for line in classes_text.splitlines())}
    parts_text = _vocabulary("parts.txt")
    (cub / "parts" / "parts.txt").write_text(parts_text, encoding="utf-8")
    (cub / "attributes" / "certainties.txt").write_text(_vocabulary("certainties.txt"), encoding="utf-8")
    attributes_text = _vocabulary("attributes.txt")
    attributes_file = path / "attributes.txt" if attributes_at_root else cub / "attributes" / "attributes.txt"
    attributes_file.write_text(attributes_text, encoding="utf-8")
    groups = [line.split(" ", 1)[1].split("::")[0] for line in attributes_text.splitlines()]
    n_parts = len(parts_text.splitlines())

    chosen = class_ids if class_ids is not None else DEFAULT_CLASS_IDS[:n_classes]
    width, height = image_size
    images, labels, split, boxes, locs, attrs = [], [], [], [], [], []
    image_id = 0
    for class_id in chosen:
        folder = folders[class_id]
        (cub / "images" / folder).mkdir(exist_ok=True)
        stem = folder.split(".", 1)[1]
        for k in range(images_per_class):
            image_id += 1
            rel = f"{folder}/{stem}_{k + 1:04d}_{1000 + image_id}.jpg"
            images.append(f"{image_id} {rel}")
            labels.append(f"{image_id} {class_id}")
            split.append(f"{image_id} {k % 2}")
            bx, by = float(rng.integers(2, width // 4)), float(rng.integers(2, height // 4))
            bw = float(rng.integers(width // 2, int(width - bx)))
            bh = float(rng.integers(height // 2, int(height - by)))
            boxes.append(f"{image_id} {bx:.1f} {by:.1f} {bw:.1f} {bh:.1f}")
            visible = rng.random(n_parts) < 0.7
            visible[int(rng.integers(n_parts))] = True
            for part in range(n_parts):
                if visible[part]:
                    x = float(np.round(bx + rng.random() * bw))
                    y = float(np.round(by + rng.random() * bh))
                    locs.append(f"{image_id} {part + 1} {x:.1f} {y:.1f} 1")
                else:
                    locs.append(f"{image_id} {part + 1} 0.0 0.0 0")
            present = np.zeros(len(groups), dtype=int)
            certainty = rng.integers(1, 5, size=len(groups))
            start = 0
            while start < len(groups):
                end = start
                while end < len(groups) and groups[end] == groups[start]:
                    end += 1
                n_true = int(rng.integers(0, 3))
                for index in rng.choice(np.arange(start, end), size=min(n_true, end - start), replace=False):
                    present[index] = 1
                    certainty[index] = int(rng.choice([2, 3, 4, 4]))
                start = end
            for a in range(len(groups)):
                seconds = float(rng.integers(1, 400)) / 10
                extra = " 0" if image_id == 2 and a % 3 == 0 else ""
                attrs.append(f"{image_id} {a + 1} {present[a]} {certainty[a]}{extra} {seconds:.3f}")
            picture = Image.new("RGB", (width, height), tuple(int(v) for v in rng.integers(0, 256, 3)))
            draw = ImageDraw.Draw(picture)
            draw.ellipse([bx, by, bx + bw, by + bh], fill=tuple(int(v) for v in rng.integers(0, 256, 3)))
            picture.save(cub / "images" / rel, format="JPEG", quality=90)

    def write(name: str, lines: list[str]) -> None:
        (cub / name).write_text("\n".join(lines) + "\n", encoding="utf-8")

    write("images.txt", images)
    write("image_class_labels.txt", labels)
    write("train_test_split.txt", split)
    write("bounding_boxes.txt", boxes)
    write("parts/part_locs.txt", locs)
    write("attributes/image_attribute_labels.txt", attrs)
    return cub
