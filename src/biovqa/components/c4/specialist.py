"""The MegaDescriptor ceiling for C4 (paper §5.4, appendix B "MegaDescriptor for C4", Table 53).

MegaDescriptor-L-384 (a timm Swin-L/12-384 with no classifier head, local weights) embeds the two
photographs of every pair; the score is their cosine similarity. Per dataset, the threshold that
maximises accuracy on the **random** condition (ties: the lowest such threshold) is applied
unchanged to easy and hard: similarity ≥ threshold → "Yes". The AUC of the similarity is converted
to d′ units as √2·z(AUC).

The two photographs are cut from the benchmark's own canvases (the left panel's width is stored per
item; the gutter is 16 px), so the specialist needs only the benchmark folder, as released.

Outputs in ``RUN``: ``predictions.parquet`` (the thresholded replies with the similarity they were
decided from, ``"Yes (cosine similarity 0.812345)"``, which ``biovqa score`` parses as Yes/No and
from which it also computes the AUC and √2·z(AUC), the d′ of Table 3 and Table 53),
``similarities.parquet`` (item_id, similarity), ``specialist.json`` (thresholds, AUC, AUC-based d′
and accuracy per dataset × condition) and ``run.json`` (the run card, ``"kind": "specialist"``;
run on some of the datasets, its ``selection`` lists the items, so that ``biovqa score`` scores
that subset, as the paper scores MegaDescriptor on Grevy's zebra only).

A local weights folder holds ``config.json`` in timm's hub format (``architecture``, optional
``model_args``, ``pretrained_cfg`` with ``input_size``/``mean``/``std``) and ``model.safetensors``
or ``pytorch_model.bin``, as ``BVRA/MegaDescriptor-L-384`` ships them.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.bench.folder import open_bench, write_json, write_parquet
from biovqa.errors import BiovqaError, InputFormatError, MissingResourceError
from biovqa.components.c4.metrics import auc_to_dprime
from biovqa.components.c4.pairs import auc
from biovqa.components.c4.parse import similarity_reply
from biovqa.components.c4.render import GUTTER
from biovqa.components.c4.report import SPECIES_LABEL
from biovqa.components.c4.tasks import CONDITIONS

DEFAULT_ARCHITECTURE = "swin_large_patch4_window12_384"
MODEL_LABEL = "MegaDescriptor-L-384"
#: MegaDescriptor's own normalisation (model card): mean = std = 0.5 per channel.
DEFAULT_MEAN = (0.5, 0.5, 0.5)
DEFAULT_STD = (0.5, 0.5, 0.5)


class TimmEmbedder:
    """A timm backbone from a local folder: L2-normalised pooled features of resized images."""

    def __init__(self, folder: str | Path, *, device: str | None = None, batch_size: int = 16) -> None:
        folder = Path(folder)
        config_path = folder / "config.json"
        if not config_path.is_file():
            raise MissingResourceError("the MegaDescriptor folder has no config.json", file=folder,
                                       hint="download BVRA/MegaDescriptor-L-384 once and give its folder")
        try:
            import timm
            import torch
        except ImportError as exc:
            raise BiovqaError(f"the MegaDescriptor specialist needs timm and torch(vision): {exc}",
                              hint="pip install 'biovqa[specialists]'") from None
        try:
            config = json.loads(config_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputFormatError(f"not valid JSON: {exc.msg}", file=config_path, row=exc.lineno) from None
        architecture = config.get("architecture", DEFAULT_ARCHITECTURE)
        model_args = dict(config.get("model_args") or {})
        model_args["num_classes"] = 0
        self.model = timm.create_model(architecture, pretrained=False, **model_args)
        weights = self._weights(folder)
        if weights.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(str(weights))
        else:
            state = torch.load(str(weights), map_location="cpu", weights_only=True)
        state = {k: v for k, v in state.items() if not k.startswith("head.fc.")}
        missing, unexpected = self.model.load_state_dict(state, strict=False)
        missing = [k for k in missing if not k.startswith("head.")]
        if missing or unexpected:
            raise InputFormatError(f"weights do not fit {architecture}: missing {missing[:3]}, unexpected "
                                   f"{unexpected[:3]}", file=weights)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = self.model.to(self.device).eval()
        pretrained = config.get("pretrained_cfg") or {}
        size = pretrained.get("input_size") or [3, 384, 384]
        self.size = (int(size[-1]), int(size[-2]))
        self.mean = tuple(pretrained.get("mean") or DEFAULT_MEAN)
        self.std = tuple(pretrained.get("std") or DEFAULT_STD)
        self.batch_size = max(1, int(batch_size))
        self.name = f"{MODEL_LABEL} ({folder.name})"

    @staticmethod
    def _weights(folder: Path) -> Path:
        for name in ("model.safetensors", "pytorch_model.bin", "open_clip_pytorch_model.bin"):
            if (folder / name).is_file():
                return folder / name
        raise MissingResourceError("no model.safetensors or pytorch_model.bin in the folder", file=folder)

    def embed(self, images: Sequence[Any]) -> np.ndarray:
        import torch
        from PIL import Image

        arrays = [np.asarray(im.convert("RGB").resize(self.size, Image.Resampling.BICUBIC), dtype=np.float32) / 255.0
                  for im in images]
        batch = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2)
        mean = torch.tensor(self.mean, dtype=torch.float32).view(1, 3, 1, 1)
        std = torch.tensor(self.std, dtype=torch.float32).view(1, 3, 1, 1)
        batch = ((batch - mean) / std).to(self.device)
        with torch.inference_mode():
            features = self.model(batch)
            features = torch.nn.functional.normalize(features.float().flatten(1), dim=-1)
        return features.cpu().numpy().astype(np.float32)


def split_canvas(canvas: Any, left_width: int, gutter: int = GUTTER) -> tuple[Any, Any]:
    """The two photographs of a C4 canvas."""
    height = canvas.height
    return canvas.crop((0, 0, left_width, height)), canvas.crop((left_width + gutter, 0, canvas.width, height))


def fit_threshold(similarity: np.ndarray, same: np.ndarray) -> float:
    """The threshold t maximising the accuracy of ``similarity ≥ t`` → same; the lowest such
    threshold among the observed values (plus +∞, "always No")."""
    similarity = np.asarray(similarity, dtype=float)
    same = np.asarray(same, dtype=bool)
    if not len(similarity):
        return float("nan")
    candidates = np.unique(similarity)
    # accuracy of "≥ t" for every candidate t, via cumulative counts over the sorted values
    order = np.argsort(similarity, kind="stable")
    s_sorted, y_sorted = similarity[order], same[order]
    below_same = np.concatenate([[0], np.cumsum(y_sorted)])
    below_diff = np.concatenate([[0], np.cumsum(~y_sorted)])
    first = np.searchsorted(s_sorted, candidates, side="left")
    total_same = int(same.sum())
    correct = (total_same - below_same[first]) + below_diff[first]
    best = int(np.argmax(correct))
    if below_diff[-1] > correct[best]:  # "always No" beats every threshold
        return float("inf")
    return float(candidates[best])


def evaluate(similarity: np.ndarray, same: np.ndarray, threshold: float) -> dict[str, Any]:
    """AUC, √2·z(AUC), the thresholded accuracy and the counts of one condition."""
    similarity = np.asarray(similarity, dtype=float)
    same = np.asarray(same, dtype=bool)
    decision = similarity >= threshold
    value = auc(similarity, same)
    return {
        "n": int(len(same)), "auc": None if math.isnan(value) else value,
        "dprime_auc": None if math.isnan(value) or value in (0.0, 1.0) else auc_to_dprime(value),
        "acc": float((decision == same).mean()) if len(same) else None,
        "hits": int((decision & same).sum()), "false_alarms": int((decision & ~same).sum()),
    }


def run_specialist(bench_path: str | Path, model: str | Path | Any, out: str | Path, *,
                   datasets: Sequence[str] | None = None, batch_size: int = 16,
                   device: str | None = None, progress: bool = False) -> Path:
    """Run MegaDescriptor on a C4 benchmark; returns the predictions file (see the module docstring).
    ``model`` is a local weights folder or an object with ``embed(images)`` and ``name``."""
    from PIL import Image

    from biovqa.progress import stage_sequence

    bench = open_bench(bench_path)
    if bench.component != "c4":
        raise BiovqaError(f"the MegaDescriptor specialist runs on C4 benchmarks, this one is {bench.component}",
                          file=bench.root)
    items = bench.items
    if "left_panel_width" not in items.column_names:
        raise InputFormatError("the C4 items lack left_panel_width; rebuild the benchmark with this biovqa",
                               file=bench.items_path, field="left_panel_width")
    embedder = TimmEmbedder(model, device=device, batch_size=batch_size) if isinstance(model, (str, Path)) else model
    all_datasets = items.column("dataset").to_pylist()
    wanted = set(datasets) if datasets else set(all_datasets)
    unknown = sorted(wanted - set(all_datasets))
    if unknown:
        raise BiovqaError(f"the benchmark has no dataset {unknown[0]!r}", field="--dataset",
                          hint=f"its datasets: {', '.join(sorted(set(all_datasets)))}")
    rows = [i for i, d in enumerate(all_datasets) if d in wanted]
    images = items.column("image").to_pylist()
    widths = items.column("left_panel_width").to_pylist()
    started = time.perf_counter()
    similarity = np.full(items.num_rows, np.nan)
    batch = max(1, int(getattr(embedder, "batch_size", batch_size)))
    bar = stage_sequence(unit="crops", enabled=progress)
    with bar:
        task = bar.add_task("MegaDescriptor pairs", total=len(rows))
        for start in range(0, len(rows), batch):
            chunk = rows[start:start + batch]
            panels: list[Any] = []
            for i in chunk:
                with Image.open(bench.resolve_image(images[i])) as canvas:
                    canvas.load()
                    panels.extend(split_canvas(canvas.convert("RGB"), int(widths[i])))
            vectors = embedder.embed(panels)
            similarity[chunk] = np.sum(vectors[0::2] * vectors[1::2], axis=1)
            bar.update(task, advance=len(chunk))
    elapsed = time.perf_counter() - started
    # the replies carry the similarity to 6 decimals; threshold, AUC and score all read that value
    similarity = np.round(similarity, 6)

    same = np.asarray(items.column("same").to_numpy(zero_copy_only=False), dtype=bool)
    condition = np.asarray(items.column("condition").to_pylist(), dtype=object)
    dataset = np.asarray(all_datasets, dtype=object)
    decision = np.zeros(items.num_rows, dtype=bool)
    results: dict[str, Any] = {}
    for name in sorted(wanted):
        fit = (dataset == name) & (condition == "random")
        threshold = fit_threshold(similarity[fit], same[fit])
        entry: dict[str, Any] = {"threshold": threshold if math.isfinite(threshold) else None,
                                 "fitted_on": "random", "conditions": {}}
        for cond in CONDITIONS:
            mask = (dataset == name) & (condition == cond)
            if mask.any():
                entry["conditions"][cond] = evaluate(similarity[mask], same[mask], threshold)
                decision[mask] = similarity[mask] >= threshold
        results[name] = entry
    label = f"{MODEL_LABEL} [specialist]"
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    chosen = np.zeros(items.num_rows, dtype=bool)
    chosen[rows] = True
    ids = items.column("item_id").take(pa.array(rows, pa.int64()))
    predictions = pa.table({
        "item_id": ids,
        "response": pa.array([similarity_reply(bool(decision[i]), float(similarity[i])) for i in rows], pa.string()),
        "status": pa.array(["ok"] * len(rows), pa.string()),
        "model": pa.array([label] * len(rows), pa.string()),
        "latency_s": pa.array([elapsed / max(1, len(rows))] * len(rows), pa.float64()),
        "prompt_tokens": pa.nulls(len(rows), pa.int64()),
        "completion_tokens": pa.nulls(len(rows), pa.int64()),
        "error": pa.nulls(len(rows), pa.string()),
    })
    predictions_path = out / "predictions.parquet"
    write_parquet(predictions, predictions_path)
    write_parquet(pa.table({"item_id": ids, "similarity": pa.array(similarity[rows], pa.float64())}),
                  out / "similarities.parquet")
    write_json(out / "specialist.json", {"model": str(getattr(embedder, "name", model)), "label": label,
                                         "score": "cosine similarity of the two photographs",
                                         "threshold_rule": "max accuracy on random, lowest tie; applied unchanged to easy and hard",
                                         "datasets": results})
    from biovqa._version import __version__

    card: dict[str, Any] = {
        "kind": "specialist", "model": label, "weights": Path(model).name if isinstance(model, (str, Path)) else None,
        "benchmark": str(bench.root), "benchmark_manifest_sha256": bench.manifest_sha256,
        "component": "c4", "datasets": sorted(wanted), "items": len(rows),
        "elapsed_s": round(elapsed, 3), "pairs_per_s": round(len(rows) / elapsed, 2) if elapsed else None,
        "biovqa_version": __version__,
    }
    if len(rows) < items.num_rows:
        # ran on some of the datasets: `biovqa score` scores that subset, not every other item as wrong
        names = ", ".join(SPECIES_LABEL.get(d, d) for d in sorted(wanted))
        card["selection"] = {"item_ids": ids.to_pylist(), "datasets": sorted(wanted),
                             "benchmark_manifest_sha256": bench.manifest_sha256, "description": f"{names} only"}
    write_json(out / "run.json", card)
    return predictions_path


def specialist_table(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Table 53 rows (condition, AUC, AUC-based d′, accuracy) per dataset from ``specialist.json``."""
    rows = []
    for name, entry in results.get("datasets", {}).items():
        for cond in CONDITIONS:
            cell = entry["conditions"].get(cond)
            if cell:
                rows.append({"dataset": name, "condition": cond, "megadescriptor_AUC": cell["auc"],
                             "megadescriptor_dprime": cell["dprime_auc"], "megadescriptor_acc": cell["acc"]})
    return rows


__all__ = ["TimmEmbedder", "evaluate", "fit_threshold", "run_specialist", "specialist_table", "split_canvas"]
