"""The report's glossary: every column and metric a report can show, spelled out, in one plain
sentence, with its formula, its unit and where the paper defines it.

The paper is "How Finely Can Vision–Language Models See Biology? Bio-VQA: A Benchmark for
Taxonomic, Morphological, Spatial and Individual Reasoning" (Rayeed, Ma, Stewart, Ma;
arXiv:2611.05559), cited once on the page (:data:`PAPER`); sections and equations below are that
paper's ("C.1" is Supplement C.1). The hierarchical 4-way VQA metrics come from "Vision LLMs Are Bad
at Hierarchical Visual Understanding, and LLMs Are the Bottleneck" (arXiv:2505.24840), the BAGEL
columns from "BAGEL: Benchmarking Animal Knowledge Expertise in Language Models" (arXiv:2604.16241).

:func:`explain` finds the entry of any column a report table prints: an exact term, a bound of
one (``phy_lo``), a numbered family (``acc50``, ``EM_3vlm``, ``steps_2``, ``emits_B``), or a column
named by a value of the table's own rows (an organismal group, a tier, a family, a model).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: the paper, cited once on the report page
PAPER = ("How Finely Can Vision–Language Models See Biology? Bio-VQA: A Benchmark for Taxonomic, "
         "Morphological, Spatial and Individual Reasoning")
ARXIV = "arXiv:2611.05559"
HCA_PAPER = "Vision LLMs Are Bad at Hierarchical Visual Understanding, and LLMs Are the Bottleneck (arXiv:2505.24840)"
BAGEL_PAPER = "BAGEL: Benchmarking Animal Knowledge Expertise in Language Models (arXiv:2604.16241)"

FRACTION = "fraction in [0, 1], 3 decimals"
COUNT = "count (integer)"
RANK = "rank (integer, 1 = best)"


@dataclass(frozen=True)
class Term:
    """One glossary entry."""

    name: str
    spelled: str
    plain: str
    formula: str
    section: str
    unit: str = FRACTION


def _t(name: str, spelled: str, plain: str, formula: str, section: str, unit: str = FRACTION) -> Term:
    return Term(name, spelled, plain, formula, section, unit)


_TERMS: tuple[Term, ...] = (
    # ---- scores shared by components
    _t("EM", "exact match", "Share of replies that equal the gold after normalisation.",
       "mean of 1[norm(ŷ) = norm(y)]", "§4.2, C.1, Eq. 5"),
    _t("EM_soft", "soft exact match", "Exact match that also credits an accepted synonym of the gold name.",
       "mean of 1[norm(ŷ) ∈ syn(y)]", "C.2, Eqs. 6–7"),
    _t("accuracy", "accuracy", "Share of items answered correctly.", "correct / answered items", "§4.2"),
    _t("acc", "accuracy", "Share of items answered correctly (C4: same/different-individual verdicts).",
       "correct / items", "§4.2, C.7"),
    _t("balanced accuracy", "balanced accuracy", "Accuracy averaged over gold classes, so a constant answer scores chance.",
       "mean over gold classes of the class recall", "C.6"),
    _t("balAcc", "balanced accuracy", "Accuracy averaged over gold classes.", "mean over classes of recall", "C.6, G.6"),
    _t("balanced_acc", "balanced accuracy", "Accuracy averaged over gold classes.", "mean over classes of recall", "C.6"),
    _t("severity", "mistake severity", "How many taxonomic ranks a wrong, resolved answer lies from the gold; lower is better.",
       "mean over wrong resolved replies of d(y) − d(LCA(ŷ, y))", "C.3, Eqs. 8, 27", "taxonomic ranks (≥ 0)"),
    _t("wup", "Wu–Palmer similarity", "How deep the answer and the gold share their ancestry in the taxonomy.",
       "2·d(LCA) / (d(ŷ) + d(y))", "C.3, Eq. 9"),
    _t("lin", "Lin similarity", "Like Wu–Palmer, but weighting the shared ancestor by how specific (rare) it is.",
       "2·IC(LCA) / (IC(ŷ) + IC(y)), IC(c) = −log(|subtree(c)| / N)", "C.3, Eq. 10"),
    _t("unresolved", "unresolved share", "Share of replies that name no taxon of the benchmark tree.",
       "unresolved replies / replies", "C.3"),
    _t("unres", "unresolved share", "Share of replies that name no taxon of the benchmark tree.",
       "unresolved replies / replies", "C.3"),
    _t("revision_lag", "taxonomic revision lag", "Credit a model gets only for an outdated or synonymous name.",
       "EM_soft − EM", "D.7", "difference of fractions in [−1, 1]"),
    _t("gap", "gap", "Difference between the two scores the table compares (its title says which).",
       "a − b, as the table's title states", "D.3, D.7, F.6", "difference of fractions in [−1, 1]"),
    _t("ratio", "ratio", "How many times larger one score is than the other.", "a / b", "D.3", "ratio (×)"),
    _t("fall", "fall", "How many times EM drops from phylum to species epithet.", "EM(phylum) / EM(species)", "D.1",
       "ratio (×)"),
    _t("step", "step", "Change of the mean EM from the rank above.", "EM(rank) − EM(rank above)", "D.1",
       "difference of fractions"),
    _t("open_ended", "recall (open common name)", "EM when the model must produce the common name itself.",
       "EM over open common-name items", "D.3"),
    _t("mcq4", "recognition (4-way MCQ)", "EM when the common name is chosen from four options.",
       "EM over 4-way common-name items", "D.3"),
    _t("hca_scaled", "leaf-scaled HCA", "Hierarchical consistency relative to leaf accuracy.", "HCA / Acc_leaf", "D.9",
       "ratio"),
    _t("rho_with_EM", "Spearman ρ with EM", "Rank correlation, over models, of this metric with EM.",
       "Spearman ρ", "D.6", "correlation in [−1, 1]"),
    _t("EM_rank", "EM rank", "The model's place when sorted by EM.", "rank of EM, 1 = highest", "D.6, G.3", RANK),
    _t("sev_rank", "severity rank", "The model's place when sorted by severity.", "rank, 1 = lowest severity", "D.6", RANK),
    _t("kappa_rank", "κ_VAS rank", "The model's place when sorted by κ_VAS.", "rank, 1 = highest", "G.3", RANK),
    _t("shift", "rank shift", "How far a model moves between the two rankings.", "rank(a) − rank(b)", "D.6, G.3",
       "ranks (integer)"),
    _t("rank", "rank", "Place in the table's ordering (generalist models only).", "1 = best", "§5", RANK),
    _t("params_B", "parameters", "Model size.", "billions of parameters", "D.4", "billions"),
    _t("Img", "images", "Number of distinct images behind the row.", "count", "D.2", COUNT),
    _t("Ques", "questions", "Number of questions behind the row.", "count", "D.2", COUNT),
    _t("n", "sample size", "Number of items (or images) behind the estimate.", "count", "§4.2", COUNT),
    _t("items", "items", "Number of benchmark items.", "count", "§3", COUNT),
    _t("models", "models", "Number of models behind the row.", "count", "§5", COUNT),
    _t("missing", "missing replies", "Items with no reply in the predictions (scored as wrong).", "count", "B.2", COUNT),
    _t("failed", "failed requests", "Items whose request finally failed (scored as wrong).", "count", "B.2", COUNT),
    _t("replies truncated for parsing", "truncated replies",
       "Replies longer than the parser's 4,096-character cap; only their opening was parsed.", "count", "B.3", COUNT),
    _t("lo", "lower 95% bound", "Lower end of the percentile bootstrap interval: 95% unless scored with another "
       "confidence (the summary's bootstrap.confidence).", "2.5th percentile of B resamples",
       "§4.2", "as its estimate"),
    _t("hi", "upper 95% bound", "Upper end of the 95% percentile bootstrap interval.", "97.5th percentile of B resamples",
       "§4.2", "as its estimate"),
    _t("value", "estimate", "The full-sample value of the metric.", "metric on all items", "§4.2", "as its metric"),
    _t("difference", "paired difference", "Mean per-item score of model a minus model b on the items both answered.",
       "mean(s_a − s_b), 95% paired bootstrap", "§5", "difference of fractions in [−1, 1]"),
    _t("verdict", "verdict", "Whether the paired interval excludes 0 (a real lead) or covers it (a tie).",
       "tie if lo ≤ 0 ≤ hi", "§5", "text"),
    # ---- C2
    _t("cags", "chance-adjusted graded score", "Graded similarity of the reply to the gold, with chance at 0 and a perfect "
       "reply at 1; below 0 means worse than guessing among the item's options.",
       "(s − b) / (1 − b), s kernel similarity, b mean similarity of the distractors", "§4.2, C.4, Eqs. 2, 11, 12",
       "chance-corrected score, ≤ 1, may be negative"),
    _t("GS_raw", "raw graded similarity", "The kernel similarity of reply and gold before chance correction.",
       "s(ŷ, y)", "C.4, C.5"),
    _t("parse_rate", "parse rate", "Share of replies the parser could read an answer from.", "parsed / replies", "B.3, F.2"),
    _t("parse", "parse rate", "Share of replies the parser could read a box from.", "parsed / replies", "B.3, G.5"),
    _t("parse_failure_rate", "parse failure rate", "Share of replies with no readable option letter.",
       "unparsed / replies", "B.3"),
    _t("mismatch_rate", "letter–text mismatch rate", "Share of MCQ replies whose letter and option text disagree.",
       "mismatching / MCQ replies", "F.2"),
    _t("choose_A_rate", "choose-A rate", "Share of MCQ replies that pick option A (a position bias).", "A / MCQ replies",
       "F.2"),
    _t("acc_all", "EM, all items", "Exact match over every item.", "EM", "F.2"),
    _t("acc_mcq", "EM, MCQ items", "Exact match over the multiple-choice items.", "EM", "F.2"),
    _t("acc_open", "EM, open items", "Exact match over the open-ended items.", "EM", "F.2"),
    # ---- C3
    _t("cas", "count agreement score", "Credit for a count that falls off linearly with the relative error.",
       "max(0, 1 − |n̂ − n| / n)", "C.6, Eq. 23"),
    _t("macro cas", "macro count agreement score", "Count agreement averaged over the counting subsets.",
       "mean over subsets of mean cas", "C.6, Eq. 23"),
    _t("acc@20", "accuracy within 20%", "Share of distance answers within 20% of the true distance.",
       "mean of 1[|d̂ − d| ≤ 0.2·d]", "C.6"),
    _t("acc20", "accuracy within 20%", "Share of distance answers within 20% of the true distance.",
       "mean of 1[|d̂ − d| ≤ 0.2·d]", "C.6, G.4"),
    _t("acc20_calibrated", "accuracy within 20%, calibrated", "acc@20 after rescaling the model's answers by one "
       "factor per measurement type (does it measure, if not calibrate?).", "acc@20 of k·d̂, k fitted per type", "G.4"),
    _t("floor_acc20", "floor acc@20", "acc@20 of the image-blind per-type constant.", "acc@20 of the floor", "G.4"),
    _t("mre", "mean relative error", "Average size of a distance answer's error relative to the truth.",
       "mean |d̂ − d| / d", "G.4", "relative error (≥ 0, may exceed 1)"),
    _t("rho_within", "Spearman ρ within measurement type", "Whether the model orders distances correctly within one "
       "kind of measurement, whatever its scale.", "mean over types of Spearman(d̂, d)", "G.4", "correlation in [−1, 1]"),
    _t("kappa", "Cohen's κ", "Agreement beyond chance between the model's answers and the gold.",
       "(p_o − p_e) / (1 − p_e)", "C.6, C.7", "chance-corrected, ≤ 1, may be negative"),
    _t("cohen_kappa", "Cohen's κ", "Agreement of the same/different verdicts with the truth beyond chance.",
       "(p_o − p_e) / (1 − p_e)", "C.7", "chance-corrected, ≤ 1, may be negative"),
    _t("MCC", "Matthews correlation coefficient", "Correlation between verdicts and truth, balanced over both classes.",
       "(TP·TN − FP·FN) / √((TP+FP)(TP+FN)(TN+FP)(TN+FN))", "C.7", "correlation in [−1, 1]"),
    _t("meanIoU_all", "mean intersection over union, all items", "Average overlap of the predicted and gold box, "
       "unparsed replies counting 0.", "mean IoU(b̂, b), unparsed = 0", "C.6"),
    _t("IoU_all", "mean intersection over union, all items", "Average box overlap, unparsed replies counting 0.",
       "mean IoU(b̂, b), unparsed = 0", "C.6, G.5"),
    _t("acc@t", "accuracy at IoU t", "Share of boxes overlapping the gold by at least t%.", "mean of 1[IoU ≥ t/100]",
       "G.5"),
    _t("convention", "box convention", "How the model's box numbers were read (pixels, 0–1, 0–1000).", "—", "G.5", "text"),
    _t("macroVAS", "macro viewpoint agreement score", "Viewpoint credit averaged over gold viewpoints, so the majority "
       "view does not dominate.", "mean over gold views of mean ring-step credit (1, .25, .10, 0, 0)", "C.6"),
    _t("VAS", "viewpoint agreement score", "Credit for a viewpoint that falls with the number of 45° steps to the gold.",
       "mean ring-step credit (1, .25, .10, 0, 0)", "C.6, G.3"),
    _t("kappa_VAS", "κ_VAS, chance-corrected viewpoint agreement", "VAS corrected against a model that always gives "
       "the same answer; 0 for any constant answer.", "(VAS − P_e) / (1 − P_e)", "G.3",
       "chance-corrected, ≤ 1, may be negative"),
    _t("steps", "viewpoint steps", "Share of viewpoint answers k 45° ring steps from the gold.", "answers at k steps / answers",
       "G.3"),
    _t("ang_err_deg", "angular error", "Mean angle between the answered and the gold direction.", "mean |θ̂ − θ|",
       "G.3", "degrees"),
    _t("angErr_deg", "angular error", "Mean angle between the answered and the gold direction.", "mean |θ̂ − θ|", "G.7",
       "degrees"),
    _t("over_share", "over-rotation share", "Share of wrong viewpoints that overshoot the gold.", "overshooting / wrong",
       "G.3"),
    _t("within45", "within 45°", "Share of direction answers within 45° of the gold.", "mean of 1[|θ̂ − θ| ≤ 45°]", "G.7"),
    _t("lift", "lift over the floor", "How much of the gap between the image-blind floor and a perfect score the model "
       "covers (Tables 44–45 print it as score minus floor).", "(S − φ) / (1 − φ); printed S − φ", "C.6, Eq. 24",
       "difference of fractions in [−1, 1]"),
    _t("margin", "margin over chance", "Score minus what chance or the floor reaches.", "S − φ", "C.6, G.6",
       "difference of fractions in [−1, 1]"),
    _t("random_margin", "similarity margin, random pairing", "Mean embedding similarity of same-individual pairs minus "
       "different-individual pairs.", "mean cos(same) − mean cos(different)", "A.4", "difference of cosines in [−2, 2]"),
    _t("posBias", "position bias", "Share of answers naming the first-shown panel.", "first-panel answers / answers",
       "G.6"),
    _t("charAcc", "character accuracy", "Share of characters read correctly.", "1 − edit distance / length", "G.8"),
    _t("suffixCharAcc", "suffix character accuracy", "Character accuracy on the part of the label after the shared prefix.",
       "charAcc on the suffix", "G.8"),
    _t("inflation", "prefix inflation", "How much the shared label prefix inflates character accuracy.",
       "charAcc − suffixCharAcc", "G.8", "difference of fractions"),
    _t("easy_to_medium", "drop easy → medium", "Loss of macro cas from the easy to the medium tier.", "cas(easy) − cas(medium)",
       "G.2", "difference of fractions"),
    _t("medium_to_hard", "drop medium → hard", "Loss of macro cas from the medium to the hard tier.",
       "cas(medium) − cas(hard)", "G.2", "difference of fractions"),
    _t("easy_minus_hard", "easy minus hard", "Score on the easy condition minus the hard one.", "S(easy) − S(hard)",
       "§5.4", "difference"),
    _t("diagnosis", "diagnosis", "Whether the model orders distances (ρ_within ≥ .5) and beats the floor's acc@20.",
       "—", "G.4", "text"),
    _t("best_model", "best model", "The model (never a floor) with the highest score on the task's headline metric.",
       "argmax over models", "G.1", "text"),
    _t("floor", "image-blind floor", "The score an image-blind rule reaches (the most frequent answer, a constant…).",
       "score of the floor rule", "§5", "as its metric"),
    _t("floor_rule", "floor rule", "Which image-blind rule gives the floor.", "—", "G.1", "text"),
    _t("score", "score", "The task's headline metric value.", "as the metric column says", "G.1", "as its metric"),
    _t("metric", "metric", "Which metric the row reports.", "—", "G.1", "text"),
    # ---- C4
    _t("d′", "discriminability d′", "How well the model tells same from different individuals, independent of its "
       "bias to say yes.", "z(H) − z(F), H and F log-linear corrected hit and false-alarm rates", "C.7, Eqs. 4, 26",
       "standard-deviation units (0 = chance)"),
    _t("dprime", "discriminability d′", "How well the model tells same from different individuals.",
       "z(H) − z(F)", "C.7, Eq. 26", "standard-deviation units (0 = chance)"),
    _t("c", "response bias c", "The model's lean towards answering “same”; negative = bias toward yes.",
       "−½·(z(H) + z(F))", "C.7, Eq. 26", "standard-deviation units"),
    _t("AUC", "area under the ROC curve", "Chance that a same-individual pair is more similar than a different one.",
       "P(cos(same) > cos(different))", "A.4"),
    # ---- hierarchical 4-way VQA (HCA paper)
    _t("HCA", "hierarchical consistent accuracy", "Share of images where every taxonomic level is answered correctly.",
       "(1/N) Σ_i Π_j c_ij", f"{HCA_PAPER}, §3"),
    _t("Acc_leaf", "leaf accuracy", "Share of images whose finest level (species) is answered correctly.",
       "(1/N) Σ_i c_i,L", f"{HCA_PAPER}, §3"),
    _t("POR", "point-overlap ratio", "Average share of levels answered correctly per image.",
       "(1/N) Σ_i (1/L_i) Σ_j c_ij", f"{HCA_PAPER}, §3"),
    _t("S-POR", "strict point-overlap ratio", "Average length of the longest run of correct consecutive levels, as a "
       "share of the path.", "(1/N) Σ_i (1/L_i)·max run of consecutive correct levels", f"{HCA_PAPER}, §3"),
    _t("S-POR (prefix)", "strict POR, prefix", "Like S-POR but the run must start at the root (the reference code's form).",
       "(1/N) Σ_i (1/L_i)·correct levels before the first error", f"{HCA_PAPER}, reference code"),
    _t("TOR", "top-overlap ratio", "Share of adjacent level pairs both answered correctly.",
       "(1/N) Σ_i (1/(L_i−1)) Σ_j c_ij·c_i,j+1", f"{HCA_PAPER}, §3"),
    _t("text HCA", "text-only HCA", "HCA of the text-only control, where the image is replaced by its leaf label.",
       "HCA on the text control", f"{HCA_PAPER}, §7"),
    _t("visual HCA", "visual HCA", "HCA on the image questions.", "HCA", f"{HCA_PAPER}, §3"),
    _t("scaled HCA", "leaf-scaled visual HCA", "Visual HCA relative to leaf accuracy, comparable with the text HCA.",
       "HCA / Acc_leaf", f"{HCA_PAPER}, §7"),
    _t("HCA without genus", "text HCA without the genus level", "Text HCA with the genus level removed where the "
       "entity's name gives the genus away.", "HCA over kept levels", f"{HCA_PAPER}, §7"),
    _t("pearson_r", "Pearson's r", "Linear correlation, across models, of text HCA and scaled visual HCA.", "Pearson r",
       f"{HCA_PAPER}, §7", "correlation in [−1, 1]"),
    # ---- BAGEL
    _t("Overall", "overall accuracy", "Accuracy over every BAGEL question.", "correct / questions", f"{BAGEL_PAPER}, Table 4"),
    _t("share", "share", "Share of the gold answers at this option position.", "golds at position / golds",
       f"{BAGEL_PAPER}, §3", FRACTION),
    _t("emits", "emitted letter share", "Share of replies choosing this option letter.", "replies with letter / replies",
       f"{BAGEL_PAPER}, §4"),
    # ---- cross-component analysis
    _t("rho", "Spearman ρ", "Rank correlation over the generalist models.", "Spearman ρ (average ranks)", "§5.5, J",
       "correlation in [−1, 1]"),
    _t("alpha", "standardized Cronbach α", "Internal consistency of a component's tasks.", "k·r̄ / (1 + (k − 1)·r̄)", "J",
       "≤ 1"),
    _t("p", "p-value", "Probability of a result at least this extreme by chance.", "t approximation / permutation", "J",
       "probability"),
    _t("p_holm", "Holm-adjusted p-value", "p-value corrected for testing several pairs at once (Holm step-down).",
       "running max of (m − i)·p_(i)", "J", "probability"),
    _t("internal_rho", "internal agreement", "Mean Spearman ρ between the tasks of one component.",
       "mean of task-pair ρ within the component", "J", "correlation in [−1, 1]"),
    _t("alpha_std", "standardized Cronbach α (from ρ)", "Internal consistency of a component's tasks from their mean ρ.",
       "k·r̄ / (1 + (k − 1)·r̄)", "J", "≤ 1"),
    _t("alpha_std_pearson", "standardized Cronbach α (from r)", "The same α from the mean Pearson correlation.",
       "k·r̄ / (1 + (k − 1)·r̄)", "J", "≤ 1"),
    _t("pc1_loading", "PC1 loading", "How strongly a task weighs on the first principal component of the model × task "
       "matrix.", "first eigenvector of the correlation matrix", "J", "loading in [−1, 1]"),
    _t("tasks", "tasks", "Number of tasks.", "count", "J", COUNT),
    _t("models_with_value", "models with a value", "Generalist score folders holding the task.", "count", "J", COUNT),
    _t("spearman_rho", "Spearman ρ", "Rank agreement of the full and the Lite benchmark over the models.",
       "Spearman ρ", "§3", "correlation in [−1, 1]"),
    _t("P(best)", "probability of being best", "Share of bootstrap replicates in which the model ranks first.",
       "#{replicates ranking it first} / B", "§5"),
    _t("pooled", "pooled", "The table's metric over all items of every question type together.",
       "item-weighted mean over types", "D.1", "as the table's metric"),
    _t("mean", "mean", "Average over the rows above (models only, never a floor).", "arithmetic mean", "§5", "as its metric"),
    _t("sd", "standard deviation", "Spread over the rows above.", "sample SD (ddof = 1)", "G.2", "as its metric"),
    _t("min", "minimum", "Lowest value over the models.", "min", "F.5", "as its metric"),
    _t("max", "maximum", "Highest value over the models.", "max", "F.5", "as its metric"),
)

TERMS: dict[str, Term] = {term.name: term for term in _TERMS}

#: Table 3 column → (task spelled out, metric term)
COLUMNS: dict[str, tuple[str, str]] = {
    "phy": ("C1 phylum", "EM"), "cls": ("C1 class", "EM"), "ord": ("C1 order", "EM"),
    "fam": ("C1 family", "EM"), "gen": ("C1 genus", "EM"), "spc": ("C1 species epithet", "EM"),
    "sci": ("C1 scientific name", "EM"), "com": ("C1 open common name", "EM"),
    "sal": ("C2 relative salience", "cags"), "mrp": ("C2 morphological attributes", "cags"),
    "loc": ("C2 anatomical localization", "cags"), "nam": ("C2 naming", "cags"),
    "cnt": ("C3 counting", "macro cas"), "rcnt": ("C3 relative counting", "balanced accuracy"),
    "adst": ("C3 absolute distance", "acc@20"), "rdst": ("C3 relative distance", "balanced accuracy"),
    "lcl": ("C3 localization", "meanIoU_all"), "rpos": ("C3 relative position", "balanced accuracy"),
    "view": ("C3 viewpoint", "macroVAS"), "ocr": ("C3 OCR (negative control)", "EM"),
    "dprime": ("C4 re-identification, random pairing", "d′"),
    "acc": ("C4 re-identification, random pairing", "accuracy"),
    "bagel": ("BAGEL, all domains", "accuracy"), "globi": ("BAGEL GloBI interactions", "accuracy"),
    "wiki": ("BAGEL Wikipedia", "accuracy"), "biorxiv": ("BAGEL bioRxiv", "accuracy"),
    "xeno": ("BAGEL xeno-canto", "accuracy"),
    "hca": ("hierarchical 4-way VQA", "HCA"), "leaf": ("hierarchical 4-way VQA", "Acc_leaf"),
    "por": ("hierarchical 4-way VQA", "POR"), "spor": ("hierarchical 4-way VQA", "S-POR"),
    "tor": ("hierarchical 4-way VQA", "TOR"),
}

#: lower-case spellings of column names that mean a term (other tables' names for one metric)
_ALIASES: dict[str, str] = {
    "acc_leaf": "Acc_leaf", "por": "POR", "spor": "S-POR", "spor_prefix": "S-POR (prefix)", "tor": "TOR",
    "hca": "HCA", "em": "EM", "em_soft": "EM_soft", "gs_raw": "GS_raw",
    "ci95_lo": "lo", "ci95_hi": "hi", "p_best": "P(best)", "balacc": "balAcc", "kappa_vas": "kappa_VAS",
}

_NUMBERED: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"acc(25|50|75|90)"), "acc@t", "accuracy at IoU {0}%"),
    (re.compile(r"EM_(\d+)(cfg|vlm)"), "EM", "mean EM over {0} {1}"),
    (re.compile(r"step_(\d+)(cfg|vlm)"), "step", "step of the mean EM over {0} {1}"),
    (re.compile(r"steps_(\d)"), "steps", "share {0} ring steps from the gold"),
    (re.compile(r"emits_([A-Z])"), "emits", "share of replies choosing {0}"),
    (re.compile(r"dinov2_(\w+)_AUC"), "AUC", "DINOv2 AUC, {0} pairing"),
    (re.compile(r"(?:acc|balAcc)_(\w+)"), "accuracy", "accuracy, {0}"),
    (re.compile(r"(?:c|dprime)_(\w+)"), "d′", "{0} pairing"),
)

#: column names that are values of the rows' own categories (the table's title says which)
CATEGORY = Term("category", "category column", "A column per value of the table's grouping (an organismal group, a "
                "difficulty tier, a question family, a BAGEL domain, a hierarchy level or a model): the metric of the table's "
                "title for that value.", "the table's metric, restricted to the category", "see the table's title",
                "as the table's metric")
#: descriptive columns (text, not measured)
DESCRIPTIVE = Term("descriptive", "descriptive column", "A label of the row (model, task, group, family, method, …), "
                   "not a measurement.", "—", "—", "text")
_DESCRIPTIVE = {"model", "model_a", "model_b", "task", "component", "kind", "group", "family", "dataset", "datasets",
                "dimension", "level", "tier", "key", "block", "column", "method", "position", "format", "benchmark manifest",
                "predictions", "scored_on", "depth", "abs_range", "species", "genus", "category", "pair", "statistic",
                "summary_path", "significant", "task_a", "task_b", ""}


#: column names that are values of a component's own categories, spelled out
CATEGORY_VALUES: dict[str, str] = {
    # C1 organismal groups (Table 75) and difficulty tiers (Table 76)
    "Amph": "amphibians", "Angio": "angiosperms", "Arach": "arachnids", "Birds": "birds", "Bryo": "bryophytes",
    "Fish": "fish", "Gymno": "gymnosperms", "Insect": "insects", "Mamm": "mammals", "Rept": "reptiles",
    "Easy": "easy tier", "Medium": "medium tier", "Hard": "hard tier", "Degenerate": "degenerate tier",
    "easy": "easy tier / condition", "medium": "medium tier", "hard": "hard tier / condition",
    "random": "random pairing", "phylum": "phylum", "species epithet": "species epithet", "mcq": "4-way MCQ",
    # C2 categories (Table 32) and question families (Tables 33–34, 83–84)
    "anatomical": "anatomical localization", "morphological": "morphological attributes",
    "salience": "relative salience", "naming": "naming", "attr_bare": "bare attribute value",
    "attr_group": "attribute within a group", "cat_mcq": "category MCQ", "marker": "marker localization",
    "common": "open common name", "genus": "open genus", "kind_of": "open “kind of”", "sci": "open scientific name",
    "vis_set": "visible part set", "vis_side": "visible side",
    # BAGEL domains (BAGEL Table 4)
    "Wiki": "Wikipedia", "GloBI": "GloBI interactions", "bioRxiv": "bioRxiv abstracts", "Xeno-canto": "xeno-canto",
    # C4 datasets (A.4)
    "whaleshark": "whale shark", "hyena": "spotted hyena", "leopard": "leopard", "gzcd": "Grevy's zebra",
    "beluga": "beluga",
}


def explain(column: str, categories: frozenset[str] = frozenset()) -> tuple[Term, str]:
    """(glossary entry, how the column reads) for a column a report table prints; ``categories``
    are the values the table's rows or the report's runs take (groups, tiers, models) that may
    appear as column names. Unknown columns get :data:`CATEGORY` only when they are such values."""
    column = str(column)
    if not column:
        return DESCRIPTIVE, "row label"
    alias = _ALIASES.get(column.lower())
    if alias:
        return TERMS[alias], TERMS[alias].spelled
    if column in CATEGORY_VALUES:
        return CATEGORY, CATEGORY_VALUES[column]
    for suffix, bound in (("_lo", "lower 95% bound of "), ("_hi", "upper 95% bound of ")):
        if column.endswith(suffix) and len(column) > len(suffix):
            term, _ = explain(column[: -len(suffix)], categories)
            return term, bound + column[: -len(suffix)]
    if column in COLUMNS:
        task, metric = COLUMNS[column]
        return TERMS[metric], f"{task}: {TERMS[metric].spelled}"
    if column in TERMS:
        return TERMS[column], TERMS[column].spelled
    for pattern, name, text in _NUMBERED:
        match = pattern.fullmatch(column)
        if match:
            return TERMS[name], text.format(*match.groups())
    if column in _DESCRIPTIVE:
        return DESCRIPTIVE, column
    plain = re.sub(r" \((?:text|visual)(?:, [^()]*)?\)$", "", column)  # "MODEL (visual, bench)"
    lowered = {c.lower() for c in categories}
    if column.lower() in lowered or plain.lower() in lowered:
        return CATEGORY, column
    raise KeyError(column)


#: the glossary in the order the page lists it
ORDERED: tuple[Term, ...] = (*_TERMS, CATEGORY, DESCRIPTIVE)

__all__ = ["ARXIV", "CATEGORY", "COLUMNS", "DESCRIPTIVE", "ORDERED", "PAPER", "TERMS", "Term", "explain"]
