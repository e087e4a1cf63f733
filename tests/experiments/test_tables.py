"""The tables (tnlib.experiments.reporting.tables): the paper's own, rendered as printed and set beside a report's on
request, and a report's pooling the seeds of a cell that trained until flat to different steps."""
from __future__ import annotations

import json

import pytest

from tnlib.cli import main

from fixtures.run_folders import write_data_root, write_metrics, write_planning, write_run


def test_the_papers_tables_are_rendered_as_printed_with_its_bold_cells():
    from tnlib.experiments.reporting.tables import render_paper_table1, render_paper_table2
    from tnlib.paper import PAPER_CONFIGS, TABLE1_CONFIGS

    table1 = render_paper_table1(TABLE1_CONFIGS)
    # the cells the paper prints in bold (Table 1: the best of N, N+clip, TN when more than 0.1 ahead)
    ferry = next(line for line in table1.splitlines() if line.startswith("| ferry"))
    assert [c.strip(" |") for c in ferry.split(" | ") if c.startswith("**")] == [
        "**3.45±.8**", "**8.63±2.7**", "**2.98±1.4**", "**9.58±1.5**"]
    assert "| gripper | MSE | 9.93 | 15.82 | 3.65±.9 | 3.70±.9 | 68.12±16.0 | **5.65±1.3** |" in table1
    assert table1.count("| +clip |") == 4 and "10.44±28.4" in table1
    table2 = render_paper_table2(PAPER_CONFIGS)
    assert "| blocksworld | 0.13 | 0.84±0.19 | 0.85±0.19 | **0.88±0.14** | **0.79±0.29** | 0.50±0.35 | 0.55±0.33 |" \
        in table2
    assert "| visitall | 3321 | 2156±1451 | 2148±1511 | **1683±1290** | 3384±3448 | **591±216** | 612±363 |" in table2


def test_a_report_sets_the_papers_tables_beside_its_own_on_request(tmp_path, capsys):
    out = tmp_path / "runs"
    assert main(["sweep", "--preset", "small", "--domains", "ferry", "--configs", "learn/ff", "--seeds", "0",
                 "--steps", "20", "--eval-every", "10", "--plan-instances", "1", "--out", str(out)]) == 0
    assert main(["report", str(out), "--out", str(tmp_path / "plain")]) == 0
    assert main(["report", str(out), "--out", str(tmp_path / "beside"), "--paper-tables"]) == 0
    assert "The paper's (its NLM" not in (tmp_path / "plain" / "accuracy.md").read_text()
    accuracy = (tmp_path / "beside" / "accuracy.md").read_text()
    planning = (tmp_path / "beside" / "planning.md").read_text()
    assert "The paper's (its NLM" in accuracy and "| ferry | MSE | 9.77 | 11.10 | 3.73±.7 | **3.45±.8** |" in accuracy
    assert "The paper's (its NLM" in planning and "| ferry | 5152 |" in planning
    assert main(["report", str(out), "--out", str(tmp_path / "x"), "--ablation", "residual", "--paper-tables"]) == 2


def test_tables_pool_seeds_that_trained_until_flat_to_different_steps(tmp_path):
    """In a folder whose sweep trained until flat, seeds of a cell that stopped at different steps (on the sweep's
    grid of chunks) are one setting; without max_steps in sweep.json, or off the grid, they are not."""
    from tnlib.experiments.reporting.tables import render_table, render_table2

    data, results = tmp_path / "data", tmp_path / "results"
    write_data_root(data)
    results.mkdir()
    sweep = {"max_evaluations": 10_000, "steps": 200, "max_steps": 800, "extend_steps": 200}
    (results / "sweep.json").write_text(json.dumps(sweep))
    for seed, steps, mse in ((0, 200, 1.0), (1, 600, 3.0)):
        run = write_run(results, data, [10, 5] + [3.9] * (steps // 25 - 2), distribution="TN", seed=seed, steps=steps,
                        eval_every=25)
        write_metrics(run, mse, 0.5)
        write_planning(run / "planning-default.jsonl", [True, True])
    write_planning(results / "baseline-blocksworld-ff.jsonl", [True, True])
    assert "| 2.00±1.4 |" in render_table(results)  # mean and sample std of the two seeds
    assert "| 100±0 |" in render_table2(results)  # both seeds pooled: 100 evaluations (two seeds: not bold)
    (results / "sweep.json").write_text(json.dumps({**sweep, "extend_steps": 300}))  # 600 is not 200 + k x 300
    with pytest.raises(ValueError, match=r'differ in more than the seed \(steps: "until flat: 200-800, by 300", 600\)'
                                         r": render them from separate results folders"):
        render_table(results)
    (results / "sweep.json").write_text(json.dumps({"max_evaluations": 10_000, "steps": 200}))
    with pytest.raises(ValueError, match=r"differ in more than the seed \(steps: 200, 600\): if a sweep trained them "
                                         r"until flat, the results folder holds no sweep.json that says so"):
        render_table2(results)
