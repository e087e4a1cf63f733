"""tnlib: learning planning heuristics with Truncated Gaussians.

The package follows the pipeline of the paper, one module per stage; ``TruncatedNormal`` is the statistics at
its heart and is importable from the top level. It is loaded lazily so that the command line's planning
commands start without importing torch.
"""
from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["TruncatedNormal", "__version__"]


def __getattr__(name: str):
    if name == "TruncatedNormal":
        from tnlib.distributions import TruncatedNormal

        return TruncatedNormal
    raise AttributeError(f"module 'tnlib' has no attribute {name!r}")
