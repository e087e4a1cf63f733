"""`tnlib report --against-report` (tnlib.experiments.reporting.report_pairing): a results folder's cells paired by
seed with those of a rendered report whose run folders are not here, from the two reports' per-seed CSVs."""
from __future__ import annotations

import csv
import math

import pytest
from scipy import stats

from fixtures.run_folders import write_data_root, write_metrics, write_planning, write_run

FIELDS = ("domain", "model", "sigma", "residual", "lower_bound", "column", "seed", "mse", "nll", "nll_best_nll")


def write_accuracy_seeds(folder, rows):
    """A rendered report's accuracy-seeds.csv of (domain, configuration, column, seed, mse, nll) rows."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "accuracy-seeds.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        writer.writeheader()
        for domain, configuration, column, seed, mse, nll in rows:
            sigma, residual = configuration.split("/")
            writer.writerow({"domain": domain, "model": "nlm", "sigma": sigma, "residual": residual,
                             "lower_bound": "lmcut", "column": column, "seed": seed, "mse": mse,
                             "nll": "" if nll is None else nll, "nll_best_nll": "" if nll is None else nll})


def test_pairing_tests_each_shared_cell_by_seed_against_scipy(tmp_path):
    """A TN cell moved on every seed is `higher`, its interval scipy's paired t-interval; an N cell the same up to
    a float32 model's evaluation rounding is equal on every seed (no test, outside Holm's family), and one that
    moved by 1e-4 relatively is tested; a cell with two seeds is not testable; a cell only one report holds is left
    out."""
    from tnlib.experiments.reporting.report_pairing import render_report_pairing, report_pairing_rows

    shift = (1.0, 1.5, 0.8, 1.2)
    base = (2.0, 3.0, 2.5, 4.0)
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    write_accuracy_seeds(mine, [("ferry", "fixed/none", "TN", s, b + d, None) for s, (b, d) in enumerate(zip(base, shift))]
                         + [("ferry", "fixed/none", "N", s, (0.3 + s) * (1 + 6e-7), 5.0) for s in range(4)]
                         + [("ferry", "fixed/none", "N+clip", s, 10 + s + 1e-3 * (1 + 0.1 * s), None)
                            for s in range(4)]
                         + [("gripper", "learn/ff", "TN", s, 1.0 + s, None) for s in range(2)]
                         + [("visitall", "learn/ff", "TN", 0, 1.0, None)])
    write_accuracy_seeds(theirs, [("ferry", "fixed/none", "TN", s, b, None) for s, b in enumerate(base)]
                         + [("ferry", "fixed/none", "N", s, 0.3 + s, 5.0) for s in range(4)]
                         + [("ferry", "fixed/none", "N+clip", s, 10 + s, None) for s in range(4)]
                         + [("gripper", "learn/ff", "TN", s, 0.5 + s, None) for s in range(3)])
    rows = report_pairing_rows(mine, theirs)
    mse = {(r["domain"], r["column"]): r for r in rows if r["metric"] == "mse"}
    assert set(mse) == {("ferry", "TN"), ("ferry", "N"), ("ferry", "N+clip"), ("gripper", "TN")}
    tn = mse[("ferry", "TN")]
    low, high = stats.t.interval(0.95, 3, loc=sum(shift) / 4, scale=stats.sem(shift))
    assert tn["verdict"] == "higher" and tn["seeds"] == 4
    assert math.isclose(tn["low"], low) and math.isclose(tn["high"], high)
    assert math.isclose(tn["p"], stats.ttest_1samp(shift, 0.0).pvalue)
    assert mse[("ferry", "N")]["verdict"] == "equal on every seed" and mse[("ferry", "N")]["p"] is None
    assert mse[("ferry", "N+clip")]["verdict"] == "higher" and mse[("ferry", "N+clip")]["p"] is not None
    assert mse[("gripper", "TN")]["verdict"] == "not testable at 2 seeds"
    # two tests in the family: Holm doubles the smaller p
    smaller = min(tn["p"], mse[("ferry", "N+clip")]["p"])
    assert math.isclose(min(tn["p_holm"], mse[("ferry", "N+clip")]["p_holm"]), 2 * smaller)
    text = render_report_pairing(rows, ("mine", "theirs"))
    assert "| ferry | fixed/none | TN | 4 | 4.00±1.0 | 2.88±.9 | 1.12 [" in text
    assert "Equal on every seed in both (1): ferry fixed/none N." in text


def test_pairing_pairs_planning_only_on_as_many_instances(tmp_path):
    """Planning pairs only where both reports' runs planned as many instances: a report that planned more of a
    plan set does not pass for a better or worse one."""
    from tnlib.experiments.reporting.report_pairing import report_pairing_rows

    folders = {name: tmp_path / name for name in ("twenty", "ten", "also-ten")}
    for name, instances, coverage in (("twenty", 20, (0.5, 0.6, 0.7, 0.9)), ("ten", 10, (.4,) * 4),
                                      ("also-ten", 10, (.3, .5, .2, .4))):
        write_accuracy_seeds(folders[name], [("ferry", "learn/ff", "TN", s, 1.0, None) for s in range(4)])
        with (folders[name] / "planning-seeds.csv").open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(("domain", "model", "sigma", "residual", "lower_bound", "column", "seed", "instances",
                             "coverage", "evaluations"))
            for seed, c in enumerate(coverage):
                writer.writerow(("ferry", "nlm", "learn", "ff", "lmcut", "TN", seed, instances, c, 100.0))
    assert not [r for r in report_pairing_rows(folders["twenty"], folders["ten"]) if r["metric"] == "coverage"]
    coverage = next(r for r in report_pairing_rows(folders["also-ten"], folders["ten"]) if r["metric"] == "coverage")
    assert coverage["seeds"] == 4 and math.isclose(coverage["mean"], -0.05)
    evaluations = next(r for r in report_pairing_rows(folders["also-ten"], folders["ten"])
                       if r["metric"] == "evaluations")
    assert evaluations["verdict"] == "equal on every seed"


def test_report_against_a_rendered_report_writes_the_pairing(tmp_path, capsys):
    """`tnlib report RUNS --against-report REPORT` renders the folder, then pairs it with the report's CSVs
    (against-report.md and .csv); a folder that is no rendered report is refused before anything is written."""
    from tnlib.cli import main

    data, runs = tmp_path / "data", tmp_path / "runs"
    write_data_root(data)
    runs.mkdir()
    for seed in range(3):
        run = write_run(runs, data, [3, 2, 1], seed=seed)
        write_metrics(run, 2.0 + seed, 1.0)
        write_planning(run / "planning-default.jsonl", [True])
    earlier = tmp_path / "earlier"
    write_accuracy_seeds(earlier, [("blocksworld", "learn/ff", "TN", s, 1.0 + s, 1.0) for s in range(3)])
    out = tmp_path / "report"
    assert main(["report", str(runs), "--out", str(out), "--against-report", str(earlier)]) == 0
    assert "Its README" not in (out / "against-report.md").read_text()
    (earlier / "README.md").write_text("# The same runs, trained on another bound\n\nkept as rendered then\n")
    assert main(["report", str(runs), "--out", str(out), "--against-report", str(earlier)]) == 0
    text = (out / "against-report.md").read_text()
    assert text.startswith("# `runs` against the rendered report `earlier`")
    assert ("**Set against** the rendered report `earlier/`: its per-seed values (accuracy-seeds.csv, "
            "planning-seeds.csv) of 3 tested runs in 1 cell; its run folders need not be here.") in text
    assert "| blocksworld | learn/ff | TN | 3 | 3.00±1.0 | 2.00±1.0 | 1 [1, 1] | higher | higher |" in text
    assert "Its README: *The same runs, trained on another bound*." in text
    with (out / "against-report.csv").open() as handle:
        row = next(r for r in csv.DictReader(handle) if r["metric"] == "mse")
    assert float(row["mean"]) == 1.0 and row["verdict_holm"] == "higher"
    capsys.readouterr()
    missing = tmp_path / "not-a-report"
    assert main(["report", str(runs), "--out", str(tmp_path / "other"), "--against-report", str(missing)]) == 2
    assert "not a rendered report" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()
    with pytest.raises(ValueError, match="share no"):
        from tnlib.experiments.reporting.report_pairing import write_report_pairing
        write_accuracy_seeds(tmp_path / "elsewhere", [("gripper", "learn/ff", "TN", 0, 1.0, 1.0)])
        write_report_pairing(out, tmp_path / "elsewhere", ("runs", "elsewhere"), "")


def test_a_render_removes_the_pages_it_no_longer_writes(tmp_path, capsys):
    """A page an earlier render wrote where this one writes none -- a comparison or pairing no longer asked for,
    whole-grid metrics since taken out -- is removed, so the folder holds only what its runs give now; the pages a
    render always writes, and files of its own (a README), stay."""
    from tnlib.cli import main

    data, runs = tmp_path / "data", tmp_path / "runs"
    write_data_root(data)
    runs.mkdir()
    for seed in range(3):
        write_metrics(write_run(runs, data, [3, 2, 1], seed=seed), 2.0 + seed, 1.0)
    earlier = tmp_path / "earlier"
    write_accuracy_seeds(earlier, [("blocksworld", "learn/ff", "TN", s, 1.0 + s, 1.0) for s in range(3)])
    out = tmp_path / "report"
    assert main(["report", str(runs), "--out", str(out), "--against-report", str(earlier)]) == 0
    (out / "accuracy-by-size.md").write_text("per size, from metrics since taken out\n")
    (out / "README.md").write_text("how this folder was made\n")
    assert (out / "against-report.md").is_file()
    assert main(["report", str(runs), "--out", str(out)]) == 0
    assert not (out / "against-report.md").exists() and not (out / "against-report.csv").exists()
    assert not (out / "accuracy-by-size.md").exists()
    assert (out / "README.md").is_file() and (out / "accuracy.md").is_file() and (out / "findings.md").is_file()
    capsys.readouterr()


def test_the_pairing_figure_draws_each_tested_cell_in_the_colour_of_the_report_it_favours(tmp_path):
    """One dot and bar per cell with an interval, blue where the first report's runs are better, orange where
    worse; cells equal on every seed are not drawn; a panel without three seeds anywhere says so at its own place
    on the page."""
    from tnlib.experiments.reporting.report_figures import VERDICT_STYLES
    from tnlib.experiments.reporting.report_pairing import report_pairing_figure, report_pairing_rows

    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    write_accuracy_seeds(mine, [("ferry", "fixed/none", "TN", s, 2.0 + s, 3.0 + 0.1 * s) for s in range(3)]
                         + [("ferry", "fixed/none", "N", s, 5.0 + s, 5.0) for s in range(3)]
                         + [("gripper", "learn/ff", "TN", s, 1.0 + s, None) for s in range(3)])
    write_accuracy_seeds(theirs, [("ferry", "fixed/none", "TN", s, 1.0 + s + 0.1 * s, 1.0 + 0.05 * s)
                                  for s in range(3)]
                         + [("ferry", "fixed/none", "N", s, 5.0 + s, 5.0) for s in range(3)]
                         + [("gripper", "learn/ff", "TN", s, 2.0 + s + 0.1 * s, None) for s in range(3)])
    figure = report_pairing_figure(report_pairing_rows(mine, theirs), ("mine", "theirs"))
    drawn = {(trace.xaxis, trace.y[0]): trace for trace in figure.data}
    # MSE and NLL of ferry, MSE of gripper; N equal on every seed, not drawn
    assert sorted(drawn) == [("x", "fixed/none: TN"), ("x2", "fixed/none: TN"), ("x3", "learn/ff: TN")]
    assert drawn[("x", "fixed/none: TN")].marker.color == VERDICT_STYLES["TN worse"]["color"]
    assert drawn[("x", "fixed/none: TN")].name == "mine worse"
    assert drawn[("x3", "learn/ff: TN")].name == "mine better"
    # gripper has no NLL: its panel says so, at its own centre on the page
    notes = [a for a in figure.layout.annotations if a.text == "fewer than 3 seeds"]
    assert len(notes) == 1 and notes[0].xref == "paper" and notes[0].yref == "paper"
    assert notes[0].x == pytest.approx(sum(figure.layout.xaxis4.domain) / 2)
    assert notes[0].y == pytest.approx(sum(figure.layout.yaxis4.domain) / 2)
    assert report_pairing_figure(report_pairing_rows(mine, mine), ("mine", "mine")) is None  # equal everywhere: nothing to draw
