"""What an N model's learned GBFS saves by not computing the LM-cut bound it never reads.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_dead_end_check.py
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_dead_end_check.py --models wl --domains ferry --repeats 5

An N model plans with mu (Table 2's "N" column); the LM-cut lower bound only marks dead ends there, which its residual
h_FF (or, without a residual, one h_max exploration) marks as well. Per model, domain and configuration (N learn/ff
and N fixed/none, trained ``--steps`` steps on data/small), two routes plan the largest instance of the domain's plan
set at the paper's test sizes (data/paper/DOMAIN/plan-set) with the same model, alternating, ``--repeats`` times:

* ``with LM-cut`` the route that computes the bound anyway (LM-cut added to the heuristic's symbolic inputs);
* ``dead-end check`` :class:`tnlib.learning.learned_heuristic.LearnedHeuristic` as it is.

Each search is eager GBFS with the paper's counting, at most ``--evaluations`` evaluations, after a 50-evaluation
warm-up (numba's kernels and the model's first calls). Both routes must visit the same states: the script stops if
their evaluation counts or plans differ. Columns: the median evaluations per second of each route and their ratio,
and the share of the ``with LM-cut`` search's time its symbolic heuristics took.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench_wl import WARM_UP_EVALUATIONS, largest_plan_instance
from tnlib.paper import DOMAINS

ROOT = Path(__file__).resolve().parents[1]

MODELS = ("wl", "linear", "nlm")
CONFIGS = {"learn/ff": dict(sigma="learn", residual="ff"), "fixed/none": dict(sigma="fixed", residual="none")}


def trained_run(domain: str, model: str, config: dict, steps: int, folder: Path) -> Path:
    from tnlib.learning.training import TrainConfig, train

    return train(TrainConfig.from_dict(dict(domain=domain, model=model, data_root=str(ROOT / "data" / "small"),
                                            steps=steps, batch_size=64, eval_every=steps, out_dir=str(folder),
                                            progress=False, device="cpu", distribution="N", **config)), resume=False)


def timed_search(run: Path, domain: str, problem: Path, evaluations: int, with_lmcut: bool):
    from tnlib.learning.learned_heuristic import LearnedHeuristic
    from tnlib.planning.heuristics import make_heuristic
    from tnlib.planning.pddl import resolve_domain
    from tnlib.planning.search import gbfs
    from tnlib.planning.search_settings import PAPER, SearchSettings

    heuristic = LearnedHeuristic(run, resolve_domain(domain), problem, device="cpu")
    if with_lmcut:
        heuristic.heuristics["lmcut"] = make_heuristic("lmcut", heuristic.task)
    gbfs(heuristic.task, heuristic, SearchSettings(PAPER, WARM_UP_EVALUATIONS))
    heuristic.seconds = dict.fromkeys(heuristic.seconds, 0.0)
    started = time.perf_counter()
    result = gbfs(heuristic.task, heuristic, SearchSettings(PAPER, evaluations))
    seconds = time.perf_counter() - started
    return result, seconds, heuristic.seconds["symbolic"] / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", nargs="+", default=list(DOMAINS), choices=DOMAINS)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--steps", type=int, default=200, help="training steps per model (default: %(default)s)")
    parser.add_argument("--evaluations", type=int, default=2000,
                        help="evaluation limit of each search (default: %(default)s; NLM gets a tenth)")
    parser.add_argument("--repeats", type=int, default=3, help="searches per route, alternating (default: %(default)s)")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread; N models trained {args.steps} steps on data/small; GBFS (paper "
          f"counting), the largest plan-set instance, median of {args.repeats} searches per route")
    print(f"{'model':6s} {'domain':12s} {'config':10s} {'instance':34s} {'evals':>6s} {'with LM-cut/s':>13s} "
          f"{'dead-end check/s':>16s} {'ratio':>6s} {'symbolic share':>14s}")
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            limit = args.evaluations // 10 if model == "nlm" else args.evaluations
            for domain in args.domains:
                problem = largest_plan_instance(domain)
                for name, config in CONFIGS.items():
                    run = trained_run(domain, model, config, args.steps, Path(tmp) / f"{model}-{domain}-{name}")
                    rates = {True: [], False: []}
                    shares, outcomes = [], set()
                    for _ in range(args.repeats):
                        for with_lmcut in (True, False):
                            result, seconds, share = timed_search(run, domain, problem, limit, with_lmcut)
                            outcomes.add((result.evaluations, result.status, tuple(result.plan or ())))
                            rates[with_lmcut].append(result.evaluations / seconds)
                            if with_lmcut:
                                shares.append(share)
                    if len(outcomes) != 1:
                        raise SystemExit(f"{model} {domain} {name}: the two routes searched differently")
                    evaluations = next(iter(outcomes))[0]
                    old, new = statistics.median(rates[True]), statistics.median(rates[False])
                    print(f"{model:6s} {domain:12s} {name:10s} {problem.stem:34s} {evaluations:6d} {old:13.1f} "
                          f"{new:16.1f} {new / old:6.2f} {statistics.median(shares):14.0%}", flush=True)


if __name__ == "__main__":
    main()
