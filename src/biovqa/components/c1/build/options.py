"""C1 build options and the organismal groups of paper Table 5."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Table 5: organismal group → (filter rank, accepted values).
GROUPS: dict[str, tuple[str, frozenset[str]]] = {
    "Amphibians": ("class", frozenset({"Amphibia"})),
    "Angiosperms": ("class", frozenset({"Magnoliopsida", "Liliopsida"})),
    "Arachnids": ("class", frozenset({"Arachnida"})),
    "Birds": ("class", frozenset({"Aves"})),
    "Bryophytes": ("phylum", frozenset({"Bryophyta"})),
    "Fish": (
        "class",
        frozenset({"Actinopterygii", "Teleostei", "Elasmobranchii", "Holocephali", "Coelacanthi",
                   "Dipneusti"}),
    ),
    "Gymnosperms": ("class", frozenset({"Pinopsida"})),
    "Insects": ("class", frozenset({"Insecta"})),
    "Mammals": ("class", frozenset({"Mammalia"})),
    "Reptiles": ("class", frozenset({"Squamata", "Testudines", "Crocodylia", "Sphenodontia"})),
}
#: Groups whose lineage has no order rank (family hangs from class).
GROUPS_WITHOUT_ORDER = frozenset({"Reptiles"})

@dataclass(frozen=True, slots=True)
class C1BuildOptions:
    """Creation parameters of a C1 build (recorded in the manifest)."""

    per_group: int = 10_000
    seed: int = 42
    min_side: int = 224
    species_cap: int = 50
    groups: tuple[str, ...] = tuple(GROUPS)
    workers: int = 8
    #: stage-2 common-name authorities, ``(name, path)`` in order of preference; today
    #: ``("inaturalist", "inaturalist-taxonomy.dwca.zip")`` (paper §3.1). A mapping is
    #: accepted and turned into pairs.
    authorities: tuple[tuple[str, str], ...] = ()
    #: what to do with a catalog common name that is really a higher rank's name
    #: (:data:`~biovqa.taxonomy.english.HIGHER_RANK_POLICIES`); ``keep`` reproduces the paper
    higher_rank_names: str = "keep"

    def __post_init__(self) -> None:
        pairs = self.authorities.items() if isinstance(self.authorities, dict) else self.authorities
        object.__setattr__(self, "authorities", tuple((str(n), str(p)) for n, p in pairs))

    def as_manifest(self) -> dict[str, Any]:
        return {
            "per_group": self.per_group,
            "seed": self.seed,
            "min_side": self.min_side,
            "species_cap": self.species_cap,
            "groups": list(self.groups),
            "authorities": [name for name, _ in self.authorities],
            "higher_rank_names": self.higher_rank_names,
        }
