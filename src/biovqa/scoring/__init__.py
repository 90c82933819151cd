"""Scoring shared by every component: predictions in, one score schema out."""
