"""The NLM's training step on data/paper: the current code against an earlier revision's, beside the floor.

    .venv/bin/python benchmarks/bench_nlm_training_step.py                       # four domains, 20 steps a route
    .venv/bin/python benchmarks/bench_nlm_training_step.py --domains visitall --steps 40 --before 1baa81ec
    .venv/bin/python benchmarks/bench_nlm_training_step.py --compare-weights 300     # weights, not time

Per domain, one process builds the authors' NLM (breadth 3, depth 5, TN head with learned sigma, residual h_FF,
LM-cut bound) twice with the same initial weights: once from the current ``tnlib.learning.nlm`` ("after") and once
from ``--before``'s copies of that module, its autograd functions and its numba kernels ("before", read with
``git show``, by default the revision before the training-step work). The two take turns on the same batches of data/paper's training split (batch 64, AdamW, the
gradient clip of ``tnlib train``), one step each, so that the machine's load falls on both alike; the medians of the
timed steps (after ``--warmup`` untimed ones) and their ratio are printed, in wall time and in the process's CPU
time (on a machine whose cores other processes share, the CPU time is the steadier figure; with one thread on idle
cores the two agree). Collation is left out of the timing: it is the same for both.

The floor per step: what this formulation of the step cannot avoid, over each state's real objects (a position with
a padded object never reaches the output, and the kernels skip it), at this machine's float32 matrix-product rate and
the bandwidth of a 256 MB copy, both measured in the same run; the larger of the two times. Its flops: forward, the
layers' Linears (each arity's inputs, and the expand part projected while small) and the comparisons of the
reductions; backward, the same products again for the weights' gradients and, past the first layer (whose inputs
take none), for the inputs' -- except the local part of an arity-3 output that the next layer only reduces, whose
gradient is nonzero at its extrema's ties alone (a few entries in a hundred), counted as none. Its bytes: each
arity-3 output that the next layer reads position by position written once and read once; an arity-3 output that
the next layer only reduces need never be stored (inference never stores it), counted as none. So the floor is a
lower bound on any implementation of this formulation, not a target: the matrix-product rate is that of a large
square product, which the step's narrow products (8-48 outputs) do not reach. The table prints the floor's flops
(Gflop) and bytes (MB) per step beside it, medians over the timed batches. Run it with one thread
(``OMP_NUM_THREADS=1``, as the campaign's processes run) and the allocator settings of the Makefile.
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from bench_nlm_paper_sizes import best_seconds, matmul_rate
from tnlib.learning.models import make_encoder
from tnlib.learning.heads import DistributionHead, HeadConfig
from tnlib.learning.models import build_model, model_arguments
from tnlib.learning.training import TrainConfig, encode_all, load_items

DOMAINS = ("blocksworld", "ferry", "gripper", "visitall")
# The last revision whose NLM training step formed every arity-3 output as a stored tensor and reduced it in a pass of
# its own (the route this benchmark's "before" times by default).
BEFORE = "a4938ce0"
REPO = Path(__file__).resolve().parents[1]


def _source_at(revision: str, path: str) -> str | None:
    shown = subprocess.run(["git", "-C", str(REPO), "show", f"{revision}:{path}"], capture_output=True, text=True)
    return shown.stdout if shown.returncode == 0 else None


def _load(path: Path, source: str):
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _with_kernels(source: str | None, name: str) -> str | None:
    """``source`` with its imports of ``tnlib.learning.nlm_kernels`` taken from the module ``name`` instead."""
    if source is None:
        return None
    return source.replace("from tnlib.learning import nlm_kernels\n", f"import {name} as nlm_kernels\n").replace(
        "from tnlib.learning.nlm_kernels import", f"from {name} import")


def module_at(revision: str, folder: Path):
    """``tnlib.learning.nlm`` as it was at ``revision``, loaded as a module of its own, with that revision's copies
    of the modules it builds on where it has them: ``nlm_autograd`` (the NLM's autograd functions) and
    ``nlm_kernels`` (the numba kernels), so that "before" runs that revision's code throughout."""
    source = _source_at(revision, "tnlib/learning/nlm.py")
    if source is None:
        raise SystemExit(f"{revision} has no tnlib/learning/nlm.py")
    autograd_source = _source_at(revision, "tnlib/learning/nlm_autograd.py")
    kernels_source = _source_at(revision, "tnlib/learning/nlm_kernels.py")
    if kernels_source is not None:
        kernels = _load(folder / f"nlm_kernels_{revision}.py", kernels_source)
        sys.modules[kernels.__name__] = kernels
        source, autograd_source = (_with_kernels(text, kernels.__name__) for text in (source, autograd_source))
    if autograd_source is not None:
        autograd = _load(folder / f"nlm_autograd_{revision}.py", autograd_source)
        sys.modules[autograd.__name__] = autograd
        source = source.replace("from tnlib.learning import nlm_autograd",
                                f"import {autograd.__name__} as nlm_autograd")
    return _load(folder / f"nlm_{revision}.py", source)


def memory_bandwidth() -> float:
    """Bytes per second of a 256 MB copy (read and write counted), the best of three."""
    source = np.ones(1 << 26, dtype=np.float32)
    target = np.empty_like(source)
    return 2 * source.nbytes / best_seconds(lambda: np.copyto(target, source))


def training_floor(model: nn.Module, counts: list[int], rate: float, bandwidth: float) -> tuple[float, float, float]:
    """(floor seconds, flops, bytes) of a training step on a batch of states of ``counts`` real objects each (see
    the module's docstring for what it counts)."""
    stages = list(model.layers) + ([model.output_layer] if model.output_layer is not None else [])
    flops = moved = 0.0
    for k, layer in enumerate(stages):
        following = stages[k + 1].out_arities if k + 1 < len(stages) else [0]
        for r in layer.out_arities:
            c_expand, c_same, c_reduce = layer.part_sizes(r)
            perms = math.factorial(r)
            only_reduced = r == 3 and r not in following and r + 1 not in following
            for n in counts:
                local = 2 * n ** r * perms * (c_same + c_reduce) * layer.width
                expand = 2 * n ** max(r - 1, 0) * perms * c_expand * layer.width
                backward = expand + (0 if only_reduced else local)
                flops += local + expand + n ** (r + 1) * c_reduce + backward * (2 if k > 0 else 1)
                if r == 3 and r in following:
                    moved += 2 * n ** 3 * layer.width * 4
    return max(flops / rate, moved / bandwidth), flops, moved


def timed_steps(domain: str, before_module, steps: int, warmup: int, batch_size: int,
                head_config: HeadConfig = HeadConfig(), nudged: bool = False, data: str = "data/paper") -> dict:
    config = TrainConfig(model="nlm", domain=domain, data_root=data, head=head_config, steps=1, progress=False)
    items = load_items(config, "train")
    encoder = make_encoder("nlm", domain)
    encoder.fit(items)
    data = encode_all(encoder, items)
    kwargs = model_arguments("nlm", encoder.model_kwargs())
    torch.manual_seed(0)
    after = build_model("nlm", **kwargs)
    before = before_module.NLM(**kwargs)
    before.load_state_dict(after.state_dict())
    models = [("before", before), ("after", after)]
    if nudged:  # the before route from weights one float32 step away: how far rounding alone carries training
        nudged_model = before_module.NLM(**kwargs)
        nudged_model.load_state_dict({key: torch.nextafter(value, torch.full_like(value, math.inf))
                                      for key, value in after.state_dict().items()})
        models.append(("nudged", nudged_model))
    head = DistributionHead(config.head)
    routes = {}
    for name, model in models:
        routes[name] = (model, torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.decay))
    sampler = torch.Generator().manual_seed(0)
    times = {name: [] for name in routes}
    cpu = {name: [] for name in routes}
    objects = 0
    counts = []  # each timed batch's real object counts
    for step in range(warmup + steps):
        rows = torch.randint(len(data), (batch_size,), generator=sampler).tolist()
        batch = encoder.collate([data[i] for i in rows])
        objects = max(objects, batch.inputs.object_mask.shape[1])
        if step >= warmup:
            counts.append(batch.inputs.object_mask.sum(1).tolist())
        for name, (model, optimizer) in routes.items():
            started, started_cpu = time.perf_counter(), time.process_time()
            prediction = head(model(batch.inputs), batch.residual, batch.lower, batch.upper)
            loss = prediction.nll(batch.h_star).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
            if step >= warmup:
                times[name].append(time.perf_counter() - started)
                cpu[name].append(time.process_time() - started_cpu)
    return {"before": statistics.median(times["before"]), "after": statistics.median(times["after"]),
            "before_cpu": statistics.median(cpu["before"]), "after_cpu": statistics.median(cpu["after"]),
            "objects": objects, "counts": counts, "model": after, "before_model": before,
            "nudged_model": routes["nudged"][0] if nudged else None}


def compare_weights(domains: list[str], before_module, steps: int, batch_size: int, data: str) -> None:
    heads = {"TN learn/ff": HeadConfig(), "N fixed/none": HeadConfig(distribution="N", sigma="fixed", residual="none")}
    print(f"weights after {steps} steps, batch {batch_size}: max |other - before| / max |before|, where other is the "
          "after route, and the before route started one float32 step away (nudged)")
    print(f"{'domain':12} {'head':13} {'after':>9} {'nudged':>9}")
    for domain in domains:
        for name, head_config in heads.items():
            result = timed_steps(domain, before_module, steps, 0, batch_size, head_config, nudged=True, data=data)
            before = result["before_model"].state_dict()
            largest = max(float(w.abs().max()) for w in before.values())
            differences = []
            for other in (result["model"].state_dict(), result["nudged_model"].state_dict()):
                differences.append(max(float((other[key] - before[key]).abs().max()) for key in before) / largest)
            print(f"{domain:12} {name:13} {differences[0]:>9.2e} {differences[1]:>9.2e}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domains", nargs="+", choices=DOMAINS, default=list(DOMAINS))
    parser.add_argument("--steps", type=int, default=20, help="timed steps per route (default 20)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--before", default=BEFORE, help=f"the revision timed as 'before' (default {BEFORE})")
    parser.add_argument("--data", default="data/paper", help="dataset root (default data/paper)")
    parser.add_argument("--compare-weights", type=int, metavar="STEPS",
                        help="train both routes STEPS steps and compare their weights instead of timing")
    args = parser.parse_args()
    if args.compare_weights:
        with tempfile.TemporaryDirectory() as folder:
            compare_weights(args.domains, module_at(args.before, Path(folder)), args.compare_weights,
                            args.batch_size, args.data)
        return
    rate, bandwidth = matmul_rate(), memory_bandwidth()
    print(f"threads {torch.get_num_threads()}; float32 matrix product {rate / 1e9:.1f} Gflop/s, memory copy "
          f"{bandwidth / 1e9:.1f} GB/s; batch {args.batch_size}, {args.steps} timed steps per route, alternating")
    print("seconds per step: wall time (medians), then CPU time of the process (medians; on a loaded machine the "
          "steadier of the two)")
    print("floor: a lower bound on this formulation's step over each state's real objects, not a target -- the "
          "Linears' products forward and backward (the weights' gradients, and the inputs' past the first layer), "
          "none for the sparse backward of an arity 3 the next layer only reduces, the reductions' comparisons, at "
          "a large product's rate; each arity-3 output the next layer reads position by position written and read "
          "once, at the copy's bandwidth")
    print(f"{'domain':12} {'objects':>7} {'before s':>9} {'after s':>8} {'speed-up':>8} {'before cpu':>10} "
          f"{'after cpu':>9} {'speed-up':>8} {'Gflop':>6} {'MB':>5} {'floor s':>8} {'after/floor':>11}")
    with tempfile.TemporaryDirectory() as folder:
        before_module = module_at(args.before, Path(folder))
        for domain in args.domains:
            result = timed_steps(domain, before_module, args.steps, args.warmup, args.batch_size, data=args.data)
            floor, flops, moved = (statistics.median(values) for values in zip(
                *(training_floor(result["model"], counts, rate, bandwidth) for counts in result["counts"])))
            print(f"{domain:12} {result['objects']:>7} {result['before']:>9.3f} {result['after']:>8.3f} "
                  f"{result['before'] / result['after']:>7.2f}x {result['before_cpu']:>10.3f} "
                  f"{result['after_cpu']:>9.3f} {result['before_cpu'] / result['after_cpu']:>7.2f}x "
                  f"{flops / 1e9:>6.2f} {moved / 2**20:>5.0f} {floor:>8.3f} "
                  f"{min(result['after'], result['after_cpu']) / floor:>10.1f}x", flush=True)


if __name__ == "__main__":
    main()
