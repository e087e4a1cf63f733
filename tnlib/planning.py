"""Planning with learned heuristics: GBFS guided by a trained model's point estimate (the paper's Table 2).

A :class:`LearnedHeuristic` wraps a checkpoint for one problem. :func:`tnlib.search.gbfs` hands it all new
successors of an expansion at once; it computes the symbolic inputs the model needs for that batch (the residual
base, the lower bound, the linear features) with tnlib's heuristics -- the same code that labelled the training
data -- runs one forward pass and returns the head's point estimate:

* ``N`` -> mu; ``N+clip`` -> max(mu, l); ``TN`` -> the truncated mean (lower bound ``l - 0.1``, no upper bound:
  at planning time there is no satisficing plan cost to bound h* with).

A state whose lower bound is infinite (LM-cut or h_max prove a dead end) is a dead end for the search too, without
a forward pass. :func:`plan_split` runs a run folder over a dataset's ``plan`` split and writes one JSON line per
instance to ``planning-<estimate>.jsonl`` (resumable: instances already there are skipped); :func:`render_table2`
renders the paper's Table 2 layout from a results folder.
"""
from __future__ import annotations

import json
import math
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from tnlib.heuristics import linear_features, make_heuristic
from tnlib.plans import validate_plan
from tnlib.records import problem_atoms
from tnlib.search import gbfs
from tnlib.task import load_task

# The point estimates of Table 2: "default" is mu for N and the truncated mean for TN; "clip" is N+clip.
ESTIMATES = ("default", "clip")
DEFAULT_MAX_EVALUATIONS = 10_000  # the paper's limit


class LearnedHeuristic:
    """A batch heuristic for :func:`tnlib.search.gbfs` from a trained model, for one problem.

    Args:
        checkpoint: a run folder (its ``best.pt``) or a ``.pt`` file.
        domain_file, problem_file: the problem to plan for.
        estimate: ``"default"`` (N: mu, TN: mean) or ``"clip"`` (N+clip: max(mu, l); N models only).
    """

    def __init__(self, checkpoint, domain_file, problem_file, estimate: str = "default", device=None):
        from tnlib.encodings import HGNPackedEncoder, NLMPackedEncoder, make_encoder
        from tnlib.training import load_checkpoint

        if estimate not in ESTIMATES:
            raise ValueError(f"unknown estimate {estimate!r} (choose from {', '.join(ESTIMATES)})")
        self.model, self.head, self.config, _ = load_checkpoint(checkpoint, device)
        if estimate == "clip" and self.config.distribution != "N":
            raise ValueError("the 'clip' estimate (N+clip) applies to N models only")
        self.estimate = estimate
        self.device = next(self.model.parameters()).device
        self.encoder = make_encoder(self.config.model, self.config.domain)
        self.problem_file = str(Path(problem_file).resolve())
        self.task = load_task(domain_file, problem_file)
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


def plan_problem(heuristic, domain_file, problem_file, max_evaluations: int = DEFAULT_MAX_EVALUATIONS,
                 time_limit: float | None = None) -> dict:
    """GBFS on one problem; the plan, when found, is validated. Returns a JSON-able result."""
    task = heuristic.task if isinstance(heuristic, LearnedHeuristic) else load_task(domain_file, problem_file)
    h = heuristic if isinstance(heuristic, LearnedHeuristic) else make_heuristic(heuristic, task)
    result = gbfs(task, h, max_evaluations=max_evaluations, time_limit=time_limit)
    record = {"problem": Path(problem_file).name, "status": result.status, "solved": result.solved,
              "evaluations": result.evaluations, "expansions": result.expansions,
              "seconds": round(result.seconds, 4), "plan_length": len(result.plan) if result.solved else None}
    if result.solved:
        full = load_task(domain_file, problem_file, remove_irrelevant_operators=False)
        verdict = validate_plan(full, result.plan)
        if not verdict.valid:
            raise RuntimeError(f"GBFS returned an invalid plan for {problem_file}: {verdict.message}")
    return record


def _append_jsonl(path: Path, record: dict) -> None:
    # one line per write, flushed and fsynced: an interrupted run loses at most the instance it was on
    torn = path.is_file() and path.stat().st_size and not path.read_bytes().endswith(b"\n")
    with path.open("a") as f:
        # after a crash mid-line, start a new line: the torn one stays unparseable and is ignored
        f.write(("\n" if torn else "") + json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _done(path: Path) -> dict[str, dict]:
    if not path.is_file():
        return {}
    done = {}
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a line cut by a crash: that instance is simply planned again
            continue
        done[record["problem"]] = record
    return done


def _plan_instances(table, domain: str, out: Path, make_heuristic_for, extra: dict, max_evaluations: int,
                    limit: int | None, progress: bool = False, desc: str = "") -> list[dict]:
    """GBFS over a split's first ``limit`` instances, one JSON line per instance in ``out``; instances already
    there are not planned again."""
    from tqdm.auto import tqdm

    from tnlib.task import resolve_domain

    domain_file = resolve_domain(domain)
    instances = table.instances()[:limit]
    done = _done(out)
    for instance in tqdm(instances, desc=desc, disable=not progress, leave=False):
        problem = table.problem_path(instance)
        if problem.name in done:
            continue
        record = plan_problem(make_heuristic_for(domain_file, problem), domain_file, problem, max_evaluations)
        record.update(instance=instance, **extra)
        _append_jsonl(out, record)
        done[problem.name] = record
    return [done[table.problem_path(i).name] for i in instances]


def plan_split(run_dir, estimate: str = "default", data_root=None, split: str = "plan",
               max_evaluations: int = DEFAULT_MAX_EVALUATIONS, limit: int | None = None,
               progress: bool = False) -> list[dict]:
    """Plan every instance of a dataset split with a run's best checkpoint; results in ``planning-<estimate>.jsonl``."""
    from tnlib.data import load_split
    from tnlib.training import TrainConfig

    run_dir = Path(run_dir)
    config = TrainConfig.from_dict(json.loads((run_dir / "config.json").read_text()))
    table = load_split(data_root or config.data_root, config.domain, split)
    return _plan_instances(
        table, config.domain, run_dir / f"planning-{estimate}.jsonl",
        lambda domain_file, problem: LearnedHeuristic(run_dir, domain_file, problem, estimate=estimate),
        {"estimate": estimate}, max_evaluations, limit, progress, desc=f"{run_dir.name} {estimate}")


def plan_baseline(data_root, domain: str, heuristic: str = "ff", out_dir=None, split: str = "plan",
                  max_evaluations: int = DEFAULT_MAX_EVALUATIONS, limit: int | None = None) -> list[dict]:
    """GBFS with a symbolic heuristic over a split (the paper's h_FF column); resumable like :func:`plan_split`."""
    from tnlib.data import load_split

    out_dir = Path(out_dir or ".")
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"baseline-{domain}-{heuristic}.jsonl"
    return _plan_instances(load_split(data_root, domain, split), domain, out, lambda domain_file, problem: heuristic,
                           {"domain": domain, "heuristic": heuristic}, max_evaluations, limit)


# ---------------------------------------------------------------------------------------------------------------
# Table 2


def summarize(records: Sequence[dict], max_evaluations: int = DEFAULT_MAX_EVALUATIONS) -> dict:
    """Coverage and the average evaluations, counting an unsolved instance as ``max_evaluations`` (as the paper)."""
    if not records:
        return {"instances": 0, "coverage": math.nan, "evaluations": math.nan}
    solved = [r["solved"] for r in records]
    evaluations = [r["evaluations"] if r["solved"] else max_evaluations for r in records]
    return {"instances": len(records), "coverage": float(np.mean(solved)), "evaluations": float(np.mean(evaluations))}


def collect_planning(results_dir) -> list[dict]:
    """One row per (run, estimate): the run's configuration and its summary on the plan split."""
    rows = []
    for path in sorted(Path(results_dir).rglob("planning-*.jsonl")):
        config = json.loads((path.parent / "config.json").read_text())
        estimate = path.stem.split("-", 1)[1]
        column = config["distribution"] + ("+clip" if estimate == "clip" else "")
        rows.append({**{k: config[k] for k in ("domain", "model", "sigma", "residual", "lower_bound", "seed")},
                     "column": column, **summarize(list(_done(path).values()))})
    return rows


def render_table2(results_dir, model: str = "nlm", lower_bound: str = "lmcut",
                  configs: Sequence[tuple[str, str]] = (("learn", "ff"), ("fixed", "none")),
                  baseline_dir=None) -> str:
    """The paper's Table 2 as Markdown: coverage, then average evaluations, mean ± std over seeds (best in bold)."""
    rows = [r for r in collect_planning(results_dir) if r["model"] == model and r["lower_bound"] == lower_bound]
    groups: dict = defaultdict(list)
    for r in rows:
        groups[(r["domain"], r["sigma"], r["residual"], r["column"])].append(r)
    baseline = {}
    for path in sorted(Path(baseline_dir or results_dir).rglob("baseline-*-ff.jsonl")):
        domain = path.stem.split("-")[1]
        baseline[domain] = summarize(list(_done(path).values()))
    domains = sorted({r["domain"] for r in rows} | set(baseline),
                     key=lambda d: ["blocksworld", "ferry", "gripper", "visitall"].index(d)
                     if d in ("blocksworld", "ferry", "gripper", "visitall") else 9)
    columns = [(s, res, c) for s, res in configs for c in ("N", "N+clip", "TN")]
    header = "| domain | FF | " + " | ".join(f"{s}/{res} {c}" for s, res, c in columns) + " |"
    lines = []
    for metric, title, better in (("coverage", "Ratio of solved instances (higher is better)", max),
                                  ("evaluations", "Average node evaluations (lower is better)", min)):
        lines += [f"**{title}**", "", header, "|" + "---|" * (len(columns) + 2)]
        for domain in domains:
            cells, stats = [], {}
            for key in columns:
                values = [r[metric] for r in groups.get((domain, *key), [])]
                if values:
                    stats[key] = (float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else 0.0)
            for s, res in configs:  # bold the best of N, N+clip, TN within a configuration
                group = {k: v for k, v in stats.items() if k[:2] == (s, res)}
                best = better(group.values(), key=lambda v: v[0])[0] if group else None
                for c in ("N", "N+clip", "TN"):
                    v = stats.get((s, res, c))
                    text = "" if v is None else (f"{v[0]:.2f}±{v[1]:.2f}" if metric == "coverage"
                                                 else f"{v[0]:.0f}±{v[1]:.0f}")
                    cells.append(f"**{text}**" if v is not None and v[0] == best else text)
            ff = baseline.get(domain, {}).get(metric)
            ff_text = "" if ff is None else (f"{ff:.2f}" if metric == "coverage" else f"{ff:.0f}")
            lines.append(f"| {domain} | {ff_text} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)
