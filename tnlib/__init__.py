"""tnlib: learning planning heuristics with Truncated Gaussians.

The package follows the pipeline of the paper, one module per stage; ``TruncatedNormal`` is the statistics at
its heart and is importable from the top level.
"""
from tnlib.truncated_normal import TruncatedNormal

__version__ = "0.1.0"
__all__ = ["TruncatedNormal", "__version__"]
