"""Aggregation of per-item C3 scores (metrics.md §4, §6.1).

Summary sections (every estimate ``{value, lo, hi, n}``; bounds from a seeded percentile bootstrap
that resamples source photographs / plates for counting and absolute distance and items for the
other tasks; floors, lifts and margins carry no bounds)::

    table3             cnt, rcnt, adst, rdst, lcl, rpos, view, ocr (results.md §1 metrics)
    format             per task: n, n_replies, n_parsed, n_unparsed, n_failed, n_missing, parse_rate
    counting           macro_cas, micro_cas, em, em_micro, tiers{easy|medium|hard: macro_cas},
                       drops{easy_to_medium, medium_to_hard}, subsets{id: cas, em, spearman},
                       corpora{dataset: spearman}, floor{cas, em, modes}, lift, margin
    relative_counting  balanced_accuracy, accuracy, pos_bias, conditions{same|different: …},
                       floor{balanced_accuracy}, lift, margin
    relative_distance  the same, with measures{length|width: …}
    relative_position  accuracy, balanced_accuracy, ang_err, within45, floor{chance, majority8},
                       lift, margin, lift_table45, margin_table45
    absolute_distance  acc20, mre, rho_within, rho_within_plate, kappa, acc20_calibrated,
                       types{length|width: acc20, rho, kappa, n}, floor{acc20, constants}, lift, margin
    localization       miou_all, miou_parsed, parse_rate, acc25, acc50, acc75, acc90, convention,
                       conventions{name: mean IoU over parsed}, floor{miou, acc25…acc90, box}, lift, margin
    viewpoint          em, vas, macro_vas, kappa_vas, ang_err, over_share, tiers{…: macro_vas},
                       floor{label, em, vas, macro_vas, kappa_vas}, lift, margin
    ocr                em, char_acc, suffix_char_acc, inflation, prefix,
                       floor{code, em, char_acc, suffix_char_acc}, lift (on EM), lift_suffix
    bootstrap          resamples, seed, level, units

Floors are fitted on the rows the model parsed (metrics.md §4.2); ``lift = (S − φ)/(1 − φ)``,
``margin = S − φ`` (Tables 44/45 print the margin). A task without items is absent; its Table 3
column is an estimate with a null value and n = 0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.components.c3 import floors as F
from biovqa.components.c3.score import (CONVENTIONS, char_accuracy, iou, ring_steps, to_xyxy,
                                        vas_weights, view_credit)
from biovqa.components.c3.tasks import COUNTING_TIERS, TABLE3, TASKS, VIEWPOINT_BEARING
from biovqa.scoring.schema import estimate

CLUSTER_TASKS = frozenset({"counting", "absolute_distance"})
CHANCE_4 = 0.25


def _lift(s: float, phi: float) -> float:
    return (s - phi) / (1 - phi) if phi is not None and not math.isnan(phi) and phi < 1 else math.nan


def _wmean(x: np.ndarray, w: np.ndarray) -> float:
    total = w.sum()
    return float((w * x).sum() / total) if total > 0 else math.nan


def _balanced(gold: np.ndarray, correct: np.ndarray, w: np.ndarray) -> float:
    recalls = []
    for label in np.unique(gold):
        m = gold == label
        if w[m].sum() > 0:
            recalls.append(_wmean(correct[m], w[m]))
    return float(np.mean(recalls)) if recalls else math.nan


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman ρ; 0 when either side is constant (metrics.md §4.1), NaN under 2 points."""
    if len(x) < 2:
        return math.nan
    if np.all(x == x[0]) or np.all(y == y[0]):
        return 0.0
    from scipy.stats import rankdata

    rx, ry = rankdata(x), rankdata(y)
    return float(np.corrcoef(rx, ry)[0, 1])


def _repeat(w: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(len(w)), np.round(w).astype(np.int64))


class _Boot:
    def __init__(self, resamples: int, seed: int, level: float) -> None:
        self.B, self.seed, self.level = resamples, seed, level

    def __call__(self, fn: Callable[[np.ndarray], Sequence[float]], clusters: Sequence[str], n: int
                 ) -> list[dict[str, Any]]:
        """Estimates of the statistics ``fn(weights)`` (weights = 1 per row on the full sample)."""
        full = np.asarray(fn(np.ones(len(clusters))), dtype=float)
        lo = hi = np.full(len(full), np.nan)
        if self.B > 0 and len(clusters):
            from biovqa.stats.bootstrap import cluster_codes, percentile_interval, resampled_cluster_counts

            codes, k = cluster_codes(np.asarray(clusters, dtype=object))
            reps = []
            for block in resampled_cluster_counts(k, B=self.B, seed=self.seed):
                for counts in block:
                    reps.append(np.asarray(fn(counts[codes].astype(float)), dtype=float))
            lo, hi = percentile_interval(np.array(reps), self.level)
        return [estimate(v, None if math.isnan(a) else a, None if math.isnan(b) else b, n=n)
                for v, a, b in zip(full, lo, hi)]


def _plain(value: float, n: int) -> dict[str, Any]:
    return estimate(value, n=n)


def _f(values: list[Any]) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def summarize(table: pa.Table, items: pa.Table, options: Mapping[str, Any]) -> dict[str, Any]:
    boot = _Boot(int(options["bootstrap"]), int(options["seed"]), float(options["level"]))
    weights = vas_weights(options.get("vas_weights", "1,0.25,0.1,0,0"))
    data = table.to_pydict()
    extra = items.select(["item_id", "image_width", "image_height", "gold_box", "gold_number"]).to_pydict()
    tasks = data["task"]
    summary: dict[str, Any] = {"format": {}, "bootstrap": {
        "resamples": boot.B, "seed": boot.seed, "level": boot.level,
        "units": {t: ("source photograph / plate" if t in CLUSTER_TASKS else "item") for t in TASKS}}}
    table3 = {column: estimate(math.nan, n=0) for column in TABLE3}
    for task in TASKS:
        idx = [i for i, t in enumerate(tasks) if t == task]
        if not idx:
            continue
        rows = {k: [v[i] for i in idx] for k, v in data.items()}
        rows.update({k: [v[i] for i in idx] for k, v in extra.items()})
        status = rows["parse_status"]
        n = len(idx)
        parsed = np.array([s == "parsed" for s in status])
        summary["format"][task] = {
            "n": n, "n_replies": sum(s in ("parsed", "unparsed") for s in status), "n_parsed": int(parsed.sum()),
            "n_unparsed": status.count("unparsed"), "n_failed": status.count("failed"),
            "n_missing": status.count("missing"),
            "parse_rate": float(parsed.mean())}
        clusters = rows["cluster"] if task in CLUSTER_TASKS else rows["item_id"]
        section = SECTIONS[task](rows, parsed, boot, clusters, weights)
        summary[task] = section
        column = next(c for c, t in TABLE3.items() if t == task)
        table3[column] = section[HEADLINE[task]]
    summary["table3"] = table3
    return summary


def _counting(rows: dict[str, list[Any]], parsed: np.ndarray, boot: _Boot, clusters: list[str],
              weights: tuple[float, ...]) -> dict[str, Any]:
    cas, em = _f(rows["cas"]), _f(rows["correct"])
    gold, pred = _f(rows["gold_number"]), _f(rows["pred_number"])
    subsets = np.array(rows["subset"], dtype=object)
    tiers = np.array(rows["tier"], dtype=object)
    names = sorted(set(subsets))
    n = len(cas)

    def macro(values: np.ndarray, w: np.ndarray, mask: np.ndarray | None = None) -> float:
        means = []
        for s in names:
            m = subsets == s if mask is None else (subsets == s) & mask
            if w[m].sum() > 0:
                means.append(_wmean(values[m], w[m]))
        return float(np.mean(means)) if means else math.nan

    def stats(w: np.ndarray) -> list[float]:
        return [macro(cas, w), _wmean(cas, w), macro(em, w), _wmean(em, w),
                *(macro(cas, w, tiers == t) for t in COUNTING_TIERS)]

    est = boot(stats, clusters, n)
    out: dict[str, Any] = {"macro_cas": est[0], "micro_cas": est[1], "em": est[2], "em_micro": est[3]}
    out["tiers"] = {t: {"macro_cas": est[4 + k]} for k, t in enumerate(COUNTING_TIERS)
                    if (tiers == t).any()}
    for k, t in enumerate(COUNTING_TIERS):
        est[4 + k]["n"] = int((tiers == t).sum())
    tv = {t: est[4 + k]["value"] for k, t in enumerate(COUNTING_TIERS)}
    out["drops"] = {"easy_to_medium": _diff(tv["easy"], tv["medium"]), "medium_to_hard": _diff(tv["medium"], tv["hard"])}
    out["subsets"] = {}
    for s in names:
        m = subsets == s
        ok = m & parsed
        out["subsets"][s] = {"n": int(m.sum()), "cas": _plain(cas[m].mean(), int(m.sum())),
                             "em": _plain(em[m].mean(), int(m.sum())),
                             "spearman": _plain(spearman(pred[ok], gold[ok]), int(ok.sum()))}
    datasets = np.array(rows["dataset"], dtype=object)
    out["corpora"] = {}
    for d in sorted(set(datasets)):
        ok = (datasets == d) & parsed
        out["corpora"][d] = {"spearman": _plain(spearman(pred[ok], gold[ok]), int(ok.sum()))}
    # floor: per-subset modal count fitted on the parsed rows, macro-averaged like the score
    modes = F.modal_counts((s, int(g)) for s, g, p in zip(subsets, gold, parsed) if p)
    fcas = np.array([max(0.0, 1 - abs(modes[s] - g) / g) if p else np.nan for s, g, p in zip(subsets, gold, parsed)])
    fem = np.array([float(modes[s] == g) if p else np.nan for s, g, p in zip(subsets, gold, parsed)])
    ones = np.ones(n)
    phi = macro(np.nan_to_num(fcas), ones * parsed)
    phi_em = macro(np.nan_to_num(fem), ones * parsed)
    out["floor"] = {"cas": _plain(phi, int(parsed.sum())), "em": _plain(phi_em, int(parsed.sum())),
                    "modes": {s: int(v) for s, v in sorted(modes.items())}}
    _lift_into(out, est[0]["value"], phi, n)
    return out


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _lift_into(out: dict[str, Any], s: float | None, phi: float, n: int, suffix: str = "") -> None:
    s = math.nan if s is None else s
    out[f"lift{suffix}"] = _plain(_lift(s, phi), n)
    out[f"margin{suffix}"] = _plain(s - phi if not math.isnan(phi) else math.nan, n)


def _choice(rows: dict[str, list[Any]], parsed: np.ndarray, boot: _Boot, clusters: list[str], group: str
            ) -> dict[str, Any]:
    gold = np.array(rows["gold"], dtype=object)
    correct = _f(rows["correct"])
    groups = np.array(rows[group], dtype=object)
    names = sorted(g for g in set(groups) if g is not None)
    n = len(gold)

    def stats(w: np.ndarray) -> list[float]:
        values = [_balanced(gold, correct, w), _wmean(correct, w)]
        for g in names:
            m = groups == g
            values += [_balanced(gold[m], correct[m], w[m]), _wmean(correct[m], w[m])]
        return values

    est = boot(stats, clusters, n)
    answers = [p for p, ok in zip(rows["parsed"], parsed) if ok]
    out: dict[str, Any] = {"balanced_accuracy": est[0], "accuracy": est[1],
                           "pos_bias": _plain(Counter(answers).most_common(1)[0][1] / len(answers)
                                              if answers else math.nan, len(answers)),
                           "answer_shares": {k: v / len(answers) for k, v in sorted(Counter(answers).items())}}
    key = "conditions" if group == "tier" else "measures"
    out[key] = {}
    for k, g in enumerate(names):
        e1, e2 = est[2 + 2 * k], est[3 + 2 * k]
        e1["n"] = e2["n"] = int((groups == g).sum())
        out[key][g] = {"balanced_accuracy": e1, "accuracy": e2}
    out["floor"] = {"balanced_accuracy": _plain(CHANCE_4, int(parsed.sum()))}
    _lift_into(out, est[0]["value"], CHANCE_4, n)
    return out


def _relative_counting(rows: dict[str, list[Any]], parsed: np.ndarray, boot: _Boot, clusters: list[str],
                       weights: tuple[float, ...]) -> dict[str, Any]:
    return _choice(rows, parsed, boot, clusters, "tier")


def _relative_distance(rows: dict[str, list[Any]], parsed: np.ndarray, boot: _Boot, clusters: list[str],
                       weights: tuple[float, ...]) -> dict[str, Any]:
    return _choice(rows, parsed, boot, clusters, "measure")


def _relative_position(rows: dict[str, list[Any]], parsed: np.ndarray, boot: _Boot, clusters: list[str],
                       weights: tuple[float, ...]) -> dict[str, Any]:
    gold = np.array(rows["gold"], dtype=object)
    correct = _f(rows["correct"])
    ang = _f(rows["ang_err"])
    n = len(gold)

    def stats(w: np.ndarray) -> list[float]:
        wp = w * parsed
        return [_wmean(correct, w), _balanced(gold, correct, w), _wmean(np.nan_to_num(ang), wp),
                _wmean(np.nan_to_num(ang) <= 45.0, wp)]

    est = boot(stats, clusters, n)
    est[2]["n"] = est[3]["n"] = int(parsed.sum())
    out: dict[str, Any] = {"accuracy": est[0], "balanced_accuracy": est[1], "ang_err": est[2], "within45": est[3]}
    shares = Counter(g for g, p in zip(gold, parsed) if p)
    majority8 = max(shares.values()) / sum(shares.values()) if shares else math.nan
    out["floor"] = {"chance": _plain(CHANCE_4, int(parsed.sum())), "majority8": _plain(majority8, int(parsed.sum()))}
    _lift_into(out, est[0]["value"], CHANCE_4, n)
    _lift_into(out, est[0]["value"], majority8, n, "_table45")
    return out


def _absolute_distance(rows: dict[str, list[Any]], parsed: np.ndarray, boot: _Boot, clusters: list[str],
                       weights: tuple[float, ...]) -> dict[str, Any]:
    gold, pred = _f(rows["gold_number"]), _f(rows["pred_number"])
    hit, rel = _f(rows["hit20"]), _f(rows["rel_err"])
    types = np.array(rows["measure"], dtype=object)
    names = sorted(set(types))
    plates = np.array(rows["cluster"], dtype=object)
    n = len(gold)

    def rho_within(w: np.ndarray) -> float:
        total, value = 0.0, 0.0
        for t in names:
            take = _repeat(w * (parsed & (types == t)))
            if len(take) >= 2:
                value += len(take) * spearman(pred[take], gold[take])
                total += len(take)
        return value / total if total else math.nan

    def kappa(w: np.ndarray) -> float:
        values = []
        for t in names:
            m = parsed & (types == t) & (w > 0)
            if m.sum() >= 2:
                sd_y = math.sqrt(np.cov(gold[m], aweights=w[m], bias=True)) if np.ptp(gold[m]) > 0 else 0.0
                sd_p = math.sqrt(np.cov(pred[m], aweights=w[m], bias=True)) if np.ptp(pred[m]) > 0 else 0.0
                if sd_y > 0:
                    values.append(1 - sd_p / sd_y)
        return float(np.mean(values)) if values else math.nan

    def stats(w: np.ndarray) -> list[float]:
        return [_wmean(hit, w), _wmean(np.nan_to_num(rel), w * parsed), rho_within(w), kappa(w)]

    est = boot(stats, clusters, n)
    est[1]["n"] = int(parsed.sum())
    out: dict[str, Any] = {"acc20": est[0], "mre": est[1], "rho_within": est[2], "kappa": est[3]}
    # within-(plate, type) ρ, groups of ≥ 3 parsed items
    rhos = []
    for plate in sorted(set(plates)):
        for t in names:
            m = parsed & (plates == plate) & (types == t)
            if m.sum() >= 3:
                rhos.append(spearman(pred[m], gold[m]))
    out["rho_within_plate"] = _plain(float(np.mean(rhos)) if rhos else math.nan, len(rhos))
    # calibrated acc@20: ŷ' = ŷ · median_t(y / ŷ)
    calibrated = np.zeros(n)
    out["types"] = {}
    constants = {}
    covered = 0
    for t in names:
        m = types == t
        ok = m & parsed & (pred > 0)
        factor = float(np.median(gold[ok] / pred[ok])) if ok.any() else math.nan
        for i in np.flatnonzero(ok):
            calibrated[i] = float(F.hit20(pred[i] * factor, gold[i]))
        c, k = F.best_constant(gold[m & parsed].tolist())
        constants[t] = c
        covered += k
        mp = m & parsed
        out["types"][t] = {"n": int(m.sum()), "acc20": _plain(hit[m].mean(), int(m.sum())),
                           "rho": _plain(spearman(pred[mp], gold[mp]), int(mp.sum())),
                           "calibration_factor": factor}
    out["acc20_calibrated"] = _plain(calibrated.mean(), n)
    phi = covered / parsed.sum() if parsed.sum() else math.nan
    out["floor"] = {"acc20": _plain(phi, int(parsed.sum())), "constants": constants}
    _lift_into(out, est[0]["value"], phi, n)
    return out


def _localization(rows: dict[str, list[Any]], parsed: np.ndarray, boot: _Boot, clusters: list[str],
                  weights: tuple[float, ...]) -> dict[str, Any]:
    values = _f(rows["iou"])
    all_rows = np.nan_to_num(values)
    n = len(values)
    thresholds = (0.25, 0.50, 0.75, 0.90)

    def stats(w: np.ndarray) -> list[float]:
        wp = w * parsed
        return [_wmean(all_rows, w), _wmean(all_rows, wp), _wmean(parsed.astype(float), w),
                *(_wmean(all_rows >= t - 1e-12, wp) for t in thresholds)]

    est = boot(stats, clusters, n)
    for e in est[1:2] + est[3:]:
        e["n"] = int(parsed.sum())
    out: dict[str, Any] = {"miou_all": est[0], "miou_parsed": est[1], "parse_rate": est[2]}
    for t, e in zip(thresholds, est[3:]):
        out[f"acc{int(round(t * 100))}"] = e
    conventions = {c for c in rows["box_convention"] if c}
    out["convention"] = conventions.pop() if conventions else None
    # mean IoU under every convention (what the detection compared)
    boxes = {i: tuple(float(v) for v in rows["parsed"][i].strip("[]").split(","))
             for i in range(n) if parsed[i]}
    out["conventions"] = {c: (float(np.mean([iou(to_xyxy(b, c, rows["image_width"][i], rows["image_height"][i]),
                                                 tuple(rows["gold_box"][i])) for i, b in boxes.items()]))
                              if boxes else None) for c in CONVENTIONS}
    # floor: the mean normalised gold box over the parsed rows
    keep = [i for i in range(n) if parsed[i]]
    mean = F.mean_normalised_box((rows["gold_box"][i], rows["image_width"][i], rows["image_height"][i]) for i in keep)
    fl = np.array([iou((mean[0] * rows["image_width"][i], mean[1] * rows["image_height"][i],
                        mean[2] * rows["image_width"][i], mean[3] * rows["image_height"][i]),
                       tuple(rows["gold_box"][i])) for i in keep])
    phi = float(fl.mean()) if len(fl) else math.nan
    out["floor"] = {"miou": _plain(phi, len(keep)), "box": list(mean),
                    **{f"acc{int(round(t * 100))}": _plain(float((fl >= t - 1e-12).mean()) if len(fl) else math.nan,
                                                          len(keep)) for t in thresholds}}
    _lift_into(out, est[0]["value"], phi, n)
    return out


def view_stats(gold: Sequence[str], pred: Sequence[str | None], w: np.ndarray, weights: tuple[float, ...]
               ) -> tuple[float, float, float, float]:
    """(EM, VAS, macroVAS, κ_VAS) with row weights ``w``; unparsed (None) is a "none" prediction."""
    gold_a = np.array(gold, dtype=object)
    credit = np.array([view_credit(g, p, weights) for g, p in zip(gold, pred)])
    exact = np.array([float(p is not None and p == g) for g, p in zip(gold, pred)])
    total = w.sum()
    if total <= 0:
        return (math.nan,) * 4  # type: ignore[return-value]
    vas = _wmean(credit, w)
    macro = [_wmean(credit[gold_a == g], w[gold_a == g]) for g in sorted(set(gold))
             if w[gold_a == g].sum() > 0]
    p_gold: dict[str, float] = {}
    p_pred: dict[str | None, float] = {}
    for g, p, wi in zip(gold, pred, w):
        p_gold[g] = p_gold.get(g, 0.0) + wi / total
        p_pred[p] = p_pred.get(p, 0.0) + wi / total
    p_e = sum(pa_ * pb * view_credit(a, b, weights) for a, pa_ in p_gold.items() for b, pb in p_pred.items())
    kappa = (vas - p_e) / (1 - p_e) if p_e < 1 else 0.0
    return _wmean(exact, w), vas, float(np.mean(macro)), kappa


def _viewpoint(rows: dict[str, list[Any]], parsed: np.ndarray, boot: _Boot, clusters: list[str],
               weights: tuple[float, ...]) -> dict[str, Any]:
    gold = rows["gold"]
    pred = [p if ok else None for p, ok in zip(rows["parsed"], parsed)]
    tiers = np.array(rows["tier"], dtype=object)
    names = sorted(t for t in set(tiers) if t is not None)
    ang = _f(rows["ang_err"])
    n = len(gold)

    def stats(w: np.ndarray) -> list[float]:
        em, vas, macro, kappa = view_stats(gold, pred, w, weights)
        has = ~np.isnan(ang) & parsed
        per_tier = []
        for t in names:
            m = tiers == t
            per_tier.append(view_stats([g for g, k in zip(gold, m) if k], [p for p, k in zip(pred, m) if k],
                                       w[m], weights)[2])
        return [em, vas, macro, kappa, _wmean(np.nan_to_num(ang), w * has), *per_tier]

    est = boot(stats, clusters, n)
    out: dict[str, Any] = {"em": est[0], "vas": est[1], "macro_vas": est[2], "kappa_vas": est[3], "ang_err": est[4]}
    est[4]["n"] = int((~np.isnan(ang) & parsed).sum())
    out["tiers"] = {}
    for k, t in enumerate(names):
        est[5 + k]["n"] = int((tiers == t).sum())
        out["tiers"][t] = {"macro_vas": est[5 + k]}
    over = [1 for g, p in zip(gold, pred) if p is not None and ring_steps(g, p) == 1 and g in VIEWPOINT_BEARING
            and len(g) <= 5 and len(p) > 5]
    out["over_share"] = _plain(len(over) / max(1, int(parsed.sum())), int(parsed.sum()))
    steps = Counter(s for s, ok in zip(rows["steps"], parsed) if ok and s is not None)
    out["steps"] = {str(k): v for k, v in sorted(steps.items())}
    keep = [i for i in range(n) if parsed[i]]
    label = F.majority(gold[i] for i in keep)
    fem, fvas, fmacro, fkappa = view_stats([gold[i] for i in keep], [label] * len(keep), np.ones(len(keep)), weights) \
        if keep else (math.nan,) * 4
    out["floor"] = {"label": label, "em": _plain(fem, len(keep)), "vas": _plain(fvas, len(keep)),
                    "macro_vas": _plain(fmacro, len(keep)), "kappa_vas": _plain(fkappa, len(keep))}
    _lift_into(out, est[2]["value"], fmacro, n)
    return out


def _ocr(rows: dict[str, list[Any]], parsed: np.ndarray, boot: _Boot, clusters: list[str],
         weights: tuple[float, ...]) -> dict[str, Any]:
    em, char, suffix = _f(rows["correct"]), _f(rows["char_acc"]), _f(rows["suffix_char_acc"])
    n = len(em)
    prefix = F.common_prefix(rows["gold"])

    def stats(w: np.ndarray) -> list[float]:
        return [_wmean(em, w), _wmean(char, w), _wmean(np.nan_to_num(suffix), w)]

    est = boot(stats, clusters, n)
    out: dict[str, Any] = {"em": est[0], "char_acc": est[1], "suffix_char_acc": est[2], "prefix": prefix}
    out["inflation"] = _plain(_diff(est[1]["value"], est[2]["value"]) or 0.0, n)
    keep = [g for g, ok in zip(rows["gold"], parsed) if ok]
    code = F.constant_code(keep)
    fl = [(float(code == g), char_accuracy(g, code), char_accuracy(g, code, len(prefix))) for g in keep]
    arr = np.array(fl) if fl else np.full((1, 3), np.nan)
    out["floor"] = {"code": code, "em": _plain(float(arr[:, 0].mean()), len(keep)),
                    "char_acc": _plain(float(arr[:, 1].mean()), len(keep)),
                    "suffix_char_acc": _plain(float(np.nanmean(arr[:, 2])) if len(prefix) < 12 else math.nan, len(keep))}
    _lift_into(out, est[0]["value"], out["floor"]["em"]["value"] or 0.0, n)
    _lift_into(out, est[2]["value"], out["floor"]["suffix_char_acc"]["value"] or math.nan, n, "_suffix")
    return out


SECTIONS: dict[str, Callable[..., dict[str, Any]]] = {
    "counting": _counting, "relative_counting": _relative_counting, "absolute_distance": _absolute_distance,
    "relative_distance": _relative_distance, "localization": _localization,
    "relative_position": _relative_position, "viewpoint": _viewpoint, "ocr": _ocr,
}
#: the Table 3 metric of each task (results.md §1)
HEADLINE: dict[str, str] = {
    "counting": "macro_cas", "relative_counting": "balanced_accuracy", "absolute_distance": "acc20",
    "relative_distance": "balanced_accuracy", "localization": "miou_all", "relative_position": "balanced_accuracy",
    "viewpoint": "macro_vas", "ocr": "em",
}

__all__ = ["HEADLINE", "spearman", "summarize", "view_stats"]
