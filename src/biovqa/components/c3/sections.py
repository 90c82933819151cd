"""The per-task sections of the C3 summary (the paper's Appendix C metrics and the bootstrap of
L.3); each task's spec record (:mod:`.tasks`) names its section, and :func:`.summary.summarize`
runs them.

Summary sections (every estimate ``{value, lo, hi, n}``; bounds from a seeded percentile bootstrap
that resamples source photographs / plates for counting and absolute distance and items for the
other tasks; floors, lifts and margins carry no bounds)::

    table3             cnt, rcnt, adst, rdst, lcl, rpos, view, ocr (each task's Table 3 metric: its spec's ``headline``)
    format             per task: n, n_replies, n_parsed, n_unparsed, n_failed, n_missing, parse_rate
    counting           macro_cas, micro_cas, em, em_micro, tiers{easy|medium|hard: macro_cas},
                       drops{easy_to_medium, medium_to_hard}, subsets{id: cas, em, spearman},
                       corpora{dataset: spearman}, floor{cas, em, modes}, lift, margin
    relative_counting  balanced_accuracy, accuracy, pos_bias, conditions{same|different: …},
                       floor{balanced_accuracy}, lift, margin
    relative_distance  the same, with measures{length|width: …}
    relative_position  accuracy, balanced_accuracy, ang_err, within45, floor{chance, majority8},
                       lift, margin (on balanced accuracy, floor: chance over the 4 options),
                       lift_table45, margin_table45 (on accuracy, floor: the majority direction)
    absolute_distance  acc20, mre, rho_within, rho_within_plate, kappa, acc20_calibrated,
                       types{length|width: acc20, rho, kappa, n}, floor{acc20, constants}, lift, margin
    localization       miou_all, miou_parsed, parse_rate, acc25, acc50, acc75, acc90, convention,
                       conventions{name: mean IoU over parsed}, floor{miou, acc25…acc90, box}, lift, margin
    viewpoint          em, vas, macro_vas, kappa_vas, ang_err, over_share, tiers{…: macro_vas},
                       floor{label, em, vas, macro_vas, kappa_vas}, lift, margin
    ocr                em, char_acc, suffix_char_acc, inflation, prefix,
                       floor{code, em, char_acc, suffix_char_acc}, lift (on EM), lift_suffix
    bootstrap          B, seed, confidence, cluster{task: what was resampled}

Floors are fitted on the rows the model parsed (the paper's Eq. 24: the best image-blind rule);
``lift = (S − φ)/(1 − φ)`` and ``margin = S − φ`` (Tables 44/45 print the margin), where S is the
task's Table 3 metric (the spec's ``headline``) except in the ``_table45`` pair and OCR's
``lift_suffix``. A task without items is absent; its Table 3 column is an estimate with a null
value and n = 0.

Every statistic is computed for a block of replicates at once by the shared bootstrap
(:mod:`biovqa.stats.bootstrap`): a section lists the per-row columns it sums (``SumColumns``:
numerators and denominators, 0 where a row does not count) and a function of their resampled
totals; statistics that are not ratios of sums (Spearman's ρ) read the clusters' counts instead
(``rowwise``). A section takes ``(rows, parsed, boot, clusters, settings)``: the task's rows
(:class:`Rows`), which of them were parsed, the bootstrap named for the task, each row's
bootstrap cluster and what the sections take from the score options (:class:`Settings`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.components.c3 import kernels as F  # the floor fits
from biovqa.components.c3.kernels import char_accuracy, convention_means, iou, ring_steps, view_credit
from biovqa.components.c3.prompts import COUNTING_TIERS, VIEWPOINT_BEARING
from biovqa.scoring.schema import estimate
from biovqa.stats.bootstrap import Bootstrap, SumColumns, nanmean, ratio, weighted_mean
from biovqa.stats.codes import cluster_codes, dense_codes
from biovqa.stats.ranks import RankLayout, grouped_spearman, spearman, weighted_spearman

CHANCE_4 = 0.25


@dataclass(frozen=True, slots=True)
class Settings:
    """What the sections take from the score options: the viewpoint credits for 0–4 ring steps
    and the box conventions the localization scorer searched."""

    weights: tuple[float, ...]
    conventions: tuple[str, ...]


def _lift(s: float, phi: float) -> float:
    return (s - phi) / (1 - phi) if phi is not None and not math.isnan(phi) and phi < 1 else math.nan



class Rows(dict):  # type: ignore[type-arg]
    """One task's rows (``index``, ascending) of the aligned ``tables``, column by column: a column
    is taken and becomes a Python list when first read (the sections read a few of the ~30
    columns); :meth:`floats` and :meth:`objects` give NumPy arrays straight from Arrow. A built
    bench lists each task's items together, so a task's rows are usually one run, read as a
    zero-copy slice instead of a gather."""

    def __init__(self, index: np.ndarray, *tables: pa.Table) -> None:
        super().__init__()
        index = np.asarray(index, dtype=np.int64)
        run = len(index) > 0 and int(index[-1]) - int(index[0]) + 1 == len(index)
        self.run: tuple[int, int] | None = (int(index[0]), len(index)) if run else None
        self.take = pa.array(index)
        self.tables = tables
        self._columns: dict[str, pa.ChunkedArray] = {}

    def column(self, name: str) -> pa.ChunkedArray:
        if name not in self._columns:
            table = next((t for t in self.tables if name in t.column_names), None)
            if table is None:
                raise KeyError(name)
            column = table.column(name)
            self._columns[name] = column.slice(*self.run) if self.run else column.take(self.take)
        return self._columns[name]

    def __missing__(self, name: str) -> list[Any]:
        values = self.column(name).to_pylist()
        self[name] = values
        return values

    def floats(self, name: str) -> np.ndarray:
        """float64, NaN where missing."""
        return np.asarray(self.column(name).cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)

    def objects(self, name: str) -> np.ndarray:
        """An object array (None where missing)."""
        return np.asarray(self.column(name).to_numpy(zero_copy_only=False), dtype=object)


def _plain(value: float, n: int) -> dict[str, Any]:
    return estimate(value, n=n)



def counting_section(rows: Rows, parsed: np.ndarray, boot: Bootstrap, clusters: list[str],
              settings: Settings) -> dict[str, Any]:
    cas, em = rows.floats("cas"), rows.floats("correct")
    gold, pred = rows.floats("gold_number"), rows.floats("pred_number")
    subsets = rows.objects("subset")
    tiers = rows.objects("tier")
    # the subsets in sorted order and each row's subset as its index there (integer masks below)
    unique_subsets, subset_codes = np.unique(subsets.astype(str), return_inverse=True)
    names = unique_subsets.tolist()
    n = len(cas)
    cols = SumColumns(n)
    i_cas, cells = cols.cells(cas, subsets, tiers)
    i_em, _ = cols.cells(em, subsets, tiers)
    i_one, _ = cols.cells(1.0, subsets, tiers)
    at = {c: k for k, c in enumerate(cells)}
    in_subset = [[at[c] for c in cells if c[0] == s] for s in names]

    def stats(T: np.ndarray, _: np.ndarray | None) -> list[np.ndarray]:
        c_cas, c_em, c_one = T[:, i_cas], T[:, i_em], T[:, i_one]
        s_cas = np.column_stack([c_cas[:, m].sum(axis=1) for m in in_subset])
        s_em = np.column_stack([c_em[:, m].sum(axis=1) for m in in_subset])
        s_one = np.column_stack([c_one[:, m].sum(axis=1) for m in in_subset])
        out = [nanmean(ratio(s_cas, s_one)), ratio(s_cas.sum(axis=1), s_one.sum(axis=1)),
               nanmean(ratio(s_em, s_one)), ratio(s_em.sum(axis=1), s_one.sum(axis=1))]
        for t in COUNTING_TIERS:
            m = [at[c] for c in cells if c[1] == t]
            out.append(nanmean(ratio(c_cas[:, m], c_one[:, m])) if m else np.full(len(T), np.nan))
        return out

    est = boot(cols, stats, clusters, n)
    out: dict[str, Any] = {"macro_cas": est[0], "micro_cas": est[1], "em": est[2], "em_micro": est[3]}
    out["tiers"] = {t: {"macro_cas": est[4 + k]} for k, t in enumerate(COUNTING_TIERS)
                    if (tiers == t).any()}
    for k, t in enumerate(COUNTING_TIERS):
        est[4 + k]["n"] = int((tiers == t).sum())
    tv = {t: est[4 + k]["value"] for k, t in enumerate(COUNTING_TIERS)}
    out["drops"] = {"easy_to_medium": _diff(tv["easy"], tv["medium"]), "medium_to_hard": _diff(tv["medium"], tv["hard"])}
    out["subsets"] = {}
    for k, s in enumerate(names):
        m = subset_codes == k
        ok = m & parsed
        out["subsets"][s] = {"n": int(m.sum()), "cas": _plain(cas[m].mean(), int(m.sum())),
                             "em": _plain(em[m].mean(), int(m.sum())),
                             "spearman": _plain(spearman(pred[ok], gold[ok]), int(ok.sum()))}
    datasets = rows.objects("dataset")
    out["corpora"] = {}
    for d in sorted(set(datasets)):
        ok = (datasets == d) & parsed
        out["corpora"][d] = {"spearman": _plain(spearman(pred[ok], gold[ok]), int(ok.sum()))}
    # floor: per-subset modal count fitted on the parsed rows, macro-averaged like the score
    modes = _modal_counts(subset_codes[parsed], gold[parsed], names)
    mode = np.array([modes.get(s, 0) for s in names], dtype=np.float64)[subset_codes]
    with np.errstate(invalid="ignore", divide="ignore"):
        fcas = np.where(parsed, np.maximum(0.0, 1 - np.abs(mode - gold) / gold), np.nan)
    fem = np.where(parsed, (mode == gold).astype(float), np.nan)
    phi = _macro_parsed(np.nan_to_num(fcas), subset_codes, len(names), parsed)
    phi_em = _macro_parsed(np.nan_to_num(fem), subset_codes, len(names), parsed)
    out["floor"] = {"cas": _plain(phi, int(parsed.sum())), "em": _plain(phi_em, int(parsed.sum())),
                    "modes": {s: int(v) for s, v in sorted(modes.items())}}
    _lift_into(out, est[0]["value"], phi, n)
    return out


def _modal_counts(codes: np.ndarray, golds: np.ndarray, names: list[Any]) -> dict[str, int]:
    """:func:`~biovqa.components.c3.kernels.modal_counts` of (subset, int(gold)) pairs, with NumPy
    (``codes``: each row's subset as its index in ``names``): per subset the most frequent gold
    count (ties: the smaller count)."""
    out = {}
    counts = golds.astype(np.int64)  # int(g): truncation, as the pairs had it
    for k, s in enumerate(names):
        values, freq = np.unique(counts[codes == k], return_counts=True)
        if len(values):
            out[s] = int(values[np.argmax(freq)])  # first maximum: the smallest count
    return out


def _macro_parsed(values: np.ndarray, codes: np.ndarray, n_groups: int, parsed: np.ndarray) -> float:
    """Mean over groups (``codes``: each row's group, 0 … ``n_groups`` − 1) of the mean of
    ``values`` on the group's parsed rows."""
    masks = [(codes == g) & parsed for g in range(n_groups)]
    means = [values[m].mean() for m in masks if m.any()]
    return float(np.mean(means)) if means else math.nan


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _lift_into(out: dict[str, Any], s: float | None, phi: float, n: int, suffix: str = "") -> None:
    s = math.nan if s is None else s
    out[f"lift{suffix}"] = _plain(_lift(s, phi), n)
    out[f"margin{suffix}"] = _plain(s - phi if not math.isnan(phi) else math.nan, n)


def choice_section(rows: Rows, parsed: np.ndarray, boot: Bootstrap, clusters: list[str], group: str
            ) -> dict[str, Any]:
    gold = rows.objects("gold")
    correct = rows.floats("correct")
    groups = np.array(rows[group], dtype=object)
    names = sorted(g for g in set(groups) if g is not None)
    n = len(gold)

    cols = SumColumns(n)
    labels = sorted(set(gold))
    group_keys = np.array([g if g is not None else "" for g in groups], dtype=object)
    i_hit, combos = cols.cells(correct, gold, group_keys)
    i_one, _ = cols.cells(1.0, gold, group_keys)

    def stats(T: np.ndarray, _: np.ndarray | None) -> list[np.ndarray]:
        hit, one = T[:, i_hit], T[:, i_one]

        def pick(label: Any, g: Any | None) -> list[int]:
            return [k for k, c in enumerate(combos) if c[0] == label and (g is None or c[1] == g)]

        def balanced(g: Any | None) -> np.ndarray:
            recalls = [ratio(hit[:, pick(lb, g)].sum(axis=1), one[:, pick(lb, g)].sum(axis=1)) for lb in labels]
            return nanmean(np.column_stack(recalls))

        out = [balanced(None), ratio(hit.sum(axis=1), one.sum(axis=1))]
        for g in names:
            m = [k for k, c in enumerate(combos) if c[1] == g]
            out += [balanced(g), ratio(hit[:, m].sum(axis=1), one[:, m].sum(axis=1))]
        return out

    est = boot(cols, stats, clusters, n)
    answers = [p for p, ok in zip(rows["parsed"], parsed) if ok]
    out: dict[str, Any] = {"balanced_accuracy": est[0], "accuracy": est[1],
                           "pos_bias": _plain(Counter(answers).most_common(1)[0][1] / len(answers)
                                              if answers else math.nan, len(answers)),
                           "answer_shares": {k: v / len(answers) for k, v in sorted(Counter(answers).items())}}
    key = "conditions" if group == "condition" else "measures"
    out[key] = {}
    for k, g in enumerate(names):
        e1, e2 = est[2 + 2 * k], est[3 + 2 * k]
        e1["n"] = e2["n"] = int((groups == g).sum())
        out[key][g] = {"balanced_accuracy": e1, "accuracy": e2}
    out["floor"] = {"balanced_accuracy": _plain(CHANCE_4, int(parsed.sum()))}
    _lift_into(out, est[0]["value"], CHANCE_4, n)
    return out


def relative_counting_section(rows: Rows, parsed: np.ndarray, boot: Bootstrap, clusters: list[str],
                       settings: Settings) -> dict[str, Any]:
    return choice_section(rows, parsed, boot, clusters, "condition")


def relative_distance_section(rows: Rows, parsed: np.ndarray, boot: Bootstrap, clusters: list[str],
                       settings: Settings) -> dict[str, Any]:
    return choice_section(rows, parsed, boot, clusters, "measure")


def relative_position_section(rows: Rows, parsed: np.ndarray, boot: Bootstrap, clusters: list[str],
                       settings: Settings) -> dict[str, Any]:
    gold = rows.objects("gold")
    correct = rows.floats("correct")
    ang = rows.floats("ang_err")
    n = len(gold)

    cols = SumColumns(n)
    i_hit, _ = cols.cells(correct, gold)
    i_one, _ = cols.cells(1.0, gold)
    i_ang = cols.add(np.nan_to_num(ang) * parsed)
    i_w45 = cols.add((np.nan_to_num(ang) <= 45.0) * parsed)
    i_parsed = cols.add(parsed.astype(float))

    def stats(T: np.ndarray, _: np.ndarray | None) -> list[np.ndarray]:
        hit, one = T[:, i_hit], T[:, i_one]
        return [ratio(hit.sum(axis=1), one.sum(axis=1)), nanmean(ratio(hit, one)),
                ratio(T[:, i_ang], T[:, i_parsed]), ratio(T[:, i_w45], T[:, i_parsed])]

    est = boot(cols, stats, clusters, n)
    est[2]["n"] = est[3]["n"] = int(parsed.sum())
    out: dict[str, Any] = {"accuracy": est[0], "balanced_accuracy": est[1], "ang_err": est[2], "within45": est[3]}
    shares = Counter(g for g, p in zip(gold, parsed) if p)
    majority8 = max(shares.values()) / sum(shares.values()) if shares else math.nan
    out["floor"] = {"chance": _plain(CHANCE_4, int(parsed.sum())), "majority8": _plain(majority8, int(parsed.sum()))}
    # the lift is taken on the metric Table 3 reports for rpos (balanced accuracy, floor .250);
    # Table 45 prints accuracy less the majority direction's share
    _lift_into(out, est[1]["value"], CHANCE_4, n)
    _lift_into(out, est[0]["value"], majority8, n, "_table45")
    return out


def absolute_distance_section(rows: Rows, parsed: np.ndarray, boot: Bootstrap, clusters: list[str],
                       settings: Settings) -> dict[str, Any]:
    gold, pred = rows.floats("gold_number"), rows.floats("pred_number")
    hit, rel = rows.floats("hit20"), rows.floats("rel_err")
    types = rows.objects("measure")
    names = sorted(set(types))
    plates = rows.objects("cluster")
    n = len(gold)

    cluster_of = cluster_codes(np.asarray(clusters, dtype=object))[0]
    cols = SumColumns(n)
    i_hit, i_one = cols.add(np.nan_to_num(hit)), cols.add(1.0)
    i_rel, i_parsed = cols.add(np.nan_to_num(rel) * parsed), cols.add(parsed.astype(float))
    by_type = []
    for t in names:
        m = parsed & (types == t)
        # moments centred on the full-sample means (stable sums)
        g0 = float(gold[m].mean()) if m.any() else 0.0
        p0 = float(np.nan_to_num(pred[m]).mean()) if m.any() else 0.0
        dg, dp = np.where(m, gold - g0, 0.0), np.where(m, np.nan_to_num(pred) - p0, 0.0)
        rows_t = np.flatnonzero(m)
        by_type.append((rows_t, RankLayout(pred[rows_t], gold[rows_t], cluster_of[rows_t]),
                        [cols.add(m.astype(float)), cols.add(dg), cols.add(dg * dg), cols.add(dp), cols.add(dp * dp)]))

    def stats(T: np.ndarray, W: np.ndarray | None) -> list[np.ndarray]:
        assert W is not None
        b = len(T)
        rho_sum, rho_total, kappas = np.zeros(b), np.zeros(b), []
        W32 = W.astype(np.float32)  # cluster counts, exact
        for rows_t, layout, (c_n, c_g, c_gg, c_p, c_pp) in by_type:
            rho, total = weighted_spearman(pred[rows_t], gold[rows_t], W32, layout)
            ok = ~np.isnan(rho)
            rho_sum += np.where(ok, rho * total, 0.0)
            rho_total += np.where(ok, total, 0.0)
            w_n = T[:, c_n]
            with np.errstate(invalid="ignore", divide="ignore"):
                mean_g, mean_p = T[:, c_g] / w_n, T[:, c_p] / w_n
                var_g = np.maximum(T[:, c_gg] / w_n - mean_g ** 2, 0.0)
                var_p = np.maximum(T[:, c_pp] / w_n - mean_p ** 2, 0.0)
                sd_g = np.where(var_g > 1e-12 * (1 + T[:, c_gg] / w_n), np.sqrt(var_g), 0.0)
                sd_p = np.where(var_p > 1e-12 * (1 + T[:, c_pp] / w_n), np.sqrt(var_p), 0.0)
                kappas.append(np.where((w_n >= 2) & (sd_g > 0), 1 - sd_p / np.where(sd_g > 0, sd_g, 1), np.nan))
        kappa = nanmean(np.column_stack(kappas)) if kappas else np.full(b, np.nan)
        return [ratio(T[:, i_hit], T[:, i_one]), ratio(T[:, i_rel], T[:, i_parsed]),
                ratio(rho_sum, rho_total), kappa]

    est = boot(cols, stats, clusters, n, rowwise=True)
    est[1]["n"] = int(parsed.sum())
    out: dict[str, Any] = {"acc20": est[0], "mre": est[1], "rho_within": est[2], "kappa": est[3]}
    # within-(plate, type) ρ, groups of ≥ 3 parsed items
    cell_codes, _ = dense_codes(np.char.add(np.char.add(plates[parsed].astype(str), "\x00"),
                                            types[parsed].astype(str)).astype(object), sort=False)
    rhos = grouped_spearman(pred[parsed], gold[parsed], np.asarray(cell_codes, dtype=np.int64)).tolist()
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
        calibrated[ok] = np.abs(pred[ok] * factor - gold[ok]) <= F.ACC20 * gold[ok] + F.TOL  # hit@20
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


def localization_section(rows: Rows, parsed: np.ndarray, boot: Bootstrap, clusters: list[str],
                  settings: Settings) -> dict[str, Any]:
    values = rows.floats("iou")
    all_rows = np.nan_to_num(values)
    n = len(values)
    thresholds = (0.25, 0.50, 0.75, 0.90)

    cols = SumColumns(n)
    i_iou, i_one = cols.add(all_rows), cols.add(1.0)
    i_iou_parsed, i_parsed = cols.add(all_rows * parsed), cols.add(parsed.astype(float))
    i_acc = [cols.add((all_rows >= t - 1e-12) * parsed) for t in thresholds]

    def stats(T: np.ndarray, _: np.ndarray | None) -> list[np.ndarray]:
        return [ratio(T[:, i_iou], T[:, i_one]), ratio(T[:, i_iou_parsed], T[:, i_parsed]),
                ratio(T[:, i_parsed], T[:, i_one]), *(ratio(T[:, i], T[:, i_parsed]) for i in i_acc)]

    est = boot(cols, stats, clusters, n)
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
    means = convention_means(boxes, rows, settings.conventions)
    out["conventions"] = {c: (means[c] if boxes else None) for c in settings.conventions}
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
    credit_of = {pair: view_credit(*pair, weights) for pair in set(zip(gold, pred))}  # ≤ 10 × 11 pairs
    credit = np.array([credit_of[pair] for pair in zip(gold, pred)])
    exact = np.array([float(p is not None and p == g) for g, p in zip(gold, pred)])
    total = w.sum()
    if total <= 0:
        return (math.nan,) * 4  # type: ignore[return-value]
    vas = weighted_mean(credit, w)
    macro = [weighted_mean(credit[gold_a == g], w[gold_a == g]) for g in sorted(set(gold))
             if w[gold_a == g].sum() > 0]
    p_gold: dict[str, float] = {}
    p_pred: dict[str | None, float] = {}
    for g, p, wi in zip(gold, pred, w):
        p_gold[g] = p_gold.get(g, 0.0) + wi / total
        p_pred[p] = p_pred.get(p, 0.0) + wi / total
    p_e = sum(pa_ * pb * view_credit(a, b, weights) for a, pa_ in p_gold.items() for b, pb in p_pred.items())
    kappa = (vas - p_e) / (1 - p_e) if p_e < 1 else 0.0
    return weighted_mean(exact, w), vas, float(np.mean(macro)), kappa


def viewpoint_section(rows: Rows, parsed: np.ndarray, boot: Bootstrap, clusters: list[str],
               settings: Settings) -> dict[str, Any]:
    weights = settings.weights
    gold = rows["gold"]
    pred = [p if ok else None for p, ok in zip(rows["parsed"], parsed)]
    tiers = rows.objects("tier")
    names = sorted(t for t in set(tiers) if t is not None)
    ang = rows.floats("ang_err")
    n = len(gold)

    credit, exact = rows.floats("vas"), rows.floats("correct")  # the per-item credit and exact match
    gold_a = np.array(gold, dtype=object)
    pred_a = np.array(["" if p is None else p for p in pred], dtype=object)
    has = ~np.isnan(ang) & parsed
    cols = SumColumns(n)
    i_exact, i_credit, i_one = cols.add(exact), cols.add(credit), cols.add(1.0)
    i_ang, i_has = cols.add(np.nan_to_num(ang) * has), cols.add(has.astype(float))
    gold_labels = sorted(set(gold))
    i_gold_credit, _ = cols.cells(credit, gold_a)
    i_gold_one, _ = cols.cells(1.0, gold_a)
    i_pred_one, pred_labels = cols.cells(1.0, pred_a)
    # chance agreement: credit between every gold label and every predicted label ("" = none)
    chance = np.array([[view_credit(g, p[0] or None, weights) for p in pred_labels] for g in gold_labels])
    tier_keys = np.array([t if t is not None else "" for t in tiers], dtype=object)
    i_tier_credit, tier_cells = cols.cells(credit, tier_keys, gold_a)
    i_tier_one, _ = cols.cells(1.0, tier_keys, gold_a)

    def stats(T: np.ndarray, _: np.ndarray | None) -> list[np.ndarray]:
        total = T[:, i_one]
        vas = ratio(T[:, i_credit], total)
        macro = nanmean(ratio(T[:, i_gold_credit], T[:, i_gold_one]))
        with np.errstate(invalid="ignore", divide="ignore"):
            p_gold = T[:, i_gold_one] / total[:, None]
            p_pred = T[:, i_pred_one] / total[:, None]
        p_e = np.einsum("bg,gp,bp->b", p_gold, chance, p_pred)
        with np.errstate(invalid="ignore", divide="ignore"):
            kappa = np.where(p_e < 1, (vas - p_e) / np.where(p_e < 1, 1 - p_e, 1), 0.0)
        per_tier = []
        for t in names:
            m = [k for k, c in enumerate(tier_cells) if c[0] == t]
            per_tier.append(nanmean(ratio(T[:, i_tier_credit[m]], T[:, i_tier_one[m]])))
        return [ratio(T[:, i_exact], total), vas, macro, np.where(total > 0, kappa, np.nan),
                ratio(T[:, i_ang], T[:, i_has]), *per_tier]

    est = boot(cols, stats, clusters, n)
    out: dict[str, Any] = {"em": est[0], "vas": est[1], "macro_vas": est[2], "kappa_vas": est[3], "ang_err": est[4]}
    est[4]["n"] = int((~np.isnan(ang) & parsed).sum())
    out["tiers"] = {}
    for k, t in enumerate(names):
        est[5 + k]["n"] = int((tiers == t).sum())
        out["tiers"][t] = {"macro_vas": est[5 + k]}
    pairs = Counter((g, p) for g, p in zip(gold, pred) if p is not None)
    over = [k for (g, p), k in pairs.items() if ring_steps(g, p) == 1 and g in VIEWPOINT_BEARING
            and len(g) <= 5 and len(p) > 5]
    out["over_share"] = _plain(sum(over) / max(1, int(parsed.sum())), int(parsed.sum()))
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


def ocr_section(rows: Rows, parsed: np.ndarray, boot: Bootstrap, clusters: list[str],
         settings: Settings) -> dict[str, Any]:
    em, char, suffix = rows.floats("correct"), rows.floats("char_acc"), rows.floats("suffix_char_acc")
    n = len(em)
    prefix = F.common_prefix(rows["gold"])

    cols = SumColumns(n)
    i_em, i_char, i_suffix, i_one = cols.add(em), cols.add(char), cols.add(np.nan_to_num(suffix)), cols.add(1.0)

    def stats(T: np.ndarray, _: np.ndarray | None) -> list[np.ndarray]:
        return [ratio(T[:, i], T[:, i_one]) for i in (i_em, i_char, i_suffix)]

    est = boot(cols, stats, clusters, n)
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



__all__ = ["CHANCE_4", "Rows", "Settings", "absolute_distance_section", "choice_section", "counting_section",
           "localization_section", "ocr_section", "relative_counting_section", "relative_distance_section",
           "relative_position_section", "view_stats", "viewpoint_section"]
