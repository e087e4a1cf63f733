"""One attempt of one slot, solved and labelled: the job a dataset generation runs in its workers (a pool
process, a Dask worker, or in-process) and the filling of out-of-reach slots runs in-process.

One job per attempt, not per slot: which attempt a slot keeps depends on the other slots' instances
(:func:`tnlib.data.attempt_selection.select_attempts` runs in the coordinator, :mod:`tnlib.data.generation`), so
workers only solve and label.
"""
from __future__ import annotations

import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tnlib.data.exact_solves import solve_exactly
from tnlib.data.profiles import Params, generator_seed, slot_key
from tnlib.data.schema import DEFAULT_SOLVER, EXACT_SOLVER, TNLIB_LMCUT
from tnlib.planning.generators import generate, problem_name


@dataclass(frozen=True)
class AttemptJob:
    """Solve and label one attempt of one slot. ``reuse``: a cached solve of the same problem bytes
    (:mod:`tnlib.data.solution_cache`): its plan is labelled (and so validated) without running the planner."""

    domain: str
    split: str
    params: Params
    seed_number: int
    attempt: int
    time_limit: float
    memory_limit_mb: int | None
    sat_max_evaluations: int | None
    reuse: dict | None = None
    solver: str = DEFAULT_SOLVER
    lmcut: str = TNLIB_LMCUT

    @property
    def seed(self) -> int:
        return generator_seed(self.split, self.domain, self.params, self.seed_number, self.attempt)

    @property
    def key(self) -> str:
        return slot_key(self.domain, self.params, self.seed_number)


def run_attempt(job: AttemptJob) -> dict:
    """Generate, solve and label one attempt; a JSON-ready outcome (never raises: planner failures are a
    ``status``, a Python exception is status ``exception`` with the traceback's last line as ``message``).

    Keys: ``seed``, ``attempt``, ``status`` (``solved``, a failure of :func:`tnlib.planning.fast_downward.solve`,
    ``trivial`` or ``exception``), ``worker_seconds``; failures add ``seconds`` (the solve's); solved ones add the
    plan, solve and label statistics, ``records`` and ``solve_reused``.
    """
    from tnlib.data.labels import label_instance
    from tnlib.planning.fast_downward import solve

    started = time.perf_counter()
    seed = job.seed
    result: dict[str, Any] = {"seed": seed, "attempt": job.attempt}
    with tempfile.TemporaryDirectory(prefix="tnlib-data-") as tmp:
        try:
            text = generate(job.domain, seed, **dict(job.params))
            path = Path(tmp) / f"{problem_name(job.domain, seed, **dict(job.params))}.pddl"
            path.write_text(text)
            if job.reuse is not None:
                plan, status = list(job.reuse["plan"]), "solved"
                solve_seconds, expansions = job.reuse["solve_seconds"], job.reuse["expansions"]
            elif job.solver == EXACT_SOLVER:
                exact = solve_exactly(job.domain, path)
                plan, status = exact.plan, "solved" if exact.plan else "trivial"
                solve_seconds, expansions = round(exact.seconds, 4), None
            else:
                solved = solve(job.domain, path, time_limit=job.time_limit, memory_limit_mb=job.memory_limit_mb)
                plan, status = solved.plan, solved.status
                solve_seconds, expansions = round(solved.seconds, 4), solved.expansions
                if solved.solved and not solved.plan:
                    status = "trivial"  # selection filters these out before solving; kept as a safeguard
            if status != "solved":
                result.update(status=status, seconds=round(solve_seconds, 3))
            else:
                records, timing = label_instance(job.domain, path, plan, job.sat_max_evaluations, job.lmcut)
                result.update(
                    status="solved",
                    plan=plan,
                    plan_length=len(plan),
                    solve_seconds=solve_seconds,
                    expansions=expansions,
                    solve_reused=job.reuse is not None,
                    label_seconds=round(timing.total, 4),
                    label_h_sat_seconds=round(timing.h_sat, 4),
                    records=records,
                )
        except Exception as err:  # noqa: BLE001 - recorded in the manifest; a bug must not kill the whole run
            line = traceback.format_exception_only(type(err), err)[-1].strip()
            result.update(status="exception", message=line)
    result["worker_seconds"] = round(time.perf_counter() - started, 4)
    return result


__all__ = ["AttemptJob", "run_attempt"]
