"""The test oracle for the NLM: the straightforward computation the optimised :class:`tnlib.learning.nlm.NLM`
must equal, in both layouts and every ``exclude_self``, written from the definitions (the authors' NLMCarlosV2 for
"authors"), not from the model's code: it takes only the model's parameters and its settings.

A layer, for every output arity r: concatenate expand(arity r-1) (copied along a new last object axis), arity r,
and exists / forall (max / min) of arity r+1 over its last object axis; concatenate that over the r! permutations of
the r object axes (``itertools.permutations`` order); apply the layer's Linear, then a sigmoid (every layer of
"paper-text"; all but the output layer of "authors"). A reduction ranges over the real objects; with
``exclude_self`` it skips, as the authors' code does, every entry whose object arguments are not all different
(kept ones included; tnlib skips only the reduced objects equal to a kept one, which gives the same output).
Excluded entries count as 0 for the max and 1 for the min (what the authors' code gets by multiplying them by
the 0/1 mask).
"""
from __future__ import annotations

import itertools

import torch

from tnlib.learning.encodings import NLMInputs


def _usable(mask: torch.Tensor, r: int, exclude_self: bool, kept_repeats: bool = True) -> torch.Tensor:
    """Bool ``[B, N^(r+1), 1]``: may the reduction of arity r+1 to r use this entry. ``kept_repeats=False``: with
    ``exclude_self``, skip only the entries whose reduced object equals a kept one (tnlib's rule)."""
    batch, n = mask.shape
    index = [torch.arange(n).view((1,) * (1 + k) + (n,) + (1,) * (r + 1 - k)) for k in range(r + 1)]
    usable = mask.view((batch,) + (1,) * r + (n, 1)).expand((batch,) + (n,) * (r + 1) + (1,))
    for a in range(r + 1):
        for b in range(a):
            if exclude_self and (kept_repeats or a == r):
                usable = usable & (index[a] != index[b])
    return usable


def _layer(xs, mask, linears, exclude_self: bool, sigmoid: bool):
    batch, n = mask.shape
    outputs = [None] * len(xs)
    for key, linear in linears.items():
        r = int(key)
        parts = []
        if r >= 1 and r - 1 < len(xs) and xs[r - 1] is not None:
            prev = xs[r - 1].unsqueeze(r)
            parts.append(prev.expand((batch,) + (n,) * r + (prev.shape[-1],)))
        if r < len(xs) and xs[r] is not None:
            parts.append(xs[r])
        if r + 1 < len(xs) and xs[r + 1] is not None:
            bigger = xs[r + 1]
            usable = _usable(mask, r, exclude_self)
            parts.append(torch.where(usable, bigger, torch.zeros_like(bigger)).amax(dim=r + 1))
            parts.append(torch.where(usable, bigger, torch.ones_like(bigger)).amin(dim=r + 1))
        joined = torch.cat(parts, dim=-1)
        permuted = torch.cat([joined.permute(0, *[1 + p for p in perm], joined.dim() - 1)
                              for perm in itertools.permutations(range(r))], dim=-1)
        out = permuted @ linear.weight.t() + linear.bias
        outputs[r] = torch.sigmoid(out) if sigmoid else out
    return outputs


def nlm_reference_forward(model, inputs: NLMInputs) -> torch.Tensor:
    """The NLM computed the straightforward way, with ``model``'s parameters, ``layout`` and ``exclude_self``.

    It computes exactly the arities the model has Linears for; an input arity without channels is absent.
    """
    xs = [t if t.shape[-1] else None for t in inputs.tensors]
    xs += [None] * (model.breadth + 1 - len(xs))
    mask = inputs.object_mask
    for layer in model.layers:
        xs = _layer(xs, mask, layer.linears, model.exclude_self, sigmoid=True)
    if model.layout == "authors":
        assert model.readout is None and list(model.output_layer.linears) == ["0"]
        return _layer(xs, mask, model.output_layer.linears, model.exclude_self, sigmoid=False)[0]
    assert model.layout == "paper-text" and model.output_layer is None
    return xs[0] @ model.readout.weight.t() + model.readout.bias
