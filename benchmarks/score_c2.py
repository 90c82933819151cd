"""Benchmark: score 824 104 synthetic C2 items of one model; compare with a plain per-item Python
reference implementation of the same scorer, item by item.

    python benchmarks/score_c2.py [--items 824104] [--reference-fraction 1.0] [--bootstrap 1000]

The synthetic benchmark has the real size and family mix (Table 7), option sets drawn from the real
CUB vocabularies, and replies in the forms models produce (instructed "(X) text", bare letters,
markdown, verbose sentences, letter–text mismatches, typos, empty and missing replies).
Prints: build time, vectorised scoring time (per-item table), summary time (with the bootstrap),
reference time, speed-up, and the largest per-item difference.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

import numpy as np
import pyarrow as pa

from biovqa.bench.folder import open_bench, read_parquet, write_bench, write_parquet
from biovqa.records import ITEM_COLUMNS
from biovqa.components.c2.score import kernel_config, load_context
from biovqa.components.c2 import kernels
from biovqa.components.c2 import naming
from biovqa.components.c2 import parse
from biovqa.components.c2.summary import summarize
from biovqa.components.c2.cags import score_items
from biovqa.components.c2.context import C2Context, genus_class_baseline, open_baseline_sample
from biovqa.components.c2.tasks import CATEGORY_OF, FAMILY, OPEN_FAMILIES, PAPER_COUNTS
from biovqa.text import normalize_c2

LETTERS = "ABCDE"
STEMS = {
    "attr_bare_value": "What is the {pp} of this bird?",
    "attr_group_value": "Which of the following is the most prominently visible physical trait of the bird in this image?",
    "marker_localization": "What is the body part of this bird marked with the {c} {s}?",
    "visibility_partset": "Which of the following parts of the bird are visible in this image?",
    "visibility_side": "Which of the {p}s of the bird are visible in this image?",
    "category_mcq": "What type of bird is this in the image?",
    "open_common_name": "What is the common name of the bird?",
    "open_scientific_name": "What is the scientific name of the bird?",
    "open_genus": "What is the genus of the bird?",
    "open_kind_of": "What kind of {k} is the bird in this image?",
}
EXTRA = (("family", pa.string()), ("category", pa.string()), ("answer_letter", pa.string()),
         ("part", pa.string()), ("property", pa.string()), ("attribute_group", pa.string()),
         ("class_name", pa.string()), ("genus", pa.string()), ("kind_category", pa.string()))


def _vocabulary(name: str) -> str:
    return resources.files("biovqa").joinpath("data", "cub", "vocabulary", name).read_text("utf-8")


def cub_groups() -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for line in _vocabulary("attributes.txt").splitlines():
        group, _, value = line.split(" ", 1)[1].partition("::")
        groups.setdefault(group, []).append(value.replace("_", " ").strip())
    return groups


def group_label(group: str) -> tuple[str | None, str]:
    tokens = group.removeprefix("has_").split("_")
    return (" ".join(tokens[:-1]) or None), tokens[-1]


def class_names() -> list[str]:
    names = []
    for line in _vocabulary("classes.txt").splitlines():
        folder = line.split(" ", 1)[1].strip()
        names.append(folder.split(".", 1)[1].replace("_", " "))
    return names


#: Reply-form mixes (cumulative shares). "realistic" is calibrated to the worst models of Table 31
#: (parse rate ≈ 98.9 %, letter–text mismatch ≈ 1.2 %); "harsh" stresses the slow parser paths.
REPLY_MIXES: dict[str, tuple[tuple[str, float], ...]] = {
    "realistic": (("instructed", 0.880), ("bare", 0.920), ("markdown", 0.940), ("scaffold", 0.955),
                  ("verbose", 0.970), ("mismatch", 0.982), ("typo", 0.987), ("empty", 0.991),
                  ("refusal", 0.995), ("missing", 0.998), ("failed", 1.0)),
    "harsh": (("instructed", 0.70), ("bare", 0.78), ("verbose", 0.85), ("markdown", 0.90),
              ("mismatch", 0.93), ("typo", 0.96), ("empty", 0.97), ("refusal", 0.98),
              ("missing", 0.99), ("failed", 1.0)),
}


def reply_for(rng: np.random.Generator, options: list[str], chosen: int, mix: str) -> tuple[str | None, str]:
    """A reply naming option ``chosen`` in one of the forms models produce."""
    u = rng.random()
    form = next(name for name, upper in REPLY_MIXES[mix] if u < upper)
    text = options[chosen]
    letter = LETTERS[chosen]
    if form == "instructed":
        return f"({letter}) {text}", "ok"
    if form == "bare":
        return letter, "ok"
    if form == "markdown":
        return f"**({letter}) {text}**", "ok"
    if form == "scaffold":
        return f"Answer: ({letter}) {text}", "ok"
    if form == "verbose":
        return f"I think it is {text.lower()}.", "ok"
    if form == "mismatch":
        return f"({letter}) {options[(chosen + 1) % len(options)]}", "ok"
    if form == "typo":
        cut = int(rng.integers(len(text))) if len(text) > 3 else 0
        return text[:cut] + text[cut + 1:], "ok"
    if form == "empty":
        return "", "ok"
    if form == "refusal":
        return "I cannot tell.", "ok"
    return None, form


def make_items(total: int, seed: int = 7, mix: str = "realistic") -> tuple[pa.Table, list[str | None], list[str]]:
    rng = np.random.default_rng(seed)
    scale = total / sum(PAPER_COUNTS.values())
    counts = {f: max(1, round(c * scale)) for f, c in PAPER_COUNTS.items()}
    groups = cub_groups()
    group_names = sorted(groups)
    parts = list(kernels.CUB_PARTS)
    names = class_names()
    heads: dict[str, list[str]] = {}
    for name in names:
        heads.setdefault(name.split()[-1], []).append(name)
    categories = sorted(h for h, members in heads.items() if len(members) >= 2)
    multi = [n for n in names if n.split()[-1] in categories]
    # Latin-looking genus and epithet strings (varied, like the real CUB binomials)
    def latin(words: list[str], ending: str) -> str:
        stem = "".join(w.lower() for w in words)[:9]
        return stem.capitalize() + ending
    genus_of = {n: latin(n.split()[-1:] + [str(i % 3)], "us").replace("0", "o").replace("1", "i").replace("2", "a")
                for i, n in enumerate(names)}
    sci_of = {n: f"{genus_of[n]} {latin(n.split()[:-1] or ['x'], 'ensis').lower()}" for n in names}
    rows: dict[str, list] = {name: [] for name, _ in ITEM_COLUMNS}
    for name, _ in EXTRA:
        rows[name] = []
    replies: list[str | None] = []
    statuses: list[str] = []

    def add(family: str, k: int, question: str, options: list[str] | None, answer: str, **extra):
        rows["item_id"].append(f"c2-{family}-{k:07d}")
        rows["component"].append("c2")
        rows["task"].append(family)
        rows["family"].append(family)
        rows["category"].append(CATEGORY_OF[family])
        rows["question"].append(question if options is None else
                                question + " Options: " + ", ".join(f"({LETTERS[i]}) {o}" for i, o in enumerate(options)))
        rows["instruction"].append("…")
        rows["options"].append(options)
        rows["answer"].append(answer)
        rows["answer_letter"].append(LETTERS[options.index(answer)] if options else None)
        rows["image"].append(f"img/{k}.jpg")
        rows["image_sha256"].append(None)
        rows["source_id"].append(str(k % 11788 + 1))
        for key in ("part", "property", "attribute_group", "class_name", "genus", "kind_category"):
            rows[key].append(extra.get(key))

    def mcq(family: str, k: int, question: str, options: list[str], gold: int, **extra):
        add(family, k, question, options, options[gold], **extra)
        chosen = gold if rng.random() < 0.55 else int(rng.integers(len(options)))
        reply, status = reply_for(rng, options, chosen, mix)
        replies.append(reply)
        statuses.append(status)

    for k in range(counts["attr_bare_value"]):
        group = group_names[int(rng.integers(len(group_names)))]
        values = groups[group]
        chosen = list(rng.choice(values, size=min(5, len(values)), replace=False))
        part, prop = group_label(group)
        mcq("attr_bare_value", k, STEMS["attr_bare_value"].format(pp=f"{part} {prop}" if part else prop),
            chosen, int(rng.integers(len(chosen))), part=part, property=prop, attribute_group=group)
    for k in range(counts["attr_group_value"]):
        picked = rng.choice(len(group_names), size=5, replace=False)
        options = []
        for g in picked:
            group = group_names[int(g)]
            part, prop = group_label(group)
            value = groups[group][int(rng.integers(len(groups[group])))]
            options.append(f"{part + ' ' if part else ''}{prop}: {value}")
        gold = int(rng.integers(5))
        gpart, gprop = group_label(group_names[int(picked[gold])])
        mcq("attr_group_value", k, STEMS["attr_group_value"], options, gold, part=gpart, property=gprop,
            attribute_group=group_names[int(picked[gold])])
    for k in range(counts["marker_localization"]):
        options = [parts[int(i)] for i in rng.choice(15, size=5, replace=False)]
        mcq("marker_localization", k, STEMS["marker_localization"].format(c="red", s="dot"), options,
            int(rng.integers(5)))
    for k in range(counts["visibility_partset"]):
        triple = [parts[int(i)] for i in rng.choice(15, size=3, replace=False)]
        options = [*triple, "None", "All three"]
        mcq("visibility_partset", k, STEMS["visibility_partset"], options, int(rng.integers(5)))
    for k in range(counts["visibility_side"]):
        part = ("eye", "leg", "wing")[k % 3]
        mcq("visibility_side", k, STEMS["visibility_side"].format(p=part), ["Left", "Right", "Both", "None"],
            int(rng.integers(4)), part=part)
    for k in range(counts["category_mcq"]):
        options = [categories[int(i)] for i in rng.choice(len(categories), size=5, replace=False)]
        mcq("category_mcq", k, STEMS["category_mcq"], options, int(rng.integers(5)))

    def open_item(family: str, k: int, name: str, gold: str, pool: list[str], **extra):
        question = STEMS[family].format(k=(extra.get("kind_category") or "").lower())
        add(family, k, question, None, gold, class_name=name, genus=genus_of[name], **extra)
        u = rng.random()
        if u < 0.4:
            reply = gold
        elif u < 0.9:
            reply = pool[int(rng.integers(len(pool)))]
        elif u < 0.95:
            reply = gold[:-1]
        else:
            reply = ""
        if rng.random() < 0.1:
            reply = f"The answer is {reply}."
        replies.append(reply)
        statuses.append("ok")

    for family in OPEN_FAMILIES:
        for k in range(counts[family]):
            if family == "open_kind_of":
                name = multi[int(rng.integers(len(multi)))]
                head = name.split()[-1]
                modifier = name[: -len(head)].strip()
                open_item(family, k, name, modifier, [m.split()[0] for m in multi], kind_category=head)
            else:
                name = names[int(rng.integers(len(names)))]
                gold = {"open_common_name": name, "open_scientific_name": sci_of[name],
                        "open_genus": genus_of[name]}[family]
                pool = {"open_common_name": names, "open_scientific_name": list(sci_of.values()),
                        "open_genus": list(genus_of.values())}[family]
                open_item(family, k, name, gold, pool)
    schema = pa.schema([*ITEM_COLUMNS, *EXTRA])
    return pa.table(rows, schema=schema), replies, statuses


def clear_caches() -> None:
    """Forget every memoized kernel value, so each timed run starts cold."""
    kernels.parse_trait.cache_clear()
    kernels.normalize_c2.cache_clear()
    naming.tokens.cache_clear()
    naming.name_part_agreement.cache_clear()
    parse._positions.cache_clear()
    parse._char_counts.cache_clear()


# ---------------------------------------------------------------------------------------------
# the plain per-item reference


def reference_item(row: dict, reply: str | None, status: str, context: C2Context,
                   config: kernels.KernelConfig) -> tuple[float, float, float, int, str]:
    """(s, b, cags, em, parse_status) of one item, straight from the scalar definitions."""
    family = row["family"]
    question = row["question"]
    options = parse.parse_options(question)
    routed = parse.route_family(question, options)
    assert routed == family, (routed, family)
    has_reply = status == "ok" and reply is not None
    if options is not None:
        gold = parse.parse_gold(row["answer"], options)
        if has_reply:
            index, parse_status = parse.resolve_reply(reply, options, prefer_text=config.prefer_text)
        else:
            index, parse_status = -1, parse.MISSING

        def sim(a: int) -> float:
            x, y = options[a], options[gold]
            if family == "attr_bare_value":
                return kernels.value_similarity(row["attribute_group"], x, y, config)
            if family == "attr_group_value":
                return kernels.paired_attribute_similarity(x, y, context.layout, config)
            if family == "marker_localization":
                return context.layout.part_similarity(x, y)
            if family == "category_mcq":
                return kernels.exact_similarity(x, y)
            if family == "visibility_side":
                kappa = kernels.visibility_element_similarity(context.layout, config, row["part"])
                return kernels.soft_jaccard(kernels.side_option_set(x), kernels.side_option_set(y), kappa)
            parts = [o for o in options if normalize_c2(o) not in ("none", "all three")]
            kappa = kernels.visibility_element_similarity(context.layout, config)
            return kernels.soft_jaccard(kernels.partset_option_set(x, parts),
                                        kernels.partset_option_set(y, parts), kappa)

        distractors = [sim(a) for a in range(len(options)) if a != gold]
        b = sum(distractors) / len(distractors) if distractors else 0.0
        s = sim(index) if index >= 0 else 0.0
        em = int(index == gold and index >= 0)
    else:
        text = parse.clean_open_reply(reply) if has_reply else ""
        parse_status = parse.MISSING if not has_reply else (parse.PARSED if text else parse.FAILED)
        gold_text = normalize_c2(row["answer"])
        pred = text
        if family == "open_kind_of":
            gold_text = normalize_c2(row["class_name"])
            pred = naming.complete_kind_of(text, row["kind_category"]) if text else ""
        s = FAMILY[family].kernel(pred, gold_text, context) if pred else 0.0
        em = int(bool(pred) and pred == gold_text)
        if family == "open_kind_of":
            em = int(em or (bool(text) and text == normalize_c2(row["answer"])))
        if family == "open_genus" and config.genus_baseline == "exact":
            # the chance of naming the right genus by answering another class's genus
            class_key = (f"id:{row['class_id']}" if row.get("class_id") is not None
                         else f"name:{normalize_c2(row['class_name'])}" if row.get("class_name")
                         else f"answer:{normalize_c2(row['answer'] or '')}")
            b = genus_class_baseline(class_key, gold_text, context)
        else:
            pool = list(context.open_gold_pool[family])
            sample = open_baseline_sample(family, gold_text, pool)
            b = sum(FAMILY[family].kernel(pool[d], gold_text, context) for d in sample) / len(sample)
    if parse_status not in parse.RECOVERED:
        return 0.0, b, 0.0, 0, parse_status
    if 1.0 - b < 1e-12:
        cags = 1.0 if s == 1.0 else 0.0
    else:
        cags = (s - b) / (1.0 - b)
    return s, b, cags, em, parse_status


def main() -> int:
    parser_ = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser_.add_argument("--items", type=int, default=sum(PAPER_COUNTS.values()))
    parser_.add_argument("--reference-fraction", type=float, default=1.0,
                         help="share of items (every k-th) the slow reference scores")
    parser_.add_argument("--bootstrap", type=int, default=1000)
    parser_.add_argument("--repeats", type=int, default=3)
    parser_.add_argument("--reply-mix", choices=sorted(REPLY_MIXES), default="realistic")
    parser_.add_argument("--cache", type=Path, default=None,
                         help="keep the synthetic benchmark in this folder and reuse it")
    args = parser_.parse_args()

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.cache or Path(tmp) / "bench"
        if not (root / "predictions.parquet").exists():
            items, replies, statuses = make_items(args.items, mix=args.reply_mix)
            write_bench(root, items, component="c2", generator="benchmarks/score_c2.py", seed=7,
                        sources={}, parameters={"items": args.items, "reply_mix": args.reply_mix})
            layout = {p: [0.1 + 0.06 * i, 0.2 + 0.04 * ((i * 5) % 15)] for i, p in enumerate(kernels.CUB_PARTS)}
            (root / "c2").mkdir(exist_ok=True)
            (root / "c2" / "part_layout.json").write_text(json.dumps(layout))
            write_parquet(pa.table({"item_id": items.column("item_id"),
                                    "response": pa.array(replies, pa.string()),
                                    "status": pa.array(statuses, pa.string())}), root / "predictions.parquet")
        bench = open_bench(root)
        items = bench.items
        predictions = read_parquet(root / "predictions.parquet")
        replies = predictions.column("response").to_pylist()
        statuses = predictions.column("status").to_pylist()
        print(f"synthetic bench: {items.num_rows} items ({bench.manifest['parameters']}) "
              f"in {time.perf_counter() - t0:.1f} s", flush=True)
        config = kernel_config({})
        kernels.colour_delta_e_table()  # warm-up: import colour-science, build the ΔE table
        import scipy.stats  # noqa: F401  (imported lazily by the laterality test)

        score_times, summary_times, cpu_times = [], [], []
        for _ in range(args.repeats):
            clear_caches()
            start, cpu = time.perf_counter(), time.process_time()
            context = load_context(bench)
            table = score_items(items, predictions, context, config)
            score_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            summary = summarize(table, None, {"bootstrap": 0})
            summary_times.append(time.perf_counter() - start)
            cpu_times.append(time.process_time() - cpu)
        fast = min(score_times)
        start, cpu = time.perf_counter(), time.process_time()
        summarize(table, None, {"bootstrap": args.bootstrap})
        boot, boot_cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"vectorised per-item scoring: {fast:.2f} s wall (best of {args.repeats}; all {', '.join(f'{t:.2f}' for t in score_times)})")
        print(f"summary without bootstrap:   {min(summary_times):.2f} s wall")
        print(f"scoring + summary CPU time:  {min(cpu_times):.2f} s (process_time; the wall time includes waiting for a core on a shared machine)")
        print(f"summary with B={args.bootstrap} bootstrap: {boot:.2f} s wall, {boot_cpu:.2f} s CPU")
        print(f"total (scoring + summary, no CIs): {fast + min(summary_times):.2f} s wall")

        step = max(1, round(1 / args.reference_fraction))
        rows = items.to_pylist()
        clear_caches()
        context = load_context(bench)
        start, cpu = time.perf_counter(), time.process_time()
        reference = [reference_item(rows[i], replies[i], statuses[i], context, config)
                     for i in range(0, len(rows), step)]
        ref_time = (time.perf_counter() - start) * step
        ref_cpu = (time.process_time() - cpu) * step
        print(f"plain per-item reference: {ref_time:.1f} s wall, {ref_cpu:.1f} s CPU"
              f"{'' if step == 1 else f' (extrapolated from every {step}th item)'}")
        print(f"speed-up: {ref_time / fast:.1f}x wall (scoring), "
              f"{ref_cpu / min(cpu_times):.1f}x CPU (scoring + summary)")

        got = table.to_pydict()
        worst = 0.0
        mismatches = 0
        for k, i in enumerate(range(0, len(rows), step)):
            s, b, cags, em, status = reference[k]
            diff = max(abs(s - got["s"][i]), abs(b - got["b"][i]), abs(cags - got["cags"][i]))
            worst = max(worst, diff)
            if em != got["em"][i] or status != got["parse_status"][i] or diff > 1e-9:
                mismatches += 1
                if mismatches <= 5:
                    print("MISMATCH", rows[i]["item_id"], replies[i], reference[k],
                          (got["s"][i], got["b"][i], got["cags"][i], got["em"][i], got["parse_status"][i]))
        print(f"agreement: {len(reference) - mismatches}/{len(reference)} items identical; "
              f"max |Δ| of s, b, cags = {worst:.2e}")
        print("pooled:", json.dumps({k: summary["pooled"][k] for k in ("cags", "em", "gs_raw", "severity")}))
        print("format:", json.dumps({k: summary["format"][k] for k in ("parse_rate", "mismatch_rate", "choose_a_rate")}))
        return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
