"""The Truncated Normal distribution TN(loc, scale, low, high), exact in float64 and float32.

The paper models the optimal cost-to-go h* as TN(mu, sigma, l, u) with an admissible heuristic as l, trains by
its negative log-likelihood and plans with its mean. Both must stay exact exactly where the naive formulas fail:
when loc lies many scales outside [low, high] (the model predicts mu << l early in training), and when the
interval is narrow. This module is the public class; the numerics live in private modules beside it:

* ``_regimes``: the canonical frame, its regimes (mirror, right frame, straddling, narrow intervals by
  quadrature) and the per-element state every statistic is computed from;
* ``_series``: asymptotic series for the far tail, where closed forms cancel;
* ``_statistics``: values and first derivatives of each statistic, from that state;
* ``_autograd``: the torch.autograd.Function classes that pair each value with its derivatives;
* ``_sampling``: exact draws by rejection for ``sample``;
* ``_log_prob_kernels``, ``_moment_kernels``, ``_cdf_elements``, ``_sample_kernels``: the same formulas compiled
  per element (numba), which a CPU call of log_prob, cdf, icdf (and rsample), mean, variance, entropy and sample
  takes, from the elements ``_kernels`` holds for them all; the modules above are the torch route, for other
  devices and the methods without a kernel; ``_cdf_dispatch`` chooses a CPU call's cdf or icdf kernel (the
  per-element kernel or the vectorized passes of ``_cdf_passes``); ``_sample_proposals`` holds the sampler's
  per-element proposals, candidates and tests, which ``_sample_kernels`` runs over blocks of draws;
* ``_vector_math``: log, exp, expm1, cos and sin, erfcx, erfc and erf in branch-free code the compiler
  vectorizes, for the kernels;
* ``_cdf_vector``, ``_icdf_vector``: the cdf and the icdf and their derivatives in straight-line code the compiler
  vectorizes, for their kernels; ``_cdf_float32``, ``_icdf_float32``: a float32 batch's cdf and icdf, by special
  functions as exact as a float32 result needs.
"""
from __future__ import annotations

import contextlib
import math
from numbers import Number

import torch
from torch.distributions import Distribution, Normal, constraint_registry, constraints, register_kl, transforms
from torch.distributions.utils import broadcast_all

from tnlib.distributions._autograd import (
    _CDF,
    _ICDF,
    _Entropy,
    _FastLogProb,
    _FastMean,
    _LogNormalizer,
    _LogProb,
    _Mean,
    _Variance,
)
from tnlib.distributions._regimes import _LOG_SQRT_2PI, _Core, _FastCore, _core, _fast_core
from tnlib.distributions._sampling import _proposals, _sample_canonical
from tnlib.distributions._statistics import _standardized_variance

__all__ = ["CPU_ROUTES", "TruncatedNormal", "cdf_pass_from", "cpu_route", "icdf_pass_from", "torch_route"]


# torch's check for a torch.vmap batched tensor (private to torch; absent, none is), looked up once: the constructor
# asks it of each parameter
_IS_BATCHED = getattr(getattr(torch._C, "_functorch", None), "is_batchedtensor", None)


def _is_vmapped(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is a torch.vmap batched tensor."""
    return _IS_BATCHED is not None and bool(_IS_BATCHED(tensor))


# tnlib.distributions._kernels and _log_prob_kernels once imported, held (an import statement costs about a
# microsecond a call)
_SHARED_KERNELS = []
_LOG_PROB_KERNELS = []


def _kernels():
    """tnlib.distributions._kernels (what every kernel shares: whether the kernels serve a tensor), imported on first
    use (numba's import is the cost of a CPU call, not of importing tnlib)."""
    if not _SHARED_KERNELS:
        from tnlib.distributions import _kernels as kernels

        _SHARED_KERNELS.append(kernels)
    return _SHARED_KERNELS[0]


def _log_prob_kernels():
    """tnlib.distributions._log_prob_kernels, imported on first use."""
    if not _LOG_PROB_KERNELS:
        from tnlib.distributions import _log_prob_kernels as kernels

        _LOG_PROB_KERNELS.append(kernels)
    return _LOG_PROB_KERNELS[0]


def _moment_kernels():
    """tnlib.distributions._moment_kernels (the mean's, variance's and entropy's), imported on first use."""
    from tnlib.distributions import _moment_kernels as kernels

    return kernels


def _cdf_dispatch():
    """tnlib.distributions._cdf_dispatch, imported on first use."""
    from tnlib.distributions import _cdf_dispatch as kernels

    return kernels


def _sample_kernels():
    """tnlib.distributions._sample_kernels, imported on first use."""
    from tnlib.distributions import _sample_kernels as kernels

    return kernels


# The routes a CPU call can take (cpu_route's argument), and the one it takes now
CPU_ROUTES = ("kernels", "torch", "per-element", "vectorized")
_CPU_ROUTE = "kernels"


@contextlib.contextmanager
def cpu_route(route: str):
    """Within it, a CPU call of every statistic takes ``route``, one of CPU_ROUTES; outside, "kernels":

    * ``"kernels"``: the compiled kernels, each method's vectorized pass where it has one and the per-element kernel
      for the elements the pass leaves; the icdf (and so rsample) and its gradients take the per-element kernel
      alone below :func:`icdf_pass_from` elements, and the cdf and its gradients below :func:`cdf_pass_from`,
      where the pass's compile would dominate a process's first call;
    * ``"torch"``: the torch route, the autograd functions other devices than the CPU take;
    * ``"per-element"``: the kernels, with the cdf, the icdf and their gradients by the per-element kernel alone
      (the reference the vectorized passes are tested against);
    * ``"vectorized"``: the kernels, with the cdf, the icdf and their gradients by the vectorized passes at every
      batch size.

    Every route gives the same values to rounding; what the benchmarks time against each other, through the public
    class. Not thread-safe: the route is the process's, not a thread's."""
    global _CPU_ROUTE
    if route not in CPU_ROUTES:
        raise ValueError(f"cpu_route: unknown route {route!r}; one of {', '.join(CPU_ROUTES)}")
    previous, _CPU_ROUTE = _CPU_ROUTE, route
    try:
        yield
    finally:
        _CPU_ROUTE = previous


def torch_route():
    """``cpu_route("torch")``: within it, a CPU call of every statistic takes the torch route (the autograd functions
    other devices take) instead of the compiled kernels."""
    return cpu_route("torch")


def cdf_pass_from() -> int:
    """The batch size from which a CPU cdf on the "kernels" route takes the vectorized pass."""
    return _cdf_dispatch()._CDF_PASS_FROM


def icdf_pass_from() -> int:
    """The batch size from which a CPU icdf (and rsample) on the "kernels" route takes the vectorized pass."""
    return _cdf_dispatch()._ICDF_PASS_FROM


def _kernels_serve(tensor: torch.Tensor) -> bool:
    """Whether the compiled CPU kernels compute for parameters like ``tensor`` (else the torch route does)."""
    return _CPU_ROUTE != "torch" and tensor.device.type == "cpu" and _kernels().available(tensor)


def _broadcast_shape(value: torch.Tensor, batch_shape: torch.Size) -> torch.Size:
    """The shape ``value`` and the batch broadcast to; without torch.broadcast_shapes where they are one shape
    already (it costs tens of microseconds, more than a small batch's kernels)."""
    return batch_shape if value.shape == batch_shape else torch.broadcast_shapes(value.shape, batch_shape)


def _batch_value(value: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """``value`` over the batch ``shape`` it broadcasts to: as it is where it has that shape already (an expanded
    view costs about 5 us, more on cold caches, which counts on a training batch of hundreds)."""
    return value if value.shape == shape else value.expand(shape)


def _real_value(value, like: torch.Tensor, method: str) -> torch.Tensor:
    """``value`` as a tensor of ``like``'s dtype and device; a complex one is refused (the conversion would drop its
    imaginary part with no more than a warning)."""
    if isinstance(value, complex) or (isinstance(value, torch.Tensor) and value.dtype.is_complex):
        raise TypeError(f"TruncatedNormal.{method}: the value is complex; the distribution is over the reals (give "
                        "a real tensor)")
    return torch.as_tensor(value, dtype=like.dtype, device=like.device)


class _ExtendedReal(constraints.Constraint):
    """Real numbers including -inf and +inf, but not NaN."""

    def check(self, value):
        return ~torch.isnan(value)


# An unconstrained real is already an extended real: libraries that optimise a distribution's parameters through
# ``transform_to(arg_constraints[name])`` (Pyro, torch's own examples) get the identity for the bounds.
@constraint_registry.biject_to.register(_ExtendedReal)
@constraint_registry.transform_to.register(_ExtendedReal)
def _extended_real_transform(constraint):
    return transforms.identity_transform


# Half precision is refused rather than computed in float32 behind the caller's back: the statistics are exact in
# float32 and float64 only (their regimes and series are set for those roundings, and torch has no erfcx for half
# tensors on the CPU), and results of another dtype than the arguments would surprise code that mixes them in.
_REFUSED_DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16"}


def _check_arguments(arguments: dict) -> None:
    """A TypeError naming the argument of a type the statistics are not defined for (bool, complex, half
    precision), or a ValueError naming the first whose shape does not broadcast with those before it (torch's own
    message names neither), before any computation."""
    shapes = []
    for name, value in arguments.items():
        dtype = value.dtype if isinstance(value, torch.Tensor) else None
        if isinstance(value, bool) or dtype == torch.bool:
            raise TypeError(f"TruncatedNormal: {name} is a bool; give real numbers (a float32 or float64 tensor)")
        if isinstance(value, complex) or (dtype is not None and dtype.is_complex):
            raise TypeError(f"TruncatedNormal: {name} is complex; the distribution is over the reals (give a float32 "
                            "or float64 tensor)")
        if dtype in _REFUSED_DTYPES:
            raise TypeError(f"TruncatedNormal: {name} is {_REFUSED_DTYPES[dtype]}; it computes in float32 or "
                            "float64 only: convert the arguments with .float() (or .double())")
        shapes.append(tuple(value.shape) if isinstance(value, torch.Tensor) else ())
    if len(set(shapes)) == 1:  # (the usual call; torch.broadcast_shapes costs tens of microseconds)
        return
    for count, shape in enumerate(shapes):
        try:
            torch.broadcast_shapes(*shapes[: count + 1])
        except RuntimeError:
            name = list(arguments)[count]
            before = ", ".join(f"{other} {list(found)}" for other, found in zip(arguments, shapes[:count]))
            raise ValueError(f"TruncatedNormal: the shape of {name}, {list(shape)}, does not broadcast with those "
                             f"before it ({before}); loc, scale, low and high broadcast together") from None


_COMPUTED_DTYPES = (torch.float32, torch.float64)


def _float_tensors_of_one_shape(params: tuple) -> bool:
    """Whether ``params`` are all float32 or float64 tensors of one shape: arguments _check_arguments passes and
    broadcast_all leaves as they are."""
    shape = params[0].shape if isinstance(params[0], torch.Tensor) else None
    return shape is not None and all(isinstance(t, torch.Tensor) and t.shape == shape and t.dtype in _COMPUTED_DTYPES
                                     for t in params)


class TruncatedNormal(Distribution):
    r"""Normal(loc, scale) conditioned on low <= X <= high.

    Args:
        loc: mean of the normal before truncation (mu).
        scale: its standard deviation (sigma > 0).
        low, high: the bounds; each may be ``-inf`` / ``+inf`` exactly, and with both infinite this is
            ``Normal(loc, scale)``. All four broadcast together (a shape that does not is named), and each is a
            real number or a float32 or float64 tensor (integers are taken as reals): bool, complex and half
            precision (float16, bfloat16) arguments raise a TypeError naming the argument.

    ``mean`` is the heuristic value the paper plans with; ``log_prob`` is the negative of its training loss;
    ``log_normalizer`` is log Z = log(Phi(beta) - Phi(alpha)). Values and gradients are exact in float64 and
    float32 (see tnlib.distributions._regimes), including loc many scales outside the bounds and narrow intervals.
    Every statistic is differentiable (first order) w.r.t. all four parameters; the derivative w.r.t. an
    infinite bound is 0. Second derivatives (``create_graph=True``) raise a RuntimeError.

    Example::

        >>> import torch
        >>> d = TruncatedNormal(torch.tensor(0.0), torch.tensor(1.0), torch.tensor(0.2), torch.tensor(1.7))
        >>> round(d.mean.item(), 4)  # the paper's Figure 1: mu = 0 lies outside (l, u), the mean does not
        0.7895
    """

    arg_constraints = {
        "loc": constraints.real,
        "scale": constraints.positive,
        "low": _ExtendedReal(),
        "high": _ExtendedReal(),
    }
    has_rsample = True

    def __init__(self, loc, scale, low, high, validate_args=None):
        params = (loc, scale, low, high)
        if _float_tensors_of_one_shape(params):
            # already broadcast and of a computed dtype (the usual call): _check_arguments could refuse nothing and
            # broadcast_all would leave them as they are, each at a cost beside that of a small batch's statistics
            self.loc, self.scale, self.low, self.high = params
        else:
            _check_arguments({"loc": loc, "scale": scale, "low": low, "high": high})
            self.loc, self.scale, self.low, self.high = broadcast_all(*params)
        if any(_is_vmapped(t) for t in (self.loc, self.scale, self.low, self.high)):
            # torch.vmap would fail later with a generic message about data-dependent control flow
            raise RuntimeError(
                "TruncatedNormal does not support torch.vmap: its numerical regimes are chosen per element from "
                "the data; give the parameters a batch dimension instead (every method is elementwise over "
                "batch_shape)")
        if all(isinstance(v, Number) for v in (loc, scale, low, high)):
            batch_shape = torch.Size()
        else:
            batch_shape = self.loc.size()
        if validate_args is None:
            validate_args = Distribution._validate_args
        if validate_args:
            self._check_parameters()
        super().__init__(batch_shape, validate_args=validate_args)
        self._core_cache: _Core | None = None
        self._fast_cache: _FastCore | None = None
        self._proposals_cache: list | None = None
        self._one_sided_cache: bool | None = None

    def _check_parameters(self) -> None:
        names = ("loc", "scale", "low", "high")
        for name in names:
            value = getattr(self, name)
            if torch.isnan(value).any():
                raise ValueError(f"TruncatedNormal: {name} contains NaN")
        if torch.isinf(self.loc).any():
            raise ValueError("TruncatedNormal: loc must be finite")
        if not (self.scale > 0).all() or torch.isinf(self.scale).any():
            raise ValueError(f"TruncatedNormal: scale must be positive and finite, got min {self.scale.min().item()}")
        if not (self.low < self.high).all():
            bad = (self.low >= self.high).nonzero()[0].tolist()
            raise ValueError(
                f"TruncatedNormal: low must be < high, got low={self.low[tuple(bad)].item()} "
                f"high={self.high[tuple(bad)].item()} at index {bad}")

    @property
    def _one_sided(self) -> bool:
        """Whether every upper bound is +inf: the paper's configuration, which the torch route takes a fast path
        for (decided on first use: the CPU kernels do not read it)."""
        if self._one_sided_cache is None:
            self._one_sided_cache = bool(torch.isposinf(self.high).all())
        return self._one_sided_cache

    # -- shared state --------------------------------------------------------------------------------------------
    @property
    def _core(self) -> _Core:
        if self._core_cache is None:
            self._core_cache = _core(self.loc.detach(), self.scale.detach(), self.low.detach(), self.high.detach())
        return self._core_cache

    @property
    def _fast(self) -> _FastCore:
        if self._fast_cache is None:
            self._fast_cache = _fast_core(self.loc, self.scale, self.low, self.high)
        return self._fast_cache

    # a dependent property (as torch's Uniform has), so ``TruncatedNormal.support.event_dim`` works on the class
    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(TruncatedNormal, _instance)
        batch_shape = torch.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.low = self.low.expand(batch_shape)
        new.high = self.high.expand(batch_shape)
        new._core_cache = None
        new._fast_cache = None
        new._proposals_cache = None
        new._one_sided_cache = self._one_sided_cache
        super(TruncatedNormal, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    # -- statistics ----------------------------------------------------------------------------------------------
    @property
    def log_normalizer(self) -> torch.Tensor:
        """log Z = log(Phi((high - loc)/scale) - Phi((low - loc)/scale))."""
        return _LogNormalizer.apply(self.loc, self.scale, self.low, self.high, self._core)

    @property
    def mean(self) -> torch.Tensor:
        if _kernels_serve(self.loc):
            return _moment_kernels().statistic("mean", self.loc, self.scale, self.low, self.high)
        if self._one_sided:
            return _FastMean.apply(self.loc, self.scale, self.low, self.high, self._fast)
        return _Mean.apply(self.loc, self.scale, self.low, self.high, self._core)

    @property
    def mode(self) -> torch.Tensor:
        return torch.minimum(torch.maximum(self.loc, self.low), self.high)

    @property
    def variance(self) -> torch.Tensor:
        if _kernels_serve(self.loc):
            return _moment_kernels().statistic("variance", self.loc, self.scale, self.low, self.high)
        return _Variance.apply(self.loc, self.scale, self.low, self.high, self._core)

    @property
    def stddev(self) -> torch.Tensor:
        return self.variance.sqrt()

    def entropy(self) -> torch.Tensor:
        if _kernels_serve(self.loc):
            return _moment_kernels().statistic("entropy", self.loc, self.scale, self.low, self.high)
        return _Entropy.apply(self.loc, self.scale, self.low, self.high, self._core)

    def log_prob(self, value) -> torch.Tensor:
        value = _real_value(value, self.loc, "log_prob")
        if self._validate_args:
            self._validate_sample(value)
        shape = _broadcast_shape(value, self.batch_shape)
        if shape != self.batch_shape:
            return self.expand(shape).log_prob(value.expand(shape))
        value = _batch_value(value, shape)
        if _kernels_serve(self.loc):
            return _log_prob_kernels().log_prob(value, self.loc, self.scale, self.low, self.high)
        if self._one_sided:
            return _FastLogProb.apply(value, self.loc, self.scale, self.low, self.high, self._fast)
        return _LogProb.apply(value, self.loc, self.scale, self.low, self.high, self._core)

    def cdf(self, value) -> torch.Tensor:
        value = _real_value(value, self.loc, "cdf")
        if self._validate_args:
            self._validate_sample(value)
        shape = _broadcast_shape(value, self.batch_shape)
        if shape != self.batch_shape:
            return self.expand(shape).cdf(value.expand(shape))
        value = _batch_value(value, shape)
        if _kernels_serve(self.loc):
            return _cdf_dispatch().cdf(value, self.loc, self.scale, self.low, self.high, route=_CPU_ROUTE)
        return _CDF.apply(value, self.loc, self.scale, self.low, self.high, self._core)

    def icdf(self, value) -> torch.Tensor:
        value = _real_value(value, self.loc, "icdf")
        shape = _broadcast_shape(value, self.batch_shape)
        if shape != self.batch_shape:
            return self.expand(shape).icdf(value.expand(shape))
        if self._validate_args and not ((value >= 0) & (value <= 1)).all():
            raise ValueError("TruncatedNormal.icdf: probabilities must lie in [0, 1]")
        if _kernels_serve(self.loc):
            return _cdf_dispatch().cdf(_batch_value(value, shape), self.loc, self.scale, self.low, self.high,
                                      inverse=True, route=_CPU_ROUTE)
        return _ICDF.apply(value, self.loc, self.scale, self.low, self.high, self._core)

    def rsample(self, sample_shape=torch.Size()) -> torch.Tensor:
        shape = self._extended_shape(sample_shape)
        u = torch.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        # keep u away from exactly 0 and 1 by the smallest amount so icdf stays in the open interval
        tiny = torch.finfo(u.dtype).tiny
        u = u.clamp(tiny, 1.0 - torch.finfo(u.dtype).eps / 2)
        return self.icdf(u)

    def sample(self, sample_shape=torch.Size()) -> torch.Tensor:
        """Exact draws by rejection (tnlib.distributions._sampling; on the CPU its compiled kernels,
        tnlib.distributions._sample_kernels): several times faster than ``rsample``'s inversion, and different values
        for the same random state."""
        shape = self._extended_shape(sample_shape)
        if _kernels_serve(self.loc):
            return _sample_kernels().sample(self.loc, self.scale, self.low, self.high, shape)
        return self._sample_by_torch(shape)

    def _sample_by_torch(self, shape: torch.Size) -> torch.Tensor:
        """``sample`` by the torch route (tnlib.distributions._sampling), which other devices than the CPU take."""
        if not self._validate_args:
            # no rejection loop ends for an element whose loc or scale is not finite, whose scale is not positive or
            # whose bounds are NaN or crossed (a NaN bound accepts nothing): such elements are drawn as a standard
            # Normal's, then given NaN, as the CPU kernels give them
            loc, scale, low, high = self.loc, self.scale, self.low, self.high
            lawless = ~(torch.isfinite(loc) & (scale > 0) & torch.isfinite(scale) & (low <= high))
            if bool(lawless.any()):
                standard = [torch.where(lawless, fill, t) for fill, t in zip((0.0, 1.0, -math.inf, math.inf),
                                                                            (loc, scale, low, high))]
                x = TruncatedNormal(*standard, validate_args=False)._sample_by_torch(shape)
                return x.masked_fill(lawless.expand(shape), math.nan)
        with torch.no_grad():
            core = self._core
            if self._proposals_cache is None:
                self._proposals_cache = _proposals(core)
            count = shape.numel() // max(self.batch_shape.numel(), 1)
            x_c = _sample_canonical(core, self._proposals_cache, count, self._invert_canonical)
            if not bool(core.flip.any()):
                return x_c.reshape(shape).to(self.loc.dtype)
            flip = core.flip.expand(x_c.numel() // max(core.flip.numel(), 1), -1).reshape(-1)
            return torch.where(flip, -x_c, x_c).reshape(shape).to(self.loc.dtype)

    def _invert_canonical(self, elements: torch.Tensor) -> torch.Tensor:
        """Canonical draws of the flat ``elements`` (repeats allowed) by inversion."""
        params = (t.detach().reshape(-1)[elements] for t in (self.loc, self.scale, self.low, self.high))
        x = TruncatedNormal(*params, validate_args=False).rsample()
        return torch.where(self._core.flip[elements], -x, x).to(self._core.a.dtype)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}: {getattr(self, k) if getattr(self, k).numel() == 1 else getattr(self, k).size()}"
                         for k in ("loc", "scale", "low", "high"))
        return f"TruncatedNormal({args})"


# ----------------------------------------------------------------------------------------------------------------
# KL divergences, registered with torch.distributions.kl_divergence where they are exact (closed form)
# ----------------------------------------------------------------------------------------------------------------
# Write each log density relative to an anchor c inside or at the edge of its support, y = (x - c)/scale:
#     log p(x) = -log scale - K - y^2/2 - u y,   u = (c - loc)/scale,   K = log Z + log sqrt(2 pi) + u^2/2.
# With c the bound the mass sits against (the frame's lower bound, or upper bound when mirrored) K is log M0 of
# tnlib.distributions._regimes and E[y] is D, so no term carries the a^2/2 that cancels in the far tail;
# straddling elements anchor at loc (u = 0). KL(p || q) = E_p[log p - log q] then needs only p's first two moments
# about its anchor, for any q whose support holds p's; otherwise it is +inf (p puts mass where q has none).

def _anchored(d: TruncatedNormal) -> tuple[torch.Tensor, ...]:
    """(anchor c, u, K, E[y], E[y^2]) of each element, flattened and detached (see above)."""
    core = d._core
    sign = torch.where(core.flip, -1.0, 1.0).to(core.a.dtype)
    frame = core.frame
    anchor = torch.where(frame, sign * core.c_low, core.c_loc)  # straddling elements are never mirrored
    u = torch.where(frame, sign * core.a, torch.zeros_like(core.a))
    k = torch.where(frame, core.log_m0, core.log_z + _LOG_SQRT_2PI)
    first = torch.where(frame, sign * core.d_mean, core.mean_t)
    second = _standardized_variance(core) + first.square()
    return anchor, u, k, first, second


def _kl_truncated_normals(p: TruncatedNormal, q: TruncatedNormal) -> torch.Tensor:
    shape = torch.broadcast_shapes(p.batch_shape, q.batch_shape)
    p, q = p.expand(shape), q.expand(shape)
    c_p, u_p, k_p, e1, e2 = _anchored(p)
    c_q, u_q, k_q, _, _ = _anchored(q)
    s_p, s_q = p.scale.detach().reshape(-1), q.scale.detach().reshape(-1)
    r = s_p / s_q
    delta = (c_p - c_q) / s_q  # p's anchor in q's frame
    # E_p[log p] = -log s_p - K_p - E[y^2]/2 - u_p E[y];  E_p[log q] likewise with y_q = r y + delta
    kl = (torch.log(s_q / s_p) + (k_q - k_p) - 0.5 * e2 * (1.0 - r.square()) - u_p * e1 + r * e1 * delta
          + 0.5 * delta.square() + u_q * (r * e1 + delta))
    # KL >= 0: the rounding of a value near zero must not make it negative
    kl = kl.reshape(shape).clamp_min(0.0).to(p.loc.dtype)
    params = (p.loc, p.scale, p.low, p.high, q.loc, q.scale, q.low, q.high)
    if torch.is_grad_enabled() and any(t.requires_grad for t in params):
        # gradients through the textbook form, whose pieces (entropy, log Z, variance, mean) carry exact
        # derivatives; its value, which cancels in the far tail, is replaced by the anchored one
        textbook = (-p.entropy() + torch.log(q.scale) + _LOG_SQRT_2PI + q.log_normalizer
                    + (p.variance + (p.mean - q.loc).square()) / (2.0 * q.scale.square()))
        kl = kl + (textbook - textbook.detach())
    inside = (p.low >= q.low) & (p.high <= q.high)
    return torch.where(inside, kl, torch.full_like(kl, math.inf))


def _as_truncated(n: Normal) -> TruncatedNormal:
    """Normal(loc, scale) as TruncatedNormal(loc, scale, -inf, +inf)."""
    loc, scale = n.loc, n.scale
    return TruncatedNormal(loc, scale, torch.full_like(loc, -math.inf), torch.full_like(loc, math.inf),
                           validate_args=False)


@register_kl(TruncatedNormal, TruncatedNormal)
def _kl_tn_tn(p: TruncatedNormal, q: TruncatedNormal) -> torch.Tensor:
    """Closed form where p's support lies inside q's, +inf otherwise."""
    return _kl_truncated_normals(p, q)


@register_kl(TruncatedNormal, Normal)
def _kl_tn_normal(p: TruncatedNormal, q: Normal) -> torch.Tensor:
    return _kl_truncated_normals(p, _as_truncated(q))


@register_kl(Normal, TruncatedNormal)
def _kl_normal_tn(p: Normal, q: TruncatedNormal) -> torch.Tensor:
    """+inf where q has a finite bound (torch's convention for a support not covered), else KL(Normal || Normal)."""
    return _kl_truncated_normals(_as_truncated(p), q)
