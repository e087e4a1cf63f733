"""STRIPS-HGN (tnlib.learning.strips_hgn) against references: a dense incidence-matrix reference, a loop over
edges and nodes for the authors' layout, permutation invariance and batching."""
from __future__ import annotations

import pytest
import torch

from fixtures.heuristic_items import small_items
from tnlib.learning import strips_hgn
from tnlib.learning.encodings import HGNEncoder, HGNInputs
from tnlib.learning.strips_hgn import STRIPSHGN


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("strips_hgn")


def hgn_dense_reference(model: STRIPSHGN, g: HGNInputs) -> torch.Tensor:
    """STRIPS-HGN's "means" layout with dense incidence matrices, concatenating before every Linear (no projection
    tricks)."""
    n, e, b = g.node_features.shape[0], g.edge_features.shape[0], g.num_graphs
    dtype = g.node_features.dtype
    pre = torch.zeros(e, n, dtype=dtype)
    pre[g.pre_edge, g.pre_node] = 1
    add = torch.zeros(e, n, dtype=dtype)
    add[g.add_edge, g.add_node] = 1
    node_of = torch.zeros(b, n, dtype=dtype)
    node_of[g.node_graph, torch.arange(n)] = 1
    edge_of = torch.zeros(b, e, dtype=dtype)
    edge_of[g.edge_graph, torch.arange(e)] = 1

    def mean_rows(m):
        return m / m.sum(1, keepdim=True).clamp(min=1)

    def cat_linear(parts, linears):
        weight = torch.cat([lin.weight for lin in linears], dim=1)
        bias = sum(lin.bias for lin in linears if lin.bias is not None)
        return torch.cat(parts, dim=1) @ weight.T + bias

    m = model
    node_enc = torch.relu(m.node_encoder(g.node_features))
    edge_enc = torch.relu(m.edge_encoder(g.edge_features))
    node, edge = torch.zeros_like(node_enc), torch.zeros_like(edge_enc)
    glob = torch.zeros(b, m.hidden, dtype=dtype)
    for _ in range(m.steps):
        node_in, edge_in = torch.cat([node_enc, node], 1), torch.cat([edge_enc, edge], 1)
        edge = torch.relu(cat_linear(
            [edge_in, mean_rows(pre) @ node_in, mean_rows(add) @ node_in, edge_of.T @ glob],
            [m.edge_self, m.edge_from_senders, m.edge_from_receivers, m.edge_from_global]))
        node = torch.relu(cat_linear(
            [node_in, mean_rows(add.T) @ edge, mean_rows(pre.T) @ edge, node_of.T @ glob],
            [m.node_self, m.node_from_adders, m.node_from_users, m.node_from_global]))
        glob = torch.relu(cat_linear([glob, node_of @ node, edge_of @ edge],
                                     [m.global_self, m.global_from_nodes, m.global_from_edges]))
    return m.readout(glob)


@pytest.fixture(scope="module")
def hgn_batch(folder):
    items = small_items("gripper", folder)
    encoder = HGNEncoder("gripper")
    return encoder, [encoder.encode(i).inputs for i in (items[0], items[5], items[-1])]


@pytest.mark.parametrize("sorted_segments", [False, True], ids=["csr", "sorted-segments"])
def test_constant_sparse_products_equal_the_dense_product(monkeypatch, sorted_segments):
    # empty rows, a row with repeated positions (they add up), unsorted incidences, and no incidences at all
    monkeypatch.setattr(strips_hgn, "_sorted_segments_on", lambda device: sorted_segments)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(7, 3, dtype=torch.float64, generator=gen)
    for rows, cols in (([0, 0, 0, 3, 4, 4, 1], [2, 2, 5, 6, 0, 1, 3]), ([], [])):
        rows, cols = torch.tensor(rows, dtype=torch.int64), torch.tensor(cols, dtype=torch.int64)
        values = torch.rand(len(rows), dtype=torch.float64, generator=gen)
        dense = torch.zeros(5, 7, dtype=torch.float64).index_put_((rows, cols), values, accumulate=True)
        matrix = strips_hgn._sparse_csr(rows, cols, values, (5, 7))
        assert isinstance(matrix, strips_hgn._SortedSegments) == sorted_segments
        torch.testing.assert_close(matrix @ x, dense @ x, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("sorted_segments", [False, True], ids=["csr", "sorted-segments"])
def test_hgn_equals_dense_reference_in_float64(hgn_batch, monkeypatch, sorted_segments):
    # the CPU's sparse layout, and the one CUDA uses (bitwise reproducible there), both against the reference
    monkeypatch.setattr(strips_hgn, "_sorted_segments_on", lambda device: sorted_segments)
    encoder, examples = hgn_batch
    model = STRIPSHGN(layout="means").double()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(3.0)  # larger weights so that the ReLUs are not all saturated
    g = encoder.collate_examples(examples).double()
    fast, slow = model(g), hgn_dense_reference(model, g)
    assert fast.abs().max() > 0.01
    # outputs reach 1e6 and sum many terms in another order: relative, to about 1e4 ulps
    torch.testing.assert_close(fast, slow, rtol=1e-11, atol=1e-12)
    grads = torch.autograd.grad(fast.sum(), list(model.parameters()))
    ref = torch.autograd.grad(slow.sum(), list(model.parameters()))
    for a, b in zip(grads, ref):
        torch.testing.assert_close(a, b, rtol=1e-11, atol=1e-11 * float(b.abs().max()))


@pytest.mark.parametrize("sorted_segments", [False, True], ids=["csr", "sorted-segments"])
def test_hgn_with_unsorted_incidences_equals_dense_reference_in_float64(hgn_batch, monkeypatch, sorted_segments):
    # incidences in any order (the sparse matrices are built by sorting them), gradients included
    monkeypatch.setattr(strips_hgn, "_sorted_segments_on", lambda device: sorted_segments)
    encoder, examples = hgn_batch
    model = STRIPSHGN(layout="means").double()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(3.0)
    g = encoder.collate_examples(examples).double()
    gen = torch.Generator().manual_seed(1)
    pre, add = torch.randperm(len(g.pre_edge), generator=gen), torch.randperm(len(g.add_edge), generator=gen)
    shuffled = HGNInputs(**{**g.__dict__, "pre_edge": g.pre_edge[pre], "pre_node": g.pre_node[pre],
                            "add_edge": g.add_edge[add], "add_node": g.add_node[add]})
    fast, slow = model(shuffled), hgn_dense_reference(model, g)
    torch.testing.assert_close(fast, slow, rtol=1e-12, atol=1e-12)
    for a, b in zip(torch.autograd.grad(fast.sum(), list(model.parameters())),
                    torch.autograd.grad(slow.sum(), list(model.parameters()))):
        torch.testing.assert_close(a, b, rtol=1e-11, atol=1e-11 * float(b.abs().max()))


def test_hgn_batch_equals_graphs_one_by_one(hgn_batch):
    encoder, examples = hgn_batch
    model = STRIPSHGN(layout="means").double()
    together = model(encoder.collate_examples(examples).double())
    alone = torch.cat([model(encoder.collate_examples([e]).double()) for e in examples])
    torch.testing.assert_close(together, alone, rtol=0, atol=1e-12)


def test_hgn_is_invariant_to_fact_and_action_order(hgn_batch):
    encoder, examples = hgn_batch
    model = STRIPSHGN(layout="means").double()
    g = encoder.collate_examples(examples[:1]).double()
    n, e = g.node_features.shape[0], g.edge_features.shape[0]
    gen = torch.Generator().manual_seed(0)
    node_perm, edge_perm = torch.randperm(n, generator=gen), torch.randperm(e, generator=gen)
    new_node, new_edge = torch.argsort(node_perm), torch.argsort(edge_perm)  # old index -> new index
    shuffled = HGNInputs(
        node_features=g.node_features[node_perm], edge_features=g.edge_features[edge_perm],
        pre_edge=new_edge[g.pre_edge], pre_node=new_node[g.pre_node],
        add_edge=new_edge[g.add_edge], add_node=new_node[g.add_node],
        node_graph=g.node_graph, edge_graph=g.edge_graph, num_graphs=1,
    )
    assert not torch.equal(shuffled.node_features, g.node_features)
    torch.testing.assert_close(model(shuffled), model(g), rtol=0, atol=1e-12)


def authors_hgn_loop_reference(core, example) -> torch.Tensor:
    """The authors' STRIPS-HGN on one state, one edge and one node at a time from the hypergraph's per-action
    fact lists (sorted, padded with zero vectors), as their hypergraph_nets builds it."""
    graph, dtype = example.graph, torch.float64
    nodes0 = core.node_encoder(torch.from_numpy(example.node_features).to(dtype))
    edges0 = core.edge_encoder(torch.from_numpy(graph.edge_features).to(dtype))
    glob0 = core.global_encoder(torch.tensor([[graph.num_nodes, graph.num_edges]], dtype=dtype))
    pre = [sorted(int(f) for f, o in zip(graph.pre_node, graph.pre_edge) if o == e) for e in range(graph.num_edges)]
    add = [sorted(int(f) for f, o in zip(graph.add_node, graph.add_edge) if o == e) for e in range(graph.num_edges)]
    nodes, edges, glob = nodes0, edges0, glob0
    for _ in range(core.steps):
        node_in, edge_in = torch.cat([nodes0, nodes], 1), torch.cat([edges0, edges], 1)
        glob_in = torch.cat([glob0, glob], 1)
        zero = torch.zeros(node_in.shape[1], dtype=dtype)

        def slots(facts, width):
            return [node_in[f] for f in facts] + [zero] * (width - len(facts))

        edges = torch.stack([core.edge_block(torch.cat([edge_in[e], *slots(add[e], core.RECEIVER_SLOTS),
                                                        *slots(pre[e], core.SENDER_SLOTS)]))
                             for e in range(graph.num_edges)])
        received = torch.stack([sum((edges[e] for e in range(graph.num_edges) if f in add[e]),
                                    torch.zeros(core.hidden, dtype=dtype)) for f in range(graph.num_nodes)])
        nodes = core.node_block(torch.cat([received, node_in], 1))
        glob = core.global_block(torch.cat([edges.sum(0, keepdim=True), nodes.sum(0, keepdim=True), glob_in], 1))
    return core.readout(core.global_decoder(glob))


@pytest.mark.parametrize("sorted_segments", [False, True], ids=["csr", "sorted-segments"])
def test_authors_hgn_layout_equals_a_loop_over_edges_and_nodes(hgn_batch, monkeypatch, sorted_segments):
    # the CPU's sparse layout, and the one CUDA uses, both against the loop
    monkeypatch.setattr(strips_hgn, "_sorted_segments_on", lambda device: sorted_segments)
    encoder, examples = hgn_batch
    model = STRIPSHGN().double()
    assert model.layout == "authors"  # the default
    g = encoder.collate_examples(examples).double()
    fast = model(g)
    with torch.no_grad():
        slow = torch.cat([authors_hgn_loop_reference(model.authors, e) for e in examples])
        assert fast.abs().max() > 1e-3
        torch.testing.assert_close(fast, slow, rtol=1e-12, atol=1e-12)
    fast.sum().backward()  # every weight takes part
    assert all(p.grad is not None and p.grad.abs().max() > 0 for p in model.parameters())


def test_authors_hgn_layout_is_invariant_to_action_order_and_batching(hgn_batch):
    encoder, examples = hgn_batch
    model = STRIPSHGN(layout="authors").double()
    g = encoder.collate_examples(examples[:1]).double()
    edge_perm = torch.randperm(g.edge_features.shape[0], generator=torch.Generator().manual_seed(0))
    new_edge = torch.argsort(edge_perm)
    shuffled = HGNInputs(**{**g.__dict__, "edge_features": g.edge_features[edge_perm],
                            "pre_edge": new_edge[g.pre_edge], "add_edge": new_edge[g.add_edge]})
    torch.testing.assert_close(model(shuffled), model(g), rtol=0, atol=1e-12)
    together = model(encoder.collate_examples(examples).double())
    alone = torch.cat([model(encoder.collate_examples([e]).double()) for e in examples])
    torch.testing.assert_close(together, alone, rtol=0, atol=1e-12)


def test_authors_hgn_layout_rejects_actions_wider_than_its_slots(hgn_batch):
    encoder, examples = hgn_batch
    g = encoder.collate_examples(examples[:1])
    extra = torch.arange(8)  # eight more preconditions on action 0
    wide = HGNInputs(**{**g.__dict__, "pre_edge": torch.cat([g.pre_edge, torch.zeros(8, dtype=torch.int64)]),
                        "pre_node": torch.cat([g.pre_node, extra])})
    with pytest.raises(ValueError, match="at most 7 preconditions"):
        STRIPSHGN(layout="authors")(wide)
    with pytest.raises(ValueError, match="layout must be one of authors, means"):
        STRIPSHGN(layout="deepmind")
