"""Calibration and sharpness of predicted distributions of h* (tnlib.learning.calibration): the randomised PIT,
interval coverage and widths against scipy, on arrays and on a trained run's test split."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
import torch
from torch.distributions import Normal

from tnlib.distributions import TruncatedNormal
from tnlib.experiments.sweep_settings import Sweep
from tnlib.learning.calibration import COVERAGE_LEVELS, distribution_calibration, run_calibration
from tnlib.learning.training import checkpoint_encoder, encode_all, load_checkpoint, load_items, predict, train
from tnlib.paper import OPEN_BOUND_EPSILON


def _against_scipy(check, theirs, cost: np.ndarray, bound: np.ndarray, uniforms: np.ndarray) -> None:
    below, above = theirs.cdf(cost - 0.5), theirs.cdf(cost + 0.5)
    pit = below + uniforms * (above - below)
    np.testing.assert_allclose(check.pit, pit, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(check.naive_pit, theirs.cdf(cost), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(check.mass_below_bound, theirs.cdf(bound - 0.5).mean(), rtol=1e-9, atol=1e-12)
    for level in COVERAGE_LEVELS:
        assert check.coverage[level] == np.mean((pit >= (1 - level) / 2) & (pit <= (1 + level) / 2))
        start, end = theirs.ppf((1 - level) / 2), theirs.ppf((1 + level) / 2)
        np.testing.assert_allclose(check.mean_width[level], np.mean(end - start), rtol=1e-8)


def test_calibration_matches_scipy_for_both_distributions():
    """On the same uniforms: a Gaussian, and a Truncated Gaussian whose support starts above some h* - 1/2 (its
    CDF is 0 there, though the distribution validates its arguments)."""
    rng = np.random.default_rng(3)
    mu, sigma = rng.normal(5.0, 3.0, 400), rng.uniform(0.3, 3.0, 400)
    cost = np.round(np.maximum(rng.normal(5.0, 3.0, 400), 0.0))
    bound = np.maximum(cost - rng.integers(0, 3, 400), 0.0)
    uniforms = torch.rand(400, generator=torch.Generator().manual_seed(11), dtype=torch.float64).numpy()
    t = {name: torch.tensor(v, dtype=torch.float64) for name, v in
         (("mu", mu), ("sigma", sigma), ("cost", cost), ("bound", bound))}
    cases = [(Normal(t["mu"], t["sigma"]), scipy.stats.norm(mu, sigma)),
             (TruncatedNormal(t["mu"], t["sigma"], t["bound"] - 0.1, torch.full((400,), math.inf, dtype=torch.float64)),
              scipy.stats.truncnorm((bound - 0.1 - mu) / sigma, np.inf, loc=mu, scale=sigma))]
    for ours, theirs in cases:
        check = distribution_calibration(ours, t["cost"], t["bound"], torch.Generator().manual_seed(11))
        _against_scipy(check, theirs, cost, bound, uniforms)


def test_a_calibrated_model_has_uniform_pit_and_nominal_coverage():
    """Integer outcomes drawn from the model itself (X rounded): the randomised PIT is uniform, the naive one is not."""
    rng = np.random.default_rng(0)
    mu, sigma = rng.uniform(2.0, 10.0, 20_000), rng.uniform(0.2, 2.0, 20_000)
    cost = np.round(rng.normal(mu, sigma))
    distribution = Normal(torch.tensor(mu), torch.tensor(sigma))
    check = distribution_calibration(distribution, torch.tensor(cost), torch.zeros(20_000, dtype=torch.float64),
                                     torch.Generator().manual_seed(1))
    assert all(abs(check.coverage[level] - level) < 0.015 for level in COVERAGE_LEVELS)
    counts = np.histogram(check.pit, bins=10, range=(0, 1))[0] / len(cost)
    assert np.abs(counts - 0.1).max() < 0.01
    naive = np.histogram(check.naive_pit, bins=10, range=(0, 1))[0] / len(cost)
    assert np.abs(naive - 0.1).max() > 0.02  # states with a small sigma put their F(h*) near 0.5


@pytest.mark.parametrize("distribution", ["N", "TN"])
def test_a_runs_calibration_is_that_of_its_predicted_distributions_on_the_split(tmp_path, distribution):
    config = Sweep.from_parameters(preset="small", models="linear", domains="ferry", configs="learn/ff",
                                   distributions=distribution, seeds=0, steps=30, eval_every=10, plan=False,
                                   out_dir=str(tmp_path)).train_configs()[0]
    run_dir = train(config)
    check = run_calibration(run_dir, "test", seed=4)
    model, head, train_config, saved = load_checkpoint(run_dir / "best.pt")
    encoder = checkpoint_encoder(train_config, saved)
    p = predict(model, head, encoder, encode_all(encoder, load_items(train_config, "test")), torch.device("cpu"))
    mu, sigma, lower = (p[key].numpy() for key in ("mu", "sigma", "lower"))
    cost = p["h_star"].numpy()
    theirs = scipy.stats.norm(mu, sigma) if distribution == "N" else \
        scipy.stats.truncnorm((lower - OPEN_BOUND_EPSILON - mu) / sigma, np.inf, loc=mu, scale=sigma)
    uniforms = torch.rand(len(cost), generator=torch.Generator().manual_seed(4), dtype=torch.float64).numpy()
    _against_scipy(check, theirs, cost, lower, uniforms)
    assert len(check.pit) == len(cost) > 0


def test_a_sweeps_calibration_pools_the_seeds_of_each_learned_sigma_configuration(tmp_path):
    from tnlib.experiments.reporting.calibration_summary import calibration_markdown, sweep_calibration
    from tnlib.experiments.running.sweep import run_sweep
    from tnlib.notebook import figures

    sweep = Sweep.from_parameters(preset="small", models="linear", domains="ferry", configs=["learn/ff", "fixed/none"],
                                  distributions=["N", "TN"], seeds=[0, 1], steps=20, eval_every=10, plan=False,
                                  out_dir=str(tmp_path))
    assert calibration_markdown(sweep_calibration(sweep)).startswith("*No run")  # nothing trained yet
    run_sweep(sweep, progress=False)
    rows = sweep_calibration(sweep)
    assert [(row.config, row.distribution, row.seeds) for row in rows] == [
        (("learn", "ff"), "N", (0, 1)), (("learn", "ff"), "TN", (0, 1))]  # a fixed sigma is left out
    for row in rows:
        runs = [run_calibration(sweep.run_folder(config).path, seed=config.seed) for config in sweep.train_configs()
                if (config.head.sigma, config.head.distribution) == ("learn", row.distribution)]
        np.testing.assert_array_equal(row.calibration.pit, np.concatenate([check.pit for check in runs]))
        for level in COVERAGE_LEVELS:
            pit = row.calibration.pit
            assert row.calibration.coverage[level] == np.mean((pit >= (1 - level) / 2) & (pit <= (1 + level) / 2))
            assert row.calibration.mean_width[level] == pytest.approx(np.mean([c.mean_width[level] for c in runs]))
    table = calibration_markdown(rows)
    assert table.count("\n| ferry | linear | learn/ff |") == 2
    for row in rows:  # the 90% interval's coverage with its spread over the two seeds
        shares = [check.coverage[0.9] for check in row.per_seed]
        assert len(shares) == 2 and row.calibration.coverage[0.9] == pytest.approx(np.mean(shares))
        assert f"| {100 * np.mean(shares):.1f} ± {100 * np.std(shares, ddof=1):.1f}% |" in table
    (figure,) = figures.sweep_calibration_figures(rows)
    assert [a.text for a in figure.layout.annotations] == ["ferry, N (seeds 0, 1)", "ferry, TN (seeds 0, 1)"]


def test_report_calibration_writes_the_folders_learned_sigma_runs(tmp_path):
    from tnlib.cli import main
    from tnlib.experiments.reporting.calibration_summary import folder_calibration, sweep_calibration
    from tnlib.experiments.running.sweep import run_sweep

    sweep = Sweep.from_parameters(preset="small", models="linear", domains=["gripper", "ferry"],
                                  configs=["learn/none", "fixed/ff"], distributions=["TN", "N"], seeds=[1, 0],
                                  steps=20, eval_every=10, plan=False, out_dir=str(tmp_path / "runs"))
    run_sweep(sweep, progress=False)
    rows = folder_calibration(tmp_path / "runs")
    assert [(row.domain, row.distribution, row.seeds) for row in rows] == [  # the paper's order, seeds ascending
        ("ferry", "N", (0, 1)), ("ferry", "TN", (0, 1)), ("gripper", "N", (0, 1)), ("gripper", "TN", (0, 1))]
    by_sweep = {(row.domain, row.distribution): row for row in sweep_calibration(sweep)}
    for row in rows:
        np.testing.assert_array_equal(np.sort(row.calibration.pit),
                                      np.sort(by_sweep[row.domain, row.distribution].calibration.pit))
    assert main(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "report"), "--calibration"]) == 0
    text = (tmp_path / "report" / "calibration.md").read_text()
    assert text.startswith("# Calibration of the predicted distributions") and "Rendered at commit" in text
    table = text.split("## Table")[1]
    assert table.count("| linear | learn/none |") == 4 and "fixed/ff" not in table
