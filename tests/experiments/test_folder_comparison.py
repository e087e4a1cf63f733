"""`tnlib report --against` (tnlib.experiments.reporting.folder_comparison): two results folders' cells side by
side, bold by the paired interval where both have three seeds, planning compared on the instances both planned."""
from __future__ import annotations

import json

import pytest

from fixtures.run_folders import write_data_root, write_metrics, write_planning, write_run


def test_comparison_puts_two_folders_cells_side_by_side(tmp_path, capsys):
    """`tnlib report --against`: the cells both folders hold, columns named by the setting that differs (here the
    upper bound), mean ± std over seeds, the better of each pair in bold; cells only one folder has are left out."""
    from tnlib.cli import main
    from tnlib.experiments.reporting.folder_comparison import render_comparison

    data = tmp_path / "data"
    write_data_root(data)
    without, with_h_sat = tmp_path / "without", tmp_path / "with"
    for folder, extra, mses, solved in ((without, {}, (2.0, 4.0), [[True, False], [False, False]]),
                                        (with_h_sat, {"upper_bound": "h_sat"}, (1.0, 1.0), [[True, True]] * 2)):
        folder.mkdir()
        for seed, mse in enumerate(mses):
            run = write_run(folder, data, [3, 2, 1, 1], seed=seed, **extra)
            write_metrics(run, mse, 1.5 + seed)
            write_planning(run / "planning-default.jsonl", solved[seed])
    only_here = write_run(without, data, [3, 2, 1, 1], distribution="N")
    write_metrics(only_here, 9.0, 9.0)
    table = render_comparison(with_h_sat, without).splitlines()
    assert table[0] == ("| domain | model | configuration | distribution | test MSE: upper_bound h_sat | "
                        "test MSE: upper_bound none | test NLL: upper_bound h_sat | test NLL: upper_bound none | "
                        "plan coverage: upper_bound h_sat | plan coverage: upper_bound none | "
                        "average evaluations: upper_bound h_sat | average evaluations: upper_bound none |")
    # MSE 1±0 against 3±1.41; NLL 2±.71 both; coverage 1 against .25 (±.35); evaluations: an unsolved instance
    # counts as the 10,000 limit: (100 + 10,000) / 2 and 10,000; two seeds: nothing bold
    assert "GBFS plans with the lower bound only" in table[-1]  # what the MSE of u = h_sat does and does not show
    assert table[2:3] == ["| blocksworld | nlm | learn/ff | TN | 1.00±.0 | 3.00±1.4 | 2.00±.7 | 2.00±.7 | "
                         "1.00±0.00 | 0.25±0.35 | 100±0 | 7525±3500 |"]
    with pytest.raises(ValueError, match="share no"):
        render_comparison(with_h_sat, tmp_path / "data")
    out = tmp_path / "reports"
    assert main(["report", str(with_h_sat), "--out", str(out), "--against", str(without)]) == 0
    comparison = (out / "comparison.md").read_text()
    assert comparison.startswith("# `with/` against `without/`") and table[2] in comparison
    assert capsys.readouterr().out.splitlines()[-1].endswith("comparison.md")
    # a folder to compare with that is missing (a typo) is named as such, before anything is written
    typo = tmp_path / "whithout"
    assert main(["report", str(with_h_sat), "--out", str(tmp_path / "other"), "--against", str(typo)]) == 2
    assert f"--against {typo} holds no run folder" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()


def test_comparison_bolds_by_the_paired_interval_where_both_folders_have_three_seeds(tmp_path):
    """Same data, four seeds each: a shift every seed shows is bold though the seeds' spread is wider than it (the
    summed-std gap would not bold it), a difference that changes sign from seed to seed is not, and the table of
    paired intervals under the comparison gives both."""
    from tnlib.experiments.reporting.folder_comparison import COMPARISON_BOLD_RULE, render_comparison

    data = tmp_path / "data"
    write_data_root(data)
    base, shifted = tmp_path / "base", tmp_path / "shifted"
    for folder, extra, mse_shifts, nll_shifts in (
            (base, {}, (0, 0, 0, 0), (0, 0, 0, 0)),
            (shifted, {"sigma_link": "bounded"}, (.5, .6, .4, .5), (.5, -.6, .4, -.5))):
        folder.mkdir()
        for seed, (level, mse_shift, nll_shift) in enumerate(zip((1.0, 5.0, 9.0, 3.0), mse_shifts, nll_shifts)):
            run = write_run(folder, data, [3, 2, 1, 1], seed=seed, **extra)
            write_metrics(run, level + mse_shift, level + nll_shift)
    table = render_comparison(shifted, base).splitlines()
    assert table[0] == ("| domain | model | configuration | distribution | test MSE: sigma_link bounded | "
                        "test MSE: sigma_link softplus | test NLL: sigma_link bounded | test NLL: sigma_link softplus |")
    assert table[2] == "| blocksworld | nlm | learn/ff | TN | 5.00±3.4 | **4.50±3.4** | 4.45±3.5 | 4.50±3.4 |"
    assert COMPARISON_BOLD_RULE in table
    paired = table[table.index(COMPARISON_BOLD_RULE) + 2:]
    assert paired[0].startswith("Paired by seed, the first folder (`shifted`) minus the second (`base`)")
    row = [c.strip() for c in paired[-1].split("|")[1:-1]]
    assert row[:4] == ["blocksworld", "nlm", "learn/ff", "TN"]
    assert row[4] == ".50 [.37, .63] higher" and row[5].startswith("-.05 [") and not row[5].endswith(("lower", "higher"))


def test_comparison_plans_on_the_instances_both_folders_planned(tmp_path):
    """One folder planned more of the plan instances than the other (a plan set planned further): planning compares
    on the instances both planned, seeds paired on the same problems, and says how many of each folder's it kept.
    Here the extra instances are all unsolved: counted, they would halve that folder's coverage."""
    from tnlib.experiments.reporting.folder_comparison import render_comparison

    data = tmp_path / "data"
    write_data_root(data)
    base, further = tmp_path / "base", tmp_path / "further"
    for folder, extra, solved in ((base, {}, [True, False]),
                                  (further, {"sigma_link": "bounded"}, [True, False, False, False])):
        folder.mkdir()
        for seed in range(3):
            run = write_run(folder, data, [3, 2, 1], seed=seed, **extra)
            write_metrics(run, 1.0 + seed, 1.0)
            write_planning(run / "planning-default.jsonl", solved)
    table = render_comparison(further, base).splitlines()
    assert table[0].endswith("| plan coverage: sigma_link bounded | plan coverage: sigma_link softplus | "
                             "average evaluations: sigma_link bounded | average evaluations: sigma_link softplus |")
    assert table[2].replace("**", "").endswith("| 0.50±0.00 | 0.50±0.00 | 5050±0 | 5050±0 |")
    assert ("Planning compares the instances both folders planned with every run: blocksworld 2 (of 4 and 2) -- the "
            "other instances are in each folder's own planning.md.") in table
    # planned alike, nothing is said
    assert not any(line.startswith("Planning compares") for line in render_comparison(base, base).splitlines())


def test_comparison_across_datasets_names_them_bolds_nothing_and_leaves_out_planning_on_other_instances(
        tmp_path, capsys):
    """Two folders both named runs/, trained on different datasets (their test splits differ) and planned on
    different instances: columns and title say which is which, no magnitude is bold, planning is left out."""
    from tnlib.cli import main
    from tnlib.experiments.reporting.folder_comparison import folder_names, render_comparison

    large, small = tmp_path / "paper-scale" / "runs", tmp_path / "converged" / "runs"
    for folder, data_name, mses, plan_on in ((large, "paper", (1.0, 1.2), "plan-set"), (small, "small", (3.0,), None)):
        data = tmp_path / data_name
        if not data.is_dir():
            write_data_root(data)
        folder.mkdir(parents=True)
        (folder / "sweep.json").write_text(json.dumps({"plan_on": plan_on} if plan_on else {}))
        for seed, mse in enumerate(mses):
            run = write_run(folder, data, [3, 2, 1, 1], seed=seed)
            write_metrics(run, mse, 2.0)
            write_planning(run / "planning-default.jsonl", [True])
    assert folder_names(large, small) == ("paper-scale/runs", "converged/runs")
    table = render_comparison(large, small).splitlines()
    assert table[0] == ("| domain | model | configuration | distribution | test MSE: data/paper | "
                        "test MSE: data/small | test NLL: data/paper | test NLL: data/small |")
    assert table[2] == "| blocksworld | nlm | learn/ff | TN | 1.10±.1 | 3.00 (1 seed) | 2.00±.0 | 2.00 (1 seed) |"
    assert "**" not in "\n".join(table)
    assert table[-1] == ("Planning is left out: `paper-scale/runs` on data/paper's plan-set, `converged/runs` on "
                         "data/small's plan split -- not the same instances.")
    out = tmp_path / "reports"
    assert main(["report", str(large), "--out", str(out), "--against", str(small)]) == 0
    comparison = (out / "comparison.md").read_text()
    assert comparison.startswith("# `paper-scale/runs/` against `converged/runs/`")
    assert "**Set against** `converged/runs/`: 1 tested run (data/small), 1 seed per cell (1 cell)." in comparison
    capsys.readouterr()


def test_comparison_names_only_settings_that_differ_where_both_folders_tested_runs(tmp_path):
    """A cell one folder only planned (its runs not tested yet) is no setting that tells the folders apart: the
    columns keep the folders' own setting (here the sigma link), not the domains each has tested runs of; and a
    metric computed twice, the same up to float rounding, is equal on every seed, no direction."""
    from tnlib.experiments.reporting.folder_comparison import render_comparison

    data = tmp_path / "data"
    write_data_root(data)
    write_data_root(data, "gripper")
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, extra in ((first, {"sigma_link": "bounded"}), (second, {})):
        folder.mkdir()
        for seed in range(3):
            run = write_run(folder, data, [3, 2, 1], seed=seed, **extra)
            # the same value, once summed in another order: 0.1 + 0.2 against 0.3
            write_metrics(run, (0.1 + 0.2 if folder == first else 0.3) + seed, 1.0)
            planned = write_run(folder, data, [3, 2, 1], domain="gripper", seed=seed, **extra)
            write_planning(planned / "planning-default.jsonl", [True])
            if folder == second:
                write_metrics(planned, 2.0, 1.0)
    table = render_comparison(first, second).splitlines()
    assert table[0].startswith("| domain | model | configuration | distribution | test MSE: sigma_link bounded | "
                               "test MSE: sigma_link softplus |")
    paired = [line for line in table if line.startswith("| blocksworld | nlm | learn/ff | TN | .00 [")]
    assert len(paired) == 1 and "higher" not in paired[0] and "lower" not in paired[0]
