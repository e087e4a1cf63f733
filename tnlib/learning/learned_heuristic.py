"""Planning with learned heuristics: GBFS guided by a trained model's point estimate (the paper's Table 2).

A :class:`LearnedHeuristic` wraps a checkpoint for one problem. :func:`tnlib.planning.search.gbfs` hands it all new
successors of an expansion at once; it computes the symbolic inputs the model needs for that batch (the residual
base, the lower bound, the linear features) with tnlib's heuristics -- the same code that labelled the training
data -- runs one forward pass and returns the head's point estimate:

* ``N`` -> mu; ``N+clip`` -> max(mu, l); ``TN`` -> the truncated mean (lower bound ``l - 0.1``, no upper bound:
  at planning time there is no satisficing plan cost to bound h* with).

A state whose lower bound is infinite (LM-cut or h_max prove a dead end) is a dead end for the search too, without
a forward pass. :func:`plan_split` runs a run folder over a dataset's ``plan`` split and writes one JSON line per
instance to ``planning-<estimate>.jsonl`` (resumable: instances already there are skipped);
:func:`tnlib.experiments.tables.render_table2` renders the paper's Table 2 layout from a results folder.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from tnlib.data.loading import load_split
from tnlib.data.plan_sets import load_plan_set
from tnlib.data.schema import PLAN_SETS
from tnlib.learning.encodings import HGNPackedEncoder, NLMPackedEncoder, make_encoder
from tnlib.planning.heuristics import linear_features, make_heuristic
from tnlib.files import append_jsonl, atomic_write_text, read_jsonl, sha256_file
from tnlib.learning.heads import POINT_ESTIMATES, point_estimates
from tnlib.learning.run_files import RunDir, baseline_file
from tnlib.planning.plans import validate_plan
from tnlib.planning.pddl import problem_atoms, resolve_domain
from tnlib.planning.search import SearchResult, gbfs
from tnlib.planning.search_settings import PAPER_SEARCH, SearchSettings
from tnlib.planning.task import domain_name, load_search_task

# What planning records name about the search that made them (besides the protocol and the evaluation limit):
# the grounding searched (tnlib.planning.task.load_search_task); a record made on another grounding is planned again.
GROUNDING = "unpruned"


class LearnedHeuristic:
    """A batch heuristic for :func:`tnlib.planning.search.gbfs` from a trained model, for one problem.

    Args:
        checkpoint: a run folder (its ``best.pt``) or a ``.pt`` file.
        domain_file, problem_file: the problem to plan for.
        estimate: ``"default"`` (N: mu, TN: mean) or ``"clip"`` (N+clip: max(mu, l); N models only).
    """

    def __init__(self, checkpoint, domain_file, problem_file, estimate: str = "default", device=None):
        from tnlib.learning.training import load_checkpoint

        if estimate not in POINT_ESTIMATES:
            raise ValueError(f"unknown estimate {estimate!r} (choose from {', '.join(POINT_ESTIMATES)})")
        self.model, self.head, self.config, saved = load_checkpoint(checkpoint, device)
        self.checkpoint_step = saved.get("step")  # the training step whose weights these are
        if estimate not in point_estimates(self.config.distribution):
            raise ValueError("the 'clip' estimate (N+clip) applies to N models only")
        self.estimate = estimate
        self.device = next(self.model.parameters()).device
        self.encoder = make_encoder(self.config.model, self.config.domain)
        self.problem_file = str(Path(problem_file).resolve())
        self.task = load_search_task(domain_file, problem_file)
        trained_on = domain_name(self.config.domain)
        if self.task.domain_name != trained_on:  # the encoder would fail on unknown predicates, or plan blind
            raise ValueError(f"{checkpoint}: the model was trained on {self.config.domain} (PDDL domain "
                             f"'{trained_on}'), but {problem_file} is a '{self.task.domain_name}' problem")
        init_atoms, self.goal_atoms = problem_atoms(domain_file, problem_file)
        # the dataset's states list static atoms too (grounding compiles them away): add them the same way
        self.static_atoms = [atom for atom in init_atoms if atom not in self.task.fact_index]
        names = {self.config.residual, self.config.lower_bound} - {"none"}
        self.heuristics = {name: make_heuristic(name, self.task) for name in sorted(names)}
        # model inputs straight from the packed states (no atom strings per state); _items is the dataset route
        self.packed_encoder = None
        if self.config.model == "nlm":
            self.packed_encoder = NLMPackedEncoder(self.encoder, self.task, self.problem_file, self.static_atoms,
                                                   self.goal_atoms)
        elif self.config.model == "hgn":
            self.packed_encoder = HGNPackedEncoder(self.encoder, self.task, self.problem_file, self.goal_atoms)
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
            lower = values[self.config.lower_bound][i] if self.config.lower_bound != "none" else -math.inf
            residual = values[self.config.residual][i] if self.config.residual != "none" else 0.0
            item = {"state": atoms, "goal": self.goal_atoms, "problem": self.problem_file,
                    "domain": self.config.domain, "instance": Path(self.problem_file).stem,
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
        lower = (torch.as_tensor(values[self.config.lower_bound], dtype=torch.float32)
                 if self.config.lower_bound != "none" else torch.full((batch,), -math.inf))
        residual = (torch.as_tensor(values[self.config.residual], dtype=torch.float32)
                    if self.config.residual != "none" else torch.zeros(batch))
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


def search_problem(heuristic, domain_file, problem_file, settings: SearchSettings = PAPER_SEARCH) -> SearchResult:
    """GBFS on one problem with a :class:`LearnedHeuristic` or a symbolic heuristic's name, under ``settings``
    (see :func:`tnlib.planning.search.gbfs`); the plan, when found, is validated. Table 2's search
    (:func:`plan_problem`) and ``tnlib plan --model`` both run it."""
    task = heuristic.task if isinstance(heuristic, LearnedHeuristic) else load_search_task(domain_file, problem_file)
    h = heuristic if isinstance(heuristic, LearnedHeuristic) else make_heuristic(heuristic, task)
    result = gbfs(task, h, settings)
    if result.solved:
        verdict = validate_plan(task, result.plan)
        if not verdict.valid:  # a bug, never a user error
            raise RuntimeError(f"GBFS returned an invalid plan for {problem_file}: {verdict.message}")
    return result


def plan_problem(heuristic, domain_file, problem_file, settings: SearchSettings = PAPER_SEARCH) -> dict:
    """:func:`search_problem`'s outcome as a JSON-able planning record (one line of a planning file) that names the
    protocol, the evaluation limit and the grounding."""
    result = search_problem(heuristic, domain_file, problem_file, settings)
    return {"problem": Path(problem_file).name, "protocol": settings.protocol,
            "max_evaluations": settings.max_evaluations,
            "grounding": GROUNDING, "status": result.status, "solved": result.solved,
            "evaluations": result.evaluations, "expansions": result.expansions,
            "seconds": round(result.seconds, 4), "plan_length": len(result.plan) if result.solved else None}


def planned(path: Path) -> dict[str, dict]:
    """The records of a planning JSON-lines file by problem file name (a line cut by a crash is skipped: that
    instance is simply planned again)."""
    return {record["problem"]: record for record in read_jsonl(path)}


def chosen_instances(table, instances: int | None = None, per_cell: int | None = None) -> list[str]:
    """The instances of a split or plan set to plan: with ``per_cell`` the first that many of each grid cell of a
    plan set (:meth:`tnlib.data.plan_sets.PlanSet.first_per_cell`), then the first ``instances`` of those (all
    with None)."""
    if per_cell is None:
        return table.instances()[:instances]
    if not hasattr(table, "first_per_cell"):
        raise ValueError("planning the first instances of each grid cell needs a plan set (plan-set, "
                         "plan-set-authors), not a labelled split")
    return table.first_per_cell(per_cell)[:instances]


def _plan_instances(table, domain: str, out: Path, make_heuristic_for, extra: dict, settings: SearchSettings,
                    instances: int | None, progress: bool = False, desc: str = "",
                    per_cell: int | None = None) -> list[dict]:
    """GBFS over a split's instances (:func:`chosen_instances`), one JSON line per instance in ``out``.

    ``out`` only ever holds records of one setting: the protocol, the evaluation limit, the grounding and what
    ``extra`` names (a learned heuristic's checkpoint digest). Records made otherwise -- an earlier limit, weights
    trained further since -- are dropped when it is opened, and their instances planned again; matching records
    are kept (resuming an interrupted split plans only what is missing)."""
    from tqdm.auto import tqdm

    domain_file = resolve_domain(domain)
    chosen = chosen_instances(table, instances, per_cell)
    setting = {"protocol": settings.protocol, "max_evaluations": settings.max_evaluations, "grounding": GROUNDING,
               **extra}
    lines = read_jsonl(out)
    done = {r["problem"]: r for r in lines if all(r.get(key) == value for key, value in setting.items())}
    if len(done) != len(lines):  # stale or repeated lines: rewrite the file with the current setting's records
        atomic_write_text(out, "".join(json.dumps(r) + "\n" for r in done.values()))
    for instance in tqdm(chosen, desc=desc, disable=not progress, leave=False):
        problem = table.problem_path(instance)
        if problem.name in done:
            continue
        record = plan_problem(make_heuristic_for(domain_file, problem), domain_file, problem, settings)
        record.update(instance=instance, **extra)
        append_jsonl(out, record)
        done[problem.name] = record
    return [done[table.problem_path(i).name] for i in chosen]


def planning_instances(data_root, domain: str, split: str = "plan"):
    """The instances to plan: a labelled split's table or, for a plan set's name (``plan-set``,
    ``plan-set-authors``: :data:`tnlib.data.schema.PLAN_SETS`), that label-free set -- both offer ``instances()``
    and ``problem_path(instance)``."""
    if split in PLAN_SETS.values():
        return load_plan_set(data_root, domain, split)
    return load_split(data_root, domain, split)


def plan_split(run_dir, estimate: str = "default", data_root=None, split: str = "plan",
               settings: SearchSettings = PAPER_SEARCH, instances: int | None = None,
               progress: bool = False, per_cell: int | None = None) -> list[dict]:
    """Plan every instance of a dataset split (or plan set) with a run's best checkpoint; results in
    ``planning-<estimate>.jsonl`` for the plan split, ``planning-<split>-<estimate>.jsonl`` otherwise."""
    from tnlib.learning.training import TrainConfig

    run_dir = Path(run_dir)
    config = TrainConfig.from_dict(RunDir(run_dir).read_config())
    table = planning_instances(data_root or config.data_root, config.domain, split)
    # the weights a record was planned with: a run trained further since is planned again
    checkpoint = sha256_file(RunDir(run_dir).best)[:16]
    return _plan_instances(
        table, config.domain, RunDir(run_dir).planning_file(estimate, split),
        lambda domain_file, problem: LearnedHeuristic(run_dir, domain_file, problem, estimate=estimate),
        {"estimate": estimate, "checkpoint": checkpoint}, settings, instances, progress,
        desc=f"{run_dir.name} {estimate}", per_cell=per_cell)


def plan_baseline(data_root, domain: str, heuristic: str = "ff", out_dir=None, split: str = "plan",
                  settings: SearchSettings = PAPER_SEARCH, instances: int | None = None,
                  per_cell: int | None = None) -> list[dict]:
    """GBFS with a symbolic heuristic over a split or plan set (the paper's h_FF column); resumable like
    :func:`plan_split`."""
    out_dir = Path(out_dir or ".")
    out_dir.mkdir(parents=True, exist_ok=True)
    out = baseline_file(out_dir, domain, heuristic)
    return _plan_instances(planning_instances(data_root, domain, split), domain, out,
                           lambda domain_file, problem: heuristic,
                           {"domain": domain, "heuristic": heuristic}, settings, instances, per_cell=per_cell)
