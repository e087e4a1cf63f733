"""Paths as tnlib shows them (tnlib.files): a folder inside the repository by its path there, one outside it by its
own name, never by a machine's folders."""
from __future__ import annotations


def test_reports_name_a_results_folder_by_its_repository_path_and_never_by_a_machines_folder():
    """Three committed folders are all called runs/: inside the repository a report names the path; outside it
    the folder's name only (no /tmp/... or /home/... of the machine that rendered it)."""
    from tnlib.files import REPO_ROOT, shown_folder

    assert shown_folder(REPO_ROOT / "reports" / "paper-scale" / "runs") == "reports/paper-scale/runs"
    assert shown_folder("/elsewhere/experiments/runs") == "runs"
