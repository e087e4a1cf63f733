"""The names of a rendered report's files that other code reads back (the findings, the intervals figure, the
rerun check, the classroom notebook, the main job's outputs): one home, in a module light enough for any
command's start-up to import."""
from __future__ import annotations

# Every run's test metrics, one row per run and column (N, N+clip, TN) and seed.
ACCURACY_SEEDS = "accuracy-seeds.csv"
# Every run's planning summary, where the runs planned.
PLANNING_SEEDS = "planning-seeds.csv"

# A results folder's cells paired by seed with a rendered report's (tnlib report --against-report).
REPORT_PAIRING = "against-report.md"
REPORT_PAIRING_CSV = "against-report.csv"
REPORT_PAIRING_PAGE = "against-report.html"

__all__ = ["ACCURACY_SEEDS", "PLANNING_SEEDS", "REPORT_PAIRING", "REPORT_PAIRING_CSV", "REPORT_PAIRING_PAGE"]
