"""Relabelling a dataset's lmcut column with Fast Downward's LM-cut: the values, the manifest's record and
checksums, the skip on a second run, and the checks that stop it before anything is written."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from tnlib import cli
from tnlib.data.lmcut_relabelling import relabel_lmcut
from tnlib.data.schema import LMCUT_LABELS_RECORD
from tnlib.data.generation import GenerateOptions, generate_dataset
from tnlib.data.manifest import verify_dataset
from tnlib.errors import LabelError
from tnlib.files import read_json
from tnlib.planning.fast_downward import fast_downward_version, fd_heuristic_value
from tnlib.planning.fast_downward_states import state_problem_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dataset_helpers import shared_dataset, tiny_profile  # noqa: E402


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    folder = shared_dataset(
        tmp_path_factory, "data-relabel",
        lambda out: generate_dataset(out / "tiny", ["gripper"], tiny_profile(seeds=2),
                                     options=GenerateOptions(progress=False)),
    )
    return folder / "tiny"


@pytest.fixture
def root(pristine, tmp_path):
    copy = tmp_path / "tiny"
    shutil.copytree(pristine, copy)
    return copy


def _table(root, split="train"):
    return pq.read_table(root / "gripper" / f"{split}.parquet").to_pylist()


def test_relabelled_values_are_fast_downwards_and_the_dataset_verifies(root, tmp_path):
    done = relabel_lmcut(root, check_states=2, progress=False)
    assert set(done["gripper"]) == set(read_json(root / "gripper" / "manifest.json")["splits"])
    assert verify_dataset(root) == []
    rows = _table(root)
    for i in (0, len(rows) // 2, len(rows) - 1):
        state_file = tmp_path / f"state-{i}.pddl"
        state_file.write_text(state_problem_text((root / rows[i]["problem"]).read_text(), rows[i]["state"]))
        assert rows[i]["lmcut"] == fd_heuristic_value(root / "gripper" / "domain.pddl", state_file)
    record = read_json(root / "gripper" / "manifest.json")["splits"]["train"][LMCUT_LABELS_RECORD]
    assert record["fast_downward"] == fast_downward_version()
    assert record["states"] == len(rows) and record["checked_one_by_one"] == 2


def test_only_the_lmcut_column_changes(root, pristine):
    relabel_lmcut(root, splits=["test"], check_states=0, progress=False)
    before, after = _table(pristine, "test"), _table(root, "test")
    assert [{k: v for k, v in r.items() if k != "lmcut"} for r in before] == \
           [{k: v for k, v in r.items() if k != "lmcut"} for r in after]
    record = read_json(root / "gripper" / "manifest.json")["splits"]["test"][LMCUT_LABELS_RECORD]
    assert record["changed"] == sum(a["lmcut"] != b["lmcut"] for a, b in zip(before, after))


def test_an_interrupted_relabelling_leaves_a_dataset_that_verifies(root, monkeypatch):
    """Stopped after the train split (changed) and before the next: the train-pair records follow the tables."""
    import tnlib.data.lmcut_relabelling as relabelling

    calls = []
    whole = relabelling._relabel_split

    def stopping(*args):
        calls.append(args[2])
        if len(calls) > 1:
            raise KeyboardInterrupt
        return whole(*args)

    monkeypatch.setattr(relabelling, "_relabel_split", stopping)
    with pytest.raises(KeyboardInterrupt):
        relabel_lmcut(root, check_states=0, progress=False)
    assert calls == ["train", "val"]
    record = read_json(root / "gripper" / "manifest.json")["splits"]["train"][LMCUT_LABELS_RECORD]
    assert record["changed"] > 0  # else no checksum would have moved
    assert verify_dataset(root) == []


def test_a_second_run_skips_what_the_first_did(root):
    relabel_lmcut(root, splits=["val"], check_states=0, progress=False)
    written = (root / "gripper" / "val.parquet").read_bytes()
    assert relabel_lmcut(root, splits=["val"], check_states=0, progress=False) == {}
    assert (root / "gripper" / "val.parquet").read_bytes() == written


def test_a_value_above_h_star_stops_it_before_writing(root, monkeypatch):
    import tnlib.data.lmcut_relabelling as relabelling

    monkeypatch.setattr(relabelling, "fd_state_values", lambda sas, states, heuristic: np.full(len(states), 1e6))
    before = (root / "gripper" / "train.parquet").read_bytes()
    manifest = (root / "gripper" / "manifest.json").read_bytes()
    with pytest.raises(LabelError, match="exceeds h"):
        relabel_lmcut(root, splits=["train"], check_states=0, progress=False)
    assert (root / "gripper" / "train.parquet").read_bytes() == before
    assert (root / "gripper" / "manifest.json").read_bytes() == manifest


def test_a_difference_from_translating_states_alone_stops_it(root, monkeypatch):
    import tnlib.data.lmcut_relabelling as relabelling

    monkeypatch.setattr(relabelling, "fd_heuristic_value", lambda domain, problem, heuristic: -1.0)
    before = (root / "gripper" / "val.parquet").read_bytes()
    with pytest.raises(LabelError, match="as a problem of its own"):
        relabel_lmcut(root, splits=["val"], check_states=1, progress=False)
    assert (root / "gripper" / "val.parquet").read_bytes() == before


def test_the_command_reports_each_split_and_refuses_a_missing_dataset(root, tmp_path, capsys):
    assert cli.main(["data", "relabel-lmcut", str(root), "--splits", "test", "--check-states", "1"]) == 0
    assert "gripper/test:" in capsys.readouterr().out
    assert cli.main(["data", "relabel-lmcut", str(root), "--splits", "test"]) == 0
    assert "already" in capsys.readouterr().out
    assert cli.main(["data", "relabel-lmcut", str(tmp_path / "nowhere")]) != 0
    assert "no manifest.json" in capsys.readouterr().err


def test_a_split_says_whose_lmcut_it_holds_once_relabelled(root):
    from tnlib.data.manifest import split_lmcut_source
    from tnlib.errors import DatasetError

    assert [split_lmcut_source(root, "gripper", split) for split in ("train", "val")] == ["tnlib", "tnlib"]
    relabel_lmcut(root, splits=["val"], check_states=0, progress=False)
    assert [split_lmcut_source(root, "gripper", split) for split in ("train", "val")] == ["tnlib", "fast-downward"]
    with pytest.raises(DatasetError, match="no split 'nowhere'"):
        split_lmcut_source(root, "gripper", "nowhere")
    with pytest.raises(DatasetError, match="cannot read"):
        split_lmcut_source(root, "ferry", "train")


def test_a_profile_labelling_with_fast_downward_makes_the_relabelled_table(root, tmp_path):
    """Generation under a profile whose lmcut is Fast Downward's writes, byte for byte, the table that relabelling
    the same split made with tnlib's LM-cut writes, and the same settings; relabelling it again finds nothing."""
    from dataclasses import replace

    from tnlib.data.manifest import split_lmcut_source
    from tnlib.data.schema import FAST_DOWNWARD_LMCUT

    relabel_lmcut(root, splits=["val"], check_states=0, progress=False)
    profile = replace(tiny_profile(seeds=2), lmcut=FAST_DOWNWARD_LMCUT)
    generate_dataset(tmp_path / "fd", ["gripper"], profile, splits=["train", "val"],
                     options=GenerateOptions(progress=False))
    assert (tmp_path / "fd" / "gripper" / "val.parquet").read_bytes() == (root / "gripper" / "val.parquet").read_bytes()
    made = read_json(tmp_path / "fd" / "gripper" / "manifest.json")["splits"]["val"]["settings"]
    assert made == read_json(root / "gripper" / "manifest.json")["splits"]["val"]["settings"]
    assert made["lmcut"] == FAST_DOWNWARD_LMCUT
    assert split_lmcut_source(tmp_path / "fd", "gripper", "train") == FAST_DOWNWARD_LMCUT  # by its settings alone
    assert relabel_lmcut(tmp_path / "fd", check_states=0, progress=False) == {}


def test_the_shipped_paper_dataset_holds_fast_downwards_lmcut():
    """Every split of data/paper was relabelled (a sample translated one by one) and its settings say so, as the
    paper profile's make them; data/small holds tnlib's."""
    from tnlib.files import REPO_ROOT

    for domain in ("blocksworld", "ferry", "gripper", "visitall"):
        splits = read_json(REPO_ROOT / "data" / "paper" / domain / "manifest.json")["splits"]
        assert set(splits) == {"train", "val", "test", "plan", "test-grid"}
        for split, entry in splits.items():
            assert entry["settings"]["lmcut"] == "fast-downward", (domain, split)
            assert entry[LMCUT_LABELS_RECORD]["checked_one_by_one"] == 20, (domain, split)
        small = read_json(REPO_ROOT / "data" / "small" / domain / "manifest.json")["splits"]
        assert all("lmcut" not in entry["settings"] for entry in small.values())
