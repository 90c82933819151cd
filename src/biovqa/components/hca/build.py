"""Build the hierarchical 4-way VQA (HCA paper §2.3, App. C.1) and its text-only control (§3.3.1).

Visual bench: for each image and each level of its path below the root, one question whose
options are the gold label and up to three distractors from the same level (policy of
:mod:`.distractors`), shuffled by a seed that depends only on (seed, image, level). Levels with
fewer than 4 labels in the whole taxonomy follow ``small_levels``: ``fewer`` offers all of them
(2–3 options), ``skip`` does not ask that level (it leaves the path); a level with a single label
is never asked. The policy and each level's outcome are recorded in the manifest.

Text bench (``text_from``): every non-leaf question of a visual bench with the image replaced by
the leaf label (``entity="leaf"``) or its common name (``entity="common"``, C1 sources); the leaf
level is not asked and is scored right (leaf auto-correct, so text Acc_leaf = 100 %); identical
(entity, level, option set) questions are asked once and stand for every image that shares them
(binary: that 4-way key is deduplicated first, then each unique question becomes its statements).

The questions and the item columns: :mod:`.items`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from biovqa.bench.folder import relative_to_bench, staged_build
from biovqa.bench.paths import contained_path
from biovqa.components.hca.items import (COMPONENT, TEXT, VISUAL, PromptVariant, make_questions, plan_levels,
                                         similarity_matrix, text_items, visual_items)
from biovqa.components.hca.prompts import COT_MAX_NEW_TOKENS, TEMPLATES, taxonomy_json
from biovqa.components.hca.released import read_released, released_lines, reroot
from biovqa.components.hca.taxonomy import Hierarchy, from_c1_bench, read_image_list, read_taxonomy_json
from biovqa.errors import BiovqaError, InputFormatError

if TYPE_CHECKING:
    from biovqa.bench.folder import Bench

RELEASED_FILE = Path("hca") / "items.jsonl"


def _paths_from_rows(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    """leaf → [level-1 gold, …, leaf] from generated rows (when no full taxonomy is at hand)."""
    paths: dict[str, list[str]] = {}
    for row in rows:
        golds = [gold for _, gold, _ in sorted(row["levels"])]
        if golds and golds[-1] != row["label"]:
            golds.append(row["label"])
        paths.setdefault(row["label"], golds)
    return paths


#: ``first_level`` policies of released items: the HCA paper's authors ask every level of an iNat or
#: ImageNet item but score from level 2 (the kingdom of a one-kingdom taxonomy), CUB from level 1.
FIRST_LEVEL_POLICIES: tuple[str, ...] = ("auto", "scored", "unscored")
EXCLUSION_EXAMPLES = 20


@dataclass
class Exclusions:
    """Photos left out, per reason: the count (manifest ``exclusions``) and the first
    :data:`EXCLUSION_EXAMPLES` named (``exclusion_examples``), the shape every builder records."""

    counts: dict[str, int]
    examples: dict[str, list[str]]

    def add(self, reason: str, example: str) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + 1
        named = self.examples.setdefault(reason, [])
        if len(named) < EXCLUSION_EXAMPLES:
            named.append(example)

    def record(self) -> dict[str, Any]:
        return {"exclusions": dict(sorted(self.counts.items())),
                "exclusion_examples": dict(sorted(self.examples.items()))}


def check_photos(images: Sequence[str], root: Path, exclusions: Exclusions) -> dict[str, str]:
    """sha256 of every photo under ``root`` that opens (the one image check of
    :func:`biovqa.sources.images.inspect_image_file`); a missing or unreadable photo is counted
    under its reason in ``exclusions`` with the first examples named, never an error."""
    from biovqa.bench.folder import sha256_file
    from biovqa.sources.images import inspect_image_file

    digests: dict[str, str] = {}
    for image in dict.fromkeys(images):
        full = contained_path(root, image, field="image", what="image")  # the one containment rule
        if not full.is_file():
            exclusions.add("missing_image", image)
            continue
        verdict = inspect_image_file(full)
        if isinstance(verdict, str):
            exclusions.add(verdict, image)
            continue
        digests[image] = sha256_file(full)
    return digests


def _first_level_unscored(rows: list[dict[str, Any]], first_level: str, level_names: Sequence[str] | None) -> bool:
    """Whether level 1 of released items is asked but not scored. ``auto``: when ``--levels``
    names it ``kingdom``, or, without level names, when every line of the file has the same
    level-1 gold (the kingdom of a one-kingdom taxonomy) and a level below it."""
    if first_level not in FIRST_LEVEL_POLICIES:
        raise BiovqaError(f"first-level policy {first_level!r} is not one of {', '.join(FIRST_LEVEL_POLICIES)}",
                          field="first_level")
    if first_level != "auto":
        return first_level == "unscored"
    if level_names:
        return level_names[0].casefold() == "kingdom"
    golds = {gold for row in rows for level, gold, _ in row["levels"] if level == 1}
    deeper = all(any(level > 1 for level, _, _ in row["levels"]) for row in rows)
    return len(golds) == 1 and deeper


@staged_build
def build_hca(out: str | Path, *, taxonomy: str | Path | None = None, images: str | Path | None = None,
              images_root: str | Path | None = None, c1_bench: str | Path | None = None,
              released: str | Path | None = None, text_from: str | Path | None = None,
              cub: str | Path | None = None, split: str = "test", levels: Sequence[str] | None = None, policy: str = "taxonomy", similarity_model: str | None = None,
              small_levels: str = "fewer", seed: int = 42, template_set: str = "inat", template: int = 1,
              subject: str = "animal", entity: str = "leaf", text_template: int = 0, device: str | None = None,
              progress: bool = False, variant: PromptVariant | None = None, taxonomy_root: str = "auto",
              several_parents: str = "allow", first_level: str = "auto", dataset: str | None = None) -> Bench:
    """Build a visual (from a taxonomy + image list, a C1 bench or released items) or a text-only
    (``text_from`` = a visual hca bench) benchmark in ``out``; see the module docstring.
    ``variant``: the prompt variants of App. C.1.2–C.1.4 (:class:`PromptVariant`), recorded in the
    manifest's ``parameters.variant``. ``taxonomy_root`` and ``several_parents``: how a taxonomy
    JSON is read (:data:`~.taxonomy.ROOT_MODES`, :data:`~.taxonomy.SEVERAL_PARENTS`);
    ``first_level``: whether level 1 of released items is scored (:data:`FIRST_LEVEL_POLICIES`).
    ``dataset`` names the taxonomy/image set (default: the source file's stem; a text control
    inherits its visual bench's), so that a report pairs each dataset's visual and text scores.
    Every photo is checked and hashed; a missing or unreadable one drops its questions and is
    counted and named in the manifest's ``exclusions``."""
    variant = variant or PromptVariant()
    from biovqa.bench.folder import atomic_path, open_bench, write_bench

    given = [name for name, value in (("taxonomy", taxonomy), ("c1_bench", c1_bench), ("released", released),
                                      ("text_from", text_from)) if value is not None]
    if len(given) != 1:
        raise BiovqaError("give exactly one source: --taxonomy with --images, --c1-bench, --released or --text-from",
                          field="source")
    if template_set not in TEMPLATES or not 0 <= template < 5 or not 0 <= text_template < 5:
        raise BiovqaError(f"template set must be one of {', '.join(TEMPLATES)} and templates 0–4", field="template")
    if entity not in ("leaf", "common"):
        raise BiovqaError(f"entity {entity!r} is not leaf or common", field="entity")
    parameters: dict[str, Any] = {"policy": policy, "small_levels": small_levels, "template_set": template_set,
                                  "template": template, "subject": subject}
    sources: dict[str, str | Path] = {}
    extra: dict[str, Any] = {"system_prompt": VISUAL.system_prompt}
    if text_from is not None:
        visual = open_bench(text_from)
        if visual.component != COMPONENT or set(visual.items.column("task").to_pylist()) != {"visual"}:
            raise InputFormatError("not a visual hca benchmark", file=text_from)
        common = visual.manifest.get("common_names", {})
        table = text_items(visual.items, entity=entity, template=text_template, common_names=common,
                           variant=variant)
        parameters = {**visual.manifest["parameters"], "entity": entity, "text_template": text_template,
                      "text_from": Path(text_from).name, "variant": variant.record()}
        n_questions = sum(1 for lv, d in zip(visual.items.column("level").to_pylist(),
                                             visual.items.column("depth").to_pylist()) if lv != d)
        # binary: one statement "A" per unique question (every question has at least 2 options)
        n_unique = table.column("statement").to_pylist().count("A") if variant.binary else table.num_rows
        dedup: dict[str, Any] = {"non_leaf_questions": n_questions, "unique": n_unique}
        if variant.binary:
            dedup.update(statements=table.num_rows,
                         key="(entity, level, option set) of the 4-way question; its statements stay together")
        extra = {"system_prompt": TEXT.system_prompt, "levels": visual.manifest.get("levels"), "text_only": True,
                 "dataset": dataset or visual.manifest.get("dataset") or Path(text_from).name,
                 "leaf_autocorrect": "the leaf level is not asked and is scored right on every path",
                 "dedup": dedup, "unscored_levels": visual.manifest.get("unscored_levels", []),
                 "visual_benchmark_manifest_sha256": visual.manifest_sha256}
        return write_bench(out, table, component=COMPONENT, generator="biovqa.components.hca.build",
                           seed=visual.manifest["seed"], sources={}, parameters=parameters, extra=extra)
    hierarchy: Hierarchy | None
    exclusions = Exclusions({}, {})
    if released is not None:
        rows_in = read_released(Path(released))
        hierarchy = Hierarchy({}, tuple(levels)) if levels else None
        root = Path(images_root) if images_root else Path(released).parent
        prefixes: list[tuple[str, ...]] = []
        rows = []
        for r in rows_in:
            local = reroot(r["image"], root, prefixes, file=Path(released), row=r["row"])
            if local is None:
                exclusions.add("missing_image", r["image"])
                continue
            rows.append({"image": local, "label": r["label"], "levels": r["levels"],
                         "depth": max(level for level, _, _ in r["levels"])})
        if not rows:
            raise InputFormatError(f"no photo of the released items is under {root} (looked for every tail of "
                                   f"{rows_in[0]['image']!r})", file=released, field="image",
                                   hint="give --images-root the folder that holds the photos (e.g. CUB_200_2011/images)")
        digests = check_photos([row["image"] for row in rows], root, exclusions)
        rows = [row for row in rows if row["image"] in digests]
        if not rows:
            raise InputFormatError(f"no photo of the released items opens under {root}", file=released,
                                   field="image")
        parameters["policy"] = policy = "released"
        parameters["first_level"] = first_level
        sources["released"] = released
        extra["unscored_levels"] = [1] if _first_level_unscored(rows_in, first_level, levels) else []
        extra["released_photos"] = {"lines": len(rows_in), "built": len(rows)}
    else:
        common_names: dict[str, str] = {}
        if c1_bench is not None:
            hierarchy, pairs, common_names, root = from_c1_bench(Path(c1_bench))
            sources["c1_manifest"] = Path(c1_bench) / "manifest.json"
        else:
            if (images is None) == (cub is None):
                raise BiovqaError("--taxonomy needs either --images (a CSV image,label) or --cub (a CUB_200_2011 "
                                  "folder)", field="images")
            hierarchy = read_taxonomy_json(Path(str(taxonomy)), tuple(levels) if levels else None,
                                           root=taxonomy_root, several_parents=several_parents)
            sources["taxonomy"] = Path(str(taxonomy))
            parameters.update(taxonomy_root=taxonomy_root, several_parents=several_parents)
            extra["taxonomy_notes"] = hierarchy.notes
            if cub is not None:
                from biovqa.sources.cub_hierarchy import cub_image_list

                found = cub_image_list(cub, list(hierarchy.paths), split=split)
                pairs, root = found.pairs, found.images_dir
                parameters["split"] = split
                extra["cub_class_matches"] = found.record()
            else:
                assert images is not None
                pairs = read_image_list(Path(images), hierarchy)
                root = Path(images_root) if images_root else Path(images).parent
                sources["images"] = Path(images)
        digests = check_photos([image for image, _ in pairs], Path(root), exclusions)
        pairs = [(image, leaf) for image, leaf in pairs if image in digests]
        if not pairs:
            raise InputFormatError(f"no photo of the image list opens under {root}", file=root, field="image")
        matrix = None
        if policy == "similarity":
            if similarity_model is None:
                raise BiovqaError("the similarity policy needs --similarity-model (a local CLIP/SigLIP folder)",
                                  field="similarity_model")
            matrix = similarity_matrix(hierarchy, pairs, root, similarity_model, device=device, progress=progress)
            parameters["similarity_model"] = similarity_model
        rows = make_questions(hierarchy, pairs, policy=policy, small_levels=small_levels, seed=seed,
                              similarity=matrix)
        extra["levels"] = {str(k): v for k, v in plan_levels(hierarchy, small_levels).items()}
        if common_names:
            extra["common_names"] = dict(sorted(common_names.items()))
    extra.update(exclusions.record())
    extra["dataset"] = dataset or Path(str(released or taxonomy or c1_bench)).stem
    taxonomy = None
    if variant.taxonomy:
        paths = hierarchy.context_paths() if hierarchy is not None and hierarchy.paths else _paths_from_rows(rows)
        taxonomy = taxonomy_json(paths)
    parameters["variant"] = variant.record()
    if variant.binary:
        extra["system_prompt"] = None
    table = visual_items(rows, hierarchy, policy=policy, template_set=template_set, template=template,
                         subject=subject, variant=variant, taxonomy=taxonomy, digests=digests)
    target = Path(out) / RELEASED_FILE  # a side file: written before the manifest, which hashes it
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as temporary:
        Path(temporary).write_text("\n".join(released_lines(rows)) + "\n", encoding="utf-8")
    return write_bench(out, table, component=COMPONENT, generator="biovqa.components.hca.build", seed=seed,
                       sources=sources, parameters=parameters,
                       extra={**extra, "images_root": relative_to_bench(root, out)})


def build_command(
    out: Annotated[Path, typer.Option(help="benchmark folder to write")],
    taxonomy: Annotated[Path | None, typer.Option(help="taxonomy JSON leaf → [root, …, leaf] (with --images)")] = None,
    images: Annotated[Path | None, typer.Option(help="CSV image,label (label = a leaf of --taxonomy)")] = None,
    images_root: Annotated[Path | None, typer.Option(help="folder image paths are relative to (default: the list's folder)")] = None,
    c1_bench: Annotated[Path | None, typer.Option(help="a C1 benchmark folder: its images and their lineage")] = None,
    released: Annotated[Path | None, typer.Option(help="released item JSON lines (image, label, levelN, choices_levelN)")] = None,
    cub: Annotated[Path | None, typer.Option(help="a CUB_200_2011 folder (with --taxonomy: the CUB class → order/family/genus map)")] = None,
    split: Annotated[str, typer.Option(help="CUB split: test (the paper's), train or all")] = "test",
    text_from: Annotated[Path | None, typer.Option(help="a visual hca benchmark: build its text-only control")] = None,
    levels: Annotated[str | None, typer.Option(help="comma-separated names of the levels below the root (e.g. order,family,genus,species)")] = None,
    policy: Annotated[str, typer.Option(help="distractors: taxonomy (siblings first, offline), random, similarity")] = "taxonomy",
    similarity_model: Annotated[str | None, typer.Option(help="local CLIP/SigLIP checkpoint folder for --policy similarity")] = None,
    small_levels: Annotated[str, typer.Option(help="levels with < 4 labels: fewer (offer them all) or skip")] = "fewer",
    seed: Annotated[int, typer.Option(help="distractor and shuffle seed")] = 42,
    template_set: Annotated[str, typer.Option(help="Table 12 template set: cub, inat, imgnet")] = "inat",
    template: Annotated[int, typer.Option(help="template 0–4 of the set (0–1 hierarchical for cub/inat)")] = 1,
    subject: Annotated[str, typer.Option(help="fills {object}/{class}: animal, plant, artifact")] = "animal",
    entity: Annotated[str, typer.Option(help="text control: leaf (the leaf label) or common (common name)")] = "leaf",
    text_template: Annotated[int, typer.Option(help="text control template 0–4")] = 0,
    device: Annotated[str | None, typer.Option(help="torch device of the similarity model")] = None,
    cot: Annotated[bool, typer.Option(help="prompt variant: append \"Let's think step by step.\" to the question; replies parsed for their final answer")] = False,
    cot_max_new_tokens: Annotated[int, typer.Option(help="token cap of CoT items (the paper gives none)")] = COT_MAX_NEW_TOKENS,
    taxonomy_context: Annotated[bool, typer.Option(help="prompt variant: prefix \"Here's a taxonomy: \" + the taxonomy JSON")] = False,
    binary: Annotated[bool, typer.Option(help="prompt variant (visual and --text-from): one Yes/No statement per option; a level is right only if exactly one \"Yes\", on the true option")] = False,
    taxonomy_root: Annotated[str, typer.Option(help="root of --taxonomy paths: auto (the first label when all paths share it, else none), first, none (paths start at level 1, as the authors' CUB file)")] = "auto",
    several_parents: Annotated[str, typer.Option(help="a --taxonomy label under two parents: allow (score each image on its own path, as the authors) or refuse")] = "allow",
    first_level: Annotated[str, typer.Option(help="--released: level 1 scored, unscored (asked only, the authors' iNat/ImageNet kingdom) or auto (unscored when every item has the same level-1 gold)")] = "auto",
    dataset: Annotated[str | None, typer.Option(help="name of the dataset (reports pair visual and text scores per dataset); default: the source file's stem, or the visual bench's for --text-from")] = None,
) -> None:
    """Build the hierarchical 4-way VQA (one question per image and level) or its text-only control."""
    from biovqa.progress import stderr_console

    bench = build_hca(out, taxonomy=taxonomy, images=images, images_root=images_root, c1_bench=c1_bench,
                      released=released, text_from=text_from, cub=cub, split=split,
                      levels=[x.strip() for x in levels.split(",")] if levels else None, policy=policy,
                      similarity_model=similarity_model, small_levels=small_levels, seed=seed,
                      template_set=template_set, template=template, subject=subject, entity=entity,
                      text_template=text_template, device=device, progress=True,
                      variant=PromptVariant(cot=cot, taxonomy=taxonomy_context, binary=binary,
                                            cot_max_new_tokens=cot_max_new_tokens),
                      taxonomy_root=taxonomy_root, several_parents=several_parents, first_level=first_level,
                      dataset=dataset)
    manifest = bench.manifest
    console = stderr_console()
    console.print(f"[green]built HCA[/green]: {manifest['counts']['total']:,} questions "
                  f"{manifest['counts'].get('by_task', {})} → {bench.root}")
    if "dedup" in manifest:
        console.print(f"  text control: {manifest['dedup']['non_leaf_questions']:,} non-leaf questions → "
                      f"{manifest['dedup']['unique']:,} unique")
    for level, entry in (manifest.get("levels") or {}).items():
        console.print(f"  level {level} ({entry['name'] or '-'}): {entry['labels']} labels, {entry['action']}")
    for line in build_notes(manifest):
        console.print(f"  [yellow]note[/yellow]: {line}")


def build_notes(manifest: dict[str, Any]) -> list[str]:
    """What the build tolerated or left out, one line each (printed after ``biovqa build hca``)."""
    lines = []
    notes = manifest.get("taxonomy_notes") or {}
    if notes.get("root") is None and "root_mode" in notes:
        lines.append("the taxonomy has no root: its first label is level 1")
    if notes.get("leaf_case"):
        key, last = next(iter(notes["leaf_case"].items()))
        lines.append(f"{len(notes['leaf_case'])} leaves differ from their path's last label only in case "
                     f"({key!r} vs {last!r}); matched, the key kept")
    if notes.get("leaf_equals_parent"):
        lines.append(f"leaf = genus: {', '.join(notes['leaf_equals_parent'])}")
    if notes.get("several_parents"):
        label, parents = next(iter(notes["several_parents"].items()))
        lines.append(f"{len(notes['several_parents'])} labels have several parents ({label!r} under "
                     f"{' and '.join(parents)}): every image is scored on its own path")
    matches = manifest.get("cub_class_matches") or {}
    if matches.get("normalised") or matches.get("alias"):
        lines.append(f"CUB classes matched after dropping possessives/apostrophes: {len(matches['normalised'])}, "
                     f"through the alias table: {len(matches['alias'])}")
    if manifest.get("unscored_levels"):
        lines.append(f"levels asked but not scored: {manifest['unscored_levels']} (score with "
                     "-O score_unscored_levels=true)")
    return lines  # exclusions: the summary every ``biovqa build`` prints


# PromptVariant is a build option (build_hca(variant=…)): callers import it with the build
__all__ = ["PromptVariant", "build_command", "build_hca", "build_notes"]
