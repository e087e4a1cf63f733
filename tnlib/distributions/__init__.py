"""Probability distributions: the Truncated Normal at the heart of tnlib."""
from tnlib.distributions.truncated_normal import TruncatedNormal

__all__ = ["TruncatedNormal"]
