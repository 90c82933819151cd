"""CUB-200-2011 images with a class → taxonomy-path map (the hierarchical VQA's CUB-200 source).

The CUB taxonomy of the hierarchical benchmark (Tan, Qing, Gong 2025, §2.3 and App. A.1: GPT-4o mapped each class to
order → family → genus → species, cross-checked against Wikipedia) is a JSON object keyed by the
English class name (``"Brandt's Cormorant": ["Suliformes", "Phalacrocoracidae", "Phalacrocorax",
"Brandt's Cormorant"]``). CUB's own class folders read ``023.Brandt_Cormorant``: the folder names
drop possessives and apostrophes and carry one typo, so a class is matched to its leaf

1. exactly, after case folding and treating ``-`` and ``_`` as spaces (182 of the 200 classes of
   the authors' file);
2. else after dropping possessive ``'s`` and apostrophes on the leaf (``Chuck_will_Widow`` ↔
   ``Chuck-will's-widow``, ``Forsters_Tern`` ↔ ``Forster's Tern``: 17 classes);
3. else through :data:`CUB_FOLDER_ALIASES` (``Artic_Tern`` ↔ ``Arctic Tern``: 1 class).

How every class was matched is returned (:class:`CubImages`) and recorded in the manifest. The split
comes from ``train_test_split.txt`` (the paper uses the test images).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from biovqa.errors import InputFormatError
from biovqa.sources.cub import class_display_name, read_cub, read_numeric_table

SPLITS: tuple[str, ...] = ("test", "train", "all")
#: CUB folder names (without the ``NNN.`` prefix) that no normalisation maps to their English name:
#: typos in the CUB release itself.
CUB_FOLDER_ALIASES: dict[str, str] = {"Artic_Tern": "Arctic Tern"}


def name_key(name: str) -> str:
    """``Black-footed Albatross`` and ``Black_footed_Albatross`` → ``black footed albatross``."""
    return re.sub(r"[\s_\-]+", " ", name).strip().casefold()


def loose_key(name: str) -> str:
    """:func:`name_key` without possessives and apostrophes: ``Chuck-will's-widow`` → ``chuck will
    widow``, ``Forster's Tern`` → ``forster tern`` (``Forsters`` keeps its ``s``: see
    :func:`_leaf_keys`)."""
    name = name.replace("\u2019", "'")
    return name_key(re.sub(r"'s\b", "", name).replace("'", ""))


def _leaf_keys(leaf: str) -> set[str]:
    """The loose forms a CUB folder may give ``leaf`` in: possessive dropped (``Brandt``) or only
    the apostrophe dropped (``Forsters``)."""
    return {loose_key(leaf), name_key(leaf.replace("\u2019", "'").replace("'", ""))}


@dataclass(frozen=True)
class CubImages:
    """The images of a split with their leaves, the images folder, and how each class was matched
    (``normalised`` and ``alias``: CUB folder → leaf)."""

    pairs: list[tuple[str, str]]
    images_dir: Path
    normalised: dict[str, str] = field(default_factory=dict)
    alias: dict[str, str] = field(default_factory=dict)

    def record(self) -> dict[str, object]:
        return {"normalised": dict(sorted(self.normalised.items())), "alias": dict(sorted(self.alias.items())),
                "aliases_known": dict(CUB_FOLDER_ALIASES)}


def match_classes(folders: dict[int, str], leaves: list[str]) -> tuple[dict[int, str], dict[str, str], dict[str, str]]:
    """``(leaf by class id, normalised matches, alias matches)`` of CUB class folders to leaves."""
    exact = {name_key(leaf): leaf for leaf in leaves}
    loose: dict[str, str | None] = {}
    for leaf in leaves:
        for key in _leaf_keys(leaf):
            loose[key] = None if loose.get(key, leaf) != leaf else leaf  # None: two leaves share it
    by_alias = {name_key(alias): leaf for alias, name in CUB_FOLDER_ALIASES.items()
                for leaf in leaves if name_key(leaf) == name_key(name)}
    leaf_of_class: dict[int, str] = {}
    normalised: dict[str, str] = {}
    aliased: dict[str, str] = {}
    for class_id, folder in folders.items():
        key = name_key(class_display_name(folder))
        if key in exact:
            leaf_of_class[class_id] = exact[key]
        elif loose.get(key):
            leaf_of_class[class_id] = normalised[folder] = str(loose[key])
        elif key in by_alias:
            leaf_of_class[class_id] = aliased[folder] = by_alias[key]
    return leaf_of_class, normalised, aliased


def cub_image_list(root: str | Path, leaves: list[str], *, split: str = "test") -> CubImages:
    """The images of ``split`` whose class matches a leaf (paths relative to ``images/``); a class
    with no leaf is an error naming it."""
    if split not in SPLITS:
        raise InputFormatError(f"split {split!r} is not one of {', '.join(SPLITS)}", field="split")
    dataset = read_cub(root, check_images=False)
    leaf_of_class, normalised, aliased = match_classes(dataset.class_folders, leaves)
    used = {int(c) for c in dataset.image_class_ids}
    unmapped = sorted(used - set(leaf_of_class))
    if unmapped:
        raise InputFormatError(f"CUB class {dataset.class_folders[unmapped[0]]!r} has no leaf in the taxonomy "
                               f"({len(unmapped)} classes unmapped; names are matched ignoring case, '-'/'_', "
                               "possessives and apostrophes)", file=Path(root) / "classes.txt", field="class_name")
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
    used_folders = {dataset.class_folders[c] for c in used}
    return CubImages(pairs, dataset.images_dir,
                     normalised={k: v for k, v in normalised.items() if k in used_folders},
                     alias={k: v for k, v in aliased.items() if k in used_folders})
