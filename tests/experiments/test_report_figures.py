"""The reports' figures (tnlib.experiments.reporting.report_figures): the paper's Figure 2 as mean and range over
seeds, log axes' ticks, and the paired intervals drawn again from a report's per-seed CSVs."""
from __future__ import annotations

import pytest

from fixtures.run_folders import write_data_root, write_metrics, write_run


@pytest.mark.parametrize("values, ticks", [
    ([10.2, 75.0], [10, 20, 30, 50, 70, 100]),  # 1-2-5 would leave 10.2 without a tick below it but 10
    ([1.4, 5.0], [1, 1.5, 2, 3, 4, 5]),
    ([1.95, 2.69], [1.5, 2, 3]),
    ([0.3, 120.0], [0.1, 1, 10, 100, 1000]),  # finer sets give more than six ticks: decades
    ([0.0011, 7e5], [0.001, 0.1, 10, 1000, 1e5, 1e6]),  # decades, every other one, the top one kept
    ([float("nan"), -1.0, None], []),
])
def test_log_axis_ticks_bracket_the_values_with_at_most_six_round_ticks(values, ticks):
    from tnlib.experiments.reporting.report_figures import log_axis_ticks

    assert log_axis_ticks(values) == pytest.approx(ticks)


def test_a_round_log_axis_spans_its_ticks_and_falls_back_on_plotlys_without_values():
    import math

    import plotly.graph_objects as go

    from tnlib.experiments.reporting.report_figures import LOG_AXIS_TICKS, round_log_yaxis

    figure = go.Figure(layout=dict(yaxis_type="log"))
    round_log_yaxis(figure, [0.75, 0.92, 1.3])  # plotly alone labels 0.8, 0.9 and 1 on top of one another
    assert list(figure.layout.yaxis.tickvals) == pytest.approx([0.6, 0.8, 1, 1.5])
    low, high = figure.layout.yaxis.range
    assert low < math.log10(0.6) and math.log10(1.5) < high < math.log10(1.5) + 0.01
    empty = go.Figure(layout=dict(yaxis_type="log"))
    round_log_yaxis(empty, [None, float("nan")])
    assert empty.layout.yaxis.tickvals is None and empty.layout.yaxis.nticks == LOG_AXIS_TICKS["nticks"]


def test_figure2_draws_each_distributions_seed_mean_and_range(tmp_path):
    """Mean and min-max band over seeds, at the steps every seed evaluated; N before TN; other configurations,
    domains and lower bounds left out."""
    from tnlib.experiments.reporting.report_figures import validation_spread_figure

    data, results = tmp_path / "data", tmp_path / "results"
    write_data_root(data)
    results.mkdir()
    write_run(results, data, [8, 4, 2], distribution="TN", seed=0)
    write_run(results, data, [6, 2, 1, 0.5], distribution="TN", seed=1)  # one more evaluation: not in the band
    write_run(results, data, [9, 9, 9], distribution="N", seed=0)
    write_run(results, data, [1, 1, 1], distribution="N", sigma="fixed", residual="none")  # another configuration
    write_run(results, data, [5, 5, 5], distribution="N", lower_bound="hmax")  # another lower bound
    figure = validation_spread_figure(results, "blocksworld")
    traces = {trace.name: trace for trace in figure.data}
    assert [t.name for t in figure.data] == [None, "N: seeds' range", "N (1 seed): mean",
                                             None, "TN: seeds' range", "TN (2 seeds): mean",
                                             "TN: seeds trained on"]
    assert list(traces["TN (2 seeds): mean"].x) == [50, 100, 150]
    assert list(traces["TN (2 seeds): mean"].y) == [7, 3, 1.5]
    assert list(figure.data[3].y) == [8, 4, 2] and list(traces["TN: seeds' range"].y) == [6, 2, 1]
    assert traces["TN: seeds' range"].fill == "tonexty"
    assert list(traces["N (1 seed): mean"].y) == [9, 9, 9]
    assert figure.layout.yaxis.type == "log"


def test_figure2_continues_seeds_that_trained_on_as_lines_of_their_own(tmp_path):
    """Runs trained until flat end at different steps: the band covers the common steps, each seed past them
    goes on from the last common step as its own dotted line (none for the seed that stopped there), the lines one
    legend entry."""
    from tnlib.experiments.reporting.report_figures import validation_spread_figure

    data, results = tmp_path / "data", tmp_path / "results"
    write_data_root(data)
    results.mkdir()
    write_run(results, data, [8, 4, 2], distribution="N", seed=0)
    write_run(results, data, [6, 3, 2, 1.5, 1], distribution="N", seed=1)
    write_run(results, data, [7, 5, 3, 2.5], distribution="N", seed=2)
    figure = validation_spread_figure(results, "blocksworld")
    assert [t.name for t in figure.data] == [None, "N: seeds' range", "N (3 seeds): mean",
                                             "N: seeds trained on", "N: seeds trained on"]
    assert list(figure.data[2].x) == [50, 100, 150] and list(figure.data[2].y) == [7, 4, 7 / 3]
    one, two = figure.data[3], figure.data[4]
    assert (list(one.x), list(one.y)) == ([150, 200, 250], [2, 1.5, 1])
    assert (list(two.x), list(two.y)) == ([150, 200], [3, 2.5])
    assert one.line.dash == "dot" and one.legendgroup == "N"
    # one legend entry for both, each line's seed in its hover text
    assert (one.showlegend, two.showlegend) == (True, False)
    assert "seed 1," in one.hovertemplate and "seed 2," in two.hovertemplate


def test_a_reports_paired_intervals_are_drawn_again_from_its_seed_csvs_without_its_runs(tmp_path, capsys):
    """`tnlib intervals REPORT` draws the same forest plot as `tnlib report` from the report's per-seed CSVs once
    the run folders are gone; a report without the CSVs, or with two seeds, is refused with the reason."""
    import shutil

    from tnlib.cli import main
    from tnlib.experiments.reporting.report_figures import paired_intervals_figures, seed_csv_intervals_figures

    data = tmp_path / "data"
    write_data_root(data)
    for seeds in (2, 3):
        folder = tmp_path / f"seeds{seeds}"
        folder.mkdir()
        for seed in range(seeds):
            for distribution, mse, nll in (("N", 2.0 + seed, 3.0 - seed), ("TN", 1.5 + seed * 1.1, 1.0 + seed)):
                run = write_run(folder, data, [3, 2, 1], seed=seed, distribution=distribution)
                write_metrics(run, mse, nll)
                shutil.copy(run / "metrics-test.json", run / "metrics-test-best-nll.json")  # the NLL panel's
        assert main(["report", str(folder), "--out", str(tmp_path / f"out{seeds}")]) == 0
    from_runs = paired_intervals_figures(tmp_path / "seeds3")
    shutil.rmtree(tmp_path / "seeds3")
    from_csvs = seed_csv_intervals_figures(tmp_path / "out3")
    assert [model for model, _ in from_csvs] == [model for model, _ in from_runs] == ["nlm"]

    def drawn(figure):
        return [(t.y, t.x, t.error_x.array, t.error_x.arrayminus, t.name) for t in figure.data]

    assert drawn(from_csvs[0][1]) == drawn(from_runs[0][1]) and len(from_runs[0][1].data) == 3  # MSE twice, NLL
    capsys.readouterr()
    assert main(["intervals", str(tmp_path / "out3"), "--out", str(tmp_path / "drawn.html")]) == 0
    page = (tmp_path / "drawn.html").read_text()
    assert 'id="intervals-nlm"' in page and "tnlib intervals out3" in page
    assert "What these results can and cannot show" in page and ">Tables</h2>" not in page
    assert main(["intervals", str(tmp_path / "out2")]) == 2
    assert "has the 3 seeds a paired interval needs" in capsys.readouterr().err
    assert main(["intervals", str(tmp_path / "missing")]) == 2
    assert f"no folder {tmp_path / 'missing'}" in capsys.readouterr().err
    (tmp_path / "out3" / "accuracy-seeds.csv").unlink()
    assert main(["intervals", str(tmp_path / "out3")]) == 2
    assert "holds no accuracy-seeds.csv" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()  # not a report at all: said so, not taken for an old one
    assert main(["intervals", str(tmp_path / "empty")]) == 2
    assert "holds no rendered report (no accuracy.md, no accuracy-seeds.csv)" in capsys.readouterr().err
