"""Codes for labels: the one factorisation of the statistics (:func:`dense_codes`) and the
cluster codes every bootstrap draws over (:func:`cluster_codes`, numbered in sorted label order so
that the resamples never depend on the order of the rows; the paper's Appendix L.3)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def dense_codes(values: np.ndarray | list, *, sort: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(code per value, the distinct values) of ``values``, flattened: codes ``0 … k−1`` number
    the distinct values in sorted order, or with ``sort=False`` in order of first appearance.
    Numbers are told apart by value (NaN is one value, sorted last; −0.0 is 0.0); any other
    values by Python's ``==`` and ``<`` (an object array holding NaN or None is the caller's to
    clean first)."""
    array = np.asarray(values).ravel()
    if array.dtype.kind in "biuf":
        if array.dtype.kind == "f":  # Arrow's hash compares bits: one NaN payload, and −0.0 → 0.0
            array = np.where(np.isnan(array), np.nan, array + 0.0)
        encoded = pa.array(array).dictionary_encode()  # a hash pass: no sort of every value
        codes = encoded.indices.to_numpy().astype(np.int64)
        distinct = encoded.dictionary.to_numpy(zero_copy_only=False)
    else:
        first: dict[object, int] = {}
        codes = np.fromiter((first.setdefault(value, len(first)) for value in array.tolist()),
                            dtype=np.int64, count=array.size)
        distinct = np.empty(len(first), dtype=object)
        distinct[:] = list(first)
    if sort and len(distinct) > 1:
        order = np.argsort(distinct, kind="stable")
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        codes, distinct = rank[codes], distinct[order]
    return codes, distinct


def cluster_codes(clusters: np.ndarray | list) -> tuple[np.ndarray, int]:
    """Dense codes ``0 … n_clusters−1`` for cluster labels, numbered in sorted label order (so
    the codes, and hence the resamples, do not depend on the order of the rows)."""
    labels = np.asarray(clusters)
    missing = (np.isnan(labels).any() if labels.dtype.kind == "f" else
               labels.dtype.kind == "O" and any(v is None or v != v for v in labels.ravel().tolist()))
    if missing:
        raise ValueError("cluster labels must not be missing")
    codes, distinct = dense_codes(labels)
    return codes, len(distinct)


__all__ = ["cluster_codes", "dense_codes"]
