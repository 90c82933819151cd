"""Names shown in the report: Table 3 column abbreviations and the metric glossary (formula and
the paper's equation number, from paper App. C)."""

from __future__ import annotations

#: Table 3 column → (task spelled out, metric)
COLUMNS: dict[str, tuple[str, str]] = {
    "phy": ("C1 phylum", "EM"), "cls": ("C1 class", "EM"), "ord": ("C1 order", "EM"),
    "fam": ("C1 family", "EM"), "gen": ("C1 genus", "EM"), "spc": ("C1 species epithet", "EM"),
    "sci": ("C1 scientific name", "EM"), "com": ("C1 open common name", "EM"),
    "sal": ("C2 relative salience", "cags"), "mrp": ("C2 morphological attributes", "cags"),
    "loc": ("C2 anatomical localization", "cags"), "nam": ("C2 naming", "cags"),
    "cnt": ("C3 counting", "macro cas"), "rcnt": ("C3 relative counting", "balanced accuracy"),
    "adst": ("C3 absolute distance", "acc@20"), "rdst": ("C3 relative distance", "balanced accuracy"),
    "lcl": ("C3 localization", "meanIoU_all"), "rpos": ("C3 relative position", "accuracy"),
    "view": ("C3 viewpoint", "macroVAS"), "ocr": ("C3 OCR (negative control)", "EM"),
    "dprime": ("C4 re-identification, random pairing", "d′"), "acc": ("C4 re-identification, random pairing", "accuracy"),
}

#: metric → (formula, paper equation)
METRICS: dict[str, tuple[str, str]] = {
    "EM": ("1[norm(ŷ) = norm(y)]", "Eq. 5"),
    "EM_soft": ("EM, also crediting an accepted synonym of the gold", "Eqs. 6–7"),
    "severity": ("mean over wrong, resolved replies of d(y) − d(LCA(ŷ, y)); lower is better", "Eqs. 8, 27"),
    "wup": ("2·d(LCA) / (d(ŷ) + d(y))  (Wu–Palmer)", "Eqs. 1, 9"),
    "lin": ("2·IC(LCA) / (IC(ŷ) + IC(y)),  IC(c) = −log(|subtree(c)|/N)", "Eq. 10"),
    "cags": ("(s − b) / (1 − b): kernel similarity s over the chance level b of the item's distractors",
             "Eqs. 2, 11, 12"),
    "cas": ("max(0, 1 − |n̂ − n| / n)  (bounded count agreement); macro = mean over subsets", "Eqs. 3, 23"),
    "macro cas": ("mean over the counting subsets of the mean cas", "Eqs. 3, 23"),
    "lift": ("(S − φ) / (1 − φ) over the image-blind floor φ", "Eq. 24"),
    "d′": ("z(H) − z(F), H and F log-linear corrected hit and false-alarm rates", "Eqs. 4, 26"),
    "c": ("−½·(z(H) + z(F)); negative = bias toward “yes”", "Eqs. 4, 26"),
    "accuracy": ("share of items answered correctly", "—"),
    "balanced accuracy": ("mean over gold classes of the per-class recall", "—"),
    "acc@20": ("share of distance replies within 20% of the gold", "—"),
    "meanIoU_all": ("mean box IoU over all items, unparsed replies counting 0", "—"),
    "macroVAS": ("mean over gold viewpoints of the ring-step credit (1, .25, .10, 0, 0)", "—"),
}
