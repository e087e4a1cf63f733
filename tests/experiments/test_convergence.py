"""The paper's Figure 2 counted: TN's best validation MSE so far over N's, paired by seed at fixed points of training."""
from __future__ import annotations

import csv
import math

import numpy as np
import pytest
from scipy import stats

from fixtures.run_folders import write_data_root, write_metrics, write_run
from tnlib.experiments.reporting.convergence import compared_steps, convergence_rows, write_convergence
from tnlib.experiments.reporting.seed_statistics import holm_adjusted


def test_compared_steps_are_the_latest_common_steps_at_each_fraction_of_the_last_common_one():
    long = {step: 1.0 for step in range(50, 801, 50)}
    short = {step: 1.0 for step in range(50, 601, 50)}
    # the last common step is 600: a sixteenth (37.5) holds no step, an eighth (75) holds 50, then 150, 300, 600
    assert compared_steps([long, short]) == [50, 150, 300, 600]
    assert compared_steps([{100: 1.0}, {200: 1.0}]) == []  # no step in common


def _cell(tmp_path, n_curves, tn_curves, **setting):
    data, results = tmp_path / "data", tmp_path / "results"
    if not data.exists():
        write_data_root(data)
        results.mkdir()
    for distribution, curves in (("N", n_curves), ("TN", tn_curves)):
        for seed, curve in enumerate(curves):
            run = write_run(results, data, curve, distribution=distribution, seed=seed, steps=50 * len(curve),
                            **setting)
            write_metrics(run, mse=curve[-1], nll=1.0)
    return results


def test_a_point_is_the_paired_interval_of_the_log_ratios_of_the_best_validation_mse_so_far(tmp_path):
    rng = np.random.default_rng(0)
    n_curves = [list(10.0 * rng.uniform(0.5, 1.5, 16)) for _ in range(5)]
    tn_curves = [list(5.0 * rng.uniform(0.5, 1.5, 16)) for _ in range(5)]
    rows = convergence_rows(_cell(tmp_path, n_curves, tn_curves), "lmcut")
    # 16 validations every 50 steps to 800: 50 (a sixteenth), 100, 200, 400, 800
    assert [r["step"] for r in rows] == [50, 100, 200, 400, 800]
    for row in rows:
        upto = row["step"] // 50
        best_n = [min(c[:upto]) for c in n_curves]
        best_tn = [min(c[:upto]) for c in tn_curves]
        logs = np.log(np.array(best_tn) / np.array(best_n))
        low, high = stats.t.interval(0.95, len(logs) - 1, loc=logs.mean(), scale=stats.sem(logs))
        assert row["ratio"] == pytest.approx(math.exp(logs.mean()), rel=1e-12)
        assert (row["low"], row["high"]) == pytest.approx((math.exp(low), math.exp(high)), rel=1e-9)
        assert row["p"] == pytest.approx(stats.ttest_1samp(logs, 0.0).pvalue, rel=1e-9)
        assert row["n_val_mse"] == pytest.approx(stats.gmean(best_n), rel=1e-12)
        assert row["tn_val_mse"] == pytest.approx(stats.gmean(best_tn), rel=1e-12)
        assert row["verdict"] == ("lower" if high < 0 else "higher" if low > 0 else "within noise")
    # Holm's correction over the file's points, its own family
    assert [r["p_holm"] for r in rows] == pytest.approx(holm_adjusted([r["p"] for r in rows]))
    assert all(r["verdict_holm"] == (r["verdict"] if r["p_holm"] < 0.05 else "within noise") for r in rows)


def test_a_run_still_training_or_a_cell_without_both_distributions_is_not_compared(tmp_path):
    falling = [[10.0 - i for i in range(8)] for _ in range(3)]
    results = _cell(tmp_path, falling, [[c * 0.5 for c in curve] for curve in falling])
    (results / next(p.name for p in results.iterdir() if p.name.endswith("-TN-learn-ff-llmcut-s2"))
     / "metrics-test.json").unlink()  # seed 2's TN run still training: its pair leaves
    _cell(tmp_path, [], falling, domain="blocksworld", sigma="fixed", residual="none")  # TN alone
    rows = convergence_rows(results, "lmcut")
    assert {(r["sigma"], r["residual"]) for r in rows} == {("learn", "ff")}
    assert all(r["seeds"] == 2 and r["verdict"] == "not testable at 2 seeds" and r["low"] is None for r in rows)
    assert all(r["ratio"] == pytest.approx(0.5) for r in rows)


def test_the_written_table_and_csv_hold_every_point(tmp_path):
    rng = np.random.default_rng(1)
    results = _cell(tmp_path, [list(rng.uniform(8, 12, 8)) for _ in range(4)],
                    [list(rng.uniform(2, 4, 8)) for _ in range(4)])
    rows = convergence_rows(results, "lmcut")
    markdown, table = write_convergence(results, tmp_path / "report", "lmcut")
    text = markdown.read_text()
    assert text.count("| blocksworld | learn/ff |") == len(rows) == 4  # steps 50, 100, 200, 400 of 8 validations
    assert f"TN's best validation MSE so far is lower than N's at {len(rows)}" in text
    with open(table, newline="") as f:
        written = list(csv.DictReader(f))
    assert [float(r["ratio"]) for r in written] == [r["ratio"] for r in rows]
    assert [r["verdict_holm"] for r in written] == [r["verdict_holm"] for r in rows]
