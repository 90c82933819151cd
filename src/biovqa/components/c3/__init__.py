"""C3 quantitative spatial reasoning (WAID, Boxes on Bees, DePondFi, 2018-NEON-beetles, wildlife
catalogs).

Modules: :mod:`.tasks` (task names, prompts, item columns), :mod:`.subsets` (ten count-stratified
subsets), :mod:`.build` (items, floor replies), :mod:`.render` (canvases and overlays),
:mod:`.parser` (Table 14 parsers), :mod:`.floors` (image-blind rules), :mod:`.score` (per item),
:mod:`.summary` (aggregates, floors, lifts, bootstrap), :mod:`.report` (Table 3 block, Tables
38–45, the floor plot), :mod:`.demo` (tiny native-format sources for ``biovqa demo``).
"""

from biovqa.components.registry import Component, Option

COMPONENT = Component(
    name="c3",
    title="C3 quantitative spatial reasoning",
    tasks=("counting", "relative_counting", "absolute_distance", "relative_distance", "localization",
           "relative_position", "viewpoint", "ocr"),
    builder="biovqa.components.c3.build:build_command",
    build_function="biovqa.components.c3.build:build_c3",
    floor="biovqa.components.c3.build:floor_responses",
    scorer="biovqa.components.c3.score:score",
    reporter="biovqa.components.c3.report:tables",
    score_options=(
        Option("vas_weights", str, "1,0.25,0.1,0,0",
               "viewpoint credit for 0,1,2,3,4 ring steps (metrics.md §4.7; up/down exact only)"),
    ),
    table3=("cnt", "rcnt", "adst", "rdst", "lcl", "rpos", "view", "ocr"),
    rank_inputs="biovqa.components.c3.replicates:rank_inputs",
    rank_columns=("item_id", "task", "cluster", "subset", "gold", "score"),
)
