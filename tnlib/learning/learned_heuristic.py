"""Planning with learned heuristics: GBFS guided by a trained model's point estimate (the paper's Table 2).

A :class:`LearnedHeuristic` wraps a checkpoint for one problem. :func:`tnlib.planning.search.gbfs` hands it all new
successors of an expansion at once; it computes the symbolic inputs the model needs for that batch (the residual
base, the lower bound, the linear features) with tnlib's heuristics -- the same code that labelled the training
data -- runs one forward pass and returns the head's point estimate:

* ``N`` -> mu; ``N+clip`` -> max(mu, l); ``TN`` -> the truncated mean (lower bound ``l - 0.1``, no upper bound:
  at planning time there is no satisficing plan cost to bound h* with).

l is the LM-cut the model trained with (:func:`trained_lmcut`): tnlib's, or tnlib's kernel breaking ties between
equally dear supporters as Fast Downward does where the training split holds Fast Downward's values (data/paper, as
the paper's labels). The two differ most on visitall, where tnlib's is the weaker by a fifth: a model planning with
the l it did not train with scores another heuristic than the one it learned (benchmarks/heuristic_at_bound.py).

A state whose lower bound is infinite (LM-cut or h_max prove a dead end) is a dead end for the search too, without
a forward pass. An N model planning with mu never uses the bound's value, only whether it is infinite: every
relaxation heuristic is infinite on exactly the states the delete relaxation cannot solve, so its residual h_FF
answers that when it has one, and h_max (one relaxed exploration, where LM-cut runs several) when it has none; the
search, its counts and its plans are the same.

:func:`search_problem` runs GBFS with one on one problem and validates the plan; planning a whole split with it,
one record per instance, is :mod:`tnlib.learning.split_planning`'s.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from tnlib.data.manifest import split_lmcut_source
from tnlib.data.schema import FAST_DOWNWARD_LMCUT, TNLIB_LMCUT
from tnlib.errors import DamagedFile, DatasetError
from tnlib.files import read_json
from tnlib.learning.encodings import HGNPackedEncoder, NLMPackedEncoder
from tnlib.learning.run_files import RunDir
from tnlib.learning.wl_features import WLPackedEncoder
from tnlib.planning.heuristics import (RELAXATION_HEURISTICS, FastDownwardLMCutHeuristic, linear_features,
                                      make_heuristic)
from tnlib.learning.heads import POINT_ESTIMATES, estimate_reads_lower_bound, point_estimates
from tnlib.planning.plans import validate_plan
from tnlib.planning.pddl import pddl_stem, problem_atoms
from tnlib.planning.search import SearchResult, gbfs
from tnlib.planning.search_settings import PAPER_SEARCH, SearchSettings
from tnlib.planning.task import domain_name, load_search_task

def reads_lmcut_value(head, estimate: str) -> bool:
    """Whether a head's point estimate (``"default"`` or ``"clip"``) reads LM-cut's value: as its residual, or as
    the lower bound TN's mean and N+clip's max(mu, l) read (N's mu reads the bound only where it is infinite)."""
    return head.residual == "lmcut" or (head.lower_bound == "lmcut"
                                        and estimate_reads_lower_bound(head.distribution, estimate))


def trained_lmcut(config, run_dir=None) -> str:
    """Whose LM-cut the model trained with (:data:`tnlib.data.schema.LMCUT_SOURCES`): as its run folder's
    ``data.json`` records it (a damaged one says nothing), else as the manifest of its training split says now
    (:func:`tnlib.data.manifest.split_lmcut_source`), else tnlib's: a model trained on items given in memory, or
    on a dataset not on this machine, has no manifest to say otherwise."""
    data_file = RunDir(run_dir).data_file if run_dir is not None else None
    if data_file is not None and data_file.is_file():
        try:
            recorded = read_json(data_file).get("lmcut")
        except (DamagedFile, AttributeError):  # damaged: training writes it again; the manifest still says
            recorded = None
        if recorded is not None:
            return recorded
    try:
        return split_lmcut_source(config.data_root, config.domain, config.train_split)
    except DatasetError:
        return TNLIB_LMCUT


class LearnedHeuristic:
    """A batch heuristic for :func:`tnlib.planning.search.gbfs` from a trained model, for one problem.

    Args:
        checkpoint: a run folder (its ``best.pt``) or a ``.pt`` file.
        domain_file, problem_file: the problem to plan for.
        estimate: ``"default"`` (N: mu, TN: mean) or ``"clip"`` (N+clip: max(mu, l); N models only).
        fast_downward_lmcut: compute LM-cut with Fast Downward's tie-breaking
            (:class:`tnlib.planning.heuristics.FastDownwardLMCutHeuristic`, the LM-cut data/paper's labels hold)
            or, with False, tnlib's (data/small's); None, the default: the one the model trained with
            (:func:`trained_lmcut`). ``lmcut_source`` says which it is (None where the estimate reads no LM-cut
            value: :func:`reads_lmcut_value`).
    """

    def __init__(self, checkpoint, domain_file, problem_file, estimate: str = "default", device=None,
                 fast_downward_lmcut: bool | None = None):
        from tnlib.learning.training import checkpoint_encoder, load_checkpoint

        if estimate not in POINT_ESTIMATES:
            raise ValueError(f"unknown estimate {estimate!r} (choose from {', '.join(POINT_ESTIMATES)})")
        self.model, self.head, self.config, saved = load_checkpoint(checkpoint, device)
        self.checkpoint_step = saved.get("step")  # the training step whose weights these are
        if estimate not in point_estimates(self.config.head.distribution):
            raise ValueError("the 'clip' estimate (N+clip) applies to N models only")
        self.estimate = estimate
        self.device = next(self.model.parameters()).device
        self.encoder = checkpoint_encoder(self.config, saved)
        self.problem_file = str(Path(problem_file).resolve())
        self.task = load_search_task(domain_file, problem_file)
        trained_on = domain_name(self.config.domain)
        if self.task.domain_name != trained_on:  # the encoder would fail on unknown predicates, or plan blind
            raise ValueError(f"{checkpoint}: the model was trained on {self.config.domain} (PDDL domain "
                             f"'{trained_on}'), but {problem_file} is a '{self.task.domain_name}' problem")
        init_atoms, self.goal_atoms = problem_atoms(domain_file, problem_file)
        # the dataset's states list static atoms too (grounding compiles them away): add them the same way
        self.static_atoms = [atom for atom in init_atoms if atom not in self.task.fact_index]
        head = self.config.head
        self.uses_lower_bound = (head.lower_bound != "none"
                                 and estimate_reads_lower_bound(head.distribution, estimate))
        names = {head.residual} - {"none"}
        if self.uses_lower_bound:
            names.add(head.lower_bound)
        elif head.lower_bound in RELAXATION_HEURISTICS and not names & set(RELAXATION_HEURISTICS):
            names.add("hmax")  # the bound's dead ends, the cheapest way
        self.heuristics = {name: make_heuristic(name, self.task) for name in sorted(names)}
        # whose LM-cut l (or the residual) is: None where the estimate reads no LM-cut value
        self.lmcut_source = None
        if "lmcut" in self.heuristics:
            if fast_downward_lmcut is None:  # a checkpoint file's run folder is the folder it lies in
                run_dir = Path(checkpoint) if Path(checkpoint).is_dir() else Path(checkpoint).parent
                fast_downward_lmcut = trained_lmcut(self.config, run_dir) == FAST_DOWNWARD_LMCUT
            self.lmcut_source = FAST_DOWNWARD_LMCUT if fast_downward_lmcut else TNLIB_LMCUT
            if fast_downward_lmcut:
                self.heuristics["lmcut"] = FastDownwardLMCutHeuristic(self.task)
        # model inputs straight from the packed states (no atom strings per state); _items is the dataset route
        self.packed_encoder = None
        if self.config.model == "nlm":
            self.packed_encoder = NLMPackedEncoder(self.encoder, self.task, self.problem_file, self.static_atoms,
                                                   self.goal_atoms)
        elif self.config.model == "hgn":
            self.packed_encoder = HGNPackedEncoder(self.encoder, self.task, self.problem_file, self.goal_atoms)
        elif self.config.model == "wl":
            self.packed_encoder = WLPackedEncoder(self.encoder, self.task, self.problem_file, self.static_atoms,
                                                  self.goal_atoms)
        self.calls = 0  # batches evaluated
        self.evaluated = 0  # states evaluated
        # seconds spent in the symbolic heuristics (and linear features), building model inputs, and the model
        # with its head (the forward pass), over all calls
        self.seconds = {"symbolic": 0.0, "encode": 0.0, "forward": 0.0}

    def _items(self, states: Sequence, values: dict[str, np.ndarray]) -> list[dict]:
        features = linear_features(self.task, states) if self.config.model == "linear" else None
        items = []
        for i, state in enumerate(states):
            atoms = sorted(self.static_atoms + [self.task.fact_names[f] for f in self.task.state_to_indices(state)])
            lower = values[self.config.head.lower_bound][i] if self.uses_lower_bound else -math.inf
            residual = values[self.config.head.residual][i] if self.config.head.residual != "none" else 0.0
            item = {"state": atoms, "goal": self.goal_atoms, "problem": self.problem_file,
                    "domain": self.config.domain, "instance": pddl_stem(self.problem_file),
                    "h_star": math.nan, "lower": float(lower), "upper": math.inf, "residual": float(residual),
                    "lmcut": float(values["lmcut"][i]) if "lmcut" in values else math.nan}
            if features is not None:
                item["features"] = torch.as_tensor(features[i], dtype=torch.float32)
            items.append(item)
        return items

    def _symbolic(self, states: Sequence) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
        """The heuristic values the head needs, by name, and the linear model's features (else None)."""
        features = None
        values = {}
        if self.config.model == "linear":
            features = linear_features(self.task, states)
            if "ff" in self.heuristics:
                values["ff"] = features[:, 1]  # the same kernel's h_FF: do not run it twice
        for name, h in self.heuristics.items():
            if name not in values:
                values[name] = h.batch(states)
        return values, features

    def encode(self, states: Sequence, values: dict[str, np.ndarray], features: np.ndarray | None = None):
        """``(inputs, residual, lower, upper)`` for the model and head, from packed states and their symbolic
        values (the same tensors the dataset route, ``encoder.collate_items(self._items(...))``, gives)."""
        batch = len(states)
        if self.config.model == "linear":
            inputs = torch.as_tensor(features, dtype=torch.float32)
        else:
            inputs = self.packed_encoder(states)
        lower = (torch.as_tensor(values[self.config.head.lower_bound], dtype=torch.float32)
                 if self.uses_lower_bound else torch.full((batch,), -math.inf))
        residual = (torch.as_tensor(values[self.config.head.residual], dtype=torch.float32)
                    if self.config.head.residual != "none" else torch.zeros(batch))
        return inputs, residual, lower, torch.full((batch,), math.inf)

    def __call__(self, states: Sequence) -> np.ndarray:
        self.calls += 1
        self.evaluated += len(states)
        started = time.perf_counter()
        values, features = self._symbolic(states)
        out = np.full(len(states), math.inf)
        # dead ends proved by a symbolic heuristic never reach the model (their bounds are infinite)
        alive = np.ones(len(states), dtype=bool)
        for v in values.values():
            alive &= np.isfinite(v)
        index = np.flatnonzero(alive)
        encoded = time.perf_counter()
        self.seconds["symbolic"] += encoded - started
        if index.size:
            subset = {name: v[index] for name, v in values.items()}
            inputs, residual, lower, upper = self.encode(
                [states[i] for i in index], subset, features[index] if features is not None else None)
            inputs, residual, lower, upper = (x.to(self.device) for x in (inputs, residual, lower, upper))
            forward = time.perf_counter()
            self.seconds["encode"] += forward - encoded
            with torch.inference_mode():
                prediction = self.head(self.model(inputs), residual, lower, upper)
                estimate = (prediction.clipped_point_estimate() if self.estimate == "clip"
                            else prediction.point_estimate())
                out[index] = estimate.double().cpu().numpy()
            self.seconds["forward"] += time.perf_counter() - forward
        return out


def search_problem(heuristic, domain_file, problem_file, settings: SearchSettings = PAPER_SEARCH,
                   on_evaluations=None) -> SearchResult:
    """GBFS on one problem with a :class:`LearnedHeuristic` or a symbolic heuristic's name, under ``settings``
    (see :func:`tnlib.planning.search.gbfs`, which calls ``on_evaluations`` with its running count); the plan,
    when found, is validated. Table 2's search (:func:`plan_problem`) and ``tnlib plan --model`` both run it."""
    task = heuristic.task if isinstance(heuristic, LearnedHeuristic) else load_search_task(domain_file, problem_file)
    h = heuristic if isinstance(heuristic, LearnedHeuristic) else make_heuristic(heuristic, task)
    result = gbfs(task, h, settings, on_evaluations)
    if result.solved:
        verdict = validate_plan(task, result.plan)
        if not verdict.valid:  # a bug, never a user error
            raise RuntimeError(f"GBFS returned an invalid plan for {problem_file}: {verdict.message}")
    return result
