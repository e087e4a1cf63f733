"""The paper's Figure 2 counted: TN's best validation MSE so far over N's, paired by seed, part-way and at the end."""
from __future__ import annotations

import csv
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from fixtures.run_folders import write_data_root, write_metrics, write_run
from tnlib.experiments.reporting.convergence import (END, cell_readings, compared_steps, convergence_rows,
                                                     convergence_section, write_convergence)
from tnlib.experiments.reporting.seed_statistics import holm_adjusted


def test_compared_steps_are_the_latest_common_steps_at_each_fraction_of_the_last_common_one():
    long = {step: 1.0 for step in range(50, 801, 50)}
    short = {step: 1.0 for step in range(50, 601, 50)}
    # the last common step is 600: a sixteenth (37.5) holds no step, an eighth (75) holds 50, then 150, 300, 600
    assert compared_steps([long, short]) == [(Fraction(1, 8), 50), (Fraction(1, 4), 150), (Fraction(1, 2), 300),
                                             (Fraction(1), 600)]
    assert compared_steps([{100: 1.0}, {200: 1.0}]) == []  # no step in common


def _cell(tmp_path, n_curves, tn_curves, eval_every=50, **setting):
    data, results = tmp_path / "data", tmp_path / "results"
    if not data.exists():
        write_data_root(data)
        results.mkdir()
    for distribution, curves in (("N", n_curves), ("TN", tn_curves)):
        for seed, curve in enumerate(curves):
            run = write_run(results, data, curve, distribution=distribution, seed=seed,
                            steps=eval_every * len(curve), eval_every=eval_every, **setting)
            write_metrics(run, mse=1.0, nll=1.0)
    return results


def _expected(best_n, best_tn):
    logs = np.log(np.array(best_tn) / np.array(best_n))
    low, high = stats.t.interval(0.95, len(logs) - 1, loc=logs.mean(), scale=stats.sem(logs))
    return math.exp(logs.mean()), math.exp(low), math.exp(high), stats.ttest_1samp(logs, 0.0).pvalue


def test_a_point_is_the_paired_interval_of_the_log_ratios_of_the_best_validation_mse_so_far(tmp_path):
    rng = np.random.default_rng(0)
    n_curves = [list(10.0 * rng.uniform(0.5, 1.5, 16)) for _ in range(5)]
    tn_curves = [list(5.0 * rng.uniform(0.5, 1.5, 16)) for _ in range(5)]
    rows = convergence_rows(_cell(tmp_path, n_curves, tn_curves), "lmcut")
    # 16 validations every 50 steps to 800: 50 (a sixteenth), 100, 200, 400, 800; every run stopped at 800: no end
    assert [(r["point"], r["step"]) for r in rows] == [("1/16", 50), ("1/8", 100), ("1/4", 200), ("1/2", 400),
                                                       ("1", 800)]
    for row in rows:
        upto = row["step"] // 50
        best_n, best_tn = [min(c[:upto]) for c in n_curves], [min(c[:upto]) for c in tn_curves]
        ratio, low, high, p = _expected(best_n, best_tn)
        assert row["ratio"] == pytest.approx(ratio, rel=1e-12)
        assert (row["low"], row["high"], row["p"]) == pytest.approx((low, high, p), rel=1e-9)
        assert (row["n_val_mse"], row["tn_val_mse"]) == pytest.approx((stats.gmean(best_n), stats.gmean(best_tn)))
        assert row["verdict"] == ("lower" if high < 1 else "higher" if low > 1 else "within noise")
    # Holm's correction over the file's points, its own family
    assert [r["p_holm"] for r in rows] == pytest.approx(holm_adjusted([r["p"] for r in rows]))
    assert all(r["verdict_holm"] == (r["verdict"] if r["p_holm"] < 0.05 else "within noise") for r in rows)


def test_runs_trained_on_past_the_common_steps_are_compared_at_their_end_by_the_best_they_kept(tmp_path):
    # N trains on: seed s to 8 + 4 s validations, falling on to 1 + s / 10; TN stops at 8, flat at 2
    n_curves = [[10.0 - 9.0 * i / (7 + 4 * s) - s / 10 for i in range(8 + 4 * s)] for s in range(3)]
    tn_curves = [[4.0, 3.0] + [2.0 + s / 100] * 6 for s in range(3)]
    rows = convergence_rows(_cell(tmp_path, n_curves, tn_curves), "lmcut")
    assert [r["point"] for r in rows] == ["1/8", "1/4", "1/2", "1", END]
    end = rows[-1]
    assert end["step"] == 50 * 16 and end["seeds"] == 3
    ratio, low, high, _ = _expected([c[-1] for c in n_curves], [c[-1] for c in tn_curves])
    assert (end["ratio"], end["low"], end["high"]) == pytest.approx((ratio, low, high), rel=1e-9)
    assert end["ratio"] > 1 > rows[-2]["ratio"]  # TN got there first; N, trained on, ended lower


def test_a_seed_with_a_zero_or_diverged_value_is_left_out_of_that_point_only(tmp_path):
    n_curves = [[8.0, 4.0, 2.0, 1.0] for _ in range(4)]
    tn_curves = [[4.0, 2.0, 1.0, 0.5] for _ in range(4)]
    n_curves[1][0] = math.inf  # seed 1's N diverged at its first validation, recovered by its second
    tn_curves[2][:2] = [0.0, 0.0]  # seed 2's TN fits its validation states exactly from the start
    rows = convergence_rows(_cell(tmp_path, n_curves, tn_curves, eval_every=100), "lmcut")
    # (a sixteenth and an eighth of 400 hold no step; seed 2's TN stays at 0, its best so far, to the end)
    assert [(r["step"], r["seeds"]) for r in rows] == [(100, 2), (200, 3), (400, 3)]
    assert all(r["ratio"] == pytest.approx(0.5) and r["verdict"] in ("lower", "not testable at 2 seeds") for r in rows)


def test_only_finished_runs_of_the_lower_bound_with_both_distributions_are_compared_in_the_tables_order(tmp_path):
    falling = [[10.0 - i for i in range(8)] for _ in range(3)]
    half = [[v / 2 for v in curve] for curve in falling]
    results = _cell(tmp_path, falling, half, domain="gripper")
    _cell(tmp_path, falling, half, domain="blocksworld", sigma="fixed", residual="none")
    _cell(tmp_path, falling, half, domain="blocksworld")
    _cell(tmp_path, [], falling, domain="ferry")  # TN alone
    _cell(tmp_path, falling, half, domain="visitall", lower_bound="hmax")  # another bound
    next(results.glob("gripper-*-TN-*-s2")).joinpath("metrics-test.json").unlink()  # still training
    rows = convergence_rows(results, "lmcut")
    order = list(dict.fromkeys((r["domain"], r["sigma"], r["residual"]) for r in rows))
    assert order == [("blocksworld", "learn", "ff"), ("blocksworld", "fixed", "none"), ("gripper", "learn", "ff")]
    assert {r["seeds"] for r in rows if r["domain"] == "gripper"} == {2}
    assert all(r["ratio"] == pytest.approx(0.5) for r in rows)
    # one Holm family over both blocksworld cells' points (gripper's, at 2 seeds, have no interval)
    tested = [r for r in rows if r["p"] is not None]
    assert len(tested) == 8 and [r["p_holm"] for r in tested] == pytest.approx(holm_adjusted([r["p"] for r in tested]))


def test_a_cells_reading_is_lower_part_way_and_at_its_end_or_caught_up():
    def cell(domain, *verdicts):
        return [{"model": "nlm", "domain": domain, "sigma": "learn", "residual": "ff", "verdict": v,
                 "verdict_holm": "within noise"} for v in verdicts]

    rows = (cell("ferry", "lower", "within noise", "within noise") + cell("gripper", "within noise", "lower")
            + cell("visitall", "lower", "lower") + cell("blocksworld", "higher", "within noise"))
    assert cell_readings(rows) == {"cells": 4, "lower_before": 2, "higher_before": 1, "lower_end": 2,
                                   "higher_end": 0, "caught_up": 1}
    assert cell_readings(rows, "verdict_holm")["lower_before"] == 0


def test_the_written_table_and_csv_hold_every_point(tmp_path):
    rng = np.random.default_rng(1)
    results = _cell(tmp_path, [list(rng.uniform(8, 12, 8)) for _ in range(4)],
                    [list(rng.uniform(2, 4, 8)) for _ in range(4)])
    rows = convergence_rows(results, "lmcut")
    markdown, table = write_convergence(results, tmp_path / "report", "lmcut")
    text = markdown.read_text()
    assert text.count("| blocksworld | learn/ff |") == len(rows) == 4  # steps 50, 100, 200, 400 of 8 validations
    assert "Of 1 cell, TN's best validation MSE so far is below N's at some point before the end in 1" in text
    with open(table, newline="") as f:
        written = list(csv.DictReader(f))
    assert [float(r["ratio"]) for r in written] == [r["ratio"] for r in rows]
    assert [r["verdict_holm"] for r in written] == [r["verdict_holm"] for r in rows]
    assert [r["point"] for r in written] == ["1/8", "1/4", "1/2", "1"]


def test_the_notebooks_section_is_the_written_page_below_its_title(tmp_path):
    rng = np.random.default_rng(2)
    results = _cell(tmp_path, [list(rng.uniform(8, 12, 8)) for _ in range(3)],
                    [list(rng.uniform(2, 4, 8)) for _ in range(3)])
    page = write_convergence(results, tmp_path / "report", "lmcut")[0].read_text()
    section = convergence_section(results)
    title, body = page.split("\n", 1)
    assert title.startswith("# Convergence") and not section.startswith("#")
    assert "| blocksworld | learn/ff |" in section and section.count("\n") == body.lstrip("\n").count("\n")
    assert section.replace("the convergence.csv that `tnlib report` writes", "convergence.csv").replace(
        "points of this section", "points of this file") == body.lstrip("\n")
    assert "points of this section" in section and "p_holm` in the convergence.csv that `tnlib report`" in section

