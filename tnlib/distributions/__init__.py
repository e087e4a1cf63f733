"""Probability distributions: the Truncated Normal at the heart of tnlib.

The implementation lives in ``tnlib/truncated_normal.py`` for now; the rest of the library imports it from here.
"""
from tnlib.truncated_normal import TruncatedNormal

__all__ = ["TruncatedNormal"]
