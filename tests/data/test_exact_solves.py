"""Generation with the exact solvers (tnlib.data.exact_solves): the same instances and h* as Fast Downward's A* with
LM-cut where both run, the route recorded in the manifest, A* kept for a domain without an exact solver; and the
test-grid split: the test split's draws labelled in full, disjoint from train and val, verified and loaded."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tnlib.data.exact_solves import split_solver
from tnlib.data.generation import GenerateOptions, generate_dataset
from tnlib.data.instance_keys import domain_duplicates
from tnlib.data.loading import load_split
from tnlib.data.manifest import data_card, verify_dataset
from tnlib.data.schema import EXACT_SOLVER, TEST_GRID
from tnlib.errors import DatasetError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dataset_helpers import shared_dataset, tiny_profile  # noqa: E402

EXACT_DOMAINS = ("blocksworld", "ferry", "gripper", "visitall")
SPLITS_MADE = ("train", "val", "test")


def _profile():
    """The tiny profile with a test grid for the domains with an exact solver; h_sat's search kept short."""
    profile = tiny_profile(sat_max_evaluations=200)
    for domain in EXACT_DOMAINS:
        profile.grids[domain][TEST_GRID] = profile.grids[domain]["test"]
    profile.time_limits[TEST_GRID] = profile.time_limits["test"]
    return profile


@pytest.fixture(scope="module")
def both_routes(tmp_path_factory):
    """The same splits made by A* with LM-cut and by the exact solvers."""
    domains = EXACT_DOMAINS

    def build(solver):
        return lambda root: generate_dataset(root, domains, _profile(), SPLITS_MADE,
                                             GenerateOptions(progress=False, solver=solver))

    return (shared_dataset(tmp_path_factory, "routes-astar", build(None)),
            shared_dataset(tmp_path_factory, "routes-exact", build(EXACT_SOLVER)))


def _manifest(root: Path, domain: str) -> dict:
    return json.loads((root / domain / "manifest.json").read_text())


def _h_star_by_instance(root: Path, domain: str, split: str) -> dict[str, list[int]]:
    rows = pq.read_table(root / domain / f"{split}.parquet", columns=["instance", "h_star"]).to_pylist()
    out: dict[str, list[int]] = {}
    for row in rows:
        out.setdefault(row["instance"], []).append(row["h_star"])
    return out


def test_exact_route_keeps_the_instances_and_h_star_that_a_star_labels(both_routes):
    astar, exact = both_routes
    for domain in EXACT_DOMAINS:
        for split in SPLITS_MADE:
            by_astar = _manifest(astar, domain)["splits"][split]["instances"]
            by_exact = _manifest(exact, domain)["splits"][split]["instances"]
            assert by_astar, (domain, split)
            assert ([(i["instance"], i["instance_key"], i["plan_length"]) for i in by_exact]
                    == [(i["instance"], i["instance_key"], i["plan_length"]) for i in by_astar])
            assert _h_star_by_instance(exact, domain, split) == _h_star_by_instance(astar, domain, split)
            assert all(i["expansions"] is None and i["solve_seconds"] >= 0 for i in by_exact)


def test_the_manifest_records_the_route_each_split_took(both_routes):
    astar, exact = both_routes
    for domain in EXACT_DOMAINS:
        for split in SPLITS_MADE:
            assert _manifest(exact, domain)["splits"][split]["settings"]["solver"] == EXACT_SOLVER
            assert "solver" not in _manifest(astar, domain)["splits"][split]["settings"]
    assert verify_dataset(astar) == [] and verify_dataset(exact) == []
    assert "| gripper | train (exact solver) |" in data_card(exact)
    assert "| gripper | train |" in data_card(astar) and "| blocksworld | train |" in data_card(astar)


def test_a_domain_without_an_exact_solver_keeps_a_star_whatever_was_asked(tmp_path, monkeypatch):
    import tnlib.data.exact_solves as exact_solves

    monkeypatch.setattr(exact_solves, "OPTIMAL_PLANS", {k: v for k, v in exact_solves.OPTIMAL_PLANS.items()
                                                        if k != "gripper"})
    generate_dataset(tmp_path, ["gripper"], _profile(), ["train"],
                     GenerateOptions(progress=False, solver=EXACT_SOLVER))
    entry = _manifest(tmp_path, "gripper")["splits"]["train"]
    assert "solver" not in entry["settings"] and entry["instances"]
    assert all(isinstance(i["expansions"], int) for i in entry["instances"])
    assert "| gripper | train |" in data_card(tmp_path)


def test_an_unknown_solver_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(DatasetError, match="unknown solver"):
        generate_dataset(tmp_path / "out", ["gripper"], _profile(), ["train"],
                         GenerateOptions(progress=False, solver="bfs"))
    assert not (tmp_path / "out").exists()
    assert split_solver("logistics", EXACT_SOLVER) == "fast-downward"
    assert split_solver("gripper", None) == "fast-downward" and split_solver("gripper", "exact") == "exact"


@pytest.fixture(scope="module")
def with_test_grid(both_routes, tmp_path_factory):
    """A copy of the A* dataset with a test grid added by the exact solvers (a copy: the shared dataset is read by
    the other tests, on other workers too, while this one writes)."""
    astar, _exact = both_routes
    root = tmp_path_factory.mktemp("with-test-grid") / "dataset"
    shutil.copytree(astar, root)
    generate_dataset(root, EXACT_DOMAINS, _profile(), [TEST_GRID],
                     GenerateOptions(progress=False, solver=EXACT_SOLVER))
    return root


def test_test_grid_draws_the_test_splits_problems_and_loads(with_test_grid):
    root = with_test_grid
    assert verify_dataset(root) == []
    for domain in EXACT_DOMAINS:
        manifest = _manifest(root, domain)
        assert list(manifest["splits"]) == [*SPLITS_MADE, TEST_GRID]
        grid, test = manifest["splits"][TEST_GRID], manifest["splits"]["test"]
        assert grid["settings"]["solver"] == EXACT_SOLVER
        assert set(grid["instance_keys"]["disjoint_from"]) == {"train", "val"}
        # every test slot's first draw was solved at these sizes: the test grid holds the same problems
        assert [i["instance"] for i in grid["instances"]] == [i["instance"] for i in test["instances"]]
        table = load_split(root, domain, TEST_GRID)
        assert table.split == TEST_GRID and table.instances() == [i["instance"] for i in grid["instances"]]
        assert set(table.column("split")) == {TEST_GRID}
        assert _h_star_by_instance(root, domain, TEST_GRID) == _h_star_by_instance(root, domain, "test")


def test_test_grid_may_repeat_test_but_not_train_or_val():
    keys = {
        "train": [("train/a.pddl", "A")],
        "val": [("val/b.pddl", "B")],
        "test": [("test/c.pddl", "C")],
        "plan": [("plan/d.pddl", "D")],
        TEST_GRID: [("grid/c.pddl", "C"), ("grid/d.pddl", "D")],
    }
    assert domain_duplicates(keys)[TEST_GRID].in_earlier == 0
    keys[TEST_GRID].append(("grid/b.pddl", "B"))
    counts = domain_duplicates(keys)[TEST_GRID]
    assert counts.in_earlier == 1 and counts.earlier_examples == ["grid/b.pddl repeats val/b.pddl"]
    keys["plan"].append(("plan/c.pddl", "C"))
    assert domain_duplicates(keys)["plan"].in_earlier == 1


def test_shipped_test_grid_holds_every_slot_of_the_paper_profiles_grid():
    """data/paper's test-grid is what the paper profile asks for: its recorded grid is the profile's (so `generate`
    takes it for complete), and every slot of it holds an instance or an exhausted cell's failure -- a cell added
    to the profile without filling the data (`tnlib data fill --splits test-grid`) fails here."""
    from tnlib.data.profiles import PROFILES

    root = Path(__file__).resolve().parents[2] / "data" / "paper"
    for domain in EXACT_DOMAINS:
        entry = json.loads((root / domain / "manifest.json").read_text())["splits"][TEST_GRID]
        grid = PROFILES["paper"].grid(domain, TEST_GRID)
        assert entry["settings"]["grid"] == grid.describe(), domain
        held = sorted((tuple(r["params"].values()), r["seed_number"]) for r in entry["instances"] + entry["failures"])
        assert held == sorted((tuple(v for _name, v in params), n) for params, n in grid.slots()), domain
        assert {f["status"] for f in entry["failures"]} <= {"exhausted", "skipped"}, domain  # none lost to a solver
        assert entry["counts"]["slots"] == len(grid.slots()), domain
