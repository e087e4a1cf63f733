"""headline.md: each row's means are the seeds' means, its intervals the findings' (Holm's mark where the correction
loses a direction), the paper's means its tables', and a configuration not yet tested says so; `tnlib report
--paper-tables` writes the page and a render without it removes an old one."""
from __future__ import annotations

import pytest

from fixtures.run_folders import write_data_root, write_metrics, write_run
from tnlib.experiments.reporting.findings import findings
from tnlib.experiments.reporting.headline import figure, headline_table, interval_text, mean_text
from tnlib.paper import PAPER_TABLE1_NLM, PAPER_TABLE2_NLM

NOISE = [0.3, -0.1, 0.2, -0.4, 0.0]


def ferry_cells(tn_shift: float, sigma="learn", residual="ff", seeds=range(5)) -> dict:
    """N and N+clip equal; TN ``tn_shift`` off them on every seed, plus a small per-seed spread."""
    return {("ferry", sigma, residual, "N"): {s: 3.0 + NOISE[s] for s in seeds},
            ("ferry", sigma, residual, "N+clip"): {s: 3.0 + NOISE[s] for s in seeds},
            ("ferry", sigma, residual, "TN"): {s: 3.0 + NOISE[s] + tn_shift + 0.01 * s for s in seeds}}


def rows_of(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]


@pytest.mark.parametrize("x, plus, text", [(-0.391, False, "-.391"), (-2535.6, False, "-2,536"), (12.71, False, "12.7"),
                                           (0.017654, False, ".0177"), (1.0, True, "+1"), (0.2, True, "+.2"),
                                           (-949.4, False, "-949"), (0, True, "0")])
def test_figures_have_three_significant_digits_and_no_leading_zero(x, plus, text):
    assert figure(x, plus) == text


def test_means_are_written_as_the_paper_writes_its_own():
    assert [mean_text("mse", x) for x in (0.654, 8.6349, 141.08, 1145.04)] == [".65", "8.63", "141.1", "1,145.0"]
    assert mean_text("coverage", 0.625) == ".62" and mean_text("coverage", 1.0) == "1.00"
    assert mean_text("evaluations", 2535.6) == "2,536"


def test_a_row_holds_the_seeds_means_the_findings_intervals_and_the_papers_means():
    values = {"mse": ferry_cells(-0.5)}
    found = findings({"nlm": values})
    table = headline_table("nlm", "mse", values, found, {("ferry", "learn", "ff")}, bound_mse={"ferry": (8.9, 3.8)})
    [row] = rows_of(table)
    tn = sum(values["mse"][("ferry", "learn", "ff", "TN")].values()) / 5
    n = sum(values["mse"][("ferry", "learn", "ff", "N")].values()) / 5
    assert row[:3] == ["ferry", "learn/ff", f"{tn:.2f} / {n:.2f} / {n:.2f}"]
    against_n = next(r for r in found if r["second"] == "learn/ff N")
    assert row[3] == f"{figure(against_n['mean'], True)} [{figure(against_n['low'])}, {figure(against_n['high'])}]"
    assert row[3].startswith("-.48 [")
    paper = PAPER_TABLE1_NLM["ferry"]
    assert row[5] == " / ".join(mean_text("mse", paper[("learn", "ff", c)][0]) for c in ("TN", "N", "N+clip"))
    assert row[6] == "8.90 (3.80)"


def test_a_direction_holm_loses_carries_the_mark_and_one_it_keeps_none():
    row = {"mean": -0.1, "low": -0.2, "high": -0.01, "verdict": "lower", "verdict_holm": "within noise"}
    assert interval_text(row) == "-.1 [-.2, -.01] (not after Holm)"
    assert interval_text({**row, "verdict_holm": "lower"}) == "-.1 [-.2, -.01]"
    assert interval_text(row, holm=False) == "-.1 [-.2, -.01]"
    noise = {**row, "high": 0.05, "verdict": "within noise"}
    assert interval_text(noise) == "-.1 [-.2, .05]"


def test_equal_seeds_and_too_few_seeds_say_so_instead_of_an_interval():
    tied = {k: {s: 1.0 for s in range(5)} for k in ferry_cells(0.0)}
    table = headline_table("nlm", "coverage", {"coverage": tied}, findings({"nlm": {"coverage": tied}}), set())
    [row] = rows_of(table)
    assert row[2:5] == ["1.00 / 1.00 / 1.00", "equal on every seed", "equal on every seed"]
    assert row[5] == " / ".join(mean_text("coverage", PAPER_TABLE2_NLM["coverage"]["ferry"][("learn", "ff", c)][0])
                                for c in ("TN", "N", "N+clip"))
    two = {"mse": ferry_cells(-0.5, seeds=range(2))}
    [row] = rows_of(headline_table("nlm", "mse", two, findings({"nlm": two}), set()))
    assert row[3] == "not testable at 2 seeds"


def test_a_configuration_held_but_not_yet_measured_says_what_it_waits_for():
    values = {"mse": ferry_cells(-0.5), "grid_mse": {}}
    held = {("ferry", "learn", "ff"), ("ferry", "fixed", "none")}
    found = findings({"nlm": values})
    rows = rows_of(headline_table("nlm", "mse", values, found, held))
    assert [r[:3] for r in rows][1] == ["ferry", "fixed/none", "not yet tested"]
    assert rows[1][5] != ""  # the paper's means stand beside the row that waits
    # no whole-grid metrics at all: no whole-grid table
    assert headline_table("nlm", "grid_mse", values, found, held) == ""
    values["grid_mse"] = ferry_cells(-5.0)
    grid = rows_of(headline_table("nlm", "grid_mse", values, findings({"nlm": values}), held))
    assert grid[1][2] == "not yet tested" and grid[0][2] != "not yet tested"
    values["mse"].update(ferry_cells(-0.5, sigma="fixed", residual="none"))
    grid = rows_of(headline_table("nlm", "grid_mse", values, findings({"nlm": values}), held))
    assert grid[1][2] == "not yet on the whole test grid"
    # Table 2 lists the paper's two configurations the runs hold, planned or not
    planning = {"coverage": ferry_cells(0.1)}
    rows = rows_of(headline_table("nlm", "coverage", planning, findings({"nlm": planning}),
                                  held | {("ferry", "learn", "none")}))
    assert [r[1:3] for r in rows][1:] == [["fixed/none", "not yet planned"]]


def test_a_configuration_with_some_columns_measured_names_those_still_waiting():
    values = {"mse": {key: by_seed for key, by_seed in ferry_cells(-0.5).items() if key[3] != "TN"}}
    [row] = rows_of(headline_table("nlm", "mse", values, findings({"nlm": values}), {("ferry", "learn", "ff")}))
    assert row[2:5] == ["not yet tested: TN", "", ""]
    # on the whole grid: N waits for its grid metrics, TN for its test
    values["grid_mse"] = {key: by_seed for key, by_seed in values["mse"].items() if key[3] == "N+clip"}
    [row] = rows_of(headline_table("nlm", "grid_mse", values, findings({"nlm": values}), {("ferry", "learn", "ff")}))
    assert row[2] == "not yet tested: TN; not yet on the whole test grid: N"


def test_a_row_over_fewer_seeds_than_the_others_says_how_many():
    values = {"mse": {**ferry_cells(-0.5), **ferry_cells(-0.5, sigma="fixed", residual="none", seeds=range(4))}}
    rows = rows_of(headline_table("nlm", "mse", values, findings({"nlm": values}), set()))
    assert not rows[0][2].endswith("seeds)") and rows[1][2].endswith("(4 seeds)")


def test_a_row_whose_columns_stand_on_different_seeds_names_each_columns_count():
    tested_tn = ferry_cells(-0.5, sigma="fixed", residual="none", seeds=range(1))
    untested_n = ferry_cells(-0.5, sigma="fixed", residual="none")
    values = {"mse": {**ferry_cells(-0.5), **{k: v for k, v in untested_n.items() if k[3] != "TN"},
                      **{k: v for k, v in tested_tn.items() if k[3] == "TN"}}}
    rows = rows_of(headline_table("nlm", "mse", values, findings({"nlm": values}), set()))
    assert rows[1][2].endswith("(seeds: TN 1, N 5, N+clip 5)")  # one TN seed tested beside five of N's
    one = {"mse": {**ferry_cells(-0.5), **ferry_cells(-0.5, sigma="fixed", residual="none", seeds=range(1))}}
    assert rows_of(headline_table("nlm", "mse", one, findings({"nlm": one}), set()))[1][2].endswith("(1 seed)")


def test_the_other_reports_column_pairs_tn_without_holms_mark():
    values = {"mse": ferry_cells(-0.5)}
    pairing = [{"model": "nlm", "metric": "mse", "domain": "ferry", "configuration": "learn/ff", "column": "TN",
                "mean": 2.5, "low": 2.2, "high": 2.81, "verdict": "higher", "verdict_holm": "within noise"},
               {"model": "nlm", "metric": "mse", "domain": "ferry", "configuration": "learn/ff", "column": "N",
                "mean": 9.0, "low": 8.0, "high": 10.0, "verdict": "higher", "verdict_holm": "higher"}]
    table = headline_table("nlm", "mse", values, findings({"nlm": values}), set(), pairing_rows=pairing,
                           pairing_names=("reports/a/runs", "reports/b-tnlib-lmcut"))
    assert "TN: these runs - `b-tnlib-lmcut`" in table.splitlines()[0]
    assert rows_of(table)[0][-1] == "+2.5 [2.2, 2.81]"


def test_report_with_the_papers_tables_writes_the_page_and_without_them_removes_it(tmp_path, capsys):
    from tnlib.cli import main

    data, folder = tmp_path / "data", tmp_path / "runs"
    write_data_root(data, "ferry")
    folder.mkdir()
    for seed in range(3):
        for distribution, mse in (("N", 5.0 + seed), ("TN", 3.0 + seed + 0.1 * seed * seed)):
            write_metrics(write_run(folder, data, [3, 2, 1], domain="ferry", seed=seed, distribution=distribution),
                          mse, 1.0)
    write_run(folder, data, [3, 2, 1], domain="ferry", sigma="fixed", residual="none", distribution="TN")
    out = tmp_path / "out"
    assert main(["report", str(folder), "--out", str(out), "--paper-tables"]) == 0
    page = (out / "headline.md").read_text()
    assert "## Table 1: test MSE on the test split" in page and "What these results can and cannot show" in page
    rows = rows_of(page.split("## Table 1: test MSE on the test split\n\n")[1].split("\n\n")[0])
    assert [r[:3] for r in rows] == [["ferry", "learn/ff", "4.17 / 6.00 / 6.00"],
                                     ["ferry", "fixed/none", "not yet tested"]]
    assert rows[0][3].startswith("-1.83 [") and rows[0][6] == "6.00 (5.00)"
    assert main(["report", str(folder), "--out", str(out)]) == 0
    assert not (out / "headline.md").exists()
    capsys.readouterr()


def test_a_configuration_one_domain_has_started_stands_in_every_domain():
    values = {"mse": ferry_cells(-0.5)}
    held = {("ferry", "learn", "ff"), ("gripper", "learn", "ff"), ("gripper", "fixed", "ff")}
    rows = rows_of(headline_table("nlm", "mse", values, findings({"nlm": values}), held))
    assert [r[:3] for r in rows] == [["ferry", "learn/ff", rows[0][2]], ["ferry", "fixed/ff", "not yet tested"],
                                     ["gripper", "learn/ff", "not yet tested"], ["gripper", "fixed/ff", "not yet tested"]]
