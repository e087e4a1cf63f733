"""The model code as it was before the speed work (tnlib at commit 0b6930e), kept as the baseline the speed
benchmarks measure against in the same run: the NLM layer's forward (Linear split by parts, the r! permuted
terms summed in one buffer; autograd's masked max / min) and STRIPS-HGN's forward.

``baseline_forward(model)`` swaps these in for one model (instance attributes; the class is untouched) and
``current_forward(model)`` swaps them out again. The functions compute the same function as tnlib's (tested in
tests/learning/test_nlm.py and test_strips_hgn.py against the straightforward references); only their speed
differs.
"""
from __future__ import annotations

import types

import torch
import torch.nn.functional as F

from tnlib.learning.nlm import NLM, NLMLayer
from tnlib.learning.nlm_autograd import object_permutations, permute_objects, reduction_mask
from tnlib.learning.strips_hgn import STRIPSHGN


def exists_forall(x: torch.Tensor, object_mask: torch.Tensor, exclude_self: str) -> torch.Tensor:
    axis = x.dim() - 2
    mask = reduction_mask(object_mask, axis, exclude_self)
    exists = x.masked_fill(~mask, 0.0).amax(dim=axis)
    forall = x.masked_fill(~mask, 1.0).amin(dim=axis)
    return torch.cat([exists, forall], dim=-1)


def nlm_layer_forward(self: NLMLayer, xs: list[torch.Tensor | None], object_mask: torch.Tensor):
    if not self.sigmoid:  # the authors' output layer: a Linear on arity 0, no speed work to undo
        return NLMLayer.forward(self, xs, object_mask)
    batch, n = object_mask.shape
    outputs: list[torch.Tensor | None] = [None] * len(self.in_channels)
    for r in self.out_arities:
        linear = self.linears[str(r)]
        c_expand, c_same, c_reduce = self.part_sizes(r)
        perms = object_permutations(r)
        weight = linear.weight.view(self.width, len(perms), c_expand + c_same + c_reduce)

        def project(x: torch.Tensor, start: int, stop: int) -> tuple[torch.Tensor, ...]:
            w = weight[:, :, start:stop].transpose(0, 1).reshape(len(perms) * self.width, stop - start)
            return F.linear(x, w).unflatten(-1, (len(perms), self.width)).unbind(-2)

        local = expanded = None
        if c_same + c_reduce:
            pieces = ([xs[r]] if c_same else []) + ([exists_forall(xs[r + 1], object_mask, self.exclude_self)] if c_reduce else [])
            local = project(torch.cat(pieces, dim=-1) if len(pieces) > 1 else pieces[0],
                            c_expand, c_expand + c_same + c_reduce)
        if c_expand:
            expanded = [t.unsqueeze(r) for t in project(xs[r - 1], 0, c_expand)]
        shape = (batch,) + (n,) * r + (self.width,)
        total = None
        for i, perm in enumerate(perms):
            if local is not None and expanded is not None:
                term = local[i] + expanded[i]
            else:
                term = (local if local is not None else expanded)[i].expand(shape)
            term = permute_objects(term, perm)
            if total is None:
                total = term if len(perms) == 1 else term.clone(memory_format=torch.contiguous_format)
            else:
                total.add_(term)
        outputs[r] = torch.sigmoid(total + linear.bias)
    return outputs


def _sum_into(values: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    out = values.new_zeros((size,) + values.shape[1:])
    return out.index_add_(0, index, values)


def _mean_into(values: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    count = torch.bincount(index, minlength=size).clamp_(min=1).to(values.dtype)
    return _sum_into(values, index, size) / count.unsqueeze(-1)


def hgn_forward(self: STRIPSHGN, g) -> torch.Tensor:
    num_nodes, num_edges = g.node_features.shape[0], g.edge_features.shape[0]
    node_encoded = torch.relu(self.node_encoder(g.node_features))
    edge_encoded = torch.relu(self.edge_encoder(g.edge_features))
    node, edge = torch.zeros_like(node_encoded), torch.zeros_like(edge_encoded)
    glob = node_encoded.new_zeros((g.num_graphs, self.hidden))
    for _ in range(self.steps):
        node_in = torch.cat([node_encoded, node], dim=-1)
        edge_in = torch.cat([edge_encoded, edge], dim=-1)
        from_senders = _mean_into(self.edge_from_senders(node_in)[g.pre_node], g.pre_edge, num_edges)
        from_receivers = _mean_into(self.edge_from_receivers(node_in)[g.add_node], g.add_edge, num_edges)
        edge = torch.relu(self.edge_self(edge_in) + from_senders + from_receivers
                          + self.edge_from_global(glob)[g.edge_graph])
        from_adders = _mean_into(self.node_from_adders(edge)[g.add_edge], g.add_node, num_nodes)
        from_users = _mean_into(self.node_from_users(edge)[g.pre_edge], g.pre_node, num_nodes)
        node = torch.relu(self.node_self(node_in) + from_adders + from_users
                          + self.node_from_global(glob)[g.node_graph])
        glob = torch.relu(self.global_self(glob)
                          + _sum_into(self.global_from_nodes(node), g.node_graph, g.num_graphs)
                          + _sum_into(self.global_from_edges(edge), g.edge_graph, g.num_graphs))
    return self.readout(glob)


def baseline_forward(model: torch.nn.Module) -> torch.nn.Module:
    """Make ``model`` (an NLM or STRIPS-HGN's means layout; anything else is left alone) compute the baseline
    way."""
    if isinstance(model, NLM):
        for layer in model.layers:
            layer.forward = types.MethodType(nlm_layer_forward, layer)
    elif isinstance(model, STRIPSHGN) and model.layout == "means":
        model.forward = types.MethodType(hgn_forward, model)
    return model


def current_forward(model: torch.nn.Module) -> torch.nn.Module:
    """Undo :func:`baseline_forward`."""
    for module in model.modules():
        module.__dict__.pop("forward", None)
    return model
