"""C3 quantitative spatial reasoning (WAID, Boxes on Bees, DePondFi, 2018-NEON-beetles, wildlife
catalogs).

Modules: :mod:`.tasks` (one spec record per task), :mod:`.prompts` (Table 70 and the answer
vocabularies), :mod:`.build` (sources, items, geometry), :mod:`.subsets` (ten count-stratified
subsets), :mod:`.render` (canvases and overlays), :mod:`.parse` (Table 14 parsers),
:mod:`.kernels` (per-item kernels, floor fits), :mod:`.floor` (image-blind replies), :mod:`.score`
(per item), :mod:`.sections` (each task's summary section), :mod:`.summary` (Table 3, format,
bootstrap), :mod:`.report` (Table 3 block,
Tables 38–47, the floor plot), :mod:`.rank` (rank bootstrap inputs), :mod:`.demo` (tiny
native-format sources for ``biovqa demo``).
"""

from biovqa.components.registry import AnalysisColumn, Component, Option

COMPONENT = Component(
    name="c3",
    title="C3 quantitative spatial reasoning",
    tasks=("counting", "relative_counting", "absolute_distance", "relative_distance", "localization",
           "relative_position", "viewpoint", "ocr"),
    score_options=(
        Option("bootstrap", int, 2000,
               "bootstrap resamples: photographs / plates for counting and absolute distance, items "
               "elsewhere (C3 default 2000, as C4's in the paper's L.3; 0: none)", low=0),
        Option("vas_weights", list[float], (1.0, 0.25, 0.1, 0.0, 0.0),
               "viewpoint credit for 0,1,2,3,4 ring steps (Appendix C.6; up/down exact only)",
               low=0.0, high=1.0, length=5,
               check=lambda weights: None if weights[0] == 1.0 else "an exact viewpoint (0 ring steps) earns 1"),
        Option("box_yxyx", bool, False,
               "also search the four y1,x1,y2,x2 box conventions (not among Table 43's eight formats)"),
        Option("number_words", bool, False,
               "counting: read a count spelled in words when the reply holds no integer in digits "
               "(beyond Table 14's open integer)"),
        Option("unit_words", bool, False,
               "absolute distance: read spelled-out units (millimetres / 10, metres rejected) "
               "besides cm, mm and m (beyond Table 14)"),
        Option("direction_synonyms", bool, False,
               "relative position: also read up/down, upper/lower, 'above and to the right', compass "
               "words and NE/NW/SE/SW (beyond Table 14's eight candidates)"),
        Option("viewpoint_synonyms", bool, False,
               "viewpoint: also read rear as back, top as up, bottom as down (beyond Table 14's ten "
               "candidates)"),
    ),
    table3=("cnt", "rcnt", "adst", "rdst", "lcl", "rpos", "view", "ocr"),
    rank_columns=("item_id", "task", "cluster", "subset", "gold", "score"),
    # facts the shared stages read
    max_new_tokens=48,  # App. B.2 gives none for C3: biovqa's default
    lite_strata=("dataset", "subset", "tier", "condition"),
    manifest_counts=("task", "tier"),
    sources=("neon-beetles", "waid", "bees", "depondfi", "lila-reid", "gzcd"),
    # App. J.1: the seven spatial tasks as Table 3 scores them; OCR is the negative control
    analysis_columns=(*(AnalysisColumn(label, ("table3", label))
                        for label in ("cnt", "rcnt", "adst", "rdst", "lcl", "rpos", "view")),
                      AnalysisColumn("ocr", ("table3", "ocr"), control=True)),
    # the score columns explaining a reply (a harness explanation, the report's browser)
    explain_columns=("parse_status", "pred_number", "rel_err", "hit20", "iou", "vas", "steps",
                     "box_convention", "gold"),
    group_columns=("dataset",),
    tier_columns=("tier", "condition"),
)
