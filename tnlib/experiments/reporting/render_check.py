"""Whether the committed reports whose runs are in git are what the current code renders from them.

A report folder under reports/ is rendered by `tnlib report` from run folders or exported records committed beside
it (:data:`COMMITTED_RENDERS`: each folder and how its README renders it). A change to the tables, the header
or the statistics -- or a folder a comparison is set against growing since -- leaves a committed report behind what
the code makes of the same files; :func:`render_differences` renders the folder again into a temporary folder and
names every Markdown and CSV line that differs, the line naming the commit that rendered it aside. The check reads
only committed files (calibration.md, which needs the weights, is not rendered); reports whose runs are not in git
are checked by retraining a subset (:mod:`tnlib.experiments.running.rerun_check`) instead.
"""
from __future__ import annotations

import difflib
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tnlib.experiments.reporting.reports import CONDITIONAL_FILES, RENDERED_AT, render_results
from tnlib.files import REPO_ROOT

__all__ = ["COMMITTED_RENDERS", "CommittedRender", "render_differences", "runs_changed_since_commit"]


@dataclass(frozen=True)
class CommittedRender:
    """How a committed report folder is rendered: ``tnlib report RESULTS [--against A] [--selection S]
    [--paper-tables] [--against-report R]`` (paths from the repository root)."""

    results: str
    against: str | None = None
    selection_seconds: float | None = None
    paper_tables: bool = False
    against_report: str | None = None

    def command(self, out: str) -> str:
        return " ".join(["tnlib report", self.results, "--out", out]
                        + (["--selection", f"{self.selection_seconds:g}"] if self.selection_seconds else [])
                        + (["--paper-tables"] if self.paper_tables else [])
                        + (["--against", self.against] if self.against else [])
                        + (["--against-report", self.against_report] if self.against_report else []))


# report folder (under reports/) -> how its README renders it
COMMITTED_RENDERS: dict[str, CommittedRender] = {
    "converged/nlm5": CommittedRender("reports/converged/nlm5/runs"),
    "converged/nlm5-authors": CommittedRender("reports/converged/nlm5-authors/runs",
                                              against="reports/converged/nlm5/runs"),
    "converged/hgn5": CommittedRender("reports/converged/hgn5/records"),
    "converged/linear": CommittedRender("reports/converged/linear/records"),
    "converged/wl": CommittedRender("reports/converged/wl/records"),
    "paper-scale": CommittedRender("reports/paper-scale/runs", against="reports/converged/nlm5/runs",
                                   selection_seconds=30, paper_tables=True),
    "paper-scale-linear": CommittedRender("reports/paper-scale-linear/runs"),
    "paper-scale-linear-bounded": CommittedRender("reports/paper-scale-linear-bounded/runs",
                                                  against="reports/paper-scale-linear/runs"),
    "paper-scale-wl": CommittedRender("reports/paper-scale-wl/records", selection_seconds=30),
    "paper-scale-wl-bounded": CommittedRender("reports/paper-scale-wl-bounded/records",
                                              against="reports/paper-scale-wl/records", selection_seconds=30),
    # the campaign in progress: rendered from each snapshot of its runs (make paper-scale-snapshot)
    "paper-scale-nlm5": CommittedRender("reports/paper-scale-nlm5/runs", against="reports/converged/nlm5/runs",
                                        selection_seconds=30, paper_tables=True,
                                        against_report="reports/paper-scale-nlm5-tnlib-lmcut"),
}
# what is compared: the tables and per-seed values (the HTML figures carry the same numbers, and paths relative to
# where they were written)
COMPARED_SUFFIXES = (".md", ".csv")


def runs_changed_since_commit(report: str) -> bool:
    """Whether ``report``'s run folders differ from git's copy -- a campaign training them now: the committed report
    is then checked against the committed runs on a clean checkout, not against runs a lane is writing. False
    outside a git checkout."""
    import subprocess

    try:
        changed = subprocess.run(["git", "status", "--porcelain", "--", COMMITTED_RENDERS[report].results],
                                 capture_output=True, text=True, check=True, cwd=REPO_ROOT).stdout
    except (OSError, subprocess.CalledProcessError):
        return False
    return bool(changed.strip())


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if not line.startswith(RENDERED_AT)]


def render_differences(report: str, committed: Path | None = None) -> list[str]:
    """Every line in which ``report``'s committed Markdown and CSV files (in ``committed``, by default the report's
    folder) differ from a render of its committed run folders by the current code (``file: -committed /
    +rendered``), and each of the files a render writes only where called for that is committed but not rendered;
    [] when they agree. Files the render never writes (calibration.md, a README) are not compared."""
    how = COMMITTED_RENDERS[report]
    committed = committed or REPO_ROOT / "reports" / report
    with tempfile.TemporaryDirectory() as tmp:
        rendered = Path(tmp) / "rendered"
        render_results(REPO_ROOT / how.results, rendered, against=how.against and REPO_ROOT / how.against,
                       selection_seconds=how.selection_seconds, paper_tables=how.paper_tables,
                       against_report=how.against_report and REPO_ROOT / how.against_report)
        # a file an earlier render wrote and this one does not (whole-grid metrics since taken out, say)
        differences = [f"{name}: committed, not rendered" for name in CONDITIONAL_FILES
                       if (committed / name).is_file() and not (rendered / name).is_file()]
        for path in sorted(p for p in rendered.iterdir() if p.suffix in COMPARED_SUFFIXES):
            if not (committed / path.name).is_file():
                differences.append(f"{path.name}: rendered, not committed")
                continue
            for line in difflib.unified_diff(_lines(committed / path.name), _lines(path), lineterm="", n=0):
                if not line.startswith(("---", "+++", "@@")):
                    differences.append(f"{path.name}: {line}")
        return differences
