"""Accuracy of Truncated Normal implementations against mpmath (80 digits at the exact floating inputs).

Compares tnlib (float64 and float32), scipy.stats.truncnorm (float64) and, when installed,
stable-trunc-gaussian 1.3.9 (float64 and float32; it stands in for an infinite bound with 1e5) per regime: the
worst error of the mean (relative to max(|mean|, truncated std)), the worst absolute error of log_prob, and
whether any value or gradient came out inf/NaN where the true value is finite.

    python benchmarks/accuracy_truncated_normal.py [--markdown FILE]
"""
from __future__ import annotations

import argparse
import math
import warnings
from pathlib import Path

import numpy as np
import scipy.stats
import torch

from tnlib import TruncatedNormal
from tnlib.distributions.mpmath_reference import reference

INF = math.inf

REGIMES: dict[str, list[tuple[float, float, float, float]]] = {
    "moderate (loc within 3 scales)": [(0.0, 1.0, 0.2, 1.7), (1.0, 2.0, 0.0, INF), (0.5, 1.0, -1.0, 1.0),
                                        (3.0, 1.0, 0.0, 5.0)],
    "one-sided, loc 10-100 scales out": [(-10.0, 1.0, 0.0, INF), (-100.0, 1.0, 0.0, INF), (102.0, 1.0, -INF, 2.0),
                                         (-30.0, 0.01, 0.0, INF)],
    "one-sided, loc 1e3-1e5 scales out": [(-1e3, 1.0, 0.0, INF), (-1e5, 1.0, 0.0, INF), (1e5, 1.0, -INF, 0.0),
                                          (-1e5, 1e-3, 0.0, INF)],
    "two-sided, loc far outside": [(-40.0, 1.0, 0.0, 1.0), (1e4, 1.0, -1.0, 1.0), (-300.0, 2.0, 0.0, 3.0)],
    "narrow (width 1e-6 scale)": [(0.0, 1.0, 1.0, 1.0 + 1e-6), (0.0, 1.0, 3.0, 3.0 + 1e-6),
                                  (0.0, 1.0, -0.5, -0.5 + 1e-6)],
    "scale 1e-3 and 1e3": [(0.0, 1e-3, 0.01, INF), (0.0, 1e3, -5.0, 5.0), (10.0, 1e3, 0.0, 2e3)],
}


def _points(loc, scale, low, high):
    lo = low if low > -INF else min(loc, high) - 5 * scale
    hi = high if high < INF else max(loc, lo) + 5 * scale
    return [lo + f * (hi - lo) for f in (0.0, 1e-3, 0.3)]


def _torch_eval(make, params, dtype):
    """mean, log_probs and a finite-gradient flag from a torch distribution constructor."""
    p = [torch.tensor(v, dtype=dtype) for v in params]
    loc = p[0].clone().requires_grad_()
    d = make(loc, p[1], p[2], p[3])
    mean = d.mean
    xs = [float(np.asarray(x, dtype=np.float32 if dtype == torch.float32 else np.float64)) for x in _points(*params)]
    lps = d.log_prob(torch.tensor(xs, dtype=dtype))
    (mean + lps.sum()).backward()
    finite = bool(torch.isfinite(mean) and torch.isfinite(lps).all() and torch.isfinite(loc.grad))
    return mean.item(), lps.tolist(), xs, finite


def _tnlib(loc, scale, low, high):
    return TruncatedNormal(loc, scale, low, high, validate_args=False)


def _stg(loc, scale, low, high):
    from stable_trunc_gaussian import TruncatedGaussian

    big = torch.full_like(low, 1e5)
    return TruncatedGaussian(loc, scale, torch.where(torch.isinf(low), -big, low),
                             torch.where(torch.isinf(high), big, high))


def _scipy_eval(params):
    loc, scale, low, high = params
    d = scipy.stats.truncnorm((low - loc) / scale, (high - loc) / scale, loc=loc, scale=scale)
    xs = _points(*params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mean, lps = float(d.mean()), [float(v) for v in d.logpdf(xs)]
    return mean, lps, xs, bool(np.isfinite(mean) and np.all(np.isfinite(lps)))


def evaluate() -> list[dict]:
    implementations = {"tnlib float64": lambda p: _torch_eval(_tnlib, p, torch.float64),
                       "tnlib float32": lambda p: _torch_eval(_tnlib, p, torch.float32),
                       "scipy float64": _scipy_eval}
    try:
        import stable_trunc_gaussian  # noqa: F401

        implementations["stable-trunc-gaussian float64"] = lambda p: _torch_eval(_stg, p, torch.float64)
        implementations["stable-trunc-gaussian float32"] = lambda p: _torch_eval(_stg, p, torch.float32)
    except ImportError:
        pass
    rows = []
    for regime, cases in REGIMES.items():
        for name, run in implementations.items():
            worst_mean, worst_lp, all_finite = 0.0, 0.0, True
            for params in cases:
                if "float32" in name:
                    params = tuple(float(np.float32(v)) for v in params)
                ref = reference(*params)
                try:
                    mean, lps, xs, finite = run(params)
                except Exception:  # an implementation that raises counts as non-finite
                    worst_mean, worst_lp, all_finite = math.inf, math.inf, False
                    continue
                all_finite &= finite
                err = abs(mean - ref["mean"]) / max(abs(ref["mean"]), ref["std"])
                worst_mean = max(worst_mean, err if math.isfinite(err) else math.inf)
                for x, lp in zip(xs, lps):
                    ref_lp = reference(*params, x)["log_prob"]
                    e = abs(lp - ref_lp) / max(1.0, abs(ref_lp))
                    worst_lp = max(worst_lp, e if math.isfinite(e) else math.inf)
            rows.append({"regime": regime, "implementation": name, "mean_error": worst_mean,
                         "log_prob_error": worst_lp, "all_finite": all_finite})
    return rows


def to_markdown(rows: list[dict]) -> str:
    lines = ["| regime | implementation | mean error (rel. to max(|mean|, std)) | log_prob error (abs., rel. above 1) |"
             " values & grads finite |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['regime']} | {r['implementation']} | {r['mean_error']:.1e} | {r['log_prob_error']:.1e} |"
                     f" {'yes' if r['all_finite'] else '**no**'} |")
    return "\n".join(lines)


# Variance and entropy, tnlib (float64) against scipy: the standard normal truncated to [a, b], from the bulk to
# intervals in the tail, where closed forms that subtract moments cancel.
SECOND_ORDER_CASES = [(-1.0, 2.0), (0.0, INF), (2.0, 4.0), (4.0, 6.0), (7.38, 10.31), (10.0, 12.0), (20.0, INF),
                      (1.0, 1.0 + 1e-6)]


def second_order_rows() -> list[dict]:
    """Relative error of the variance and the entropy (the entropy's error relative to max(1, |H|)) per case."""
    import mpmath as mp

    from tnlib.distributions import mpmath_reference

    rows = []
    for a, b in SECOND_ORDER_CASES:
        with mp.workdps(mpmath_reference.DIGITS):
            args = tuple(mpmath_reference.mpf_bound(v) for v in (0.0, 1.0, a, b))
            variance = float(mpmath_reference.reference_variance(*args))
            entropy = float(mpmath_reference.reference_entropy(*args))
        d = TruncatedNormal(*(torch.tensor(v, dtype=torch.float64) for v in (0.0, 1.0, a, b)))
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = scipy.stats.truncnorm(a, b)
            scipy_variance, scipy_entropy = float(theirs.var()), float(theirs.entropy())
        rows.append({"case": f"[{a:g}, {b:.8g}]", "variance": variance, "entropy": entropy,
                     "tnlib_variance": abs(d.variance.item() - variance) / variance,
                     "scipy_variance": abs(scipy_variance - variance) / variance,
                     "tnlib_entropy": abs(d.entropy().item() - entropy) / max(1.0, abs(entropy)),
                     "scipy_entropy": abs(scipy_entropy - entropy) / max(1.0, abs(entropy))})
    return rows


def second_order_markdown(rows: list[dict]) -> str:
    def show(e: float) -> str:
        return "nan" if math.isnan(e) else f"{e:.1e}"

    lines = ["| N(0, 1) on | variance | tnlib error | scipy error | entropy | tnlib error | scipy error |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['variance']:.4g} | {show(r['tnlib_variance'])} | "
                     f"{show(r['scipy_variance'])} | {r['entropy']:.4g} | {show(r['tnlib_entropy'])} | "
                     f"{show(r['scipy_entropy'])} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", help="write the table to this file")
    args = parser.parse_args()
    table = to_markdown(evaluate())
    table += ("\n\nVariance (relative error) and entropy (error relative to max(1, |H|)), float64, against "
              "mpmath:\n\n" + second_order_markdown(second_order_rows()))
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")


if __name__ == "__main__":
    main()
