"""The side files a C1 benchmark folder carries beside ``items.parquet`` (in its ``c1/`` folder):
written by the build, read by the scorer and the audit."""

SIDE_FOLDER = "c1"
#: the benchmark tree (every taxon of the catalog; Lin's N and the exposure counts)
TREE_FILE = "tree.parquet"
#: the vernacular index that resolves common-name replies to tree nodes
VERNACULAR_FILE = "vernacular.parquet"
#: the catalog common names the build replaced, with the source of each replacement
COMMON_NAMES_FILE = "common_names.parquet"
