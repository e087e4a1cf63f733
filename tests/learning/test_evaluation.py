"""Test metrics against direct computations, and the Table 1 renderer on hand-made results."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from fixtures.heuristic_items import small_items
from tnlib.experiments.reporting.table_rows import check_one_setting, collect_results, run_config
from tnlib.experiments.reporting.tables import render_table, table1_cells
from tnlib.paper import TABLE1_CONFIGS
from tnlib.learning.evaluation import evaluate_run
from tnlib.learning.heads import HeadConfig
from tnlib.learning.training import TrainConfig, load_checkpoint, train


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return small_items("ferry", tmp_path_factory.mktemp("accuracy"))


@pytest.mark.parametrize("distribution", ["N", "TN"])
def test_evaluate_matches_a_direct_computation(tmp_path, data, distribution):
    cfg = TrainConfig(domain="ferry", model="linear", head=HeadConfig(distribution=distribution), steps=5,
                      batch_size=4, eval_every=5, out_dir=str(tmp_path), progress=False)
    run = train(cfg, data, data)
    metrics = evaluate_run(run, "test", items=data)
    model, head, _, _ = load_checkpoint(run)
    x = torch.stack([i["features"] for i in data])
    h = torch.stack([i["h_star"] for i in data]).double()
    lower = torch.stack([i["lower"] for i in data])
    with torch.no_grad():
        raw = model(x)
        mu = raw[:, 0].double() + torch.stack([i["residual"] for i in data]).double()
        p = head(raw, torch.stack([i["residual"] for i in data]), lower, torch.full_like(lower, torch.inf))
    ff = torch.tensor([i["ff"] for i in data], dtype=torch.float64)
    lmcut = torch.tensor([i["lmcut"] for i in data], dtype=torch.float64)
    estimate = mu if distribution == "N" else p.point_estimate().double()
    assert metrics["mse"] == pytest.approx(float(((estimate - h) ** 2).mean()), rel=1e-6)
    assert metrics["nll"] == pytest.approx(float(p.nll(h.float()).mean()), rel=1e-5)
    assert metrics["mse_ff"] == pytest.approx(float(((ff - h) ** 2).mean()), rel=1e-12)
    assert metrics["mse_lmcut"] == pytest.approx(float(((lmcut - h) ** 2).mean()), rel=1e-12)
    if distribution == "N":
        clipped = torch.maximum(mu, lower.double())
        assert metrics["mse_clip"] == pytest.approx(float(((clipped - h) ** 2).mean()), rel=1e-6)
    else:
        assert metrics["mse_clip"] is None
    assert json.loads((run / "metrics-test.json").read_text()) == metrics
    config = json.loads((run / "config.json").read_text())
    assert collect_results(tmp_path) == [{**metrics, "config": config}]
    by_nll = evaluate_run(run, "test", checkpoint="best-nll.pt", items=data)
    assert collect_results(tmp_path, checkpoint="best-nll.pt") == [{**by_nll, "config": config}]
    assert by_nll["checkpoint_step"] == torch.load(run / "best-nll.pt", weights_only=False)["step"]


def fake_results():
    """Two seeds for every cell of one domain, with known means."""
    results = []
    for seed, noise in ((0, -0.05), (1, 0.05)):
        for sigma, residual, n, clip, tn in (("learn", "ff", 0.76, 0.76, 0.65), ("learn", "none", 3.26, 2.91, 2.71),
                                             ("fixed", "ff", 2.98, 2.98, 3.85), ("fixed", "none", 9.0, 8.95, 8.92)):
            common = dict(domain="ferry", model="nlm", sigma=sigma, residual=residual, lower_bound="lmcut",
                          seed=seed, mse_ff=9.77, mse_lmcut=11.10, nll=1.0)
            results.append(dict(common, distribution="N", mse=n + noise, mse_clip=clip + noise))
            results.append(dict(common, distribution="TN", mse=tn + noise, mse_clip=None))
    # another model and another lower bound must be ignored
    results.append(dict(results[0], model="hgn", mse=1e9))
    results.append(dict(results[0], lower_bound="hmax", mse=1e9))
    return results


def test_table_cells_are_mean_and_std_over_seeds():
    cells = table1_cells(fake_results())["ferry"]
    mean, std = cells[("learn", "ff", "N")]
    assert mean == pytest.approx(0.76) and std == pytest.approx(np.std([0.71, 0.81], ddof=1))
    assert cells[("learn", "none", "N+clip")][0] == pytest.approx(2.91)
    assert cells["ff"] == (9.77, 0.0) and cells["lmcut"] == (11.10, 0.0)


def test_a_cell_pools_seeds_only():
    results = fake_results()
    for r in results:
        r["config"] = {"seed": r["seed"], "sigma_link": "softplus", "steps": 600, "out_dir": f"/tmp/{r['seed']}"}
    assert table1_cells(results)["ferry"][("learn", "ff", "N")] is not None  # seeds and folders may differ
    odd = next(r for r in results if (r["seed"], r["sigma"], r["residual"], r["distribution"], r["model"])
               == (1, "learn", "ff", "N", "nlm"))
    odd["config"] = dict(odd["config"], sigma_link="bounded")
    with pytest.raises(ValueError, match=r"ferry nlm N learn/ff .*sigma_link: \"bounded\", \"softplus\""):
        table1_cells(results)


def test_a_run_folder_without_a_head_setting_pools_as_that_settings_default(tmp_path):
    configs = []
    for seed, fixed_sigma in ((0, None), (1, "paper"), (2, "authors")):
        head = HeadConfig(sigma="fixed", residual="none", fixed_sigma=fixed_sigma or "paper")
        record = TrainConfig(domain="ferry", model="linear", head=head, seed=seed).to_dict()
        if fixed_sigma is None:
            del record["fixed_sigma"]  # a run whose record names no fixed_sigma
        folder = tmp_path / f"run-s{seed}"
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(record))
        configs.append(run_config(folder, {}))
    assert configs[0]["fixed_sigma"] == "paper"
    check_one_setting({"ferry linear N fixed/none": configs[:2]}, "Table 1")  # beside one that names the default
    with pytest.raises(ValueError, match=r"fixed_sigma: \"authors\", \"paper\""):
        check_one_setting({"ferry linear N fixed/none": configs}, "Table 1")


def three_seeds():
    """fake_results with a third seed on the means: every difference the same on each seed."""
    results = fake_results()
    return results + [dict(r, seed=2, mse=(r["mse"] + 0.05), mse_clip=None if r["mse_clip"] is None else
                           r["mse_clip"] + 0.05) for r in results if r["seed"] == 0]


def test_markdown_table_layout_and_bold_rule():
    text = render_table(three_seeds())
    lines = text.strip().splitlines()
    assert lines[0].startswith("| domain | metric | h_FF | LM-cut | learn/ff N | learn/ff TN | learn/none N")
    mse_row, clip_row = lines[2], lines[3]
    cells = [c.strip() for c in mse_row.strip("|").split("|")]
    assert cells[:4] == ["ferry", "MSE", "9.77", "11.10"]
    assert cells[4] == ".76±.1" and cells[5] == "**.65±.1**"  # TN below N and N+clip on every seed -> bold
    bold = [c.startswith("**") for c in cells[4:]]
    # learn/none TN; fixed/ff: N = N+clip = 2.98 on every seed, TN 3.85: the tied pair beats TN, both bold;
    # fixed/none TN (8.92 against 8.95, on every seed)
    assert bold == [False, True, False, True, True, False, False, True]
    clip = [c.strip() for c in clip_row.strip("|").split("|")]
    assert clip[1] == "+clip" and clip[4] == ".76±.1" and clip[5] == ""
    assert [c.startswith("**") for c in clip[4::2]] == [False, False, True, False]
    # two seeds: the same means, nothing bold
    assert "**" not in render_table(fake_results())


def test_the_papers_rule_bolds_by_the_gap_to_the_next_value():
    from tnlib.experiments.reporting.tables import paper_bold_keys

    row = table1_cells(fake_results())["ferry"]
    # learn/ff TN beats .76 by .11; learn/none TN 2.71 vs N+clip 2.91; fixed/ff N = N+clip 2.98, both bold, as in
    # the paper's ferry row; fixed/none: gaps < .1
    assert paper_bold_keys(row, TABLE1_CONFIGS) == {("learn", "ff", "TN"), ("learn", "none", "TN"),
                                                     ("fixed", "ff", "N"), ("fixed", "ff", "N+clip")}


def test_a_gap_of_exactly_point_one_is_not_bold():
    from tnlib.experiments.reporting.tables import paper_bold_keys

    results = [dict(r, mse_clip=r["mse_clip"] - 0.01) if r["distribution"] == "N" and r["sigma"] == "learn"
               and r["residual"] == "ff" else r for r in fake_results()]  # N+clip .75 vs TN .65
    assert ("learn", "ff", "TN") not in paper_bold_keys(table1_cells(results)["ferry"], TABLE1_CONFIGS)

def test_latex_and_nll_tables():
    latex = render_table(three_seeds(), fmt="latex")
    assert r"\textbf{.65$\pm$.1}" in latex and latex.startswith(r"\begin{tabular}")
    nll = render_table(fake_results(), metric="nll")
    assert "+clip" not in nll and "NLL" in nll
    with pytest.raises(ValueError, match="format"):
        render_table(fake_results(), fmt="html")


def test_one_seed_says_so_instead_of_a_zero_spread():
    one_seed = [r for r in fake_results() if r["seed"] == 0]
    row = render_table(one_seed).splitlines()[2]
    assert "±" not in row and ".71 (1 seed)" in row
    assert "**" not in row  # one seed: nothing to tell a difference from noise by


def test_table1_names_domains_in_full_and_drops_configurations_not_run():
    results = [dict(r, domain="blocksworld") for r in fake_results()
               if (r["sigma"], r["residual"]) in {("learn", "ff"), ("fixed", "none")}]
    lines = render_table(results).splitlines()
    assert lines[0] == "| domain | metric | h_FF | LM-cut | learn/ff N | learn/ff TN | fixed/none N | fixed/none TN |"
    assert lines[2].startswith("| blocksworld | MSE |") and "| blocks |" not in render_table(results)
    assert render_table([]).splitlines()[0].endswith("fixed/none N | fixed/none TN |")  # nothing ran: the layout


def test_bold_rule_is_stated_with_its_gap():
    from tnlib.experiments.reporting.tables import TABLE1_BOLD_RULE
    from tnlib.paper import TABLE1_BOLD_GAP

    assert f"more than {TABLE1_BOLD_GAP:g} above it" in TABLE1_BOLD_RULE
