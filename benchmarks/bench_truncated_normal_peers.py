"""tnlib's TruncatedNormal beside the truncated Gaussians a user would choose from: speed and accuracy in one run.

    OMP_NUM_THREADS=1 python benchmarks/bench_truncated_normal_peers.py [--points 100000] [--repeats 5]
        [--peers numpyro,...] [--methods cdf,...]
    OMP_NUM_THREADS=1 python benchmarks/bench_truncated_normal_peers.py --call-parts --repeats 15 --clock cpu

``--call-parts`` times instead tnlib's cdf and icdf calls against their compiled passes alone on the same inputs
(where a call's time goes). Its table (``--markdown``), with the commands that installed the peers, is in
reports/truncated_normal_peers.md; an earlier one, before the cdf's and icdf's vectorized passes, in
reports/speed.md (section 9, beside the peers).

Peers, each where it is installed (this script installs nothing; it says which are missing): numpyro's and
TensorFlow Probability's (on JAX) ``TruncatedNormal``, both jit-compiled, torchrl's (its per-element distribution,
``torchrl.modules.distributions.truncated_normal.TruncatedNormal``: ``torchrl.modules.TruncatedNormal`` wraps it in
``Independent``), stable-trunc-gaussian's ``TruncatedGaussian`` (an infinite bound given as 1e5, as its authors do)
and scipy's ``truncnorm`` (float64, forward only).

Per regime, ``--points`` float32 elements, each its own distribution (parameters drawn per element, seed 0):
moderate (bounds within 2.5 scales of loc), one-sided far (no upper bound, the lower 10 to 100 scales above loc) and
narrow (width 1e-3 scales, within a scale of loc). Methods: ``log_prob`` forward and backward (gradients w.r.t. loc
and scale; jax.grad for the JAX peers), ``cdf``, ``icdf`` (TFP's ``quantile``), ``sample`` and ``mean``, each call
building the distribution from the parameter arrays; one thread (torch, numba, XLA), best of ``--repeats``
interleaved calls. Speed is tnlib's time over the peer's (above 1: tnlib slower).

Accuracy against mpmath (tnlib.distributions.mpmath_reference, 80 digits at the float32 inputs) on the first
``--checked`` elements: log_prob (absolute, relative above 1), cdf (absolute), icdf and mean (relative to
max(|value|, the truncated standard deviation)); non-finite values are counted on all elements; samples are mapped through each
element's exact cdf (tnlib's float64 cdf, which the tests hold to mpmath) and Kolmogorov-Smirnov tested for
uniformity, with the share of draws that sit on a bound. A peer fails a method in a regime where its worst error is
above 1e-3, any value is not finite, or its samples' KS p-value is below 1e-3.
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import os
import time
import warnings

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import scipy.stats  # noqa: E402
import torch  # noqa: E402

from tnlib import TruncatedNormal  # noqa: E402
from tnlib.distributions import mpmath_reference  # noqa: E402

METHODS = ("log_prob+grad", "cdf", "icdf", "sample", "mean")
PEERS = {"numpyro": "numpyro", "TFP (JAX)": "tensorflow_probability", "torchrl": "torchrl",
         "stable-trunc-gaussian": "stable_trunc_gaussian", "scipy": "scipy"}
FAILS_ABOVE = 1e-3


def regime_inputs(name: str, n: int, rng) -> dict[str, np.ndarray]:
    """float32 parameters, points inside the support and probabilities for ``n`` elements of a regime."""
    loc = rng.uniform(-1.0, 1.0, n)
    scale = rng.uniform(0.5, 2.0, n)
    u = rng.uniform(0.05, 0.95, n)
    if name == "moderate":
        low, high = loc + scale * rng.uniform(-2.5, 0.0, n), loc + scale * rng.uniform(0.5, 2.5, n)
        x = low + u * (high - low)
    elif name == "one-sided far":
        a = rng.uniform(10.0, 100.0, n)
        low, high = loc + scale * a, np.full(n, np.inf)
        x = low + scale * 3.0 * u / a  # the mass lies within a few 1/a scales of the bound
    else:
        low = loc + scale * rng.uniform(-1.0, 1.0, n)
        high = low + scale * 1e-3
        x = low + u * (high - low)
    values = dict(loc=loc, scale=scale, low=low, high=high, x=x, p=rng.uniform(0.01, 0.99, n))
    values = {k: v.astype(np.float32) for k, v in values.items()}
    # keep x inside [low, high] after rounding
    values["x"] = np.clip(values["x"], values["low"], values["high"])
    return values


# ---- implementations: each maps a method to a function of the float32 inputs that returns numpy values ----------

def tnlib_methods(v: dict) -> dict:
    t = {k: torch.from_numpy(a) for k, a in v.items()}

    def log_prob():
        loc, scale = t["loc"].clone().requires_grad_(), t["scale"].clone().requires_grad_()
        lp = TruncatedNormal(loc, scale, t["low"], t["high"], validate_args=False).log_prob(t["x"])
        lp.sum().backward()
        return lp.detach().numpy()

    def make():
        return TruncatedNormal(t["loc"], t["scale"], t["low"], t["high"], validate_args=False)

    return {"log_prob+grad": log_prob, "cdf": lambda: make().cdf(t["x"]).numpy(),
            "icdf": lambda: make().icdf(t["p"]).numpy(), "sample": lambda: make().sample().numpy(),
            "mean": lambda: make().mean.numpy()}


def _implements(make, method: str) -> bool:
    """Whether a torch distribution implements ``method`` (torch's base class raises NotImplementedError)."""
    d = make(torch.zeros(1), torch.ones(1), -torch.ones(1), torch.ones(1))
    try:
        getattr(d, method)(torch.full((1,), 0.5))
    except NotImplementedError:
        return False
    return True


def torch_peer_methods(v: dict, make) -> dict:
    """A torch distribution's methods (torchrl, stable-trunc-gaussian); ``make(loc, scale, low, high)``."""
    t = {k: torch.from_numpy(a) for k, a in v.items()}

    def log_prob():
        loc, scale = t["loc"].clone().requires_grad_(), t["scale"].clone().requires_grad_()
        lp = make(loc, scale, t["low"], t["high"]).log_prob(t["x"])
        lp.sum().backward()
        return lp.detach().numpy()

    def build():
        return make(t["loc"], t["scale"], t["low"], t["high"])

    methods = {"log_prob+grad": log_prob, "sample": lambda: build().sample().numpy(),
               "mean": lambda: build().mean.detach().numpy()}
    if _implements(make, "cdf"):
        methods["cdf"] = lambda: build().cdf(t["x"]).detach().numpy()
    if _implements(make, "icdf"):
        methods["icdf"] = lambda: build().icdf(t["p"]).detach().numpy()
    return methods


def torchrl_make(loc, scale, low, high):
    from torchrl.modules.distributions.truncated_normal import TruncatedNormal as TorchRLTruncatedNormal

    return TorchRLTruncatedNormal(loc, scale, low, high)


def stable_make(loc, scale, low, high):
    from stable_trunc_gaussian import TruncatedGaussian

    big = torch.full_like(low, 1e5)
    return TruncatedGaussian(loc, scale, torch.where(torch.isinf(low), -big, low),
                             torch.where(torch.isinf(high), big, high))


def jax_methods(v: dict, make) -> dict:
    """A JAX distribution's methods, each jit-compiled with the distribution built inside."""
    import jax
    import jax.numpy as jnp

    a = {k: jnp.asarray(x) for k, x in v.items()}
    key = jax.random.PRNGKey(0)

    def nll(loc, scale, low, high, x):
        return -make(loc, scale, low, high).log_prob(x).sum()

    grad = jax.jit(jax.value_and_grad(nll, argnums=(0, 1)))
    log_prob = jax.jit(lambda loc, scale, low, high, x: make(loc, scale, low, high).log_prob(x))
    cdf = jax.jit(lambda loc, scale, low, high, x: make(loc, scale, low, high).cdf(x))
    icdf = jax.jit(lambda loc, scale, low, high, p: _quantile(make(loc, scale, low, high), p))
    sample = jax.jit(lambda loc, scale, low, high, k: _draw(make(loc, scale, low, high), k))
    mean = jax.jit(lambda loc, scale, low, high: _mean(make(loc, scale, low, high)))
    params = (a["loc"], a["scale"], a["low"], a["high"])

    def with_grad():
        _, grads = grad(*params, a["x"])
        jax.block_until_ready(grads)
        return np.asarray(log_prob(*params, a["x"]))  # (values for the accuracy check; the timed call is above)

    def timed_grad():
        jax.block_until_ready(grad(*params, a["x"]))

    methods = {"log_prob+grad": with_grad, "cdf": lambda: np.asarray(cdf(*params, a["x"])),
               "icdf": lambda: np.asarray(icdf(*params, a["p"])), "sample": lambda: np.asarray(sample(*params, key)),
               "mean": lambda: np.asarray(mean(*params))}
    methods["timed log_prob+grad"] = timed_grad
    return methods


def _quantile(d, p):
    return d.quantile(p) if hasattr(d, "quantile") else d.icdf(p)


def _mean(d):
    return d.mean() if callable(d.mean) else d.mean  # (a method in TFP, a property in numpyro)


def _draw(d, key):
    try:
        return d.sample(seed=key)  # TFP
    except TypeError:
        return d.sample(key)  # numpyro


def numpyro_make(loc, scale, low, high):
    import numpyro.distributions as dist

    return dist.TruncatedNormal(loc, scale, low=low, high=high)


def tfp_make(loc, scale, low, high):
    from tensorflow_probability.substrates import jax as tfp

    return tfp.distributions.TruncatedNormal(loc, scale, low, high)


def scipy_methods(v: dict) -> dict:
    w = {k: x.astype(np.float64) for k, x in v.items()}
    rng = np.random.default_rng(1)

    def frozen():
        return scipy.stats.truncnorm((w["low"] - w["loc"]) / w["scale"], (w["high"] - w["loc"]) / w["scale"],
                                     loc=w["loc"], scale=w["scale"])

    return {"log_prob+grad": lambda: frozen().logpdf(w["x"]), "cdf": lambda: frozen().cdf(w["x"]),
            "icdf": lambda: frozen().ppf(w["p"]), "sample": lambda: frozen().rvs(random_state=rng)}


def implementations(v: dict, available: set) -> dict[str, dict]:
    out = {"tnlib": tnlib_methods(v)}
    if "numpyro" in available:
        out["numpyro"] = jax_methods(v, numpyro_make)
    if "TFP (JAX)" in available:
        out["TFP (JAX)"] = jax_methods(v, tfp_make)
    if "torchrl" in available:
        out["torchrl"] = torch_peer_methods(v, torchrl_make)
    if "stable-trunc-gaussian" in available:
        out["stable-trunc-gaussian"] = torch_peer_methods(v, stable_make)
    if "scipy" in available:
        out["scipy"] = scipy_methods(v)
    return out


def usable(available: set) -> tuple[set, list[str]]:
    """The installed peers that build a distribution, and why the others do not (an installed TFP may not import
    with the installed JAX)."""
    makes = {"numpyro": numpyro_make, "TFP (JAX)": tfp_make, "torchrl": torchrl_make,
             "stable-trunc-gaussian": stable_make}
    failed = []
    for name, make in makes.items():
        if name not in available:
            continue
        array = np.ones if name in ("numpyro", "TFP (JAX)") else torch.ones
        try:
            make(array(1), array(1), 0 * array(1), 2 * array(1))
        except Exception as error:  # noqa: BLE001 -- any failure to build marks the peer unusable
            available = available - {name}
            failed.append(f"{name} ({type(error).__name__}: {str(error)[:80]})")
    return available, failed


# ---- accuracy ----------------------------------------------------------------------------------------------------

def references(v: dict, checked: int) -> list[dict]:
    rows = []
    for i in range(checked):
        loc, scale, low, high = (float(v[k][i]) for k in ("loc", "scale", "low", "high"))
        x, p = float(v["x"][i]), float(v["p"][i])
        with mpmath_reference.mp.workdps(mpmath_reference.DIGITS):
            ref = mpmath_reference.reference(loc, scale, low, high, x)
            mu, s = mpmath_reference.mp.mpf(loc), mpmath_reference.mp.mpf(scale)
            lo, hi = mpmath_reference.mpf_bound(low), mpmath_reference.mpf_bound(high)
            cdf = float(mpmath_reference.reference_cdf(mu, s, lo, hi, mpmath_reference.mp.mpf(x)))
            icdf = float(mpmath_reference.reference_icdf(mu, s, lo, hi, mpmath_reference.mp.mpf(p)))
        rows.append(dict(log_prob=ref["log_prob"], mean=ref["mean"], std=math.sqrt(ref["variance"]), cdf=cdf,
                         icdf=icdf))
    return rows


def worst_error(method: str, values: np.ndarray, refs: list[dict]) -> float:
    errors = []
    for value, ref in zip(values[: len(refs)].astype(np.float64), refs):
        if method == "log_prob+grad":
            error = abs(value - ref["log_prob"]) / max(1.0, abs(ref["log_prob"]))
        elif method == "cdf":
            error = abs(value - ref["cdf"])
        else:
            target = ref["icdf"] if method == "icdf" else ref["mean"]
            error = abs(value - target) / max(abs(target), ref["std"])
        errors.append(error if math.isfinite(error) else math.inf)
    return max(errors)


def sample_check(values: np.ndarray, v: dict) -> tuple[float, float]:
    """(KS p-value of the draws mapped through each element's exact cdf, share of draws on a bound)."""
    p = {k: torch.from_numpy(v[k].astype(np.float64)) for k in ("loc", "scale", "low", "high")}
    x = torch.from_numpy(values.astype(np.float64))
    finite = torch.isfinite(x)
    if not bool(finite.all()):
        return 0.0, math.nan
    u = TruncatedNormal(p["loc"], p["scale"], p["low"], p["high"], validate_args=False).cdf(x).numpy()
    on_bound = float(((x == p["low"]) | (x == p["high"])).double().mean())
    return float(scipy.stats.kstest(u, "uniform").pvalue), on_bound


def accuracy(name: str, method: str, values: np.ndarray, v: dict, refs: list[dict]) -> dict:
    values = np.asarray(values)
    nonfinite = int((~np.isfinite(values)).sum())
    if method == "sample":
        pvalue, on_bound = sample_check(values, v)
        fails = nonfinite > 0 or pvalue < 1e-3
        return dict(text=f"KS p {pvalue:.1e}, on a bound {on_bound:.0%}" + (f", {nonfinite} not finite"
                                                                            if nonfinite else ""), fails=fails)
    error = worst_error(method, values, refs)
    fails = nonfinite > 0 or error > FAILS_ABOVE
    return dict(text=f"error {error:.1e}" + (f", {nonfinite} not finite" if nonfinite else ""), fails=fails)


# ---- timing ------------------------------------------------------------------------------------------------------

def best_times(functions: dict, repeats: int, clock=time.perf_counter) -> dict[str, float]:
    best = {name: math.inf for name in functions}
    for _ in range(repeats):
        for name, function in functions.items():
            started = clock()
            function()
            best[name] = min(best[name], clock() - started)
    return best


def call_parts(points: int, repeats: int, clock) -> None:
    """tnlib's cdf and icdf on each regime's inputs: the public call (the distribution built inside it) against
    its compiled pass alone on the same arrays, the medians of ``repeats`` interleaved calls, ms and ns an element."""
    from tnlib.distributions import _cdf_dispatch, _cdf_passes

    rng = np.random.default_rng(0)
    print(f"{'regime':<15s}{'method':<8s}{'call ms':>9s}{'kernel ms':>11s}{'call ns/el':>12s}{'kernel ns/el':>14s}")
    for regime in ("moderate", "one-sided far", "narrow"):
        v = regime_inputs(regime, points, rng)
        t = {k: torch.from_numpy(a) for k, a in v.items()}
        out = np.empty(points, dtype=np.float32)

        def make():
            return TruncatedNormal(t["loc"], t["scale"], t["low"], t["high"], validate_args=False)

        for method, kernel, first in (("cdf", _cdf_passes._cdf_vector_serial, "x"),
                                      ("icdf", _cdf_passes._icdf_vector_serial, "p")):
            arrays = [v[k] for k in (first, "loc", "scale", "low", "high")]
            calls = {"call": (lambda: make().icdf(t["p"])) if method == "icdf" else (lambda: make().cdf(t["x"])),
                     "kernel": lambda: kernel(*arrays, out, *_cdf_dispatch._CONSTANTS)}
            times = {name: [] for name in calls}
            for _ in range(repeats + 1):  # (the first round warms up)
                for name, function in calls.items():
                    started = clock()
                    function()
                    times[name].append(clock() - started)
            call, alone = (float(np.median(times[name][1:])) for name in calls)
            print(f"{regime:<15s}{method:<8s}{call * 1e3:9.2f}{alone * 1e3:11.2f}{call / points * 1e9:12.1f}"
                  f"{alone / points * 1e9:14.1f}", flush=True)


def versions(available: set) -> str:
    from importlib.metadata import version

    names = {"numpyro": "numpyro", "TFP (JAX)": "tensorflow-probability", "torchrl": "torchrl",
             "stable-trunc-gaussian": "stable-trunc-gaussian", "scipy": "scipy"}
    parts = [f"torch {torch.__version__}"]
    if available & {"numpyro", "TFP (JAX)"}:
        parts.append(f"jax {version('jax')}")
    parts += [f"{name} {version(names[name])}" for name in PEERS if name in available]
    return ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--checked", type=int, default=30, help="elements checked against mpmath per regime")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: the process's CPU time, which a machine shared with other jobs inflates less")
    parser.add_argument("--peers", default=",".join(PEERS), help="comma-separated names of the peers to run")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated methods to time (default: all of " + ", ".join(METHODS) + ")")
    parser.add_argument("--markdown", action="store_true",
                        help="after the rows, the table of reports/truncated_normal_peers.md: per peer and method, "
                             "tnlib's time over the peer's in each regime, and how the peer fails where it does")
    parser.add_argument("--call-parts", action="store_true",
                        help="instead: tnlib's cdf and icdf calls against their compiled passes alone, medians")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(1)
    if args.call_parts:
        call_parts(args.points, args.repeats, clock)
        return
    warnings.simplefilter("ignore")
    wanted = set(args.peers.split(","))
    available = {name for name, module in PEERS.items()
                 if name in wanted and importlib.util.find_spec(module) is not None}
    missing = [name for name in PEERS if name in wanted and name not in available]
    print(versions(available) + f"; {args.points:,} float32 elements, 1 thread, best of {args.repeats} interleaved, "
          f"{args.clock} time")
    if missing:
        print("not installed (not timed): " + ", ".join(missing))
    available, failed = usable(available)
    if failed:
        print("installed but not usable (not timed): " + "; ".join(failed))
    rng = np.random.default_rng(0)
    cells: dict[tuple[str, str], dict[str, str]] = {}  # (peer, method) -> regime -> the table's cell
    print(f"{'regime':<15s}{'method':<15s}{'implementation':<23s}{'ms':>10s}{'tnlib/peer':>12s}  accuracy")
    for regime in ("moderate", "one-sided far", "narrow"):
        v = regime_inputs(regime, args.points, rng)
        refs = references(v, args.checked)
        impls = implementations(v, available)
        for method in (m for m in METHODS if m in args.methods.split(",")):
            timed = {name: methods.get(f"timed {method}", methods[method])
                     for name, methods in impls.items() if method in methods}
            results = {name: impls[name][method]() for name in timed}  # (also the warm-up: JAX compiles here)
            times = best_times(timed, args.repeats, clock)
            for name in timed:
                check = accuracy(name, method, results[name], v, refs)
                ratio = times["tnlib"] / times[name]
                flag = "  FAILS" if check["fails"] else ""
                print(f"{regime:<15s}{method:<15s}{name:<23s}{times[name] * 1e3:10.2f}{ratio:12.2f}  "
                      f"{check['text']}{flag}", flush=True)
                cells.setdefault((name, method), {})[regime] = (
                    f"{ratio:.2f}" + (f" (fails: {check['text']})" if check["fails"] else "")
                    if name != "tnlib" else check["text"] + (" FAILS" if check["fails"] else ""))
    if args.markdown:
        print(markdown_table(cells))


def markdown_table(cells: dict[tuple[str, str], dict[str, str]]) -> str:
    """Rows of peer and method (tnlib's own accuracy first), a column per regime."""
    regimes = ("moderate", "one-sided far", "narrow")
    lines = ["| peer | method | " + " | ".join(regimes) + " |", "|---|---|" + "---|" * len(regimes)]
    order = sorted(cells, key=lambda key: (key[0] != "tnlib", list(PEERS).index(key[0]) if key[0] in PEERS else -1,
                                           METHODS.index(key[1])))
    for name, method in order:
        row = cells[name, method]
        label = "tnlib (accuracy)" if name == "tnlib" else name
        lines.append(f"| {label} | {method} | " + " | ".join(row.get(r, "-") for r in regimes) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
