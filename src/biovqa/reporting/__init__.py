"""Leaderboards from score folders: Markdown/CSV tables, plots, a self-contained HTML page."""

from biovqa.reporting.writer import write_report

__all__ = ["write_report"]
