"""tnlib.notebook.trained_distributions: section 8c's committed paper-scale NLMs, their states' predictions and
densities against evaluate() and scipy, and the claims the classroom notebook makes of them."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from scipy.stats import truncnorm

from tnlib.notebook import trained_distributions
from tnlib.paper import OPEN_BOUND_EPSILON


def _trained(domain, configuration, seed, count=6):
    runs = {d: trained_distributions.paper_scale_run(domain, configuration, d, seed) for d in ("N", "TN")}
    return trained_distributions.state_distributions(runs, count=count)


def test_trained_distributions_are_the_runs_predictions_and_their_densities_scipys():
    from tnlib.learning.evaluation import split_predictions

    states = _trained("ferry", "fixed/none", 0, count=4)
    h_star = [s.h_star for s in states]
    assert h_star == sorted(h_star) and len(set(h_star)) == 4
    for label in ("N", "TN"):
        run = trained_distributions.paper_scale_run("ferry", "fixed/none", label, 0)
        _, _, p = split_predictions(run, data_root=None)  # the whole test split, as evaluate() predicts it
        everything = p["h_star"].numpy()
        assert everything.min() == h_star[0] and everything.max() == h_star[-1]  # spread from end to end
        for state in states:
            rows = np.flatnonzero((everything == state.h_star) & (p["lower"].numpy() == state.lower)
                                  & np.isclose(p["mu"].numpy(), state.mu[label], rtol=0, atol=1e-4))
            # the state is one of the split's, with the prediction evaluate() makes (in float32, predicted in
            # another batch: equal up to rounding)
            assert len(rows) >= 1
            assert state.estimate[label] == pytest.approx(float(p["estimate"][rows[0]]), abs=1e-4)
            mu, sigma, low = state.mu[label], state.sigma[label], state.support_low[label]
            if label == "N":
                reference = scipy.stats.norm.pdf(state.grid, mu, sigma)
                assert low == -math.inf
            else:
                assert low == pytest.approx(state.lower - OPEN_BOUND_EPSILON)
                reference = truncnorm.pdf(state.grid, (low - mu) / sigma, math.inf, loc=mu, scale=sigma)
            np.testing.assert_allclose(state.density[label], reference, rtol=1e-6, atol=1e-300)
            inside = state.grid >= low
            assert np.trapezoid(state.density[label][inside], state.grid[inside]) == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("seed", [0, 1])
def test_trained_distribution_claims_of_the_classroom_notebook(seed):
    states = _trained("ferry", "fixed/none", seed)
    smallest, largest = states[0], states[-1]
    assert abs(smallest.mu["N"] - smallest.h_star) < 1  # close at small h*
    beyond = [s for s in states if s.h_star >= 19]  # past the training split's largest h* (23) and near it
    assert [s.h_star for s in beyond][-1] == 37 and beyond[0].h_star == 19
    assert all(12.5 <= s.mu["N"] <= 16.5 and 10.5 <= s.mu["TN"] <= 13 for s in beyond)  # mu stops growing
    assert largest.lower == 36 and largest.estimate["N"] < largest.lower  # N's heuristic below the bound
    assert 420 <= (largest.h_star - largest.estimate["N"]) ** 2 <= 510  # about 430 (seed 1: 500)
    far = [s for s in beyond if s.lower - s.mu["TN"] > 10 * s.sigma["TN"]]
    assert [s.h_star for s in far] == [26, 37]
    for s in beyond:  # never below the open bound
        assert s.lower - OPEN_BOUND_EPSILON < s.estimate["TN"]
    for s in far:  # where mu is far below l, TN's mean falls back on the bound, as exercise 10's approximation says
        bound = s.lower - OPEN_BOUND_EPSILON
        approximation = bound + s.sigma["TN"] ** 2 / (bound - s.mu["TN"])
        assert s.estimate["TN"] == pytest.approx(approximation, abs=0.01) and bound < s.estimate["TN"] < s.lower
    assert round(largest.estimate["TN"], 1) == 35.9
    # with the residual over h_FF both follow h* with narrow distributions (the notebook's last bullet)
    residual = _trained("blocksworld", "learn/ff", seed)
    assert all(abs(s.estimate[label] - s.h_star) < 2.5 for s in residual for label in ("N", "TN"))
    assert max(abs(s.ff - s.h_star) for s in residual) == 12
    assert all(0.005 < s.sigma[label] < 2.5 for s in residual for label in ("N", "TN"))


def test_trained_runs_are_found_or_named():
    with pytest.raises(ValueError, match="no trained run ferry-nlm-TN-learn-none-llmcut-s0 .* trained there: "
                                         "blocksworld-nlm-N-fixed-none-llmcut-s0"):
        trained_distributions.paper_scale_run("ferry", "learn/none", "TN", 0)
    runs = {"N": trained_distributions.paper_scale_run("ferry", "fixed/none", "N"),
            "TN": trained_distributions.paper_scale_run("gripper", "fixed/none", "TN")}
    with pytest.raises(ValueError, match="runs of one domain only"):
        trained_distributions.state_distributions(runs)
    assert trained_distributions.spread_states(np.array([3.0, 1.0, 2.0, 1.0]), 3) == [1, 2, 0]
    assert trained_distributions.spread_states(np.array([5.0, 4.0]), 6) == [1, 0]


def test_a_paper_scale_runs_name_is_its_training_configurations_and_the_seeds_are_those_tested_in_both_columns(
        tmp_path):
    assert trained_distributions.paper_scale_run_name("ferry", "fixed/none", "N", 1) == "ferry-nlm-N-fixed-none-llmcut-s1"
    for name in ("ferry-nlm-N-learn-ff-llmcut-s0", "ferry-nlm-TN-learn-ff-llmcut-s0", "ferry-nlm-TN-learn-ff-llmcut-s2",
                 "ferry-nlm-N-learn-ff-llmcut-s3", "ferry-nlm-TN-learn-ff-llmcut-s3"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics-test.json").write_text("{}")
    (tmp_path / "ferry-nlm-N-learn-ff-llmcut-s2").mkdir()  # still training: no test metrics
    assert trained_distributions.trained_seeds("ferry", "learn/ff", tmp_path) == [0, 3]
