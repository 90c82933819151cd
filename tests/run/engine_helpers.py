"""Small benchmark folders for the engine tests, written through the real ``write_bench``.

Imported by the engine tests as ``engine_helpers`` (their folder is put on ``sys.path`` first, so
this works under every pytest import mode).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from biovqa.manifests import Bench, write_bench
from biovqa.records import ITEM_COLUMNS

TASKS = ("order", "family", "species")
GROUPS = ("Birds", "Insects", "Mammals")
TIERS = ("easy", "medium", "hard")


def _png(path: Path, seed: int, size: tuple[int, int] = (24, 16)) -> None:
    from PIL import Image

    image = Image.new("RGB", size, color=(seed * 37 % 256, seed * 91 % 256, seed * 53 % 256))
    image.save(path, format="PNG")


def make_items(n_images: int = 12, tasks: Sequence[str] = TASKS, component: str = "c1",
               images_dir: Path | None = None) -> pa.Table:
    """``n_images`` images × ``len(tasks)`` questions, with ``group`` and ``tier`` strata.

    Item ids are deliberately not in image order, so image-first grouping has work to do.
    """
    rows: dict[str, list] = {name: [] for name, _ in ITEM_COLUMNS}
    rows["group"], rows["tier"] = [], []
    for image_index in range(n_images):
        image = f"img_{image_index:03d}.png"
        sha = None
        if images_dir is not None:
            _png(images_dir / image, image_index)
            sha = hashlib.sha256((images_dir / image).read_bytes()).hexdigest()
        for task_index, task in enumerate(tasks):
            item_id = f"{component}-{task_index}-{(image_index * 7919) % 1000:04d}-{image_index}"
            rows["item_id"].append(item_id)
            rows["component"].append(component)
            rows["task"].append(task)
            rows["question"].append(f"What is the {task} of the organism in image {image_index}?")
            rows["instruction"].append(f"Answer with ONLY the {task} name.")
            rows["options"].append(["alpha", "beta"] if task == "species" else None)
            rows["answer"].append(f"{task}-{image_index % 5}")
            rows["image"].append(image)
            rows["image_sha256"].append(sha)
            rows["source_id"].append(f"src-{image_index}")
            rows["group"].append(GROUPS[image_index % len(GROUPS)])
            rows["tier"].append(TIERS[(image_index // 3) % len(TIERS)])
    schema = pa.schema([*ITEM_COLUMNS, ("group", pa.string()), ("tier", pa.string())])
    return pa.table(rows, schema=schema)


def make_bench(root: Path, n_images: int = 12, tasks: Sequence[str] = TASKS,
               component: str = "c1", with_images: bool = True, seed: int = 42) -> Bench:
    """Write a benchmark folder (items, manifest, images) and open it."""
    root.mkdir(parents=True, exist_ok=True)
    images_dir = None
    if with_images:
        images_dir = root / "images"
        images_dir.mkdir(exist_ok=True)
    items = make_items(n_images, tasks, component, images_dir)
    return write_bench(root, items, component=component, generator="engine-test", seed=seed,
                       sources={}, parameters={"n_images": n_images},
                       extra={"images_root": "images"} if with_images else None)


FLOOR_MODULE = '''
import pyarrow as pa
import pyarrow.compute as pc


def floor(items: pa.Table) -> pa.Array:
    """Image-blind floor of the test component: the most frequent answer of each task."""
    answers = {}
    for task in sorted(set(items.column("task").to_pylist())):
        part = items.filter(pc.equal(items.column("task"), task))
        counts = pc.value_counts(part.column("answer")).to_pylist()
        counts.sort(key=lambda c: (-c["counts"], c["values"]))
        answers[task] = counts[0]["values"]
    return pa.array([answers[t] for t in items.column("task").to_pylist()], pa.string())
'''


def register_floor_component(monkeypatch, tmp_path: Path, name: str = "c1") -> None:
    """Register (for this test only) component ``name`` whose floor lives in a real module file."""
    import importlib

    components = importlib.import_module("biovqa.components")

    module_dir = tmp_path / "floor_module"
    module_dir.mkdir(exist_ok=True)
    module_name = f"engine_test_floor_{name}"
    (module_dir / f"{module_name}.py").write_text(FLOOR_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(module_dir))
    sys.modules.pop(module_name, None)
    entry = components.Component(name=name, title="test component", tasks=TASKS,
                                 builder=f"{module_name}:floor", floor=f"{module_name}:floor",
                                 scorer=f"{module_name}:floor", reporter=f"{module_name}:floor")
    monkeypatch.setitem(components._REGISTRY, name, entry)
