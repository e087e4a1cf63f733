"""Float64 scalars and one thread: what every small demonstration of the notebooks runs on.

The demonstrations go far into the Gaussian tails, where float32 rounds the Truncated Gaussian's normalizer to
zero; their tensors are tiny, so one thread is fastest.
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch

from tnlib.distributions import TruncatedNormal


DTYPE = torch.float64


def truncated_normal(loc: float, scale: float, low: float, high: float) -> TruncatedNormal:
    """A scalar float64 ``TruncatedNormal`` (argument checks are done by the callers' parameter checks)."""
    return TruncatedNormal(
        torch.tensor(loc, dtype=DTYPE),
        torch.tensor(scale, dtype=DTYPE),
        torch.tensor(low, dtype=DTYPE),
        torch.tensor(high, dtype=DTYPE),
        validate_args=False,
    )


def truncated_nll(distribution: TruncatedNormal, value: torch.Tensor, low: torch.Tensor, high: torch.Tensor) -> torch.Tensor:
    """``-log p(value)``, +inf outside ``[low, high]`` whatever the implementation does off its support."""
    inside = (value >= low) & (value <= high)
    clamped = torch.minimum(torch.maximum(value, low), high)
    nll = -distribution.log_prob(clamped)
    return torch.where(inside, nll, torch.full_like(nll, math.inf))


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """Run torch on one thread inside the block.

    The demonstrations' tensors are tiny: one thread is fastest, and on a busy two-core machine OpenMP's
    spin-waiting made two threads five to ten times slower than one.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
