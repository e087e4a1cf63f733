"""The CPU route of the CDF and the inverse CDF of the Truncated Normal, forward and backward: which compiled kernel
a call takes, by its size, dtype and route (tnlib.distributions.cpu_route's), and the autograd Function over them.
The per-element kernel and its loops are tnlib.distributions._cdf_elements, the vectorized passes
tnlib.distributions._cdf_passes; this module holds only the choice between them and the thresholds it turns on.

A CPU call of ``cdf`` on a batch of _CDF_PASS_FROM elements or more runs first the vectorized pass of
tnlib.distributions._cdf_vector over every element (the same masses in closed form and, on a narrow stretch, by a
Hermite series: straight-line code, four elements at once under AVX2, eight under AVX-512; forward, one loop per
regime that forms the value alone), forward or backward, and then the per-element kernel on the elements that pass
does not hold for: a value outside the support, the far tails (a straddling element's value 36 scales or more from
loc, a frame element's density below exp(-700) of phi at its bound), a stretch too wide for the series with a
negative slope (next to a narrow interval) and a NaN: none of the common regimes, and forward 0.3% of the tests'
batch spread over every regime from 1e-6 to 1e3 scales wide and 40 scales either side. The gradients' pass runs on
one thread (the forward's splits among torch's threads). A smaller batch takes the per-element kernel alone, whose
compile is a small part of the pass's nine kinds of loops.

A float32 batch's cdf takes the float32 pass instead (tnlib.distributions._cdf_float32): a chunk whose elements all
straddle loc, or are all narrow intervals, by one loop over the arguments with special functions exact to about
1e-12 (no gathering, a few divisions an element), the other chunks by the pass above; the result is the float64
route's rounded to float32 but for an ulp on a few elements in 10^5 (that module says why).

A CPU call of ``icdf`` (and so of ``rsample``) on a batch of _ICDF_PASS_FROM elements or more likewise runs first
the vectorized pass of tnlib.distributions._icdf_vector, the per-element kernel's closed-form inversions (Phi^-1 of
a straddling element, erf^-1 near a frame element's mode, Phi^-1 of a frame tail's mass); forward, the elements
it leaves, narrow intervals (which skip the closed forms) and one-sided tails from about 37 scales out, take its
Halley steps (icdf_by_halley: vectorized, each kind gathered apart, two steps on a narrow interval and all four for
those two leave); the per-element kernel takes what is still left (a value whose offset from the bound would
cancel, a value that rounds to a bound, probabilities of 0 or 1 and NaNs: none of the common regimes) and,
backward, every element the closed forms leave, 39% of a batch spread over every regime from 1e-6 to 1e3 scales
wide and 40 scales either side. A smaller batch, forward and backward, takes the per-element kernel alone, so that
its first call does not wait for the pass's compile. A float32 batch's pass (_icdf_single_block) first takes the
float32 loops, which stop where the value's float32 rounding is certain (a straddling element: by erf's rational
fit, then by the erfc route, both tnlib.distributions._icdf_float32's; Phi^-1 unrefined) or where it is
within a sixty-fourth of a float32 ulp (a narrow interval: one Halley step), over a chunk's elements in place where
most are of one kind; what they do not hold takes the float64 loops above."""
from __future__ import annotations

import numba
import numpy as np
import torch

from tnlib.distributions._autograd import _first_order
from tnlib.distributions._cdf_elements import (
    _cdf_gradients_parallel,
    _cdf_gradients_serial,
    _cdf_parallel,
    _cdf_serial,
)
from tnlib.distributions._cdf_passes import (
    _cdf_float32_parallel,
    _cdf_float32_serial,
    _cdf_gradients_vector_serial,
    _cdf_vector_parallel,
    _cdf_vector_serial,
    _icdf_gradients_vector_serial,
    _icdf_vector_parallel,
    _icdf_vector_serial,
)
from tnlib.distributions._kernels import _CONSTANTS, _flat, _threads
from tnlib.distributions._moment_kernels import _PARALLEL_FROM

# elements from which the icdf and its gradients take the vectorized pass, the per-element kernel below: warm, the
# pass is faster at any size, but a process's first call compiles the route it takes, and from here the pass's saving
# repays its own compile within about 50 forward + backward calls (benchmarks/bench_truncated_normal_methods.py
# --icdf-passes and --first-calls measure both)
_ICDF_PASS_FROM = 32768
# the same for the cdf and its gradients, above the notebooks' batches (at most 20,001 elements, opened by a class on
# fresh installs): with numba's cache empty the pass's forward compiles for 1.3-3 minutes on the loaded 2-core
# machine (the per-element kernel's, 12 s), and warm it saves about 25 ms a call at 20,001 elements, so a batch
# below here would repay that compile only after thousands of calls (reports/speed.md section 9, "The float32 cdf
# in one loop a chunk; the cdf's threshold")
_CDF_PASS_FROM = 32768


def _per_element(inverse: bool, route: str, n: int) -> bool:
    """Whether a call of ``n`` elements on ``route`` (tnlib.distributions.cpu_route's) takes the per-element kernel
    alone rather than the vectorized pass."""
    return route == "per-element" or (route == "kernels" and n < (_ICDF_PASS_FROM if inverse else _CDF_PASS_FROM))


def _cdf_values(inverse: bool, route: str, value, loc, scale, low, high) -> torch.Tensor:
    arrays = [_flat(t) for t in (value, loc, scale, low, high)]
    out = np.empty(tuple(loc.shape), dtype=arrays[1].dtype)  # in its shape: cheaper than a torch reshape
    flat = out.reshape(-1)
    # (one torch thread: the serial kernels, with no look at numba's threads, which costs 2-4 us a call)
    parallel = flat.shape[0] >= _PARALLEL_FROM and torch.get_num_threads() > 1
    if parallel:
        _threads()
        parallel = numba.get_num_threads() > 1
    if _per_element(inverse, route, flat.shape[0]):
        (_cdf_parallel if parallel else _cdf_serial)(inverse, *arrays, flat, *_CONSTANTS)
    elif inverse:
        (_icdf_vector_parallel if parallel else _icdf_vector_serial)(*arrays, flat, *_CONSTANTS)
    elif flat.dtype == np.float32:
        (_cdf_float32_parallel if parallel else _cdf_float32_serial)(*arrays, flat, *_CONSTANTS)
    else:
        (_cdf_vector_parallel if parallel else _cdf_vector_serial)(*arrays, flat, *_CONSTANTS)
    return torch.from_numpy(out)


def _cdf_gradients(inverse: bool, route: str, grad: np.ndarray, arrays: list[np.ndarray], shape, needs) -> tuple:
    """grad times the cdf's (with ``inverse``, the icdf's) derivatives w.r.t. (value, loc, scale, low, high), in
    ``shape``, None where not ``needs``: the vectorized pass writes all five rows (a row skipped would cost it a
    branch per element); the per-element kernel, where ``route`` takes it, writes only what is needed."""
    if _per_element(inverse, route, grad.shape[0]):
        return _per_element_gradients(inverse, grad, arrays, shape, needs)
    slopes = np.empty((5, grad.shape[0]), dtype=arrays[1].dtype)
    # one thread: numba's prange over blocks of the cdf's pass measured 2.5-3.5x slower per element than the serial
    # loop (on one thread and on two), where the forward's is level with it
    (_icdf_gradients_vector_serial if inverse else _cdf_gradients_vector_serial)(grad, *arrays, slopes, *_CONSTANTS)
    return tuple(torch.from_numpy(row).reshape(shape) if need else None for row, need in zip(slopes, needs))


def _per_element_gradients(inverse: bool, grad: np.ndarray, arrays: list[np.ndarray], shape, needs) -> tuple:
    outs = [np.empty(shape if need else 0, dtype=arrays[1].dtype) for need in needs]
    flats = tuple(o.reshape(-1) for o in outs)
    if grad.shape[0] >= _PARALLEL_FROM:
        _threads()
        _cdf_gradients_parallel(inverse, grad, *arrays, flats, *_CONSTANTS)
    else:
        _cdf_gradients_serial(inverse, grad, *arrays, flats, *_CONSTANTS)
    return tuple(torch.from_numpy(o) if need else None for o, need in zip(outs, needs))


def cdf(value: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor, low: torch.Tensor, high: torch.Tensor,
        inverse: bool = False, route: str = "kernels") -> torch.Tensor:
    """The CDF at ``value`` (with ``inverse``, the icdf of ``value``) of TN(loc, scale, low, high), all five CPU
    tensors of one shape and dtype; through :class:`KernelCDF` where a gradient may be asked for, else straight
    from the kernel. On the "kernels" ``route`` (tnlib.distributions.cpu_route's) the CDF and its gradients take the
    vectorized pass from _CDF_PASS_FROM elements on, and the per-element kernel only on the elements that pass leaves
    to it (the far tails, values outside the support: the module's docstring says which), a float32 CDF the float32
    pass (_cdf_float32_block); so do the icdf and its gradients, with their own pass, from _ICDF_PASS_FROM elements
    on; a smaller batch takes the per-element kernel. The "per-element" route takes the per-element kernel alone,
    the "vectorized" one the passes at every size."""
    tensors = (value, loc, scale, low, high)
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return KernelCDF.apply(*tensors, inverse, route)
    return _cdf_values(inverse, route, *tensors)


class KernelCDF(torch.autograd.Function):
    """cdf(value), or with ``inverse`` icdf(value), of TN(loc, scale, low, high), all five of one shape, forward
    and backward by the kernels on ``route`` (tnlib.distributions.cpu_route's)."""

    @staticmethod
    def forward(ctx, value, loc, scale, low, high, inverse=False, route="kernels"):
        ctx.inverse = inverse
        ctx.route = route
        ctx.save_for_backward(value, loc, scale, low, high)
        return _cdf_values(inverse, route, value, loc, scale, low, high)

    @staticmethod
    @_first_order
    def backward(ctx, grad):
        arrays = [_flat(t) for t in ctx.saved_tensors]
        needs = ctx.needs_input_grad[:5]
        return _cdf_gradients(ctx.inverse, ctx.route, _flat(grad), arrays, tuple(grad.shape), needs) + (None, None)
