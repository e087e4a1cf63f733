"""Training and inference speed of the three models on each domain (CPU unless --device says otherwise).

Prints, per domain and model:
* training steps per second of ``tnlib.learning.training.train`` itself (batch sampling, collation, forward, NLL,
  backward, clipping, AdamW) at the given batch size, after warm-up steps, and seconds per step;
* the same with the baseline model code (``benchmarks/baseline_models.py``: the NLM layer and STRIPS-HGN's
  "means" forward as they were before the speed work), timed in the same run, and the speed-up over it (STRIPS-HGN
  in its default "authors" layout has no baseline code: ``--hgn-layout means`` for that comparison);
* the time of one forward pass (no gradient, inputs already collated) at batch 1, 16 and 256.

    .venv/bin/python benchmarks/bench_training.py                       # data/small, batch 64, 2 threads
    .venv/bin/python benchmarks/bench_training.py --batch-size 256 --objects 16 --models nlm hgn

``--objects N`` trains on generated instances of about N objects instead of a dataset (blocksworld: N blocks;
gripper: N - 4 balls; ferry: N/2 locations and N/2 cars; visitall: the smallest square grid of at least N
cells), on states from random walks; their targets are stand-ins (h* := max(h_FF, LM-cut)) and the head is N
with fixed sigma (an untrained STRIPS-HGN's outputs on a 300-fact instance overflow the TN likelihood's gradient
at the first step), neither of which changes the cost of a step to speak of. ``--repeats`` runs each timing that many times, alternating the current and the
baseline code, and reports medians (other processes on the machine make single timings noisy).

Set MALLOC_MMAP_MAX_=0 and MALLOC_TRIM_THRESHOLD_=17179869184 (as the Makefile does): glibc otherwise maps and
unmaps big tensors on every NLM step (see the shared training-cost spec).
"""
from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path

import torch

import tnlib.learning.training as training
from baseline_models import baseline_forward
from tnlib.learning.encodings import HGNEncoder, problem_objects
from tnlib.learning.models import make_encoder
from tnlib.learning.models import build_model
from tnlib.learning.strips_hgn import HGN_LAYOUTS
from tnlib.learning.training import TrainConfig, load_items, train
from tnlib.paper import DOMAINS


def generated_params(domain: str, objects: int) -> dict:
    """Generator parameters of an instance with about ``objects`` objects."""
    if domain == "blocksworld":
        return dict(blocks=objects)
    if domain == "gripper":
        return dict(balls=max(1, objects - 4))
    if domain == "ferry":
        return dict(locations=max(2, objects // 2), cars=max(1, objects - objects // 2))
    if domain == "visitall":
        side = math.ceil(math.sqrt(objects))
        return dict(x=side, y=side, ratio=1.0)
    raise ValueError(f"no generator parameters for {domain}")


def generated_items(domain: str, objects: int, folder: Path, instances: int = 2, states: int = 200) -> list[dict]:
    """Dataset-style items from random-walk states of generated instances (targets are stand-ins, see above)."""
    from tnlib.planning.generators import generate
    from tnlib.planning.heuristics import evaluate_all, linear_features
    from tnlib.planning.pddl import problem_atoms
    from tnlib.planning.search import random_walk_states
    from tnlib.planning.task import load_task
    from tnlib.planning.pddl import resolve_domain

    items = []
    for seed in range(1, instances + 1):
        path = folder / f"{domain}-{objects}-{seed}.pddl"
        path.write_text(generate(domain, seed, **generated_params(domain, objects)))
        task = load_task(domain, path)
        init, goal = problem_atoms(resolve_domain(domain), path)
        static = [atom for atom in init if atom not in task.fact_index]
        walk = random_walk_states(task, states, seed=seed)
        values = evaluate_all(task, walk, ["ff", "lmcut"])
        features = linear_features(task, walk)
        for i, state in enumerate(walk):
            ff, lmcut = float(values["ff"][i]), float(values["lmcut"][i])
            if not (math.isfinite(ff) and math.isfinite(lmcut)):
                continue
            items.append({
                "state": sorted(static + [task.fact_names[f] for f in task.state_to_indices(state)]),
                "goal": goal, "problem": str(path.resolve()), "domain": domain, "instance": path.stem,
                "h_star": torch.tensor(max(ff, lmcut)), "lower": torch.tensor(lmcut), "upper": torch.tensor(math.inf),
                "residual": torch.tensor(ff), "features": torch.as_tensor(features[i], dtype=torch.float32),
                "ff": ff, "lmcut": lmcut})
    return items


def time_training(domain: str, model: str, items: list[dict], batch_size: int, steps: int, device,
                  baseline: bool = False, head: dict | None = None, model_args: dict | None = None) -> float:
    """Seconds per step of ``train``'s loop, timed between step callbacks (setup and validation excluded);
    ``baseline``: with the baseline model code."""
    stamps: list[float] = []
    build = training.build_model
    if baseline:
        training.build_model = lambda name, **kwargs: baseline_forward(build(name, **kwargs))
    try:
        with tempfile.TemporaryDirectory() as out:
            n = steps + 3
            cfg = TrainConfig.from_dict(dict(domain=domain, model=model, steps=n, batch_size=batch_size, eval_every=n,
                                             checkpoint_every=n, out_dir=out, progress=False, device=str(device),
                                             model_args=model_args or {}, **(head or {})))
            train(cfg, items, items[:8], on_step=lambda step: stamps.append(time.perf_counter()))
    finally:
        training.build_model = build
    # stamps[k] is after step k+1; the first two steps are warm-up, the last includes validation and saving
    return (stamps[-2] - stamps[1]) / (len(stamps) - 3)


def time_forward(domain: str, model_name: str, items: list[dict], batch: int, repeats: int, device,
                 model_args: dict | None = None) -> float:
    encoder = make_encoder(model_name, domain)
    torch.manual_seed(0)
    model = build_model(model_name, **encoder.model_kwargs(), **(model_args or {})).to(device).eval()
    rows = [items[i % len(items)] for i in range(batch)]
    inputs = encoder.collate_items(rows).to(device).inputs
    times = []
    with torch.no_grad():
        model(inputs)
        for _ in range(repeats):
            if device.type == "cuda":
                torch.cuda.synchronize()
            started = time.perf_counter()
            model(inputs)
            if device.type == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=None, help="dataset root (default: tnlib.data's)")
    parser.add_argument("--objects", type=int, default=None,
                        help="train on generated instances of about this many objects instead of a dataset")
    parser.add_argument("--domains", nargs="+", default=list(DOMAINS))
    parser.add_argument("--models", nargs="+", default=["nlm", "hgn", "linear"])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per training run")
    parser.add_argument("--repeats", type=int, default=3, help="training runs per code version (median)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the baseline code")
    parser.add_argument("--forward-repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--hgn-sparse", choices=["auto", "csr", "sorted-segments"], default="auto",
                        help="STRIPS-HGN's sparse products (auto: CSR on the CPU, sorted segments elsewhere)")
    parser.add_argument("--hgn-layout", choices=HGN_LAYOUTS, default="authors",
                        help="STRIPS-HGN's layout (the baseline code exists for means only)")
    args = parser.parse_args()
    if args.hgn_sparse != "auto":
        import tnlib.learning.strips_hgn as strips_hgn

        strips_hgn._sorted_segments_on = lambda device: args.hgn_sparse == "sorted-segments"
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    print(f"torch {torch.__version__}, {args.threads} threads, device {device}, training batch {args.batch_size}, "
          f"median of {args.repeats} runs of {args.steps} steps, STRIPS-HGN sparse products: {args.hgn_sparse}")
    print(f"{'domain':12} {'model':7} {'objects':>7} {'facts':>6} {'steps/s':>8} {'s/step':>7} "
          f"{'before':>7} {'speed-up':>8} {'fwd b=1':>9} {'fwd b=16':>9} {'fwd b=256':>9}")
    folder = Path(tempfile.mkdtemp(prefix="bench-training-"))
    for domain in args.domains:
        try:
            if args.objects:
                items = generated_items(domain, args.objects, folder)
            else:
                items = load_items(TrainConfig(domain=domain, data_root=args.data), "train")
        except Exception as err:  # noqa: BLE001 - a missing split is reported, the others still run
            print(f"{domain:12} skipped: {err}")
            continue
        problems = {i["problem"] for i in items}
        objects = max(len(problem_objects(domain, p).objects) for p in problems)
        facts = max(HGNEncoder(domain).graph(p).num_nodes for p in problems)
        for model in args.models:
            now, before = [], []
            head = dict(distribution="N", sigma="fixed") if args.objects else None
            model_args = {"layout": args.hgn_layout} if model == "hgn" else {}
            compare = not args.no_baseline and (model != "hgn" or args.hgn_layout == "means")
            for _ in range(args.repeats):
                now.append(time_training(domain, model, items, args.batch_size, args.steps, device, head=head,
                                         model_args=model_args))
                if compare:
                    before.append(time_training(domain, model, items, args.batch_size, args.steps, device,
                                                baseline=True, head=head, model_args=model_args))
            step = statistics.median(now)
            old = statistics.median(before) if before else math.nan
            forward = [time_forward(domain, model, items, b, args.forward_repeats, device, model_args)
                       for b in (1, 16, 256)]
            print(f"{domain:12} {model:7} {objects:7d} {facts:6d} {1 / step:8.2f} {step:7.3f} {old:7.3f} "
                  f"{old / step:7.2f}x " + " ".join(f"{t * 1e3:7.2f}ms" for t in forward), flush=True)


if __name__ == "__main__":
    main()
