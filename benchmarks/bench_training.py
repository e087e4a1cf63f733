"""Training and inference speed of the three models on each domain (CPU unless --device says otherwise).

Prints, per domain and model:
* training steps per second of ``tnlib.learning.training.train`` itself (batch sampling, collation, forward, NLL,
  backward, clipping, AdamW) at the given batch size, after a warm-up run;
* the time of one forward pass (no gradient, inputs already collated) at batch 1, 16 and 256.

    .venv/bin/python benchmarks/bench_training.py                       # data/small, batch 64, 2 threads
    .venv/bin/python benchmarks/bench_training.py --batch-size 256 --domains blocksworld --models nlm

Set MALLOC_MMAP_MAX_=0 and MALLOC_TRIM_THRESHOLD_=17179869184 (as the Makefile does): glibc otherwise maps and
unmaps big tensors on every NLM step (see the shared training-cost spec).
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch

from tnlib.learning.encodings import make_encoder
from tnlib.learning.models import build_model
from tnlib.paper import DOMAINS
from tnlib.learning.training import TrainConfig, load_items, train


def time_training(domain: str, model: str, items: list[dict], batch_size: int, steps: int, device) -> float:
    """Steps per second of ``train``'s loop, timed between step callbacks (setup and validation excluded)."""
    stamps: list[float] = []
    with tempfile.TemporaryDirectory() as out:
        n = steps + 3
        cfg = TrainConfig(domain=domain, model=model, steps=n, batch_size=batch_size, eval_every=n,
                          checkpoint_every=n, out_dir=out, progress=False, device=device)
        train(cfg, items, items[:8], on_step=lambda step: stamps.append(time.perf_counter()))
    # stamps[k] is after step k+1; the first two steps are warm-up, the last includes validation and saving
    return (len(stamps) - 3) / (stamps[-2] - stamps[1])


def time_forward(domain: str, model_name: str, items: list[dict], batch: int, repeats: int, device) -> float:
    encoder = make_encoder(model_name, domain)
    torch.manual_seed(0)
    model = build_model(model_name, **encoder.model_kwargs()).to(device).eval()
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
    parser.add_argument("--domains", nargs="+", default=list(DOMAINS))
    parser.add_argument("--models", nargs="+", default=["nlm", "hgn", "linear"])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    print(f"torch {torch.__version__}, {args.threads} threads, device {device}, training batch {args.batch_size}")
    print(f"{'domain':12} {'model':7} {'objects':>7} {'facts':>6} {'steps/s':>8} "
          f"{'fwd b=1':>9} {'fwd b=16':>9} {'fwd b=256':>9}")
    for domain in args.domains:
        try:
            items = load_items(TrainConfig(domain=domain, data_root=args.data, residual="ff"), "train")
        except Exception as err:  # noqa: BLE001 - a missing split is reported, the others still run
            print(f"{domain:12} skipped: {err}")
            continue
        from tnlib.learning.encodings import HGNEncoder, problem_objects

        objects = max(len(problem_objects(domain, p).objects) for p in {i["problem"] for i in items})
        facts = max(HGNEncoder(domain).graph(p).num_nodes for p in {i["problem"] for i in items})
        for model in args.models:
            rate = time_training(domain, model, items, args.batch_size, args.steps, device)
            forward = [time_forward(domain, model, items, b, args.repeats, device) for b in (1, 16, 256)]
            print(f"{domain:12} {model:7} {objects:7d} {facts:6d} {rate:8.1f} "
                  + " ".join(f"{t * 1e3:7.2f}ms" for t in forward), flush=True)


if __name__ == "__main__":
    main()
