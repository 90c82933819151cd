"""Tiny C3 sources in their exact native formats, drawn deterministically, and the C3 step of
``biovqa demo``.

Writers (also used by the tests): :func:`write_waid` (``classes.txt`` + YOLO labels beside
``images/<split>``), :func:`write_bees` (Pascal VOC XML next to each JPEG in ``ML-Data/``),
:func:`write_depondfi` (``Images/`` + ``Keypoints/`` with 9 points per fish) and
:func:`write_beetles` (``BeetleMeasurements.csv`` with JSON endpoints annotated on half-size
"resized" images + full-size ``group_images/``) and :func:`write_gzcd` (the GGR pipeline's table
or GZCD's COCO ``final_metadata.json`` + ``images/``). Animals are drawn as ellipses at their boxes.
"""

from __future__ import annotations

import csv
import json
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from biovqa.components.registry import DemoContext

BEETLE_COLUMNS = ("pictureID", "scalebar", "cm_pix", "individual", "structure", "lying_flat", "coords_pix",
                  "dist_pix", "dist_cm", "scientificName", "NEON_sampleID", "siteID", "site_name", "plotID",
                  "user_name", "workflowID", "genus", "species", "combinedID", "measureID", "file_name",
                  "image_dim", "resized_image_dim", "coords_pix_scaled_up")
OLD_NAMES = {"pictureID": "PictureID", "cm_pix": "scale_dist_pix", "lying_flat": "lyingstraight",
             "NEON_sampleID": "NEON_sampleID_", "site_name": "field_site_name", "workflowID": "workflow_id"}


def _scene(rng: np.random.Generator, size: tuple[int, int], boxes: Sequence[Sequence[float]], path: Path,
           colour: tuple[int, int, int] = (200, 160, 60)) -> None:
    from PIL import Image, ImageDraw

    w, h = size
    base = rng.integers(40, 120, size=(h // 16 + 2, w // 16 + 2, 3), dtype=np.uint8)
    image = Image.fromarray(base).resize((w, h), Image.Resampling.BILINEAR)
    pen = ImageDraw.Draw(image)
    for box in boxes:
        pen.ellipse([box[0], box[1], box[2], box[3]], fill=colour, outline=(20, 20, 20))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="JPEG", quality=90)


def _layout(rng: np.random.Generator, n: int, size: tuple[int, int], side: float) -> list[tuple[float, float, float, float]]:
    """``n`` boxes of ``side`` pixels on a jittered lattice inside ``size``."""
    w, h = size
    cols = max(1, int(np.ceil(np.sqrt(n * w / h))))
    rows = int(np.ceil(n / cols))
    cw, ch = w / cols, h / rows
    s = min(side, 0.8 * cw, 0.8 * ch)
    out = []
    for k in range(n):
        cx = (k % cols + 0.5) * cw + float(rng.uniform(-0.05, 0.05)) * cw
        cy = (k // cols + 0.5) * ch + float(rng.uniform(-0.05, 0.05)) * ch
        out.append((round(cx - s / 2, 2), round(cy - s / 2, 2), round(cx + s / 2, 2), round(cy + s / 2, 2)))
    return out


def write_waid(root: Path, splits: Mapping[str, Sequence[int]], *, size: tuple[int, int] = (160, 120),
               seed: int = 0, cycle_classes: bool = False) -> Path:
    """``root/WAID`` with one image per count in ``splits`` ({split: [count, …]}); every animal of a
    photo has one class: sheep (class 0), or with ``cycle_classes`` class k mod 6 for the k-th photo
    of a split (so that the photos spread over WAID's six per-class counting subsets)."""
    rng = np.random.default_rng(seed)
    waid = Path(root) / "WAID"
    waid.mkdir(parents=True, exist_ok=True)
    (waid / "classes.txt").write_text("sheep\ncattle\nseal\ncamelus\nkiang\nzebra\n", encoding="utf-8")
    for split, counts in splits.items():
        for k, count in enumerate(counts):
            stem = f"{split}{k:03d}_jpg.rf.{k:032x}"
            boxes = _layout(rng, count, size, 14)
            _scene(rng, size, boxes, waid / "images" / split / f"{stem}.jpg")
            lines = [f"{k % 6 if cycle_classes else 0} {(b[0] + b[2]) / 2 / size[0]:.6f} {(b[1] + b[3]) / 2 / size[1]:.6f} "
                     f"{(b[2] - b[0]) / size[0]:.6f} {(b[3] - b[1]) / size[1]:.6f}" for b in boxes]
            label = waid / "labels" / split / f"{stem}.txt"
            label.parent.mkdir(parents=True, exist_ok=True)
            label.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return waid


def voc_xml(filename: str, size: tuple[int, int], objects: Sequence[tuple[str, Sequence[float]]]) -> str:
    parts = [f"<annotation>\n  <folder>ML-Data</folder>\n  <filename>{filename}</filename>\n"
             f"  <size>\n    <width>{size[0]}</width>\n    <height>{size[1]}</height>\n    <depth>3</depth>\n  </size>\n"]
    for name, b in objects:
        parts.append(f"  <object>\n    <name>{name}</name>\n    <bndbox>\n      <xmin>{b[0]:g}</xmin>\n"
                     f"      <ymin>{b[1]:g}</ymin>\n      <xmax>{b[2]:g}</xmax>\n      <ymax>{b[3]:g}</ymax>\n"
                     "    </bndbox>\n  </object>\n")
    parts.append("</annotation>\n")
    return "".join(parts)


def write_bees(root: Path, counts: Sequence[int], *, pollen: int = 1, size: tuple[int, int] = (200, 150),
               seed: int = 1) -> Path:
    """``root/ML-Data`` with one JPEG + VOC XML per count (plus ``pollen`` pollen objects each)."""
    rng = np.random.default_rng(seed)
    folder = Path(root) / "ML-Data"
    for k, count in enumerate(counts):
        name = f"hive_{k + 1}.jpg"
        boxes = _layout(rng, count + pollen, size, 10)
        _scene(rng, size, boxes, folder / name)
        objects = [("Bee" if j % 2 else "bees", b) for j, b in enumerate(boxes[:count])]
        objects += [("pollen", b) for b in boxes[count:]]
        (folder / f"hive_{k + 1}.xml").write_text(voc_xml(name, size, objects), encoding="utf-8")
    return folder


def write_depondfi(root: Path, counts: Sequence[int], *, size: tuple[int, int] = (160, 160), seed: int = 2) -> Path:
    rng = np.random.default_rng(seed)
    root = Path(root)
    for k, count in enumerate(counts):
        boxes = _layout(rng, count, size, 20)
        _scene(rng, size, boxes, root / "Images" / f"pond{k:03d}.jpg", colour=(230, 120, 40))
        lines = []
        for b in boxes:
            cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
            for dx, dy in ((-1, 0), (-0.6, -0.2), (0, -0.5), (0, 0), (0, 0.5), (0.6, 0), (1, -0.5), (1, 0), (1, 0.5)):
                lines.append(f"{cx + dx * (b[2] - b[0]) / 2:.1f},{cy + dy * (b[3] - b[1]) / 2:.1f}")
        kp = root / "Keypoints" / f"pond{k:03d}.txt"
        kp.parent.mkdir(parents=True, exist_ok=True)
        kp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def write_beetles(root: Path, plates: Mapping[str, Sequence[tuple[float | None, float | None]]], *,
                  cm_pix: float = 40.0, cell: int = 100, columns: int = 4, old_names: bool = False,
                  extra_annotator: bool = False, seed: int = 3) -> Path:
    """``BeetleMeasurements.csv`` + ``group_images/``. ``plates`` = {pictureID: [(length_cm,
    width_cm), …]} (None = no row). Coordinates are written on a half-size "resized" frame; the
    photos on disk are full size (2×)."""
    rng = np.random.default_rng(seed)
    root = Path(root)
    rows: list[list[Any]] = []
    for picture, beetles in plates.items():
        n_rows = int(np.ceil(len(beetles) / columns))
        rw, rh = columns * cell + 20, n_rows * cell + 40
        full = (2 * rw, 2 * rh)
        scalebar = {"x1": 10, "y1": rh - 15, "x2": 10 + cm_pix, "y2": rh - 15}
        boxes = []
        for k, (length, width) in enumerate(beetles):
            cx, cy = 10 + (k % columns + 0.5) * cell, 10 + (k // columns + 0.5) * cell
            lcm, wcm = length or 1.0, width or 0.4
            boxes.append((2 * (cx - wcm * cm_pix / 2), 2 * (cy - lcm * cm_pix / 2),
                          2 * (cx + wcm * cm_pix / 2), 2 * (cy + lcm * cm_pix / 2)))
            for structure, value in (("ElytraLength", length), ("ElytraWidth", width)):
                if value is None:
                    continue
                half = value * cm_pix / 2
                seg = ({"x1": cx, "y1": cy - half, "x2": cx, "y2": cy + half} if structure == "ElytraLength"
                       else {"x1": cx - half, "y1": cy, "x2": cx + half, "y2": cy})
                dist_pix = 2 * half
                users = ["IsaFluck"] + (["rileywolcheski"] if extra_annotator and k == 0 else [])
                for user in users:
                    stem = Path(picture).stem
                    rows.append([picture, json.dumps(scalebar), cm_pix, k + 1, structure, "Yes", json.dumps(seg),
                                 f"{dist_pix:.6f}", f"{dist_pix / cm_pix:.6f}", "Carabus goryi",
                                 "HARV_001.20180605.CARGOR.01", "HARV", "Harvard Forest", "HARV_001", user, 21652,
                                 "Carabus", "goryi", f"{stem}_{k + 1}",
                                 str(uuid.UUID(int=int(rng.integers(0, 2**62)))), f"group_images/{picture}",
                                 f"({full[1]}, {full[0]}, 3)", f"({rh}, {rw}, 3)",
                                 json.dumps({kk: v * 2 for kk, v in seg.items()})])
        _scene(rng, full, boxes, root / "group_images" / picture, colour=(60, 40, 20))
    names = [OLD_NAMES.get(c, c) if old_names else c for c in BEETLE_COLUMNS]
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "BeetleMeasurements.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(names)
        writer.writerows(rows)
    return root


GGR_COLUMNS = ("uuid", "image uuid", "bbox pred score", "category id", "annot species", "annot census", "bbox gt",
               "bbox pred", "bbox x", "bbox y", "bbox w", "bbox h", "image fname", "species_prediction",
               "species_pred_score", "species_true_simple", "species_pred_simple", "path", "bbox",
               "predicted_viewpoint")
GGR_CATEGORY = {"zebra_grevys": 22, "zebra_plains": 23, "giraffe_reticulated": 17}
GGR_VIEWS = ("right", "left", "front, right", "back, left", "front", "back, right")


def write_gzcd(root: Path, photos: Sequence[Sequence[str]], *, form: str = "table", size: tuple[int, int] = (192, 128),
               seed: int = 4) -> Path:
    """A GZCD folder in the GGR table form (``ggr_output.csv`` + ``images/<uuid>.jpg``) or the COCO
    form (``final_metadata.json`` + ``images/``); ``photos`` = one list of GGR species codes per
    photo (one animal each). Viewpoints cycle through GGR's comma-joined labels; census flags
    alternate. Returns the folder."""
    rng = np.random.default_rng(seed)
    root = Path(root)
    rows: list[list[Any]] = []
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    n = 0
    for k, species_list in enumerate(photos):
        image_uuid = str(uuid.UUID(int=int(rng.integers(0, 2**62))))
        boxes = _layout(rng, len(species_list), size, 40)
        _scene(rng, size, boxes, root / "images" / f"{image_uuid}.jpg", colour=(230, 230, 230))
        images.append({"id": k + 1, "file_name": f"{image_uuid}.jpg", "width": size[0], "height": size[1],
                       "uuid": image_uuid})
        for species, (x1, y1, x2, y2) in zip(species_list, boxes):
            view, census = GGR_VIEWS[n % len(GGR_VIEWS)], n % 3 != 2
            annot_uuid = str(uuid.UUID(int=int(rng.integers(0, 2**62))))
            corner = f"[{int(x1)}, {int(y1)}, {int(x2)}, {int(y2)}]"
            xywh = (x1, y1, x2 - x1, y2 - y1)
            rows.append([annot_uuid, image_uuid, f"{0.9 - 0.01 * n:.4f}", GGR_CATEGORY.get(species, 0), species,
                         str(census), corner, corner, *(f"{v:.4f}" for v in xywh), f"{image_uuid}.jpg",
                         species.replace("_", " "), "0.99", 0, 0, f"./images/{image_uuid}.jpg",
                         "(" + ", ".join(f"{v:.4f}" for v in xywh) + ")", view])
            annotations.append({"id": n + 1, "uuid": annot_uuid, "image_id": k + 1, "bbox": [round(v, 4) for v in xywh],
                                "annot species": species, "annot census": census, "viewpoint": view})
            n += 1
    if form == "table":
        with open(root / "ggr_output.csv", "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(GGR_COLUMNS)
            writer.writerows(rows)
    elif form == "coco":
        (root / "final_metadata.json").write_text(json.dumps({"images": images, "annotations": annotations}, indent=1),
                                                  encoding="utf-8")
    else:
        raise ValueError(f"form is 'table' or 'coco', not {form!r}")
    return root


def demo_gzcd_photos() -> list[list[str]]:
    """Nine photos: Grevy's zebras, some with a plains zebra or a giraffe beside them, four of a
    single animal (localization and the viewpoint species tier take only those)."""
    g, p, r = "zebra_grevys", "zebra_plains", "giraffe_reticulated"
    return [[g], [g, g, p], [g], [g, r], [g, g, g, g], [p], [g, p, p, r], [g, g], [g]]


def demo_beetle_plates() -> dict[str, list[tuple[float | None, float | None]]]:
    rng = np.random.default_rng(11)
    plates: dict[str, list[tuple[float | None, float | None]]] = {}
    for p in range(3):
        plates[f"A{p + 32929:011d}.jpg"] = [(round(float(rng.uniform(0.6, 1.9)), 3), round(float(rng.uniform(0.25, 0.7)), 3))
                                            for _ in range(12)]
    return plates


def write_demo_sources(root: Path) -> dict[str, Path]:
    """The five native-format sources (WAID, Boxes on Bees, DePondFi, beetles, GZCD as a GGR table)
    under ``root``; returns {source name: path}."""
    root = Path(root)
    return {
        "waid": write_waid(root / "waid", {"train": [1, 2, 4, 7, 12, 3], "valid": [2, 5, 9, 1], "test": [3, 6, 15, 2]},
                           cycle_classes=True),
        "bees": write_bees(root / "bees", [4, 9, 17, 30, 2, 6]),
        "depondfi": write_depondfi(root / "depondfi", [1, 3, 5, 8, 2]),
        "beetles": write_beetles(root / "beetles", demo_beetle_plates()),
        "gzcd": write_gzcd(root / "gzcd", demo_gzcd_photos()),
    }


def build_demo(out: Path, sources_dir: Path) -> Any:
    """The C3 part of ``biovqa demo``: write the tiny sources and build a small C3 benchmark (two
    counting partners per photo and tier and two grids per anchor instead of the full build's 4 and
    5.4, to stay fast; every tier and condition still appears). The demo's GGR table is drawn
    here, every animal annotated, so it is declared complete (``--complete-counts gzcd``) and all
    ten counting subsets appear; a real GGR table is detector output and is not."""
    from biovqa.components.c3.build import build_c3

    sources = write_demo_sources(sources_dir)
    return build_c3(sources, out, per_subset=20, canvas=320, plate_side=640, rpos_items=16,
                    counting_partners=2, grids_per_anchor=2, complete_counts=("gzcd",))


def run_demo(context: DemoContext) -> list[Path]:
    """C3's part of ``biovqa demo``: the tiny sources, the small benchmark (:func:`build_demo`),
    the baseline scored; returns the score folder."""
    bench = build_demo(context.folder("bench-c3"), context.folder("c3-sources"))
    context.say(f"    built {bench.manifest['counts']['total']} questions from tiny WAID/Boxes-on-Bees/DePondFi/"
                f"beetle/GZCD sources → {bench.root}")
    context.benches["c3"] = bench.root
    return [context.score_baseline(bench.root, "c3")]


__all__ = ["build_demo", "run_demo", "voc_xml", "write_bees", "write_beetles", "write_demo_sources", "write_depondfi",
           "write_gzcd", "write_waid"]
