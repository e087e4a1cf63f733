"""Where one call of the Truncated Normal's cdf, icdf, sample and log_prob goes, on the peer benchmark's inputs, ns
an element.

    OMP_NUM_THREADS=1 python benchmarks/bench_truncated_normal_call_parts.py [--points 100000] [--repeats 15]
        [--regimes moderate,narrow,"one-sided far"] [--methods cdf,icdf,sample,cdf+grad,log_prob+grad] [--clock cpu]

Per regime of benchmarks/bench_truncated_normal_peers.py (float32, each element its own distribution), the medians
of ``--repeats`` interleaved timings, one thread, of:

* ``call``: the public call, the distribution built inside it, as the peer benchmark times it;
* ``construct``: ``TruncatedNormal(...)`` alone (the argument checks; validate_args=False, as the peers run);
* ``views``: the four parameters and the value handed to numpy (``_flat``) and the output allocated and wrapped;
* ``kernel``: the compiled pass alone on the same float32 arrays (cdf: the float32 pass the call takes,
  tnlib.distributions._cdf_float32's loops for a chunk of one kind and the vectorized pass for the others; icdf:
  the float32 pass the call takes, _cdf_passes._icdf_single_block; sample: the serial blocks' passes);
* ``classify``: cdf: each chunk's kind looked at, alone (coarse_chunk_kind: one kind, or mixed); log_prob: below;
* ``loop``: icdf: the float32 pass's loop of the first chunk's commonest kind (tnlib.distributions._icdf_float32's
  straddling_icdf_rational, or its narrow_icdf_single by the short or the full series) over every
  element, alone, as the pass runs it over a chunk in place: ``kernel`` less ``loop`` is what the pass spends
  outside it (the elements the loop leaves, the chunks' bookkeeping); "-" where the pass runs no loop in place
  (chunks of mixed kinds);
* ``float64 floor``: a bare numba loop over the same arrays of the special functions the method cannot do without
  in float64 -- cdf: two erfc's (the vectorized ones, tnlib.distributions._vector_math) an element; icdf: one
  Phi^-1 (Acklam's approximation with its Halley step through erfc, as the float64 pass forms it); sample: what
  one Box and Muller pair costs (two uniforms, the vectorizable log, square root, cos and sin);
* ``widen``: a numba loop that reads the five float32 arrays as float64 and writes one float32 result: the memory
  and conversion floor.

``--methods cdf+grad`` times the cdf's call forward and backward (gradients to the value, loc and scale) alone.
``--methods log_prob+grad`` times log_prob as the peer benchmark does (forward and backward, gradients to loc and
scale; ``call``), its forward alone (``forward``), and as ``kernel`` the compiled pass with the derivatives on the
same float32 arrays; ``classify`` is its chunks' classification and gathering by kind
(tnlib.distributions._log_prob_kernels, _classify_log_prob and gather_by_kind).
``call`` less ``kernel`` is the wrapper (construction, checks, views, allocation, output); ``kernel`` less the floor
is what the pass spends beyond the special functions a float64 computation needs.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numba
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_truncated_normal_peers import regime_inputs  # noqa: E402

from tnlib import TruncatedNormal  # noqa: E402
from tnlib.distributions import (  # noqa: E402
    _cdf_dispatch,
    _cdf_passes,
    _log_prob_kernels,
    _sample_kernels,
    _sample_proposals,
    _vector_math,
)
from tnlib.distributions._cdf_float32 import coarse_chunk_kind  # noqa: E402
from tnlib.distributions._cdf_vector import gather_by_kind  # noqa: E402
from tnlib.distributions._icdf_float32 import (  # noqa: E402
    narrow_icdf_single,
    straddling_icdf_rational,
)
from tnlib.distributions._icdf_vector import (  # noqa: E402
    NARROW_ITERATED,
    STRADDLING,
    classify_icdf,
    ndtri_lower,
)
from tnlib.distributions._kernels import _CHUNK, _flat  # noqa: E402

_SQRT_HALF = math.sqrt(0.5)


@numba.njit(error_model="numpy")
def _widen(value, loc, scale, low, high, out):
    for i in range(out.shape[0]):
        out[i] = np.float32(np.float64(value[i]) + np.float64(loc[i]) * np.float64(scale[i])
                            + np.float64(low[i]) - np.float64(high[i]))


@numba.njit(error_model="numpy")
def _two_erfcs(value, loc, scale, low, high, out):
    for i in range(out.shape[0]):
        s = np.float64(scale[i])
        t = (np.float64(value[i]) - np.float64(loc[i])) / s
        a = (np.float64(low[i]) - np.float64(loc[i])) / s
        out[i] = np.float32(_vector_math.erfc(abs(t) * _SQRT_HALF) - _vector_math.erfc(abs(a) * _SQRT_HALF))


@numba.njit(error_model="numpy")
def _one_ndtri(prob, loc, scale, low, high, out):
    for i in range(out.shape[0]):
        p = np.float64(prob[i])
        out[i] = np.float32(np.float64(loc[i]) + np.float64(scale[i]) * ndtri_lower(min(p, 1.0 - p)))


@numba.njit(error_model="numpy")
def _normal_pairs(loc, scale, low, high, key, out):
    for i in range(out.shape[0]):
        counter = np.uint64(i) << np.uint64(24)
        u = _sample_proposals._uniform(key, counter)
        cos_v, sin_v = _vector_math.cos_sin_turns(_sample_proposals._uniform(key, counter + np.uint64(1)))
        out[i] = np.float32(np.float64(loc[i]) + np.float64(scale[i]) * (cos_v + sin_v)
                            * math.sqrt(-2.0 * _vector_math.log(1.0 - u)))


@numba.njit(error_model="numpy")
def _classify(classify, kind_count, value, loc, scale, low, high):
    """Each chunk's elements gathered by kind as the pass does it (classify_icdf or log_prob's _classify_log_prob,
    then gather_by_kind), alone; the chunks a single kind copied in order."""
    arrays = (value, loc, scale, low, high)
    columns = np.empty((6, _CHUNK))
    kinds = np.empty(_CHUNK, dtype=np.uint8)
    starts = np.empty(kind_count + 1, dtype=np.int64)
    ends = np.empty(kind_count, dtype=np.int64)
    order = np.empty(_CHUNK, dtype=np.uint16)
    in_order = 0
    n = value.shape[0]
    for first in range(0, n, _CHUNK):
        last = min(first + _CHUNK, n)
        classify(first, last, arrays, kinds, starts)
        in_order += gather_by_kind(first, last, arrays, kinds, starts, columns, order, ends)
    return in_order


# the float32 icdf's loops the ``loop`` column times, by the kind of chunk
_NO_LOOP, _STRADDLING_LOOP, _SHORT_NARROW_LOOP, _NARROW_LOOP = 0, 1, 2, 3


def _icdf_loop_kind(arrays: list[np.ndarray]) -> int:
    """The loop the float32 icdf pass runs in place over a batch whose first chunk is like ``arrays``' (its kinds'
    share, as _cdf_passes._IN_PLACE_SHARE decides)."""
    count = min(_CHUNK, arrays[0].shape[0])
    kinds = np.empty(_CHUNK, dtype=np.uint8)
    starts = np.empty(5, dtype=np.int64)
    long_narrow = classify_icdf(0, count, tuple(arrays), kinds, starts)
    if starts[STRADDLING + 1] - starts[STRADDLING] >= _cdf_passes._IN_PLACE_SHARE * count:
        return _STRADDLING_LOOP
    if starts[NARROW_ITERATED + 1] - starts[NARROW_ITERATED] >= _cdf_passes._IN_PLACE_SHARE * count:
        return _SHORT_NARROW_LOOP if long_narrow == 0 else _NARROW_LOOP
    return _NO_LOOP


@numba.njit(error_model="numpy")
def _icdf_loop(kind, prob, loc, scale, low, high, out):
    """One float32 icdf loop over every element into ``out`` (NaN where it does not hold), as the pass runs it."""
    if kind == _STRADDLING_LOOP:
        for i in range(out.shape[0]):
            x, held = straddling_icdf_rational(np.float64(prob[i]), np.float64(loc[i]), np.float64(scale[i]),
                                               np.float64(low[i]), np.float64(high[i]))
            out[i] = x if held else np.nan
    elif kind == _SHORT_NARROW_LOOP:
        for i in range(out.shape[0]):
            x, held = narrow_icdf_single(np.float64(prob[i]), np.float64(loc[i]), np.float64(scale[i]),
                                         np.float64(low[i]), np.float64(high[i]), True)
            out[i] = x if held else np.nan
    else:
        for i in range(out.shape[0]):
            x, held = narrow_icdf_single(np.float64(prob[i]), np.float64(loc[i]), np.float64(scale[i]),
                                         np.float64(low[i]), np.float64(high[i]), False)
            out[i] = x if held else np.nan


@numba.njit(error_model="numpy")
def _chunk_kinds(value, loc, scale, low, high):
    """Each chunk's kind as the float32 cdf looks at it first (coarse_chunk_kind), alone."""
    arrays = (value, loc, scale, low, high)
    kinds = 0
    n = value.shape[0]
    for first in range(0, n, _CHUNK):
        kinds += coarse_chunk_kind(first, min(first + _CHUNK, n), arrays)
    return kinds


def _parts(method: str, v: dict, t: dict) -> dict:
    """The timed parts of one method on one regime's inputs, each a function of no arguments."""
    n = v["loc"].shape[0]
    out = np.empty(n, dtype=np.float32)
    first = "p" if method == "icdf" else "x"
    arrays = [v[k] for k in (first, "loc", "scale", "low", "high")]
    tensors = [t[k] for k in (first, "loc", "scale", "low", "high")]
    key = np.uint64(12345)

    def make():
        return TruncatedNormal(t["loc"], t["scale"], t["low"], t["high"], validate_args=False)

    def views():
        flats = [_flat(x) for x in tensors]
        return torch.from_numpy(np.empty(flats[1].shape[0], dtype=np.float32))

    parts = {"construct": make, "views": views, "widen": lambda: _widen(*arrays, out)}
    if method == "cdf":
        parts |= {"call": lambda: make().cdf(t["x"]),
                  "kernel": lambda: _cdf_passes._cdf_float32_serial(*arrays, out, *_cdf_dispatch._CONSTANTS),
                  "classify": lambda: _chunk_kinds(*arrays),
                  "float64 floor": lambda: _two_erfcs(*arrays, out)}
    elif method == "icdf":
        parts |= {"call": lambda: make().icdf(t["p"]),
                  "kernel": lambda: _cdf_passes._icdf_vector_serial(*arrays, out, *_cdf_dispatch._CONSTANTS),
                  "float64 floor": lambda: _one_ndtri(*arrays, out)}
        kind = _icdf_loop_kind(arrays)
        if kind != _NO_LOOP:
            parts["loop"] = lambda: _icdf_loop(kind, *arrays, out)
    elif method == "log_prob+grad":  # forward and backward, gradients to loc and scale, as the peer benchmark's
        # the derivatives the call forms with loc and scale learned (_log_prob_kernels._derivatives_formed)
        slopes = tuple(np.empty(n, dtype=np.float32) if formed else None
                       for formed in _log_prob_kernels._derivatives_formed((False, True, True, False, False)))

        def log_prob(backward):
            loc, scale = t["loc"].clone().requires_grad_(), t["scale"].clone().requires_grad_()
            lp = TruncatedNormal(loc, scale, t["low"], t["high"], validate_args=False).log_prob(t["x"])
            if backward:
                lp.sum().backward()

        parts |= {"call": lambda: log_prob(True), "forward": lambda: log_prob(False),
                  "kernel": lambda: _log_prob_kernels._log_prob_serial(*arrays, out, slopes,
                                                                       *_log_prob_kernels._CONSTANTS),
                  "classify": lambda: _classify(_log_prob_kernels._classify_log_prob,
                                                _log_prob_kernels.LOG_PROB_KINDS, *arrays)}
    elif method == "cdf+grad":  # forward and backward, gradients to the value, loc and scale: the call alone
        def forward_backward():
            value, loc, scale = (t[k].clone().requires_grad_() for k in ("x", "loc", "scale"))
            TruncatedNormal(loc, scale, t["low"], t["high"], validate_args=False).cdf(value).sum().backward()

        return {"call": forward_backward}
    else:
        parts |= {"call": lambda: make().sample(),
                  "kernel": lambda: _sample_kernels._draws_serial(*arrays[1:], 1, key, out, _sample_kernels._BLOCK),
                  "float64 floor": lambda: _normal_pairs(*arrays[1:], key, out)}
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--regimes", default="moderate,one-sided far,narrow")
    parser.add_argument("--methods", default="cdf,icdf,sample")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="cpu")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(1)
    order = ("call", "forward", "construct", "views", "kernel", "loop", "classify", "float64 floor", "widen")
    print(f"{args.points:,} float32 elements, 1 thread, medians of {args.repeats} interleaved timings, "
          f"{args.clock} time, ns an element")
    print(f"{'regime':<15s}{'method':<14s}" + "".join(f"{name:>15s}" for name in order))
    rng = np.random.default_rng(0)
    for regime in ("moderate", "one-sided far", "narrow"):
        v = regime_inputs(regime, args.points, rng)  # (every regime drawn, so each one's inputs are the peers')
        if regime not in args.regimes.split(","):
            continue
        t = {k: torch.from_numpy(a) for k, a in v.items()}
        for method in args.methods.split(","):
            parts = _parts(method, v, t)
            times = {name: [] for name in parts}
            for _ in range(args.repeats + 1):  # (the first round warms up and compiles)
                for name, function in parts.items():
                    started = clock()
                    function()
                    times[name].append(clock() - started)
            medians = {name: float(np.median(times[name][1:])) / args.points * 1e9 for name in parts}
            print(f"{regime:<15s}{method:<14s}"
                  + "".join(f"{medians[name]:15.1f}" if name in medians else f"{'-':>15s}" for name in order),
                  flush=True)


if __name__ == "__main__":
    main()
