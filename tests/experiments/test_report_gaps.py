"""What a report says where a table would be empty (tnlib.experiments.reporting.report_gaps): the command that
would fill it."""
from __future__ import annotations

import json

from fixtures.run_folders import write_data_root, write_metrics, write_run


def test_a_folder_swept_without_planning_says_so_instead_of_empty_planning_tables(tmp_path, capsys):
    from tnlib.cli import main

    data, folder = tmp_path / "data", tmp_path / "runs"
    write_data_root(data)
    folder.mkdir()
    for seed in range(2):
        write_metrics(write_run(folder, data, [3, 2, 1], seed=seed), 1.0 + seed, 1.0)
    (folder / "sweep.json").write_text(json.dumps({"plan": False}))  # a sweep's folder, swept with --no-plan
    assert main(["report", str(folder), "--out", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    planning = (tmp_path / "out" / "planning.md").read_text()
    assert "No run of nlm was planned (the sweep ran with `--no-plan`)" in planning
    assert "Ratio of solved instances" not in planning
