"""Probability distributions: the Truncated Normal at the heart of tnlib."""
from tnlib.distributions.truncated_normal import TruncatedNormal, torch_route

__all__ = ["TruncatedNormal", "torch_route"]
