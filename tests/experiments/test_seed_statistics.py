"""Per-seed values and paired comparisons: the interval against scipy's paired t-test, the noise-aware bold rule,
and the tables switching to it where every cell has enough seeds."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from tnlib.experiments.reporting.seed_statistics import (FEW_SEEDS_BOLD_RULE, PAIRED_BOLD_RULE, PAIRED_MIN_SEEDS,
                                               interval_count, multiplicity_note, paired_best, paired_differences,
                                               paired_interval, render_paired)
from tnlib.experiments.reporting.tables import render_table


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


def test_columns_tied_on_every_seed_bold_nothing():
    full = {s: 1.0 for s in range(5)}  # every run solved every instance: coverage 1.00 in all three columns
    assert paired_best({"N": full, "N+clip": dict(full), "TN": dict(full)}, lower_is_better=False) == set()
    assert paired_best({"N": full, "TN": dict(full)}) == set()
    # a tie of two that beats the third is still a finding
    assert paired_best({"N": full, "N+clip": dict(full), "TN": {s: 0.5 + 0.01 * s for s in range(5)}},
                       lower_is_better=False) == {"N", "N+clip"}


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
    assert "1.75±.1" in two and "**" not in two  # two seeds: too few to tell, nothing bold (not the paper's gap)
    same = render_table(fake_results(range(5), 0.0), configs=(("learn", "ff"),))
    assert "| **2.20±.2** | **2.20±.2** |" in same  # N and TN equal on every seed, both beat N+clip
    shuffled = fake_results(range(5), 0.0)
    for r in shuffled:  # TN lower on average, but not seed by seed
        if r["distribution"] == "TN":
            r["mse"] += 0.2 if r["seed"] % 2 else -0.4
    assert "**" not in render_table(shuffled, configs=(("learn", "ff"),)).split("\n")[2]


def test_the_rule_a_table_states_is_the_rule_it_bolds_by():
    from tnlib.experiments.reporting.tables import TABLE1_BOLD_RULE, TABLE2_BOLD_RULE, table1_bold_rule, table2_bold_rule

    assert table1_bold_rule(fake_results(range(5), -0.3)) == PAIRED_BOLD_RULE
    assert table1_bold_rule(fake_results(range(2), -0.3)) == FEW_SEEDS_BOLD_RULE != TABLE1_BOLD_RULE
    plans = [{"domain": "ferry", "model": "nlm", "lower_bound": "lmcut", "sigma": "learn", "residual": "ff",
              "column": column, "seed": seed, "coverage": 1.0, "evaluations": 100.0}
             for seed in range(3) for column in ("N", "N+clip", "TN")]
    assert table2_bold_rule(plans) == PAIRED_BOLD_RULE
    assert table2_bold_rule([r for r in plans if r["seed"] < 2]) == FEW_SEEDS_BOLD_RULE != TABLE2_BOLD_RULE
    assert table2_bold_rule(plans, model="hgn") == FEW_SEEDS_BOLD_RULE  # no runs of that model: nothing paired
    assert f"fewer than the {PAIRED_MIN_SEEDS} seeds" in FEW_SEEDS_BOLD_RULE and "Nothing is bold" in FEW_SEEDS_BOLD_RULE


def test_a_table2_of_two_seeds_bolds_nothing(tmp_path):
    from tnlib.experiments.reporting.tables import render_table2

    plans = [{"domain": "ferry", "model": "nlm", "lower_bound": "lmcut", "sigma": "learn", "residual": "ff",
              "column": column, "seed": seed, "coverage": {"N": 0.5, "N+clip": 0.6, "TN": 0.9}[column],
              "evaluations": 100.0, "instances": 10, "protocols": [], "max_evaluations": 10_000,
              "config": {"seed": seed}}
             for seed in range(2) for column in ("N", "N+clip", "TN")]
    table = render_table2(plans, configs=(("learn", "ff"),), baseline_dir=tmp_path, split="plan")
    assert "0.90±0.00" in table and "**" not in table.replace("**Ratio", "").replace("**Average", "").replace(
        "(higher is better)**", "").replace("(lower is better)**", "")
    three = plans + [dict(r, seed=2, config={"seed": 2}) for r in plans if r["seed"] == 0]
    assert "**0.90±0.00**" in render_table2(three, configs=(("learn", "ff"),), baseline_dir=tmp_path, split="plan")


def test_a_report_says_how_many_paired_comparisons_it_makes_uncorrected():
    values = {("ferry", "learn", "ff", c): {s: v + 0.01 * s for s in range(4)}
              for c, v in (("TN", 1.0), ("N", 1.3), ("N+clip", 1.2))}
    values[("gripper", "learn", "ff", "TN")] = {0: 1.0, 1: 2.0}  # two seeds: no interval
    values[("gripper", "learn", "ff", "N")] = {0: 1.0, 1: 2.0}
    assert interval_count(paired_differences(values)) == 2
    note = multiplicity_note(2)
    assert "2 comparisons" in note and "not corrected for multiplicity" in note and "0.1 of them" in note
    assert "no paired comparison" in multiplicity_note(0)


def test_the_paired_table_marks_what_the_interval_decides():
    values = {("ferry", "learn", "ff", "TN"): {s: 1.0 + 0.01 * s for s in range(4)},
              ("ferry", "learn", "ff", "N"): {s: 1.3 + 0.01 * s for s in range(4)}}
    text = render_paired(paired_differences(values), "test MSE")
    assert "| ferry | learn/ff | -0.3 [-0.3, -0.3], p 0, n 4 **better** |" in text
    assert "95% t-interval" in text and "at least 3 seeds" in PAIRED_BOLD_RULE
    assert render_paired(paired_differences({k: {0: v[0], 1: v[1]} for k, v in values.items()}), "MSE") == ""


def test_the_intervals_figure_draws_each_paired_interval_in_the_colour_of_its_verdict():
    """One dot and bar per configuration and comparison, coloured by what the interval says (TN better / worse /
    within noise, NLL's comparison against N only); a domain without three seeds anywhere is named, not drawn."""
    from tnlib.experiments.reporting.report_figures import VERDICT_STYLES, paired_intervals_figure, verdict

    seeds = range(4)
    values = {("ferry", "learn", "ff", "TN"): {s: 1.0 + 0.01 * s for s in seeds},
              ("ferry", "learn", "ff", "N"): {s: 1.3 + 0.01 * s for s in seeds},
              ("ferry", "learn", "ff", "N+clip"): {s: 1.0 + (0.1 if s % 2 else -0.1) for s in seeds},
              ("ferry", "fixed", "none", "TN"): {s: 2.0 + 0.01 * s for s in seeds},
              ("ferry", "fixed", "none", "N"): {s: 1.5 + 0.02 * s for s in seeds},
              ("visitall", "learn", "ff", "TN"): {0: 1.0, 1: 1.1}, ("visitall", "learn", "ff", "N"): {0: 2.0, 1: 2.1}}
    mse = paired_differences(values)
    nll = paired_differences(values, comparisons=(("TN", "N"),))
    figure = paired_intervals_figure([("test MSE", mse, True), ("test NLL", nll, True)], "a title")
    drawn = {(trace.xaxis, trace.y[0]): trace for trace in figure.data}
    assert sorted(drawn) == [("x", "fixed/none: TN - N"), ("x", "learn/ff: TN - N"), ("x", "learn/ff: TN - N+clip"),
                             ("x2", "fixed/none: TN - N"), ("x2", "learn/ff: TN - N")]
    better = drawn[("x", "learn/ff: TN - N")]
    interval = mse[("ferry", "learn", "ff")][("TN", "N")]
    assert better.x[0] == pytest.approx(-0.3) and better.marker.color == VERDICT_STYLES["TN better"]["color"]
    assert better.error_x.array[0] == pytest.approx(interval["high"] - interval["mean"])
    assert better.error_x.arrayminus[0] == pytest.approx(interval["mean"] - interval["low"])
    assert drawn[("x", "fixed/none: TN - N")].marker.color == VERDICT_STYLES["TN worse"]["color"]
    assert drawn[("x", "learn/ff: TN - N+clip")].marker.symbol == VERDICT_STYLES["within noise"]["symbol"]
    assert [a.text for a in figure.layout.annotations][:2] == ["ferry: test MSE", "ferry: test NLL"]
    assert "not shown, fewer than 3 seeds: visitall" in figure.layout.title.text
    assert sum(trace.showlegend for trace in figure.data) == 3  # one legend entry per verdict
    assert verdict({"low": 0.1, "high": 0.2}, lower_is_better=False) == "TN better"
    assert verdict({"low": -0.1, "high": 0.2}) == "within noise"


def test_the_intervals_figure_leaves_each_panels_row_labels_room_before_it():
    """Each panel's row labels sit in the gutter to its left: the left margin and the gap between two panels are
    at least as wide as the longest label drawn, at plotly's default font; five panels still fit a laptop's width
    only with their titles in a smaller font."""
    from tnlib.experiments.reporting.report_figures import LABEL_CHARACTER_PX, paired_intervals_figure

    values = {("ferry", sigma, residual, column): {s: 1.0 + 0.1 * s + (0.3 if column == "N" else 0) for s in range(4)}
              for sigma, residual in (("learn", "none"), ("fixed", "none")) for column in ("TN", "N", "N+clip")}
    mse = paired_differences(values)
    for count in (3, 5):
        figure = paired_intervals_figure([(f"metric {k}", mse, True) for k in range(count)], "a title")
        longest = max(len(y) for trace in figure.data for y in trace.y)
        assert longest == len("learn/none: TN - N+clip")
        layout = figure.layout
        plot_width = layout.width - layout.margin.l - layout.margin.r
        assert layout.margin.l >= LABEL_CHARACTER_PX * longest
        axes = [layout[f"xaxis{'' if k == 1 else k}"].domain for k in range(1, count + 1)]
        assert all((right[0] - left[1]) * plot_width >= LABEL_CHARACTER_PX * longest
                   for left, right in zip(axes, axes[1:]))
        assert {a.font.size for a in layout.annotations} == ({13} if count == 3 else {11})


def test_per_seed_csv_reads_back_as_the_tables_values(tmp_path):
    """read_seed_values inverts the report's accuracy-seeds.csv: the same values table1_seed_values gives."""
    from tnlib.experiments.reporting.reports import accuracy_seed_rows
    from tnlib.experiments.reporting.seed_statistics import read_seed_values, write_seed_csv
    from tnlib.experiments.reporting.tables import table1_seed_values

    results = fake_results(range(4), -0.3)
    for r in results:
        r["config"] = {"steps": 600}
    path = write_seed_csv(accuracy_seed_rows(results), tmp_path / "accuracy-seeds.csv")
    assert read_seed_values(path, "nlm") == table1_seed_values(results)
    assert read_seed_values(path, "linear") == {}
    assert read_seed_values(path, "nlm", "nll") == table1_seed_values(results, metric="nll")


def test_the_papers_directions_for_one_set_of_runs_say_where_they_hold_and_where_they_are_reversed():
    """render_paper_directions with one set of runs: against the appendix's linear table, a direction the runs
    show (holds), the opposite one (reversed), none beyond noise (not shown), or none in the paper."""
    from tnlib.experiments.reporting.paper_directions import render_paper_directions
    from tnlib.paper import DOMAINS, PAPER_TABLE1, PAPER_TABLE1_LINEAR, TABLE1_CONFIGS

    assert PAPER_TABLE1["linear"] is PAPER_TABLE1_LINEAR and set(PAPER_TABLE1) == {"nlm", "linear", "hgn"}
    for table in PAPER_TABLE1.values():  # every cell of each appendix table, in the same layout
        assert list(table) == list(DOMAINS)
        for row in table.values():
            assert {k for k in row if isinstance(k, tuple)} == {(s, r, c) for s, r in TABLE1_CONFIGS
                                                                 for c in ("N", "N+clip", "TN")}
            assert all(v[0] > 0 and v[1] >= 0 for k, v in row.items() if isinstance(k, tuple))
    seeds = range(5)
    values = {  # ferry fixed/ff (the paper: N 1.0, TN 8.5): N lower here too; learn/ff (N 1.3, TN 3.1): TN lower here
        ("ferry", "fixed", "ff", "N"): {s: 0.5 + 0.01 * s for s in seeds},
        ("ferry", "fixed", "ff", "TN"): {s: 0.8 + 0.01 * s for s in seeds},
        ("ferry", "learn", "ff", "N"): {s: 0.8 + 0.01 * s for s in seeds},
        ("ferry", "learn", "ff", "TN"): {s: 0.7 + 0.01 * s for s in seeds},
        # visitall learn/ff (TN 5.0 against N 6.6): the same here, but on average only
        ("visitall", "learn", "ff", "N"): {s: 3.0 for s in seeds},
        ("visitall", "learn", "ff", "TN"): {s: 2.5 + (1.0 if s % 2 else -0.5) for s in seeds},
    }
    text = render_paper_directions([values], ["these runs"], "linear", [("learn", "ff"), ("fixed", "ff")])
    verdicts = {tuple(c.strip() for c in line.split("|")[1:4]): line.split("|")[-2].strip()
                for line in text.splitlines()[2:] if line.startswith("| ")}
    assert verdicts[("ferry", "fixed/ff", "TN vs N")] == "holds"
    assert verdicts[("ferry", "learn/ff", "TN vs N")] == "reversed"
    assert verdicts[("visitall", "learn/ff", "TN vs N")] == "not shown (within noise)"
    assert verdicts[("gripper", "learn/ff", "TN vs N")] == "the paper has none"  # .7±.3 against .5±.2
    assert verdicts[("blocksworld", "fixed/ff", "TN vs N")] == "not run"
    with pytest.raises(ValueError, match="not transcribed"):
        render_paper_directions([values], ["x"], "wl")  # beyond the paper: no table to set it against


def test_holms_adjusted_p_values_by_hand():
    from tnlib.experiments.reporting.seed_statistics import holm_adjusted

    # sorted 0.005, 0.01, 0.03, 0.04 of four: 4 x 0.005, 3 x 0.01, max(0.03, 2 x 0.03), max(0.06, 1 x 0.04)
    assert holm_adjusted([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_adjusted([0.6, 0.9]) == [1.0, 1.0] and holm_adjusted([]) == []


def test_holms_adjusted_p_values_reject_as_the_step_down_rule_does():
    """Below alpha exactly where the step-down rule rejects: the i-th smallest p (from 0) of m, and every smaller
    one, under alpha / (m - j); never below the p-value itself, and in the p-values' order."""
    import random

    from tnlib.experiments.reporting.seed_statistics import holm_adjusted

    generator = random.Random(7)
    for _ in range(200):
        m = generator.randint(1, 12)
        p = [generator.choice([generator.random() * 0.02, generator.random()]) for _ in range(m)]
        alpha = generator.choice([0.05, 0.01])
        order = sorted(range(m), key=lambda i: p[i])
        rejected, passing = set(), True
        for j, index in enumerate(order):
            passing = passing and p[index] < alpha / (m - j)
            if passing:
                rejected.add(index)
        adjusted = holm_adjusted(p)
        assert {i for i in range(m) if adjusted[i] < alpha} == rejected
        assert all(a >= q for a, q in zip(adjusted, p))
        assert [adjusted[i] for i in order] == sorted(adjusted[i] for i in order)


def test_a_csv_that_is_no_reports_per_seed_csv_is_named_with_the_columns_it_lacks(tmp_path, capsys):
    from tnlib.cli import main
    from tnlib.experiments.reporting.seed_statistics import read_seed_csv, write_seed_csv

    report = tmp_path / "report"
    report.mkdir()
    (report / "accuracy.md").write_text("# a report\n")
    (report / "accuracy-seeds.csv").write_text("domain,seed,mse\nferry,0,1.5\n")  # edited by hand
    with pytest.raises(ValueError, match="not a report's per-seed CSV .*lacks the columns model, sigma, residual, "
                                         "lower_bound, column"):
        read_seed_csv(report / "accuracy-seeds.csv")
    for command in ("findings", "intervals"):
        assert main([command, str(report)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"tnlib {command}: error: ") and "lacks the columns" in err and "Traceback" not in err
    assert read_seed_csv(tmp_path / "missing.csv") == []
    assert read_seed_csv(write_seed_csv([], tmp_path / "empty.csv")) == []  # a report with no such rows
