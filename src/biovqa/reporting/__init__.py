"""Leaderboards from score folders: Table 3 across components (:mod:`.leaderboard`), the
cross-component analysis (:mod:`.analysis`), the per-item browser (:mod:`.browser`), tables as
Markdown/CSV/LaTeX, plots, and an HTML page (:mod:`.html`, Jinja2) — see docs/report.md."""

from biovqa.reporting.writer import write_report

__all__ = ["write_report"]
