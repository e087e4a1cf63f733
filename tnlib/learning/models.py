"""The paper's three models: Neural Logic Machine, STRIPS-HGN and linear regression.

Each maps a batch of encoded inputs (:mod:`tnlib.learning.encodings`) to ``raw [B, 2]``: an unconstrained output for mu
and one for sigma, which :class:`tnlib.learning.heads.DistributionHead` turns into a distribution.

NLM (Dong et al. 2019), as configured in the paper's appendix: breadth 3, depth 5, 8 predicates per arity per
layer, each arity's MLP a single Linear + sigmoid. Layer k computes, for every arity r, the concatenation of

* ``expand`` of arity r-1 (copy along a new last object axis),
* arity r itself,
* ``exists`` and ``forall`` of arity r+1 over its last object axis (max / min over the real objects other than
  the kept ones: padded objects and, as in the original NLM, self-references are excluded),

over all r! permutations of the r object axes, then Linear + sigmoid. The readout is a Linear from the last
layer's 8 nullary predicates to the two raw outputs (no sigmoid: mu must reach the scale of h*).

Two optimisations from the shared spec keep the function exactly the same (tested against
``nlm_reference_forward`` in tests/nlm_reference.py, in float64):

* the Linear is applied *before* expanding and permuting: Linear acts on channels and commutes with both, so each
  part is multiplied by its weight slices for all r! permutations at once on the narrow, unexpanded tensor, and
  only the 8-channel results are permuted and summed;
* arities that cannot reach the output are not computed (with depth 5 and breadth 3: arity 3 only in layers 1-2,
  arity 2 in layers 1-3, ...).

STRIPS-HGN (Shen et al. 2020), encode-process-decode on the delete-relaxed hypergraph with hidden size 32 and 4
recurrent steps. Each step updates hyperedges from their own state, the sums over their preconditions (senders)
and add effects (receivers), and the global state; then facts from themselves, the sums over the hyperedges that
add them and that need them, and the global state; then the global state from sums over facts and hyperedges.
(STRIPS-HGN passes fact-to-action messages along preconditions only and concatenates a fixed maximum number of
senders; tnlib averages messages, so graphs of any size batch together and activations do not grow with the
degrees over the recurrent steps, and also lets facts hear the actions that need them. The global state sums
over facts and hyperedges, so it can grow with the instance like h* does.) Sums and means are linear, so every
Linear is applied to node/edge features *before* they are gathered and scattered (``index_add``), which moves
32-wide instead of 64-wide rows. The readout is a Linear from the final global state.

Linear regression: ``nn.Linear(4, 2)`` on the four features.
"""
from __future__ import annotations

import itertools
import math
from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import nn

from tnlib.learning.encodings import HGNInputs, NLMInputs


# ---------------------------------------------------------------------------------------------------------------
# NLM


def nlm_output_arities(depth: int, breadth: int, prune: bool = True) -> list[list[int]]:
    """The arities each layer computes: all of 0..breadth, or (pruned) those that can still reach arity 0.

    Layer k's arity r feeds layer k+1's arities r-1, r, r+1, so it matters iff r <= depth - k; the last layer only
    produces arity 0.
    """
    arities = []
    for k in range(1, depth + 1):
        top = min(breadth, depth - k) if prune else (0 if k == depth else breadth)
        arities.append(list(range(top + 1)))
    return arities


@lru_cache(maxsize=None)
def _permutations(r: int) -> tuple[tuple[int, ...], ...]:
    return tuple(itertools.permutations(range(r)))


def _permute_objects(x: torch.Tensor, perm: tuple[int, ...]) -> torch.Tensor:
    """Permute the r object axes of ``x [B, N^r, C]`` (identity for r <= 1)."""
    if len(perm) <= 1:
        return x
    return x.permute(0, *[1 + p for p in perm], x.dim() - 1)


_DISTINCT_CACHE: dict[tuple[int, int, str], torch.Tensor] = {}


def _reduction_mask(object_mask: torch.Tensor, r_plus_1: int) -> torch.Tensor:
    """Bool ``[B, N^(r+1), 1]``: entries a reduction over the last axis may use (real, not equal to a kept index)."""
    batch, n = object_mask.shape
    view = (batch,) + (1,) * (r_plus_1 - 1) + (n, 1)
    mask = object_mask.view(view)
    if r_plus_1 > 1:
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


def _exists_forall(x: torch.Tensor, object_mask: torch.Tensor) -> torch.Tensor:
    """``[B, N^(r+1), C] -> [B, N^r, 2C]``: max and min over the last object axis, restricted by the mask.

    Values lie in [0, 1] (inputs are 0/1, hidden predicates sigmoids), so excluded entries become 0 for the max
    and 1 for the min: they never win, and an empty range gives exists = 0, forall = 1.
    """
    axis = x.dim() - 2
    mask = _reduction_mask(object_mask, axis)
    exists = x.masked_fill(~mask, 0.0).amax(dim=axis)
    forall = x.masked_fill(~mask, 1.0).amin(dim=axis)
    return torch.cat([exists, forall], dim=-1)


class NLMLayer(nn.Module):
    """One NLM layer: for each output arity r, Linear + sigmoid over [expand r-1, r, exists/forall r+1] x r!.

    ``linears[str(r)].weight`` is laid out ``[out, r! * (C_{r-1} + C_r + 2 C_{r+1})]``: permutation-major (in
    ``itertools.permutations`` order), then the parts in the order expand, self, exists, forall.
    """

    def __init__(self, in_channels: list[int], out_arities: list[int], width: int):
        super().__init__()
        self.in_channels = list(in_channels)
        self.out_arities = list(out_arities)
        self.width = width
        self.linears = nn.ModuleDict()
        for r in out_arities:
            parts = self.part_sizes(r)
            self.linears[str(r)] = nn.Linear(math.factorial(r) * sum(parts), width)

    def part_sizes(self, r: int) -> tuple[int, int, int]:
        """Channels of (expand from r-1, self r, exists+forall from r+1) feeding output arity r."""
        c = self.in_channels
        expand = c[r - 1] if r >= 1 else 0
        same = c[r] if r < len(c) else 0
        reduce = 2 * c[r + 1] if r + 1 < len(c) else 0
        return expand, same, reduce

    def forward(self, xs: list[torch.Tensor | None], object_mask: torch.Tensor) -> list[torch.Tensor | None]:
        batch, n = object_mask.shape
        outputs: list[torch.Tensor | None] = [None] * len(self.in_channels)
        for r in self.out_arities:
            linear = self.linears[str(r)]
            c_expand, c_same, c_reduce = self.part_sizes(r)
            perms = _permutations(r)
            # weight [out, r!, C_in] -> per part [r! * out, c]: one matmul gives every permutation's contribution
            weight = linear.weight.view(self.width, len(perms), c_expand + c_same + c_reduce)

            def project(x: torch.Tensor, start: int, stop: int) -> tuple[torch.Tensor, ...]:
                w = weight[:, :, start:stop].transpose(0, 1).reshape(len(perms) * self.width, stop - start)
                # unbind (not indexing) so the backward stacks once instead of scattering into zeros r! times
                return F.linear(x, w).unflatten(-1, (len(perms), self.width)).unbind(-2)

            local = expanded = None  # per permutation: [B, N^r, out] and [B, N^(r-1), 1, out]
            if c_same + c_reduce:
                pieces = ([xs[r]] if c_same else []) + ([_exists_forall(xs[r + 1], object_mask)] if c_reduce else [])
                local = project(torch.cat(pieces, dim=-1) if len(pieces) > 1 else pieces[0],
                                c_expand, c_expand + c_same + c_reduce)
            if c_expand:
                expanded = [t.unsqueeze(r) for t in project(xs[r - 1], 0, c_expand)]  # new last object axis
            shape = (batch,) + (n,) * r + (self.width,)
            total = None
            for i, perm in enumerate(perms):
                if local is not None and expanded is not None:
                    term = local[i] + expanded[i]
                else:
                    term = (local if local is not None else expanded)[i].expand(shape)
                term = _permute_objects(term, perm)
                # one contiguous buffer, summed in place: the next layer's matmul reads it without a copy, and
                # r! - 1 tensors of the biggest size are never allocated
                if total is None:
                    total = term if len(perms) == 1 else term.clone(memory_format=torch.contiguous_format)
                else:
                    total.add_(term)
            outputs[r] = torch.sigmoid(total + linear.bias)
        return outputs


class NLM(nn.Module):
    """Neural Logic Machine over object tensors (``NLMInputs``) -> raw ``[B, 2]``."""

    def __init__(self, input_channels: list[int], breadth: int = 3, depth: int = 5, width: int = 8,
                 prune: bool = True):
        super().__init__()
        if depth < 1 or breadth < 0 or width < 1:
            raise ValueError(f"NLM needs depth >= 1, breadth >= 0 and width >= 1 (got {depth}, {breadth}, {width})")
        channels = list(input_channels) + [0] * (breadth + 1 - len(input_channels))
        if len(channels) != breadth + 1:
            raise ValueError(f"input has arities up to {len(input_channels) - 1}, more than the breadth {breadth}")
        self.input_channels, self.breadth, self.depth, self.width = channels, breadth, depth, width
        self.layers = nn.ModuleList()
        for out_arities in nlm_output_arities(depth, breadth, prune):
            self.layers.append(NLMLayer(channels, out_arities, width))
            channels = [width if r in out_arities else 0 for r in range(breadth + 1)]
        self.readout = nn.Linear(width, 2)
        self.reset_parameters()

    # Glorot and Bengio's gain for sigmoid units (4: sigmoid'(0) = 1/4). With PyTorch's default init the
    # difference between two states shrinks ~20x per layer through the sigmoids and max/min reductions (outputs
    # differ by ~1e-8 after five layers), and a few hundred steps leave the model a constant; with this gain it
    # learns at once (data/small blocksworld, fixed/none, 300 steps: validation MSE 15.2 -> 5.2). The paper does
    # not specify an initialisation.
    SIGMOID_GAIN = 4.0

    def reset_parameters(self) -> None:
        for layer in self.layers:
            for linear in layer.linears.values():
                nn.init.xavier_uniform_(linear.weight, gain=self.SIGMOID_GAIN)
                nn.init.zeros_(linear.bias)

    def forward(self, inputs: NLMInputs) -> torch.Tensor:
        xs: list[torch.Tensor | None] = list(inputs.tensors)
        for layer in self.layers:
            xs = layer(xs, inputs.object_mask)
        return self.readout(xs[0])


# ---------------------------------------------------------------------------------------------------------------
# STRIPS-HGN


def _sum_into(values: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """``out[i] = sum of values[j] with index[j] == i`` for i < size."""
    out = values.new_zeros((size,) + values.shape[1:])
    return out.index_add_(0, index, values)


def _mean_into(values: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """``out[i] = mean of values[j] with index[j] == i`` (0 where there is none)."""
    count = torch.bincount(index, minlength=size).clamp_(min=1).to(values.dtype)
    return _sum_into(values, index, size) / count.unsqueeze(-1)


class STRIPSHGN(nn.Module):
    """STRIPS-HGN on batched delete-relaxed hypergraphs (``HGNInputs``) -> raw ``[B, 2]``."""

    def __init__(self, hidden: int = 32, steps: int = 4, node_features: int = 2, edge_features: int = 3):
        super().__init__()
        if hidden < 1 or steps < 1:
            raise ValueError(f"STRIPS-HGN needs hidden >= 1 and steps >= 1 (got {hidden}, {steps})")
        self.hidden, self.steps = hidden, steps
        h = hidden
        self.node_encoder = nn.Linear(node_features, h)
        self.edge_encoder = nn.Linear(edge_features, h)
        # Each step's inputs are [encoded, latent] (2h) for nodes and edges, the latent global (h).
        # Edge update from: itself (2h), sum of senders (2h), sum of receivers (2h), global (h).
        self.edge_self = nn.Linear(2 * h, h)
        self.edge_from_senders = nn.Linear(2 * h, h, bias=False)
        self.edge_from_receivers = nn.Linear(2 * h, h, bias=False)
        self.edge_from_global = nn.Linear(h, h, bias=False)
        # Node update from: itself (2h), sum of edges adding it (h), sum of edges needing it (h), global (h).
        self.node_self = nn.Linear(2 * h, h)
        self.node_from_adders = nn.Linear(h, h, bias=False)
        self.node_from_users = nn.Linear(h, h, bias=False)
        self.node_from_global = nn.Linear(h, h, bias=False)
        # Global update from: itself (h), sum of nodes (h), sum of edges (h).
        self.global_self = nn.Linear(h, h)
        self.global_from_nodes = nn.Linear(h, h, bias=False)
        self.global_from_edges = nn.Linear(h, h, bias=False)
        self.readout = nn.Linear(h, 2)

    def forward(self, g: HGNInputs) -> torch.Tensor:
        num_nodes, num_edges = g.node_features.shape[0], g.edge_features.shape[0]
        node_encoded = torch.relu(self.node_encoder(g.node_features))
        edge_encoded = torch.relu(self.edge_encoder(g.edge_features))
        node, edge = torch.zeros_like(node_encoded), torch.zeros_like(edge_encoded)
        glob = node_encoded.new_zeros((g.num_graphs, self.hidden))
        for _ in range(self.steps):
            node_in = torch.cat([node_encoded, node], dim=-1)
            edge_in = torch.cat([edge_encoded, edge], dim=-1)
            # project first, then gather and sum (sums commute with the Linear)
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


# ---------------------------------------------------------------------------------------------------------------
# Linear regression


class LinearRegression(nn.Module):
    """``raw = W x + b`` on the four features (goal count, h_FF, total and mean ignored deletes)."""

    def __init__(self, num_features: int = 4):
        super().__init__()
        self.linear = nn.Linear(num_features, 2)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.linear(features)


MODELS = {"nlm": NLM, "hgn": STRIPSHGN, "linear": LinearRegression}
DEFAULT_LEARNING_RATES = {"nlm": 1e-2, "hgn": 1e-3, "linear": 1e-2}  # the paper's


def build_model(name: str, **kwargs) -> nn.Module:
    """A model by name (``nlm``, ``hgn``, ``linear``) with its constructor arguments."""
    try:
        cls = MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r} (choose from {', '.join(MODELS)})") from None
    return cls(**kwargs)
