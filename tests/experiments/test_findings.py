"""A report's findings: each comparison's paired interval and verdict, the paper's direction beside it, and the
learned-vs-fixed sigma tallies against the paper's Table 1."""
from __future__ import annotations

import csv

import pytest
from scipy import stats

from tnlib.experiments.reporting.findings import (findings, learned_sigma_summary, paper_direction, render_findings,
                                        seed_values_of_report, write_findings)
from tnlib.experiments.reporting.seed_statistics import paired_verdict
from tnlib.files import REPO_ROOT


def cells(tn_shift: float, seeds=range(5), sigma="learn"):
    """Ferry learn/ff (or fixed/ff) of N, N+clip and TN: TN ``tn_shift`` off N on every seed, noise shared."""
    noise = [0.3, -0.1, 0.2, -0.4, 0.0]
    return {("ferry", sigma, "ff", "N"): {s: 3.0 + noise[s] for s in seeds},
            ("ferry", sigma, "ff", "N+clip"): {s: 3.0 + noise[s] for s in seeds},
            ("ferry", sigma, "ff", "TN"): {s: 3.0 + noise[s] + tn_shift + 0.01 * s for s in seeds}}


def test_a_finding_is_the_paired_interval_of_its_per_seed_differences():
    rows = findings({"nlm": {"mse": cells(-0.5)}})
    row = next(r for r in rows if r["first"] == "learn/ff TN" and r["second"] == "learn/ff N")
    differences = [-0.5 + 0.01 * s for s in range(5)]
    low, high = stats.t.interval(0.95, 4, loc=sum(differences) / 5, scale=stats.sem(differences))
    assert (row["low"], row["high"]) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))
    assert row["verdict"] == "lower" and row["seeds"] == 5 and row["comparison"] == "TN - N"
    # the paper's ferry learn/ff: TN 3.45±.8 against N 3.73±.7 -- its bold marks TN
    assert row["paper"] == "lower" and row["against_paper"] == "agrees"
    reversed_row = next(r for r in findings({"nlm": {"mse": cells(+0.5)}}) if r["second"] == "learn/ff N")
    assert reversed_row["verdict"] == "higher" and reversed_row["against_paper"] == "reversed"


def test_verdicts_say_within_noise_equal_and_not_testable():
    noisy = cells(0.0)
    noisy[("ferry", "learn", "ff", "TN")] = {s: v + (0.3 if s % 2 else -0.3) for s, v in
                                             noisy[("ferry", "learn", "ff", "N")].items()}
    row = next(r for r in findings({"nlm": {"mse": noisy}}) if r["second"] == "learn/ff N")
    assert row["verdict"] == "within noise" and row["against_paper"] == "within noise"
    tied = {k: {s: 1.0 for s in range(5)} for k in cells(0.0)}
    assert {r["verdict"] for r in findings({"nlm": {"coverage": tied}})} == {"equal on every seed"}
    two = next(r for r in findings({"nlm": {"mse": cells(-0.5, seeds=range(2))}}) if r["second"] == "learn/ff N")
    assert two["verdict"] == "not testable at 2 seeds" and two["low"] is None
    assert two["against_paper"] == "not testable"
    assert paired_verdict(None, 1) == "not testable at 1 seed"


def test_a_direction_stands_after_holm_only_where_the_whole_familys_correction_keeps_it():
    """TN 0.02-0.3 below N on each of five seeds: p = 0.027 on its own. Alone in its family (the NLL, set against N
    only) it stays `lower` after Holm; beside a twin comparison (N+clip equal to N here) each is adjusted to
    2 x 0.027 > 0.05, so `within noise` after Holm, while each interval on its own still says `lower`."""
    shift = [-0.2, -0.3, -0.1, -0.25, -0.02]
    values = cells(0.0)
    values[("ferry", "learn", "ff", "TN")] = {s: v + shift[s] for s, v in values[("ferry", "learn", "ff", "N")].items()}
    p = stats.ttest_1samp(shift, 0.0).pvalue
    alone = findings({"nlm": {"nll": values}})
    assert [(r["second"], r["verdict"], r["verdict_holm"]) for r in alone] == [("learn/ff N", "lower", "lower")]
    assert alone[0]["p_holm"] == pytest.approx(p, rel=1e-12)
    twins = findings({"nlm": {"mse": values}})
    assert [(r["verdict"], r["verdict_holm"]) for r in twins] == [("lower", "within noise")] * 2
    assert [r["p_holm"] for r in twins] == pytest.approx([2 * p, 2 * p], rel=1e-12)
    text = render_findings(twins, "From here.")
    assert "| after Holm |" in text and "| lower | within noise |" in text
    assert "In all: lower 2; after Holm: within noise 2;" in text and "Holm's step-down correction over all 2" in text
    # ferry learn/ff in the paper: TN bold against N and N+clip -- the runs agree on their own, not after Holm
    assert "against the paper: agrees 2; after Holm: within noise 2." in text


def test_holms_family_is_every_comparison_with_an_interval_whatever_it_says():
    """A difference the same on every seed (p 0) keeps its direction; columns equal on every seed (p 1) count in the
    family and stay equal; a two-seed comparison is outside it and stays not testable."""
    exact = cells(0.0)
    exact[("ferry", "learn", "ff", "TN")] = {s: v - 0.5 for s, v in exact[("ferry", "learn", "ff", "N")].items()}
    tied = {key: {s: 1.0 for s in range(5)} for key in cells(0.0)}
    rows = findings({"nlm": {"mse": exact, "coverage": tied, "nll": cells(-0.5, seeds=range(2))}})
    got = [(r["metric"], r["second"], r["verdict_holm"], r["p_holm"]) for r in rows]
    assert got == [("mse", "learn/ff N", "lower", 0.0), ("mse", "learn/ff N+clip", "lower", 0.0),
                   ("nll", "learn/ff N", "not testable at 2 seeds", None),
                   ("coverage", "learn/ff N", "equal on every seed", 1.0),
                   ("coverage", "learn/ff N+clip", "equal on every seed", 1.0)]
    assert "Holm's step-down correction over all 4 comparisons" in render_findings(rows, "From here.")


def test_the_papers_direction_by_its_bold_and_by_its_spread():
    # Table 1 nlm blocksworld learn/ff: TN .65±.1 bold against N .76±.1 (the gap rule), within their summed sd
    assert paper_direction("nlm", "mse", "blocksworld", ("learn", "ff", "TN"), ("learn", "ff", "N"))[0] == "lower"
    # gripper learn/ff: TN 3.70 against N 3.65 -- neither bold, within the sd: no direction
    assert paper_direction("nlm", "mse", "gripper", ("learn", "ff", "TN"), ("learn", "ff", "N"))[0] == "none"
    # Table 2: ferry fixed/none coverage TN .58±.13 against N .01±.01: TN bold, higher is better
    assert paper_direction("nlm", "coverage", "ferry", ("fixed", "none", "TN"), ("fixed", "none", "N"))[0] == "higher"
    # no NLL in the paper's tables; no Table 2 for the linear model
    assert paper_direction("nlm", "nll", "ferry", ("learn", "ff", "TN"), ("learn", "ff", "N")) == (None, "")
    assert paper_direction("linear", "coverage", "ferry", ("learn", "ff", "TN"), ("learn", "ff", "N")) == (None, "")


def test_the_papers_learned_sigma_claim_is_tallied_from_its_table():
    """The paper's Table 1 (NLM): learning sigma lowers TN's MSE in 7 of 8 cells and raises N's in 5 of 8."""
    values = {**cells(-0.5, sigma="learn"), **cells(0.0, sigma="fixed")}
    rows = findings({"nlm": {"mse": values}})
    learned = [r for r in rows if r["comparison"] == "learn - fixed"]
    assert {(r["first"], r["second"]) for r in learned} == {("learn/ff N", "fixed/ff N"),
                                                           ("learn/ff TN", "fixed/ff TN")}
    summary = learned_sigma_summary(rows, "nlm")
    assert summary.startswith("TN: learning sigma gives a lower test MSE in 1 and a higher one in 0 of 1 testable")
    assert "the paper: lower in 7 and higher in 1 of its 8 cells by the means" in summary
    assert "N: learning sigma gives a lower test MSE in 0 and a higher one in 0 of 1" in summary
    assert "the paper: lower in 3 and higher in 5 of its 8 cells" in summary


def test_findings_files_hold_every_comparison_and_the_other_folders_verdicts(tmp_path):
    rows = findings({"nlm": {"mse": cells(-0.5)}})
    other = findings({"nlm": {"mse": cells(+0.5)}})
    md, table = write_findings(tmp_path, rows, "From here.", other, ("here", "`there/`"))
    text = md.read_text()
    assert text.startswith("# Findings\n\nFrom here.") and "not corrected for multiplicity" in text
    assert "| ferry | learn/ff TN | learn/ff N | 5 | -0.48 [" in text and "| higher | reversed |" in text
    assert "| lower | lower | lower (" in text  # the verdict, the same after Holm, the paper's direction
    with table.open(newline="") as handle:
        written = list(csv.DictReader(handle))
    assert len(written) == len(rows) and float(written[0]["low"]) == rows[0]["low"]


def test_a_committed_report_answers_the_learned_sigma_question_from_its_seed_csvs():
    """converged/nlm5 (NLM, data/small, five seeds): learning sigma lowers TN's test MSE in 3 of 8 cells and raises
    it in none; it raises N's in 3 and lowers it in none."""
    rows = findings(seed_values_of_report(REPO_ROOT / "reports" / "converged" / "nlm5"))
    summary = learned_sigma_summary(rows, "nlm")
    assert "TN: learning sigma gives a lower test MSE in 3 and a higher one in 0 of 8 testable cells" in summary
    assert "N: learning sigma gives a lower test MSE in 0 and a higher one in 3 of 8 testable cells" in summary
    assert "A learned sigma against a fixed one" in render_findings(rows, "From nlm5.")


def test_the_whole_test_grid_is_a_finding_of_its_own_against_the_papers_table_1(tmp_path):
    """A report's whole-grid rows (accuracy-by-size-seeds.csv) are read back as the grid's test MSE, N+clip too, and
    set against the paper's Table 1 (its test set); the per-size rows and the NLL are not taken for it."""
    fields = ["domain", "size", "labelled_by", "instances", "states", "model", "sigma", "residual", "lower_bound",
              "column", "seed", "mse", "nll"]
    rows = []
    for key, by_seed in cells(-0.5).items():
        domain, sigma, residual, column = key
        for seed, value in by_seed.items():
            base = {"domain": domain, "labelled_by": "test-grid", "instances": "40", "states": "1310",
                    "model": "nlm", "sigma": sigma, "residual": residual, "lower_bound": "lmcut", "column": column,
                    "seed": str(seed), "nll": ""}
            rows.append({**base, "size": "whole test grid", "mse": repr(10 * value)})
            rows.append({**base, "size": "locations 10, cars 10", "mse": repr(99.0)})
    with (tmp_path / "accuracy-by-size-seeds.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    values = seed_values_of_report(tmp_path)
    assert set(values["nlm"]) == {"grid_mse"}
    assert values["nlm"]["grid_mse"][("ferry", "learn", "ff", "TN")][0] == pytest.approx(10 * (3.0 + 0.3 - 0.5))
    found = findings(values)
    row = next(r for r in found if r["second"] == "learn/ff N+clip")
    assert row["metric"] == "grid_mse" and row["verdict"] == "lower"
    # the paper's ferry learn/ff: TN 3.45±.8 against N+clip 3.72±.6, TN bold
    assert row["paper"] == "lower" and row["against_paper"] == "agrees"
    assert "**test MSE on the whole test grid** (lower is better)" in render_findings(found, "From a grid.")
