"""`tnlib report` (tnlib.experiments.reporting.reports): the pages it renders from a results folder -- opened by the
scope header, read right, the paired intervals drawn from three seeds, the ablation tables -- and the summaries table
of a sweep's cells."""
from __future__ import annotations

import math

import pytest

from tnlib.experiments.scope_page import scope_header

from fixtures.run_folders import results, write_data_root, write_metrics, write_planning, write_run


def test_summaries_table_lists_every_cell():
    from tnlib.experiments.reporting.reports import summaries_table

    table = summaries_table([{"run": "a", "mse": 1.0, "nll": 2.0, "coverage_default": 1.0},
                             {"run": "b", "mse": 1.5, "nll": 2.5, "coverage_default": 0.5, "coverage_clip": 1.0}])
    rows = table.splitlines()[2:]
    assert rows == ["| a | 1.000 | 2.000 | 1.00 |  |", "| b | 1.500 | 2.500 | 0.50 | 1.00 |"]


def test_reports_open_with_the_header(results, tmp_path):
    from tnlib.experiments.reporting.reports import write_reports

    written = write_reports(results, tmp_path / "reports")
    header = scope_header(results)
    for path in written[:2]:
        text = path.read_text()
        title, rest = text.split("\n\n", 1)
        assert title.startswith("# ") and rest.startswith(header) and "## Tables" in rest
    curves = written[2].read_text()
    assert "<h2>What these results can and cannot show</h2>" in curves
    assert "<td>learn/ff, fixed/none (missing: learn/none, fixed/ff)</td>" in curves  # a table, not raw Markdown
    assert curves.index("cannot show") < curves.index("<h1>Training curves (nlm)</h1>")
    again = write_reports(results, tmp_path / "again")
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in written]  # same runs, same files


def test_reports_read_right(results, tmp_path):
    """Rendered from small run folders: the bold rules stated, full domain names, one seed said in words, only
    the configurations run, and training_curves.html styled like the other reports, with few ticks."""
    from tnlib.experiments.reporting.report_figures import CURVE_TICKS, LOG_AXIS_TICKS, training_curves_figure
    from tnlib.experiments.reporting.reports import write_reports

    for name in ("blocksworld-nlm-N-learn-ff-llmcut-s0", "blocksworld-nlm-TN-learn-ff-llmcut-s0"):
        write_planning(results / name / "planning-default.jsonl", [True, False])
    accuracy, planning, curves = (p.read_text() for p in write_reports(results, tmp_path / "reports")[:3])
    from tnlib.experiments.reporting.seed_statistics import FEW_SEEDS_BOLD_RULE

    assert FEW_SEEDS_BOLD_RULE in accuracy and FEW_SEEDS_BOLD_RULE in planning  # one seed: nothing bold, and why
    assert "the paired tables make no paired comparison" in accuracy
    table2 = planning.split("## Tables")[1]
    assert "| blocksworld | 0.75 | 0.50 (1 seed) |  | 0.50 (1 seed) |" in table2 and "±" not in table2
    assert "learn/ff TN |" in table2 and "fixed/none" not in table2  # no planning records: no columns
    assert "<style>" in curves and "word-break: normal" in curves and "overflow-x: auto" in curves
    assert "font-family" in curves  # not the browser's default look
    figure = training_curves_figure(results, "blocksworld")
    assert figure.layout.xaxis.nticks == CURVE_TICKS <= 6 and len(figure.layout.yaxis.tickvals) <= 6
    assert figure.layout.yaxis.tickformat == LOG_AXIS_TICKS["tickformat"]  # 20 printed as 20, not a small 2
    values = [v for trace in figure.data for v in trace.y if v is not None]
    ticks, (low, high) = figure.layout.yaxis.tickvals, figure.layout.yaxis.range
    assert ticks[0] <= min(values) and max(values) <= ticks[-1]  # every curve between two labelled ticks
    assert low <= math.log10(ticks[0]) and math.log10(ticks[-1]) <= high


def test_the_notebooks_sections_hold_each_models_table_its_bold_rule_and_every_cells_curves(results):
    from tnlib.experiments.reporting.report_figures import sweep_training_curves_figures
    from tnlib.experiments.reporting.tables import (render_table, render_table2, table1_bold_rule, table1_sections,
                                                    table2_bold_rule, table2_sections)

    write_planning(results / "blocksworld-nlm-N-learn-ff-llmcut-s0" / "planning-default.jsonl", [True, False])
    configs = [("learn", "ff"), ("fixed", "none")]
    first, second = table1_sections(results, ["nlm", "linear"]).split("**linear**")
    assert first.startswith("**nlm**\n\n" + render_table(results, model="nlm"))
    assert first.rstrip().endswith(table1_bold_rule(results, model="nlm"))
    assert second.startswith("\n\n" + render_table(results, model="linear"))
    planning = table2_sections(results, ["nlm"], configs)
    assert planning == (f"**nlm**\n\n{render_table2(results, model='nlm', configs=configs)}\n"
                        f"{table2_bold_rule(results, model='nlm')}\n")
    shown = sweep_training_curves_figures(results, ["nlm"], ["blocksworld", "gripper"], configs)
    assert [f.layout.title.text.split(" (")[0] for f in shown] == ["blocksworld: val mse during training"] * 2 + [
        "gripper: val mse during training"] * 2
    assert ["learn/ff" in shown[0].layout.title.text, "fixed/none" in shown[1].layout.title.text] == [True, True]
    assert [len(f.data) for f in shown] == [2, 1, 1, 0]  # blocksworld N and TN, its fixed/none TN, gripper's TN


def test_report_command_renders_a_results_folder(results, tmp_path, capsys, monkeypatch):
    import tnlib.files
    from tnlib.cli import main
    from tnlib.experiments.reporting.reports import render_results

    out = tmp_path / "out"
    assert main(["report", str(results), "--out", str(out)]) == 0
    names = [line.rsplit("/", 1)[-1] for line in capsys.readouterr().out.splitlines()]
    assert names == ["accuracy.md", "planning.md", "training_curves.html", "accuracy-seeds.csv", "planning-seeds.csv",
                     "figure2.html", "findings.md", "findings.csv", "convergence.md", "convergence.csv"]
    figure2 = (out / "figure2.html").read_text()
    # outside reports/: plotly.js is written beside the files, which load it from there
    assert "<script src='plotly.min.js'>" in figure2 and (out / "plotly.min.js").stat().st_size > 1_000_000
    assert "<script src='plotly.min.js'>" in (out / "training_curves.html").read_text()
    assert "What these results can and cannot show" in figure2 and 'id="figure2-nlm-blocksworld-learn-ff"' in figure2
    # inside the repository's reports/: the exported notebooks' shared bundle, no second copy
    repo = tmp_path / "repo"
    (repo / "reports" / "notebooks").mkdir(parents=True)
    (repo / "reports" / "notebooks" / "plotly.min.js").write_text("/* plotly */")
    monkeypatch.setattr(tnlib.files, "REPO_ROOT", repo)
    render_results(results, repo / "reports" / "converged")
    assert "<script src='../notebooks/plotly.min.js'>" in (repo / "reports" / "converged" / "figure2.html").read_text()
    assert not (repo / "reports" / "converged" / "plotly.min.js").exists()
    # one line and exit 2 for a folder without runs or with two lower bounds
    assert main(["report", str(tmp_path / "empty"), "--out", str(out)]) == 2
    assert "holds no run folder" in capsys.readouterr().err
    write_run(results, tmp_path / "data", [1, 1, 1, 1], lower_bound="hmax")
    assert main(["report", str(results), "--out", str(out)]) == 2
    assert "mixes lower bounds (hmax, lmcut)" in capsys.readouterr().err


def test_a_report_of_three_seeds_draws_its_paired_intervals(tmp_path, capsys):
    """`tnlib report` on a folder whose cells have three seeds writes intervals.html (the forest plot of TN against
    N); with two seeds it writes none (an interval of two seeds says nothing)."""
    from tnlib.cli import main

    data = tmp_path / "data"
    write_data_root(data)
    for seeds in (2, 3):
        folder = tmp_path / f"seeds{seeds}"
        folder.mkdir()
        for seed in range(seeds):
            for distribution, mse in (("N", 2.0 + seed), ("TN", 1.5 + seed)):
                write_metrics(write_run(folder, data, [3, 2, 1], seed=seed, distribution=distribution), mse, 1.0)
        out = tmp_path / f"out{seeds}"
        assert main(["report", str(folder), "--out", str(out)]) == 0
        assert (out / "intervals.html").is_file() == (seeds == 3)
    capsys.readouterr()
    page = (tmp_path / "out3" / "intervals.html").read_text()
    assert 'id="intervals-nlm"' in page and "<script src='plotly.min.js'>" in page
    assert ": TN - N" in page and "What these results can and cannot show" in page


def test_ablation_tables_put_each_lower_bound_in_its_columns(tmp_path, capsys):
    """`tnlib report A B --ablation lower-bound`: learn/ff with l = lmcut, hmax, blind from two folders, one column
    group each in Table 1's and Table 2's layout (mean ± std over seeds), one header for the runs shown; runs of
    other configurations in those folders are left out, and a folder with none of the ablation's runs is an error."""
    from tnlib.cli import main
    from tnlib.experiments.reporting.reports import write_ablation

    data = tmp_path / "data"
    write_data_root(data)
    lmcut, others = tmp_path / "lmcut", tmp_path / "others"
    runs = [(lmcut, "lmcut", "TN", (1.0, 3.0), [[True, True], [True, False]]),
            (lmcut, "lmcut", "N", (4.0, 4.0), [[True, True]] * 2),
            (others, "hmax", "TN", (2.0, 2.0), [[False, False]] * 2),
            (others, "blind", "TN", (5.0, 7.0), [[True, True]] * 2)]
    for folder, bound, distribution, mses, solved in runs:
        folder.mkdir(exist_ok=True)
        for seed, mse in enumerate(mses):
            run = write_run(folder, data, [3, 2, 1, 1], seed=seed, lower_bound=bound, distribution=distribution)
            write_metrics(run, mse, 1.0)
            write_planning(run / "planning-default.jsonl", solved[seed])
    stray = write_run(lmcut, data, [3, 2, 1, 1], sigma="fixed", residual="none")  # not in the ablation
    write_metrics(stray, 0.5, 1.0)
    write_planning(lmcut / "baseline-blocksworld-ff.jsonl", [True, False])
    out = tmp_path / "reports"
    assert main(["report", str(lmcut), str(others), "--ablation", "lower-bound", "--out", str(out)]) == 0
    accuracy = (out / "accuracy.md").read_text()
    assert ("| domain | metric | h_FF | LM-cut | learn/ff/l=lmcut N | learn/ff/l=lmcut TN | learn/ff/l=hmax N | "
            "learn/ff/l=hmax TN | learn/ff/l=blind N | learn/ff/l=blind TN |") in accuracy
    # TN means 2, 2 and 6; N 4 (l = lmcut only); two seeds: nothing bold
    assert "| blocksworld | MSE | 5.00 | 6.00 | 4.00±.0 | 2.00±1.4 |  | 2.00±.0 |  | 6.00±1.4 |" in accuracy
    assert "Computed from the 8 run folders in `lmcut/`, `others/`" in accuracy  # the stray run is not counted
    planning = (out / "planning.md").read_text()
    # coverage: h_FF .5; N (l = lmcut) 1, TN with l = lmcut .75, hmax 0, blind 1; evaluations count an unsolved
    # instance as 10,000; two seeds: nothing bold
    assert ("| blocksworld | 0.50 | 1.00±0.00 |  | 0.75±0.35 |  |  | 0.00±0.00 |  |  | 1.00±0.00 |"
            in planning)
    assert "| blocksworld | 5050 | 100±0 |  | 2575±3500 |  |  | 10000±0 |  |  | 100±0 |" in planning
    with pytest.raises(ValueError, match="no nlm run of learn/ff l=lmcut"):
        write_ablation([data], tmp_path / "nothing", "lower-bound")
    assert not (tmp_path / "nothing").exists()
    assert main(["report", str(lmcut), str(others), "--out", str(out)]) == 2  # several folders: --ablation only
    assert "several only with --ablation" in capsys.readouterr().err
