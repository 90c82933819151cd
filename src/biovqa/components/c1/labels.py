"""C1 model labels read by the tag convention: a label may end in tags in square brackets,
``"BioCLIP-2 (tol) [specialist]"`` or ``"Phi-3.5-Vision [vlm; family=Phi-3.5; params=4.2]"`` (``;`` or
``,`` between tags), read through :func:`biovqa.reporting.leaderboard.parse_label`. The tags are
stripped from the row names. ``specialist`` / ``vlm`` (alias ``generalist``) or ``group=NAME`` set
the model's group (default ``vlm``); ``family=`` and ``params=`` (billions) feed Table 81 (default:
parsed from the name, e.g. ``Qwen3-VL-30B-A3B`` → Qwen3-VL, 30.0)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: ``[(model label, summary dict), …]``, as the report passes them
Summaries = list[tuple[str, dict[str, Any]]]

#: The group of generalist models; every other group is a non-generalist configuration.
VLM_GROUP = "vlm"
SPECIALIST_GROUP = "specialist"

_SIZE = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)B(?![A-Za-z0-9])")


@dataclass(frozen=True)
class ModelInfo:
    """A model label read by the tag convention (module docstring)."""

    name: str
    group: str
    family: str | None
    params: float


def model_info(label: str) -> ModelInfo:
    """Name, group, family and parameter count (billions, NaN if unknown) of a labelled model."""
    from biovqa.reporting.leaderboard import parse_label

    parsed = parse_label(label)
    tags: dict[str, str] = {}
    for key, value in parsed.tags:
        if value is not None:
            tags[key] = value
        else:  # a bare tag names the group
            tags["group"] = VLM_GROUP if key == "generalist" else key
    name = parsed.name
    group = tags.get("group", VLM_GROUP).lower()
    if group == "generalist":
        group = VLM_GROUP
    size = _SIZE.search(name)
    family = tags.get("family") or (name[:size.start()].rstrip(" -_") or None if size else None)
    try:
        params = float(tags["params"].rstrip("Bb")) if "params" in tags else (
            float(size.group(1)) if size else float("nan"))
    except ValueError:
        params = float("nan")
    return ModelInfo(name=name, group=group, family=family, params=params)


def by_display_name(summaries: Summaries) -> tuple[Summaries, dict[str, ModelInfo]]:
    """Summaries keyed by display name (tags stripped; the full label where names would clash)."""
    infos = [model_info(label) for label, _ in summaries]
    counts: dict[str, int] = {}
    for info in infos:
        counts[info.name] = counts.get(info.name, 0) + 1
    named: Summaries = []
    by_name: dict[str, ModelInfo] = {}
    for (label, summary), info in zip(summaries, infos):
        name = info.name if counts[info.name] == 1 else label
        named.append((name, summary))
        by_name[name] = info
    return named, by_name


__all__ = ["SPECIALIST_GROUP", "VLM_GROUP", "ModelInfo", "Summaries", "by_display_name", "model_info"]
