"""Training and learned GBFS beside a busy process: torch's threads and OpenMP's wait policy on shared cores.

Each measurement runs in a fresh process (OpenMP reads its settings when torch is loaded): NLM training steps at
batch 64 (data/small or, with --data data/paper, the paper-size training set) and NLM-guided GBFS evaluations on a
data/small blocksworld test instance (a randomly initialised model, so the search runs to its evaluation limit),
once with the machine otherwise idle and once beside one process that keeps a core busy. Settings: torch's own
default (one thread per core, 2 here; OpenMP's waiting threads spin), 2 threads with OMP_WAIT_POLICY=PASSIVE, one
thread, and tnlib's default (``import tnlib`` before torch: tnlib.THREAD_DEFAULTS). Prints steps (evaluations) per
second and the ratio busy / idle.

    .venv/bin/python benchmarks/bench_shared_cores.py                    # about 3 minutes on 2 cores
    .venv/bin/python benchmarks/bench_shared_cores.py --data data/paper --steps 40

Stop other work first (the idle column assumes both cores are free).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TRAIN = """{preamble}
import time, torch
{set_threads}
from tnlib.learning.training import TrainConfig, load_items, encode_all
from tnlib.learning.models import make_encoder
from tnlib.learning.models import build_model
from tnlib.learning.heads import DistributionHead
import tnlib.learning.training as training
config = TrainConfig(domain="blocksworld", model="nlm", batch_size=64, out_dir="/tmp/unused", data_root={data!r})
items = load_items(config, config.train_split)
encoder = make_encoder("nlm", "blocksworld")
data = encode_all(encoder, items)
torch.manual_seed(0)
model = build_model("nlm", **training.model_constructor_arguments(config, encoder))
head = DistributionHead(config.head)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
sampler = torch.Generator().manual_seed(0)
def step():
    rows = torch.randint(len(data), (64,), generator=sampler).tolist()
    batch = encoder.collate([data[i] for i in rows])
    loss = head(model(batch.inputs), batch.residual, batch.lower, batch.upper).nll(batch.h_star).mean()
    optimizer.zero_grad(); loss.backward(); optimizer.step()
for _ in range(5):
    step()
started = time.perf_counter()
for _ in range({steps}):
    step()
print({steps} / (time.perf_counter() - started))
"""

SEARCH = """{preamble}
import time, torch
{set_threads}
from tnlib.learning.learned_heuristic import LearnedHeuristic, search_problem
from tnlib.planning.search_settings import SearchSettings
from tnlib.learning.training import train
from tnlib.data.loading import load_split
run = train(dict(domain="blocksworld", model="nlm", steps=1, eval_every=1, checkpoint_every=1, batch_size=8,
                 out_dir="/tmp/bench-shared-cores", run_name="random", progress=False))
table = load_split(None, "blocksworld", "test")
problem = table.problem_path(table.instances()[-1])
heuristic = LearnedHeuristic(run, "blocksworld", problem)
search_problem(heuristic, "blocksworld", problem, SearchSettings(max_evaluations=200))
started = time.perf_counter()
result = search_problem(heuristic, "blocksworld", problem, SearchSettings(max_evaluations={evaluations}))
print(result.evaluations / (time.perf_counter() - started))
"""


# (label, torch threads or None for the default, OMP_WAIT_POLICY or None, import tnlib before torch)
SETTINGS = [
    ("torch's default (2 threads, OpenMP spins)", None, None, False),
    ("2 threads, OMP_WAIT_POLICY=PASSIVE", 2, "PASSIVE", False),
    ("1 thread", 1, None, False),
    ("tnlib's default (import tnlib first)", None, None, True),
]


def measure(code: str, threads: int | None, policy: str | None, tnlib_first: bool, busy: bool) -> float:
    env = {key: value for key, value in os.environ.items() if key not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    env.update(MALLOC_MMAP_MAX_="0", MALLOC_TRIM_THRESHOLD_="17179869184", TNLIB_PROGRESS="off")
    if policy is not None:
        env["OMP_WAIT_POLICY"] = policy
    source = code.format(preamble="import tnlib" if tnlib_first else "",
                         set_threads="" if threads is None else f"torch.set_num_threads({threads})")
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        time.sleep(0.5 if busy else 0)
        out = subprocess.run([sys.executable, "-c", source], env=env, cwd=ROOT, capture_output=True, text=True,
                             check=True)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="data/small", help="training data root (default data/small)")
    parser.add_argument("--steps", type=int, default=200, help="training steps timed per measurement (default 200)")
    parser.add_argument("--evaluations", type=int, default=5000, help="GBFS evaluations timed (default 5000)")
    args = parser.parse_args()
    train = TRAIN.replace("{steps}", str(args.steps)).replace("{data!r}", repr(args.data))
    search = SEARCH.replace("{evaluations}", str(args.evaluations))
    for label, template in ((f"training steps/s (NLM, {args.data} blocksworld, batch 64)", train),
                            ("GBFS evaluations/s (NLM, a data/small blocksworld test instance)", search)):
        print(f"\n{label}")
        print("| setting | idle | beside a busy process | busy / idle |")
        print("|---|---|---|---|")
        for name, threads, policy, tnlib_first in SETTINGS:
            idle = measure(template, threads, policy, tnlib_first, busy=False)
            shared = measure(template, threads, policy, tnlib_first, busy=True)
            print(f"| {name} | {idle:.1f} | {shared:.1f} | {shared / idle:.2f} |", flush=True)


if __name__ == "__main__":
    main()
