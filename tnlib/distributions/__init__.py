"""Probability distributions: the Truncated Normal at the heart of tnlib."""
from tnlib.distributions.truncated_normal import (
    CPU_ROUTES,
    TruncatedNormal,
    cdf_pass_from,
    cpu_route,
    icdf_pass_from,
    torch_route,
)

__all__ = ["CPU_ROUTES", "TruncatedNormal", "cdf_pass_from", "cpu_route", "icdf_pass_from", "torch_route"]
