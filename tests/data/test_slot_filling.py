"""tnlib.data.slot_filling: out-of-reach slots of a finished split get the generator's draws, solved by the exact
solver and labelled, while every other instance keeps its record, problem file and table rows; the dataset still
verifies, and the solution cache does not take the filled plans for Fast Downward's."""
from __future__ import annotations

import dataclasses
import gzip
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import tnlib.data.slot_filling as filling
from tnlib.data.loading import load_split
from tnlib.data.manifest import data_card, verify_dataset
from tnlib.data.profiles import get_profile
from tnlib.data.schema import MANIFEST
from tnlib.data.slot_filling import fill_empty_slots
from tnlib.data.solution_cache import SolutionCache, text_sha256
from tnlib.data.train_pairs_writing import record_train_pairs
from tnlib.errors import DatasetError
from tnlib.files import atomic_write_json, read_json, sha256_file
from tnlib.planning.generators import generate
from tnlib.planning.plans import validate_plan
from tnlib.planning.task import load_task

SMALL = Path(__file__).resolve().parents[2] / "data" / "small"
DOMAIN = "blocksworld"


def _empty_slots(root: Path, split: str, count: int) -> list[dict]:
    """Turns the first ``count`` instances of a split (drawn at attempt 0) into out-of-reach slots, as an A* run
    that timed out on them leaves them; returns their records."""
    path = root / DOMAIN / MANIFEST
    manifest = read_json(path)
    entry = manifest["splits"][split]
    removed = [i for i in entry["instances"] if i["attempt"] == 0 and not i["rejected"]][:count]
    names = {i["instance"] for i in removed}
    entry["instances"] = [i for i in entry["instances"] if i["instance"] not in names]
    entry["failures"] += [{"params": i["params"], "seed_number": i["seed_number"], "status": "out_of_reach",
                           "rejected": [{"seed": i["seed"], "status": "timeout", "seconds": 60.0}]} for i in removed]
    table = pq.read_table(root / DOMAIN / entry["table"])
    table = table.filter(pc.invert(pc.is_in(table.column("instance"), value_set=pc.cast(list(names), "string"))))
    pq.write_table(table, root / DOMAIN / entry["table"], compression="zstd")
    entry["counts"].update(instances=len(entry["instances"]), states=table.num_rows,
                           failed=len(entry["failures"]), out_of_reach=count)
    entry["out_of_reach_cells"] = [{"params": removed[0]["params"], "instances": 0, "unfilled": 1,
                                    "found_in": split, "attempts": []}]
    for record in removed:
        (root / record["problem"]).unlink()
        del manifest["files"][record["problem"]]
    manifest["files"][f"{DOMAIN}/{entry['table']}"] = sha256_file(root / DOMAIN / entry["table"])
    atomic_write_json(path, manifest)
    top = read_json(root / MANIFEST)
    top["domains"][DOMAIN]["sha256"] = sha256_file(path)
    atomic_write_json(root / MANIFEST, top)
    record_train_pairs(root, [DOMAIN])
    return removed


@pytest.fixture
def emptied(tmp_path):
    root = tmp_path / "small"
    shutil.copytree(SMALL, root)
    before = read_json(root / DOMAIN / MANIFEST)
    tables = {s: pq.read_table(root / DOMAIN / f"{s}.parquet") for s in ("train", "val")}
    removed = _empty_slots(root, "train", 2) + _empty_slots(root, "val", 1)
    assert verify_dataset(root, DOMAIN) == []
    return root, before, tables, removed


def test_filled_slots_hold_the_draws_the_a_star_run_kept_with_optimal_labels(emptied):
    root, before, tables, removed = emptied
    done = fill_empty_slots(root, DOMAIN, ["train", "val"], progress=lambda _m: None)
    assert {s: r["slots"] for s, r in done.items()} == {"train": 2, "val": 1}
    after = read_json(root / DOMAIN / MANIFEST)
    assert verify_dataset(root, DOMAIN) == []
    assert not (root / DOMAIN / ".work").exists()
    for split in ("train", "val"):
        old, new = before["splits"][split], after["splits"][split]
        filled = {i["instance"]: i for i in new["instances"] if i.get("solver") == "exact"}
        assert set(filled) == {i["instance"] for i in removed if i["problem"].split("/")[2] == split}
        assert [i["instance"] for i in new["instances"]] == [i["instance"] for i in old["instances"]]
        for kept, original in zip(new["instances"], old["instances"]):
            if kept["instance"] in filled:
                assert kept["plan_length"] == original["plan_length"] and kept["seed"] == original["seed"]
                assert kept["fast_downward_rejected"][0]["status"] == "timeout"
            else:
                assert kept == original
        assert new["counts"]["instances"] == old["counts"]["instances"] and not new["failures"]
        assert new["out_of_reach_cells"] == [] and new["exact_fill"]["completed_out_of_reach_cells"]
        table = pq.read_table(root / DOMAIN / new["table"])
        in_table = list(dict.fromkeys(table.column("instance").to_pylist()))
        assert in_table == [i["instance"] for i in new["instances"]]  # slot order, as generation writes it
        for name in {i["instance"] for i in old["instances"]} - set(filled):
            rows = [t.filter(pc.equal(t.column("instance"), name)).replace_schema_metadata(None)
                    for t in (table, tables[split])]
            assert rows[0].equals(rows[1]), name
        starts = table.filter(pc.equal(table.column("step"), 0))
        for name, record in filled.items():
            start = starts.filter(pc.equal(starts.column("instance"), name)).column("h_star").to_pylist()
            assert start == [record["plan_length"]]
        for instance in new["instances"]:
            assert (root / instance["problem"]).is_file()


def test_an_interrupted_fill_resumes_from_its_labelled_attempts(emptied, monkeypatch):
    root, _before, _tables, _removed = emptied

    calls = []
    real = filling.run_attempt

    def counted(job):
        calls.append(job.seed)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(job)

    monkeypatch.setattr(filling, "run_attempt", counted)
    with pytest.raises(KeyboardInterrupt):
        fill_empty_slots(root, DOMAIN, ["train"], progress=lambda _m: None)
    assert verify_dataset(root, DOMAIN) == []  # nothing of the split written yet
    fill_empty_slots(root, DOMAIN, ["train"], progress=lambda _m: None)
    assert len(calls) == 3 and calls[1] == calls[2]  # the first labelled attempt was read back


def test_solution_cache_leaves_out_the_exactly_filled_plans(emptied):
    root, _before, _tables, removed = emptied
    fill_empty_slots(root, DOMAIN, ["train"], progress=lambda _m: None)
    cache = SolutionCache.from_datasets([root], [DOMAIN])
    manifest = read_json(root / DOMAIN / MANIFEST)
    filled = [i for i in manifest["splits"]["train"]["instances"] if i.get("solver") == "exact"]
    assert filled
    for record in filled:
        found = cache.lookup(text_sha256((root / record["problem"]).read_text()), manifest["fast_downward"],
                             60.0, manifest["splits"]["train"]["settings"]["memory_limit_mb"])
        assert found is None or found["status"] == "timeout"


def test_domain_without_an_exact_solver_is_refused(tmp_path):
    with pytest.raises(DatasetError, match="no exact solver"):
        fill_empty_slots(tmp_path, "logistics", ["train"])


def _drop_cell(root: Path, split: str, blocks: int) -> list[dict]:
    """Takes one cell out of a split and its recorded grid, as a split made before the profile's grid gained the
    cell holds it; returns the cell's records."""
    path = root / DOMAIN / MANIFEST
    manifest = read_json(path)
    entry = manifest["splits"][split]
    removed = [i for i in entry["instances"] if i["params"] == {"blocks": blocks}]
    entry["instances"] = [i for i in entry["instances"] if i not in removed]
    entry["settings"]["grid"]["params"].remove({"blocks": blocks})
    names = [i["instance"] for i in removed]
    table = pq.read_table(root / DOMAIN / entry["table"])
    table = table.filter(pc.invert(pc.is_in(table.column("instance"), value_set=pc.cast(names, "string"))))
    pq.write_table(table, root / DOMAIN / entry["table"], compression="zstd")
    entry["counts"].update(slots=entry["counts"]["slots"] - len(removed), instances=len(entry["instances"]),
                           states=table.num_rows)
    for record in removed:
        (root / record["problem"]).unlink()
        del manifest["files"][record["problem"]]
    manifest["files"][f"{DOMAIN}/{entry['table']}"] = sha256_file(root / DOMAIN / entry["table"])
    atomic_write_json(path, manifest)
    top = read_json(root / MANIFEST)
    top["domains"][DOMAIN]["sha256"] = sha256_file(path)
    atomic_write_json(root / MANIFEST, top)
    record_train_pairs(root, [DOMAIN])
    return removed


def test_a_cell_the_profile_gained_is_filled_with_the_draws_generation_makes(tmp_path):
    root = tmp_path / "small"
    shutil.copytree(SMALL, root)
    before = read_json(root / DOMAIN / MANIFEST)["splits"]["val"]
    table_before = pq.read_table(root / DOMAIN / "val.parquet").replace_schema_metadata(None)
    removed = _drop_cell(root, "val", 5)
    assert verify_dataset(root, DOMAIN) == []
    done = fill_empty_slots(root, DOMAIN, ["train", "val"], progress=lambda _m: None)
    assert list(done) == ["val"] and done["val"]["slots"] == len(removed) == 10  # train had no empty slot
    assert done["val"]["added_cells"] == [{"blocks": 5}]
    assert verify_dataset(root, DOMAIN) == []
    after = read_json(root / DOMAIN / MANIFEST)["splits"]["val"]
    assert after["settings"] == before["settings"] and after["counts"] == before["counts"]
    # the same draws in the same slots; the exact solver's optimal plan may be another than A*'s, so the filled
    # instances' rows walk its states, with the same h* at the start and the same number of steps
    solved_by = ("plan", "solve_seconds", "label_seconds", "solve_reused", "expansions", "solver")
    assert ([{k: v for k, v in i.items() if k not in solved_by} for i in after["instances"]]
            == [{k: v for k, v in i.items() if k not in solved_by} for i in before["instances"]])
    table = pq.read_table(root / DOMAIN / "val.parquet").replace_schema_metadata(None)
    assert table.column("instance").to_pylist() == table_before.column("instance").to_pylist()
    names = {i["instance"] for i in removed}
    kept = pc.invert(pc.is_in(table.column("instance"), value_set=pc.cast(list(names), "string")))
    assert table.filter(kept).equals(table_before.filter(kept))
    starts = pc.equal(table.column("step"), 0)
    for column in ("instance", "state", "goal", "h_star"):
        assert table.filter(starts).column(column).equals(table_before.filter(starts).column(column))
    assert fill_empty_slots(root, DOMAIN, ["val"], progress=lambda _m: None) == {}  # nothing left to fill
    assert "| blocksworld | val (+10 by the exact solver) |" in data_card(root)
    manifest = read_json(root / DOMAIN / MANIFEST)
    manifest["splits"]["val"]["settings"]["solver"] = "exact"  # a split the exact solver made, grown later
    atomic_write_json(root / DOMAIN / MANIFEST, manifest)
    assert "| blocksworld | val (exact solver) (+10 filled later) |" in data_card(root)


def _compressing(cell: dict, split: str):
    """The small profile with ``cell`` of blocksworld's ``split`` stored compressed: what get_profile gives."""
    small = get_profile("small")
    grids = {domain: dict(splits) for domain, splits in small.grids.items()}
    grids[DOMAIN][split] = dataclasses.replace(grids[DOMAIN][split], compressed=(tuple(cell.items()),))
    return lambda name: dataclasses.replace(small, grids=grids) if name == "small" else get_profile(name)


def test_a_cell_stored_compressed_is_filled_with_gzip_problem_files_that_verify(tmp_path, monkeypatch):
    root = tmp_path / "small"
    shutil.copytree(SMALL, root)
    plain_before = {p: p.read_bytes() for p in (root / DOMAIN / "problems").glob("*/*.pddl")}
    removed = _drop_cell(root, "val", 5)
    monkeypatch.setattr(filling, "get_profile", _compressing({"blocks": 5}, "val"))
    fill_empty_slots(root, DOMAIN, ["val"], progress=lambda _m: None)
    assert verify_dataset(root, DOMAIN) == [] and verify_dataset(root) == []
    entry = read_json(root / DOMAIN / MANIFEST)["splits"]["val"]
    assert entry["settings"]["grid"]["compressed_problems"] == [{"blocks": 5}]
    added = [i for i in entry["instances"] if i["params"] == {"blocks": 5}]
    assert [i["instance"] for i in added] == [i["instance"] for i in removed]
    for record in added:
        assert record["problem"] == f"{DOMAIN}/problems/val/{record['instance']}.pddl.gz"
        assert not (root / record["problem"].removesuffix(".gz")).exists()
        text = generate(DOMAIN, record["seed"], **record["params"])
        assert gzip.decompress((root / record["problem"]).read_bytes()).decode() == text
    # every other cell keeps its plain file, byte for byte
    kept = {p: b for p, b in plain_before.items() if p.is_file()}
    assert len(kept) == len(plain_before) - len(removed)
    assert all(p.read_bytes() == b for p, b in kept.items())
    # a loaded split hands out the compressed files, and they read as tasks whose plans are the recorded ones
    table = load_split(root, DOMAIN, "val", profile="small")
    record = added[0]
    task = load_task(DOMAIN, table.problem_path(record["instance"]))
    assert validate_plan(task, record["plan"]).valid

    # a changed compressed file: a checksum mismatch that says what gzip found
    path = root / added[1]["problem"]
    data = path.read_bytes()
    path.write_bytes(data[:-8])
    assert any(p.startswith(f"{added[1]['problem']}: checksum mismatch (changed or corrupt: its gzip stream is "
                            f"cut short)") for p in verify_dataset(root, DOMAIN))
    # ...and one written damaged, its checksum taken of the damaged bytes
    manifest = read_json(root / DOMAIN / MANIFEST)
    manifest["files"][added[1]["problem"]] = sha256_file(path)
    atomic_write_json(root / DOMAIN / MANIFEST, manifest)
    top = read_json(root / MANIFEST)
    top["domains"][DOMAIN]["sha256"] = sha256_file(root / DOMAIN / MANIFEST)
    atomic_write_json(root / MANIFEST, top)
    assert any(p.startswith(f"{added[1]['problem']}: its gzip stream is cut short, though its checksum is the "
                            "manifest's") for p in verify_dataset(root, DOMAIN))
    with pytest.raises(DatasetError, match="cut short"):
        load_split(root, DOMAIN, "val", profile="small")


def test_a_split_keeps_apart_only_from_the_splits_it_must_not_share_with():
    from tnlib.data.slot_filling import _taken_keys

    manifest = {"splits": {split: {"instances": [{"instance_key": split, "instance": "x"}]}
                           for split in ("train", "val", "test", "plan", "test-grid")}}
    assert set(_taken_keys(manifest, "test-grid")) == {"train", "val", "test-grid"}  # test draws are its own
    assert set(_taken_keys(manifest, "train")) == {"train", "val", "test", "plan", "test-grid"}
    assert set(_taken_keys(manifest, "test")) == {"train", "val", "test", "plan"}
