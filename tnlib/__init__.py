"""tnlib: learning planning heuristics with Truncated Gaussians.

The package follows the pipeline of the paper, one module per stage; ``TruncatedNormal`` is the statistics at
its heart and is importable from the top level. It is loaded lazily so that the command line's planning
commands start without importing torch.
"""
from __future__ import annotations

import os

__version__ = "0.1.0"

# One CPU thread per process unless the environment says otherwise. tnlib's CPU work (NLM and STRIPS-HGN steps,
# GBFS one expansion at a time) is many small kernels: a second thread gains at most 1.3x on idle cores (NLM on
# data/paper blocksworld: 15.5 vs 12.2 steps/s), and when another process holds a core -- a second sweep worker, a
# notebook beside a job, CI's shared machine -- OpenMP's waiting threads spin through the time slices the other
# needs and a step takes 3-4x longer, while one thread keeps its speed (benchmarks/bench_shared_cores.py, in
# reports/speed.md). Waiting passively (OMP_WAIT_POLICY=PASSIVE) avoids the collapse but costs more than the second
# thread gains. Read when torch loads, so it applies where tnlib is imported first (the command line, the notebooks,
# the sweep's workers); set OMP_NUM_THREADS to use more threads on a machine of your own.
THREAD_DEFAULTS = {"OMP_NUM_THREADS": "1"}
for _name, _value in THREAD_DEFAULTS.items():
    os.environ.setdefault(_name, _value)

__all__ = ["TruncatedNormal", "__version__"]


def __getattr__(name: str):
    if name == "TruncatedNormal":
        from tnlib.distributions import TruncatedNormal

        return TruncatedNormal
    raise AttributeError(f"module 'tnlib' has no attribute {name!r}")
