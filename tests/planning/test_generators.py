"""Tests for tnlib.planning.generators: distributions, PDDL validity, determinism, parameter checks and the CLI."""
from __future__ import annotations

import collections
import random
import re
from pathlib import Path

import pytest
from pyperplan.grounding import ground
from pyperplan.pddl.parser import Parser
from scipy.stats import binomtest, chisquare

from tnlib import cli
from tnlib.planning.generators import (
    DOMAIN_NAMES,
    blocksworld_completions,
    blocksworld_state_count,
    canonical_blocksworld_state,
    domain_file,
    generate,
    problem_name,
    sample_blocksworld_state,
    visitall_goal_probability,
)

SMALL_PARAMS = {
    "blocksworld": [{"blocks": 1}, {"blocks": 2}, {"blocks": 5}, {"blocks": 9}],
    "ferry": [{"locations": 1, "cars": 0}, {"locations": 2, "cars": 2}, {"locations": 4, "cars": 3}],
    "gripper": [{"balls": 1}, {"balls": 4}],
    "visitall": [{"x": 1, "y": 1, "ratio": 1.0}, {"x": 3, "y": 3, "ratio": 0.5}, {"x": 2, "y": 4, "ratio": 1.0}],
}
ALL_CASES = [(domain, params) for domain, grid in SMALL_PARAMS.items() for params in grid]


def parse_problem(domain: str, text: str, tmp_path: Path):
    """pyperplan's parse of a generated problem against the shipped domain file."""
    problem_file = tmp_path / "problem.pddl"
    problem_file.write_text(text)
    parser = Parser(str(domain_file(domain)), str(problem_file))
    return parser.parse_problem(parser.parse_domain())


def atoms(text: str, section: str) -> list[tuple[str, ...]]:
    """Atoms of the :init or :goal section of a generated problem, as tuples of names."""
    body = text.split(f"(:{section}", 1)[1]
    body = body.split("(:", 1)[0]
    return [tuple(m.split()) for m in re.findall(r"\(([a-z][^()]*)\)", body) if m.strip() != "and"]


# ---------------------------------------------------------------------------------------------------------------
# Blocksworld sampler


def test_blocksworld_state_counts():
    assert [blocksworld_state_count(n) for n in range(1, 7)] == [1, 3, 13, 73, 501, 4051]
    # The recurrence itself, on a few entries, and exactness at sizes where floats would round.
    for n in range(6):
        for k in range(6):
            assert blocksworld_completions(n + 1, k) == (n + k) * blocksworld_completions(n, k) + (
                blocksworld_completions(n, k + 1)
            )
    assert isinstance(blocksworld_state_count(40), int) and blocksworld_state_count(40) > 2**64


def all_states(blocks: int) -> set:
    """Every state of `blocks` blocks, enumerated independently of the sampler: place blocks one at a time."""
    states = {()}
    for block in range(1, blocks + 1):
        grown = set()
        for state in states:
            towers = [list(t) for t in state]
            grown.add(canonical_blocksworld_state(towers + [[block]]))  # on the table
            # Or at any height of an existing tower, bottom included: removing the newest block undoes exactly one
            # such insertion, so every state is made exactly once.
            for i, tower in enumerate(towers):
                for pos in range(len(tower) + 1):
                    new = [list(t) for t in towers]
                    new[i] = tower[:pos] + [block] + tower[pos:]
                    grown.add(canonical_blocksworld_state(new))
        states = grown
    return states


def test_enumeration_matches_counts():
    assert [len(all_states(n)) for n in range(1, 6)] == [1, 3, 13, 73, 501]


def test_blocksworld_sampler_is_uniform():
    states = sorted(all_states(4))
    assert len(states) == 73
    rng = random.Random(20240601)
    samples = 73 * 200
    counts = collections.Counter(sample_blocksworld_state(4, rng) for _ in range(samples))
    assert set(counts) <= set(states)
    observed = [counts[s] for s in states]
    assert min(observed) > 0
    # A biased sampler (e.g. a fair coin for grounding) fails this by hundreds of sigma at this sample size.
    assert chisquare(observed).pvalue > 1e-3


def test_blocksworld_state_is_a_partition():
    rng = random.Random(3)
    for blocks in (1, 2, 7, 20):
        state = sample_blocksworld_state(blocks, rng)
        assert sorted(b for tower in state for b in tower) == list(range(1, blocks + 1))
        assert state == canonical_blocksworld_state(state)


def test_blocksworld_pddl_matches_spec(tmp_path):
    text = generate("blocksworld", 5, blocks=6)
    init, goal = atoms(text, "init"), atoms(text, "goal")
    assert ("arm-empty",) in init
    on = {(a[1], a[2]) for a in init if a[0] == "on"}
    on_table = {a[1] for a in init if a[0] == "on-table"}
    clear = {a[1] for a in init if a[0] == "clear"}
    blocks = {f"b{i}" for i in range(1, 7)}
    assert on_table | {upper for upper, _ in on} == blocks and not on_table & {upper for upper, _ in on}
    assert clear == blocks - {lower for _, lower in on}
    assert goal and all(a[0] == "on" for a in goal)  # only `on` goals


# ---------------------------------------------------------------------------------------------------------------
# Every instance is valid PDDL for the shipped domain


@pytest.mark.parametrize("domain,params", ALL_CASES)
def test_generated_instances_parse_and_ground(domain, params, tmp_path):
    for seed in (1, 2):
        text = generate(domain, seed, **params)
        assert f"(:domain {DOMAIN_NAMES[domain]})" in text
        problem = parse_problem(domain, text, tmp_path)
        assert problem.name == problem_name(domain, seed, **params)
        task = ground(problem, remove_statics_from_initial_state=False, remove_irrelevant_operators=False)
        assert task.initial_state


def test_domain_names_match_shipped_files():
    for domain, name in DOMAIN_NAMES.items():
        assert f"(domain {name})" in domain_file(domain).read_text()


# ---------------------------------------------------------------------------------------------------------------
# Determinism


@pytest.mark.parametrize("domain,params", [(d, grid[-1]) for d, grid in SMALL_PARAMS.items()])
def test_determinism(domain, params):
    assert generate(domain, 11, **params) == generate(domain, 11, **params)
    texts = {generate(domain, seed, **params).split("\n", 1)[1] for seed in range(1, 11)}
    assert len(texts) > 1  # bodies (the name carries the seed) differ across seeds


def test_no_global_random_state_used():
    random.seed(0)
    before = random.random()
    random.seed(0)
    generate("blocksworld", 1, blocks=5)
    assert random.random() == before


def test_problem_names():
    assert problem_name("blocksworld", 1, blocks=5) == "blocksworld-b5-s1"
    assert problem_name("ferry", 7, locations=3, cars=2) == "ferry-l3-c2-s7"
    assert problem_name("gripper", 1, balls=4) == "gripper-b4-s1"
    assert problem_name("visitall", 2, x=3, y=3, ratio=0.5) == "visitall-x3-y3-r0.5-s2"
    assert problem_name("visitall", 2, x=3, y=3, ratio=1.0) == "visitall-x3-y3-r1-s2"


# ---------------------------------------------------------------------------------------------------------------
# Ferry, gripper, visitall distributions


def test_ferry_structure_and_uniform_positions():
    locations, cars = 3, 4
    counts = collections.Counter()
    trials = 600
    for seed in range(trials):
        text = generate("ferry", seed, locations=locations, cars=cars)
        init, goal = atoms(text, "init"), atoms(text, "goal")
        assert sum(a[0] == "not-eq" for a in init) == locations * (locations - 1)
        assert ("empty-ferry",) in init
        ferry = [a[1] for a in init if a[0] == "at-ferry"]
        assert len(ferry) == 1
        assert sorted(a[1] for a in goal) == [f"c{i}" for i in range(cars)]  # every car, even if already there
        assert all(a[0] == "at" for a in goal)
        counts.update(("origin", a[2]) for a in init if a[0] == "at")
        counts.update(("dest", a[2]) for a in goal)
        counts[("ferry", ferry[0])] += 1
    for kind, n in (("origin", trials * cars), ("dest", trials * cars), ("ferry", trials)):
        observed = [counts[(kind, f"l{i}")] for i in range(locations)]
        assert sum(observed) == n
        assert chisquare(observed).pvalue > 1e-3, (kind, observed)


def test_gripper_rooms_are_fair_coins():
    balls = 4
    counts = collections.Counter()
    trials = 500
    for seed in range(trials):
        text = generate("gripper", seed, balls=balls)
        init, goal = atoms(text, "init"), atoms(text, "goal")
        assert {("free", "left"), ("free", "right")} <= set(init)
        assert not any(a[0] == "carry" for a in init)
        assert sorted(a[1] for a in goal) == [f"ball{i}" for i in range(balls)]
        counts.update(("start", a[2]) for a in init if a[0] == "at")
        counts.update(("robot", a[1]) for a in init if a[0] == "at-robby")
        counts.update(("goal", a[2]) for a in goal)
    for kind, n in (("start", trials * balls), ("robot", trials), ("goal", trials * balls)):
        assert counts[(kind, "rooma")] + counts[(kind, "roomb")] == n
        assert binomtest(counts[(kind, "rooma")], n, 0.5).pvalue > 1e-3, (kind, counts)


def test_visitall_goal_fraction_and_start():
    x, y, ratio = 3, 4, 0.5
    goals_seen = non_start_cells = 0
    start_counts = collections.Counter()
    trials = 400
    for seed in range(trials):
        text = generate("visitall", seed, x=x, y=y, ratio=ratio)
        init, goal = atoms(text, "init"), atoms(text, "goal")
        (start,) = [a[1] for a in init if a[0] == "at-robot"]
        assert ("visited", start) in init and ("visited", start) in goal
        assert sum(a[0] == "connected" for a in init) == 2 * ((x - 1) * y + x * (y - 1))
        start_counts[start] += 1
        goals_seen += len(goal) - 1
        non_start_cells += x * y - 1
    p = visitall_goal_probability(x, y, ratio)
    assert p == 0.5  # 12 cells: draws 0..5 of 0..11 are below 6
    assert binomtest(goals_seen, non_start_cells, p).pvalue > 1e-3
    observed = [start_counts[f"loc-x{i}-y{j}"] for i in range(x) for j in range(y)]
    assert chisquare(observed).pvalue > 1e-3


def test_visitall_goal_probability_follows_integer_draws():
    # IPC draws d in {0..x*y-1} and keeps d < ratio*x*y: 3x3 at ratio 0.5 keeps 5 of 9.
    assert visitall_goal_probability(3, 3, 0.5) == pytest.approx(5 / 9)
    assert visitall_goal_probability(5, 5, 1.0) == 1.0


def test_visitall_ratio_one_visits_everything():
    text = generate("visitall", 3, x=3, y=2, ratio=1.0)
    assert len(atoms(text, "goal")) == 6


# ---------------------------------------------------------------------------------------------------------------
# Parameter checks


@pytest.mark.parametrize(
    "domain,params,name",
    [
        ("blocksworld", {"blocks": 0}, "blocks"),
        ("blocksworld", {"blocks": 2.5}, "blocks"),
        ("blocksworld", {"blocks": "3"}, "blocks"),
        ("ferry", {"locations": 0, "cars": 1}, "locations"),
        ("ferry", {"locations": 2, "cars": -1}, "cars"),
        ("gripper", {"balls": 0}, "balls"),
        ("visitall", {"x": 0, "y": 3, "ratio": 0.5}, "x"),
        ("visitall", {"x": 3, "y": -1, "ratio": 0.5}, "y"),
        ("visitall", {"x": 3, "y": 3, "ratio": 0.0}, "ratio"),
        ("visitall", {"x": 3, "y": 3, "ratio": 1.5}, "ratio"),
        ("visitall", {"x": 3, "y": 3, "ratio": float("nan")}, "ratio"),
        ("visitall", {"x": 3, "y": 3}, "ratio"),
        ("gripper", {"balls": 2, "blocks": 3}, "blocks"),
    ],
)
def test_out_of_range_parameters(domain, params, name):
    with pytest.raises(ValueError, match=name):
        generate(domain, 1, **params)


def test_bad_domain_and_seed():
    with pytest.raises(ValueError, match="domain"):
        generate("sokoban", 1, boxes=2)
    with pytest.raises(ValueError, match="seed"):
        generate("gripper", 1.5, balls=2)
    with pytest.raises(ValueError, match="seed"):
        generate("gripper", -1, balls=2)  # would repeat seed 1


# ---------------------------------------------------------------------------------------------------------------
# CLI


def test_cli_stdout_and_file(tmp_path, capsys):
    assert cli.main(["generate", "ferry", "--seed", "3", "--locations", "3", "--cars", "2"]) == 0
    assert capsys.readouterr().out == generate("ferry", 3, locations=3, cars=2)
    out = tmp_path / "sub" / "p.pddl"
    assert cli.main(["generate", "visitall", "--seed", "4", "--x", "3", "--y", "3", "--ratio", "0.5", "-o", str(out)]) == 0
    assert out.read_text() == generate("visitall", 4, x=3, y=3, ratio=0.5)


@pytest.mark.parametrize(
    "argv,fragment",
    [
        (["generate", "blocksworld", "--seed", "1"], "--blocks"),
        (["generate", "blocksworld", "--seed", "1", "--blocks", "0"], "blocks"),
        (["generate", "gripper", "--seed", "1", "--balls", "2", "--cars", "3"], "--cars"),
        (["generate", "visitall", "--seed", "1", "--x", "3", "--y", "3", "--ratio", "2"], "ratio"),
    ],
)
def test_cli_user_errors(argv, fragment, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "error" in err and fragment in err


def test_numpy_parameters_are_accepted():
    import numpy as np

    assert generate("ferry", np.int64(3), locations=np.int64(3), cars=np.int32(2)) == generate(
        "ferry", 3, locations=3, cars=2
    )
    assert generate("visitall", 1, x=3, y=3, ratio=np.float64(0.5)) == generate("visitall", 1, x=3, y=3, ratio=0.5)
    assert problem_name("visitall", 1, x=3, y=3, ratio=1) == problem_name("visitall", 1, x=3, y=3, ratio=1.0)


def test_data_readmes_regeneration_example_rewrites_a_shipped_problem_byte_for_byte(capsys):
    """data/README.md names a shipped instance and the `tnlib generate` command that rewrites its problem file:
    the name must be one data/small holds, and the command's output that file, byte for byte."""
    root = Path(__file__).resolve().parents[2]
    readme = (root / "data" / "README.md").read_text()
    name, = re.findall(r"e\.g\.\s+`(blocksworld-b5-s\d+)`", readme)
    command = re.search(r"`tnlib generate (blocksworld --seed (\d+) --blocks 5)` rewrites", readme)
    assert command and name == problem_name("blocksworld", int(command.group(2)), blocks=5)
    shipped = root / "data" / "small" / "blocksworld" / "problems" / "train" / f"{name}.pddl"
    assert shipped.is_file(), f"data/README.md's example {name} is not a shipped instance"
    assert cli.main(["generate", *command.group(1).split()]) == 0
    assert capsys.readouterr().out == shipped.read_text()
