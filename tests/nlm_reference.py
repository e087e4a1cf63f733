"""The test oracle for the NLM: the straightforward computation the optimised :class:`tnlib.learning.models.NLM`
must equal (see that module's docstring for the two optimisations it checks)."""
from __future__ import annotations

import torch

from tnlib.learning.encodings import NLMInputs
from tnlib.learning.models import NLM, _permutations, _permute_objects


def nlm_reference_forward(model: NLM, inputs: NLMInputs) -> torch.Tensor:
    """The NLM computed the straightforward way (expand, reduce, concatenate, permute, then Linear).

    Uses ``model``'s parameters; it computes exactly the arities the model has Linears for.
    """
    xs = list(inputs.tensors)
    mask = inputs.object_mask
    batch, n = mask.shape
    for layer in model.layers:
        outputs = [None] * len(xs)
        for r in layer.out_arities:
            c_expand, c_same, c_reduce = layer.part_sizes(r)
            parts = []
            if c_expand:
                prev = xs[r - 1].unsqueeze(r)
                parts.append(prev.expand((batch,) + (n,) * r + (prev.shape[-1],)))
            if c_same:
                parts.append(xs[r])
            if c_reduce:
                bigger = xs[r + 1]
                axis = r + 1
                view = (batch,) + (1,) * r + (n, 1)
                valid = mask.view(view).expand(bigger.shape[:-1] + (1,))
                idx = [torch.arange(n).view((1,) * (1 + k) + (n,) + (1,) * (r + 1 - k)) for k in range(r)]
                last = torch.arange(n).view((1,) * (1 + r) + (n, 1))
                for k in range(r):
                    valid = valid & (idx[k] != last)
                exists = torch.where(valid, bigger, torch.zeros_like(bigger)).amax(dim=axis)
                forall = torch.where(valid, bigger, torch.ones_like(bigger)).amin(dim=axis)
                parts += [exists, forall]
            joined = torch.cat(parts, dim=-1)
            permuted = torch.cat([_permute_objects(joined, p) for p in _permutations(r)], dim=-1)
            outputs[r] = torch.sigmoid(layer.linears[str(r)](permuted))
        xs = outputs
    return model.readout(xs[0])
