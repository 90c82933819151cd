"""BAGEL's floor (the ``baseline`` backend): the empirical random guess of the BAGEL paper, one
uniform letter per item seeded by its id, so that it does not depend on the item order."""

from __future__ import annotations

import hashlib

import pyarrow as pa

from biovqa.components.bagel.items import LETTERS


def floor_responses(items: pa.Table) -> pa.Array:
    """The empirical random guess: one uniform letter per item, seeded by its id (the BAGEL paper's random baseline)."""
    return pa.array([random_letter(item_id, 0) for item_id in items.column("item_id").to_pylist()], pa.string())


def random_letter(item_id: str, seed: int) -> str:
    """A uniform random letter for ``item_id`` under ``seed`` (independent of item order)."""
    digest = hashlib.sha256(f"random-guess:{seed}:{item_id}".encode()).digest()
    return LETTERS[digest[0] % 4]


__all__ = ["floor_responses", "random_letter"]
