"""Per-seed values and paired comparisons: the interval against scipy's paired t-test, the noise-aware bold rule,
and the tables switching to it where every cell has enough seeds."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from tnlib.experiments.seed_statistics import (PAIRED_BOLD_RULE, paired_best, paired_differences, paired_interval,
                                               render_paired)
from tnlib.experiments.tables import render_table


def test_the_paired_interval_is_the_t_interval_of_the_differences():
    a, b = np.array([3.1, 2.9, 3.4, 3.0, 3.3]), np.array([3.5, 3.2, 3.3, 3.6, 3.9])
    interval = paired_interval(list(a - b))
    assert interval["p"] == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-12)
    low, high = stats.t.interval(0.95, 4, loc=(a - b).mean(), scale=stats.sem(a - b))
    assert (interval["low"], interval["high"]) == (pytest.approx(low, rel=1e-12), pytest.approx(high, rel=1e-12))
    assert paired_interval([0.1, 0.2]) is None  # two seeds say nothing


def test_bold_needs_every_paired_interval_to_exclude_zero():
    seeds = range(5)
    tn = {s: 1.0 + 0.01 * s for s in seeds}
    n = {s: 1.5 + 0.02 * s for s in seeds}
    noisy = {s: 1.0 + (0.5 if s % 2 else -0.45) for s in seeds}  # a lower mean, but not on every seed
    assert paired_best({"TN": tn, "N": n}) == {"TN"}
    assert paired_best({"TN": tn, "N": n}, lower_is_better=False) == {"N"}
    assert paired_best({"TN": tn, "N": n, "N+clip": noisy}) == set()
    assert paired_best({"TN": {0: 1.0, 1: 1.1}, "N": {0: 2.0, 1: 2.1}}) == set()  # two seeds: never bold
    # N and N+clip equal on every seed: both bold when they beat the third
    assert paired_best({"N": n, "N+clip": dict(n), "TN": {s: v + 1 for s, v in n.items()}}) == {"N", "N+clip"}


def fake_results(seeds, tn_shift):
    rows = []
    for seed in seeds:
        for distribution, mse in (("N", 2.0 + 0.1 * seed), ("TN", 2.0 + 0.1 * seed + tn_shift)):
            rows.append({"domain": "ferry", "model": "nlm", "lower_bound": "lmcut", "sigma": "learn",
                         "residual": "ff", "distribution": distribution, "seed": seed, "mse": mse,
                         "mse_clip": mse + 0.05, "nll": 1.0, "mse_ff": 3.0, "mse_lmcut": 4.0, "config": {}})
    return rows


def test_tables_bold_by_the_paired_rule_with_enough_seeds():
    five = render_table(fake_results(range(5), -0.3), configs=(("learn", "ff"),))
    assert "**1.90±.2**" in five  # TN, 0.3 below N on every seed
    two = render_table(fake_results(range(2), -0.3), configs=(("learn", "ff"),))
    assert "**1.75±.1**" in two  # two seeds: the paper's gap rule still decides
    same = render_table(fake_results(range(5), 0.0), configs=(("learn", "ff"),))
    assert "| **2.20±.2** | **2.20±.2** |" in same  # N and TN equal on every seed, both beat N+clip
    shuffled = fake_results(range(5), 0.0)
    for r in shuffled:  # TN lower on average, but not seed by seed
        if r["distribution"] == "TN":
            r["mse"] += 0.2 if r["seed"] % 2 else -0.4
    assert "**" not in render_table(shuffled, configs=(("learn", "ff"),)).split("\n")[2]


def test_the_paired_table_marks_what_the_interval_decides():
    values = {("ferry", "learn", "ff", "TN"): {s: 1.0 + 0.01 * s for s in range(4)},
              ("ferry", "learn", "ff", "N"): {s: 1.3 + 0.01 * s for s in range(4)}}
    text = render_paired(paired_differences(values), "test MSE")
    assert "| ferry | learn/ff | -0.3 [-0.3, -0.3], p 0, n 4 **better** |" in text
    assert "95% t-interval" in text and "at least 3 seeds" in PAIRED_BOLD_RULE
    assert render_paired(paired_differences({k: {0: v[0], 1: v[1]} for k, v in values.items()}), "MSE") == ""
