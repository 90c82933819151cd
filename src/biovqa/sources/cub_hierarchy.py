"""CUB-200-2011 images with a class → taxonomy-path map (the hierarchical VQA's CUB-200 source).

The CUB taxonomy of the hierarchical benchmark (hierarchy.md §2) is a JSON object keyed by the
English class name (``"Black-footed Albatross": ["Aves", "Procellariiformes", "Diomedeidae",
"Phoebastria", "Black-footed Albatross"]``). CUB's own class folders read
``001.Black_footed_Albatross``; names match after case folding and treating ``-`` and ``_`` as
spaces. The split comes from ``train_test_split.txt`` (the paper uses the test images).
"""

from __future__ import annotations

import re
from pathlib import Path

from biovqa.errors import InputFormatError
from biovqa.sources.cub import class_display_name, read_cub, read_numeric_table

SPLITS: tuple[str, ...] = ("test", "train", "all")


def name_key(name: str) -> str:
    """``Black-footed Albatross`` and ``Black_footed_Albatross`` → ``black footed albatross``."""
    return re.sub(r"[\s_\-]+", " ", name).strip().casefold()


def cub_image_list(root: str | Path, leaves: list[str], *, split: str = "test") -> tuple[list[tuple[str, str]], Path]:
    """``([(image path relative to images/, leaf)], images folder)`` for the images of ``split``
    whose class matches a leaf; a class with no leaf is an error naming it."""
    if split not in SPLITS:
        raise InputFormatError(f"split {split!r} is not one of {', '.join(SPLITS)}", field="split")
    dataset = read_cub(root, check_images=False)
    by_key = {name_key(leaf): leaf for leaf in leaves}
    leaf_of_class: dict[int, str] = {}
    for class_id, folder in dataset.class_folders.items():
        leaf = by_key.get(name_key(class_display_name(folder)))
        if leaf is not None:
            leaf_of_class[class_id] = leaf
    used = {int(c) for c in dataset.image_class_ids}
    unmapped = sorted(used - set(leaf_of_class))
    if unmapped:
        raise InputFormatError(f"CUB class {dataset.class_folders[unmapped[0]]!r} has no leaf in the taxonomy "
                               f"({len(unmapped)} classes unmapped)", file=Path(root) / "classes.txt",
                               field="class_name")
    keep = [True] * dataset.n_images
    if split != "all":
        path = Path(root) / "train_test_split.txt"
        if not path.is_file():
            raise InputFormatError("train_test_split.txt is missing (or pass --split all)", file=path)
        table = read_numeric_table(path, ("image_id", "is_training_image"),
                                   integer_fields=("image_id", "is_training_image"))
        training = dict(zip(table["image_id"].tolist(), table["is_training_image"].tolist()))
        want = 1 if split == "train" else 0
        keep = [training.get(int(i)) == want for i in dataset.image_ids]
    pairs = [(relative, leaf_of_class[int(c)]) for relative, c, k in
             zip(dataset.image_paths, dataset.image_class_ids, keep) if k]
    if not pairs:
        raise InputFormatError(f"no CUB image in the {split} split", file=root)
    return pairs, dataset.images_dir
