"""Leaderboards from score folders: Markdown/CSV tables, plots, a self-contained HTML page."""
