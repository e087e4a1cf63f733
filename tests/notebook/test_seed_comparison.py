"""tnlib.notebook.seed_comparison: section 8d, how many seeds a claim needs, on the committed per-seed values,
the three rules against scipy."""
from __future__ import annotations

import csv
import re

import numpy as np
import pytest
import scipy.stats

from tnlib.notebook import seed_comparison


def test_seed_values_are_the_committed_csv_rows_of_the_cell():
    import csv

    values = seed_comparison.committed_seed_values("converged/nlm5", "ferry learn/ff")
    with seed_comparison.seed_values_path("converged/nlm5").open(newline="") as handle:
        every_row = list(csv.DictReader(handle))
    rows = [r for r in every_row if (r["domain"], r["sigma"], r["residual"]) == ("ferry", "learn", "ff") and r["mse"]]
    cells = sorted({f"{r['domain']} {r['sigma']}/{r['residual']}" for r in every_row})
    assert sorted(values) == ["N", "N+clip", "TN"] and sorted(values["TN"]) == [0, 1, 2, 3, 4]
    assert {(r["column"], int(r["seed"])): float(r["mse"]) for r in rows} == {
        (column, seed): value for column, by_seed in values.items() for seed, value in by_seed.items()}
    with pytest.raises(ValueError, match=re.escape(f"has no cell 'ferry learn-ff'; its cells: {', '.join(cells)}")):
        seed_comparison.committed_seed_values("converged/nlm5", "ferry learn-ff")
    with pytest.raises(ValueError, match="no per-seed values"):
        seed_comparison.committed_seed_values("converged/nlm", "ferry learn/ff")


def test_the_three_rules_as_seeds_arrive_against_scipy():
    """The gap rule, Welch's unpaired interval and the paired t-interval after the first 2, 3, ... seeds: the
    intervals are scipy's (Welch) and the reports' paired_interval from three seeds on."""
    from tnlib.experiments.reporting.seed_statistics import paired_interval

    values = {"TN": {0: 1.0, 1: 1.4, 2: 0.9, 3: 1.3}, "N": {0: 1.5, 1: 1.6, 2: 1.2, 3: 1.9}}
    rows = seed_comparison.seeds_as_they_arrive(values)
    assert [row.seeds for row in rows] == [(0, 1), (0, 1, 2), (0, 1, 2, 3)]
    for row in rows:
        x = np.array([values["TN"][s] for s in row.seeds])
        y = np.array([values["N"][s] for s in row.seeds])
        welch = scipy.stats.ttest_ind(x, y, equal_var=False).confidence_interval(0.95)
        assert row.welch == (pytest.approx(welch.low, rel=1e-12), pytest.approx(welch.high, rel=1e-12))
        assert row.gap_rule == (abs(x.mean() - y.mean()) > x.std(ddof=1) + y.std(ddof=1))
        low, high = scipy.stats.t.interval(0.95, len(x) - 1, loc=(x - y).mean(), scale=scipy.stats.sem(x - y))
        assert row.paired == (pytest.approx(low, rel=1e-12), pytest.approx(high, rel=1e-12))
        if len(row.seeds) >= 3:
            reports = paired_interval(list(x - y))
            assert row.paired == (pytest.approx(reports["low"], rel=1e-12), pytest.approx(reports["high"], rel=1e-12))
            assert row.correlation == pytest.approx(np.corrcoef(x, y)[0, 1], rel=1e-12)
    assert rows[0].correlation is None  # two points always lie on a line
    with pytest.raises(ValueError, match="share 1 seed"):
        seed_comparison.seeds_as_they_arrive({"TN": {0: 1.0}, "N": {0: 2.0, 1: 2.0}})


def test_section_8d_default_cell_is_a_two_seed_claim_that_five_seeds_do_not_carry():
    """What the notebook's prose and exercise 11 say of the default cell (NLM, ferry learn/ff)."""
    rows = seed_comparison.seeds_as_they_arrive(
        seed_comparison.committed_seed_values("converged/nlm5", "ferry learn/ff"))
    two, five = rows[0], rows[-1]
    assert two.gap_rule and two.mean_a < two.mean_b  # the gap rule: "TN lower" at two seeds
    assert (round(two.mean_a, 2), round(two.mean_b, 2)) == (1.11, 1.70)
    assert all(row.paired[0] < 0 < row.paired[1] and row.welch[0] < 0 < row.welch[1] for row in rows)
    assert not any(row.gap_rule for row in rows[1:])
    assert (round(five.paired[0], 2), round(five.paired[1], 2)) == (-0.70, 0.26)
    assert round(five.correlation, 2) == -0.84
    # pairing with negatively correlated seeds: the paired interval is the wider
    assert five.paired[1] - five.paired[0] > five.welch[1] - five.welch[0]
    table = seed_comparison.format_seeds_as_they_arrive(rows)
    assert table.splitlines()[1].startswith("0,1") and "[-0.70, +0.26] holds 0" in table.splitlines()[-1]


def _verdict(interval):
    return "holds 0" if interval[0] <= 0 <= interval[1] else "TN lower" if interval[1] < 0 else "N lower"


def test_section_8d_cells_where_welch_and_the_paired_interval_disagree_as_its_prose_says():
    """converged/linear: in visitall learn/none Welch says TN lower at every count while the paired interval holds 0
    at three and four seeds; in blocksworld fixed/ff the paired interval says N lower at three and four seeds (the
    seeds moving together) while Welch holds 0, and at five both hold 0."""
    visitall = seed_comparison.seeds_as_they_arrive(
        seed_comparison.committed_seed_values("converged/linear", "visitall learn/none"))
    assert [_verdict(row.welch) for row in visitall] == ["TN lower"] * 4
    assert [_verdict(row.paired) for row in visitall[1:3]] == ["holds 0"] * 2
    assert [round(row.correlation, 2) for row in visitall[1:3]] == [-0.65, -0.27]
    blocksworld = seed_comparison.seeds_as_they_arrive(
        seed_comparison.committed_seed_values("converged/linear", "blocksworld fixed/ff"))
    assert [(_verdict(row.paired), _verdict(row.welch)) for row in blocksworld[1:]] == [
        ("N lower", "holds 0"), ("N lower", "holds 0"), ("holds 0", "holds 0")]
    assert [round(row.correlation, 2) for row in blocksworld[1:]] == [0.98, 0.97, 0.06]


def test_section_8d_correlation_of_the_paired_runs_is_small_and_mostly_positive_and_near_one_in_a_few_cells():
    """The medians over each five-seed report's cells that section 8d quotes, and its cell where pairing pays."""
    medians = {}
    for report in ("converged/nlm5", "converged/linear", "converged/wl"):
        rows = list(csv.DictReader(seed_comparison.seed_values_path(report).open()))
        cells = sorted({f"{row['domain']} {row['sigma']}/{row['residual']}" for row in rows})
        correlations = [seed_comparison.seeds_as_they_arrive(seed_comparison.committed_seed_values(report, cell))[-1]
                        .correlation for cell in cells]
        medians[report] = round(float(np.median(correlations)), 2)
    assert medians == {"converged/nlm5": 0.08, "converged/linear": 0.24, "converged/wl": 0.21}
    wl = seed_comparison.seeds_as_they_arrive(seed_comparison.committed_seed_values("converged/wl", "gripper learn/ff"))[-1]
    assert round(wl.correlation, 2) == 0.95 and _verdict(wl.paired) == "TN lower" and _verdict(wl.welch) == "holds 0"
    assert 0.3 < (wl.paired[1] - wl.paired[0]) / (wl.welch[1] - wl.welch[0]) < 0.37  # "a third as wide"


def test_a_family_of_null_comparisons_claims_one_as_often_as_independence_says_and_holm_holds_it_at_5_percent():
    """Differences drawn with no real one: a comparison alone excludes 0 5% of the time, a family of ten at least
    once 1 - 0.95**10 = 40% of the time, and after Holm at most 5%; a family of one is Holm's alone."""
    families = 4000
    error = 4 * (0.05 * 0.95 / families) ** 0.5  # four binomial standard errors at 5%
    ten = seed_comparison.null_family_errors(10, families=families)
    assert ten.independent == pytest.approx(1 - 0.95 ** 10)
    assert abs(ten.per_comparison - 0.05) < error / 3  # 40,000 comparisons
    assert abs(ten.uncorrected - ten.independent) < 4 * (0.4 * 0.6 / families) ** 0.5
    assert ten.holm < 0.05 + error
    one = seed_comparison.null_family_errors(1, families=families, seed=1)
    assert one.holm == one.uncorrected == one.per_comparison and abs(one.per_comparison - 0.05) < error
    with pytest.raises(ValueError, match="at least 1 comparison, 2 seeds"):
        seed_comparison.null_family_errors(10, seeds=1)


def test_a_committed_reports_directions_split_as_holm_over_its_p_values_splits_them():
    import csv

    from tnlib.experiments.reporting.seed_statistics import holm_adjusted
    from tnlib.files import REPO_ROOT

    found = seed_comparison.committed_findings_after_holm("converged/nlm5")
    with (REPO_ROOT / "reports" / "converged" / "nlm5" / "findings.csv").open(newline="") as handle:
        tested = [r for r in csv.DictReader(handle) if r["p"]]
    adjusted = holm_adjusted([float(r["p"]) for r in tested])
    mse = [(r, a) for r, a in zip(tested, adjusted) if r["metric"] == "mse" and r["verdict"] in ("lower", "higher")]
    assert found.comparisons == len(tested) and len(found.kept) == sum(a < 0.05 for _, a in mse)
    assert len(found.kept) + len(found.lost) == len(mse) and found.kept and found.lost
    assert found.lost[0].startswith("blocksworld learn/none TN - learn/none N: -1.31 (p 0.0045 on its own")
    text = seed_comparison.format_holm([seed_comparison.null_family_errors(3, families=50)], found)
    assert f"{len(found.kept)} and leaves {len(found.lost)} within noise" in text
    with pytest.raises(ValueError, match="no findings"):
        seed_comparison.committed_findings_after_holm("converged/nope")


def test_section_8f_reads_the_committed_convergence_table_as_its_prose_quotes_it():
    ferry = seed_comparison.committed_convergence("converged/nlm5", "ferry")
    assert list(ferry) == ["learn/ff", "learn/none", "fixed/ff", "fixed/none"]
    assert [p.point for p in ferry["learn/none"]] == ["1/16", "1/8", "1/4", "1/2", "1", "end"]
    first, end = ferry["learn/none"][0], ferry["learn/none"][-1]
    assert (first.step, round(first.ratio, 3)) == (300, 0.195)
    assert tuple(round(v, 3) for v in (end.ratio, end.low, end.high)) == (0.258, 0.221, 0.301)
    fixed_ff = ferry["fixed/ff"]
    assert all(0.9 < p.ratio < 0.95 for p in fixed_ff)
    assert [p.low < 1 < p.high for p in fixed_ff] == [True, False, False, True, True, True]
    blocksworld = seed_comparison.committed_convergence("converged/nlm5", "blocksworld")["learn/ff"]
    common_end, end = blocksworld[-2], blocksworld[-1]
    assert (common_end.point, tuple(round(v, 3) for v in (common_end.ratio, common_end.low, common_end.high))) == (
        "1", (0.409, 0.301, 0.555))
    assert end.verdict == "within noise" and tuple(round(v, 3) for v in (end.ratio, end.low, end.high)) == (
        0.715, 0.363, 1.41)
    printed = seed_comparison.format_convergence(ferry)
    assert len(printed.splitlines()) == 1 + 24 and "learn/none       end  24,000   0.258" in printed
    with pytest.raises(ValueError, match="no domain 'logistics'; its domains: blocksworld, ferry, gripper, visitall"):
        seed_comparison.committed_convergence("converged/nlm5", "logistics")


def test_section_8f_linear_cells_below_part_way_stay_below_at_the_end():
    from tnlib.experiments.reporting.convergence import cell_readings

    rows = []
    for domain in ("blocksworld", "ferry", "gripper", "visitall"):
        for config, points in seed_comparison.committed_convergence("converged/linear", domain).items():
            rows += [{"model": "linear", "domain": domain, "sigma": config, "residual": "", "verdict": p.verdict,
                      "verdict_holm": p.verdict_holm} for p in points]
    readings = cell_readings(rows)
    assert (readings["cells"], readings["lower_before"], readings["lower_end"], readings["caught_up"]) == (16, 12, 12, 0)


@pytest.mark.parametrize("report", seed_comparison.SEED_REPORTS)
def test_every_five_seed_report_gives_section_8d_its_default_cell_findings_and_convergence(report):
    """The campaign's report among them fills in snapshot by snapshot: its default cell must still have the seeds
    to pair, its findings and its convergence table whatever the snapshot."""
    values = seed_comparison.committed_seed_values(report, "ferry learn/ff")
    assert {"N", "TN"} <= set(values) and min(len(values["N"]), len(values["TN"])) >= 3
    arrived = seed_comparison.seeds_as_they_arrive(values)
    assert arrived[-1].paired is not None and len(arrived[-1].seeds) >= 3
    findings = seed_comparison.committed_findings_after_holm(report)
    assert findings.comparisons > 0 and len(findings.kept) <= findings.directions
    assert "learn/ff" in seed_comparison.committed_convergence(report, "ferry")
