"""Compiled per-element kernels (numba) for ``TruncatedNormal.sample`` on the CPU: exact draws by rejection.

The proposals are those of the torch route (tnlib.distributions._sampling): the Normal (folded where the interval
lies at or above loc), the exponential with the log-density's slope at the bound, or the uniform on the interval,
whichever accepts the most candidates. The torch route draws every element's candidate in a full-size pass, then
again for the rejected ones; here each draw loops on its own element's proposal until a candidate is accepted, so no
pass draws for elements already done and no mask is formed (a batch drawn once per element, on one thread, takes
every first candidate in one pass and loops only for the rejected ones, from their second candidate: the same
values).

The choice compares the rates divided by the element's mass (M0 in the frame, Z straddling), which all three share:
it needs no special function, and the torch route's fallback to inversion for a best rate below
``_sampling._MIN_ACCEPTANCE`` (0.05) is never needed, as the best rate is at least 0.05 everywhere: straddling (and
not narrow) the interval is wider than 1 and the Normal keeps Z >= 0.19; on a narrow interval the density varies by
at most e^1.5 and the uniform keeps more than 0.22; in the frame with a >= 0.25 the exponential keeps at least its
rate with no upper bound, a m(a) >= a^2 / (1 + a^2) > 0.058; with 0 <= a < 0.25 (not narrow: w > 1) the folded
Normal keeps 2 (Phi(a + w) - Phi(a)) > 0.59.

Random numbers: one 64-bit key is drawn from torch's generator per call, so ``torch.manual_seed`` fixes the draws.
The kernels' uniforms are SplitMix64's outputs (its Weyl sequence, counter * golden gamma + key, through its
finaliser; the top 53 bits as a float64 in [0, 1)) at counter = draw * 2^24 + the draw's n-th uniform: every
uniform of a call comes from a distinct counter, i.e. from one stream of period 2^64, and a draw's value depends only
on the key, its index in the output and its element, not on how the threads split the draws. A draw would need 2^24
uniforms to reach the next draw's counters: at an acceptance rate of 0.05 or more (two uniforms a candidate, 2.55 a
Normal pair) the chance is below 0.95^(2^22). Normal candidates come from Marsaglia's polar method, both of each
accepted point's pair in turn. Float32 parameters are widened and each draw rounded once.
"""
from __future__ import annotations

import math

import numba
import numpy as np
import torch

from tnlib.distributions._kernels import _flat, _threads
from tnlib.distributions._moment_kernels import _PARALLEL_FROM, _is_narrow
from tnlib.distributions._sampling import _EXPONENTIAL, _NORMAL, _SQRT_2PI, _UNIFORM
from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX_1, _MIX_2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_SHIFT_30, _SHIFT_27, _SHIFT_31, _SHIFT_11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_UNIFORMS_PER_DRAW_BITS = np.uint64(24)
_TO_UNIT = 2.0 ** -53
_TASK_DRAWS = 4096
# from a = 0.8 the exponential's rate, at least a M0 (and at least the uniform's, M0 / w, as a w >= 1 - exp(-a w)),
# beats the folded Normal's, 2 phi(a) M0 <= 0.58 M0
_EXPONENTIAL_FROM = 0.8


@numba.njit(cache=True, error_model="numpy")
def _uniform(key, counter):
    """SplitMix64's output at ``counter`` of the stream ``key`` as a float64 in [0, 1)."""
    z = counter * _GAMMA + key
    z = (z ^ (z >> _SHIFT_30)) * _MIX_1
    z = (z ^ (z >> _SHIFT_27)) * _MIX_2
    z = z ^ (z >> _SHIFT_31)
    return np.float64(np.int64(z >> _SHIFT_11)) * _TO_UNIT  # (a signed conversion is one instruction)


@numba.njit(cache=True, error_model="numpy")
def _canonical(loc, scale, low, high):
    """(flip, c_loc, c_low, c_high, a, b, w) of one element, as tnlib.distributions._regimes._core forms them."""
    flip = high <= loc
    if flip:
        c_loc, c_low, c_high = -loc, -high, -low
    else:
        c_loc, c_low, c_high = loc, low, high
    return flip, c_loc, c_low, c_high, (c_low - c_loc) / scale, (c_high - c_loc) / scale, (high - low) / scale


@numba.njit(cache=True, error_model="numpy")
def _defines_a_law(loc, scale, low, high):
    """Whether a rejection loop ends for (loc, scale, low, high): a finite loc, a positive finite scale and low <= high
    (low == high draws the point). For any other element -- a NaN bound accepts no candidate -- the draws are NaN."""
    return math.isfinite(loc) and 0.0 < scale < math.inf and low <= high


@numba.njit(cache=True, error_model="numpy")
def _kind_element(a, w):
    """The proposal with the highest acceptance rate (the first of equal ones) of the canonical element (a, w):
    _sampling._acceptance_rates divided by the mass they share."""
    if a >= _EXPONENTIAL_FROM:
        return _EXPONENTIAL
    if a >= 0 or _is_narrow(a, w):  # the frame: each rate is M0 times
        phi = math.exp(-0.5 * a * a) / _SQRT_2PI
        normal = 2.0 * phi if a >= 0 else phi
        exponential = a / -math.expm1(-a * w) if a > 0 else 0.0
        d_peak = min(max(-a, 0.0), w)
        uniform = 0.0 if math.isinf(w) else math.exp(d_peak * (a + 0.5 * d_peak)) / w
    else:  # straddling: each rate is Z times
        normal, exponential = 1.0, 0.0
        uniform = _SQRT_2PI / w
    kind, best = _NORMAL, normal
    if exponential > best:
        kind, best = _EXPONENTIAL, exponential
    if uniform > best:
        kind = _UNIFORM
    return kind


@numba.njit(cache=True, error_model="numpy")
def _normal_draw(a, b, key, counter):
    """t ~ N(0, 1) kept where a <= t <= b, folded (|t|) where the interval lies at or above loc (a >= 0): twice the
    density there."""
    fold = a >= 0
    one = np.uint64(1)
    while True:
        p = 2.0 * _uniform(key, counter) - 1.0
        q = 2.0 * _uniform(key, counter + one) - 1.0
        counter += np.uint64(2)
        r = p * p + q * q
        if r >= 1.0 or r == 0.0:
            continue
        f = math.sqrt(-2.0 * math.log(r) / r)
        t = abs(p * f) if fold else p * f
        if a <= t <= b:
            return t
        t = abs(q * f) if fold else q * f
        if a <= t <= b:
            return t


@numba.njit(cache=True, error_model="numpy")
def _exponential_draw(a, w, tail, key, counter):
    """d ~ Exp(a) truncated to [0, w] (``tail`` = expm1(-a w)), kept with probability exp(-d^2/2)."""
    one = np.uint64(1)
    while True:
        u = _uniform(key, counter)
        v = _uniform(key, counter + one)
        counter += np.uint64(2)
        d = min(-math.log1p(u * tail) / a, w)
        # exp(-x) >= 1 - x accepts most candidates of a far tail (d ~ 1/a) without the exponential
        if v <= 1.0 - 0.5 * d * d or v <= math.exp(-0.5 * d * d):
            return d


@numba.njit(cache=True, error_model="numpy")
def _uniform_draw(a, w, frame, d_peak, key, counter):
    """d uniform over [0, w] from the lower end, kept by the density relative to its peak at ``d_peak``, written as a
    product of the distance to the peak so that nothing near-equal is subtracted."""
    one = np.uint64(1)
    while True:
        d = _uniform(key, counter) * w
        v = _uniform(key, counter + one)
        counter += np.uint64(2)
        log_ratio = -(d - d_peak) * (a + 0.5 * (d + d_peak)) if frame else -0.5 * (a + d) * (a + d)
        if v <= 1.0 + log_ratio or v <= math.exp(log_ratio):  # (exp(x) >= 1 + x: most of a narrow interval's)
            return d


@numba.njit(cache=True, error_model="numpy")
def _draw_element(loc, scale, low, high, key, draw, skipped):
    """One exact draw of TN(loc, scale, low, high), from the uniforms of the call's draw ``draw`` after its first
    ``skipped`` (those of candidates already rejected): a batch drawn once per element takes this, with nothing
    formed that a single draw does not use."""
    if not _defines_a_law(loc, scale, low, high):
        return math.nan
    counter = (np.uint64(draw) << _UNIFORMS_PER_DRAW_BITS) + np.uint64(skipped)
    flip, c_loc, c_low, c_high, a, b, w = _canonical(loc, scale, low, high)
    kind = _kind_element(a, w)
    if kind == _NORMAL:
        x = c_loc + scale * _normal_draw(a, b, key, counter)
    elif kind == _EXPONENTIAL:
        x = c_low + scale * _exponential_draw(a, w, math.expm1(-a * w), key, counter)
    else:
        frame = a >= 0 or _is_narrow(a, w)
        d_peak = min(max(-a, 0.0), w) if frame else -a  # straddling: the peak is at t = 0
        x = c_low + scale * _uniform_draw(a, w, frame, d_peak, key, counter)
    x = min(max(x, c_low), c_high)
    return -x if flip else x


@numba.njit(cache=True, error_model="numpy")
def _draw_range(i, start, stop, loc, scale, low, high, key, out):
    """Draws ``start`` to ``stop`` of element ``i`` into ``out`` (ordered draw-major: the j-th draw of element i is
    the call's draw j n + i, whose uniforms it takes), the element's state and proposal formed once: the values of
    :func:`_draw_element`, for a distribution drawn many times."""
    n = loc.shape[0]
    if not _defines_a_law(np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]), np.float64(high[i])):
        for j in range(start, stop):
            out[j * n + i] = math.nan
        return
    flip, c_loc, c_low, c_high, a, b, w = _canonical(np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]),
                                                     np.float64(high[i]))
    s = np.float64(scale[i])
    kind = _kind_element(a, w)
    tail = math.expm1(-a * w) if kind == _EXPONENTIAL else 0.0
    frame = a >= 0 or _is_narrow(a, w)
    d_peak = (min(max(-a, 0.0), w) if frame else -a) if kind == _UNIFORM else 0.0  # straddling: the peak at t = 0
    for j in range(start, stop):
        draw = j * n + i
        counter = np.uint64(draw) << _UNIFORMS_PER_DRAW_BITS
        if kind == _NORMAL:
            x = c_loc + s * _normal_draw(a, b, key, counter)
        elif kind == _EXPONENTIAL:
            x = c_low + s * _exponential_draw(a, w, tail, key, counter)
        else:
            x = c_low + s * _uniform_draw(a, w, frame, d_peak, key, counter)
        x = min(max(x, c_low), c_high)
        out[draw] = -x if flip else x


@numba.njit(cache=True, error_model="numpy")
def _first_candidates(loc, scale, low, high, key, out, pending):
    """Every element's first candidate into ``out`` (the uniforms, arithmetic and test of the first iteration of its
    proposal's loop, so each accepted value is the loop's), the indices of the rejected ones into ``pending``, their
    number returned. The loop stays scalar: log, log1p, expm1 and exp are libm's, as in the proposals' loops, since
    the vectorizable ones of tnlib.distributions._vector_math round differently and would change the draws. Against
    each element's loop run whole, it takes 0.86x the time on one-sided far tails and the same on moderate and narrow
    intervals (reports/speed.md, section 9)."""
    m = 0
    one = np.uint64(1)
    for i in range(loc.shape[0]):
        if not _defines_a_law(np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]), np.float64(high[i])):
            out[i] = math.nan
            continue
        flip, c_loc, c_low, c_high, a, b, w = _canonical(np.float64(loc[i]), np.float64(scale[i]),
                                                         np.float64(low[i]), np.float64(high[i]))
        s = np.float64(scale[i])
        counter = np.uint64(i) << _UNIFORMS_PER_DRAW_BITS
        u = _uniform(key, counter)
        v = _uniform(key, counter + one)
        kind = _kind_element(a, w)
        if kind == _NORMAL:
            p, q = 2.0 * u - 1.0, 2.0 * v - 1.0
            r = p * p + q * q
            f = math.sqrt(-2.0 * math.log(r) / r) if 0.0 < r < 1.0 else math.nan
            t = p * f
            t = abs(t) if a >= 0 else t
            if not a <= t <= b:
                t = abs(q * f) if a >= 0 else q * f
            keep = a <= t <= b
            x = c_loc + s * t
        elif kind == _EXPONENTIAL:
            d = min(-math.log1p(u * math.expm1(-a * w)) / a, w)
            keep = v <= 1.0 - 0.5 * d * d or v <= math.exp(-0.5 * d * d)
            x = c_low + s * d
        else:
            frame = a >= 0 or _is_narrow(a, w)
            d_peak = min(max(-a, 0.0), w) if frame else -a  # straddling: the peak is at t = 0
            d = u * w
            log_ratio = -(d - d_peak) * (a + 0.5 * (d + d_peak)) if frame else -0.5 * (a + d) * (a + d)
            keep = v <= 1.0 + log_ratio or v <= math.exp(log_ratio)
            x = c_low + s * d
        x = min(max(x, c_low), c_high)
        out[i] = -x if flip else x
        pending[m] = i
        m += 0 if keep else 1
    return m


@numba.njit(cache=True, error_model="numpy")
def _draws_once_serial(loc, scale, low, high, key, out):
    """One draw of each element: every first candidate in one pass, then the rejected draws' loops from their
    second candidate on."""
    pending = np.empty(loc.shape[0], dtype=np.int64)
    m = _first_candidates(loc, scale, low, high, key, out, pending)
    for j in range(m):
        i = pending[j]
        out[i] = _draw_element(np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]), np.float64(high[i]),
                               key, i, 2)  # (past the first candidate's two uniforms)


@numba.njit(cache=True, error_model="numpy")
def _draws_serial(loc, scale, low, high, count, key, out):
    if count == 1:
        _draws_once_serial(loc, scale, low, high, key, out)
        return
    for i in range(loc.shape[0]):
        _draw_range(i, 0, count, loc, scale, low, high, key, out)


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _draws_parallel(loc, scale, low, high, count, key, out):
    if count == 1:
        for i in numba.prange(loc.shape[0]):
            out[i] = _draw_element(np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]),
                                   np.float64(high[i]), key, i, 0)
        return
    # tasks of up to _TASK_DRAWS draws of one element, so that one distribution drawn many times splits too
    chunks = (count + _TASK_DRAWS - 1) // _TASK_DRAWS
    for task in numba.prange(loc.shape[0] * chunks):
        i, chunk = task // chunks, task % chunks
        _draw_range(i, chunk * _TASK_DRAWS, min((chunk + 1) * _TASK_DRAWS, count), loc, scale, low, high, key, out)


def sample_with_key(loc: torch.Tensor, scale: torch.Tensor, low: torch.Tensor, high: torch.Tensor,
                    shape: torch.Size, key: int, parallel: bool | None = None) -> torch.Tensor:
    """Draws of shape ``shape`` (a sample shape before the parameters' shape) of TN(loc, scale, low, high), all four
    CPU tensors of one shape and dtype, from the stream ``key`` (0 <= key < 2^64); ``parallel``: whether threads
    split the draws (None: from ``_PARALLEL_FROM`` draws where torch uses more than one thread: a parallel region
    of one thread costs its start, which on a loaded machine is a wait of milliseconds for the worker's turn)."""
    arrays = [_flat(t) for t in (loc, scale, low, high)]
    out = np.empty(tuple(shape), dtype=arrays[0].dtype)
    flat = out.reshape(-1)
    if parallel is None:
        parallel = flat.shape[0] >= _PARALLEL_FROM and torch.get_num_threads() > 1
    count = flat.shape[0] // max(arrays[0].shape[0], 1)
    if parallel:
        _threads()
        _draws_parallel(*arrays, count, np.uint64(key), flat)
    elif flat.shape[0]:
        _draws_serial(*arrays, count, np.uint64(key), flat)
    return torch.from_numpy(out)


def sample(loc: torch.Tensor, scale: torch.Tensor, low: torch.Tensor, high: torch.Tensor,
           shape: torch.Size) -> torch.Tensor:
    """:func:`sample_with_key` with a key drawn from torch's default generator (one draw a call)."""
    key = int(torch.randint(0, 2**63 - 1, (), dtype=torch.int64))
    return sample_with_key(loc, scale, low, high, shape, key)
