"""Plan cost over h* beside Table 2: the ratio by hand, over the instances every compared column solved, instances
without h* left out, the paired table, the per-seed CSV column, and h* read from a labelled split and a plan set."""
from __future__ import annotations

import json

import pytest

from tnlib.experiments.reporting.plan_quality import (COST_OVER_H_STAR, common_instances, plan_quality,
                                                     quality_seed_values, render_plan_quality, run_cost_ratios)
from tnlib.experiments.reporting.seed_statistics import paired_differences
from tnlib.experiments.reporting.table_rows import baseline_records, collect_planning, optimal_costs
from tnlib.files import REPO_ROOT
from tnlib.planning.search_settings import PAPER

CONFIGS = (("learn", "ff"),)


def write_run(folder, distribution, seed, lengths, estimate="default", sigma="learn", residual="ff",
              data_root=None):
    """A run folder planned on the plan split: ``lengths`` {problem stem: plan length, or None for unsolved}."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(dict(
        domain="ferry", model="nlm", distribution=distribution, sigma=sigma, residual=residual, lower_bound="lmcut",
        seed=seed, data_root=data_root)))
    with (folder / f"planning-{estimate}.jsonl").open("w") as f:
        for stem, length in lengths.items():
            f.write(json.dumps({"problem": f"{stem}.pddl", "protocol": PAPER, "max_evaluations": 10_000,
                                "solved": length is not None, "evaluations": 10, "plan_length": length}) + "\n")


def write_baseline(results, lengths):
    with (results / "baseline-ferry-ff.jsonl").open("w") as f:
        for stem, length in lengths.items():
            f.write(json.dumps({"problem": f"{stem}.pddl", "protocol": PAPER, "max_evaluations": 10_000,
                                "solved": length is not None, "evaluations": 10, "plan_length": length}) + "\n")


def quality_of(results, costs):
    rows = collect_planning(results, "plan")
    return plan_quality(rows, baseline_records(results, "plan"), {"ferry": costs})


def test_the_ratio_is_the_mean_of_plan_length_over_h_star(tmp_path):
    # h* 10 and 20; TN finds 10 and 30 (ratios 1 and 1.5), N 12 and 20 (1.2 and 1), N+clip 10 and 20, FF 15 and 20
    write_run(tmp_path / "tn", "TN", 0, {"p0": 10, "p1": 30})
    write_run(tmp_path / "n", "N", 0, {"p0": 12, "p1": 20})
    write_run(tmp_path / "n", "N", 0, {"p0": 10, "p1": 20}, estimate="clip")
    write_baseline(tmp_path, {"p0": 15, "p1": 20})
    quality = quality_of(tmp_path, {"p0.pddl": 10, "p1.pddl": 20})
    cell = quality[("ferry", "learn", "ff")]
    assert cell["common"] == ["p0.pddl", "p1.pddl"] and cell["planned"] == cell["with_h_star"] == 2
    assert cell["seeds"] == {"TN": {0: 1.25}, "N": {0: 1.1}, "N+clip": {0: 1.0}}
    assert cell["ff"] == pytest.approx(1.25)
    table = render_plan_quality(quality, CONFIGS)
    assert "| ferry | learn/ff | 2 of 2 | 1.25 | 1.10 (1 seed) | 1.00 (1 seed) | 1.25 (1 seed) |" in table
    assert "1 = optimal" in table and "every compared column solved" in table


def test_only_instances_every_column_solved_at_every_seed_are_averaged(tmp_path):
    # p1 unsolved by N at seed 1 and p2 unsolved by FF: only p0 is common, for every cell and seed
    for seed in (0, 1):
        write_run(tmp_path / f"tn{seed}", "TN", seed, {"p0": 4, "p1": 6, "p2": 8})
        write_run(tmp_path / f"n{seed}", "N", seed, {"p0": 8, "p1": None if seed else 6, "p2": 8})
    write_baseline(tmp_path, {"p0": 6, "p1": 6, "p2": None})
    costs = {"p0.pddl": 4, "p1.pddl": 6, "p2.pddl": 8}
    cell = quality_of(tmp_path, costs)[("ferry", "learn", "ff")]
    assert cell["common"] == ["p0.pddl"]
    assert cell["seeds"] == {"TN": {0: 1.0, 1: 1.0}, "N": {0: 2.0, 1: 2.0}} and cell["ff"] == 1.5
    # FF records without plan lengths (written before they gave them) are not compared: p2 counts again
    write_baseline(tmp_path, {"p0": None, "p1": None, "p2": None})
    cell = quality_of(tmp_path, costs)[("ferry", "learn", "ff")]
    assert cell["common"] == ["p0.pddl", "p2.pddl"] and cell["ff"] is None
    assert common_instances([{"a": 1, "b": None}, {"a": 2, "b": 3}], {"a": 1, "b": 1, "c": 1}) == ["a"]


def test_instances_without_h_star_are_left_out_and_counted(tmp_path):
    write_run(tmp_path / "tn", "TN", 0, {"p0": 10, "p1": 30, "p2": 50})
    write_run(tmp_path / "n", "N", 0, {"p0": 20, "p1": 30, "p2": 50})
    cell = quality_of(tmp_path, {"p0.pddl": 10, "p1.pddl": None})[("ferry", "learn", "ff")]  # p2 not in the set
    assert cell["common"] == ["p0.pddl"] and (cell["planned"], cell["with_h_star"]) == (3, 1)
    assert cell["seeds"] == {"TN": {0: 1.0}, "N": {0: 2.0}} and cell["ff"] is None  # no baseline file
    table = render_plan_quality({("ferry", "learn", "ff"): cell}, CONFIGS)
    assert "| ferry | learn/ff | 1 of 1 (2 planned without h\\*) |  | 2.00 (1 seed) |  | 1.00 (1 seed) |" in table
    # nothing common: the row says so and its cells are blank
    empty = quality_of(tmp_path, {})[("ferry", "learn", "ff")]
    assert empty["common"] == [] and empty["seeds"] == {}
    assert "| ferry | learn/ff | 0 of 0 (3 planned without h\\*) |  |  |  |  |" in render_plan_quality(
        {("ferry", "learn", "ff"): empty}, CONFIGS)


def test_the_seeds_pair_and_the_best_column_is_bold_beyond_noise(tmp_path):
    for seed in range(3):
        write_run(tmp_path / f"tn{seed}", "TN", seed, {"p0": 10 + seed, "p1": 20})
        write_run(tmp_path / f"n{seed}", "N", seed, {"p0": 12 + seed, "p1": 22 + seed})
    quality = quality_of(tmp_path, {"p0.pddl": 10, "p1.pddl": 20})
    values = quality_seed_values(quality)
    assert values[("ferry", "learn", "ff", "TN")] == {0: 1.0, 1: 1.05, 2: 1.1}
    interval = paired_differences(values)[("ferry", "learn", "ff")][("TN", "N")]
    # TN - N per seed: (1 - 1.15), (1.05 - 1.225), (1.1 - 1.3)
    assert interval["n"] == 3 and interval["mean"] == pytest.approx(-0.175) and interval["high"] < 0
    assert "| **1.05±0.05** |" in render_plan_quality(quality, CONFIGS)
    two = {k: {**v, "seeds": {c: {s: x for s, x in by.items() if s < 2} for c, by in v["seeds"].items()}}
           for k, v in quality.items()}
    assert "**1" not in render_plan_quality(two, CONFIGS)  # two seeds: nothing bold


def test_a_run_still_planning_is_left_out_of_the_ratio_and_its_seed_value(tmp_path):
    from tnlib.experiments.reporting.reports import planning_seed_rows

    write_run(tmp_path / "tn", "TN", 0, {"p0": 10, "p1": 20})
    write_run(tmp_path / "n", "N", 0, {"p0": 10})  # one of two so far: its instances would shrink the common set
    rows = collect_planning(tmp_path, "plan")
    costs = {"ferry": {"p0.pddl": 10, "p1.pddl": 10}}
    assert plan_quality(rows, {}, costs)[("ferry", "learn", "ff")]["seeds"] == {"TN": {0: 1.5}}
    csv_rows = planning_seed_rows(rows, run_cost_ratios(rows, {}, costs))
    assert [(r["column"], r[COST_OVER_H_STAR]) for r in csv_rows] == [("N", ""), ("TN", "1.5")]
    assert list(csv_rows[0])[-1] == COST_OVER_H_STAR  # a new last column: readers by name see the rest unmoved


def test_h_star_comes_from_the_labelled_split_and_from_the_plan_set(tmp_path):
    from tnlib.data.loading import load_split
    from tnlib.data.plan_sets import load_plan_set

    write_run(tmp_path / "tn", "TN", 0, {}, data_root=str(REPO_ROOT / "data" / "small"))
    table = load_split(REPO_ROOT / "data" / "small", "ferry", "plan")
    initial = {r["problem"].rsplit("/", 1)[-1]: r["h_star"] for r in table.to_pylist() if r["step"] == 0}
    assert optimal_costs(tmp_path, "plan") == {"ferry": initial}
    write_run(tmp_path / "tn", "TN", 0, {}, data_root=str(REPO_ROOT / "data" / "paper"))
    plan_set = load_plan_set(REPO_ROOT / "data" / "paper", "ferry", "plan-set")
    exact = {record["problem"].rsplit("/", 1)[-1]: record["exact"]["plan_length"]
             for record in plan_set.manifest["instances"]}
    assert optimal_costs(tmp_path, "plan-set") == {"ferry": exact} and len(exact) == 100
    write_run(tmp_path / "tn", "TN", 0, {}, data_root=str(tmp_path / "no-dataset"))
    assert optimal_costs(tmp_path, "plan") == {"ferry": {}}  # no h* to be had: every instance is left out
