"""tnlib.notebook.synthetic_regression: the synthetic regression of the classroom notebook's section 8, whose
assertions are the claims the notebook's prose makes about it, its calibration and its tables."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tnlib.learning.calibration import COVERAGE_LEVELS
from tnlib.notebook import demo_tensors, synthetic_regression
from tnlib.paper import OPEN_BOUND_EPSILON


def test_synthetic_data_has_an_admissible_bound_that_is_often_exact():
    import torch

    data = synthetic_regression.make_synthetic_heuristic_data(4000, torch.Generator().manual_seed(3))
    assert torch.all(data.lower_bound <= data.optimal_cost) and torch.all(data.lower_bound >= 0)
    exact = float((data.lower_bound == data.optimal_cost).double().mean())
    assert 0.4 < exact < 0.65
    assert torch.all(data.optimal_cost == torch.round(data.optimal_cost))


def test_synthetic_regression_is_deterministic_for_a_seed():
    first = synthetic_regression.run_synthetic_regression(seed=4, num_train=80, num_test=60, steps=15)
    second = synthetic_regression.run_synthetic_regression(seed=4, num_train=80, num_test=60, steps=15)
    other = synthetic_regression.run_synthetic_regression(seed=5, num_train=80, num_test=60, steps=15)
    assert first.test_mse == second.test_mse
    assert first.test_mse_curve == second.test_mse_curve
    assert first.train_nll == second.train_nll
    assert first.test_mse != other.test_mse
    assert first.recorded_steps[0] == 0 and first.recorded_steps[-1] == 15


def test_each_synthetic_model_is_a_learning_head_whose_open_bound_follows_the_margin():
    """The models are heads as the learning stage describes them (N or TN, learned or fixed sigma), in display
    order; the open-bound margin moves the Truncated Gaussian's support and nothing else."""
    assert list(synthetic_regression.SYNTHETIC_MODELS) == list(synthetic_regression.MODEL_LABELS)
    assert [k for k, m in synthetic_regression.SYNTHETIC_MODELS.items() if m.head.distribution == "TN"] == ["truncated"]
    settings = dict(seed=4, num_train=80, num_test=60, steps=5)
    narrow = synthetic_regression.run_synthetic_regression(open_bound_margin=0.1, **settings)
    wide = synthetic_regression.run_synthetic_regression(open_bound_margin=2.0, **settings)
    assert {k: v for k, v in narrow.test_mse.items() if k != "truncated"} == \
        {k: v for k, v in wide.test_mse.items() if k != "truncated"}
    assert narrow.test_mse["truncated"] != wide.test_mse["truncated"]
    assert narrow.truncated_mean_minus_bound > -0.1 and wide.truncated_mean_minus_bound > -2.0


@pytest.mark.parametrize("seed", [0, 1])
def test_regression_claims_of_the_classroom_notebook(seed):
    """Each assertion is a bullet of "What to look for" in statistics_of_heuristic_learning.ipynb, section 8."""
    result = synthetic_regression.run_synthetic_regression(seed=seed)  # the notebook's defaults
    mse = result.test_mse
    blind = ("gaussian_mse", "gaussian")  # the models that do not have l
    truncated_mean = mse["truncated"]["truncated_mean"]
    # Without l: mu near 2.7, max(mu, l) near 1.7; the TN mean near 0.9, far better.
    for kind in blind:
        assert 2.4 < mse[kind]["mu"] < 3.0 and 1.5 < mse[kind]["clipped"] < 1.9
        assert mse[kind]["clipped"] <= mse[kind]["mu"]  # clipping helps
    assert truncated_mean < 0.6 * min(mse[kind]["clipped"] for kind in blind)
    # The fair comparison: the MSE network that reads l is within 10% of the TN mean, both near the best possible.
    assert mse["gaussian_mse_bound"]["mu"] == pytest.approx(truncated_mean, rel=0.1)
    assert result.best_mse < min(truncated_mean, mse["gaussian_mse_bound"]["mu"]) < 1.15 * result.best_mse
    # The truncated model's own mu is a bad point estimate, far worse than its mean.
    assert mse["truncated"]["mu"] > 2 * truncated_mean
    # The TN mean stays above l - epsilon (the open bound), the margin printed in the notebook.
    assert result.truncated_mean_minus_bound >= -OPEN_BOUND_EPSILON - 1e-9
    # After a tenth of the steps the two models that use l are within 0.2 of each other, far below the others.
    tenth = next(index for index, step in enumerate(result.recorded_steps) if step >= 40)
    curves = result.test_mse_curve
    assert abs(curves["truncated"][tenth] - curves["gaussian_mse_bound"][tenth]) < 0.2
    assert max(curves["truncated"][tenth], curves["gaussian_mse_bound"][tenth]) < min(curves[k][-1] for k in blind)


@pytest.mark.slow
def test_the_fair_comparison_over_the_notebooks_seeds():
    """Section 8's "Which differences are real", at its default 8 seeds: the TN mean beats every model without l,
    and its difference with the MSE network that reads l has a 95% interval containing 0."""
    from tnlib.experiments.reporting.seed_statistics import paired_interval

    comparison = synthetic_regression.compare_over_seeds(range(8))
    for kind in ("gaussian", "gaussian_mse"):
        interval = paired_interval(comparison.differences(kind, "clipped"))
        assert interval["high"] < -0.6
    for estimate in ("mu", "clipped"):
        interval = paired_interval(comparison.differences("gaussian_mse_bound", estimate))
        assert interval["low"] < 0 < interval["high"] and abs(interval["mean"]) < 0.05
    assert all(b < m["truncated"]["truncated_mean"] for b, m in zip(comparison.best_mse, comparison.test_mse))
    # no faster convergence the seeds can show: at step 150 the paired interval contains 0
    interval = paired_interval(comparison.curve_differences("gaussian_mse_bound", 150))
    assert interval["low"] < 0 < interval["high"]
    assert "at step 152" in synthetic_regression.format_curve_comparison(comparison, 150)  # the first recorded step from 150
    # seed 0 alone: the Truncated Gaussian is ahead at step 150 (the notebook's example)
    assert comparison.curve_differences("gaussian_mse_bound", 150)[0] < -0.1
    text = synthetic_regression.format_seed_comparison(comparison)
    assert "no difference shown" in text and "TN better" in text
    with pytest.raises(ValueError, match="at least two"):
        synthetic_regression.compare_over_seeds([0])


@pytest.mark.parametrize("seed", [0, 1])
def test_calibration_claims_of_the_classroom_notebook(seed):
    """Each assertion is a bullet of "What to look for" in the classroom notebook's section 8b."""
    result = synthetic_regression.run_synthetic_regression(seed=seed)  # the notebook's defaults
    check = result.calibration

    def pit_density(values):
        return np.histogram(values, bins=10, range=(0, 1))[0] / len(values) * 10

    # the MSE model is over-confident: U-shaped, its 90% intervals hold about 62% of the states
    mse = pit_density(check["gaussian_mse"].pit)
    assert min(mse[0], mse[-1]) > 2 * max(mse[2:8]) and 0.55 < check["gaussian_mse"].coverage[0.9] < 0.7
    # the learned Gaussian is calibrated but wide and puts about a quarter of its mass below l
    gaussian = check["gaussian"]
    assert all(abs(gaussian.coverage[level] - level) < 0.05 for level in COVERAGE_LEVELS)
    assert 0.2 < gaussian.mass_below_bound < 0.3
    # the Truncated Gaussian: nearly calibrated, less than half as wide, nothing below l - eps
    truncated = check["truncated"]
    assert all(abs(truncated.coverage[level] - level) < 0.07 for level in COVERAGE_LEVELS)
    assert 2 * truncated.mean_width[0.9] < gaussian.mean_width[0.9] and truncated.mass_below_bound == 0.0
    # its naive PIT piles up below 0.2 (the states at their bound); the randomised one does not
    assert np.mean(truncated.naive_pit < 0.2) > 0.35 and np.mean(truncated.pit < 0.2) < 0.25
    # the fair comparison: given l as an input the learned Gaussian is calibrated, about 3 wide, with some mass
    # below l; the Truncated Gaussian is narrower, but the Gaussian only a quarter to a third wider, not twice
    reads_l = check["gaussian_bound"]
    assert 0.88 < reads_l.coverage[0.9] < 0.96 and 2.6 < reads_l.mean_width[0.9] < 3.4
    assert 0.04 < reads_l.mass_below_bound < 0.12
    assert 1.2 * truncated.mean_width[0.9] < reads_l.mean_width[0.9] < 1.4 * truncated.mean_width[0.9]


def test_calibration_table_lists_every_model_and_level():
    result = synthetic_regression.run_synthetic_regression(seed=0, num_train=40, num_test=30, steps=4)
    text = synthetic_regression.format_calibration_table(result)
    assert all(label in text for label in synthetic_regression.MODEL_LABELS.values())
    header = text.splitlines()[1].split()
    assert header[1:1 + len(COVERAGE_LEVELS)] == [
        f"{level:.0%}" for level in COVERAGE_LEVELS]
    assert max(len(line) for line in text.splitlines()) <= 115  # JupyterLab's output area does not wrap it
    coverage = result.calibration["truncated"].coverage[0.5]
    assert f"{coverage:.1%}" in text.splitlines()[-1]


def test_the_best_possible_estimate_is_the_conditional_mean_of_the_generator():
    """E[h* | z, l] against a Monte Carlo estimate: many draws of the generator at fixed features, grouped by l."""
    generator = torch.Generator().manual_seed(3)
    features = torch.tensor([[0.7, 0.2], [0.1, 0.9]], dtype=demo_tensors.DTYPE)
    for row in features:
        draws = 200_000
        z = row.expand(draws, 2)
        trend = 2.0 + 8.0 * z[:, 0] + 4.0 * torch.sin(3.0 * z[:, 1])
        noise = torch.randn(draws, generator=generator, dtype=demo_tensors.DTYPE) * (0.5 + 2.0 * z[:, 0])
        cost = torch.clamp(torch.round(trend + noise), min=0.0)
        uniform = torch.rand(draws, generator=generator, dtype=demo_tensors.DTYPE).clamp_min(1e-12)
        bound = torch.clamp(cost - torch.floor(-1.5 * torch.log(uniform)), min=0.0)
        for value in torch.unique(bound)[:6]:
            chosen = bound == value
            if int(chosen.sum()) < 5000:
                continue
            data = synthetic_regression.SyntheticHeuristicData(row[None, :], torch.tensor([0.0]), value[None])
            exact = synthetic_regression.bayes_optimal_cost(data)[0]
            assert exact == pytest.approx(float(cost[chosen].mean()), abs=0.05)


def test_exercise_5_the_bound_is_a_floor_not_the_answer_at_step_0():
    result = synthetic_regression.run_synthetic_regression(seed=0, steps=20)
    mse = result.test_mse
    assert mse["truncated"]["truncated_mean"] < min(mse[k]["clipped"] for k in ("gaussian", "gaussian_mse"))
    assert result.test_mse_curve["truncated"][0] > result.lower_bound_mse


def test_regression_table_lists_every_model():
    result = synthetic_regression.run_synthetic_regression(seed=0, num_train=40, num_test=30, steps=3)
    table = synthetic_regression.format_regression_table(result)
    for label in [*synthetic_regression.MODEL_LABELS.values(), *synthetic_regression.ESTIMATE_LABELS.values()]:
        assert label in table
    rows = {line[:54].strip(): line[54:].split() for line in table.splitlines()[2:]}
    for kind, label in synthetic_regression.MODEL_LABELS.items():  # each model's row holds its own test MSEs
        assert rows[label] == [f"{result.test_mse[kind][name]:.3f}" if name in result.test_mse[kind] else "-"
                               for name in synthetic_regression.ESTIMATE_LABELS]
    assert rows["the admissible bound l alone"] == [f"{result.lower_bound_mse:.3f}"]
