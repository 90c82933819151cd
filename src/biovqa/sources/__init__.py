"""Readers for the native formats of the source datasets (TreeOfLife-200M, GBIF DwC-A, CUB …)."""
