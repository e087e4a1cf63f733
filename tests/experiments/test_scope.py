"""The reports' header (tnlib.experiments.scope): every statement computed from synthetic run folders whose answer
is known -- a still-improving curve, a missing configuration, a short budget, an easy plan set, a smaller test set."""
from __future__ import annotations

import json
import math

import pytest

from tnlib.experiments.scope import collect_scope, render_scope, scope_header
from tnlib.learning.training import TrainConfig


# ---------------------------------------------------------------------------------------------------------------
# Synthetic run folders


def write_data_root(root, domain="blocksworld", train=200, test=50, test_states=700, test_params=None, plan=24):
    (root / domain).mkdir(parents=True, exist_ok=True)
    top = root / "manifest.json"
    manifest = json.loads(top.read_text()) if top.is_file() else {"domains": {}, "profile": "small"}
    manifest["domains"][domain] = {"manifest": f"{domain}/manifest.json"}
    top.write_text(json.dumps(manifest))
    params = test_params or [{"blocks": 9}, {"blocks": 10}]
    splits = {"train": {"counts": {"instances": train, "states": 10 * train}, "settings": {"grid": {"params": []}}},
              "test": {"counts": {"instances": test, "states": test_states}, "settings": {"grid": {"params": params}}},
              "plan": {"counts": {"instances": plan, "states": 10 * plan}, "settings": {"grid": {"params": params}}}}
    (root / domain / "manifest.json").write_text(json.dumps({"domain": domain, "splits": splits}))


def write_run(results, data_root, val_mse, domain="blocksworld", model="nlm", sigma="learn", residual="ff",
              distribution="TN", seed=0, steps=400, batch_size=64, eval_every=50, instances=None, **extra):
    config = TrainConfig.from_dict(dict(
        domain=domain, model=model, sigma=sigma, residual=residual, distribution=distribution, seed=seed, steps=steps,
        batch_size=batch_size, eval_every=eval_every, instances=instances, data_root=str(data_root),
        out_dir=str(results), **extra))
    run = results / config.name
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps(config.to_dict()))
    lines = [json.dumps({"step": eval_every * (i + 1), "train_loss": 1.0, "val_nll": 1.0, "val_mse": v,
                         "seconds": 0.1}) for i, v in enumerate(val_mse)]
    (run / "curves.jsonl").write_text("".join(line + "\n" for line in lines))
    return run


def write_planning(path, solved: list[bool], protocol="paper"):
    path.write_text("".join(json.dumps({"problem": f"p{i}.pddl", "protocol": protocol, "solved": s,
                                        "evaluations": 100 if s else 10_000}) + "\n" for i, s in enumerate(solved)))


FALLING = [10, 8, 6, 5, 4, 3, 2, 1]
FLAT = [10, 5, 4, 3.9, 3.9, 3.9, 3.9, 3.9]


@pytest.fixture
def results(tmp_path):
    data, results = tmp_path / "data", tmp_path / "results"
    write_data_root(data)
    write_data_root(data, "gripper", train=200, test=51, test_states=692,
                    test_params=[{"balls": 8}, {"balls": 9}, {"balls": 10}])
    results.mkdir()
    (results / "sweep.json").write_text(json.dumps({"max_evaluations": 10_000}))
    # blocksworld: learn/ff N still falling, TN flat; fixed/none TN still falling but stopped at 300 of 400 steps
    write_run(results, data, FALLING, distribution="N")
    write_run(results, data, FLAT, distribution="TN")
    write_run(results, data, FALLING[:6], sigma="fixed", residual="none", distribution="TN")
    write_run(results, data, [5, 4], domain="gripper", distribution="TN", seed=1, eval_every=200)  # too short
    write_planning(results / "baseline-blocksworld-ff.jsonl", [True, True, False, True])
    write_planning(results / "baseline-gripper-ff.jsonl", [True, True])
    return results


def test_collect_scope_reads_what_was_done(results):
    scope = collect_scope(results)
    assert len(scope.runs) == 4
    improving = {r.name.split("-", 1)[1]: r.improving for r in scope.runs}
    assert improving == {"nlm-N-learn-ff-llmcut-s0": True, "nlm-TN-learn-ff-llmcut-s0": False,
                         "nlm-TN-fixed-none-llmcut-s0": True, "nlm-TN-learn-ff-llmcut-s1": None}
    assert sorted(scope.samples()) == [300 * 64, 400 * 64, 400 * 64, 400 * 64]
    assert scope.unfinished() == ["blocksworld-nlm-TN-fixed-none-llmcut-s0"]
    assert scope.missing("config") == ["learn/none", "fixed/ff"]
    assert scope.missing("model") == ["hgn", "linear"] and scope.missing("distribution") == []
    assert scope.missing("domain") == ["ferry", "visitall"]
    blocks = scope.domains["blocksworld"]
    assert (blocks.train_instances, blocks.train_used) == (200, [200])
    assert (blocks.test_instances, blocks.test_states, blocks.test_sizes) == (50, 700, "blocks 9-10")
    assert (blocks.paper_test_instances, blocks.paper_test_sizes) == (12 * 11, "blocks 11-22")  # the paper profile
    assert (blocks.planned, blocks.ff_solved, blocks.plan_split_size, blocks.protocols) == (4, 3, 24, ["paper"])
    gripper = scope.domains["gripper"]
    assert (gripper.test_sizes, gripper.paper_test_sizes) == ("balls 8-10", "balls {20,40,60,80,100}")
    assert (gripper.planned, gripper.ff_solved) == (2, 2)


def test_header_states_budget_gaps_sets_and_curves(results):
    header = scope_header(results)
    assert header.startswith("## What these results can and cannot show")
    assert "4 run folders in `results/`" in header
    assert "| training per run | 300-400 steps x batch 64 = 19,200-25,600 samples (0.19%-0.25%); 1 run stopped " \
           "before its configured steps | 40,000 steps x batch 256 = 10,240,000 samples |" in header
    assert "| seeds | 2 (0, 1); 0-1 per cell" not in header  # (per-cell counts only when they differ)
    assert "| configurations (sigma/residual) | learn/ff, fixed/none (missing: learn/none, fixed/ff) |" in header
    assert "| models | nlm (missing: hgn, linear) |" in header
    assert ("| blocksworld | 200 (all) | 50 instances, 700 states; blocks 9-10 | 132 instances; blocks 11-22 | "
            "3/4 (0.75); 4 of the split's 24 planned | 0.13 of 100 |") in header
    assert "GBFS: at most 10,000 evaluations, counted by `paper`: the paper's counting" in header
    assert "(the paper: 10,000)" not in header
    assert "**2 of 3 runs** (1 with fewer than 4 evaluations cannot tell)" in header
    assert "| nlm | learn/ff | 1 of 1 still improving | 0 of 1 still improving (1 too short) |" in header
    assert "| nlm | fixed/none |  | 1 of 1 still improving |" in header
    caveats = header.split("**Read the tables with this in mind:**")[1]
    assert "saw 0.25% of the paper's training samples or less" in caveats
    assert "2 of 3 runs were still improving" in caveats
    assert "Trained a fixed number of steps, short of flat" in caveats and "reports/converged/" in caveats
    assert "configurations learn/none, fixed/ff; models hgn, linear; domains ferry, visitall" in caveats
    assert "2 seeds (the paper: 5): the ± are rough." in caveats
    assert "h_FF alone solves every planned instance of gripper:" in caveats  # not blocksworld: 3 of 4
    assert "Test sets differ from the paper's in blocksworld, gripper" in caveats
    assert "Plan sets of 2/4 instances (blocksworld, gripper; the paper: 100)" in caveats


def test_header_of_the_papers_setting_has_no_caveats_about_it(tmp_path):
    data, results = tmp_path / "data", tmp_path / "results"
    paper_params = [{"blocks": b} for b in range(11, 23)]
    write_data_root(data, train=456, test=132, test_states=2000, test_params=paper_params, plan=100)
    results.mkdir()
    for config in (("learn", "ff"), ("learn", "none"), ("fixed", "ff"), ("fixed", "none")):
        for distribution in ("N", "TN"):
            for seed in range(5):
                write_run(results, data, FLAT, sigma=config[0], residual=config[1], distribution=distribution,
                          seed=seed, steps=400, batch_size=25_600, instances=400)  # 400 x 25,600 = 40,000 x 256
    write_planning(results / "baseline-blocksworld-ff.jsonl", [True] * 13 + [False] * 87)
    scope = collect_scope(results)
    assert scope.domains["blocksworld"].train_used == [400]
    header = render_scope(scope)
    assert "(100%)" in header and "**0 of 40 runs**" in header and "400 (of 456)" in header
    caveats = header.split("**Read the tables with this in mind:**")[1]
    assert "training samples" not in caveats and "still improving" not in caveats and "seed" not in caveats
    assert "Test sets" not in caveats and "h_FF alone" not in caveats and "Plan sets" not in caveats
    assert "Not run here: models hgn, linear; domains ferry, gripper, visitall." in caveats


def test_header_flags_mixed_protocols_and_sigma_links(results, tmp_path):
    write_run(results, tmp_path / "data", FLAT, seed=2, sigma_link="bounded")
    run = write_run(results, tmp_path / "data", FLAT, seed=3)
    write_planning(run / "planning-default.jsonl", [True], protocol="distinct")
    header = scope_header(results)
    assert "`distinct`: distinct-state counting" in header and "**mixed protocols" in header
    assert "| learned sigma | 10 sigmoid(x) + 0.1, softplus(x) + 0.01 |" in header
    assert "different learned-sigma links (bounded, softplus) are averaged together" in header


def test_header_without_runs_or_data(tmp_path):
    assert "No run folders" in scope_header(tmp_path)
    run = write_run(tmp_path / "r", tmp_path / "no-data", [])
    header = scope_header(tmp_path / "r")
    assert "0 steps x batch 64 = 0 samples" in header and "| blocksworld | ? | ? |" in header
    assert "**0 of 0 runs** (1 with fewer than 4 evaluations cannot tell)" in header
    assert "1 seed (the paper: 5): the tables show no spread across seeds." in header
    assert run.is_dir()


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


def test_header_compares_a_smaller_evaluation_limit_with_the_papers(results):
    (results / "sweep.json").write_text(json.dumps({"max_evaluations": 200}))
    header = scope_header(results)
    assert "GBFS: at most 200 evaluations (the paper: 10,000), counted by `paper`" in header


def test_header_names_the_authors_seeds_fixed_sigma_and_plan_grid(results):
    header = scope_header(results)
    # the paper names no seeds; 0-4 are tnlib's, 42-400 the authors' scripts'
    assert "| seeds | 2 (0, 1) | 5, not named (the authors' scripts: 42, 100, 200, 300, 400) |" in header
    assert "5 (0, 1, 2, 3, 4)" not in header
    # a fixed/none run is here: the header states both fixed sigmas
    assert ("| fixed sigma | 1/sqrt(2) = 0.707 | 1/sqrt(2) = 0.707 in the text (the authors' code: "
            "sqrt(2) = 1.414) |") in header
    # the authors' Table 2 instances, beside the appendix's test grid (blocksworld and gripper are in `results`)
    assert "- blocksworld: blocks 11-22; seeds 1-11 -- the same as the appendix's" in header
    assert ("- gripper: balls {20,30,40,50,60}; seeds 1-20 -- the appendix's: balls {20,40,60,80,100}; "
            "seeds 1-20") in header
    assert "- ferry:" not in header  # not run here


def test_authors_plan_grid_differs_from_the_appendix_where_their_scripts_do():
    from tnlib.experiments.scope import authors_plan_grid

    assert authors_plan_grid("ferry") == (
        "locations {10,15,20,25,30}, cars {10,15,20,25,30}; seeds 1-4",
        "locations {10,15,20,25,30}, cars {10,15,20,25,30}; seeds 1-16")
    assert authors_plan_grid("visitall") == ("x 6-8, y 6-8, ratio {0.5,1} (x = y); seeds 1-17",
                                             "x 5-7, y 5-7, ratio {0.5,1}; seeds 1-17")
    assert authors_plan_grid("elevators") is None


def test_header_names_the_authors_fixed_sigma_where_runs_used_it(tmp_path):
    run = write_run(tmp_path / "r", tmp_path / "data", FLAT, sigma="fixed", residual="none", fixed_sigma="authors")
    assert run.name == "blocksworld-nlm-TN-fixed-authors-none-llmcut-s0"  # beside the paper's fixed/none, not on it
    assert ("| fixed sigma | sqrt(2) = 1.414 (the authors' code's) | 1/sqrt(2) = 0.707 in the text (the authors' "
            "code: sqrt(2) = 1.414) |") in scope_header(run.parent)


def test_learn_only_runs_state_no_fixed_sigma(tmp_path):
    run = write_run(tmp_path / "r", tmp_path / "data", FLAT)
    assert "| fixed sigma |" not in scope_header(run.parent)


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


def test_exported_notebooks_wrap_at_spaces_scroll_tables_and_hide_this_machines_paths():
    import nbformat

    from tnlib.experiments.running.reproduce import ROOT, notebook_html

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("| a | b |\n|---|---|\n| 1 | 2 |"),
        nbformat.v4.new_code_cell("print(path)", outputs=[nbformat.v4.new_output(
            "stream", name="stdout", text=f"  data      {ROOT}/data/small (profile small)\nwrote {ROOT}\n")])]
    html = notebook_html(notebook, ROOT / "reports" / "notebooks")
    assert str(ROOT) not in html and "data      data/small (profile small)" in html
    styles = html.split("<style>")
    ours = styles[-1]  # after JupyterLab's own styles, which break words anywhere
    assert "word-break: break-all" in "".join(styles[:-1])
    assert "word-break: normal" in ours and "overflow-x: auto" in ours and "display: block" in ours


def test_banner_and_notebook_show_paths_relative_to_the_repository():
    from tnlib.experiments.running.sweep_banner import describe_sweep
    from tnlib.experiments.sweep_settings import Sweep
    from tnlib.files import REPO_ROOT, shown_path

    assert shown_path(REPO_ROOT / "runs" / "small") == "runs/small"
    assert shown_path("/elsewhere/runs") == "/elsewhere/runs"
    banner = describe_sweep(Sweep.preset("small"))
    assert str(REPO_ROOT) not in banner and "  results   runs/small" in banner


def test_reports_name_a_results_folder_by_its_repository_path_and_never_by_a_machines_folder():
    """Three committed folders are all called runs/: inside the repository a report names the path; outside it
    the folder's name only (no /tmp/... or /home/... of the machine that rendered it)."""
    from tnlib.files import REPO_ROOT, shown_folder

    assert shown_folder(REPO_ROOT / "reports" / "paper-scale" / "runs") == "reports/paper-scale/runs"
    assert shown_folder("/elsewhere/experiments/runs") == "runs"


# ---------------------------------------------------------------------------------------------------------------
# The paper's Figure 2 and `tnlib report`


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
                                             "TN: seed 1, trained on"]
    assert list(traces["TN (2 seeds): mean"].x) == [50, 100, 150]
    assert list(traces["TN (2 seeds): mean"].y) == [7, 3, 1.5]
    assert list(figure.data[3].y) == [8, 4, 2] and list(traces["TN: seeds' range"].y) == [6, 2, 1]
    assert traces["TN: seeds' range"].fill == "tonexty"
    assert list(traces["N (1 seed): mean"].y) == [9, 9, 9]
    assert figure.layout.yaxis.type == "log"


def test_figure2_continues_seeds_that_trained_on_as_lines_of_their_own(tmp_path):
    """Runs trained until flat end at different steps: the band covers the common steps, each seed past them
    goes on from the last common step as its own dotted line (none for the seed that stopped there)."""
    from tnlib.experiments.reporting.report_figures import validation_spread_figure

    data, results = tmp_path / "data", tmp_path / "results"
    write_data_root(data)
    results.mkdir()
    write_run(results, data, [8, 4, 2], distribution="N", seed=0)
    write_run(results, data, [6, 3, 2, 1.5, 1], distribution="N", seed=1)
    write_run(results, data, [7, 5, 3, 2.5], distribution="N", seed=2)
    figure = validation_spread_figure(results, "blocksworld")
    assert [t.name for t in figure.data] == [None, "N: seeds' range", "N (3 seeds): mean",
                                             "N: seed 1, trained on", "N: seed 2, trained on"]
    assert list(figure.data[2].x) == [50, 100, 150] and list(figure.data[2].y) == [7, 4, 7 / 3]
    one, two = figure.data[3], figure.data[4]
    assert (list(one.x), list(one.y)) == ([150, 200, 250], [2, 1.5, 1])
    assert (list(two.x), list(two.y)) == ([150, 200], [3, 2.5])
    assert one.line.dash == "dot" and one.legendgroup == "N"


def test_report_command_renders_a_results_folder(results, tmp_path, capsys, monkeypatch):
    import tnlib.files
    from tnlib.cli import main
    from tnlib.experiments.reporting.reports import render_results

    out = tmp_path / "out"
    assert main(["report", str(results), "--out", str(out)]) == 0
    names = [line.rsplit("/", 1)[-1] for line in capsys.readouterr().out.splitlines()]
    assert names == ["accuracy.md", "planning.md", "training_curves.html", "accuracy-seeds.csv", "planning-seeds.csv",
                     "figure2.html", "findings.md", "findings.csv"]
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


def write_metrics(run, mse: float, nll: float) -> None:
    """A run's test metrics, as tnlib.learning.evaluation.evaluate_run writes them (the fields the tables read)."""
    config = json.loads((run / "config.json").read_text())
    metrics = {k: config[k] for k in ("domain", "model", "distribution", "sigma", "residual", "lower_bound", "seed")}
    (run / "metrics-test.json").write_text(json.dumps({**metrics, "mse": mse, "mse_clip": mse, "nll": nll,
                                                       "mse_ff": 5.0, "mse_lmcut": 6.0}))


def test_comparison_puts_two_folders_cells_side_by_side(tmp_path, capsys):
    """`tnlib report --against`: the cells both folders hold, columns named by the setting that differs (here the
    upper bound), mean ± std over seeds, the better of each pair in bold; cells only one folder has are left out."""
    from tnlib.cli import main
    from tnlib.experiments.reporting.folder_comparison import render_comparison

    data = tmp_path / "data"
    write_data_root(data)
    without, with_h_sat = tmp_path / "without", tmp_path / "with"
    for folder, extra, mses, solved in ((without, {}, (2.0, 4.0), [[True, False], [False, False]]),
                                        (with_h_sat, {"upper_bound": "h_sat"}, (1.0, 1.0), [[True, True]] * 2)):
        folder.mkdir()
        for seed, mse in enumerate(mses):
            run = write_run(folder, data, [3, 2, 1, 1], seed=seed, **extra)
            write_metrics(run, mse, 1.5 + seed)
            write_planning(run / "planning-default.jsonl", solved[seed])
    only_here = write_run(without, data, [3, 2, 1, 1], distribution="N")
    write_metrics(only_here, 9.0, 9.0)
    table = render_comparison(with_h_sat, without).splitlines()
    assert table[0] == ("| domain | model | configuration | distribution | test MSE: upper_bound h_sat | "
                        "test MSE: upper_bound none | test NLL: upper_bound h_sat | test NLL: upper_bound none | "
                        "plan coverage: upper_bound h_sat | plan coverage: upper_bound none | "
                        "average evaluations: upper_bound h_sat | average evaluations: upper_bound none |")
    # MSE 1±0 against 3±1.41; NLL 2±.71 both; coverage 1 against .25 (±.35); evaluations: an unsolved instance
    # counts as the 10,000 limit: (100 + 10,000) / 2 and 10,000; two seeds: nothing bold
    assert "GBFS plans with the lower bound only" in table[-1]  # what the MSE of u = h_sat does and does not show
    assert table[2:3] == ["| blocksworld | nlm | learn/ff | TN | 1.00±.0 | 3.00±1.4 | 2.00±.7 | 2.00±.7 | "
                         "1.00±0.00 | 0.25±0.35 | 100±0 | 7525±3500 |"]
    with pytest.raises(ValueError, match="share no"):
        render_comparison(with_h_sat, tmp_path / "data")
    out = tmp_path / "reports"
    assert main(["report", str(with_h_sat), "--out", str(out), "--against", str(without)]) == 0
    comparison = (out / "comparison.md").read_text()
    assert comparison.startswith("# `with/` against `without/`") and table[2] in comparison
    assert capsys.readouterr().out.splitlines()[-1].endswith("comparison.md")
    # a folder to compare with that is missing (a typo) is named as such, before anything is written
    typo = tmp_path / "whithout"
    assert main(["report", str(with_h_sat), "--out", str(tmp_path / "other"), "--against", str(typo)]) == 2
    assert f"--against {typo} holds no run folder" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()


def test_comparison_bolds_by_the_paired_interval_where_both_folders_have_three_seeds(tmp_path):
    """Same data, four seeds each: a shift every seed shows is bold though the seeds' spread is wider than it (the
    summed-std gap would not bold it), a difference that changes sign from seed to seed is not, and the table of
    paired intervals under the comparison gives both."""
    from tnlib.experiments.reporting.folder_comparison import COMPARISON_BOLD_RULE, render_comparison

    data = tmp_path / "data"
    write_data_root(data)
    base, shifted = tmp_path / "base", tmp_path / "shifted"
    for folder, extra, mse_shifts, nll_shifts in (
            (base, {}, (0, 0, 0, 0), (0, 0, 0, 0)),
            (shifted, {"sigma_link": "bounded"}, (.5, .6, .4, .5), (.5, -.6, .4, -.5))):
        folder.mkdir()
        for seed, (level, mse_shift, nll_shift) in enumerate(zip((1.0, 5.0, 9.0, 3.0), mse_shifts, nll_shifts)):
            run = write_run(folder, data, [3, 2, 1, 1], seed=seed, **extra)
            write_metrics(run, level + mse_shift, level + nll_shift)
    table = render_comparison(shifted, base).splitlines()
    assert table[0] == ("| domain | model | configuration | distribution | test MSE: sigma_link bounded | "
                        "test MSE: sigma_link softplus | test NLL: sigma_link bounded | test NLL: sigma_link softplus |")
    assert table[2] == "| blocksworld | nlm | learn/ff | TN | 5.00±3.4 | **4.50±3.4** | 4.45±3.5 | 4.50±3.4 |"
    assert COMPARISON_BOLD_RULE in table
    paired = table[table.index(COMPARISON_BOLD_RULE) + 2:]
    assert paired[0].startswith("Paired by seed, the first folder (`shifted`) minus the second (`base`)")
    row = [c.strip() for c in paired[-1].split("|")[1:-1]]
    assert row[:4] == ["blocksworld", "nlm", "learn/ff", "TN"]
    assert row[4] == ".50 [.37, .63] higher" and row[5].startswith("-.05 [") and not row[5].endswith(("lower", "higher"))


def test_comparison_plans_on_the_instances_both_folders_planned(tmp_path):
    """One folder planned more of the plan instances than the other (a plan set planned further): planning compares
    on the instances both planned, seeds paired on the same problems, and says how many of each folder's it kept.
    Here the extra instances are all unsolved: counted, they would halve that folder's coverage."""
    from tnlib.experiments.reporting.folder_comparison import render_comparison

    data = tmp_path / "data"
    write_data_root(data)
    base, further = tmp_path / "base", tmp_path / "further"
    for folder, extra, solved in ((base, {}, [True, False]),
                                  (further, {"sigma_link": "bounded"}, [True, False, False, False])):
        folder.mkdir()
        for seed in range(3):
            run = write_run(folder, data, [3, 2, 1], seed=seed, **extra)
            write_metrics(run, 1.0 + seed, 1.0)
            write_planning(run / "planning-default.jsonl", solved)
    table = render_comparison(further, base).splitlines()
    assert table[0].endswith("| plan coverage: sigma_link bounded | plan coverage: sigma_link softplus | "
                             "average evaluations: sigma_link bounded | average evaluations: sigma_link softplus |")
    assert table[2].replace("**", "").endswith("| 0.50±0.00 | 0.50±0.00 | 5050±0 | 5050±0 |")
    assert ("Planning compares the instances both folders planned with every run: blocksworld 2 (of 4 and 2) -- the "
            "other instances are in each folder's own planning.md.") in table
    # planned alike, nothing is said
    assert not any(line.startswith("Planning compares") for line in render_comparison(base, base).splitlines())


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


def test_a_folder_swept_without_planning_says_so_instead_of_empty_planning_tables(tmp_path, capsys):
    from tnlib.cli import main

    data, folder = tmp_path / "data", tmp_path / "runs"
    write_data_root(data)
    folder.mkdir()
    for seed in range(2):
        write_metrics(write_run(folder, data, [3, 2, 1], seed=seed), 1.0 + seed, 1.0)
    (folder / "sweep.json").write_text(json.dumps({"plan": False}))  # a sweep's folder, swept with --no-plan
    assert main(["report", str(folder), "--out", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    planning = (tmp_path / "out" / "planning.md").read_text()
    assert "No run of nlm was planned (the sweep ran with `--no-plan`)" in planning
    assert "Ratio of solved instances" not in planning


def test_comparison_across_datasets_names_them_bolds_nothing_and_leaves_out_planning_on_other_instances(
        tmp_path, capsys):
    """Two folders both named runs/, trained on different datasets (their test splits differ) and planned on
    different instances: columns and title say which is which, no magnitude is bold, planning is left out."""
    from tnlib.cli import main
    from tnlib.experiments.reporting.folder_comparison import folder_names, render_comparison

    large, small = tmp_path / "paper-scale" / "runs", tmp_path / "converged" / "runs"
    for folder, data_name, mses, plan_on in ((large, "paper", (1.0, 1.2), "plan-set"), (small, "small", (3.0,), None)):
        data = tmp_path / data_name
        if not data.is_dir():
            write_data_root(data)
        folder.mkdir(parents=True)
        (folder / "sweep.json").write_text(json.dumps({"plan_on": plan_on} if plan_on else {}))
        for seed, mse in enumerate(mses):
            run = write_run(folder, data, [3, 2, 1, 1], seed=seed)
            write_metrics(run, mse, 2.0)
            write_planning(run / "planning-default.jsonl", [True])
    assert folder_names(large, small) == ("paper-scale/runs", "converged/runs")
    table = render_comparison(large, small).splitlines()
    assert table[0] == ("| domain | model | configuration | distribution | test MSE: data/paper | "
                        "test MSE: data/small | test NLL: data/paper | test NLL: data/small |")
    assert table[2] == "| blocksworld | nlm | learn/ff | TN | 1.10±.1 | 3.00 (1 seed) | 2.00±.0 | 2.00 (1 seed) |"
    assert "**" not in "\n".join(table)
    assert table[-1] == ("Planning is left out: `paper-scale/runs` on data/paper's plan-set, `converged/runs` on "
                         "data/small's plan split -- not the same instances.")
    out = tmp_path / "reports"
    assert main(["report", str(large), "--out", str(out), "--against", str(small)]) == 0
    comparison = (out / "comparison.md").read_text()
    assert comparison.startswith("# `paper-scale/runs/` against `converged/runs/`")
    assert "**Set against** `converged/runs/`: 1 tested run (data/small), 1 seed per cell (1 cell)." in comparison
    capsys.readouterr()


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


def test_header_of_runs_trained_until_flat_says_how_far_each_went(tmp_path):
    """A sweep with max_steps: the header says the runs trained until flat, how many went on and how many reached
    the cap, and gives each cell's range of steps; runs still improving are the ones that hit the cap."""
    data, results = tmp_path / "data", tmp_path / "results"
    write_data_root(data)
    results.mkdir()
    (results / "sweep.json").write_text(json.dumps({"max_evaluations": 10_000, "steps": 200, "max_steps": 800}))
    write_run(results, data, FLAT, distribution="N", steps=200, eval_every=25)  # flat at once: 200 steps
    write_run(results, data, FLAT + [3.9] * 4, distribution="N", seed=1, steps=600, eval_every=50)  # went on
    write_run(results, data, FALLING, distribution="TN", steps=800, eval_every=100)  # reached the cap improving
    scope = collect_scope(results)
    assert scope.until_flat == (200, 800)
    assert scope.steps_trained() == {("nlm", "learn/ff", "N"): [200, 600], ("nlm", "learn/ff", "TN"): [800]}
    header = render_scope(scope)
    assert ("| training per run | 200-800 steps x batch 64 = 12,800-51,200 samples (0.12%-0.5%); trained until flat "
            "(beyond the paper): 200 steps, then on while still improving, up to 800 -- 2 of 3 runs went on, "
            "1 reached 800 |") in header
    assert ("| nlm | learn/ff | 0 of 2 still improving, 200-600 (median 400) steps | "
            "1 of 1 still improving, 800 steps |") in header
    assert "1 of 3 runs were still improving when training stopped at max_steps (800)" in header
    assert "short of flat" not in header  # they went on while improving: nothing left to the converged presets
    # a sweep of a fixed number of steps says none of it
    (results / "sweep.json").write_text(json.dumps({"max_evaluations": 10_000, "steps": 200}))
    plain = render_scope(collect_scope(results))
    assert collect_scope(results).until_flat is None
    assert "until flat" not in plain and "at max_steps" not in plain
    assert "| nlm | learn/ff | 0 of 2 still improving, 200-600 (median 400) steps |" in plain  # steps differ


def test_header_leaves_out_runs_still_training_beside_evaluated_ones(tmp_path):
    """A folder a sweep is still filling: the header describes the runs the tables read (those with test metrics)
    and names the others; a folder where no run has test metrics yet is described whole."""
    data, results = tmp_path / "data", tmp_path / "results"
    write_data_root(data)
    write_data_root(data, "gripper", train=120, test=51, test_states=692, test_params=[{"balls": 8}])
    results.mkdir()
    (results / "sweep.json").write_text(json.dumps({"max_evaluations": 10_000, "data_root": None}))
    done = write_run(results, data, FLAT, distribution="N", steps=200, eval_every=25)
    training = write_run(results, data, FALLING[:3], domain="gripper", distribution="TN", steps=800,
                         eval_every=100)
    write_planning(results / "baseline-gripper-ff.jsonl", [True, False])
    whole = collect_scope(results)
    assert sorted(r.name for r in whole.runs) == sorted([done.name, training.name]) and not whole.without_metrics
    write_metrics(done, mse=1.0, nll=1.0)
    scope = collect_scope(results)
    assert [r.name for r in scope.runs] == [done.name] and scope.without_metrics == [training.name]
    # gripper, planned by its baseline but with no run tabled yet, reads the data the folder's runs trained on
    assert (scope.domains["gripper"].train_instances, scope.domains["gripper"].test_states) == (120, 692)
    header = render_scope(scope)
    assert "Computed from the 1 run folder in" in header
    assert f"Left out: 1 run folder without test metrics yet (still training, or stopped before the test " \
           f"evaluation): {training.name}." in header
    assert "| training per run | 200 steps x batch 64" in header  # not the 300 steps of the run still training


def test_tables_pool_seeds_that_trained_until_flat_to_different_steps(tmp_path):
    """In a folder whose sweep trained until flat, seeds of a cell that stopped at different steps (on the sweep's
    grid of chunks) are one setting; without max_steps in sweep.json, or off the grid, they are not."""
    from tnlib.experiments.reporting.tables import render_table, render_table2

    data, results = tmp_path / "data", tmp_path / "results"
    write_data_root(data)
    results.mkdir()
    sweep = {"max_evaluations": 10_000, "steps": 200, "max_steps": 800, "extend_steps": 200}
    (results / "sweep.json").write_text(json.dumps(sweep))
    for seed, steps, mse in ((0, 200, 1.0), (1, 600, 3.0)):
        run = write_run(results, data, [10, 5] + [3.9] * (steps // 25 - 2), distribution="TN", seed=seed, steps=steps,
                        eval_every=25)
        write_metrics(run, mse, 0.5)
        write_planning(run / "planning-default.jsonl", [True, True])
    write_planning(results / "baseline-blocksworld-ff.jsonl", [True, True])
    assert "| 2.00±1.4 |" in render_table(results)  # mean and sample std of the two seeds
    assert "| 100±0 |" in render_table2(results)  # both seeds pooled: 100 evaluations (two seeds: not bold)
    (results / "sweep.json").write_text(json.dumps({**sweep, "extend_steps": 300}))  # 600 is not 200 + k x 300
    with pytest.raises(ValueError, match=r'differ in more than the seed \(steps: "until flat: 200-800, by 300", 600\)'
                                         r": render them from separate results folders"):
        render_table(results)
    (results / "sweep.json").write_text(json.dumps({"max_evaluations": 10_000, "steps": 200}))
    with pytest.raises(ValueError, match=r"differ in more than the seed \(steps: 200, 600\): if a sweep trained them "
                                         r"until flat, the results folder holds no sweep.json that says so"):
        render_table2(results)


def write_visitall_metrics(folder, distribution, seed, mse) -> None:
    """A tested visitall learn/ff NLM run with only the fields the directions read."""
    run = folder / f"visitall-{distribution}-s{seed}"
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps(dict(
        domain="visitall", model="nlm", distribution=distribution, sigma="learn", residual="ff", lower_bound="lmcut",
        seed=seed)))
    write_metrics(run, mse, 1.0)


def test_directions_say_where_the_papers_tn_against_n_holds(tmp_path):
    """render_directions: the paper's TN-vs-N direction per cell (a gap beyond the summed std over seeds), in which
    of two folders it shows, and whether the folders agree; below three seeds a folder's direction is the summed-std
    gap too."""
    from tnlib.experiments.reporting.paper_directions import render_directions

    def folder(name, mses):
        for (distribution, seed), mse in mses.items():
            write_visitall_metrics(tmp_path / name, distribution, seed, mse)
        return tmp_path / name

    # the paper: visitall learn/ff TN 5.30±.6 against N 7.67±.4 and N+clip 7.60±.4 -- TN lower beyond the spread
    large = folder("large", {("TN", 0): 2.0, ("TN", 1): 2.2, ("N", 0): 4.0, ("N", 1): 4.4})
    small = folder("small", {("TN", 0): 3.0, ("TN", 1): 5.0, ("N", 0): 4.0, ("N", 1): 4.2})
    text = render_directions(large, small, names=("large", "small"), configs=[("learn", "ff")])
    rows = {tuple(c.strip() for c in line.split("|")[1:4]): [c.strip() for c in line.split("|")[4:9]]
            for line in text.splitlines() if line.startswith("| visitall")}
    assert rows[("visitall", "learn/ff", "TN vs N")] == [
        "TN lower (5.30 vs 7.67)", "TN lower (2.10 vs 4.20)", "within noise (4.00 vs 4.10)", "only in large",
        "differ"]
    ferry = [line for line in text.splitlines() if line.startswith("| ferry")]
    assert ferry and all(line.endswith("| the paper has none |  |") for line in ferry)  # 3.45±.8 against 3.73±.7
    assert "not run" in text and "only in large 2" in text
    assert "The two folders agree in 0 of the 2 comparisons both ran, differ in 2." in text


def test_directions_with_three_seeds_or_more_follow_the_paired_interval(tmp_path):
    """With at least three seeds a folder's direction is the paired interval's: a shift every seed shows counts
    though the seeds' spread is far wider (the summed-std gap would call it a tie), and a difference whose sign
    changes from seed to seed does not."""
    from tnlib.experiments.reporting.paper_directions import render_directions

    def folder(name, shifts):
        for seed, (n_mse, shift) in enumerate(zip((1.0, 5.0, 9.0, 3.0), shifts)):
            for distribution, mse in (("N", n_mse), ("TN", n_mse + shift)):
                write_visitall_metrics(tmp_path / name, distribution, seed, mse)
        return tmp_path / name

    steady = folder("steady", (-.5, -.6, -.4, -.5))
    mixed = folder("mixed", (-.5, .6, .1, -.4))
    text = render_directions(steady, mixed, names=("steady", "mixed"), configs=[("learn", "ff")])
    row = next(line for line in text.splitlines() if line.startswith("| visitall | learn/ff | TN vs N |"))
    cells = [c.strip() for c in row.split("|")[5:9]]
    assert cells[0].startswith("TN lower (4.00 vs 4.50; -.50 [-.63, -.37]")
    assert cells[1].startswith("within noise (4.45 vs 4.50; -.05 [")
    assert cells[2:] == ["only in steady", "differ"]
    same = render_directions(steady, steady, names=("a", "b"), configs=[("learn", "ff")])
    assert "The two folders agree in 2 of the 2 comparisons both ran, differ in 0." in same




def test_header_names_the_hardware_that_trained_the_runs_and_flags_a_run_resumed_on_another(results):
    assert "| trained on |" not in scope_header(results)  # no run folder records it: the header it always had
    runs = sorted(path for path in results.iterdir() if (path / "config.json").is_file())

    def record(run, *starts):
        (run / "machines.jsonl").write_text("".join(json.dumps({"step": step, "machine": machine}) + "\n"
                                                    for step, machine in starts))

    for run in runs[:2]:
        record(run, (0, "CPU A, AVX512"))
    header = scope_header(results)
    assert "| trained on | CPU A, AVX512: 2 runs; not recorded: 2 runs | one NVIDIA Tesla V100 |" in header
    assert "more than one kind of hardware" not in header
    record(runs[2], (0, "CPU A, AVX512"), (200, "GPU B, CUDA 12.8"))
    record(runs[3], (100, "CPU A, AVX512"))  # its first 100 steps were trained before run folders said where
    header = scope_header(results)
    assert (f"| trained on | CPU A, AVX512: 2 runs; CPU A, AVX512, then GPU B, CUDA 12.8: 1 run ({runs[2].name}); "
            f"not recorded, then CPU A, AVX512: 1 run ({runs[3].name}) | one NVIDIA Tesla V100 |") in header
    caveats = header.split("**Read the tables with this in mind:**")[1]
    assert "Trained on more than one kind of hardware (above)" in caveats


def test_header_names_the_code_that_trained_the_runs_where_their_starts_record_it(results):
    runs = sorted(path for path in results.iterdir() if (path / "config.json").is_file())
    assert len(runs) == 4

    def record(run, *starts):
        (run / "machines.jsonl").write_text("".join(
            json.dumps({"step": step, "machine": "CPU A, AVX2", **({"code": code} if code else {})}) + "\n"
            for step, code in starts))

    for run in runs:
        record(run, (0, None))
    assert "| code that trained" not in scope_header(results)  # no start records it: the header it always had
    record(runs[0], (0, "abc1234"))
    record(runs[1], (0, "abc1234"), (300, "def5678"))
    record(runs[2], (0, None), (100, "abc1234"))  # its first stretch trained before starts recorded the code
    assert (f"| code that trained (tnlib commit) | abc1234: 1 run; abc1234, then def5678: 1 run ({runs[1].name}); "
            f"not recorded, then abc1234: 1 run ({runs[2].name}); not recorded: 1 run | "
            "the authors' (IBM/pddlsl) |") in scope_header(results)


def test_runs_that_trained_on_a_whole_split_before_it_grew_say_so(results):
    blocksworld = sorted(path for path in results.iterdir() if path.name.startswith("blocksworld"))
    for run in blocksworld:  # each asked for the whole split (instances null) when it held 150 of today's 200
        (run / "data.json").write_text(json.dumps({"train_instances_requested": None, "train_instances": 150}))
    scope = collect_scope(results)
    assert (scope.domains["blocksworld"].train_used, scope.domains["blocksworld"].train_then) == ([150], [150])
    assert "| blocksworld | 150 (all the split then held; 200 now) |" in render_scope(scope)
