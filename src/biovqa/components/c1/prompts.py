"""C1 question wording (paper App. K.1, verbatim): the question templates, the rank word each
question type puts into them, and the per-type answer instructions. :mod:`.tasks` attaches each
instruction to its question type; :mod:`.build` fills the templates."""

from __future__ import annotations

# paper App. K.1, verbatim.
RANK_TEMPLATES: tuple[str, ...] = (
    "What is the {rank} of the {label} shown in this image?",
    "Which {rank} does the {label} in this image belong to?",
    "Identify the {rank} of the {label} shown in this image.",
    "Name the {rank} of the {label} in this image.",
    "What is the correct {rank} label for the {label} in this image?",
)
NAME_TEMPLATES: tuple[str, ...] = (
    "What is the {rank} of the {label} shown in this image?",
    "Identify the {rank} of the {label} shown in this image.",
    "Name the {rank} of the {label} shown in this image.",
)
MCQ_TEMPLATE = (
    "Among the four options, what is the common name of the {label} shown in this image? "
    "{o1}, {o2}, {o3}, {o4}"
)
#: The rank word each question type puts into ``{rank}``.
RANK_WORD: dict[str, str] = {
    "phylum": "phylum", "class": "class", "order": "order", "family": "family", "genus": "genus",
    "species": "species epithet", "scientific_name": "scientific name",
    "common_name": "common name",
}
# paper App. K.1, verbatim.
INSTRUCTIONS: dict[str, str] = {
    "phylum": "Answer with ONLY the Phylum name (e.g., Arthropoda). Do not include class, order, or any other taxonomic ranks. Do not write full sentences.",
    "class": "Answer with ONLY the Class name (e.g., Arachnida, Insecta). Do not include order, family, or any other taxonomic ranks. Do not write full sentences.",
    "order": "Answer with ONLY the Order name (e.g., Araneae). Do not include family, genus, or any other taxonomic ranks. Do not write full sentences.",
    "family": "Answer with ONLY the Family name (e.g., Araneidae). Do not include genus, species, or any other taxonomic ranks. Do not write full sentences.",
    "genus": "Answer with ONLY the Genus name (capitalized, e.g., Argiope). Do not include the species epithet or family name. Do not write full sentences.",
    "species": "Answer with ONLY the species epithet (the single, lowercase second word of the scientific name, e.g., aurantia). Absolutely DO NOT include the capitalized Genus name. Do not write full sentences.",
    "scientific_name": "Answer with ONLY the full binomial scientific name (Genus and species, e.g., Argiope aurantia). Do not include the common name or higher taxonomic ranks. Do not write full sentences.",
    "common_name_mcq": "Answer with ONLY the exact correct option from the four choices provided in the question. Absolutely DO NOT write full sentences, and do not provide any extra context or scientific names.",
    "common_name": "Answer with ONLY the everyday English common name (e.g., Orb weavers). Absolutely DO NOT provide the Latin scientific name. Do not write full sentences.",
}
#: The organism word of ``{label}``, by kingdom ("organism" for any other kingdom).
KINGDOM_LABEL: dict[str, str] = {"Animalia": "animal", "Plantae": "plant"}
