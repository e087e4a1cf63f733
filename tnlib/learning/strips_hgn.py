"""STRIPS-HGN, the hypergraph network of the delete relaxation.

STRIPS-HGN (Shen et al. 2020): encode-process-decode on the delete-relaxed hypergraph (facts as nodes, actions as
hyperedges from their preconditions, the senders, to their add effects, the receivers), hidden size 32 and the
paper's 4 recurrent steps. Two layouts (``STRIPSHGN(layout=...)``, ``HGN_LAYOUTS``):

- "authors" (the default): the network of the paper's authors' code (their STRIPS-HGN fork's hypergraph_nets
  EncodeProcessDecode), see :class:`AuthorsHGNCore`. Edges read their senders and receivers in fixed slots,
  facts sum the actions that add them, and the global state -- the graph's fact and action counts, encoded --
  is updated from sums over facts and actions but never sent back to them.
- "means": a lighter network (one Linear + ReLU per block) that averages messages, lets facts also hear the
  actions that need them, and sends the global state back to every fact and action in every step. That feedback
  makes its output grow with the instance's size at about a power of the number of steps (untrained, seeds 0 and
  1, the median |mu| over 16 visitall states: 68-179 on 3x3 grids and 1.1e4-1.5e4 on 5x5, against 0.06-0.18 on
  both for "authors"), and it does not generalise to larger instances: trained on data/paper's visitall without
  the residual it validates at MSE .3 and tests at 34 and 537 (two seeds) on the larger test grids, where
  "authors" tests at .4 as the paper's appendix reports (reports/converged/README.md, STRIPS-HGN).

In both, sums and means are linear, so Linears are applied to node and edge features *before* they are
aggregated; the aggregations are products with constant sparse matrices (built once per batch, their transposes
give the backward; CSR on the CPU, sorted segments on CUDA, see :class:`_SortedSegments`), and the encoded half of
each ``[encoded, latent]`` input is projected once for all steps.
"""
from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch import nn

from tnlib.learning.encodings import HGNInputs



class _ConstantSparseProduct(torch.autograd.Function):
    """``matrix @ x`` for a constant sparse ``matrix``, whose transpose the caller supplies for the backward."""

    @staticmethod
    def forward(ctx, matrix: torch.Tensor, transposed: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        ctx.transposed = transposed
        return matrix @ x

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return None, None, ctx.transposed @ grad


class _SortedSegments:
    """A constant sparse matrix as its nonzeros in row order: ``self @ x`` gathers the rows of ``x`` the nonzeros
    name, scales them and sums each row's run with ``torch.segment_reduce``, one row at a time in a fixed order.
    On CUDA this replaces the CSR product, whose cuSPARSE kernel is not bitwise reproducible (STRIPS-HGN trained
    twice with one seed on an H100 ended with different weights); padding every row to the longest instead (the
    ELL layout) was reproducible but up to 6x slower, a fact such as (handempty) being in hundreds of actions."""

    def __init__(self, crow: torch.Tensor, cols: torch.Tensor, values: torch.Tensor):
        self.offsets, self.columns, self.values = crow, cols, values.unsqueeze(-1)

    def __matmul__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.segment_reduce(x[self.columns] * self.values, "sum", offsets=self.offsets, axis=0,
                                    unsafe=True)


def _sorted_segments_on(device: torch.device) -> bool:
    """Whether constant sparse products on ``device`` use :class:`_SortedSegments` (all but the CPU, where CSR is
    faster and bitwise reproducible)."""
    return device.type != "cpu"


def _sparse_csr(rows: torch.Tensor, cols: torch.Tensor, values: torch.Tensor, shape: tuple[int, int]):
    """The sparse ``shape`` matrix with ``values`` at ``(rows, cols)`` (repeated positions add up), in CSR form on
    the CPU and as :class:`_SortedSegments` on other devices."""
    key = rows * shape[1] + cols
    if key.numel() > 1 and not bool((key[1:] >= key[:-1]).all()):  # batches list incidences sorted already
        order = torch.argsort(key, stable=True)
        cols, values = cols[order], values[order]
    crow = torch.zeros(shape[0] + 1, dtype=torch.int64, device=rows.device)
    torch.cumsum(torch.bincount(rows, minlength=shape[0]), dim=0, out=crow[1:])
    if _sorted_segments_on(rows.device):
        return _SortedSegments(crow, cols, values)
    with warnings.catch_warnings():  # "sparse CSR support is in beta": matrix products are all we use
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(crow, cols, values, shape)


class _Membership:
    """Which graph each row (node or edge) belongs to, as sparse matrices: ``sum(x)`` adds the rows of each graph
    ([G, R] @ x) and ``spread(y)`` gives every row its graph's row of y ([R, G] @ y); each is the other's
    backward. Sparse products instead of ``index_add_`` into G rows, which is slow with many rows per graph."""

    def __init__(self, graph: torch.Tensor, num_graphs: int, dtype):
        rows = torch.arange(graph.numel(), device=graph.device)
        ones = torch.ones(graph.numel(), dtype=dtype, device=graph.device)
        self.summing = _sparse_csr(graph, rows, ones, (num_graphs, graph.numel()))
        self.spreading = _sparse_csr(rows, graph, ones, (graph.numel(), num_graphs))

    def sum(self, x: torch.Tensor) -> torch.Tensor:
        return _ConstantSparseProduct.apply(self.summing, self.spreading, x.contiguous())

    def spread(self, y: torch.Tensor) -> torch.Tensor:
        return _ConstantSparseProduct.apply(self.spreading, self.summing, y.contiguous())


class _IncidenceMeans:
    """The two means along one incidence list ``(edge[j], node[j])`` as sparse matrices: ``by_edge @ x`` is, for
    every edge, the mean of ``x`` over its nodes ([E, N]); ``by_node @ y`` for every node the mean of ``y`` over
    its edges ([N, E]). One sparse product replaces a gather and a scatter (and their backward, the same
    products with the transposed matrices). Built once per forward pass, shared by the message-passing steps."""

    def __init__(self, edge: torch.Tensor, node: torch.Tensor, num_edges: int, num_nodes: int, dtype):
        per_edge = 1.0 / torch.bincount(edge, minlength=num_edges).clamp_(min=1).to(dtype)
        per_node = 1.0 / torch.bincount(node, minlength=num_nodes).clamp_(min=1).to(dtype)
        self.by_edge = _sparse_csr(edge, node, per_edge[edge], (num_edges, num_nodes))
        self.by_edge_t = _sparse_csr(node, edge, per_edge[edge], (num_nodes, num_edges))
        self.by_node = _sparse_csr(node, edge, per_node[node], (num_nodes, num_edges))
        self.by_node_t = _sparse_csr(edge, node, per_node[node], (num_edges, num_nodes))

    def edge_mean(self, x: torch.Tensor) -> torch.Tensor:
        return _ConstantSparseProduct.apply(self.by_edge, self.by_edge_t, x.contiguous())

    def node_mean(self, y: torch.Tensor) -> torch.Tensor:
        return _ConstantSparseProduct.apply(self.by_node, self.by_node_t, y.contiguous())


HGN_LAYOUTS = ("authors", "means")  # see the module docstring


class STRIPSHGN(nn.Module):
    """STRIPS-HGN on batched delete-relaxed hypergraphs (``HGNInputs``) -> raw ``[B, 2]``; ``layout`` see the
    module docstring."""

    ARG_CHOICES = {"layout": HGN_LAYOUTS}
    # a checkpoint that records no layout holds a "means" model, whatever the default
    RECORDED_BEFORE = {"layout": "means"}

    def __init__(self, hidden: int = 32, steps: int = 4, node_features: int = 2, edge_features: int = 3,
                 layout: str = "authors"):
        super().__init__()
        if hidden < 1 or steps < 1:
            raise ValueError(f"STRIPS-HGN needs hidden >= 1 and steps >= 1 (got {hidden}, {steps})")
        if layout not in HGN_LAYOUTS:
            raise ValueError(f"STRIPS-HGN's layout must be one of {', '.join(HGN_LAYOUTS)}, got {layout!r}")
        self.hidden, self.steps, self.layout = hidden, steps, layout
        if layout == "authors":
            self.authors = AuthorsHGNCore(hidden, steps, node_features, edge_features)
            return
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
        if self.layout == "authors":
            return self.authors(g)
        h = self.hidden
        num_nodes, num_edges = g.node_features.shape[0], g.edge_features.shape[0]
        dtype = g.node_features.dtype
        senders = _IncidenceMeans(g.pre_edge, g.pre_node, num_edges, num_nodes, dtype)  # preconditions
        receivers = _IncidenceMeans(g.add_edge, g.add_node, num_edges, num_nodes, dtype)  # add effects
        node_graphs = _Membership(g.node_graph, g.num_graphs, dtype)
        edge_graphs = _Membership(g.edge_graph, g.num_graphs, dtype)
        node_encoded = torch.relu(self.node_encoder(g.node_features))
        edge_encoded = torch.relu(self.edge_encoder(g.edge_features))

        def encoded_part(linear: nn.Linear) -> torch.Tensor:
            return linear.weight[:, :h]

        def latent_part(linear: nn.Linear) -> torch.Tensor:
            return linear.weight[:, h:]

        # Every Linear on [encoded, latent] is split by those halves: the encoded half is projected once for all
        # steps, and the latent half (zero in the first step) once per step, for the three Linears reading the
        # node state at once. Sums and means are linear, so features are projected before they are aggregated.
        node_readers = (self.edge_from_senders, self.edge_from_receivers, self.node_self)
        node_bias = torch.cat([self.node_self.bias.new_zeros(2 * h), self.node_self.bias])
        node_constant = F.linear(node_encoded, torch.cat([encoded_part(m) for m in node_readers]), node_bias)
        node_latent = torch.cat([latent_part(m) for m in node_readers])
        edge_constant = F.linear(edge_encoded, encoded_part(self.edge_self), self.edge_self.bias)
        edge_readers = torch.cat([self.node_from_adders.weight, self.node_from_users.weight,
                                  self.global_from_edges.weight])
        node = edge = glob = None
        for _ in range(self.steps):
            projected = node_constant if node is None else node_constant + F.linear(node, node_latent)
            to_senders, to_receivers, node_self = projected.split(h, dim=1)
            edge_sum = edge_constant if edge is None else edge_constant + F.linear(edge, latent_part(self.edge_self))
            edge_sum = edge_sum + senders.edge_mean(to_senders) + receivers.edge_mean(to_receivers)
            if glob is not None:
                edge_sum = edge_sum + edge_graphs.spread(self.edge_from_global(glob))
            edge = torch.relu(edge_sum)
            to_adders, to_users, to_global = F.linear(edge, edge_readers).split(h, dim=1)
            node_sum = node_self + receivers.node_mean(to_adders) + senders.node_mean(to_users)
            if glob is not None:
                node_sum = node_sum + node_graphs.spread(self.node_from_global(glob))
            node = torch.relu(node_sum)
            glob_sum = (self.global_self(glob) if glob is not None else
                        self.global_self.bias.expand(g.num_graphs, h))
            glob = torch.relu(glob_sum + node_graphs.sum(self.global_from_nodes(node)) + edge_graphs.sum(to_global))
        return self.readout(glob)


def _two_layer_mlp(inputs: int, hidden: int) -> nn.Sequential:
    """The block function of the authors' STRIPS-HGN: Linear, LeakyReLU, Linear, LeakyReLU."""
    return nn.Sequential(nn.Linear(inputs, hidden), nn.LeakyReLU(), nn.Linear(hidden, hidden), nn.LeakyReLU())


def _slot_selection(edge: torch.Tensor, node: torch.Tensor, num_edges: int, num_nodes: int, width: int, offset: int,
                    slots: int, role: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The (row, column) positions that put each edge's nodes in its slots ``offset .. offset + width - 1``: the
    column of node ``n`` in slot ``k`` is ``n * slots + k``, a row of the nodes' per-slot projections. An edge's
    nodes take its slots in ascending index (the facts' name order, as the authors' code sorts atoms); slots left
    empty select nothing (the authors' zero padding). A ValueError if an edge has more nodes than ``width``."""
    order = torch.argsort(edge * (num_nodes + 1) + node, stable=True)
    edge, node = edge[order], node[order]
    counts = torch.bincount(edge, minlength=num_edges)
    if counts.numel() and int(counts.max()) > width:
        raise ValueError(f"the authors' STRIPS-HGN takes at most {width} {role} per action; an action here has "
                         f"{int(counts.max())}")
    starts = torch.cumsum(counts, 0) - counts
    slot = torch.arange(edge.numel(), device=edge.device) - starts[edge]
    return edge, node * slots + offset + slot


class AuthorsHGNCore(nn.Module):
    """The STRIPS-HGN of the authors' code (IBM/pddlsl on their STRIPS-HGN fork, hypergraph_nets'
    EncodeProcessDecode): ``STRIPSHGN``'s "authors" layout. Every block is a two-layer MLP with LeakyReLU. The
    encoder maps edges ``[cost, #pre, #add]``, nodes ``[in state, in goal]`` and the graph's global input
    ``[#nodes, #edges]`` (raw counts, as theirs) to ``hidden``. Each core step reads ``[encoded, latent]``: an
    edge concatenates itself with its add effects' and preconditions' node vectors in fixed slots (at most
    ``RECEIVER_SLOTS`` and ``SENDER_SLOTS``, sorted by fact, zero-padded); a node concatenates the sum over the
    edges that add it with itself; the global concatenates the sums over edges and nodes with itself. The
    decoder is an MLP on the final global, then a Linear to the two outputs. Not theirs: the number of steps
    (``steps``, the paper's 4; their default is 3)."""

    RECEIVER_SLOTS, SENDER_SLOTS = 3, 7  # their --max-num-add-effects and --max-num-preconditions

    def __init__(self, hidden: int, steps: int, node_features: int, edge_features: int):
        super().__init__()
        h, self.hidden, self.steps = hidden, hidden, steps
        self.edge_encoder = _two_layer_mlp(edge_features, h)
        self.node_encoder = _two_layer_mlp(node_features, h)
        self.global_encoder = _two_layer_mlp(2, h)
        self.edge_block = _two_layer_mlp(2 * h * (1 + self.RECEIVER_SLOTS + self.SENDER_SLOTS), h)
        self.node_block = _two_layer_mlp(h + 2 * h, h)
        self.global_block = _two_layer_mlp(2 * h + 2 * h, h)
        self.global_decoder = _two_layer_mlp(h, h)
        self.readout = nn.Linear(h, 2)

    def forward(self, g: HGNInputs) -> torch.Tensor:
        h, num_nodes, num_edges = self.hidden, g.node_features.shape[0], g.edge_features.shape[0]
        dtype, slots = g.node_features.dtype, self.RECEIVER_SLOTS + self.SENDER_SLOTS
        # The edge block's first Linear reads [edge, slot 1, ..., slot 10]; it is linear in each slot, so every
        # node is projected once by each slot's block of weights and an edge adds the projections its slots
        # select: a sparse [E, N * slots] product instead of a [E, 704] concatenation (2x faster on visitall).
        receivers = _slot_selection(g.add_edge, g.add_node, num_edges, num_nodes, self.RECEIVER_SLOTS, 0, slots,
                                    "add effects")
        senders = _slot_selection(g.pre_edge, g.pre_node, num_edges, num_nodes, self.SENDER_SLOTS,
                                  self.RECEIVER_SLOTS, slots, "preconditions")
        rows, cols = torch.cat([receivers[0], senders[0]]), torch.cat([receivers[1], senders[1]])
        ones = torch.ones(rows.numel(), dtype=dtype, device=rows.device)
        selection = _sparse_csr(rows, cols, ones, (num_edges, num_nodes * slots))
        selection_t = _sparse_csr(cols, rows, ones, (num_nodes * slots, num_edges))
        ones = torch.ones(g.add_edge.numel(), dtype=dtype, device=g.add_edge.device)
        adders = _sparse_csr(g.add_node, g.add_edge, ones, (num_nodes, num_edges))  # sums over the edges adding a node
        adders_t = _sparse_csr(g.add_edge, g.add_node, ones, (num_edges, num_nodes))
        node_graphs = _Membership(g.node_graph, g.num_graphs, dtype)
        edge_graphs = _Membership(g.edge_graph, g.num_graphs, dtype)
        counts = torch.stack([torch.bincount(g.node_graph, minlength=g.num_graphs),
                              torch.bincount(g.edge_graph, minlength=g.num_graphs)], dim=1).to(dtype)

        first = self.edge_block[0]
        edge_weight = first.weight[:, :2 * h]
        # rows k * h + j: slot k's weights onto output j, over a node's [encoded, latent]
        slot_weight = first.weight[:, 2 * h:].reshape(h, slots, 2 * h).transpose(0, 1).reshape(slots * h, 2 * h)
        edge0, node0 = self.edge_encoder(g.edge_features), self.node_encoder(g.node_features)
        glob0 = self.global_encoder(counts)
        # the encoded halves of the inputs are the same in every step: projected once
        edge_constant = F.linear(edge0, edge_weight[:, :h], first.bias)
        slot_constant = F.linear(node0, slot_weight[:, :h])
        edge, node, glob = edge0, node0, glob0
        for _ in range(self.steps):
            node_in = torch.cat([node0, node], 1)
            projected = (slot_constant + F.linear(node, slot_weight[:, h:])).reshape(num_nodes * slots, h)
            selected = _ConstantSparseProduct.apply(selection, selection_t, projected)
            hidden = F.leaky_relu(edge_constant + F.linear(edge, edge_weight[:, h:]) + selected)
            edge = self.edge_block[3](self.edge_block[2](hidden))
            added = _ConstantSparseProduct.apply(adders, adders_t, edge.contiguous())
            node = self.node_block(torch.cat([added, node_in], 1))
            glob = self.global_block(torch.cat([edge_graphs.sum(edge), node_graphs.sum(node), glob0, glob], 1))
        return self.readout(self.global_decoder(glob))
