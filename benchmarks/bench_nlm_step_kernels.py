"""The NLM training step's arity-3 kernels one by one, on the arguments of a captured data/paper step.

    .venv/bin/python benchmarks/bench_nlm_step_kernels.py --domains visitall gripper --before 53109bef

Per domain, trains the authors' NLM (TN learn/ff head, batch 64) ``--warmup`` steps and captures the arguments of
the step after them that reach the four arity-3 kernels (the first layer's broadcast sum and its backward, the second
layer's projected extrema and their backward). Each kernel then runs ``--repeats`` times on fresh copies of them
(the copies made before the timer starts), here and, with ``--before``, that revision's kernels in the same process
(read with ``git show``), alternating; the medians of the CPU time are printed with a digest of every array the
kernel wrote, so that "same" says the two compute the same numbers bit for bit. Run it with one thread
(``OMP_NUM_THREADS=1``), as the campaign's processes run.
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from bench_nlm_training_step import DOMAINS, module_at
from tnlib.learning import nlm_autograd, nlm_kernels
from tnlib.learning.heads import DistributionHead, HeadConfig
from tnlib.learning.models import build_model, make_encoder, model_arguments
from tnlib.learning.training import TrainConfig, encode_all, load_items

KERNELS = ("broadcast_sum_kernel", "broadcast_sum_backward_kernel", "projected_extrema_kernel",
           "extrema_permuted_backward_kernel")


def captured_calls(domain: str, warmup: int, batch_size: int) -> dict[str, list[tuple]]:
    """Per kernel, the argument tuples of its calls in one training step (after ``warmup`` steps), copied."""
    config = TrainConfig(model="nlm", domain=domain, data_root="data/paper", head=HeadConfig(), steps=1,
                         progress=False)
    items = load_items(config, "train")
    encoder = make_encoder("nlm", domain)
    encoder.fit(items)
    data = encode_all(encoder, items)
    torch.manual_seed(0)
    model = build_model("nlm", **model_arguments("nlm", encoder.model_kwargs()))
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.decay)
    head = DistributionHead(config.head)
    sampler = torch.Generator().manual_seed(0)
    calls: dict[str, list[tuple]] = {}
    recording = [False]
    run_each, run_split = nlm_autograd.run_each, nlm_autograd.run_split

    def each(kernel, argument_tuples):
        if recording[0] and kernel.__name__ in KERNELS:
            calls[kernel.__name__] = copy.deepcopy(list(argument_tuples))
        return run_each(kernel, argument_tuples)

    def split(kernel, batch, work, *args):
        if recording[0] and kernel.__name__ in KERNELS:
            calls[kernel.__name__] = [copy.deepcopy(args) + (0, batch)]
        return run_split(kernel, batch, work, *args)

    nlm_autograd.run_each, nlm_autograd.run_split = each, split
    try:
        for step in range(warmup + 1):
            recording[0] = step == warmup
            batch = encoder.collate([data[i] for i in torch.randint(len(data), (batch_size,),
                                                                    generator=sampler).tolist()])
            prediction = head(model(batch.inputs), batch.residual, batch.lower, batch.upper)
            optimizer.zero_grad(set_to_none=True)
            prediction.nll(batch.h_star).mean().backward()
            nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
    finally:
        nlm_autograd.run_each, nlm_autograd.run_split = run_each, run_split
    return calls


def timed(kernel, calls: list[tuple]) -> tuple[float, str]:
    """(CPU seconds of one run of every call, on fresh copies of the arguments; a digest of the arrays after it)."""
    fresh = [copy.deepcopy(args) for args in calls]
    started = time.process_time()
    for args in fresh:
        kernel(*args)
    seconds = time.process_time() - started
    digest = hashlib.sha256()
    for args in fresh:
        for array in args:
            if isinstance(array, np.ndarray):
                digest.update(np.ascontiguousarray(array).tobytes())
    return seconds, digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domains", nargs="+", choices=DOMAINS, default=list(DOMAINS))
    parser.add_argument("--repeats", type=int, default=7, help="timed runs of each kernel (default 7)")
    parser.add_argument("--warmup", type=int, default=5, help="training steps before the captured one (default 5)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--before", help="a revision whose kernels run beside these, alternating")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        before = None
        if args.before:
            module_at(args.before, Path(folder))
            before = sys.modules[f"nlm_kernels_{args.before}"]  # loaded by module_at
        print(f"threads {torch.get_num_threads()}; CPU ms per kernel run over one captured step, medians of "
              f"{args.repeats}")
        print(f"{'domain':12} {'kernel':34} {'before ms':>9} {'after ms':>9} {'speed-up':>8} numbers")
        for domain in args.domains:
            calls = captured_calls(domain, args.warmup, args.batch_size)
            for name in KERNELS:
                routes = [("after", getattr(nlm_kernels, name))]
                if before is not None:
                    routes.insert(0, ("before", getattr(before, name)))
                seconds = {route: [] for route, _ in routes}
                digests = {}
                for repeat in range(args.repeats + 1):  # the first run of each compiles or loads the kernel
                    for route, kernel in routes:
                        spent, digests[route] = timed(kernel, calls[name])
                        if repeat:
                            seconds[route].append(spent)
                after = statistics.median(seconds["after"]) * 1e3
                if before is None:
                    print(f"{domain:12} {name:34} {'':>9} {after:>9.2f}", flush=True)
                    continue
                earlier = statistics.median(seconds["before"]) * 1e3
                same = "same" if digests["before"] == digests["after"] else "differ"
                print(f"{domain:12} {name:34} {earlier:>9.2f} {after:>9.2f} {earlier / after:>7.2f}x {same}",
                      flush=True)


if __name__ == "__main__":
    main()
