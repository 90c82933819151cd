"""The ``wildlife-datasets`` catalog reader (``read_wildlife_catalog(reader="wildlife-datasets")``):
the Wild Me catalogue of the ``wildlife-datasets`` package (``pip install 'biovqa[wildlife]'``),
its DataFrame mapped to the same records as biovqa's own reader, with the fields it drops taken
from the same JSON rows (how the two readers agree and differ: :mod:`biovqa.sources.wildlife`)."""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from biovqa.bench.paths import contained_path
from biovqa.errors import BiovqaError, InputFormatError
from biovqa.sources.wildlife_catalog import (EXCLUDED_NO_VIEWPOINT, Admission, WildlifeAnnotation, WildlifeCatalog,
                                             coco_annotation_id, coco_image_of, coco_image_size, coco_images,
                                             identity_of, json_number, normalize_viewpoint, read_coco_json)

WILDLIFE_DATASETS_HINT = "pip install 'biovqa[wildlife]' (the wildlife-datasets package)"
#: catalog name → the wildlife-datasets class reading it, with the layout that class expects
#: (``<prefix>.coco/annotations/instances_train<year>.json`` under the class's root)
WILDLIFE_DATASETS_LOADERS: dict[str, tuple[str, str, int]] = {
    "whaleshark": ("WhaleSharkID", "whaleshark", 2020),
    "hyena": ("HyenaID2022", "hyena", 2022),
    "leopard": ("LeopardID2022", "leopard", 2022),
    "beluga": ("BelugaID", "beluga/beluga", 2022),
    "gzgc": ("GiraffeZebraID", "gzgc", 2020),
}
#: the keys the package's Wild Me loader indexes in every entry of each list
_PACKAGE_KEYS = {"annotations": ("name", "segmentation", "image_id", "category_id", "viewpoint"),
                 "images": ("id", "file_name", "date_captured"),
                 "categories": ("id", "name", "supercategory")}


def read_with_wildlife_datasets(path: str | Path, name: str, annotation_file: Path, images_dir: Path, *,
                                 check_images: bool) -> WildlifeCatalog:
    """The catalog as the wildlife-datasets package reads it, mapped to biovqa's records. Its
    catalogue row ``image_id`` is the annotation's 0-based position in ``annotations[]``; the
    annotation ``uuid`` and the image size it drops are taken from that JSON row."""
    payload = read_coco_json(annotation_file)
    _check_package_keys(payload, annotation_file)
    images = coco_images(payload, annotation_file)
    raw = payload["annotations"]
    frame, root, label = _package_catalogue(annotation_file, name)
    unknown = str(frame.attrs.get("unknown_name", "unknown"))
    admission = Admission(check_images)
    for record in _frame_records(frame):
        position = record.get("image_id")
        if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < len(raw):
            raise InputFormatError(f"wildlife-datasets returned a row ({position!r}) that is not an annotation "
                                   "position", file=annotation_file, field="image_id")
        row = position + 1
        entry = raw[position]
        image = coco_image_of(entry, images, annotation_file, row)
        width, height = coco_image_size(image, annotation_file, row)
        admission.count_image(str(image["file_name"]))
        box: Any = record.get("bbox")
        numbers = [number for number in (json_number(float(v)) for v in box) if number is not None] \
            if _is_sequence(box) else []
        if len(numbers) != 4 or numbers[2] <= 0 or numbers[3] <= 0:
            raise InputFormatError(f"the segmentation polygon spans no area (wildlife-datasets box {box!r})",
                                   file=annotation_file, row=row, field="segmentation")
        viewpoint = normalize_viewpoint(_missing_to_none(record.get("orientation")))
        if viewpoint is None:
            admission.exclude(EXCLUDED_NO_VIEWPOINT)
            continue
        identity = _missing_to_none(record.get("identity"))
        species = _missing_to_none(record.get("species"))
        admission.admit(WildlifeAnnotation(
            dataset=name, annotation_id=coco_annotation_id(entry, row), image_id=str(image["id"]),
            image_path=contained_path(root, str(record["path"]), file=annotation_file, row=row,
                                      field="images[].file_name", what="photo"),
            file_name=str(image["file_name"]),
            width=width, height=height, bbox=(numbers[0], numbers[1], numbers[2], numbers[3]),
            theta=0.0, viewpoint=viewpoint,
            identity=None if identity is None or str(identity) == unknown else identity_of({"name": identity}),
            species=None if species is None else str(species), row=row))
    return admission.catalog(name, path, images_dir, annotation_file, f"wildlife-datasets {label}")


def _check_package_keys(payload: dict[str, Any], annotation_file: Path) -> None:
    """The package indexes these keys without a check (a KeyError deep inside it): name the first
    entry lacking one instead. It also needs exactly one segmentation polygon per annotation."""
    for key, needed in _PACKAGE_KEYS.items():
        entries = payload.get(key)
        if key == "categories" and not isinstance(entries, list):
            raise InputFormatError("wildlife-datasets needs a categories[] list", file=annotation_file,
                                   field="categories", hint="read this catalog with --catalog-reader biovqa")
        for row, entry in enumerate(entries or [], start=1):
            if not isinstance(entry, dict):
                raise InputFormatError(f"an entry of {key}[] must be a JSON object", file=annotation_file, row=row)
            for needed_key in needed:
                if needed_key not in entry:
                    raise InputFormatError(
                        f"wildlife-datasets needs {needed_key!r} on every entry of {key}[]", file=annotation_file,
                        row=row, field=needed_key if key == "annotations" else f"{key}[].{needed_key}",
                        hint="read this catalog with --catalog-reader biovqa")
            if key == "annotations":
                polygons = entry["segmentation"]
                if not isinstance(polygons, list) or len(polygons) != 1 or not isinstance(polygons[0], list) \
                        or len(polygons[0]) < 2 or len(polygons[0]) % 2 \
                        or any(json_number(v) is None for v in polygons[0]):
                    raise InputFormatError("wildlife-datasets needs exactly one segmentation polygon "
                                           "[x1, y1, x2, y2, ...]", file=annotation_file, row=row,
                                           field="segmentation", hint="read this catalog with --catalog-reader biovqa")


def _package_catalogue(annotation_file: Path, name: str) -> tuple[Any, Path, str]:
    """(the package's catalogue DataFrame, the root its ``path`` column is relative to, the loader
    used). The named class (WhaleSharkID, …) reads a catalog in the layout it expects; any other
    ``<prefix>.coco`` layout goes through the package's generic Wild Me loader."""
    try:
        from wildlife_datasets.datasets import datasets_wildme
        from wildlife_datasets import datasets as package
    except ImportError as exc:
        raise BiovqaError(f"the wildlife-datasets catalog reader needs the wildlife-datasets package: {exc}",
                          hint=WILDLIFE_DATASETS_HINT) from None
    coco = annotation_file.parent.parent
    match = re.match(r"instances_train(\d+)\.json$", annotation_file.name)
    if annotation_file.parent.name != "annotations" or not coco.name.endswith(".coco") or match is None:
        raise InputFormatError("wildlife-datasets reads only the <name>.coco/annotations/instances_train<YEAR>.json "
                               "layout", file=annotation_file, hint="read this catalog with --catalog-reader biovqa")
    year = int(match.group(1))
    prefix_parts = [coco.name.removesuffix(".coco")]
    known = WILDLIFE_DATASETS_LOADERS.get(name)
    loader: Any
    if known is not None and Path(known[1]).parts[-1] == prefix_parts[0] and known[2] == year:
        class_name, prefix, _ = known
        depth = len(Path(prefix).parts)
        root = coco.parents[depth - 1] if depth > 1 else coco.parent
        if (root / f"{prefix}.coco").resolve() != coco.resolve():
            class_name = ""
    else:
        class_name = ""
    if class_name:
        loader, label = getattr(package, class_name), class_name
    else:
        prefix, root = prefix_parts[0], coco.parent

        class _Generic(datasets_wildme.WildlifeDatasetWildMe):  # type: ignore[misc]
            def create_catalogue(self) -> Any:
                return self.create_catalogue_wildme(prefix, year)

        loader, label = _Generic, f"WildlifeDatasetWildMe({prefix!r}, {year})"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # BelugaID warns that BelugaIDv2 exists (another release)
            dataset = loader(str(root), check_files=False)
    except Exception as exc:  # the package raises bare Exception / KeyError / ValueError
        raise InputFormatError(f"wildlife-datasets ({label}) could not read the catalog: "
                               f"{type(exc).__name__}: {exc}", file=annotation_file,
                               hint="read this catalog with --catalog-reader biovqa") from None
    frame = dataset.df
    frame.attrs["unknown_name"] = getattr(dataset, "unknown_name", "unknown")
    return frame, root, label


def _frame_records(frame: Any) -> Iterator[dict[str, Any]]:
    columns = list(frame.columns)
    for values in frame.itertuples(index=False, name=None):
        record = dict(zip(columns, values))
        position = record.get("image_id")
        if position is not None and not isinstance(position, bool):
            try:
                record["image_id"] = int(position)
            except (TypeError, ValueError):
                pass
        yield record


def _is_sequence(value: Any) -> bool:
    return isinstance(value, (list, tuple)) or (hasattr(value, "__len__") and hasattr(value, "__getitem__")
                                                 and not isinstance(value, (str, bytes)))


def _missing_to_none(value: Any) -> Any:
    """``None`` for the package's missing values (NaN / pandas NA), else the value."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    try:
        import pandas as pd

        if value is pd.NA or value is pd.NaT:
            return None
    except ImportError:  # pragma: no cover - the package depends on pandas
        pass
    return value


__all__ = ["WILDLIFE_DATASETS_HINT", "WILDLIFE_DATASETS_LOADERS", "read_with_wildlife_datasets"]
