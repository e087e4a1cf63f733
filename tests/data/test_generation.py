"""Tests for tnlib.data.generation: the paper's grid, disjoint seeds, generation end to end (schema, h* against
breadth-first search, manifest and checksums, retries and failures), determinism across the serial, pool and Dask
runners, resumption after SIGKILL, settings checks, and the `tnlib data` command line."""
from __future__ import annotations

import dataclasses
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import tnlib.data.generation as datasets
import tnlib.data.profiles as profiles
from tnlib import cli
from tnlib.data.generation import GenerateOptions, generate_dataset
from tnlib.data.profiles import PROFILES, combos, generator_seed, split_of_seed
from tnlib.data.manifest import data_card, verify_dataset
from tnlib.data.schema import SPLITS, TEST_GRID, arrow_schema
from tnlib.errors import DatasetError
from tnlib.files import sha256_file
from tnlib.paper import DOMAINS
from tnlib.planning.generators import generate
from tnlib.planning.optimal_costs import OPTIMAL_PLANS
from tnlib.planning.search import goal_distances
from tnlib.planning.task import load_task

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dataset_helpers import (  # noqa: E402
    crowded_profile,
    failing_profile,
    gripper_profile,
    shared_dataset,
    tiny_profile,
)

# The paper's appendix table "List of instance generation parameters": instances per split (seeds x grid).
PAPER_COUNTS = {
    "blocksworld": {"train": 38 * 12, "val": 11 * 12, "test": 11 * 12},
    "ferry": {"train": 16 * 25, "val": 4 * 25, "test": 16 * 25},
    "gripper": {"train": 80 * 5, "val": 20 * 5, "test": 20 * 5},
    "visitall": {"train": 70 * 3 * 2, "val": 17 * 3 * 2, "test": 17 * 9 * 2},
}


# The row schema (the models code reads these names).
ISSUE_COLUMNS = [
    "domain", "split", "instance", "problem", "step", "plan_length", "state", "goal", "h_star", "blind",
    "goalcount", "hmax", "hadd", "ff", "lmcut", "ff_ignored_deletes_total", "ff_ignored_deletes_mean", "h_sat",
]


def table_of(root: Path, domain: str, split: str):
    return pq.read_table(root / domain / f"{split}.parquet")


# ---------------------------------------------------------------------------------------------------------------
# Profiles and seeds


def test_paper_profile_follows_the_appendix_table():
    paper = PROFILES["paper"]
    for domain, counts in PAPER_COUNTS.items():
        for split, count in counts.items():
            assert len(paper.grid(domain, split).slots()) == count, (domain, split)
        assert len(paper.grid(domain, "plan").slots()) == 100
    assert {c[0][1] for c in paper.grid("blocksworld", "test").combos} == set(range(11, 23))
    assert {dict(c)["balls"] for c in paper.grid("gripper", "test").combos} == {20, 40, 60, 80, 100}
    assert all(dict(c)["x"] == dict(c)["y"] for c in paper.grid("visitall", "train").combos)
    assert paper.time_limits == {"train": 300, "val": 300, "test": 1800, "plan": 1800, TEST_GRID: 1800}
    assert paper.memory_limit_mb == 8000 and paper.max_attempts == 20
    assert paper.lmcut == "fast-downward" and PROFILES["small"].lmcut == "tnlib"  # the paper's labels hold FD's


def test_test_grid_slots_are_test_slots_of_domains_with_an_exact_solver():
    for profile in PROFILES.values():
        for domain, splits in profile.grids.items():
            if TEST_GRID not in splits:
                continue
            assert domain in OPTIMAL_PLANS
            test_slots = set(profile.grid(domain, "test").slots())
            assert set(profile.grid(domain, TEST_GRID).slots()) <= test_slots
            for combo, n in profile.grid(domain, TEST_GRID).slots()[:3]:
                assert generator_seed(TEST_GRID, domain, combo, n, 0) == generator_seed("test", domain, combo, n, 0)
    # blocksworld's test grid is the paper's whole: every test cell, 11-22 blocks
    paper = PROFILES["paper"]
    assert paper.grid("blocksworld", TEST_GRID).combos == paper.grid("blocksworld", "test").combos
    assert {dict(c)["blocks"] for c in paper.grid("blocksworld", TEST_GRID).combos} == set(range(11, 23))


def test_plan_split_cycles_through_the_test_sizes():
    for profile in PROFILES.values():
        for domain in DOMAINS:
            plan = profile.grid(domain, "plan").slots()
            test_combos = profile.grid(domain, "test").combos
            assert {combo for combo, _ in plan} == set(test_combos)
            counts = [sum(p == c for p, _ in plan) for c in test_combos]
            assert max(counts) - min(counts) <= 1


def test_small_profile_tests_larger_sizes_than_it_trains_on():
    small = PROFILES["small"]
    for domain in DOMAINS:
        train = small.grid(domain, "train")
        test = small.grid(domain, "test")
        size = lambda combo: sum(v for k, v in combo if k != "ratio")  # noqa: E731
        assert max(map(size, train.combos)) < min(map(size, test.combos))
        assert 100 <= len(train.slots()) <= 300
        assert 20 <= len(small.grid(domain, "plan").slots()) <= 30


@pytest.mark.parametrize("profile", ["small", "paper"])
def test_seeds_are_disjoint_across_splits(profile):
    seeds = {}
    for domain in DOMAINS:
        for split in SPLITS:
            grid = PROFILES[profile].grid(domain, split)
            for combo, n in grid.slots():
                for attempt in range(20):
                    seed = generator_seed(split, domain, combo, n, attempt)
                    assert split_of_seed(seed) == split
                    seeds.setdefault((domain, split), set()).add(seed)
    for domain in DOMAINS:
        for a in SPLITS:
            for b in SPLITS:
                if a < b:
                    assert not seeds[(domain, a)] & seeds[(domain, b)], (domain, a, b)


def test_seeds_separate_every_slot_and_attempt():
    combo = (("blocks", 5),)
    seeds = {generator_seed("train", "blocksworld", combo, n, a) for n in range(50) for a in range(20)}
    assert len(seeds) == 50 * 20
    # Same seed number and size in two splits: different seeds, different instances.
    train = generate("blocksworld", generator_seed("train", "blocksworld", combo, 1, 0), blocks=5)
    test = generate("blocksworld", generator_seed("test", "blocksworld", combo, 1, 0), blocks=5)
    assert train.split("\n", 2)[2] != test.split("\n", 2)[2]


def test_seed_arguments_are_checked():
    with pytest.raises(ValueError, match="unknown split"):
        generator_seed("training", "gripper", {"balls": 2}, 1, 0)
    with pytest.raises(ValueError, match="seed number"):
        generator_seed("train", "gripper", {"balls": 2}, 10**4, 0)
    with pytest.raises(ValueError, match="attempt"):
        generator_seed("train", "gripper", {"balls": 2}, 1, 100)
    with pytest.raises(ValueError, match="not a tnlib dataset seed"):
        split_of_seed(7)


# ---------------------------------------------------------------------------------------------------------------
# Generation end to end


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """Every domain and split of the tiny profile (built once per session, shared by xdist workers)."""
    return shared_dataset(
        tmp_path_factory, "tiny", lambda root: generate_dataset(root, DOMAINS, tiny_profile(),
                                                                options=GenerateOptions(progress=False))
    )


def test_tables_have_the_schema_and_one_row_per_plan_state(tiny):
    root = tiny
    top = json.loads((root / "manifest.json").read_text())
    assert set(top["domains"]) == set(DOMAINS)
    for domain in DOMAINS:
        for split in SPLITS:
            table = table_of(root, domain, split)
            assert table.schema.names == ISSUE_COLUMNS
            assert table.schema.remove_metadata().equals(arrow_schema())
            types = {f.name: str(f.type) for f in table.schema}
            assert types["state"] == types["goal"] == "list<element: string>"
            assert types["h_star"] == types["step"] == types["plan_length"] == "int64"
            assert {types[c] for c in ISSUE_COLUMNS[9:]} == {"double"}
            rows = table.to_pylist()
            manifest = json.loads((root / domain / "manifest.json").read_text())
            entry = manifest["splits"][split]
            assert len(rows) == entry["counts"]["states"] == sum(i["plan_length"] + 1 for i in entry["instances"])
            assert {r["domain"] for r in rows} == {domain} and {r["split"] for r in rows} == {split}
            for r in rows:
                assert r["h_star"] == r["plan_length"] - r["step"]


def test_h_star_agrees_with_breadth_first_search(tiny):
    root = tiny
    for domain in DOMAINS:
        rows = table_of(root, domain, "train").to_pylist()
        initial = [r for r in rows if r["step"] == 0]
        assert initial
        for row in initial:
            task = load_task(domain, root / row["problem"])
            assert goal_distances(task)[task.init] == row["h_star"] > 0


def test_problem_files_regenerate_from_their_recorded_seed(tiny):
    root = tiny
    for domain in DOMAINS:
        manifest = json.loads((root / domain / "manifest.json").read_text())
        for split, entry in manifest["splits"].items():
            for inst in entry["instances"]:
                assert split_of_seed(inst["seed"]) == split
                text = (root / inst["problem"]).read_text()
                assert text == generate(domain, inst["seed"], **inst["params"])
                assert inst["seed"] == generator_seed(split, domain, inst["params"], inst["seed_number"],
                                                      inst["attempt"])
                assert len(inst["rejected"]) == inst["attempt"]


def test_manifest_records_versions_settings_and_checksums(tiny):
    root = tiny
    from tnlib.planning.fast_downward import fast_downward_version

    top = json.loads((root / "manifest.json").read_text())
    assert top["profile"] == "tiny" and set(top["domains"]) == set(DOMAINS)
    for domain in DOMAINS:
        manifest = json.loads((root / domain / "manifest.json").read_text())
        assert top["domains"][domain]["sha256"] == sha256_file(root / domain / "manifest.json")
        assert manifest["fast_downward"] == fast_downward_version()
        assert manifest["seed_scheme"] == profiles.SEED_SCHEME
        assert manifest["splits"]["train"]["settings"]["time_limit"] == 30
        files = manifest["files"]
        on_disk = {p.relative_to(root).as_posix() for p in (root / domain).rglob("*")
                   if p.is_file() and p.name != "manifest.json"}
        assert set(files) == on_disk
        assert all(sha256_file(root / f) == digest for f, digest in files.items())


def test_retries_and_failures_are_recorded(tmp_path):
    report = generate_dataset(tmp_path, ["blocksworld"], failing_profile(), ["train"],
                              GenerateOptions(progress=False))
    counts = report.splits["blocksworld/train"]
    manifest = json.loads((tmp_path / "blocksworld" / "manifest.json").read_text())
    entry = manifest["splits"]["train"]
    # One block: every attempt trivial (empty goal). The first slot spends its 3 attempts and exhausts the cell,
    # the second is skipped without drawing.
    one_block = [f for f in entry["failures"] if f["params"] == {"blocks": 1}]
    assert [f["status"] for f in one_block] == ["exhausted", "skipped"]
    assert [r["status"] for r in one_block[0]["rejected"]] == ["trivial"] * 3 and one_block[1]["rejected"] == []
    assert entry["exhausted_cells"][0] == {"params": {"blocks": 1}, "instances": 0, "unfilled": 2, "exhausted_at": 1}
    assert counts["unfilled"] >= 2
    assert counts["failed"] == len(entry["failures"]) >= 2
    assert counts["instances"] + counts["failed"] == counts["slots"] == 4
    assert counts["rejected_attempts"]["trivial"] == sum(
        len(f["rejected"]) for f in entry["failures"]) + sum(len(i["rejected"]) for i in entry["instances"])
    assert counts["retried"] == sum(1 for i in entry["instances"] if i["attempt"] > 0)


def test_no_instance_repeats_within_or_across_splits(tiny):
    """Up to renaming objects, recomputed from the problem files (the manifest's keys are not trusted here)."""
    from tnlib.data.instance_keys import domain_duplicates, exact_key, instance_key

    root = tiny
    for domain in DOMAINS:
        manifest = json.loads((root / domain / "manifest.json").read_text())
        for key in (instance_key, exact_key):
            keys = {split: [(i["problem"], key(root / i["problem"])) for i in entry["instances"]]
                    for split, entry in manifest["splits"].items()}
            for split, counts in domain_duplicates(keys).items():
                assert (counts.within, counts.in_earlier) == (0, 0), (domain, split, key.__name__, counts)
        for split, entry in manifest["splits"].items():
            for inst in entry["instances"]:
                assert inst["instance_key"] == instance_key(root / inst["problem"])
    # The tiny grid does hold repeats to reject: visitall 2x2 with ratio 1 has one instance, so its second slot
    # draws only repeats.
    visitall = json.loads((root / "visitall" / "manifest.json").read_text())["splits"]["train"]
    assert visitall["counts"]["duplicates_rejected"] > 0 and visitall["exhausted_cells"]


def test_an_exhausted_cell_is_reported_not_looped(tmp_path, monkeypatch):
    calls = []
    real = datasets.run_attempt
    monkeypatch.setattr(datasets, "run_attempt", lambda job: calls.append(job.seed) or real(job))
    profile = crowded_profile(seeds=30, max_attempts=5)
    report = generate_dataset(tmp_path, ["visitall"], profile, ["train"], GenerateOptions(progress=False))
    generate_dataset(tmp_path, ["gripper"], profile, ["train", "val"], GenerateOptions(progress=False))
    visitall = json.loads((tmp_path / "visitall" / "manifest.json").read_text())["splits"]["train"]
    assert visitall["counts"]["instances"] == 1 and visitall["counts"]["unfilled"] == 29
    assert visitall["exhausted_cells"] == [
        {"params": {"x": 2, "y": 2, "ratio": 1.0}, "instances": 1, "unfilled": 29, "exhausted_at": 2}]
    statuses = [f["status"] for f in visitall["failures"]]
    assert statuses == ["exhausted"] + ["skipped"] * 28
    assert [r["status"] for r in visitall["failures"][0]["rejected"]] == ["duplicate"] * 5
    assert {r["of"] for r in visitall["failures"][0]["rejected"]} == {f"train/{visitall['instances'][0]['instance']}"}
    # gripper with one ball: train takes both instances, so val has none to give and says so.
    gripper = json.loads((tmp_path / "gripper" / "manifest.json").read_text())["splits"]
    assert gripper["train"]["counts"]["instances"] == 2
    assert gripper["val"]["counts"]["instances"] == 0 and gripper["val"]["exhausted_cells"][0]["unfilled"] == 2
    assert {r["of"].split("/")[0] for r in gripper["val"]["failures"][0]["rejected"] if "of" in r} == {"train"}
    # Only instances were solved: duplicates and trivial draws never reach the planner.
    assert len(calls) == 1 + 2 + len([r for f in gripper["train"]["failures"] for r in f["rejected"]
                                      if r["status"] not in ("duplicate", "trivial")])
    assert report.splits["visitall/train"]["unfilled"] == 29
    card = data_card(tmp_path)
    assert "visitall train `visitall-x2-y2-r1`: 1 distinct instance(s), then 5 draws in a row" in card
    assert "gripper val `gripper-b1`: 0 distinct instance(s)" in card


def test_generation_progress_follows_tnlib_progress(tmp_path, monkeypatch, capsys):
    """A generation logged to a file (hours, for data/paper) shows plain lines, not a bar's carriage returns;
    TNLIB_PROGRESS chooses as it does for training and sweeps."""
    profile = crowded_profile(seeds=3, max_attempts=3)
    monkeypatch.setenv("TNLIB_PROGRESS", "text")
    generate_dataset(tmp_path / "text", ["gripper"], profile, ["train"])
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = [line for line in err.splitlines() if line.startswith("tnlib data (crowded):")]
    assert lines[0].startswith("tnlib data (crowded): 0/3 inst done") and lines[-1].startswith(
        "tnlib data (crowded): 3/3 inst done")
    monkeypatch.setenv("TNLIB_PROGRESS", "off")
    generate_dataset(tmp_path / "off", ["gripper"], profile, ["train"])
    assert "tnlib data" not in capsys.readouterr().err


def test_solves_are_reused_for_identical_problems_only(tmp_path, monkeypatch):
    import tnlib.planning.fast_downward as fast_downward

    profile = tiny_profile(seeds=2)
    first = tmp_path / "first"
    generate_dataset(first, ["gripper"], profile, ["train", "val"], GenerateOptions(progress=False))
    solves = []
    real = fast_downward.solve
    monkeypatch.setattr(fast_downward, "solve", lambda *a, **k: solves.append(a[1]) or real(*a, **k))
    # Another root, reusing the first one's solves: nothing is solved, and the tables are the same.
    second = tmp_path / "second"
    report = generate_dataset(second, ["gripper"], profile, ["train", "val"],
                              GenerateOptions(reuse=[first], progress=False))
    assert solves == [] and report.solves == 0 and report.reused_solves > 0
    for split in ("train", "val"):
        assert table_of(second, "gripper", split).equals(table_of(first, "gripper", split))
    manifest = json.loads((second / "gripper" / "manifest.json").read_text())
    assert all(i["solve_reused"] for i in manifest["splits"]["train"]["instances"])
    # In place with --force: the root's own solves are reused.
    generate_dataset(first, ["gripper"], profile, ["train", "val"], GenerateOptions(force=True, progress=False))
    assert solves == []
    # Other limits: a solve under them proves nothing, so everything is solved again.
    third = tmp_path / "third"
    generate_dataset(third, ["gripper"], profile, ["train"],
                     GenerateOptions(time_limit=29, reuse=[first], progress=False))
    assert len(solves) == json.loads((third / "gripper" / "manifest.json").read_text())["splits"]["train"][
        "counts"]["instances"]
    solves.clear()
    generate_dataset(tmp_path / "fourth", ["gripper"], profile, ["train"],
                     GenerateOptions(reuse=[first], reuse_solutions=False, progress=False))
    assert solves
    # Larger limits: a plan found under smaller ones is what the same search finds, so nothing is solved again.
    solves.clear()
    fifth = tmp_path / "fifth"
    generate_dataset(fifth, ["gripper"], profile, ["train"],
                     GenerateOptions(time_limit=31, memory_limit_mb=2500, reuse=[first], progress=False))
    assert solves == [] and table_of(fifth, "gripper", "train").equals(table_of(first, "gripper", "train"))
    assert json.loads((fifth / "gripper" / "manifest.json").read_text())["splits"]["train"]["settings"][
        "time_limit"] == 31


def test_a_cached_verdict_is_used_only_where_its_limits_prove_it():
    from tnlib.data.solution_cache import SolutionCache

    cache = SolutionCache()
    build = "fd-1"
    cache.add("solved", {"status": "solved", "plan": ["(a)"], "fast_downward": build, "time_limit": 10,
                         "memory_limit_mb": 1000})
    cache.add("timeout", {"status": "timeout", "fast_downward": build, "time_limit": 10, "memory_limit_mb": 1000})
    cache.add("memory", {"status": "out_of_memory", "fast_downward": build, "time_limit": 10,
                         "memory_limit_mb": 1000})
    cache.add("unsolvable", {"status": "unsolvable", "fast_downward": build, "time_limit": 10,
                             "memory_limit_mb": 1000})
    for key in ("solved", "timeout", "memory", "unsolvable"):  # the same limits: any verdict
        assert cache.lookup(key, build, 10, 1000)["status"] == cache.entries[key][0]["status"]
        assert cache.lookup(key, "fd-2", 10, 1000) is None  # another build proves nothing
    for key in ("solved", "unsolvable"):  # reached before the limits stopped anything: holds under larger ones
        assert cache.lookup(key, build, 300, 1000) is not None and cache.lookup(key, build, 10, None) is not None
        assert cache.lookup(key, build, 9.5, 1000) is None and cache.lookup(key, build, 10, 999) is None
    for key in ("timeout", "memory"):  # a limit hit says nothing under other limits, larger or smaller
        assert all(cache.lookup(key, build, t, m) is None for t, m in [(300, 1000), (10, 2000), (5, 500)])
    # Solved under one limit, timed out under another: each limit gets its own verdict, the exact one first.
    cache.add("solved", {"status": "timeout", "fast_downward": build, "time_limit": 5, "memory_limit_mb": 1000})
    cache.add("solved", {"status": "solved", "plan": ["(b)"], "fast_downward": build, "time_limit": 10,
                         "memory_limit_mb": 1000})  # a second record under known limits is ignored
    assert cache.lookup("solved", build, 5, 1000)["status"] == "timeout"
    assert cache.lookup("solved", build, 10, 1000)["plan"] == ["(a)"]
    # Unlimited memory proves nothing for a limited run: the search may have needed more.
    cache.add("unlimited", {"status": "solved", "plan": [], "fast_downward": build, "time_limit": 10,
                            "memory_limit_mb": None})
    assert cache.lookup("unlimited", build, 20, 8000) is None and cache.lookup("unlimited", build, 20, None)


def test_a_cell_stored_compressed_is_generated_with_gzip_problem_files(tmp_path):
    plain = gripper_profile(seeds=2)
    train = plain.grid("gripper", "train")
    compressed = dataclasses.replace(train, compressed=combos("gripper", balls=(3, 7)))  # 7: no cell of the grid
    profile = dataclasses.replace(plain, grids={"gripper": {"train": compressed}})
    generate_dataset(tmp_path, ["gripper"], profile, ["train"], GenerateOptions(progress=False))
    assert verify_dataset(tmp_path) == []
    entry = json.loads((tmp_path / "gripper" / "manifest.json").read_text())["splits"]["train"]
    assert entry["settings"]["grid"] == dict(train.describe(), compressed_problems=[{"balls": 3}])
    for inst in entry["instances"]:
        packed = inst["params"] == {"balls": 3}
        assert inst["problem"] == f"gripper/problems/train/{inst['instance']}.pddl{'.gz' if packed else ''}"
        data = (tmp_path / inst["problem"]).read_bytes()
        text = generate("gripper", inst["seed"], **inst["params"])
        assert (gzip.decompress(data) if packed else data).decode() == text
    rows = table_of(tmp_path, "gripper", "train").to_pylist()
    assert {r["problem"] for r in rows} == {i["problem"] for i in entry["instances"]}
    # a grid naming only cells it does not hold describes itself as a plain one
    assert dataclasses.replace(train, compressed=combos("gripper", balls=(7,))).describe() == train.describe()


def test_solves_of_compressed_problem_files_are_reused_under_their_text(tmp_path):
    """The manifest lists a compressed file's stored bytes; the solution cache keys each solve by the problem text,
    which is what a regenerated attempt is looked up by."""
    from tnlib.data.solution_cache import SolutionCache, text_sha256

    plain = gripper_profile(seeds=2)
    train = plain.grid("gripper", "train")
    compressed = dataclasses.replace(train, compressed=combos("gripper", balls=(3,)))
    profile = dataclasses.replace(plain, grids={"gripper": {"train": compressed}})
    generate_dataset(tmp_path, ["gripper"], profile, ["train"], GenerateOptions(progress=False))
    instances = json.loads((tmp_path / "gripper" / "manifest.json").read_text())["splits"]["train"]["instances"]
    assert any(inst["problem"].endswith(".gz") for inst in instances)
    cache = SolutionCache.from_datasets([tmp_path])
    for inst in instances:
        key = text_sha256(generate("gripper", inst["seed"], **inst["params"]))
        solved = [e for e in cache.entries.get(key, []) if e["status"] == "solved"]
        assert [e["plan"] for e in solved] == [list(inst["plan"])], inst["problem"]
    # a compressed file changed after its solve is not reused
    packed = next(tmp_path / inst["problem"] for inst in instances if inst["problem"].endswith(".gz"))
    packed.write_bytes(gzip.compress(gzip.decompress(packed.read_bytes()) + b" "))
    changed = SolutionCache.from_datasets([tmp_path])
    assert len([k for k, v in changed.entries.items() if any(e["status"] == "solved" for e in v)]) == \
        len(instances) - 1


def test_a_recorded_grid_reads_back_with_its_compressed_cells():
    from tnlib.data.generation_status import _grid_from_settings

    grid = profiles.SplitGrid(combos("ferry", locations=(20, 25), cars=(10, 15)), (1, 2, 3),
                              compressed=combos("ferry", locations=(25,), cars=(10, 15)))
    assert grid.describe()["compressed_problems"] == [{"locations": 25, "cars": 10}, {"locations": 25, "cars": 15}]
    assert _grid_from_settings("ferry", grid.describe()) == grid
    plain = dataclasses.replace(grid, compressed=())
    assert _grid_from_settings("ferry", plain.describe()) == plain


def test_splits_are_made_in_order(tiny, tmp_path):
    with pytest.raises(DatasetError, match="visitall/test is made disjoint from visitall/train.*add train"):
        generate_dataset(tmp_path, ["visitall"], tiny_profile(), ["test"], GenerateOptions(progress=False))
    assert not any(tmp_path.iterdir())
    copy = tmp_path / "copy"
    import shutil

    shutil.copytree(tiny, copy)
    with pytest.raises(DatasetError, match="remaking ferry/train would leave ferry/val unchecked"):
        generate_dataset(copy, ["ferry"], tiny_profile(), ["train"], GenerateOptions(force=True, progress=False))


def test_generation_is_deterministic_and_runner_independent(tiny, tmp_path):
    """Serial (tiny fixture), a 2-process pool and an in-process Dask cluster write the same tables."""
    from distributed import LocalCluster

    root = tiny
    domains = ["gripper", "visitall"]
    splits = ["train", "val", "test"]
    generate_dataset(tmp_path / "pool", domains, tiny_profile(), splits, GenerateOptions(workers=2, progress=False))
    with LocalCluster(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster:
        generate_dataset(tmp_path / "dask", domains, tiny_profile(), splits,
                         GenerateOptions(scheduler=cluster.scheduler_address, progress=False))
    for other in ("pool", "dask"):
        for domain in domains:
            for split in splits:
                assert table_of(tmp_path / other, domain, split).equals(table_of(root, domain, split)), (other, split)


def test_rerun_skips_complete_splits_and_refuses_other_settings(tiny, tmp_path):
    root = tiny
    report = generate_dataset(root, ["ferry"], tiny_profile(), ["train"], GenerateOptions(progress=False))
    assert report.skipped == ["ferry/train"] and not report.splits
    with pytest.raises(DatasetError, match="other settings.*time_limit"):
        generate_dataset(root, ["ferry"], tiny_profile(), ["train"], GenerateOptions(time_limit=5, progress=False))
    with pytest.raises(DatasetError, match="holds the 'tiny' profile"):
        generate_dataset(root, ["blocksworld"], failing_profile(), ["train"], GenerateOptions(progress=False))
    with pytest.raises(DatasetError, match="no 'val' split"):
        generate_dataset(tmp_path, ["blocksworld"], failing_profile(), ["val"], GenerateOptions(progress=False))
    with pytest.raises(DatasetError, match="unknown domain"):
        generate_dataset(tmp_path, ["sokoban"], tiny_profile(), options=GenerateOptions(progress=False))
    assert not any(tmp_path.iterdir())  # bad arguments write nothing


def test_force_regenerates_with_new_settings(tmp_path):
    profile = tiny_profile(seeds=1)
    generate_dataset(tmp_path, ["gripper"], profile, ["train", "val"], GenerateOptions(progress=False))
    before = table_of(tmp_path, "gripper", "val")
    generate_dataset(tmp_path, ["gripper"], profile, ["val"],
                     GenerateOptions(sat_max_evaluations=1, force=True, progress=False))
    after = table_of(tmp_path, "gripper", "val")
    manifest = json.loads((tmp_path / "gripper" / "manifest.json").read_text())
    assert manifest["splits"]["val"]["settings"]["sat_max_evaluations"] == 1
    assert after.column("h_star").equals(before.column("h_star"))
    assert after.column("h_sat").null_count == 0 and any(
        v != v for v in after.column("h_sat").to_pylist())  # NaN, not null, where GBFS gave up


# ---------------------------------------------------------------------------------------------------------------
# Crash safety: SIGKILL part-way, rerun, same result


KILL_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from dataset_helpers import gripper_profile
from tnlib.data.generation import GenerateOptions, generate_dataset
generate_dataset({root!r}, ["gripper"], gripper_profile({seeds}), ["train"], GenerateOptions(progress=False))
"""


@pytest.mark.slow
def test_sigkill_then_rerun_resumes_without_redoing_or_duplicating(tmp_path, monkeypatch):
    seeds = 10  # 20 slots
    root = tmp_path / "killed"
    script = KILL_SCRIPT.format(tests=str(Path(__file__).resolve().parents[1]), root=str(root), seeds=seeds)
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    work = root / "gripper" / ".work" / "train"
    attempts = work / "attempts"
    deadline = time.monotonic() + 120
    try:
        while len(list(attempts.glob("*.json"))) < 6:
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "no progress"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    done = {int(p.stem) for p in attempts.glob("*.json")}
    assert len(done) >= 6
    assert not (root / "gripper" / "train.parquet").exists()
    for path in attempts.glob("*.json"):  # every attempt file that exists is complete JSON
        assert json.loads(path.read_text())["seed"] == int(path.stem)

    calls = []
    real = datasets.run_attempt
    monkeypatch.setattr(datasets, "run_attempt", lambda job: calls.append(job.seed) or real(job))
    generate_dataset(root, ["gripper"], gripper_profile(seeds), ["train"], GenerateOptions(progress=False))
    resumed = list(calls)
    assert resumed and not set(resumed) & done  # nothing finished before the kill is solved again

    fresh = tmp_path / "fresh"
    calls.clear()
    generate_dataset(fresh, ["gripper"], gripper_profile(seeds), ["train"], GenerateOptions(progress=False))
    assert sorted(calls) == sorted(done | set(resumed))  # together, exactly the attempts of an uninterrupted run
    assert table_of(root, "gripper", "train").equals(table_of(fresh, "gripper", "train"))
    assert not work.exists()
    assert not [p for p in (root / "gripper").rglob("*") if p.name.endswith(".tmp")]
    from tnlib.data.manifest import verify_dataset

    assert verify_dataset(root) == []


# ---------------------------------------------------------------------------------------------------------------
# Command line


def test_cli_generate_checks_its_arguments(capsys, tmp_path):
    assert cli.main(["data", "generate", "--domain", "sokoban", "--out", str(tmp_path)]) == 2
    assert "unknown domain 'sokoban'" in capsys.readouterr().err
    assert cli.main(["data", "generate", "--domain", "gripper", "--splits", "training", "--out", str(tmp_path)]) == 2
    assert "unknown split 'training'" in capsys.readouterr().err
    assert cli.main(["data", "generate", "--domain", "gripper", "--workers", "0", "--out", str(tmp_path)]) == 2
    assert cli.main(["data", "generate", "--domain", "gripper", "--time-limit", "0", "--out", str(tmp_path)]) == 2
    assert "time_limit must be positive" in capsys.readouterr().err
    assert cli.main(["data", "generate", "--domain", "gripper", "--max-attempts", "100", "--out", str(tmp_path)]) == 2
    assert "max_attempts must be in 1..99" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_cli_verify_and_card(tiny, capsys, tmp_path):
    root = tiny
    assert cli.main(["data", "verify", str(root)]) == 0
    assert "ok" in capsys.readouterr().out
    assert cli.main(["data", "card", str(root)]) == 0
    card = capsys.readouterr().out
    assert "| blocksworld | train |" in card and "| visitall | plan |" in card
    assert cli.main(["data", "verify", str(tmp_path)]) == 1
    assert "no dataset" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_generate_end_to_end(tmp_path, capsys, monkeypatch):
    """The command line end to end (on the tiny profile, registered for the test): a split whose earlier splits
    are missing is refused with what to add; the whole domain; a rerun that skips it all."""
    monkeypatch.setitem(profiles.PROFILES, "tiny", tiny_profile())
    out = tmp_path / "tiny"
    argv = ["data", "generate", "--domain", "gripper", "--profile", "tiny", "--out", str(out), "--quiet",
            "--sat-evaluations", "100"]
    assert cli.main(argv + ["--splits", "plan"]) == 2
    assert "gripper/plan is made disjoint from gripper/train, which is not generated yet" in capsys.readouterr().err
    assert not out.exists()
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert "gripper/plan: 2 instances" in printed and "duplicate attempts rejected" in printed
    assert cli.main(argv) == 0
    assert "gripper/plan: complete, skipped" in capsys.readouterr().out


_GENERATE_AND_COUNT = """
import sys
sys.path.insert(0, {tests!r})
from dataset_helpers import tiny_profile
import tnlib.planning.fast_downward as fast_downward
from tnlib.data.generation import GenerateOptions, generate_dataset
real, calls = fast_downward.solve, []
fast_downward.solve = lambda *args, **kwargs: calls.append(1) or real(*args, **kwargs)
generate_dataset({out!r}, ["gripper"], profile=tiny_profile(), splits=["train", "val"],
                 options=GenerateOptions(progress=False))
print(len(calls))
"""


@pytest.mark.slow
def test_two_generations_into_one_folder_solve_each_attempt_once(tmp_path):
    """Two `generate` runs started together on one folder take turns per attempt: together they run as many solves
    as one run alone, and the dataset is the one a single run makes."""
    tests = str(Path(__file__).resolve().parents[1])

    def start(out: Path) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", _GENERATE_AND_COUNT.format(tests=tests, out=str(out))],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    alone = start(tmp_path / "alone")
    solves_alone = int(alone.communicate()[0])
    pair = [start(tmp_path / "shared"), start(tmp_path / "shared")]
    outputs = [process.communicate() for process in pair]
    assert all(process.returncode == 0 for process in pair), [err for _, err in outputs]
    solves = [int(out) for out, _ in outputs]
    assert sum(solves) == solves_alone and solves_alone > 0, (solves, solves_alone)
    for table in ("train.parquet", "val.parquet"):
        assert sha256_file(tmp_path / "shared" / "gripper" / table) == sha256_file(tmp_path / "alone" / "gripper" / table)
    assert cli.main(["data", "verify", str(tmp_path / "shared")]) == 0


def test_a_data_root_named_by_another_checkout_is_found_in_this_one(tmp_path):
    from tnlib.data.manifest import dataset_root, default_data_root

    here = dataset_root(default_data_root() / "small")
    assert dataset_root(tmp_path / "gone" / "checkout" / "data" / "small") == here  # a run folder from elsewhere
    with pytest.raises(DatasetError):
        dataset_root(tmp_path / "gone" / "nothing-like-it")
    with pytest.raises(DatasetError):  # an existing folder is taken at its word
        dataset_root(tmp_path)
