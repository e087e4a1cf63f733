"""What the WL model costs beside NLM: training step time, and learned GBFS at each domain's largest plan-set size.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_wl.py
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_wl.py --domains gripper --evaluations 500
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_wl.py --data-profile paper --steps 300 \
        --to-flat runs/paper-scale-wl reports/paper-scale/runs
    git worktree add /tmp/before COMMIT && OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_wl.py --compare-code /tmp/before

Per domain, in one run:

* training: seconds per step (batch 64, TN learn/ff, validation every 100 steps included) of ``wl`` and ``nlm`` on
  data/small's training split, ``--steps`` steps each, and WL's one-off fit (collecting the colours) and feature
  count;
* planning: GBFS with the paper's search (eager, its counting) on the largest instance of the domain's plan set at
  the paper's test sizes (data/paper/DOMAIN/plan-set: blocksworld 22 blocks, ferry 30 x 30, gripper 100 balls,
  visitall 7 x 7), at most ``--evaluations`` evaluations, with the WL model trained above and with an NLM of random
  weights (speed does not depend on the weights, only the states visited do), both under the same head (TN,
  learned sigma, residual h_FF, LM-cut bound: each evaluation also runs h_FF and LM-cut). Each search runs in its
  own process, which reports evaluations per second after a 50-evaluation warm-up search (numba's kernels loaded,
  first calls made) and its peak resident memory (the whole process: Python, torch and the task included).

The last columns are WL / NLM.

With ``--to-flat WL_RUNS NLM_RUNS`` (two sweeps' results folders trained until flat on the same data, e.g.
runs/paper-scale-wl and reports/paper-scale/runs, with ``--data-profile paper``) a second table gives each model's
training time to flat per domain: the steps its runs trained (the until-flat rule's end: median and range over the
folder's runs of that domain) times the seconds per step measured above, in this same run. The runs' own wall times
are not used: they were trained on other machines beside other jobs, so their ratio would mix the two models with
the load.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tnlib.paper import DOMAINS

ROOT = Path(__file__).resolve().parents[1]

WARM_UP_EVALUATIONS = 50


def largest_plan_instance(domain: str) -> Path:
    """The plan-set instance with the most objects (by the sizes in its name), the first seed of that cell."""
    files = sorted((ROOT / "data" / "paper" / domain / "plan-set" / "problems").glob("*.pddl"))
    if not files:
        raise SystemExit(f"no plan set for {domain}: run `tnlib data plan-set data/paper --domain {domain}`")

    def size(path: Path) -> tuple:
        return tuple(int(n) for n in re.findall(r"-[a-z](\d+)", path.stem)[:2])

    return max(files, key=lambda p: (size(p), -files.index(p)))


def train_seconds(domain: str, model: str, steps: int, folder: Path, profile: str = "small") -> dict:
    from tnlib.learning.training import TrainConfig, train

    config = TrainConfig(domain=domain, model=model, data_root=str(ROOT / "data" / profile), steps=steps,
                         batch_size=64, eval_every=100, out_dir=str(folder), progress=False, device="cpu",
                         model_args={})
    started = time.perf_counter()
    run = train(config, resume=False)
    total = time.perf_counter() - started
    curves = [json.loads(line) for line in (run / "curves.jsonl").read_text().splitlines()]
    return {"run": str(run), "per_step": curves[-1]["seconds"] / curves[-1]["step"],
            "setup": total - curves[-1]["seconds"]}


def steps_to_flat(runs: list, model: str, domain: str) -> list[int]:
    """The steps each run of ``model`` in ``domain`` trained (until flat: where the rule stopped it), from a results
    folder's runs as its report header reads them (``collect_scope(...).runs``: the tested runs, as the tables)."""
    return sorted(r.steps_done for r in runs if r.model == model and r.domain == domain)


def to_flat_row(domain: str, wl_steps: list[int], nlm_steps: list[int], wl_per_step: float,
                nlm_per_step: float) -> str:
    """One line of the time-to-flat table: median steps (range, runs) and minutes, per model, and WL / NLM."""
    def cells(steps: list[int], per_step: float) -> tuple[str, float | None]:
        if not steps:
            return f"{'no runs':>22s} {'':>8s}", None
        median = float(np.median(steps))
        return (f"{median:8,.0f} ({min(steps):,}-{max(steps):,}, {len(steps)})".rjust(22)
                + f" {median * per_step / 60:8.1f}", median * per_step)

    wl_text, wl_seconds = cells(wl_steps, wl_per_step)
    nlm_text, nlm_seconds = cells(nlm_steps, nlm_per_step)
    ratio = f"{wl_seconds / nlm_seconds:6.3f}" if wl_seconds and nlm_seconds else f"{'':>6s}"
    return f"{domain:12s} {wl_text} {nlm_text} {ratio}"


def search_child(checkpoint: str, domain: str, problem: str, evaluations: int) -> None:
    """In a fresh process: one learned GBFS, printed as JSON with the process's peak memory."""
    from tnlib.learning.learned_heuristic import LearnedHeuristic
    from tnlib.planning.pddl import resolve_domain
    from tnlib.planning.search import gbfs
    from tnlib.planning.search_settings import PAPER, SearchSettings

    heuristic = LearnedHeuristic(checkpoint, resolve_domain(domain), problem, device="cpu")
    # a short search first: numba loads its compiled kernels and torch and wlplan make their first calls (about
    # half a second in all), which a sweep's planning pays once per process, not once per instance
    gbfs(heuristic.task, heuristic, SearchSettings(PAPER, WARM_UP_EVALUATIONS))
    started = time.perf_counter()
    result = gbfs(heuristic.task, heuristic, SearchSettings(PAPER, evaluations))
    seconds = time.perf_counter() - started
    # VmHWM, the peak of this process's own address space (getrusage's ru_maxrss would carry over the launching
    # process's size across fork and exec)
    status = Path("/proc/self/status").read_text()
    peak_mb = int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024
    import tnlib

    print(json.dumps({"evaluations": result.evaluations, "seconds": seconds, "solved": result.solved,
                      "peak_mb": peak_mb, "tnlib": tnlib.__file__}))


def search(checkpoint: Path, domain: str, problem: Path, evaluations: int, code: Path | None = None) -> dict:
    """One search in a fresh process; with ``code`` (another checkout's root), its ``tnlib`` is the one imported."""
    out = subprocess.run([sys.executable, __file__, "--child", str(checkpoint), domain, str(problem),
                          str(evaluations)] + ([str(code)] if code is not None else []),
                         capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    expected = (Path(code) if code is not None else ROOT).resolve() / "tnlib"
    if Path(result["tnlib"]).resolve().parent != expected:
        raise SystemExit(f"the search imported {result['tnlib']}, not the tnlib of {expected.parent}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", nargs="+", default=list(DOMAINS), choices=DOMAINS)
    parser.add_argument("--steps", type=int, default=500, help="training steps per model (default: %(default)s)")
    parser.add_argument("--evaluations", type=int, default=1000,
                        help="evaluation limit of each search (default: %(default)s)")
    parser.add_argument("--compare-code", type=Path, metavar="CHECKOUT",
                        help="also run each WL search with the tnlib of another checkout (e.g. a `git worktree` of "
                             "an earlier commit) and print both rates and their ratio, the two searches alternating")
    parser.add_argument("--data-profile", default="small", choices=("small", "paper"),
                        help="the dataset the training steps are timed on (default: %(default)s)")
    parser.add_argument("--to-flat", nargs=2, type=Path, metavar=("WL_RUNS", "NLM_RUNS"),
                        help="results folders of WL and NLM sweeps trained until flat on the --data-profile data: "
                             "adds each model's training time to flat (the runs' steps times this run's s/step)")
    args = parser.parse_args()
    for folder in args.to_flat or ():
        if not folder.is_dir():
            parser.error(f"--to-flat: no results folder {folder}")
    if args.compare_code is not None and not (args.compare_code / "tnlib" / "__init__.py").is_file():
        parser.error(f"--compare-code: {args.compare_code} holds no tnlib package")
    import torch

    from bench_learned_search import random_checkpoint

    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread; training on data/{args.data_profile} at batch 64, {args.steps} "
          f"steps; GBFS (paper counting) at most {args.evaluations:,} evaluations, TN learn/ff with the LM-cut bound")
    print(f"{'domain':12s} {'instance':34s} {'WL features':>11s} {'WL fit s':>8s} {'WL s/step':>9s} "
          f"{'NLM s/step':>10s} {'WL eval/s':>9s} {'NLM eval/s':>10s} {'WL MB':>6s} {'NLM MB':>6s} "
          f"{'step':>6s} {'eval/s':>6s}")
    per_step = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for domain in args.domains:
            wl = train_seconds(domain, "wl", args.steps, folder / "wl", args.data_profile)
            nlm = train_seconds(domain, "nlm", args.steps, folder / "nlm", args.data_profile)
            per_step[domain] = (wl["per_step"], nlm["per_step"])
            from tnlib.learning.training import checkpoint_encoder, load_checkpoint

            _, _, config, saved = load_checkpoint(wl["run"])
            features = checkpoint_encoder(config, saved).num_features
            problem = largest_plan_instance(domain)
            wl_search = search(Path(wl["run"]) / "best.pt", domain, problem, args.evaluations)
            nlm_search = search(random_checkpoint(folder, domain, "nlm", 0), domain, problem, args.evaluations)
            wl_rate = wl_search["evaluations"] / wl_search["seconds"]
            nlm_rate = nlm_search["evaluations"] / nlm_search["seconds"]
            print(f"{domain:12s} {problem.stem:34s} {features:11,d} {wl['setup']:8.1f} {wl['per_step']:9.4f} "
                  f"{nlm['per_step']:10.4f} {wl_rate:9.0f} {nlm_rate:10.1f} {wl_search['peak_mb']:6.0f} "
                  f"{nlm_search['peak_mb']:6.0f} {wl['per_step'] / nlm['per_step']:6.3f} {wl_rate / nlm_rate:6.1f}",
                  flush=True)
            if args.compare_code is not None:
                theirs = search(Path(wl["run"]) / "best.pt", domain, problem, args.evaluations, args.compare_code)
                mine = search(Path(wl["run"]) / "best.pt", domain, problem, args.evaluations)
                their_rate, my_rate = (r["evaluations"] / r["seconds"] for r in (theirs, mine))
                rates = [wl_rate, my_rate]
                print(f"{'':12s} WL eval/s, this checkout {min(rates):.0f}-{max(rates):.0f} (two searches), "
                      f"{args.compare_code} {their_rate:.0f}: {min(rates) / their_rate:.2f}-"
                      f"{max(rates) / their_rate:.2f}x", flush=True)
    if args.to_flat is not None:
        from tnlib.experiments.scope import collect_scope

        wl_folder, nlm_folder = args.to_flat
        wl_runs, nlm_runs = collect_scope(wl_folder).runs, collect_scope(nlm_folder).runs
        print(f"\nTraining time to flat: steps the runs trained (median (range, runs); WL: {wl_folder}, NLM: "
              f"{nlm_folder}) x the s/step above")
        print(f"{'domain':12s} {'WL steps':>22s} {'WL min':>8s} {'NLM steps':>22s} {'NLM min':>8s} {'time':>6s}")
        for domain in args.domains:
            print(to_flat_row(domain, steps_to_flat(wl_runs, "wl", domain), steps_to_flat(nlm_runs, "nlm", domain),
                              *per_step[domain]), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        if len(sys.argv) > 6:  # another checkout's tnlib, ahead of this one's
            sys.path.insert(0, sys.argv[6])
        search_child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        main()
