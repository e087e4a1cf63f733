"""A trained run's heuristic as Table 1 scores it and as GBFS computes it: how much of it is its lower bound l, and
how it orders the states of an instance.

Table 1 scores TN's truncated mean and N+clip's max(mu, l) with the l the dataset holds (the one the run trained
with); GBFS computes l itself, state by state, with the LM-cut the run trained with -- or, asked to
(``LearnedHeuristic(..., fast_downward_lmcut=False)``), with tnlib's. Where the two LM-cuts differ a planner on
tnlib's follows another heuristic than the table scores: where mu falls below l the estimate is l's (just above its open
bound for TN), and with a weaker l it falls back on a mu that TN never had to learn where l bound it. N's mu reads
no bound and is the same both ways. This prints, for each run folder given, on its test split (the states of the
test instances' optimal trajectories):

* ``at l``: the share of states whose heuristic is within a quarter step of l (N: mu, N+clip: max(mu, l), TN: the
  truncated mean);
* ``tied``: the share of state pairs of one instance with different h* that the heuristic does not tell apart
  (values within .01) -- pairs GBFS can only order by its tie-breaking;
* ``tau``: Kendall's tau-b of the heuristic against h* within each instance, averaged over instances;
* ``mse``: the heuristic's test MSE (Table 1's);

then per cell (domain, configuration, column) the mean over seeds and its range. Each figure twice: as Table 1
evaluates the heuristic (``test``: l is the dataset's ``lmcut`` column, Fast Downward's LM-cut where the dataset
was relabelled, the l the run trained with), and as GBFS computes it when it plans with tnlib's LM-cut (``plan``:
through :class:`tnlib.learning.learned_heuristic.LearnedHeuristic` with ``fast_downward_lmcut=False``, l
computed state by state in the search).

    python benchmarks/heuristic_at_bound.py reports/paper-scale-nlm5/runs/visitall-nlm-*-fixed-none-llmcut-s* \
        [--instances 60]

It reads each run's best.pt (`tnlib restore-weights RUNS` writes the campaign's back) and runs on one thread:
about a minute and a half a visitall run on all of its 197 test instances, most of it in the planning route.
"""
from __future__ import annotations

import argparse
import os
from collections import defaultdict

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from scipy.stats import kendalltau  # noqa: E402

from tnlib.learning.evaluation import split_predictions  # noqa: E402
from tnlib.learning.learned_heuristic import LearnedHeuristic  # noqa: E402
from tnlib.learning.training import load_items  # noqa: E402
from tnlib.planning.heuristics import make_heuristic  # noqa: E402
from tnlib.planning.pddl import resolve_domain  # noqa: E402

AT_BOUND = 0.25  # a quarter step: integer costs, so nearer than this to l is l for the order GBFS sees
TIED = 0.01


def instance_rows(items: list[dict], instances: int | None = None) -> list[np.ndarray]:
    """The row indices of each instance's states, for instances with three states or more: all of them, or
    ``instances`` spread evenly over the split's order (which runs from the smallest grid cell to the largest)."""
    rows = defaultdict(list)
    for index, item in enumerate(items):
        rows[item["instance"]].append(index)
    kept = [np.asarray(r) for r in rows.values() if len(r) >= 3]
    if instances is None or instances >= len(kept):
        return kept
    return [kept[i] for i in np.linspace(0, len(kept) - 1, instances).round().astype(int)]


def order_figures(h: np.ndarray, h_star: np.ndarray, l: np.ndarray, instances: list[np.ndarray]) -> dict:
    """The figures the module docstring names, of one heuristic's values ``h`` on a split's states."""
    taus, tied, pairs = [], 0, 0
    for rows in instances:
        hi, si = h[rows], h_star[rows]
        different = si[:, None] != si[None, :]
        tied += int((different & (np.abs(hi[:, None] - hi[None, :]) < TIED)).sum())
        pairs += int(different.sum())
        tau = kendalltau(hi, si).statistic
        if not np.isnan(tau):
            taus.append(tau)
    return {"at l": float(np.mean(np.abs(h - l) < AT_BOUND)), "tied": tied / max(pairs, 1),
            "tau": float(np.mean(taus)), "mse": float(((h - h_star) ** 2).mean())}


def planning_values(run: str, domain: str, items: list[dict], instances: list[np.ndarray],
                    columns: list[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Each column's heuristic on the split's states as GBFS computes it when planning, and tnlib's LM-cut there
    (NaN on the states of instances not kept)."""
    domain_file = resolve_domain(domain)
    values = {column: np.full(len(items), np.nan) for column in columns}
    lmcut = np.full(len(items), np.nan)
    for rows in instances:
        problem = items[rows[0]]["problem"]
        for column in columns:
            heuristic = LearnedHeuristic(run, domain_file, problem, "clip" if column == "N+clip" else "default",
                                         device="cpu", fast_downward_lmcut=False)
            task = heuristic.task
            states = [task.facts_to_state([a for a in items[i]["state"] if a in task.fact_index]) for i in rows]
            values[column][rows] = heuristic(states)
        lmcut[rows] = make_heuristic("lmcut", task).batch(states)
    return values, lmcut


def run_figures(run: str, instances: int | None = None) -> tuple[tuple, dict]:
    """((domain, sigma/residual), {(route, column): figures}) of one run folder on its test split (``instances``
    of its instances spread over the split, all by default)."""
    config, _, p = split_predictions(run, "test", device="cpu")
    items = load_items(config, "test")
    instances = instance_rows(items, instances)
    kept = np.concatenate(instances)
    h_star, l = p["h_star"].numpy(), p["lmcut"].numpy()
    columns = {config.head.distribution: p["estimate"].numpy()}
    if "clipped" in p:
        columns["N+clip"] = p["clipped"].numpy()
    cell = (config.domain, f"{config.head.sigma}/{config.head.residual}")
    planned, planning_l = planning_values(run, config.domain, items, instances, list(columns))
    # both routes over the same states: those of the instances kept
    position = np.empty(len(items), dtype=int)
    position[kept] = np.arange(len(kept))
    within = [position[rows] for rows in instances]
    figures = {("test", column): order_figures(h[kept], h_star[kept], l[kept], within)
               for column, h in columns.items()}
    for column, h in planned.items():
        figures[("plan", column)] = order_figures(h[kept], h_star[kept], planning_l[kept], within)
    return cell, figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run folders (each with best.pt)")
    parser.add_argument("--instances", type=int, default=None,
                        help="only N test instances (of three states or more) of each run, spread evenly over its grid "
                             "cells; default all")
    args = parser.parse_args()
    torch.set_num_threads(1)
    by_cell = defaultdict(list)
    names = ("at l", "tied", "tau", "mse")
    print("| run | route | column | " + " | ".join(names) + " |\n|---|---|---|---|---|---|---|", flush=True)
    for run in args.runs:
        cell, figures = run_figures(run, args.instances)
        for (route, column), f in figures.items():
            by_cell[cell + (route, column)].append(f)
            print(f"| {os.path.basename(run.rstrip('/'))} | {route} | {column} | "
                  + " | ".join(f"{f[n]:.3f}" for n in names) + " |", flush=True)
    print("\nper cell, mean over seeds [lowest, highest]:\n")
    print("| domain | configuration | route | column | seeds | " + " | ".join(names) + " |\n|---|---|---|---|---|"
          + "---|" * len(names))
    for (domain, configuration, route, column), rows in sorted(by_cell.items()):
        values = {n: np.array([r[n] for r in rows]) for n in names}
        print(f"| {domain} | {configuration} | {route} | {column} | {len(rows)} | " + " | ".join(
            f"{v.mean():.3f} [{v.min():.3f}, {v.max():.3f}]" for v in values.values()) + " |")


if __name__ == "__main__":
    main()
