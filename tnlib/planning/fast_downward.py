"""Optimal plans with Fast Downward (A* + LM-cut), as the paper labelled its instances.

Where Fast Downward comes from: the ``up-fast-downward`` wheel ships a compiled search binary at
``up_fast_downward/downward/builds/release/bin/downward`` (found through the package's directory; the package
itself is never imported, because its ``__init__`` needs ``unified_planning``). The translator is the
``fast-downward.translate`` package, run as ``python -m fast_downward.translate``. Both run offline.

Each run is two processes, in a fresh temporary folder (Fast Downward's default output names would clash between
parallel runs):

1. ``python -m fast_downward.translate DOMAIN PROBLEM --sas-file output.sas``
2. ``downward --search "astar(lmcut())" --internal-plan-file sas_plan < output.sas``

A gzip-compressed problem file (``.gz``, :func:`tnlib.planning.pddl.read_pddl_text`) is written out plain into that
folder first: the translator reads plain PDDL only.

Limits: each process starts its own session (process group) with ``RLIMIT_AS`` (memory) and ``RLIMIT_CPU`` (the
time left) set, so Fast Downward stops itself with its usual exit codes; as a backstop, tnlib kills the whole group
when the wall clock passes the time left plus a margin, so no process outlives a time-out.

Exit codes (Fast Downward's driver/returncodes.py) map to ``SolveResult.status``:
0 ``solved``; 10/11/12 ``unsolvable`` (translator proved it, search proved it, incomplete search gave up -- A* is
complete, so 12 does not occur here); 20/22/24 ``out_of_memory``; 21/23 ``timeout``; anything else ``error``, with
the log kept.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import importlib.util
import math
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tnlib.executors import die_with_parent
from tnlib.paper import LABEL_MEMORY_LIMIT_MB, LABEL_TIME_LIMITS
from tnlib.errors import TaskError
from tnlib.planning.pddl import is_compressed, read_pddl_text, resolve_domain

SEARCH = "astar(lmcut())"

# The wall-clock backstop fires this long after the time limit (plus a share of it): Fast Downward's own
# CPU-time limit normally ends the run first, with a clean exit code.
WALL_CLOCK_MARGIN_S = 1.0
WALL_CLOCK_MARGIN_FRACTION = 0.05
# Tests switch this off to exercise the kill path.
_USE_CPU_RLIMIT = True

STATUS_BY_EXIT_CODE = {
    0: "solved",
    10: "unsolvable",
    11: "unsolvable",
    12: "unsolvable",
    20: "out_of_memory",
    22: "out_of_memory",
    24: "out_of_memory",
    21: "timeout",
    23: "timeout",
}


@dataclass
class SolveResult:
    """The outcome of one Fast Downward run.

    ``plan`` holds lower-case ``(op arg ...)`` strings and ``cost`` its cost (all four domains are unit cost, so
    the plan length) when solved; None otherwise. ``seconds`` is the wall-clock time of translate + search.
    ``expansions`` is parsed from the search log when present. ``exit_code`` is the last stage's exit code (None
    when tnlib killed it). ``log`` holds both stages' output when the status is ``error``.
    """

    status: str
    plan: list[str] | None = None
    cost: float | None = None
    seconds: float = 0.0
    expansions: int | None = None
    initial_heuristic: float | None = None
    exit_code: int | None = None
    log: str | None = None

    @property
    def solved(self) -> bool:
        return self.status == "solved"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------------------------------------------------------
# Locating Fast Downward


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)  # finds without importing
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"package {name!r} is not installed; install tnlib's dependencies (make env)")
    return Path(list(spec.submodule_search_locations)[0])


def search_binary() -> Path:
    """The compiled Fast Downward search binary shipped in the ``up-fast-downward`` wheel."""
    binary = _package_dir("up_fast_downward") / "downward" / "builds" / "release" / "bin" / "downward"
    if not binary.is_file():
        raise RuntimeError(f"Fast Downward search binary not found at {binary}")
    return binary


def translate_command() -> list[str]:
    """The command that runs the ``fast-downward.translate`` package's translator."""
    if importlib.util.find_spec("fast_downward.translate") is None:
        raise RuntimeError("the fast-downward.translate package is not installed")
    return [sys.executable, "-m", "fast_downward.translate"]


@functools.lru_cache(maxsize=1)
def fast_downward_version() -> str:
    """A one-line description of the Fast Downward in use, for dataset manifests.

    e.g. ``Fast Downward 26.6 (search revision 7ea275526; up-fast-downward 1.0.0; fast-downward.translate 26.6.0)``.
    """
    base = _package_dir("up_fast_downward") / "downward"
    match = re.search(r'__version__\s*=\s*"([^"]+)"', (base / "driver" / "version.py").read_text())
    release = match.group(1) if match else "unknown"
    # The binary prints its revision first thing, then fails on the empty input: that is all we need from it.
    probe = subprocess.run(
        [str(search_binary())], input="", capture_output=True, text=True, timeout=60, start_new_session=True
    )
    rev = re.search(r"Search code revision: (\S+)", probe.stdout + probe.stderr)
    parts = [f"search revision {rev.group(1) if rev else 'unknown'}"]
    for dist in ("up-fast-downward", "fast-downward.translate"):
        try:
            parts.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{dist} missing")
    return f"Fast Downward {release} ({'; '.join(parts)})"


def resolve_domain_file(domain: str | os.PathLike) -> Path:
    """A domain argument as a file: a shipped domain key (``blocksworld``...) or a path (tnlib.planning.task's rules);
    a FileNotFoundError for one that names no file, as for a problem file that is not there."""
    try:
        return resolve_domain(domain)
    except TaskError as err:
        raise FileNotFoundError(str(err)) from err


# ---------------------------------------------------------------------------------------------------------------
# Running one stage


@dataclass
class StageRun:
    exit_code: int | None  # None: killed by tnlib at the wall-clock backstop
    output: str


def _limits_setter(memory_limit_mb: int | None, cpu_seconds: float | None):
    """A preexec function applying the memory and CPU-time limits inside the child, before exec."""

    def apply() -> None:
        die_with_parent()
        if memory_limit_mb is not None:
            limit = int(memory_limit_mb) * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        if cpu_seconds is not None:
            soft = max(1, math.ceil(cpu_seconds))
            # SIGXCPU at the soft limit lets Fast Downward exit with its out-of-time code; SIGKILL at the hard one.
            resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 5))

    return apply


def run_stage(
    command: list[str], cwd: Path, stdin_path: Path | None, time_left: float, memory_limit_mb: int | None
) -> StageRun:
    """Run one process in its own session, killing the session if it outlives ``time_left`` (+ margin)."""
    log_path = cwd / f"{Path(command[0]).name}-{len(os.listdir(cwd))}.log"
    env = dict(os.environ, PYTHONHASHSEED="0")  # translator output order stable across runs
    with open(log_path, "w+b") as log, open(stdin_path or os.devnull, "rb") as stdin:
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            stdin=stdin,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=_limits_setter(memory_limit_mb, time_left if _USE_CPU_RLIMIT else None),
        )
        # The CPU limit rounds up to whole seconds; the backstop waits for that plus the margin. On a loaded machine
        # (CPU time < wall time) the backstop may fire first; the status is "timeout" either way.
        cpu_limit = max(1, math.ceil(time_left))
        wall_limit = cpu_limit + WALL_CLOCK_MARGIN_S + WALL_CLOCK_MARGIN_FRACTION * cpu_limit
        try:
            exit_code: int | None = proc.wait(timeout=wall_limit)
        except subprocess.TimeoutExpired:
            exit_code = None
        finally:
            if proc.returncode is None:
                # Kill the whole group before reaping the leader, so its pid (= the group id) cannot be reused.
                _kill_group(proc.pid)
                proc.wait()
        log.seek(0)
        output = log.read().decode("utf-8", errors="replace")
    return StageRun(exit_code, output)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# ---------------------------------------------------------------------------------------------------------------
# Solving


def _parse_plan(text: str) -> tuple[list[str], float | None]:
    steps = [line.strip().lower() for line in text.splitlines() if line.strip().startswith("(")]
    cost_match = re.search(r";\s*cost\s*=\s*([0-9.]+)", text)
    return steps, float(cost_match.group(1)) if cost_match else float(len(steps))


_EMPTY_GOAL = re.compile(r"\(\s*:goal\s*(\(\s*and\s*\)\s*)?\)", re.IGNORECASE)


def _has_empty_goal(problem_text: str) -> bool:
    """Whether the problem's goal is written as an empty conjunction, ``(:goal (and))`` or ``(:goal)``."""
    without_comments = re.sub(r";[^\n]*", "", problem_text)
    return _EMPTY_GOAL.search(without_comments) is not None


def _parse_initial_heuristic(log: str) -> float | None:
    match = re.search(r"Initial heuristic value for [^:]+: (\S+)", log)
    if not match:
        return None
    value = match.group(1)
    return math.inf if value == "infinity" else float(value)


def run_fast_downward(
    domain_file: str | os.PathLike,
    problem_file: str | os.PathLike,
    search: str,
    time_limit: float,
    memory_limit_mb: int | None,
) -> tuple[SolveResult, str | None]:
    """Translate + search in a temporary folder; returns the result and the plan file's text (if any)."""
    domain_path = resolve_domain_file(domain_file).resolve()
    problem_path = Path(problem_file).resolve()
    if not problem_path.is_file():
        raise FileNotFoundError(f"problem file {str(problem_file)!r} does not exist")
    if time_limit <= 0:
        raise ValueError(f"time_limit must be positive, got {time_limit}")
    if memory_limit_mb is not None and memory_limit_mb <= 0:
        raise ValueError(f"memory_limit_mb must be positive, got {memory_limit_mb}")

    start = time.monotonic()
    problem_text = read_pddl_text(problem_path) if is_compressed(problem_path) else None
    if _has_empty_goal(problem_text or problem_path.read_text(errors="replace")):
        # Fast Downward's translator turns an empty goal `(and)` into an axiom, which A* + LM-cut rejects as
        # unsupported (exit 34). The empty plan solves such a task, and every goal-aware heuristic is 0 on it.
        result = SolveResult("solved", plan=[], cost=0.0, expansions=0, initial_heuristic=0.0, exit_code=0)
        result.seconds = time.monotonic() - start
        return result, "; cost = 0 (unit cost)\n"
    logs: list[str] = []
    with tempfile.TemporaryDirectory(prefix="tnlib-fd-") as tmp:
        folder = Path(tmp)
        if problem_text is not None:  # the translator reads plain PDDL only
            problem_path = folder / "problem.pddl"
            problem_path.write_text(problem_text, encoding="utf-8")
        stage = run_stage(
            translate_command() + [str(domain_path), str(problem_path), "--sas-file", "output.sas"],
            folder,
            None,
            time_limit,
            memory_limit_mb,
        )
        logs.append(stage.output)
        if stage.exit_code == 0:
            time_left = time_limit - (time.monotonic() - start)
            if time_left <= 0:
                stage = StageRun(None, "")
            else:
                stage = run_stage(
                    [str(search_binary()), "--search", search, "--internal-plan-file", "sas_plan"],
                    folder,
                    folder / "output.sas",
                    time_left,
                    memory_limit_mb,
                )
                logs.append(stage.output)
        plan_path = folder / "sas_plan"
        plan_text = plan_path.read_text() if plan_path.is_file() else None
    seconds = time.monotonic() - start

    log = "\n".join(logs)
    if stage.exit_code is None:
        status = "timeout"
    else:
        status = STATUS_BY_EXIT_CODE.get(stage.exit_code, "error")
    if status == "solved" and plan_text is None:
        status = "error"  # exit 0 without a plan happens only when something is badly wrong
    expansions = re.findall(r"Expanded (\d+) state\(s\)\.", log)
    result = SolveResult(
        status=status,
        seconds=seconds,
        expansions=int(expansions[-1]) if expansions else None,
        initial_heuristic=_parse_initial_heuristic(log),
        exit_code=stage.exit_code,
        log=log if status == "error" else None,
    )
    if status == "solved":
        result.plan, result.cost = _parse_plan(plan_text)
    return result, plan_text


def solve(
    domain_file: str | os.PathLike,
    problem_file: str | os.PathLike,
    time_limit: float = LABEL_TIME_LIMITS["train"],
    memory_limit_mb: int | None = LABEL_MEMORY_LIMIT_MB,
) -> SolveResult:
    """An optimal plan by Fast Downward's A* with LM-cut, within ``time_limit`` seconds and ``memory_limit_mb``.

    ``domain_file`` may be a shipped domain key (``blocksworld``, ``ferry``, ``gripper``, ``visitall``) or a path.
    Never raises for planner failures (see ``SolveResult.status``); raises FileNotFoundError / ValueError for bad
    arguments and RuntimeError when Fast Downward is not installed.
    """
    result, _ = run_fast_downward(domain_file, problem_file, SEARCH, time_limit, memory_limit_mb)
    return result


# A satisficing plan, fast: lazy greedy search with h_FF and its preferred operators (one h_FF shared by both).
SATISFICING_SEARCH = "let(hff, ff(), lazy_greedy([hff], preferred=[hff]))"


def solve_satisficing(
    domain_file: str | os.PathLike,
    problem_file: str | os.PathLike,
    time_limit: float = 60,
    memory_limit_mb: int | None = 4000,
) -> SolveResult:
    """A plan, not necessarily optimal, by Fast Downward's lazy greedy search with h_FF: a cheap proof that a
    problem is solvable. Arguments and failures as :func:`solve`."""
    result, _ = run_fast_downward(domain_file, problem_file, SATISFICING_SEARCH, time_limit, memory_limit_mb)
    return result


def fd_heuristic_value(
    domain_file: str | os.PathLike,
    problem_file: str | os.PathLike,
    heuristic: str = "lmcut()",
    time_limit: float = 60,
    memory_limit_mb: int | None = 4000,
) -> float | None:
    """Fast Downward's value of ``heuristic`` on the initial state (``math.inf`` for a detected dead end).

    Runs ``astar(HEURISTIC, bound=0)``, which evaluates the initial state and stops. None when Fast Downward did
    not report a value (time-out, error). Note the value is for Fast Downward's translated (SAS+) task, which can
    differ from the PDDL grounding in simplifications (e.g. unreachable or irrelevant facts dropped).
    """
    result, _ = run_fast_downward(
        domain_file, problem_file, f"astar({heuristic}, bound=0)", time_limit, memory_limit_mb
    )
    return result.initial_heuristic


__all__ = [
    "SEARCH",
    "SolveResult",
    "StageRun",
    "fast_downward_version",
    "fd_heuristic_value",
    "resolve_domain_file",
    "run_stage",
    "run_fast_downward",
    "search_binary",
    "solve",
    "solve_satisficing",
    "translate_command",
]
