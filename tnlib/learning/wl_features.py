"""WL features: colour counts of the Weisfeiler-Leman algorithm on a state's instance learning graph.

The learner of WL-GOOSE (Chen, Trevizan and Thiebaux, ICAPS 2024): a state and its goal become the instance
learning graph (ILG: a node per object and per atom of the state or the goal, an atom's node coloured by its
predicate and whether it holds, is a goal, or both, edges from an atom to its objects labelled by position);
:data:`WL_ITERATIONS` rounds of WL refinement colour every node, and the feature vector counts each colour. The
library is ``wlplan`` (its authors'), called on tnlib's own parse of the problem (objects, goal) and the dataset's
atoms (static atoms included, so the domain keeps its static predicates).

The encoder is *fitted*: the colours are those met on the training states (:meth:`WLEncoder.fit`), as in WL-GOOSE;
a colour first met at validation, test or planning time is not counted (wlplan drops it; WL-GOOSE's choice, so a
model sees only features it has weights for). Each feature is divided by the largest count it reaches on the
training states, so every input lies in [0, 1] and one learning rate suits every domain (a linear model on the
scaled counts is a linear model on the counts). The fitted state -- wlplan's colour table and the scales -- travels
in every checkpoint (:meth:`WLEncoder.state` / :meth:`WLEncoder.load_state`).
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import zlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from tnlib.learning.encodings import (Encoded, Encoder, collate_targets, domain_signature, encoded_targets,
                                      problem_objects)
from tnlib.planning.pddl import parse_atom

# wlplan is imported inside the methods that use it: with networkx and the pddl package it takes about 0.3 s, which
# only a WL model should pay (learned GBFS imports this module for every model).

# The ILG, WL-GOOSE's graph; 4 refinement rounds (tnlib's choice; wlplan's default is 2)
WL_GRAPH = "ilg"
WL_ITERATIONS = 4


@contextlib.contextmanager
def _quiet_stdout():
    """Silence what wlplan's C++ prints to the process's standard output while it collects colours (one line per
    WL iteration), at the file descriptor: Python's sys.stdout never sees it."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no standard output to silence
        yield
        return
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _grouped(items: Sequence[dict]) -> dict[tuple[str, tuple[str, ...]], list[dict]]:
    """The items by (problem, goal), in the order each first appears."""
    groups: dict[tuple[str, tuple[str, ...]], list[dict]] = {}
    for item in items:
        groups.setdefault((str(item["problem"]), tuple(item["goal"])), []).append(item)
    return groups


@dataclass
class WLExample:
    """One state's features, sparse: the columns with a nonzero count and the counts (unscaled)."""

    columns: np.ndarray
    counts: np.ndarray


class WLEncoder(Encoder):
    """WL colour counts of a state-goal pair (see the module docstring); :meth:`fit` before :meth:`encode`."""

    name = "wl"

    def __init__(self, domain: str):
        from wlplan.planning import Domain, Predicate

        self.domain = domain
        signature = domain_signature(domain)
        # in wlplan's own order (by "name/arity"), so that colours are numbered as its parser's domain numbers them
        order = sorted(signature.arities.items(), key=lambda pair: f"{pair[0]}/{pair[1]}")
        self.predicates = {name: Predicate(name, arity) for name, arity in order}
        self.wl_domain = Domain(signature.name, list(self.predicates.values()), [], [], [])
        self.generator = None
        self.scale: np.ndarray | None = None
        self._problems: dict[tuple[str, tuple[str, ...]], object] = {}
        self._current = None  # the wlplan problem the generator is set to
        self._fitted: dict[tuple, WLExample] = {}  # the training states' examples, by (problem, goal, state)
        # wlplan's atom objects by atom string: a search or a dataset meets the same atoms in state after state, and
        # parsing each again cost three times the WL refinement (a third of a learned search at ferry 30 x 30)
        self._atoms: dict[str, object] = {}

    # -- wlplan objects --------------------------------------------------------------------------------------------
    def _atom(self, atom: str):
        made = self._atoms.get(atom)
        if made is None:
            from wlplan.planning import Atom

            name, args = parse_atom(atom)
            if name not in self.predicates:
                raise ValueError(f"atom {atom} uses predicate {name!r} unknown to {self.domain}")
            made = self._atoms[atom] = Atom(self.predicates[name], list(args))
        return made

    def _problem(self, problem_file: str, goal: Sequence[str]):
        from wlplan.planning import Problem

        key = (str(problem_file), tuple(goal))
        if key not in self._problems:
            # sorted as wlplan's own parser sorts them: the order new colours are met in while collecting, hence
            # their numbers, follows the graph's node order (the colour counts themselves do not depend on it)
            objects = sorted(problem_objects(self.domain, str(problem_file)).objects)
            self._problems[key] = Problem(self.wl_domain, objects, [self._atom(a) for a in goal], [])
        return self._problems[key]

    def _state(self, atoms: Sequence[str]):
        from wlplan.planning import State

        return State([self._atom(a) for a in atoms])

    # -- fitting and its state -------------------------------------------------------------------------------------
    def fit(self, items: Sequence[dict]) -> None:
        """Collect the colours of the training items' states and the scale of each feature."""
        from wlplan.data import DomainDataset, ProblemDataset
        from wlplan.feature_generator import init_feature_generator

        groups = _grouped(items)
        dataset = DomainDataset(self.wl_domain, [
            ProblemDataset(self._problem(*key), [self._state(item["state"]) for item in group])
            for key, group in groups.items()])
        self.generator = init_feature_generator("wl", self.wl_domain, graph_representation=WL_GRAPH,
                                                iterations=WL_ITERATIONS)
        with _quiet_stdout():
            self.generator.collect(dataset)
        self._current = None
        # the scales from one state at a time (embedding the whole dataset at once builds a dense list of Python
        # floats, states x features: gigabytes at the paper's sizes); the examples are kept, as training encodes
        # these same items next
        self.scale = np.ones(self.num_features)
        self._fitted = {}
        for (problem_file, goal), items_of_problem in groups.items():
            states = [item["state"] for item in items_of_problem]
            for atoms, example in zip(states, self.embed_states(problem_file, goal, states)):
                np.maximum.at(self.scale, example.columns, example.counts)
                self._fitted[(problem_file, goal, tuple(atoms))] = example

    @property
    def num_features(self) -> int:
        self._check_fitted()
        return int(self.generator.get_n_features())

    def _check_fitted(self) -> None:
        if self.generator is None:
            raise RuntimeError("WLEncoder: fit it on the training items (or load a checkpoint's state) first")

    def state(self) -> dict:
        """The fitted state: wlplan's colour table as zlib-compressed JSON and the feature scales as a tensor. Packed
        because a checkpoint pickles it at every save: as nested Python lists and dicts, data/paper ferry's table
        (30,553 colours) took 0.05 s and 2.0 MB a checkpoint; packed, 0.002 s and 0.76 MB."""
        self._check_fitted()
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "wl.json")
            self.generator.save(path)
            with open(path, "rb") as f:
                table = f.read()
        return {"generator_zlib": zlib.compress(table, 6), "scale": torch.from_numpy(self.scale.copy())}

    def load_state(self, state: dict) -> None:
        """Restore :meth:`state`'s packed form, or the plain form a checkpoint may hold instead (the table as a
        dict, the scales as a list)."""
        from wlplan.feature_generator import load_feature_generator

        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "wl.json")
            if "generator_zlib" in state:
                with open(path, "wb") as f:
                    f.write(zlib.decompress(state["generator_zlib"]))
            else:
                with open(path, "w") as f:
                    json.dump(state["generator"], f)
            self.generator = load_feature_generator(path, quiet=True)
        self.scale = torch.as_tensor(state["scale"], dtype=torch.float64).numpy().copy()
        self._current = None
        self._fitted = {}

    # -- encoding --------------------------------------------------------------------------------------------------
    def embed_states(self, problem_file: str, goal: Sequence[str], states: Sequence[Sequence[str]]) -> list[WLExample]:
        """The features of ``states`` (each a list of atoms, static ones included) of one problem and goal."""
        return self.embed_wl_states(problem_file, goal, [self._state(atoms) for atoms in states])

    def embed_wl_states(self, problem_file: str, goal: Sequence[str], wl_states: Sequence) -> list[WLExample]:
        """The features of states already made wlplan ``State`` objects, of one problem and goal."""
        self._check_fitted()
        problem = self._problem(problem_file, goal)
        if self._current is not problem:
            self.generator.set_problem(problem)
            self._current = problem
        out = []
        for wl_state in wl_states:
            # wlplan returns a dense list of Python floats; fromiter reads it in half the time asarray takes
            vector = self.generator.embed(wl_state)
            dense = np.fromiter(vector, dtype=np.float64, count=len(vector))
            columns = np.flatnonzero(dense)
            out.append(WLExample(columns.astype(np.int64, copy=False), dense[columns].astype(np.float32)))
        return out

    def encode(self, item: dict) -> Encoded:
        key = (str(item["problem"]), tuple(item["goal"]), tuple(item["state"]))
        example = self._fitted.get(key)
        if example is None:
            (example,) = self.embed_states(item["problem"], item["goal"], [item["state"]])
        return Encoded(example, **encoded_targets(item))

    def model_kwargs(self) -> dict:
        return {"num_features": self.num_features}

    def cost(self, encoded: Encoded) -> int:
        return self.num_features  # a dense row per state

    def collate_examples(self, examples: Sequence[WLExample]) -> torch.Tensor:
        """The scaled features of a batch as a dense ``[B, F]`` float32 tensor."""
        dense = torch.zeros((len(examples), self.num_features), dtype=torch.float32)
        if examples:
            rows = np.concatenate([np.full(len(e.columns), b) for b, e in enumerate(examples)])
            columns = np.concatenate([e.columns for e in examples])
            values = np.concatenate([e.counts for e in examples]) / self.scale[columns]
            dense[torch.from_numpy(rows), torch.from_numpy(columns)] = torch.from_numpy(values.astype(np.float32))
        return dense

    def collate(self, encoded: Sequence[Encoded]) -> "Batch":  # noqa: F821 (encodings.Batch)
        return collate_targets(encoded, self.collate_examples([e.inputs for e in encoded]))


class WLPackedEncoder:
    """WL features straight from a task's packed states, for planning: the :class:`NLMPackedEncoder` of WL."""

    def __init__(self, encoder: WLEncoder, task, problem_file, extra_state_atoms: Sequence[str],
                 goal_atoms: Sequence[str]):
        self.encoder, self.task = encoder, task
        self.problem_file, self.goal = str(problem_file), list(goal_atoms)
        # wlplan's atom objects made once per fact (and for the static atoms every state carries), so a state
        # becomes a wlplan State by indexing
        self.extra = [encoder._atom(atom) for atom in extra_state_atoms]
        self.fact_atoms = [encoder._atom(name) for name in task.fact_names]

    def __call__(self, states: Sequence) -> torch.Tensor:
        from wlplan.planning import State

        fact_atoms = self.fact_atoms
        wl_states = [State(self.extra + [fact_atoms[f] for f in self.task.state_to_indices(state)])
                     for state in states]
        return self.encoder.collate_examples(self.encoder.embed_wl_states(self.problem_file, self.goal, wl_states))
