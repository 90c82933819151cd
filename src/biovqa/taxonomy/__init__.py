"""Taxonomy: the GBIF Backbone index (names, synonyms, vernaculars) and the benchmark tree."""
