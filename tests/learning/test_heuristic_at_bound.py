"""benchmarks/heuristic_at_bound.py: its order figures against scipy and counts done by hand, and its two routes
(Table 1's scoring, GBFS's computation) agreeing where they must: on an N model's mu, which reads no bound."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from fixtures.benchmark_scripts import load_benchmark
from tnlib.learning.heads import HeadConfig
from tnlib.learning.training import TrainConfig, train


@pytest.fixture(scope="module")
def at_bound():
    return load_benchmark("heuristic_at_bound")


def test_order_figures_count_bound_ties_and_tau_per_instance(at_bound):
    h_star = np.array([3.0, 2.0, 1.0, 0.0, 5.0, 4.0, 4.0])
    l = np.array([2.0, 2.0, 1.0, 0.0, 3.0, 3.0, 1.0])
    h = np.array([2.1, 2.105, 1.0, 0.5, 5.2, 3.0, 3.9])
    instances = [np.array([0, 1, 2, 3]), np.array([4, 5, 6])]
    figures = at_bound.order_figures(h, h_star, l, instances)
    assert figures["at l"] == pytest.approx(4 / 7)  # 2.1, 2.105, 1.0 and 3.0 lie within a quarter of their l
    # pairs with different h*: 12 ordered in the first instance, 4 in the second; tied: (0, 1) both ways
    assert figures["tied"] == pytest.approx(2 / 16)
    expected_tau = np.mean([kendalltau(h[r], h_star[r]).statistic for r in instances])
    assert figures["tau"] == pytest.approx(expected_tau)
    assert figures["mse"] == pytest.approx(float(((h - h_star) ** 2).mean()))


def test_instances_are_spread_over_the_split_and_small_ones_left_out(at_bound):
    items = [{"instance": name} for name, count in (("a", 2), ("b", 3), ("c", 4), ("d", 3), ("e", 5))
             for _ in range(count)]
    assert [len(rows) for rows in at_bound.instance_rows(items)] == [3, 4, 3, 5]  # "a" has two states
    assert [items[rows[0]]["instance"] for rows in at_bound.instance_rows(items, 2)] == ["b", "e"]


@pytest.mark.parametrize("distribution", ["N", "TN"])
def test_both_routes_score_the_same_states_and_agree_on_mu(at_bound, tmp_path, distribution):
    run = train(TrainConfig(domain="gripper", model="linear", head=HeadConfig(distribution=distribution),
                            steps=20, batch_size=16, eval_every=10, checkpoint_every=10, out_dir=str(tmp_path),
                            progress=False))
    cell, figures = at_bound.run_figures(str(run), instances=2)
    assert cell == ("gripper", "learn/ff")
    columns = ["N", "N+clip"] if distribution == "N" else ["TN"]
    assert sorted(figures) == sorted([(route, c) for route in ("plan", "test") for c in columns])
    if distribution == "N":
        # mu reads no bound: GBFS computes what Table 1 scores, to float32's rounding
        for name in ("mse", "tau", "tied"):
            assert figures[("plan", "N")][name] == pytest.approx(figures[("test", "N")][name], rel=1e-5)
