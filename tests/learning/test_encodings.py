"""Encoders: NLM object tensors, HGN hypergraphs and linear features, checked entry by entry on small problems."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fixtures.heuristic_items import small_items
from tnlib.learning.encodings import (
    HGNEncoder, HGNPackedEncoder, LinearEncoder, NLMEncoder, NLMPackedEncoder, domain_signature, parse_atom,
    problem_objects,
)
from tnlib.learning.models import make_encoder
from tnlib.planning.generators import generate
from tnlib.planning.pddl import problem_atoms
from tnlib.planning.search import random_walk_states
from tnlib.planning.task import load_task
from tnlib.planning.pddl import resolve_domain


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("encodings")


@pytest.fixture(scope="module")
def blocks_items(folder):
    return small_items("blocksworld", folder)


@pytest.fixture(scope="module")
def ferry_items(folder):
    return small_items("ferry", folder)


def test_parse_atom():
    assert parse_atom("(on b1 b2)") == ("on", ("b1", "b2"))
    assert parse_atom(" ( ARM-EMPTY ) ") == ("arm-empty", ())
    with pytest.raises(ValueError):
        parse_atom("()")


def test_domain_signature_arities_and_statics():
    bw = domain_signature("blocksworld")
    assert bw.arities == {"clear": 1, "on-table": 1, "arm-empty": 0, "holding": 1, "on": 2}
    assert bw.static == frozenset()
    ferry = domain_signature("ferry")
    assert ferry.static == {"not-eq", "car", "location"}
    assert domain_signature("visitall").static == {"connected"}


def test_nlm_channels_and_entries(blocks_items):
    encoder = NLMEncoder("blocksworld")
    # arity 0: arm-empty (state, goal); arity 1: clear, holding, on-table; arity 2: on; arity 3: none
    assert encoder.input_channels == [2, 6, 2, 0]
    item = blocks_items[0]
    batch = encoder.collate_items([item])
    objects = problem_objects("blocksworld", item["problem"]).objects
    x0, x1, x2, x3 = batch.inputs.tensors
    assert x3.shape == (1, len(objects), len(objects), len(objects), 0)
    expected1 = torch.zeros(1, len(objects), 6)
    expected2 = torch.zeros(1, len(objects), len(objects), 2)
    expected0 = torch.zeros(1, 2)
    for atoms, goal in ((item["state"], 0), (item["goal"], 1)):
        for atom in atoms:
            name, args = parse_atom(atom)
            if name == "arm-empty":
                expected0[0, goal] = 1
            elif name == "on":
                expected2[0, objects.index(args[0]), objects.index(args[1]), goal] = 1
            else:
                k = ["clear", "holding", "on-table"].index(name)
                expected1[0, objects.index(args[0]), 3 * goal + k] = 1
    assert torch.equal(x0, expected0) and torch.equal(x1, expected1) and torch.equal(x2, expected2)
    assert batch.inputs.object_mask.all()


def test_nlm_adds_static_atoms_to_the_state(ferry_items):
    encoder = NLMEncoder("ferry")
    item = dict(ferry_items[0])
    statics = problem_objects("ferry", item["problem"]).static_atoms
    assert any(a.startswith("(not-eq") for a in statics)
    item_without = {**item, "state": [a for a in item["state"] if a not in statics]}
    with_static = encoder.collate_items([item]).inputs.tensors
    from_task_facts = encoder.collate_items([item_without]).inputs.tensors
    assert all(torch.equal(a, b) for a, b in zip(with_static, from_task_facts))
    channel = encoder.channel[("not-eq", False)]
    assert with_static[2][..., channel].sum() > 0


def test_nlm_padding_and_mask(blocks_items):
    encoder = NLMEncoder("blocksworld")
    small = next(i for i in blocks_items if "b3" in i["instance"])
    big = next(i for i in blocks_items if "b4" in i["instance"])
    batch = encoder.collate_items([small, big])
    alone = encoder.collate_items([small])
    assert batch.inputs.object_mask.tolist() == [[True, True, True, False], [True, True, True, True]]
    for r, (t, a) in enumerate(zip(batch.inputs.tensors, alone.inputs.tensors)):
        index = (0,) + (slice(0, 3),) * r
        assert torch.equal(t[index], a[0])
        assert t[0].sum() == a.sum()  # nothing in the padded rows


def test_nlm_errors_name_the_atom(blocks_items):
    encoder = NLMEncoder("blocksworld")
    with pytest.raises(ValueError, match="unknown"):
        encoder.collate_items([{**blocks_items[0], "state": ["(flying b1)"]}])
    with pytest.raises(ValueError, match="undeclared object"):
        encoder.collate_items([{**blocks_items[0], "state": ["(clear zz)"]}])


def test_hgn_hypergraph_is_the_delete_relaxation(blocks_items):
    item = blocks_items[0]
    task = load_task("blocksworld", item["problem"])
    encoder = HGNEncoder("blocksworld")
    inputs = encoder.collate_items([item]).inputs
    assert inputs.node_features.shape == (task.num_facts, 2)
    assert inputs.edge_features.shape == (task.num_operators, 3)
    for op in range(task.num_operators):
        pre = sorted(inputs.pre_node[inputs.pre_edge == op].tolist())
        add = sorted(inputs.add_node[inputs.add_edge == op].tolist())
        assert pre == sorted(task.preconditions(op).tolist()) and add == sorted(task.add_effects(op).tolist())
        assert inputs.edge_features[op].tolist() == [1.0, len(pre), len(add)]
    in_state = {task.fact_names[i] for i in torch.nonzero(inputs.node_features[:, 0]).flatten().tolist()}
    in_goal = {task.fact_names[i] for i in torch.nonzero(inputs.node_features[:, 1]).flatten().tolist()}
    assert in_state == set(item["state"]) and in_goal == set(item["goal"])


def test_hgn_batch_offsets(blocks_items, ferry_items):
    encoder = HGNEncoder("blocksworld")
    a, b = blocks_items[0], blocks_items[-1]
    one, two = encoder.collate_items([a]).inputs, encoder.collate_items([b]).inputs
    both = encoder.collate_items([a, b]).inputs
    n, e = one.node_features.shape[0], one.edge_features.shape[0]
    assert both.num_graphs == 2
    assert torch.equal(both.pre_node, torch.cat([one.pre_node, two.pre_node + n]))
    assert torch.equal(both.add_edge, torch.cat([one.add_edge, two.add_edge + e]))
    assert both.node_graph.tolist() == [0] * n + [1] * two.node_features.shape[0]


def test_linear_features_and_targets(blocks_items):
    batch = LinearEncoder().collate_items(blocks_items[:3])
    assert torch.equal(batch.inputs, torch.stack([i["features"] for i in blocks_items[:3]]))
    assert torch.equal(batch.h_star, torch.stack([i["h_star"] for i in blocks_items[:3]]))
    assert torch.equal(batch.lower, torch.stack([i["lower"] for i in blocks_items[:3]]))
    assert batch.ff.tolist() == [i["ff"] for i in blocks_items[:3]]
    assert batch.instances == [i["instance"] for i in blocks_items[:3]]


def test_missing_bounds_are_infinite(blocks_items):
    item = {k: v for k, v in blocks_items[0].items() if k not in ("lower", "upper", "lmcut")}
    batch = LinearEncoder().collate_items([item])
    assert math.isinf(batch.lower.item()) and batch.lower.item() < 0
    assert math.isinf(batch.upper.item()) and batch.upper.item() > 0
    assert np.isnan(batch.lmcut.item())


def test_make_encoder_rejects_unknown_models():
    with pytest.raises(ValueError, match="unknown model"):
        make_encoder("transformer", "blocksworld")


@pytest.mark.parametrize("domain, params", [("blocksworld", dict(blocks=5)), ("ferry", dict(locations=3, cars=2)),
                                            ("gripper", dict(balls=3)), ("visitall", dict(x=3, y=3, ratio=0.5))])
def test_packed_state_encoders_equal_the_item_route(folder, domain, params):
    # planning encodes the search's packed states directly; the reference is the dataset route: atom strings
    # (static atoms included, as the dataset lists them) through collate_items
    problem = folder / f"packed-{domain}.pddl"
    problem.write_text(generate(domain, 3, **params))
    task = load_task(domain, problem)
    init, goal = problem_atoms(resolve_domain(domain), problem)
    static = [atom for atom in init if atom not in task.fact_index]
    states = random_walk_states(task, 12, seed=1)
    items = [{"state": sorted(static + [task.fact_names[f] for f in task.state_to_indices(s)]), "goal": goal,
              "problem": str(problem.resolve()), "instance": problem.stem} for s in states]
    nlm = NLMEncoder(domain)
    expected = nlm.collate_items(items).inputs
    packed = NLMPackedEncoder(nlm, task, problem.resolve(), static, goal)(states)
    assert len(packed.tensors) == len(expected.tensors)
    for a, b in zip(packed.tensors, expected.tensors):
        assert a.dtype == b.dtype and torch.equal(a, b)
    assert torch.equal(packed.object_mask, expected.object_mask)
    assert any(t.sum() > 0 for t in packed.tensors[1:])
    hgn = HGNEncoder(domain)
    expected = hgn.collate_items(items).inputs
    encoder = HGNPackedEncoder(hgn, task, problem.resolve(), goal)
    for batch in (states, states[:3], states):  # the second call of a batch size reuses its index layout
        packed = encoder(batch)
        reference = hgn.collate_items(items[:len(batch)]).inputs
        for key, value in reference.__dict__.items():
            other = getattr(packed, key)
            assert other == value if key == "num_graphs" else torch.equal(other, value), key
    assert expected.node_features[:, 0].sum() > 0 and expected.node_features[:, 1].sum() > 0
