"""Table 1 per size on the whole test grid: which split labels each cell (tnlib.data.full_test_grid), the test-grid
evaluation per cell against direct computations (tnlib.learning.evaluation), and the page `tnlib report` renders
from it (tnlib.experiments.reporting.size_tables), on a tiny gripper dataset and linear runs of a few steps."""
from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from tnlib.data.full_test_grid import full_test_grid
from tnlib.data.generation import GenerateOptions, generate_dataset
from tnlib.data.profiles import SplitGrid, combos
from tnlib.data.schema import EXACT_SOLVER, TEST_GRID
from tnlib.experiments.reporting.reports import render_results
from tnlib.experiments.reporting.size_tables import SIZES_FIGURE, SIZES_PAGE, SIZES_SEEDS, size_metrics_note
from tnlib.learning.evaluation import evaluate, evaluate_run
from tnlib.learning.heads import HeadConfig
from tnlib.learning.training import TrainConfig, load_items, train

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dataset_helpers import shared_dataset, tiny_profile  # noqa: E402

SEEDS = (0, 1, 2)


def _profile():
    """gripper's test grid of 4 and 5 balls, of which the test-grid split labels 5 (the test split: 4)."""
    profile = tiny_profile(sat_max_evaluations=200)
    profile.grids["gripper"]["test"] = SplitGrid(combos("gripper", balls=(4, 5)), (1, 2))
    profile.grids["gripper"][TEST_GRID] = SplitGrid(combos("gripper", balls=(5,)), (1, 2))
    profile.time_limits[TEST_GRID] = profile.time_limits["test"]
    return profile


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return shared_dataset(tmp_path_factory, "size-tables", lambda root: generate_dataset(
        root, ["gripper"], _profile(), ("train", "val", "test", TEST_GRID),
        GenerateOptions(progress=False, solver=EXACT_SOLVER)))


@pytest.fixture(scope="module")
def runs(tmp_path_factory, data) -> Path:
    """N and TN (learn/ff, linear) at three seeds, tested on the test split only."""
    results = tmp_path_factory.mktemp("size-runs") / "runs"
    for seed in SEEDS:
        for distribution in ("N", "TN"):
            run = train(TrainConfig(domain="gripper", model="linear", head=HeadConfig(distribution=distribution),
                                    steps=4, batch_size=4, eval_every=2, seed=seed, data_root=str(data),
                                    out_dir=str(results), progress=False))
            evaluate_run(run, "test")
    return results


def _run_folders(results: Path) -> list[Path]:
    return sorted(p.parent for p in results.glob("*/config.json"))


def test_each_cell_is_labelled_by_the_test_grid_else_by_a_whole_test_cell(data, tmp_path):
    cells = full_test_grid(data, "gripper")
    assert [(c.params, c.split) for c in cells] == [({"balls": 4}, "test"), ({"balls": 5}, TEST_GRID)]
    manifest = json.loads((data / "gripper" / "manifest.json").read_text())
    assert cells[0].instances == tuple(i["instance"] for i in manifest["splits"]["test"]["instances"]
                                       if i["params"] == {"balls": 4})
    assert cells[1].instances == tuple(i["instance"] for i in manifest["splits"][TEST_GRID]["instances"])
    # a test cell one of whose draws met the solver's time limit holds the easier draws: no split labels it whole
    copy = tmp_path / "data"
    shutil.copytree(data, copy)
    first = next(i for i in manifest["splits"]["test"]["instances"] if i["params"] == {"balls": 4})
    first["rejected"] = [{"seed": 1, "status": "timeout", "seconds": 30.0}]
    (copy / "gripper" / "manifest.json").write_text(json.dumps(manifest))
    assert [(c.split, c.instances) for c in full_test_grid(copy, "gripper")] == [(None, ()),
                                                                                (TEST_GRID, cells[1].instances)]


def test_the_test_grid_metrics_are_those_of_each_cells_states(runs, data):
    run = _run_folders(runs)[0]
    metrics = evaluate_run(run, TEST_GRID)
    assert json.loads((run / f"metrics-{TEST_GRID}.json").read_text()) == metrics
    config = TrainConfig.from_dict(json.loads((run / "config.json").read_text()))
    union = []
    for cell, size in zip(full_test_grid(data, "gripper"), metrics["sizes"]):
        items = load_items(config, cell.split, instances=list(cell.instances))
        union += items
        direct = evaluate(run, cell.split, items=items)
        assert (size["params"], size["split"], size["instances"], size["states"]) == (
            cell.params, cell.split, len(cell.instances), len(items))
        for key in ("mse", "mse_clip", "nll", "mse_ff", "mse_lmcut"):
            assert size[key] == pytest.approx(direct[key], rel=1e-6), key
    whole = evaluate(run, TEST_GRID, items=union)
    assert metrics["states"] == len(union) == sum(s["states"] for s in metrics["sizes"])
    assert metrics["mse"] == pytest.approx(whole["mse"], rel=1e-6)
    assert metrics["nll"] == pytest.approx(whole["nll"], rel=1e-6)


def test_the_report_says_what_writes_the_size_table_until_runs_have_it(runs, tmp_path):
    results = tmp_path / "runs"
    shutil.copytree(runs, results)
    for run in _run_folders(results):
        (run / f"metrics-{TEST_GRID}.json").unlink(missing_ok=True)
    # the whole split's metrics without the per-cell records, as an evaluation before they existed wrote them
    first = _run_folders(results)[0]
    (first / f"metrics-{TEST_GRID}.json").write_text(json.dumps(json.loads((first / "metrics-test.json").read_text())))
    note = size_metrics_note(results)
    assert note is not None and f"--split {TEST_GRID}" in note and "6 tested runs" in note
    written = render_results(results, tmp_path / "report")
    assert not (tmp_path / "report" / SIZES_PAGE).exists() and all(p.name != SIZES_PAGE for p in written)


def test_the_size_page_gives_table_1_per_size_beside_the_reduced_split(runs, tmp_path):
    results = tmp_path / "runs"
    shutil.copytree(runs, results)
    for run in _run_folders(results):
        evaluate_run(run, TEST_GRID)
    assert size_metrics_note(results) is None
    render_results(results, tmp_path / "report")
    page = (tmp_path / "report" / SIZES_PAGE).read_text()
    def by_run(name: str) -> dict:  # "N0": seed 0's N run's metrics
        records = [json.loads(p.read_text()) for p in results.glob(f"*/{name}")]
        return {f"{r['distribution']}{r['seed']}": r for r in records}

    grid, test = by_run(f"metrics-{TEST_GRID}.json"), by_run("metrics-test.json")

    def row(label: str, metric: str = "MSE") -> list[str]:
        line = next(line for line in page.splitlines() if line.startswith(f"| {label} | {metric} |"))
        return [cell.strip() for cell in line.strip("|").split("|")]

    def shown_mean(values) -> str:  # as Table 1 shows a mean under 100: two decimals, no leading zero
        text = f"{np.mean(values):.2f}"
        return text[1:] if text.startswith("0.") else text

    # columns: size, metric, h_FF, LM-cut, learn/ff N, learn/ff TN
    assert row("test split (reduced)")[4].startswith(shown_mean([test[f"N{s}"]["mse"] for s in SEEDS]))
    assert row("whole test grid")[5].startswith(shown_mean([grid[f"TN{s}"]["mse"] for s in SEEDS]))
    for i, label in enumerate(("balls 4", "balls 5")):
        assert row(label)[4].startswith(shown_mean([grid[f"N{s}"]["sizes"][i]["mse"] for s in SEEDS]))
        assert row(label, "NLL")[5].startswith(shown_mean([grid[f"TN{s}"]["sizes"][i]["nll"] for s in SEEDS]))
    assert "| balls 4 | test | " in page and f"| balls 5 | {TEST_GRID} | " in page
    # three seeds: a paired interval per size and comparison
    paired = next(line for line in page.splitlines() if line.startswith("| balls 5 | learn/ff |"))
    assert paired.count(", n 3") == 3
    # under the table, each comparison's verdicts over the two sizes, as their cells say
    for column, comparison in enumerate(("TN - N (MSE)", "TN - N+clip (MSE)", "TN - N (NLL)")):
        cells = {label: next(line for line in page.splitlines() if line.startswith(f"| {label} | learn/ff |"))
                 .strip("|").split("|")[2 + column] for label in ("balls 4", "balls 5")}
        said = {label: "better" if "**better**" in cell else "worse" if " worse" in cell else "within noise"
                for label, cell in cells.items()}
        tally = next(line for line in page.splitlines() if line.startswith(f"- learn/ff, {comparison}:"))
        assert tally.startswith(f"- learn/ff, {comparison}: of 2 sizes with a paired interval, ")
        for verdict in ("better", "within noise", "worse"):
            labels = [label for label in ("balls 4", "balls 5") if said[label] == verdict]
            named = (f"{verdict} at {len(labels)} ({' / '.join(labels)})" in tally
                     or f"{verdict} at the other {len(labels)}" in tally or f"{verdict} at all {len(labels)}" in tally)
            assert named == bool(labels), (tally, said)
    rows = list(csv.DictReader((tmp_path / "report" / SIZES_SEEDS).open()))
    # per seed: N, N+clip and TN on the whole grid and each of its two sizes
    assert len(rows) == 3 * len(SEEDS) * 3
    assert {r["size"] for r in rows} == {"whole test grid", "balls 4", "balls 5"}
    one = next(r for r in rows if r["size"] == "balls 5" and r["column"] == "N+clip" and r["seed"] == "1")
    assert float(one["mse"]) == grid["N1"]["sizes"][1]["mse_clip"]
    # the paired intervals per size drawn beside the page, under its name
    figure_page = (tmp_path / "report" / SIZES_FIGURE).read_text()
    assert "TN against N+clip and N, size by size" in figure_page and SIZES_PAGE in figure_page


def test_runs_evaluated_on_different_test_grids_are_not_pooled(runs, tmp_path):
    results = tmp_path / "runs"
    shutil.copytree(runs, results)
    folders = _run_folders(results)
    for run in folders:
        evaluate_run(run, TEST_GRID)
    stale = folders[0] / f"metrics-{TEST_GRID}.json"
    metrics = json.loads(stale.read_text())
    metrics["sizes"] = metrics["sizes"][1:]  # evaluated before the grid held 4 balls
    stale.write_text(json.dumps(metrics))
    with pytest.raises(ValueError, match="different test grids"):
        render_results(results, tmp_path / "report")


def test_the_verdicts_over_the_sizes_name_each_size_under_its_verdict():
    from tnlib.experiments.reporting.size_tables import _verdicts_over_sizes

    text = _verdicts_over_sizes({("fixed/none", "TN - N+clip (MSE)"): {"balls 20": "better", "balls 40": "worse",
                                                                      "balls 60": "worse"}})
    assert ("- fixed/none, TN - N+clip (MSE): of 3 sizes with a paired interval, better at 1 (balls 20); worse at the "
            "other 2.") in text
    one = _verdicts_over_sizes({("learn/ff", "TN - N (MSE)"): {"locations 10, cars 10": "within noise",
                                                               "locations 10, cars 15": "within noise"}})
    assert "of 2 sizes with a paired interval, within noise at all 2." in one
    mixed = _verdicts_over_sizes({("learn/ff", "TN - N (MSE)"): {"a": "worse", "b": "better", "c": "within noise",
                                                                 "d": "within noise"}})
    assert "better at 1 (b); worse at 1 (a); within noise at the other 2." in mixed
    assert _verdicts_over_sizes({}) == ""


def test_the_size_figure_draws_each_sizes_paired_interval_filled_where_it_excludes_zero():
    """accuracy-by-size.html's figure: per size, TN - N+clip (first column) and TN - N as scipy's paired t-interval,
    a filled dot where it excludes 0 and a hollow one where it holds it; the pooled rows above the sizes are no
    size; fewer than three seeds draw nothing."""
    from scipy import stats

    from tnlib.experiments.reporting.report_figures import size_intervals_figure

    shifts = {"balls 20": (-1.0, -1.2, -0.8, -1.1), "balls 40": (0.5, -0.5, 0.3, -0.2)}
    rows = []
    for size in ("whole test grid", *shifts):
        for seed in range(4):
            base = 10.0 + seed
            for column, mse in (("N", base + 50), ("N+clip", base),
                                ("TN", base + (shifts[size][seed] if size in shifts else 99.0))):
                rows.append({"domain": "gripper", "size": size, "model": "nlm", "sigma": "learn", "residual": "ff",
                             "column": column, "seed": str(seed), "mse": repr(mse)})
    figure = size_intervals_figure(rows, "nlm")
    clip, normal = figure.data  # one configuration: one trace per panel, TN - N+clip's first
    assert list(clip.x) == [0, 1] and [t.text for t in figure.layout.annotations][0].startswith(
        "gripper: TN - N+clip")
    for i, size in enumerate(shifts):
        low, high = stats.t.interval(0.95, 3, loc=np.mean(shifts[size]), scale=stats.sem(shifts[size]))
        assert clip.y[i] == pytest.approx(np.mean(shifts[size]))
        assert clip.y[i] - clip.error_y.arrayminus[i] == pytest.approx(low)
        assert clip.y[i] + clip.error_y.array[i] == pytest.approx(high)
        assert normal.y[i] == pytest.approx(np.mean(shifts[size]) - 50)
    assert list(clip.marker.symbol) == ["circle", "circle-open"]
    assert list(figure.layout.xaxis.ticktext) == list(shifts)
    assert size_intervals_figure([r for r in rows if r["seed"] in ("0", "1")], "nlm") is None
