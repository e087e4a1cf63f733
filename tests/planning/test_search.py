"""Search: GBFS/A*/BFS plans are validated, optimal searches match breadth-first h*, the evaluation contract
(each distinct state evaluated once, one batch per expansion, FIFO ties) holds, and runs are deterministic."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from planning_corpus import DATA, instance, problem_file, pyperplan_replays, random_walk_states
from tnlib.planning.heuristics import HEURISTIC_NAMES, make_heuristic
from tnlib.planning.plans import validate_plan
from tnlib.planning.search import (
    EVALUATION_LIMIT,
    EXHAUSTED,
    SOLVED,
    TIME_LIMIT,
    astar,
    breadth_first_search,
    gbfs,
    goal_distances,
    hstar,
)
from tnlib.planning.search_settings import DISTINCT, SearchSettings
from tnlib.planning.task import load_task
from tnlib.paper import DOMAINS



def assert_valid(task, result):
    assert result.status == SOLVED
    verdict = validate_plan(task, result.plan)
    assert verdict.valid, verdict.message


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("heuristic", ["ff", "lmcut", "hadd", "hmax", "goalcount"])
def test_gbfs_solves_and_plans_validate(corpus, domain, heuristic):
    # h_max is too weak a guide for 9-block blocksworld within 10,000 evaluations.
    size = "small" if heuristic == "hmax" else "medium"
    task = instance(corpus, domain, 1, size)
    result = gbfs(task, heuristic, SearchSettings(max_evaluations=None))
    assert_valid(task, result)
    assert pyperplan_replays(domain, problem_file(corpus, domain, 1, size), result.plan)
    assert result.evaluations >= 1
    assert result.expansions >= len(result.plan)  # the paper's protocol: goal test at generation
    assert result.generated >= result.evaluations


class RecordingHeuristic:
    """Wraps a heuristic and records every batch it is asked to evaluate."""

    def __init__(self, inner):
        self.inner = inner
        self.batches: list[list[bytes]] = []

    def __call__(self, states):
        self.batches.append(list(states))
        return self.inner.batch(states)


@pytest.mark.parametrize("domain", DOMAINS)
def test_each_state_evaluated_once_in_one_batch_per_expansion(corpus, domain):
    task = instance(corpus, domain, 2, "medium")
    recorder = RecordingHeuristic(make_heuristic("ff", task))
    result = gbfs(task, recorder, SearchSettings(protocol=DISTINCT))
    assert_valid(task, result)
    evaluated = [s for batch in recorder.batches for s in batch]
    assert len(evaluated) == len(set(evaluated)) == result.evaluations
    assert recorder.batches[0] == [task.init]
    assert len(recorder.batches) <= result.expansions + 1  # the initial state, then at most one per expansion
    successors = {p: {succ for _, succ in task.successors(p)} for p in evaluated}
    for k, batch in enumerate(recorder.batches[1:], start=1):
        assert batch  # no empty calls
        earlier = [p for b in recorder.batches[:k] for p in b]
        # the whole batch is the new successors of one state evaluated earlier (the expanded one)
        assert any(set(batch) <= successors[p] for p in earlier)


def test_blind_gbfs_breaks_ties_fifo_so_it_is_breadth_first(corpus):
    # With h = 1 everywhere but the goal, FIFO tie-breaking makes GBFS expand in breadth-first order: its plans
    # are optimal. LIFO or arbitrary tie-breaking would not guarantee that.
    for domain in DOMAINS:
        task = instance(corpus, domain, 3, "small")
        result = gbfs(task, "blind", SearchSettings(max_evaluations=None))
        assert_valid(task, result)
        assert len(result.plan) == hstar(task)


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("heuristic", ["lmcut", "hmax", "blind"])
def test_astar_is_optimal(corpus, domain, heuristic):
    task = instance(corpus, domain, 4, "small")
    result = astar(task, heuristic)
    assert_valid(task, result)
    assert pyperplan_replays(domain, problem_file(corpus, domain, 4, "small"), result.plan)
    assert not pyperplan_replays(domain, problem_file(corpus, domain, 4, "small"), result.plan[:-1])  # goal unmet
    assert len(result.plan) == hstar(task)


@pytest.mark.parametrize("domain", DOMAINS)
def test_bfs_matches_goal_distances(corpus, domain):
    task = instance(corpus, domain, 6, "small")
    distances = goal_distances(task)
    assert distances[task.init] == hstar(task)
    assert_valid(task, breadth_first_search(task))
    for state in random_walk_states(task, 15, seed=2):
        found = breadth_first_search(task, state)
        assert found.status == SOLVED
        assert len(found.plan) == distances[state]
        # A BFS plan from `state` is valid from `state`: replay it.
        for step in found.plan:
            state = task.apply(state, step)
        assert task.is_goal(state)


@pytest.mark.parametrize("protocol", ["paper", DISTINCT])
@pytest.mark.parametrize("limit", [None, 60])
def test_gbfs_reports_its_running_evaluation_count(corpus, protocol, limit):
    task = instance(corpus, "blocksworld", 1, "medium")
    heard = []
    settings = SearchSettings(protocol=protocol, max_evaluations=limit)
    result = gbfs(task, "goalcount", settings, heard.append)
    assert result.status == (SOLVED if limit is None else EVALUATION_LIMIT)
    assert heard[-1] == result.evaluations  # the end, whatever ended the search
    assert len(heard) > 10 and heard == sorted(heard) and heard[0] > 1  # after each expansion's batch
    unheard = gbfs(task, "goalcount", settings)  # listening changes nothing
    assert (unheard.status, unheard.plan, unheard.evaluations, unheard.expansions, unheard.generated) == (
        result.status, result.plan, result.evaluations, result.expansions, result.generated)


def test_limits_and_statuses(corpus):
    task = instance(corpus, "blocksworld", 1, "medium")
    limited = gbfs(task, "goalcount", SearchSettings(max_evaluations=50))
    assert limited.status == EVALUATION_LIMIT and limited.plan is None
    assert limited.evaluations <= 50
    timed = gbfs(task, "ff", SearchSettings(time_limit=0.0))
    assert timed.status == TIME_LIMIT and timed.evaluations == 1
    assert gbfs(task, "ff", SearchSettings(max_evaluations=0)).evaluations == 0
    astar_limited = astar(task, "goalcount", SearchSettings(DISTINCT, max_evaluations=50))
    assert astar_limited.status == EVALUATION_LIMIT and astar_limited.evaluations <= 50
    assert astar(task, "ff", SearchSettings(DISTINCT, time_limit=0.0)).status == TIME_LIMIT
    with pytest.raises(ValueError, match="A\\* counts each distinct state once"):
        astar(task, "ff", SearchSettings(max_evaluations=50))  # the paper's protocol is GBFS's alone

    unsolvable = load_task(DATA / "deadend-domain.pddl", DATA / "unsolvable-problem.pddl")
    for result in (gbfs(unsolvable, "ff", SearchSettings(protocol=DISTINCT)), astar(unsolvable, "ff")):
        assert result.status == EXHAUSTED and result.evaluations == 1 and result.expansions == 0
    # The paper's planner pushes the initial state whatever its value, so it expands even a dead end.
    paper = gbfs(unsolvable, "ff")
    assert paper.status == EXHAUSTED and paper.expansions == 1 and paper.evaluations == 1 + paper.generated
    assert breadth_first_search(unsolvable).status == EXHAUSTED
    assert hstar(unsolvable) == math.inf
    blind = gbfs(unsolvable, "blind", SearchSettings(protocol=DISTINCT))  # explores the whole (tiny) state space
    assert blind.status == EXHAUSTED and blind.evaluations == blind.generated

    deadend = load_task(DATA / "deadend-domain.pddl", DATA / "deadend-problem.pddl")
    result = gbfs(deadend, "ff")
    assert_valid(deadend, result)
    assert result.plan == ["(walk)", "(deliver)"]


def test_solved_at_the_initial_state():
    task = load_task("blocksworld", DATA / "bw-3.pddl")
    for step in ["(unstack a b)", "(putdown a)", "(pickup b)", "(stack b c)", "(pickup a)", "(stack a b)"]:
        task.init = task.apply(task.init, step)
    result = gbfs(task, "ff")
    assert result.status == SOLVED and result.plan == [] and result.evaluations == 1 and result.expansions == 1


def test_torch_style_float_heuristic(corpus):
    # A learned model returns float32 arrays; non-integer values and ties must work the same way.
    import numpy as np

    task = instance(corpus, "gripper", 1, "medium")
    ff = make_heuristic("ff", task)
    result = gbfs(task, lambda states: (ff.batch(states) * 0.5 + 0.25).astype(np.float32))
    reference = gbfs(task, ff)
    assert_valid(task, result)
    assert (result.plan, result.evaluations, result.expansions) == (
        reference.plan, reference.evaluations, reference.expansions)


_RUN = """
import json, sys
from tnlib.planning.task import load_task
from tnlib.planning.search import gbfs
task = load_task(sys.argv[1], sys.argv[2])
out = {}
for name in sys.argv[3:]:
    r = gbfs(task, name)
    out[name] = [r.status, r.plan, r.evaluations, r.expansions, r.generated]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_deterministic_across_processes_and_hash_seeds(corpus):
    path = problem_file(corpus, "visitall", 1, "medium")
    names = ["ff", "goalcount", "lmcut"]
    runs = []
    for seed in ("1", "999"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run([sys.executable, "-c", _RUN, "visitall", str(path), *names], env=env,
                              capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout))
    assert runs[0] == runs[1]
    task = load_task("visitall", path)
    for name in names:  # and the same as in this process
        r = gbfs(task, name)
        assert_valid(task, r)
        assert runs[0][name] == [r.status, r.plan, r.evaluations, r.expansions, r.generated]


def test_every_heuristic_name_is_searchable(corpus):
    task = instance(corpus, "ferry", 2, "small")
    for name in HEURISTIC_NAMES:
        assert_valid(task, gbfs(task, name, SearchSettings(max_evaluations=None)))


def test_bad_heuristic_output_is_refused(corpus):
    task = instance(corpus, "ferry", 1, "small")
    with pytest.raises(ValueError, match="NaN"):
        gbfs(task, lambda states: [float("nan")] * len(states))
    with pytest.raises(ValueError, match="values for"):
        gbfs(task, lambda states: [1.0])  # one value for every batch, whatever its size


def test_search_settings_refuse_what_gbfs_cannot_run():
    assert SearchSettings() == SearchSettings("paper", 10_000, None)  # the paper's protocol and limit
    for bad in (dict(protocol="pyperplan"), dict(max_evaluations=-1), dict(max_evaluations=True),
                dict(time_limit=-0.5)):
        with pytest.raises(ValueError):
            SearchSettings(**bad)


def test_the_evaluation_limit_is_defaulted_by_search_settings_alone():
    """Every other default of an evaluation limit reads ``PAPER_SEARCH.max_evaluations``: a parameter default or a
    dataclass field set to the paper's number itself would be a second home for the default."""
    import ast
    from pathlib import Path

    import tnlib

    defaults = []
    for path in sorted(Path(tnlib.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            values = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                values = node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
            elif isinstance(node, ast.ClassDef):
                values = [s.value for s in node.body if isinstance(s, ast.AnnAssign) and s.value is not None]
            defaults += [f"{path.name}:{value.lineno}" for value in values
                         if "MAX_EVALUATIONS" in ast.unparse(value)]
    assert [where.split(":")[0] for where in defaults] == ["search_settings.py"], defaults
