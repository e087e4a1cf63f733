"""From dataset items (a state, its goal, targets and bounds) to model inputs, and batching.

A dataset item (``tnlib.data.loading.HeuristicDataset``) is a dict with ``state`` and ``goal`` (lists of atoms such as
``"(on b1 b2)"``), the targets ``h_star``, ``lower``, ``upper``, ``residual``, the linear ``features``, and
``problem`` (absolute path of the problem PDDL), ``domain`` and ``instance``. Each model has an encoder with

* ``encode(item) -> Encoded``: the item's model input in a compact, numpy form (done once per item, so a
  training step only pays for batching), plus its targets;
* ``collate(encoded_list) -> Batch``: padded / concatenated tensors and the targets of a batch;
* ``collate_items(items)``: both at once (a ``collate_fn`` for ``torch.utils.data.DataLoader``).

Encoders cache what is shared by all states of a problem (its objects and static atoms for the NLM, its
grounded delete-relaxed hypergraph for STRIPS-HGN), keyed by the problem path.

NLM input: for each arity r <= breadth, a tensor ``[B, N, ..., N (r times), C_r]`` of 0/1 values, where ``N`` is
the largest object count in the batch and the channels are, for every domain predicate of arity r (in name
order), first "the atom holds in the state" and then "the atom is in the goal". The state channel also holds the
problem's static atoms (``(connected x y)``, ``(not-eq a b)``, ...): grounding compiles them away from the
task's facts, but they are part of the state the NLM reasons about. ``object_mask [B, N]`` marks real objects.

HGN input: the delete relaxation of the grounded task as a hypergraph, facts as nodes with features
``[in state, in goal]`` and operators as hyperedges (senders: preconditions, receivers: add effects) with
features ``[cost, #preconditions, #add effects]``. A batch concatenates the graphs (node and edge offsets) and
records which graph each node and edge belongs to.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from tnlib.planning.task import load_task
from tnlib.planning.pddl import (
    format_atom,
    parse_atom,
    parse_domain,
    parse_problem,
    quiet_pyperplan,
    resolve_domain,
)

NLM_BREADTH = 3


# ---------------------------------------------------------------------------------------------------------------
# Targets and batches shared by all models


@dataclass
class Encoded:
    """One item, encoded: the model input (model-specific) and the item's targets as plain floats."""

    inputs: Any
    h_star: float
    lower: float
    upper: float
    residual: float
    ff: float
    lmcut: float  # nan when the item does not carry it
    instance: str


@dataclass
class Batch:
    """Model inputs and float32 target tensors ``[B]`` of a batch; ``instances`` names each row's instance."""

    inputs: Any
    h_star: torch.Tensor
    lower: torch.Tensor
    upper: torch.Tensor
    residual: torch.Tensor
    ff: torch.Tensor
    lmcut: torch.Tensor
    instances: list[str]

    def to(self, device: torch.device | str) -> "Batch":
        def move(x):
            return x.to(device, non_blocking=True) if isinstance(x, torch.Tensor) else x

        inputs = self.inputs.to(device) if hasattr(self.inputs, "to") else move(self.inputs)
        return Batch(inputs, move(self.h_star), move(self.lower), move(self.upper), move(self.residual),
                     move(self.ff), move(self.lmcut), self.instances)

    def __len__(self) -> int:
        return len(self.instances)


def _scalar(item: dict, key: str, default: float = math.nan) -> float:
    value = item.get(key, default)
    return float(value.item() if isinstance(value, torch.Tensor) else value)


def encoded_targets(item: dict) -> dict:
    """The labels an :class:`Encoded` carries beside its inputs, read from a dataset item."""
    features = item.get("features")
    ff = float(features[1]) if features is not None else _scalar(item, "ff")
    return dict(
        h_star=_scalar(item, "h_star"),
        lower=_scalar(item, "lower", -math.inf),
        upper=_scalar(item, "upper", math.inf),
        residual=_scalar(item, "residual", 0.0),
        ff=ff,
        lmcut=_scalar(item, "lmcut"),
        instance=str(item.get("instance", "")),
    )


def collate_targets(encoded: Sequence[Encoded], inputs: Any) -> Batch:
    """A :class:`Batch` of collated ``inputs`` with the labels of ``encoded``, as float32 columns."""
    def column(name: str) -> torch.Tensor:
        return torch.tensor([getattr(e, name) for e in encoded], dtype=torch.float32)

    return Batch(inputs, column("h_star"), column("lower"), column("upper"), column("residual"), column("ff"),
                 column("lmcut"), [e.instance for e in encoded])


class Encoder:
    """Base class: ``encode`` one item, ``collate`` encoded items into a :class:`Batch`."""

    name = "encoder"

    def encode(self, item: dict) -> Encoded:
        raise NotImplementedError

    def collate(self, encoded: Sequence[Encoded]) -> Batch:
        raise NotImplementedError

    def collate_items(self, items: Sequence[dict]) -> Batch:
        return self.collate([self.encode(item) for item in items])

    def cost(self, encoded: Encoded) -> int:
        """The memory one state takes in a batch, in cells (evaluation caps a batch's total)."""
        return 1

    def model_kwargs(self) -> dict:
        """Arguments the matching model needs from the data (e.g. NLM input channels)."""
        return {}

    def fit(self, items: Sequence[dict]) -> None:
        """Learn what the encoding needs from the training items (WL's colours); most encoders need nothing."""

    def state(self) -> dict | None:
        """What :meth:`fit` learned, for checkpoints: picklable by ``torch.save`` (None: nothing)."""
        return None

    def load_state(self, state: dict | None) -> None:
        """Restore what :meth:`state` returned."""


# ---------------------------------------------------------------------------------------------------------------
# Atoms and PDDL structure


def normalize_atom(atom: str) -> str:
    name, args = parse_atom(atom)
    return "(" + " ".join((name,) + args) + ")"


@dataclass(frozen=True)
class DomainSignature:
    """Predicates of a domain with their arities, and which are static (in no action's effects)."""

    name: str
    arities: dict[str, int]
    static: frozenset[str]

    def predicates_of_arity(self, r: int) -> list[str]:
        return sorted(p for p, a in self.arities.items() if a == r)

    @property
    def max_arity(self) -> int:
        return max(self.arities.values(), default=0)


@lru_cache(maxsize=None)
def domain_signature(domain: str) -> DomainSignature:
    """The :class:`DomainSignature` of a shipped domain key or a domain file."""
    path = resolve_domain(domain)
    with quiet_pyperplan():
        parsed = parse_domain(path)
    arities = {name.lower(): len(pred.signature) for name, pred in parsed.predicates.items()}
    changed = set()
    for action in parsed.actions.values():
        for atom in list(action.effect.addlist) + list(action.effect.dellist):
            changed.add(atom.name.lower())
    return DomainSignature(parsed.name, arities, frozenset(set(arities) - changed))


@dataclass(frozen=True)
class ProblemObjects:
    """A problem's objects (in declaration order) and its static atoms (true in every state)."""

    objects: tuple[str, ...]
    static_atoms: tuple[str, ...]


@lru_cache(maxsize=4096)
def problem_objects(domain: str, problem_file: str) -> ProblemObjects:
    signature = domain_signature(domain)
    with quiet_pyperplan():
        problem = parse_problem(Path(problem_file), parse_domain(resolve_domain(domain)))
    objects = tuple(name.lower() for name in problem.objects)
    static = tuple(sorted(format_atom(atom.name, [arg[0] for arg in atom.signature])
                          for atom in problem.initial_state if atom.name.lower() in signature.static))
    return ProblemObjects(objects, static)


# ---------------------------------------------------------------------------------------------------------------
# NLM


@dataclass
class NLMExample:
    """One state-goal pair for the NLM: ``atoms[r]`` is an int array ``[n_r, 1 + r]`` of (channel, objects...)."""

    num_objects: int
    atoms: list[np.ndarray]


@dataclass
class NLMInputs:
    """A batch of NLM inputs: ``tensors[r]`` is ``[B, N^r, C_r]`` float; ``object_mask`` is ``[B, N]`` bool."""

    tensors: list[torch.Tensor]
    object_mask: torch.Tensor

    def to(self, device) -> "NLMInputs":
        return NLMInputs([t.to(device) for t in self.tensors], self.object_mask.to(device))

    def double(self) -> "NLMInputs":
        return NLMInputs([t.double() for t in self.tensors], self.object_mask)


class NLMEncoder(Encoder):
    """Object-level tensors of the state's and the goal's atoms, arities 0..breadth (see the module docstring)."""

    name = "nlm"

    def __init__(self, domain: str, breadth: int = NLM_BREADTH):
        self.domain = domain
        self.breadth = breadth
        self.signature = domain_signature(domain)
        if self.signature.max_arity > breadth:
            raise ValueError(
                f"domain {domain}: predicates of arity {self.signature.max_arity} exceed the NLM breadth {breadth}")
        # channel of (predicate, is_goal): predicates of one arity in name order, state channels then goal channels
        self.channel: dict[tuple[str, bool], int] = {}
        self.input_channels: list[int] = []
        for r in range(breadth + 1):
            names = self.signature.predicates_of_arity(r)
            for k, name in enumerate(names):
                self.channel[(name, False)] = k
                self.channel[(name, True)] = len(names) + k
            self.input_channels.append(2 * len(names))
        self._rows_problem: str | None = None  # encode_state's rows of the problem it encoded last
        self._rows: dict[tuple[str, bool], list[int]] = {}
        self._index: dict[str, int] = {}

    def model_kwargs(self) -> dict:
        return {"input_channels": list(self.input_channels), "breadth": self.breadth}

    def cost(self, encoded: Encoded) -> int:
        return encoded.inputs.num_objects ** self.breadth  # the arity-`breadth` tensors dominate

    def encode_state(self, problem_file: str, state: Sequence[str], goal: Sequence[str]) -> NLMExample:
        info = problem_objects(self.domain, str(problem_file))
        # an atom's row depends only on its problem: kept for the problem last encoded, as a split lists each
        # problem's states together
        if self._rows_problem != str(problem_file):
            self._rows_problem, self._rows = str(problem_file), {}
            self._index = {name: i for i, name in enumerate(info.objects)}
        known = self._rows
        rows: list[list[list[int]]] = [[] for _ in range(self.breadth + 1)]
        for atoms, is_goal in ((list(state) + list(info.static_atoms), False), (goal, True)):
            for atom in atoms:
                row = known.get((atom, is_goal))
                if row is None:
                    name, objects = self.atom_objects(problem_file, self._index, atom)
                    row = known[(atom, is_goal)] = [self.channel[(name, is_goal)]] + objects
                rows[len(row) - 1].append(row)
        atoms = [np.asarray(rows[r], dtype=np.int64).reshape(-1, 1 + r) for r in range(self.breadth + 1)]
        return NLMExample(len(info.objects), atoms)

    def atom_objects(self, problem_file, index: dict[str, int], atom: str) -> tuple[str, list[int]]:
        """An atom's predicate and its objects' indices (``index``: object name -> index); a ValueError naming the
        file for a predicate the domain does not have or an undeclared object."""
        name, args = parse_atom(atom)
        if name not in self.signature.arities:
            raise ValueError(f"{problem_file}: atom {atom} uses predicate {name!r} unknown to {self.domain}")
        try:
            return name, [index[a] for a in args]
        except KeyError as err:
            raise ValueError(f"{problem_file}: atom {atom} names an undeclared object {err}") from None

    def encode(self, item: dict) -> Encoded:
        return Encoded(self.encode_state(item["problem"], item["state"], item["goal"]), **encoded_targets(item))

    def collate_examples(self, examples: Sequence[NLMExample], num_objects: int | None = None) -> NLMInputs:
        """Pad to the largest object count (or ``num_objects``) and scatter the atoms into 0/1 tensors."""
        batch = len(examples)
        n = max(e.num_objects for e in examples) if num_objects is None else num_objects
        if n < max(e.num_objects for e in examples):
            raise ValueError(f"num_objects={n} is smaller than an example's object count")
        tensors = []
        for r in range(self.breadth + 1):
            t = torch.zeros((batch,) + (n,) * r + (self.input_channels[r],), dtype=torch.float32)
            parts = [(np.full(len(e.atoms[r]), b), e.atoms[r]) for b, e in enumerate(examples) if len(e.atoms[r])]
            if parts:
                b_idx = torch.from_numpy(np.concatenate([p[0] for p in parts]))
                rows = torch.from_numpy(np.concatenate([p[1] for p in parts]))
                objects = [rows[:, 1 + k] for k in range(r)]
                t[(b_idx, *objects, rows[:, 0])] = 1.0
            tensors.append(t)
        counts = torch.tensor([e.num_objects for e in examples])
        object_mask = torch.arange(n)[None, :] < counts[:, None]
        return NLMInputs(tensors, object_mask)

    def collate(self, encoded: Sequence[Encoded]) -> Batch:
        return collate_targets(encoded, self.collate_examples([e.inputs for e in encoded]))


class NLMPackedEncoder:
    """NLM inputs straight from a task's packed states (what search holds), for planning with a learned heuristic.

    Gives exactly what :meth:`NLMEncoder.collate_items` gives for dataset items of the same states (the tests
    compare the two), without building atom strings per state: what every state of the problem shares (its static
    atoms, ``extra_state_atoms`` and the goal channels) is encoded once, and each task fact gets its position in
    the flattened arity tensors, so a batch is a copy of the shared part plus one gather of the facts' bits.

    Args:
        encoder: the NLM encoder of the model's domain.
        task: the grounded task whose packed states are encoded.
        problem_file: its problem (objects and static atoms come from there, as for dataset items).
        extra_state_atoms: atoms true in every state that the task does not have as facts (the initial atoms that
            grounding compiled away), as the dataset's states list them.
        goal_atoms: the goal atoms.
    """

    def __init__(self, encoder: NLMEncoder, task, problem_file, extra_state_atoms: Sequence[str],
                 goal_atoms: Sequence[str]):
        self.task = task
        shared = encoder.encode_state(str(problem_file), list(extra_state_atoms), list(goal_atoms))
        self.num_objects = n = shared.num_objects
        self.channels = list(encoder.input_channels)
        self.shared = [t.reshape(-1) for t in encoder.collate_examples([shared]).tensors]
        index = {name: i for i, name in enumerate(problem_objects(encoder.domain, str(problem_file)).objects)}
        facts: list[list[int]] = [[] for _ in self.channels]
        positions: list[list[int]] = [[] for _ in self.channels]
        for fact, atom in enumerate(task.fact_names):
            name, objects = encoder.atom_objects(problem_file, index, atom)
            r = len(objects)
            position = 0
            for o in objects:
                position = position * n + o
            position = position * self.channels[r] + encoder.channel[(name, False)]
            if self.shared[r][position] == 0:  # a fact also among the shared atoms is 1 in every state anyway
                facts[r].append(fact)
                positions[r].append(position)
        self.facts = [np.asarray(f, dtype=np.int64) for f in facts]
        self.positions = [torch.as_tensor(p, dtype=torch.long) for p in positions]

    def __call__(self, states: Sequence) -> NLMInputs:
        batch, n = len(states), self.num_objects
        bits = self.task.states_to_matrix(states)
        tensors = []
        for r, channels in enumerate(self.channels):
            flat = self.shared[r].repeat(batch, 1)
            if len(self.facts[r]):
                flat[:, self.positions[r]] = torch.from_numpy(bits[:, self.facts[r]]).to(flat.dtype)
            tensors.append(flat.view((batch,) + (n,) * r + (channels,)))
        return NLMInputs(tensors, torch.ones((batch, n), dtype=torch.bool))


# ---------------------------------------------------------------------------------------------------------------
# STRIPS-HGN


@dataclass
class Hypergraph:
    """The delete-relaxed hypergraph of one grounded problem (shared by all its states).

    ``pre_edge``/``pre_node`` list (operator, precondition fact) incidences, ``add_edge``/``add_node`` (operator,
    add effect) incidences; ``edge_features [E, 3]`` are ``[cost, #preconditions, #add effects]``.
    """

    num_nodes: int
    fact_index: dict[str, int]
    pre_edge: np.ndarray
    pre_node: np.ndarray
    add_edge: np.ndarray
    add_node: np.ndarray
    edge_features: np.ndarray

    @property
    def num_edges(self) -> int:
        return len(self.edge_features)


def hypergraph_from_task(task) -> Hypergraph:
    """The delete relaxation of a :class:`tnlib.planning.task.Task` as a :class:`Hypergraph` (unit costs)."""
    num_pre = np.diff(task.pre_start)
    num_add = np.diff(task.add_start)
    ops = np.arange(task.num_operators)
    edge_features = np.stack([np.ones(task.num_operators), num_pre, num_add], axis=1).astype(np.float32)
    return Hypergraph(
        num_nodes=task.num_facts,
        fact_index={normalize_atom(f): i for i, f in enumerate(task.fact_names)},
        pre_edge=np.repeat(ops, num_pre).astype(np.int64),
        pre_node=task.pre_facts.astype(np.int64),
        add_edge=np.repeat(ops, num_add).astype(np.int64),
        add_node=task.add_facts.astype(np.int64),
        edge_features=edge_features,
    )


@dataclass
class HGNExample:
    """One state-goal pair for STRIPS-HGN: its problem's hypergraph and the node features ``[F, 2]``."""

    graph: Hypergraph
    node_features: np.ndarray


@dataclass
class HGNInputs:
    """A batch of hypergraphs, concatenated. Incidence indices are global (offset per graph)."""

    node_features: torch.Tensor  # [num_nodes, 2]
    edge_features: torch.Tensor  # [num_edges, 3]
    pre_edge: torch.Tensor
    pre_node: torch.Tensor
    add_edge: torch.Tensor
    add_node: torch.Tensor
    node_graph: torch.Tensor  # graph of each node
    edge_graph: torch.Tensor  # graph of each edge
    num_graphs: int

    def to(self, device) -> "HGNInputs":
        moved = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in self.__dict__.items()}
        return HGNInputs(**moved)

    def double(self) -> "HGNInputs":
        return HGNInputs(**{**self.__dict__, "node_features": self.node_features.double(),
                            "edge_features": self.edge_features.double()})


class HGNEncoder(Encoder):
    """Delete-relaxed hypergraphs with ``[in state, in goal]`` node features (see the module docstring)."""

    name = "hgn"

    def __init__(self, domain: str):
        self.domain = domain
        self._graphs: dict[str, Hypergraph] = {}

    def graph(self, problem_file: str) -> Hypergraph:
        key = str(problem_file)
        if key not in self._graphs:
            self._graphs[key] = hypergraph_from_task(load_task(resolve_domain(self.domain), key))
        return self._graphs[key]

    def cost(self, encoded: Encoded) -> int:
        return encoded.inputs.graph.num_nodes + encoded.inputs.graph.num_edges

    def encode_state(self, problem_file: str, state: Sequence[str], goal: Sequence[str]) -> HGNExample:
        graph = self.graph(problem_file)
        features = np.zeros((graph.num_nodes, 2), dtype=np.float32)
        for column, atoms in ((0, state), (1, goal)):
            for atom in atoms:
                # static atoms are compiled away by grounding and have no node; every other atom must have one
                fact = graph.fact_index.get(normalize_atom(atom))
                if fact is not None:
                    features[fact, column] = 1.0
        return HGNExample(graph, features)

    def encode(self, item: dict) -> Encoded:
        return Encoded(self.encode_state(item["problem"], item["state"], item["goal"]), **encoded_targets(item))

    @staticmethod
    def collate_examples(examples: Sequence[HGNExample]) -> HGNInputs:
        node_offset = edge_offset = 0
        pre_e, pre_n, add_e, add_n, node_graph, edge_graph = [], [], [], [], [], []
        for g, example in enumerate(examples):
            graph = example.graph
            pre_e.append(graph.pre_edge + edge_offset)
            pre_n.append(graph.pre_node + node_offset)
            add_e.append(graph.add_edge + edge_offset)
            add_n.append(graph.add_node + node_offset)
            node_graph.append(np.full(graph.num_nodes, g))
            edge_graph.append(np.full(graph.num_edges, g))
            node_offset += graph.num_nodes
            edge_offset += graph.num_edges

        def cat(arrays) -> torch.Tensor:
            return torch.from_numpy(np.concatenate(arrays).astype(np.int64))

        return HGNInputs(
            node_features=torch.from_numpy(np.concatenate([e.node_features for e in examples])),
            edge_features=torch.from_numpy(np.concatenate([e.graph.edge_features for e in examples])),
            pre_edge=cat(pre_e), pre_node=cat(pre_n), add_edge=cat(add_e), add_node=cat(add_n),
            node_graph=cat(node_graph), edge_graph=cat(edge_graph), num_graphs=len(examples),
        )

    def collate(self, encoded: Sequence[Encoded]) -> Batch:
        return collate_targets(encoded, self.collate_examples([e.inputs for e in encoded]))


class HGNPackedEncoder:
    """STRIPS-HGN inputs straight from a task's packed states; the HGN counterpart of :class:`NLMPackedEncoder`.

    The node features of a batch are the goal column (shared) and each fact's bit (one gather); the incidence
    indices of a batch of b copies of the problem's hypergraph depend only on b and are built once per b.
    """

    def __init__(self, encoder: HGNEncoder, task, problem_file, goal_atoms: Sequence[str]):
        self.task = task
        self.graph = encoder.graph(str(problem_file))
        self.goal = encoder.encode_state(str(problem_file), [], list(goal_atoms)).node_features[:, 1]
        nodes = [self.graph.fact_index.get(normalize_atom(atom)) for atom in task.fact_names]
        # facts without a node cannot occur (the hypergraph is grounded from the same problem); skip them as the
        # item route does with atoms it does not know
        self.facts = np.asarray([f for f, node in enumerate(nodes) if node is not None], dtype=np.int64)
        self.nodes = np.asarray([node for node in nodes if node is not None], dtype=np.int64)
        self._layouts: dict[int, HGNInputs] = {}

    def __call__(self, states: Sequence) -> HGNInputs:
        batch = len(states)
        layout = self._layouts.get(batch)
        if layout is None:
            empty = HGNExample(self.graph, np.zeros((self.graph.num_nodes, 2), dtype=np.float32))
            layout = self._layouts[batch] = HGNEncoder.collate_examples([empty] * batch)
        features = np.zeros((batch, self.graph.num_nodes, 2), dtype=np.float32)
        features[:, :, 1] = self.goal
        features[:, self.nodes, 0] = self.task.states_to_matrix(states)[:, self.facts]
        return HGNInputs(**{**layout.__dict__, "node_features": torch.from_numpy(features.reshape(-1, 2))})


# ---------------------------------------------------------------------------------------------------------------
# Linear regression


class LinearEncoder(Encoder):
    """The four features of Gomoluch et al. (goal count, h_FF, total and mean ignored deletes), ``[B, 4]``."""

    name = "linear"

    def __init__(self, domain: str | None = None):
        self.domain = domain

    def encode(self, item: dict) -> Encoded:
        features = item["features"]
        features = features.numpy() if isinstance(features, torch.Tensor) else np.asarray(features)
        return Encoded(np.asarray(features, dtype=np.float32).reshape(4), **encoded_targets(item))

    def collate(self, encoded: Sequence[Encoded]) -> Batch:
        return collate_targets(encoded, torch.from_numpy(np.stack([e.inputs for e in encoded])))
