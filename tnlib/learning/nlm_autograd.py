"""The Neural Logic Machine's big-tensor operations as autograd functions: a layer's permuted sum + sigmoid and the
exists / forall of an arity (masked max / min over its last object axis), each with the exact gradient, and the
fused routes that form an arity-3 output together with its exists / forall.

:mod:`tnlib.learning.nlm` builds the layers from these; the numba kernels they call live in
:mod:`tnlib.learning.nlm_kernels`. These optimisations keep the function exactly the same (outputs and gradients
tested against ``nlm_reference_forward`` in tests/nlm_reference.py, in float64; the speed figures are in
reports/speed.md):

* in training, the gradient of an arity tensor that the next layer only reduces (exists / forall) is nonzero only
  at the entries that attain an extremum, a few in a hundred: its permuted sum's backward visits those entries
  alone (a numba kernel) instead of permuting the whole gradient r! times and multiplying it by the weight;
* in training too, an arity-3 output that the next layer only reduces is formed together with its exists / forall
  (the inference route's projected-extrema kernel, storing the output for the backward), and its backward goes
  from the extrema's gradient to the inputs' in one kernel that finds the ties and scatters their shares, without
  the dense gradient between them;
* in training too, an arity-3 output made of expand terms alone (the first layer's, where the inputs have no
  arity-3 predicates) is formed with its exists / forall in one pass, and one backward kernel takes the gradients
  of both through the sigmoid to the bias's and the expand terms';
* the arity-3 kernels visit a state's real objects alone (a batch pads its states after them): a position with a
  padded object never reaches the output, so those positions hold constants and take no gradient;
* the expand parts' projections (a row a pair of objects and state: tall and narrow) are differentiated by
  products whose long axis is the inner one, which MKL runs several times faster at these shapes;
* the big arity tensors are produced and differentiated chunk by chunk over the batch by two autograd functions
  (permuted sum + sigmoid; masked max / min), so that consecutive passes find their data in the caches, and the
  masked max / min run as numba kernels on CPU, with autograd's exact gradient (ties split evenly).
"""
from __future__ import annotations

import itertools
import math
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from tnlib.learning import nlm_kernels
from tnlib.learning.nlm_kernels import (
    TILE,
    broadcast_sum_backward_kernel,
    broadcast_sum_kernel,
    extrema_backward_kernel,
    extrema_kernel,
    extrema_permuted_backward_kernel,
    projected_extrema_kernel,
    reduced_pair_rows,
    run_each,
    run_split,
    sparse_permuted_backward_kernel,
)


@lru_cache(maxsize=None)
def object_permutations(r: int) -> tuple[tuple[int, ...], ...]:
    return tuple(itertools.permutations(range(r)))


def permute_objects(x: torch.Tensor, perm: tuple[int, ...]) -> torch.Tensor:
    """Permute the r object axes of ``x [B, N^r, C]`` (identity for r <= 1)."""
    if len(perm) <= 1:
        return x
    return x.permute(0, *[1 + p for p in perm], x.dim() - 1)


# ``exclude_self`` (the authors' --exclude-self, Dong et al.'s exclude_self): with True a reduction (exists / forall
# over the last object axis) skips the entries whose reduced object equals a kept one; with False (the authors'
# code's default) it ranges over every real object. The authors' True also skips every entry whose kept objects
# repeat one another; tnlib does not need to: a position with a repeated object only ever feeds positions with a
# repeated object (expand and permute keep the repeat, and a reduction skips the reduced object where it repeats a
# kept one), so it never reaches the arity-0 output, and the two compute the same model (tests/nlm_reference.py
# implements the authors' rule; the tests compare outputs and gradients).
_DISTINCT_CACHE: dict[tuple[int, int, str], torch.Tensor] = {}


def reduction_mask(object_mask: torch.Tensor, r_plus_1: int, exclude_self: bool) -> torch.Tensor:
    """Bool ``[B, N^(r+1), 1]``: entries a reduction over the last axis may use (real, and with ``exclude_self``
    not equal to a kept index)."""
    batch, n = object_mask.shape
    view = (batch,) + (1,) * (r_plus_1 - 1) + (n, 1)
    mask = object_mask.view(view)
    if r_plus_1 > 1 and exclude_self:
        key = (r_plus_1, n, str(object_mask.device))
        distinct = _DISTINCT_CACHE.get(key)
        if distinct is None:
            idx = torch.arange(n, device=object_mask.device)
            grids = torch.meshgrid(*([idx] * r_plus_1), indexing="ij")
            distinct = torch.ones((n,) * r_plus_1, dtype=torch.bool, device=object_mask.device)
            for k in range(r_plus_1 - 1):
                distinct &= grids[k] != grids[-1]
            distinct = distinct.unsqueeze(0).unsqueeze(-1)
            _DISTINCT_CACHE[key] = distinct
        mask = mask & distinct
    return mask


def _inverse_permutation(perm: tuple[int, ...]) -> tuple[int, ...]:
    inverse = [0] * len(perm)
    for position, axis in enumerate(perm):
        inverse[axis] = position
    return tuple(inverse)


def needs_grad(*tensors: torch.Tensor | None) -> bool:
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


class TallProjection(torch.autograd.Function):
    """``x @ w^T`` for a tall ``x [..., C]`` (tens of thousands of rows, a few channels) and ``w [out, C]``, whose
    backward forms both gradients as products whose long axis is the inner one: ``w^T G^T`` and ``x^T G``, each then
    viewed transposed. MKL's products with the long axis outside (autograd's ``G w`` with a narrow ``w``, and
    ``G^T x``) run 2.5-10x slower at these shapes (40,000 rows of visitall's pairs, 48 outputs, 2 or 8 inputs: 2.1
    against 0.8 ms, and 3.0-3.5 against 0.3-0.8 ms, one thread)."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return F.linear(x, w)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        rows = grad.reshape(-1, grad.shape[-1])
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = torch.mm(w.t(), rows.t()).t().view(x.shape)
        if ctx.needs_input_grad[1]:
            grad_w = torch.mm(x.reshape(-1, x.shape[-1]).t(), rows).t()
        return grad_x, grad_w


# The rows from which ``TallProjection`` pays: below, autograd's own backward of ``F.linear`` is as fast and cheaper
# to call (64 rows: 36 against 64 us forward and backward; 896 rows: 84 against 80 us; 40,000 rows: 7.4 against
# 3.8 ms).
TALL_ROWS = 1024


def tall_projection(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``F.linear(x, w)`` (no bias), differentiated by ``TallProjection`` when a gradient is needed and ``x`` has
    at least ``TALL_ROWS`` rows."""
    if needs_grad(x, w) and x.numel() >= TALL_ROWS * x.shape[-1]:
        return TallProjection.apply(x, w)
    return F.linear(x, w)


# The big NLM tensors ([B, N^3, C]: 32 MB at batch 256, 16 objects and 8 channels in float32) do not fit in the
# caches, and every elementwise pass over them is a trip to memory. The two autograd functions below therefore
# work through the batch in chunks whose largest temporary takes about this many bytes, so that the several
# passes of one step (project, add the permuted terms, sigmoid; or fill, reduce, compare, count) reuse cached data.
CHUNK_BYTES = 1 << 22


def _batch_chunks(batch: int, bytes_per_state: int) -> list[tuple[int, int]]:
    step = max(1, CHUNK_BYTES // max(1, bytes_per_state))
    return [(start, min(batch, start + step)) for start in range(0, batch, step)]


# Masked max / min over the last object axis, as numba kernels on CPU: one pass over x forward, two backward,
# where autograd's route (fill, reduce, compare, count, scale, fill) makes about ten. The kernels compute the
# same numbers as that route (the tests compare them bit for bit): excluded entries -- objects that are not real
# (padding) and, with ``exclude`` (``exclude_self``), objects equal to one of the kept ones -- take the value 0 for
# the max and 1 for the min; the gradient of an extremum is split evenly among the entries equal to it, excluded
# ones counted, and excluded entries then get none. x is [B, M, N, C]: M = N^r kept positions (row-major), N
# reduced objects, C channels.


def use_kernels(x: torch.Tensor) -> bool:
    return x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64)


def _kernel_view(x: torch.Tensor) -> np.ndarray:
    """x ``[B, N^(r+1), C]`` as the kernels' contiguous ``[B, N^r, N, C]`` array (no copy when contiguous)."""
    n = x.shape[-2]
    return x.detach().contiguous().view(x.shape[0], -1, n, x.shape[-1]).numpy()


def _masked_extrema(x: torch.Tensor, object_mask: torch.Tensor, exclude_self: bool,
                    excluded: torch.Tensor | None) -> torch.Tensor:
    """``[B, N^(r+1), C] -> [B, N^r, 2C]``: max over the last object axis with excluded entries filled with 0,
    then min with them filled with 1 (see ``exists_forall``)."""
    axis = x.dim() - 2
    channels = x.shape[-1]
    out = x.new_empty(x.shape[:axis] + (2 * channels,))
    if use_kernels(x):
        run_split(extrema_kernel, x.shape[0], x.numel(), _kernel_view(x), object_mask.numpy(), axis - 1,
                  bool(exclude_self), out.view(x.shape[0], -1, 2 * channels).numpy())
        return out
    excluded = ~reduction_mask(object_mask, axis, exclude_self) if excluded is None else excluded
    torch.amax(x.masked_fill(excluded, 0.0), dim=axis, out=out[..., :channels])
    torch.amin(x.masked_fill(excluded, 1.0), dim=axis, out=out[..., channels:])
    return out


class _MaskedExtrema(torch.autograd.Function):
    """:func:`_masked_extrema` with exactly the gradient autograd gives ``x.masked_fill(excluded, 0).amax(axis)``
    and ``x.masked_fill(excluded, 1).amin(axis)`` (see the kernels above)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, object_mask: torch.Tensor, exclude_self: bool,
                excluded: torch.Tensor | None) -> torch.Tensor:
        out = _masked_extrema(x, object_mask, exclude_self, excluded)
        ctx.save_for_backward(x, object_mask, out)
        ctx.exclude_self, ctx.excluded = exclude_self, excluded
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        x, object_mask, out = ctx.saved_tensors
        axis = x.dim() - 2
        channels = x.shape[-1]
        if use_kernels(x):
            grad_x = x.new_empty(x.shape)
            run_split(extrema_backward_kernel, x.shape[0], 2 * x.numel(), _kernel_view(x), object_mask.numpy(),
                      axis - 1, bool(ctx.exclude_self), out.view(x.shape[0], -1, 2 * channels).numpy(),
                      grad.contiguous().view(x.shape[0], -1, 2 * channels).numpy(), _kernel_view(grad_x))
            return grad_x, None, None, None
        excluded = ~reduction_mask(object_mask, axis, ctx.exclude_self) if ctx.excluded is None else ctx.excluded
        total = None
        for fill, part in ((0.0, slice(None, channels)), (1.0, slice(channels, None))):
            ties = x.masked_fill(excluded, fill) == out[..., part].unsqueeze(axis)
            share = (grad[..., part].unsqueeze(axis) / ties.sum(axis, keepdim=True)) * ties
            share.masked_fill_(excluded, 0.0)
            total = share if total is None else total.add_(share)
        return total, None, None, None


def exists_forall(x: torch.Tensor, object_mask: torch.Tensor, exclude_self: bool) -> torch.Tensor:
    """``[B, N^(r+1), C] -> [B, N^r, 2C]``: max and min over the last object axis, restricted by the mask and
    ``exclude_self`` (see above the masks).

    Values lie in [0, 1] (inputs are 0/1, hidden predicates sigmoids), so excluded entries become 0 for the max
    and 1 for the min: they never win, and an empty range gives exists = 0, forall = 1 (the values the authors'
    code gives too: it multiplies excluded entries by 0, or sets them to 1 for the min).
    """
    excluded = None if use_kernels(x) else ~reduction_mask(object_mask, x.dim() - 2, exclude_self)
    return _MaskedExtrema.apply(x, object_mask, exclude_self, excluded) if needs_grad(x) else \
        _masked_extrema(x, object_mask, exclude_self, excluded)


def _expand_term_arrays(small: tuple[torch.Tensor | None, ...], bias: torch.Tensor, batch: int,
                        n: int) -> list[np.ndarray]:
    """The three expand terms of an arity-3 output as the kernels read them: contiguous ``[B, N, N, out]`` arrays,
    zeros for an absent one (a kernel takes no None)."""
    zeros = None
    arrays = []
    for term in small:
        if term is None:
            zeros = bias.new_zeros((batch, n, n, bias.shape[0])) if zeros is None else zeros
            term = zeros
        arrays.append(term.contiguous().numpy())
    return arrays


def projected_extrema(x: torch.Tensor | None, w: torch.Tensor | None, bias: torch.Tensor,
                      small: tuple[torch.Tensor | None, ...], object_mask: torch.Tensor,
                      exclude_self: bool, store: bool = False, sums: bool = False):
    """``exists_forall(permuted_sum_sigmoid(n, x, w, bias, small), ...)`` for output arity 3, without the
    ``[B, N^3, out]`` tensor between them: ``[B, N, N, 2 out]`` (see ``projected_extrema_kernel``). CPU, no
    gradient. With ``store`` the pair ``(extrema, y)``, y the ``[B, N, N, N, out]`` output formed in the same pass
    (with ``sums``, the sums before its sigmoid)."""
    batch, n = object_mask.shape
    width = bias.shape[0]
    perms = object_permutations(3)
    if x is None:
        x = bias.new_zeros((batch, n ** 3, 0))
        w = bias.new_zeros((len(perms) * width, 0))
    # w [6 out, C_in] (permutation-major) -> [6 C_in, out]: the gathered rows times it give every term at once
    weights = w.view(len(perms), width, -1).transpose(1, 2).reshape(-1, width).contiguous()
    strides = np.array([[n ** (2 - axis) for axis in perm] for perm in perms], dtype=np.int64)
    terms = _expand_term_arrays(small, bias, batch, n)
    rows = x.reshape(batch, n ** 3, -1).contiguous().numpy()
    words = rows.view(np.float64) if rows.shape[2] * rows.itemsize % 8 == 0 else rows
    args = (rows, words, weights.numpy(), strides, bias.detach().contiguous().numpy(), *terms, object_mask.numpy(),
            bool(exclude_self))
    threads = min(torch.get_num_threads(), -(-n // min(TILE, n)))
    out = bias.new_empty((batch, n, n, 2 * width))
    y = bias.new_empty((batch,) + (n,) * 3 + (width,) if store else (0, 0, 0))
    stored = y.view(batch, n ** 3, width).numpy() if store else y.numpy()
    if batch >= threads or batch * n ** 3 * width < nlm_kernels.SPLIT_WORK:
        run_split(projected_extrema_kernel, batch, batch * n ** 3 * width, *args, out.numpy(), stored, 0, 1)
    else:  # fewer states than threads: each thread takes every threads-th pair of tiles, into its own out
        parts = np.empty((threads,) + tuple(out.shape), dtype=rows.dtype)
        run_each(projected_extrema_kernel, [(*args, parts[t], stored, t, threads, 0, batch) for t in range(threads)])
        np.maximum.reduce(parts[..., :width], out=out[..., :width].numpy())
        np.minimum.reduce(parts[..., width:], out=out[..., width:].numpy())
    if not store:
        return out.sigmoid_()
    return out.sigmoid_(), y if sums else y.sigmoid_()


def broadcast_sum_sigmoid(bias: torch.Tensor, small: tuple[torch.Tensor | None, ...], object_mask: torch.Tensor,
                          exclude_self: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``permuted_sum_sigmoid(n, None, None, bias, small)`` for output arity 3 and its ``exists_forall`` from one
    pass (see ``broadcast_sum_kernel``): ``([B, N, N, N, out], [B, N, N, 2 out])``. CPU, no gradient."""
    batch, n = object_mask.shape
    width = bias.shape[0]
    terms = _expand_term_arrays(small, bias, batch, n)
    y = bias.new_empty((batch,) + (n,) * 3 + (width,))
    extrema = bias.new_empty((batch, n, n, 2 * width))
    run_split(broadcast_sum_kernel, batch * n, batch * n ** 3 * width, bias.detach().contiguous().numpy(), *terms,
              object_mask.numpy(), bool(exclude_self), y.view(batch, n ** 3, width).numpy(), extrema.numpy())
    return y.sigmoid_(), extrema.sigmoid_()


def permuted_sum_sigmoid(n: int, x: torch.Tensor | None, w: torch.Tensor | None, bias: torch.Tensor,
                         small: tuple[torch.Tensor | None, ...]) -> torch.Tensor:
    """``y = sigmoid(sum_i P_i(x @ w_i^T) + sum_d broadcast_d(s_d) + bias)`` for output arity ``r = len(small)``.

    ``P_i`` permutes the r object axes by the i-th permutation of ``object_permutations(r)`` (as
    ``permute_objects``), ``w = [w_0; w_1; ...]`` is ``[r! * out, C]`` and ``x`` is ``[B, N^r, C]``; ``s_d`` is
    ``[B, N^(r-1), out]`` (the other axes in output order), constant along output axis d. ``x`` (with ``w``) and
    any ``s_d`` may be None. Chunked over the batch: the r!-wide projection exists for one chunk at a time only.
    """
    r = len(small)
    perms = object_permutations(r)
    width = bias.shape[0]
    batch = x.shape[0] if x is not None else next(s for s in small if s is not None).shape[0]
    y = bias.new_empty((batch,) + (n,) * r + (width,))
    per_state = y[:1].numel() * y.element_size() * (len(perms) if x is not None else 1)
    for start, stop in _batch_chunks(batch, per_state):
        out = y[start:stop]
        terms = []
        if x is not None:
            projected = F.linear(x[start:stop], w)
            terms += [permute_objects(projected[..., i * width:(i + 1) * width], perm) for i, perm in enumerate(perms)]
        terms += [s[start:stop].unsqueeze(1 + d) for d, s in enumerate(small) if s is not None]
        # the first two terms added into out in one pass: copying the first (often a broadcast) costs a pass of its own
        if len(terms) > 1:
            torch.add(terms[0], terms[1], out=out)
        else:
            out.copy_(terms[0])
        for term in terms[2:]:
            out.add_(term)
        out.add_(bias).sigmoid_()
    return y


# Training, backward: an arity-2 or -3 output that the next layer only reduces (exists / forall) receives a gradient
# only at the entries that attain an extremum, a few in a hundred (visitall on data/paper: 3.5% of the entries of
# the second layer's arity 3, at the start of training and after 100 steps). The dense route permutes the whole gradient six
# times and multiplies it by the weight; this kernel visits the nonzero entries alone and adds each one's share to
# the six source rows of x (the inverse permutations), to the weight's gradient, to the bias's and to the expand
# terms'. The same products as the dense route, summed in another order: the gradients agree to rounding (the
# weight's and the bias's summed in float64, closer to the exact sums than the dense route's float32). grad, y
# and x are [B, M, C] (M = N^r positions, row-major), ``strides[p, t]`` the stride, in positions of x, of the source
# axis that output axis t reads under permutation p, ``small`` the expand terms' gradients [r, B, N^(r-1), out]
# (filled where ``has_small``), and grad_w / grad_bias this thread's own partial sums.


# The share of nonzero entries below which the sparse backward beats the dense one: it spends 2 r! C_in scalar
# multiply-adds on each nonzero entry where the dense route spends matrix products and r! permuted copies on all.
SPARSE_SHARE = 1 / 8


# A multiple of the block of elements torch's vectorised elementwise loops take at a time (two vectors: 32 float32
# or 16 float64 with AVX-512); the elements past a tensor's last whole block go through a scalar loop.
SIGMOID_BLOCK = 64


def _is_sparse(grad: torch.Tensor) -> bool:
    return int(torch.count_nonzero(grad)) <= grad.numel() * SPARSE_SHARE


def sparse_permuted_backward(n: int, grad: torch.Tensor, y: torch.Tensor, x: torch.Tensor, w: torch.Tensor,
                             needs_small: list[bool], reduced_by: tuple | None = None, sums: bool = False):
    """The gradients ``PermutedSumSigmoid`` returns for x, w, the bias and the expand terms, from the nonzero
    entries of ``grad`` alone (see ``sparse_permuted_backward_kernel``). With ``reduced_by = (object_mask,
    exclude_self)`` grad is that of y's exists / forall instead of y's (``extrema_permuted_backward_kernel``), and
    with ``sums`` y holds the sums before the output's sigmoid, which is then taken at the pairs that kernel reads
    alone (those whose exists / forall have a gradient: a fifth of visitall's pairs). CPU."""
    r = len(needs_small)
    batch = y.shape[0]
    perms = object_permutations(r)
    width = y.shape[-1]
    # output axis t of permutation p reads source axis perm[t]: its stride in x's row-major positions
    strides = np.array([[n ** (r - 1 - axis) for axis in perm] for perm in perms], dtype=np.int64)
    flat = lambda t: t.detach().contiguous().view(batch, math.prod(t.shape[1:-1]), t.shape[-1]).numpy()  # noqa
    grad_x = x.new_empty(x.shape)  # zeroed by the kernel, a state at a time
    small = y.new_empty((r, batch, n ** (r - 1), width))  # zeroed by the kernel, a state at a time
    threads = min(torch.get_num_threads(), batch)
    if grad.numel() < nlm_kernels.SPLIT_WORK:
        threads = 1
    bounds = [batch * t // threads for t in range(threads + 1)]
    # the weight's and the bias's gradients sum a term per nonzero entry (hundreds of thousands): in float64, so that
    # the order of the sum moves nothing at float32's precision
    partial_w = np.zeros((threads,) + tuple(w.shape), dtype=np.float64)
    partial_bias = np.zeros((threads, width), dtype=np.float64)
    one = flat(y).dtype.type(1)
    kernel, reading, outputs = sparse_permuted_backward_kernel, (n,), (flat(y),)
    if reduced_by is not None:
        kernel, reading = extrema_permuted_backward_kernel, (reduced_by[0].numpy(), bool(reduced_by[1]))
        grad = grad.detach().contiguous()
        pairs = grad.view(-1, grad.shape[-1])
        rows = torch.empty(pairs.shape[0], dtype=torch.int64)
        reduced = torch.empty(pairs.shape[0], dtype=torch.int64)
        reduced = reduced[:reduced_pair_rows(pairs.numpy(), rows.numpy(), reduced.numpy())]
        # torch's sigmoid takes the elements past a tensor's last whole block of vectors through a scalar exp, which
        # rounds otherwise: the rows are gathered into a buffer of whole blocks, so that every one of them is
        # rounded as in the whole output (a training batch's output is whole blocks)
        count = len(reduced) * n * width
        buffer = y.new_empty((-(-count // SIGMOID_BLOCK) * SIGMOID_BLOCK,))
        buffer[count:] = 0.0  # the rows fill the rest
        y_rows = buffer[:count].view(len(reduced), n, width)
        torch.index_select(y.detach().reshape(-1, n, width), 0, reduced, out=y_rows)
        if sums:
            buffer.sigmoid_()
        outputs = y_rows.numpy(), rows.numpy()
    args = (flat(grad), *outputs, flat(x), w.detach().contiguous().numpy(), strides, *reading, one,
            np.array(needs_small), flat(grad_x))
    run_each(kernel,
             [(*args, partial_w[t], partial_bias[t], small.numpy(), bounds[t], bounds[t + 1])
               for t in range(threads)])
    grad_small = [small[d].view(y.shape[:1 + d] + y.shape[2 + d:]) if need else None
                  for d, need in enumerate(needs_small)]
    return (grad_x, torch.from_numpy(partial_w.sum(0)).to(w.dtype), torch.from_numpy(partial_bias.sum(0)).to(y.dtype),
            grad_small)


class PermutedSumSigmoid(torch.autograd.Function):
    """:func:`permuted_sum_sigmoid` with a chunked backward (see there for the arguments)."""

    @staticmethod
    def forward(ctx, n: int, x, w, bias, *small):
        ctx.set_materialize_grads(False)
        y = permuted_sum_sigmoid(n, x, w, bias, small)
        ctx.save_for_backward(x, w, y)
        ctx.n, ctx.has_small = n, [s is not None for s in small]
        return y

    @staticmethod
    def backward(ctx, grad):
        x, w, y = ctx.saved_tensors
        if grad is None:
            return (None,) * (4 + len(ctx.has_small))
        width = y.shape[-1]
        perms = object_permutations(len(ctx.has_small))
        inverse = [_inverse_permutation(p) for p in perms]
        need_x, need_w, need_bias = ctx.needs_input_grad[1:4]
        if x is not None and len(perms) > 1 and use_kernels(y) and grad.dtype == y.dtype and _is_sparse(grad):
            grad_x, grad_w, grad_bias, grad_small = sparse_permuted_backward(
                ctx.n, grad, y, x, w, [has and need for has, need in zip(ctx.has_small, ctx.needs_input_grad[4:])])
            return (None, grad_x if need_x else None, grad_w if need_w else None,
                    grad_bias if need_bias else None) + tuple(grad_small)
        grad_x = x.new_empty(x.shape) if x is not None and need_x else None
        grad_w = torch.zeros_like(w) if w is not None and need_w else None
        grad_bias = y.new_zeros(width) if need_bias else None
        grad_small = [y.new_empty(y.shape[:1 + d] + y.shape[2 + d:]) if has and need else None
                      for d, (has, need) in enumerate(zip(ctx.has_small, ctx.needs_input_grad[4:]))]
        per_state = y[:1].numel() * y.element_size() * (len(perms) if x is not None else 1)
        for start, stop in _batch_chunks(y.shape[0], per_state):
            pre = torch.ops.aten.sigmoid_backward(grad[start:stop], y[start:stop])
            if grad_bias is not None:
                grad_bias += pre.sum(dim=tuple(range(pre.dim() - 1)))
            for d, g in enumerate(grad_small):
                if g is not None:
                    torch.sum(pre, dim=1 + d, out=g[start:stop])
            if grad_x is None and grad_w is None:
                continue
            # the gradient of the i-th projection is P_i^{-1}(pre); side by side they are the gradient of x @ w^T
            stacked = pre.new_empty(pre.shape[:-1] + (len(perms) * width,))
            for i, inv in enumerate(inverse):
                stacked[..., i * width:(i + 1) * width] = permute_objects(pre, inv)
            flat = stacked.view(-1, stacked.shape[-1])
            if grad_x is not None:
                torch.matmul(flat, w, out=grad_x[start:stop].view(-1, w.shape[1]))
            if grad_w is not None:
                # as (x^T G)^T: MKL computes G^T x (r! out rows, B N^r long) several times slower
                grad_w += (x[start:stop].reshape(-1, w.shape[1]).t() @ flat).t()
        return (None, grad_x, grad_w, grad_bias) + tuple(grad_small)


class ProjectedExtrema(torch.autograd.Function):
    """Training's ``exists_forall(PermutedSumSigmoid.apply(n, x, w, bias, *small), ...)`` for an arity-3 output
    that the next layer only reduces: forward in one pass (``projected_extrema`` storing y), backward from the
    extrema's gradient straight to the inputs' (``extrema_permuted_backward_kernel``). CPU."""

    @staticmethod
    def forward(ctx, object_mask: torch.Tensor, exclude_self: bool, x, w, bias, *small):
        ctx.set_materialize_grads(False)
        extrema, sums = projected_extrema(x, w, bias, small, object_mask, exclude_self, store=True, sums=True)
        ctx.save_for_backward(x, w, sums, object_mask)
        ctx.exclude_self, ctx.has_small = exclude_self, [s is not None for s in small]
        return extrema

    @staticmethod
    def backward(ctx, grad):
        x, w, y, object_mask = ctx.saved_tensors
        if grad is None:
            return (None,) * (5 + len(ctx.has_small))
        batch, n = object_mask.shape
        width = y.shape[-1]
        has_x, has_w = x is not None, w is not None
        if not has_x:  # expand terms alone: an input of no channels
            x = y.new_zeros((batch, n ** 3, 0))
            w = y.new_zeros((len(object_permutations(3)) * width, 0))
        need_x, need_w, need_bias = ctx.needs_input_grad[2:5]
        needs_small = [has and need for has, need in zip(ctx.has_small, ctx.needs_input_grad[5:])]
        grad_x, grad_w, grad_bias, grad_small = sparse_permuted_backward(
            n, grad, y, x, w, needs_small, (object_mask, ctx.exclude_self), True)
        return (None, None, grad_x if need_x and has_x else None, grad_w if need_w and has_w else None,
                grad_bias if need_bias else None) + tuple(grad_small)


class BroadcastSumExtrema(torch.autograd.Function):
    """Training's ``PermutedSumSigmoid.apply(n, None, None, bias, *small)`` for output arity 3 (broadcast expand
    terms alone) together with its ``exists_forall``: ``(y [B, N, N, N, out], extrema [B, N, N, 2 out])`` from one
    pass forward (``broadcast_sum_sigmoid``), and one pass backward from the gradients of both to the bias's and
    the expand terms' (``broadcast_sum_backward_kernel``), without the extrema's dense gradient, its sum with y's and
    the sigmoid's backward as passes of their own. CPU."""

    @staticmethod
    def forward(ctx, object_mask: torch.Tensor, exclude_self: bool, bias, *small):
        ctx.set_materialize_grads(False)
        y, extrema = broadcast_sum_sigmoid(bias, small, object_mask, exclude_self)
        ctx.save_for_backward(y, object_mask)
        ctx.exclude_self = exclude_self
        return y, extrema

    @staticmethod
    def backward(ctx, grad_y, grad_extrema):
        y, object_mask = ctx.saved_tensors
        if grad_y is None and grad_extrema is None:
            return (None,) * 6
        batch, n = object_mask.shape
        width = y.shape[-1]
        empty = y.new_empty((0, 0, 0))
        grad_y = empty.view(0) if grad_y is None else grad_y.contiguous().view(-1)
        grad_extrema = empty if grad_extrema is None else grad_extrema.contiguous().view(batch, n * n, 2 * width)
        threads = 1 if y.numel() < nlm_kernels.SPLIT_WORK else min(torch.get_num_threads(), batch)
        bounds = [batch * t // threads for t in range(threads + 1)]
        # the bias's gradient sums B N^3 terms: in float64, so that their order moves nothing at float32's precision
        partial_bias = np.zeros((threads, width), dtype=np.float64)
        small = y.new_empty((3, batch, n, n, width))  # zeroed by the kernel, a state at a time
        args = (grad_y.numpy(), grad_extrema.numpy(), y.view(-1).numpy(), object_mask.numpy(),
                bool(ctx.exclude_self), y.numpy().dtype.type(1))
        run_each(broadcast_sum_backward_kernel, [(*args, partial_bias[t], *small.view(3, -1).numpy(), bounds[t],
                                                  bounds[t + 1]) for t in range(threads)])
        grad_bias = torch.from_numpy(partial_bias.sum(0)).to(y.dtype)
        needs = ctx.needs_input_grad
        return (None, None, grad_bias if needs[2] else None) + tuple(
            small[d] if needs[3 + d] else None for d in range(3))
