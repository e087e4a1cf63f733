"""Tests for tnlib.data: verification (missing, corrupt, edited, stray files; clear messages), load_split and
StateTable, HeuristicDataset items against the table they come from, subsampling, batching, the data root, and
the shipped data/ folder."""
from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tnlib import cli
from tnlib.data import load_split
from tnlib.data.generation import GenerateOptions, generate_dataset
from tnlib.data.loading import HeuristicDataset, StateTable, collate
from tnlib.data.manifest import dataset_root, default_data_root, find_datasets, verify_dataset
from tnlib.data.schema import SPLITS
from tnlib.errors import DatasetError
from tnlib.files import sha256_file
from tnlib.paper import DOMAINS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dataset_helpers import shared_dataset, tiny_profile  # noqa: E402

REPO_DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="session")
def pristine(tmp_path_factory):
    """gripper and ferry, every split; h_sat with a small evaluation limit so that some values are missing."""
    profile = tiny_profile(seeds=3, sat_max_evaluations=4)
    folder = shared_dataset(
        tmp_path_factory, "data-pristine",
        lambda out: generate_dataset(out / "tiny", ["gripper", "ferry"], profile,
                                     options=GenerateOptions(progress=False)),
    )
    return folder / "tiny"


@pytest.fixture
def root(pristine, tmp_path):
    """A private copy each test may damage."""
    copy = tmp_path / "tiny"
    shutil.copytree(pristine, copy)
    return copy


# ---------------------------------------------------------------------------------------------------------------
# Verification


def test_a_fresh_dataset_verifies(pristine):
    assert verify_dataset(pristine) == []
    for domain in ("gripper", "ferry"):
        for split in SPLITS:
            assert len(load_split(pristine, domain, split)) > 0


def test_corrupt_table_is_named(root):
    path = root / "gripper" / "train.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    # the remedy works as printed: the later splits are remade with train (they are checked against it), and
    # --out names this root, which is not the profile's default one
    with pytest.raises(DatasetError, match=r"gripper/train.parquet: checksum mismatch.*--splits train,val,test,plan "
                                           rf"--out {root} --force"):
        load_split(root, "gripper", "train")
    # Other splits are still usable; the damaged one loads only unverified (and then pyarrow may refuse it).
    assert len(load_split(root, "gripper", "val")) > 0


def test_the_command_a_damaged_train_table_names_makes_the_dataset_whole_again(root, monkeypatch):
    import re
    import shlex

    import tnlib.data.profiles as profiles

    path = root / "gripper" / "train.parquet"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # cut short
    with pytest.raises(DatasetError) as raised:
        load_split(root, "gripper", "train")
    command = re.search(r"`tnlib (data generate [^`]*)`", str(raised.value)).group(1)
    # the profile the pristine dataset was made with, under the name its manifest records
    monkeypatch.setitem(profiles.PROFILES, "tiny", tiny_profile(seeds=3, sat_max_evaluations=4))
    assert cli.main(shlex.split(command)) == 0  # once, as printed: no second flag to add
    assert verify_dataset(root) == []
    assert len(load_split(root, "gripper", "train")) > 0


def test_missing_problem_file_is_named(root):
    problem = load_split(root, "ferry", "test").column("problem")[0]
    (root / problem).unlink()
    with pytest.raises(DatasetError, match=f"{problem}: missing"):
        load_split(root, "ferry", "test")
    assert any(problem in p for p in verify_dataset(root))


def test_edited_manifest_and_stray_files_are_reported(root):
    manifest = root / "gripper" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["splits"]["val"]["counts"]["states"] += 1
    manifest.write_text(json.dumps(data))
    (root / "ferry" / "problems" / "train" / "extra.pddl").write_text("(define)")
    problems = verify_dataset(root)
    assert any("gripper/manifest.json: checksum differs" in p for p in problems)
    assert any("ferry/problems/train/extra.pddl: not listed" in p for p in problems)
    assert any("gripper/val.parquet" in p and "rows, the manifest says" in p for p in problems)


def _rewrite_manifests(root, domain, manifest):
    """Write a domain manifest and update the root manifest's checksum of it (what a hand edit that knows the
    format, or a generator bug, would leave: every checksum passes)."""
    path = root / domain / "manifest.json"
    path.write_text(json.dumps(manifest))
    top = json.loads((root / "manifest.json").read_text())
    top["domains"][domain]["sha256"] = sha256_file(path)
    (root / "manifest.json").write_text(json.dumps(top))


def test_verify_flags_an_instance_repeated_across_splits(root, capsys):
    from tnlib.data.instance_keys import instance_key, problem_from_text

    manifest = json.loads((root / "gripper" / "manifest.json").read_text())
    train = manifest["splits"]["train"]["instances"][0]
    val = manifest["splits"]["val"]["instances"][0]
    # val's first problem becomes train's first with the rooms swapped and another name: no atom string in
    # common with it, the same instance.
    copy = problem_from_text((root / train["problem"]).read_text()).renamed({"rooma": "roomb", "roomb": "rooma"},
                                                                        name=val["instance"])
    (root / val["problem"]).write_text(copy.to_pddl("gripper"))
    manifest["files"][val["problem"]] = sha256_file(root / val["problem"])
    val["instance_key"] = instance_key(copy)
    _rewrite_manifests(root, "gripper", manifest)
    problems = verify_dataset(root)
    assert len(problems) == 1
    assert "gripper/val: 1 of 3 instances also occur in an earlier split (1 in train)" in problems[0]
    assert f"{val['problem']} repeats {train['problem']}" in problems[0]
    assert f"--domain gripper --profile tiny --splits val,test,plan --out {root} --force" in problems[0]
    with pytest.raises(DatasetError, match="also occur in an earlier split"):
        load_split(root, "gripper", "val")
    assert len(load_split(root, "gripper", "train")) > 0  # train itself is fine
    assert cli.main(["data", "verify", str(root)]) == 1
    out = capsys.readouterr().out
    assert "gripper duplicates: train 6: 0 repeated; val 3: 0 repeated, 1 in train, 1 in earlier splits" in out

    # A key that does not match its file: the manifest's keys are not taken on trust by the full check.
    val["instance_key"] = "0" * 64
    _rewrite_manifests(root, "gripper", manifest)
    assert any(f"{val['problem']}: the manifest's instance_key differs" in p for p in verify_dataset(root))


def test_verify_reports_zero_duplicates_for_a_generated_dataset(pristine, capsys):
    assert cli.main(["data", "verify", str(pristine)]) == 0
    out = capsys.readouterr().out
    assert "ferry duplicates: train" in out and "0 in train, 0 in earlier splits" in out
    assert " 1 repeated" not in out and " 1 in train" not in out


def test_missing_dataset_names_the_command_that_makes_it(tmp_path, monkeypatch):
    with pytest.raises(DatasetError, match="tnlib data generate --domain all --profile small"):
        load_split(tmp_path, "gripper", "train")
    monkeypatch.setenv("TNLIB_DATA", str(tmp_path / "elsewhere"))
    assert default_data_root() == tmp_path / "elsewhere"
    with pytest.raises(DatasetError, match="no dataset at .*elsewhere"):
        load_split(None, "gripper", "train")


def test_missing_domain_or_split_names_the_command(root):
    with pytest.raises(DatasetError, match="'visitall' is not in this dataset.*--domain visitall --profile tiny"):
        load_split(root, "visitall", "train")
    shutil.rmtree(root / "gripper")
    with pytest.raises(DatasetError, match="gripper manifest missing"):
        load_split(root, "gripper", "train")
    with pytest.raises(DatasetError, match="unknown split 'training'"):
        load_split(root, "ferry", "training")


def test_cli_verify_exits_nonzero_on_damage(root, capsys):
    assert cli.main(["data", "verify", str(root)]) == 0
    (root / "ferry" / "val.parquet").unlink()
    assert cli.main(["data", "verify", str(root)]) == 1
    err = capsys.readouterr().err
    assert "ferry/val.parquet: missing" in err and "tnlib data generate --domain ferry --profile tiny --splits val" in err


def test_data_root_with_profile_subfolders(pristine, monkeypatch):
    monkeypatch.setenv("TNLIB_DATA", str(pristine.parent))
    assert dataset_root(None, "tiny") == pristine
    assert find_datasets(pristine.parent) == [pristine]
    assert len(load_split(None, "gripper", "val", profile="tiny")) == len(load_split(pristine, "gripper", "val"))


# ---------------------------------------------------------------------------------------------------------------
# Tables and torch datasets


def test_state_table_wraps_the_rows(pristine):
    table = load_split(pristine, "gripper", "train")
    assert isinstance(table, StateTable)
    rows = table.to_pylist()
    assert len(table) == len(rows) and repr(table[0]) == repr(rows[0]) and repr(table[-1]) == repr(rows[-1])
    assert table.instances() == list(dict.fromkeys(r["instance"] for r in rows))
    subset = table.select_instances(table.instances()[:2])
    assert set(subset.instances()) == set(table.instances()[:2])
    assert len(subset) == sum(1 for r in rows if r["instance"] in table.instances()[:2])
    assert table.problem_path(rows[0]["instance"]).is_file()
    with pytest.raises(KeyError, match="unknown instance"):
        table.select_instances(["nope"])
    with pytest.raises(IndexError):
        table[len(table)]


def test_items_carry_the_chosen_bounds_and_features(pristine):
    table = load_split(pristine, "ferry", "train")
    rows = table.to_pylist()
    data = HeuristicDataset(table, lower_bound="hmax", residual="lmcut", upper_bound="h_sat")
    assert len(data) == len(rows)
    saw_missing = False
    for item, row in zip(data, rows):
        assert item["h_star"].dtype == torch.float32 and item["h_star"].shape == ()
        assert item["h_star"].item() == row["h_star"]
        assert item["lower"].item() == row["hmax"]
        assert item["residual"].item() == row["lmcut"]
        if math.isnan(row["h_sat"]):
            saw_missing = True
            assert item["upper"].item() == math.inf
        else:
            assert item["upper"].item() == row["h_sat"]
        assert item["features"].dtype == torch.float32 and item["features"].shape == (4,)
        assert item["features"].tolist() == pytest.approx(
            [row["goalcount"], row["ff"], row["ff_ignored_deletes_total"], row["ff_ignored_deletes_mean"]])
        assert item["state"] == row["state"] and item["goal"] == row["goal"]
        assert item["instance"] == row["instance"] and item["domain"] == "ferry"
        assert item["problem"] == str(pristine / row["problem"]) and Path(item["problem"]).is_file()
    assert saw_missing, "the fixture's evaluation limit should leave some h_sat missing"


def test_none_options(pristine):
    data = HeuristicDataset(load_split(pristine, "gripper", "val"), lower_bound="none", residual="none")
    item = data[0]
    assert item["lower"].item() == -math.inf and item["upper"].item() == math.inf and item["residual"].item() == 0
    default = HeuristicDataset(load_split(pristine, "gripper", "val"))
    assert default[0]["lower"].item() == load_split(pristine, "gripper", "val")[0]["lmcut"]
    assert default[0]["residual"].item() == load_split(pristine, "gripper", "val")[0]["ff"]


def test_bad_options_are_refused(pristine):
    table = load_split(pristine, "gripper", "val")
    with pytest.raises(ValueError, match="lower_bound must be one of"):
        HeuristicDataset(table, lower_bound="hadd")
    with pytest.raises(ValueError, match="residual must be one of"):
        HeuristicDataset(table, residual="hmax")
    with pytest.raises(ValueError, match="upper_bound must be one of"):
        HeuristicDataset(table, upper_bound="ff")
    with pytest.raises(ValueError, match="instances=0: must be at least 1"):
        HeuristicDataset(table, instances=0)


def test_instances_means_at_most_n_distinct_instances(pristine):
    """Asking for more instances than the split holds uses all of them and says so, once."""
    import warnings

    table = load_split(pristine, "gripper", "val")  # 3 instances
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = HeuristicDataset(table, instances=400, seed=5)
    assert [str(w.message) for w in caught] == [
        "gripper/val: instances=400 asked for, but the split has 3 distinct instances; using all 3"]
    assert dataset.instances() == table.instances() and len(dataset) == len(table)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # exactly as many as there are: no warning, all of them
        assert HeuristicDataset(table, instances=3, seed=5).instances() == table.instances()


def test_instance_subsampling_is_seeded(pristine):
    table = load_split(pristine, "gripper", "train")  # 2 sizes x 3 seeds = 6 instances
    first = HeuristicDataset(table, instances=3, seed=0)
    again = HeuristicDataset(table, instances=3, seed=0)
    assert first.instances() == again.instances() and len(first.instances()) == 3
    others = {tuple(HeuristicDataset(table, instances=3, seed=s).instances()) for s in range(10)}
    assert len(others) > 1
    # Every state of a chosen instance comes along, in table order.
    chosen = set(first.instances())
    assert len(first) == sum(1 for r in table.to_pylist() if r["instance"] in chosen)
    assert HeuristicDataset(table, instances=table.instances()[:1]).instances() == table.instances()[:1]


def test_goal_states_can_be_left_out(pristine):
    table = load_split(pristine, "gripper", "train")
    without = HeuristicDataset(table, goal_states=False)
    assert len(without) == len(table) - len(table.instances())
    assert min(item["h_star"].item() for item in without) >= 1
    assert without.instances() == table.instances()


def test_batches_through_a_dataloader(pristine):
    data = HeuristicDataset(load_split(pristine, "gripper", "test"))
    batch = next(iter(DataLoader(data, batch_size=5, collate_fn=collate)))
    assert batch["h_star"].shape == (5,) and batch["features"].shape == (5, 4)
    assert len(batch["state"]) == 5 and isinstance(batch["state"][0], list)
    assert HeuristicDataset.collate([data[0], data[1]])["lower"].shape == (2,)


# ---------------------------------------------------------------------------------------------------------------
# The shipped data


# ---------------------------------------------------------------------------------------------------------------
# Rows equal to a train (state, goal) pair (tnlib.data.train_pairs)


def _brute_form(objects, types, state, goal) -> tuple:
    """Reference: the smallest (types, state, goal) over every renaming of the objects to 0..n-1."""
    from itertools import permutations

    from tnlib.planning.pddl import parse_atom

    state, goal = [(name, *args) for name, args in map(parse_atom, state)], [(name, *args) for name, args in map(parse_atom, goal)]
    best = None
    for image in permutations(range(len(objects))):
        name = dict(zip(objects, image))
        rename = lambda atoms: tuple(sorted((a[0], *(name[o] for o in a[1:])) for a in atoms))  # noqa: E731
        form = (tuple(t for _, t in sorted(zip(image, types))), rename(state), rename(goal))
        best = form if best is None or form < best else best
    return best


def test_train_pairs_are_exactly_the_rows_equal_to_a_train_row_up_to_renaming(pristine):
    """Brute force over every renaming of every row (at most 7 objects): the recorded rows of val, test and plan
    are those whose (state, goal) is some train row's, and without_train_pairs keeps the others."""
    from tnlib.data.instance_keys import problem_from_text

    def objects(row):
        return problem_from_text((pristine / row["problem"]).read_text()).objects

    def form(row):
        p = problem_from_text((pristine / row["problem"]).read_text())
        if len(p.objects) > 7:  # test and plan: larger than any train instance, so never equal
            return ("too large for brute force", len(p.objects), row["instance"], row["step"])
        return _brute_form(p.objects, p.types, row["state"], row["goal"])

    seen = {"equal": 0, "kept": 0}
    for domain in ("gripper", "ferry"):
        manifest = json.loads((pristine / domain / "manifest.json").read_text())
        sizes = {len(objects(r)) for s in ("val", "test", "plan") for r in load_split(pristine, domain, s)}
        # rows with other object counts cannot be equal: brute force only over the train rows that could be
        train = {form(r) for r in load_split(pristine, domain, "train") if len(objects(r)) in sizes}
        for split in ("val", "test", "plan"):
            table = load_split(pristine, domain, split)
            rows = table.to_pylist()
            expected = {(r["instance"], r["step"]) for r in rows if form(r) in train}
            record = manifest["splits"][split]["train_pairs"]
            assert {(i, t) for i, steps in record["steps_equal_to_train"].items() for t in steps} == expected
            assert (record["rows"], record["equal_to_train"], record["kept"]) == \
                (len(rows), len(expected), len(rows) - len(expected))
            kept = table.without_train_pairs()
            assert [(r["instance"], r["step"]) for r in kept] == \
                [(r["instance"], r["step"]) for r in rows if (r["instance"], r["step"]) not in expected]
            seen["equal"] += len(expected)
            seen["kept"] += len(kept)
        with pytest.raises(DatasetError, match="its rows are the train pairs"):
            load_split(pristine, domain, "train").without_train_pairs()
    assert seen["equal"] > 0 and seen["kept"] > 0  # the tiny profile's val grid repeats train's sizes


def test_verify_fails_when_the_train_pair_record_is_wrong(root, capsys):
    manifest = json.loads((root / "gripper" / "manifest.json").read_text())
    record = manifest["splits"]["val"]["train_pairs"]
    assert record["equal_to_train"] > 0
    instance, steps = next(iter(record["steps_equal_to_train"].items()))
    # One row unmarked, the counts made to add up: only recomputing the keys can tell.
    record["steps_equal_to_train"][instance] = steps[1:]
    record["equal_to_train"] -= 1
    record["kept"] += 1
    _rewrite_manifests(root, "gripper", manifest)
    equal = record["equal_to_train"] + 1
    assert verify_dataset(root) == [
        f"gripper/val: {equal} rows equal a train (state, goal) pair up to renaming, the manifest marks "
        f"{equal - 1} (1 differ, e.g. {instance} step {steps[0]} equal but not marked); run "
        f"`tnlib data train-pairs {root}`"]
    assert verify_dataset(root, "gripper", "val") == []  # a load-time check does not key rows
    # Counts that do not add up, a record made for another train table, a missing one: found without keying.
    record["kept"] += 1
    _rewrite_manifests(root, "gripper", manifest)
    assert verify_dataset(root, "gripper", "val") == [
        f"gripper/val: its train-pair record does not add up (rows {record['rows']} of {record['rows']}, "
        f"equal_to_train {record['equal_to_train']} with {record['equal_to_train']} rows marked, kept "
        f"{record['kept']}); run `tnlib data train-pairs {root}`"]
    record["kept"] -= 1
    record["train_table_sha256"] = "0" * 64
    _rewrite_manifests(root, "gripper", manifest)
    assert verify_dataset(root, "gripper", "val") == [
        "gripper/val: its train-pair record was made for another train table (train remade since); run "
        f"`tnlib data train-pairs {root}`"]
    with pytest.raises(DatasetError, match="made for another train table"):
        load_split(root, "gripper", "val", verify=False).without_train_pairs()
    del manifest["splits"]["test"]["train_pairs"]
    _rewrite_manifests(root, "gripper", manifest)
    problems = verify_dataset(root)
    assert any("gripper/test: the manifest does not record which rows equal a train (state, goal) pair" in p
               for p in problems)
    assert cli.main(["data", "verify", str(root)]) == 1
    # The command rewrites the records; then everything verifies again.
    capsys.readouterr()
    assert cli.main(["data", "train-pairs", str(root), "--domain", "gripper"]) == 0
    out = capsys.readouterr().out
    assert (f"{root}/gripper: states = a train (state, goal) pair: val {equal} of {record['rows']} "
            f"({record['rows'] - equal} kept for model selection); test ") in out
    assert verify_dataset(root) == []
    fixed = json.loads((root / "gripper" / "manifest.json").read_text())["splits"]["val"]["train_pairs"]
    assert fixed["steps_equal_to_train"][instance] == steps
    assert cli.main(["data", "train-pairs", str(root), "--domain", "nowhere"]) == 2
    assert "domain 'nowhere' is not in" in capsys.readouterr().err


@pytest.mark.skipif(not (REPO_DATA / "small" / "manifest.json").is_file(), reason="data/small not generated")
def test_shipped_small_dataset_verifies_and_loads():
    root = REPO_DATA / "small"
    assert verify_dataset(root) == []
    manifest = json.loads((root / "manifest.json").read_text())
    for domain in manifest["domains"]:
        splits = json.loads((root / domain / "manifest.json").read_text())["splits"]
        for split, entry in splits.items():
            table = load_split(REPO_DATA, domain, split, verify=False)
            assert len(table) == entry["counts"]["states"]
            h_star = table.numpy("h_star")
            assert (table.numpy("lmcut") <= h_star).all()
            h_sat = table.numpy("h_sat")
            assert (h_sat[~np.isnan(h_sat)] >= h_star[~np.isnan(h_sat)]).all()
    assert set(manifest["domains"]) <= set(DOMAINS)


@pytest.mark.parametrize("domain", ["ferry", "gripper"])
def test_an_instance_optimal_cost_is_the_exact_solver_h_star_of_its_initial_state(domain):
    from tnlib.planning.optimal_costs import optimal_cost

    table = load_split(REPO_DATA / "small", domain, "plan", verify=False)
    initial = {r["instance"]: r for r in table.to_pylist() if r["step"] == 0}
    assert set(initial) == set(table.instances())
    for name, row in initial.items():
        assert table.optimal_cost(name) == optimal_cost(domain, row["state"], row["goal"]) == row["plan_length"] > 0
    later = table.select_instances(table.instances()[:1])
    later.table = later.table.filter(later.table.column("step").to_numpy() > 0)  # its initial row gone
    assert later.optimal_cost(table.instances()[0]) is None and table.optimal_cost("nope") is None


def test_a_damaged_dataset_manifest_says_how_to_restore_it(root):
    (root / "manifest.json").write_text("{not json")
    problems = verify_dataset(root)
    assert len(problems) == 1 and "dataset manifest damaged" in problems[0]
    assert f"git checkout -- {root / 'manifest.json'}" in problems[0]
    assert f"tnlib data generate --domain all --profile PROFILE --out {root} --force" in problems[0]


def test_a_hint_for_the_default_root_needs_no_out():
    from tnlib.data.manifest import generate_hint

    hint = generate_hint("ferry", "small", "val", force=True, root=default_data_root() / "small", splits=SPLITS)
    assert hint == "`tnlib data generate --domain ferry --profile small --splits val,test,plan --force`"


def test_a_test_grid_table_is_written_without_dictionaries_in_half_the_bytes_and_reads_back_the_same_rows():
    """tnlib.data.schema.split_table_bytes: the test grid's form (no dictionary, zstd level 19, a column a page)
    against the other splits' form (zstd's default level with dictionaries, pyarrow's defaults otherwise, so that
    a split made again is its committed file byte for byte), on 2,000 rows of data/paper's ferry test grid."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tnlib.data.schema import TEST_GRID, split_table_bytes

    table = pq.read_table(REPO_DATA / "paper" / "ferry" / "test-grid.parquet").slice(0, 2000)
    buffer = pa.BufferOutputStream()
    pq.write_table(table, buffer, compression="zstd")
    assert split_table_bytes(table, "test") == buffer.getvalue().to_pybytes()
    grid = split_table_bytes(table, TEST_GRID)
    assert len(grid) < 0.65 * len(split_table_bytes(table, "test"))
    again = pq.read_table(pa.BufferReader(grid))
    assert again.schema.equals(table.schema)
    assert json.dumps(again.to_pylist()) == json.dumps(table.to_pylist())  # NaN h_sat compared as written
    columns = pq.ParquetFile(pa.BufferReader(grid)).metadata.row_group(0)
    assert all("RLE_DICTIONARY" not in columns.column(i).encodings for i in range(columns.num_columns))
