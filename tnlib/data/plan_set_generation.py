"""Making label-free plan sets (:mod:`tnlib.data.plan_sets` reads and checks them).

``tnlib data plan-set ROOT --domain D`` draws a domain's plan set into a dataset root that holds its train, val and
test splits. The slots are the profile's ``plan`` slots (grid ``test``: the paper's test grid, every cell for seed
number 1, then 2, ..., the first 100) or the first 100 of :data:`tnlib.paper.AUTHORS_PLAN_GRID` (grid
``authors``). Each slot's attempts use the labelled plan split's generator seeds
(:func:`tnlib.data.profiles.generator_seed` with split ``plan``), so where that split solved a draw the two hold
the same problem, and its recorded optimal solves (successes and time-outs with their limits) come along. An
attempt is rejected when its goal holds initially (trivial) or it repeats, up to renaming objects, an instance
of train, val or test or an earlier instance of the set; the slot then moves to its next attempt, up to
``max_attempts``. No optimal solve decides what is kept.

Every kept instance is shown solvable by a satisficing plan -- Fast Downward's lazy greedy search with h_FF
(:func:`tnlib.planning.fast_downward.solve_satisficing`), validated by :func:`tnlib.planning.plans.validate_plan`
-- and, with ``optimal_time_limit``, solved optimally (A* + LM-cut) under that limit, so that the paper's
selection can be applied (:meth:`tnlib.data.plan_sets.PlanSet.optimal_selection`). With ``exact``, each instance's
h* of its initial state is recorded too, from the domain's exact solver (:mod:`tnlib.planning.optimal_costs`,
no limit), its optimal plan validated like the satisficing one: the optimal cost a planner's plan is measured
against, at every size of the grid, where A* under any practical limit stops short. Solves are recorded one file
per instance and limit under ``ROOT/DOMAIN/.work/<folder>/`` as they finish, so an interrupted run resumes where it
stopped; the problems and the manifest are written when every solve is in, the manifest last, each atomically.
Rerunning with another ``optimal_time_limit`` adds its solves to those recorded.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tnlib.data.exact_solves import solve_exactly
from tnlib.data.profiles import ATTEMPTS_PER_SLOT, SplitGrid, generator_seed, get_profile, params_label
from tnlib.data.instance_keys import instance_key, keys_fingerprint, problem_from_text
from tnlib.data.plan_sets import PLAN_SETS, plan_set_folder, taken_instance_keys
from tnlib.data.manifest_writing import write_manifest
from tnlib.data.schema import DEFAULT_PROFILE, MANIFEST, PLAN_SET_FORMAT, WORK, WORK_SETTINGS
from tnlib.errors import DatasetError, SearchNodeLimit
from tnlib.executors import run_jobs
from tnlib.files import atomic_write_json, atomic_write_text, read_json, sha256_file
from tnlib.paper import AUTHORS_PLAN_GRID, DOMAINS, LABEL_MEMORY_LIMIT_MB, MAX_ATTEMPTS, PLAN_INSTANCES
from tnlib.planning.generators import DOMAIN_PARAMETERS, generate, problem_name
from tnlib.planning.optimal_costs import OPTIMAL_PLANS

# A satisficing plan is cheap in these domains (Fast Downward's lazy greedy h_FF: well under a second at the paper's
# largest test sizes); the limit only stops a pathological case.
CHECK_TIME_LIMIT = 120.0
EXACT_RECORD = ("h* of the initial state by tnlib.planning.optimal_costs, its optimal plan validated (per instance: "
                "the search-node budget it had, null for none, and status node_limit where that ran out)")


def plan_set_grid(profile: str, domain: str, grid: str, count: int | None = None) -> SplitGrid:
    """The slots a plan set is drawn from: the profile's plan slots over its test grid (``test``) or the grid the
    authors' scripts drew the paper's plan instances from (``authors``); ``count`` overrides how many."""
    if grid == "test":
        plan = get_profile(profile).grid(domain, "plan")
        return SplitGrid(plan.combos, plan.seeds, count if count is not None else plan.count)
    if grid == "authors":
        spec = AUTHORS_PLAN_GRID[domain]
        order = DOMAIN_PARAMETERS[domain]
        combos = tuple(tuple((name, params[name]) for name in order) for params in spec["params"])
        first, last = spec["seeds"]
        slots = len(combos) * (last - first + 1)
        return SplitGrid(combos, tuple(range(first, last + 1)), min(count or PLAN_INSTANCES, slots))
    raise DatasetError(f"unknown plan set grid {grid!r}; choose from {', '.join(PLAN_SETS)}")


@dataclass(frozen=True)
class SolveJob:
    """One solve of one drawn problem: ``kind`` ``satisficing`` (Fast Downward's lazy greedy h_FF, the plan
    validated), ``optimal`` (Fast Downward's A* + LM-cut) or ``exact`` (the domain's exact solver, the plan validated;
    it has no time limit, so ``time_limit`` is None; ``max_nodes`` bounds a searching solver's nodes, None: no
    bound)."""

    domain: str
    kind: str
    text: str
    name: str
    time_limit: float | None
    memory_limit_mb: int
    max_nodes: int | None = None

    @property
    def file_name(self) -> str:
        return solve_file_name(self.name, self.kind, self.time_limit)


def solve_file_name(instance: str, kind: str, time_limit: float | None) -> str:
    """The work file of one solve, and its key among the recorded ones (a solve without a limit: no limit in it)."""
    if time_limit is None:
        return f"{instance}-{kind}.json"
    return f"{instance}-{kind}-{float(time_limit):g}s.json"


def run_solve(job: SolveJob) -> dict:
    """A JSON-ready outcome of one :class:`SolveJob` (never raises: an exception is status ``exception``)."""
    from tnlib.planning import fast_downward
    from tnlib.planning.plans import validate_plan
    from tnlib.planning.task import load_search_task
    from tnlib.planning.pddl import resolve_domain

    outcome: dict = {"instance": job.name, "kind": job.kind, "time_limit": job.time_limit,
                     "memory_limit_mb": job.memory_limit_mb}
    if job.kind == "exact":
        del outcome["memory_limit_mb"]
        outcome["max_nodes"] = job.max_nodes
    try:
        with tempfile.TemporaryDirectory(prefix="tnlib-plan-set-") as tmp:
            path = Path(tmp) / f"{job.name}.pddl"
            path.write_text(job.text)
            if job.kind == "exact":
                started = time.perf_counter()
                try:
                    status, plan = "solved", solve_exactly(job.domain, path, max_nodes=job.max_nodes).plan
                except SearchNodeLimit:
                    status, plan = "node_limit", None
                seconds = time.perf_counter() - started
            else:
                run = fast_downward.solve_satisficing if job.kind == "satisficing" else fast_downward.solve
                result = run(job.domain, path, time_limit=job.time_limit, memory_limit_mb=job.memory_limit_mb)
                status, seconds, plan = result.status, result.seconds, result.plan if result.solved else None
            outcome.update(status=status, seconds=round(seconds, 3))
            if plan is not None:
                outcome["plan_length"] = len(plan)
                if job.kind != "optimal":  # A*'s plans are Fast Downward's optimal ones; the others are checked
                    verdict = validate_plan(load_search_task(resolve_domain(job.domain), path), plan)
                    outcome["valid"] = verdict.valid
                    if not verdict.valid:
                        outcome["message"] = verdict.message
    except Exception as err:  # noqa: BLE001 - recorded; one bad problem must not end the run
        outcome.update(status="exception", message=f"{type(err).__name__}: {err}")
    return outcome


def _draw_slots(domain: str, grid: SplitGrid, taken: dict[str, str], max_attempts: int) -> tuple[list[dict], list]:
    """The kept draw of every slot, in slot order, and the slots whose attempts were all rejected."""
    kept: list[dict] = []
    exhausted = []
    mine: dict[str, str] = {}
    for params, seed_number in grid.slots():
        rejected = []
        for attempt in range(max_attempts):
            seed = generator_seed("plan", domain, params, seed_number, attempt)
            text = generate(domain, seed, **dict(params))
            name = problem_name(domain, seed, **dict(params))
            problem = problem_from_text(text)
            if problem.trivial:
                rejected.append({"seed": seed, "status": "trivial"})
                continue
            key = instance_key(problem)
            repeat = taken.get(key) or mine.get(key)
            if repeat is not None:
                rejected.append({"seed": seed, "status": "duplicate", "of": repeat})
                continue
            mine[key] = f"plan set/{name}"
            kept.append({"instance": name, "params": dict(params), "cell": params_label(domain, params),
                         "seed_number": seed_number, "seed": seed, "attempt": attempt, "instance_key": key,
                         "rejected": rejected, "text": text})
            break
        else:
            exhausted.append({"params": dict(params), "seed_number": seed_number, "rejected": rejected})
    return kept, exhausted


def _labelled_plan_solves(root: Path, domain: str) -> dict[int, list[dict]]:
    """Optimal solves the labelled plan split's generation recorded, by generator seed (same seeds as the set)."""
    path = root / domain / MANIFEST
    entry = read_json(path)["splits"].get("plan") if path.is_file() else None
    if entry is None:
        return {}
    limit, memory = entry["settings"]["time_limit"], entry["settings"]["memory_limit_mb"]
    solves: dict[int, list[dict]] = {}

    def add(seed: int, status: str, seconds: float) -> None:
        solves.setdefault(seed, []).append({"status": status, "seconds": seconds, "time_limit": limit,
                                            "memory_limit_mb": memory, "source": "labelled plan split"})

    attempts = [a for cell in entry.get("out_of_reach_cells", []) for a in cell.get("attempts", [])]
    for inst in entry.get("instances", []):
        add(inst["seed"], "solved", inst["solve_seconds"])
        attempts += inst.get("rejected", [])
    for failure in entry.get("failures", []):
        attempts += failure.get("rejected", [])
    seen = set()
    for attempt in attempts:
        if "seconds" in attempt and (attempt["seed"], attempt["status"]) not in seen:
            seen.add((attempt["seed"], attempt["status"]))
            add(attempt["seed"], attempt["status"], attempt["seconds"])
    return solves


def _larger_budget(outcome: dict, max_nodes: int | None) -> bool:
    """Whether an exact solve that ran out of nodes is given more now (None: no bound) and so runs again."""
    if outcome.get("kind") != "exact" or outcome["status"] != "node_limit":
        return False
    return max_nodes is None or max_nodes > outcome["max_nodes"]


@dataclass
class PlanSetReport:
    """What a plan-set run did."""

    folder: Path
    instances: int
    exhausted: int
    solves_run: int
    wall_seconds: float


def _check_plan_set_arguments(domain: str, grid: str, count: int | None, max_attempts: int,
                              check_time_limit: float, optimal_time_limit: float | None, exact: bool,
                              exact_max_nodes: int | None) -> None:
    """A DatasetError naming the first argument of :func:`generate_plan_set` out of its range."""
    if domain not in DOMAINS:
        raise DatasetError(f"unknown domain {domain!r}; choose from {', '.join(DOMAINS)}")
    if grid not in PLAN_SETS:
        raise DatasetError(f"unknown plan set grid {grid!r}; choose from {', '.join(PLAN_SETS)}")
    for name, value in (("check_time_limit", check_time_limit), ("optimal_time_limit", optimal_time_limit),
                        ("count", count)):
        if value is not None and not value > 0:
            raise DatasetError(f"{name} must be positive, got {value}")
    if not 1 <= max_attempts < ATTEMPTS_PER_SLOT:
        raise DatasetError(f"max_attempts must be in 1..{ATTEMPTS_PER_SLOT - 1}, got {max_attempts}")
    if exact_max_nodes is not None and not exact_max_nodes > 0:
        raise DatasetError(f"exact_max_nodes must be positive, got {exact_max_nodes}")
    if exact and domain not in OPTIMAL_PLANS:
        raise DatasetError(f"{domain} has no exact solver (those that have one: {', '.join(sorted(OPTIMAL_PLANS))})")


def _recorded_solves(folder: Path, work: Path) -> dict[str, dict]:
    """The solves already run, by file name: those the manifest of an earlier run records for this set, and those
    an interrupted run left in the work folder (a torn one is removed, to be run again)."""
    recorded: dict[str, dict] = {}
    if (folder / MANIFEST).is_file():
        for inst in read_json(folder / MANIFEST)["instances"]:
            exact = [inst["exact"]] if "exact" in inst else []
            for outcome in [inst["satisficing"], *inst.get("optimal", []), *exact]:
                if "kind" in outcome:  # run for this set (the labelled split's solves are read again below)
                    outcome = {k: v for k, v in outcome.items() if k != "source"}
                    recorded[solve_file_name(inst["instance"], outcome["kind"], outcome["time_limit"])] = outcome
    for path in sorted((work / "solves").glob("*.json")):
        try:
            recorded[path.name] = read_json(path)
        except (OSError, ValueError):
            path.unlink()  # a torn record: that solve is simply run again
    return recorded


def _instance_records(root: Path, domain: str, grid: str, kept: list[dict], recorded: dict[str, dict],
                      check_time_limit: float) -> list[dict]:
    """The manifest's record of each kept instance, its problem file written: the satisficing solve, and the
    optimal ones of this set and of the labelled split; problem files of instances no longer kept are removed."""
    folder = plan_set_folder(root, domain, PLAN_SETS[grid])
    labelled = _labelled_plan_solves(root, domain)
    instances = []
    for inst in kept:
        relative = f"{domain}/{PLAN_SETS[grid]}/problems/{inst['instance']}.pddl"
        atomic_write_text(root / relative, inst["text"])
        satisficing = recorded[solve_file_name(inst["instance"], "satisficing", check_time_limit)]
        optimal = [dict(o, source="this plan set") for name, o in sorted(recorded.items())
                   if name.startswith(f"{inst['instance']}-optimal-")]
        optimal += labelled.get(inst["seed"], [])
        record = {k: v for k, v in inst.items() if k != "text"}
        record.update(problem=relative, sha256=sha256_file(root / relative), satisficing=satisficing,
                      optimal=optimal)
        exact = recorded.get(solve_file_name(inst["instance"], "exact", None))
        if exact is not None:
            record["exact"] = exact
        instances.append(record)
    wanted = {f"{inst['instance']}.pddl" for inst in kept}
    for stray in (folder / "problems").glob("*.pddl"):
        if stray.name not in wanted:
            stray.unlink()
    return instances


def generate_plan_set(
    root: str | os.PathLike,
    domain: str,
    grid: str = "test",
    count: int | None = None,
    max_attempts: int = MAX_ATTEMPTS,
    check_time_limit: float = CHECK_TIME_LIMIT,
    optimal_time_limit: float | None = None,
    memory_limit_mb: int = LABEL_MEMORY_LIMIT_MB,
    workers: int = 1,
    progress: bool = True,
    exact: bool = False,
    exact_max_nodes: int | None = None,
) -> PlanSetReport:
    """Draw (or resume, or extend with another ``optimal_time_limit`` or with ``exact`` h*) one domain's plan set in
    the dataset root ``root`` (module docstring)."""
    from tnlib.planning.fast_downward import fast_downward_version
    from tnlib.progress import progress as progress_display

    started = time.perf_counter()
    root = Path(root)
    _check_plan_set_arguments(domain, grid, count, max_attempts, check_time_limit, optimal_time_limit, exact,
                              exact_max_nodes)
    top = root / MANIFEST
    if not top.is_file():
        raise DatasetError(f"no dataset at {root} (no {MANIFEST}): a plan set is drawn into a dataset root")
    profile = read_json(top).get("profile", DEFAULT_PROFILE)
    taken = taken_instance_keys(root, domain)
    slots = plan_set_grid(profile, domain, grid, count)
    room = len(slots.combos) * len(slots.seeds)
    if count is not None and count > room:
        raise DatasetError(f"count {count} is more than the {room} slots of {domain}'s {grid} plan-set grid "
                           f"({len(slots.combos)} cells x {len(slots.seeds)} seed numbers); give at most {room}")
    folder = plan_set_folder(root, domain, PLAN_SETS[grid])
    work = root / domain / WORK / PLAN_SETS[grid]
    kept, exhausted = _draw_slots(domain, slots, taken, max_attempts)

    # Solves: recorded in the manifest of an earlier run, in the work folder of an interrupted one, or run now.
    recorded = _recorded_solves(folder, work)
    jobs = []
    for inst in kept:
        kinds = [("satisficing", check_time_limit)] + ([("optimal", optimal_time_limit)] if optimal_time_limit else [])
        kinds += [("exact", None)] if exact else []
        for kind, limit in kinds:
            job = SolveJob(domain, kind, inst["text"], inst["instance"], None if limit is None else float(limit),
                           memory_limit_mb, exact_max_nodes if kind == "exact" else None)
            if job.file_name not in recorded or _larger_budget(recorded[job.file_name], exact_max_nodes):
                jobs.append(job)
    if jobs:
        atomic_write_json(work / WORK_SETTINGS, {"grid": grid, "count": len(kept)})
        bar = progress_display(len(jobs), f"tnlib plan set {domain}", unit="solve", disable=not progress)
        try:
            for outcome in run_jobs(run_solve, jobs, workers):
                name = solve_file_name(outcome["instance"], outcome["kind"], outcome["time_limit"])
                atomic_write_json(work / "solves" / name, outcome)
                recorded[name] = outcome
                bar.update(1)
        finally:
            bar.close()

    instances = _instance_records(root, domain, grid, kept, recorded, check_time_limit)
    manifest = {
        "format": PLAN_SET_FORMAT,
        "domain": domain,
        "grid": grid,
        "profile": profile,
        "slots": slots.describe(),
        "settings": {"max_attempts": max_attempts, "seed_split": "plan",
                     "satisficing": f"Fast Downward lazy greedy h_FF, {check_time_limit:g} s, validated",
                     "memory_limit_mb": memory_limit_mb,
                     **({"exact": EXACT_RECORD} if instances and all("exact" in i for i in instances) else {})},
        "disjoint_from": {split: keys_fingerprint(k for k, where in taken.items() if where.startswith(f"{split}/"))
                          for split in sorted({where.split("/")[0] for where in taken.values()})},
        "fast_downward": fast_downward_version(),
        "counts": {"slots": len(slots.slots()), "instances": len(instances), "exhausted": len(exhausted),
                   "satisficing_solved": sum(i["satisficing"].get("valid", False) for i in instances)},
        "exhausted": exhausted,
        "instances": instances,
    }
    write_manifest(folder / MANIFEST, manifest)
    if work.exists():
        shutil.rmtree(work)
        with contextlib.suppress(OSError):  # the domain's work folder, unless a generate run is using it
            work.parent.rmdir()
    return PlanSetReport(folder, len(instances), len(exhausted), len(jobs), time.perf_counter() - started)
