"""Runs a lent machine sent back are taken into a results folder whole, or left out with the reason: never over a
run the folder holds, never part-way, damaged or trained on two kinds of machine."""
from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile

import pytest

from tnlib.cli import main
from tnlib.experiments.running.adopted_runs import adopt_runs
from tnlib.experiments.running.sweep import run_sweep
from tnlib.experiments.sweep_settings import Sweep


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """One tested run of a tiny sweep, as a lent machine would send it back (resume checkpoints and all)."""
    out = tmp_path_factory.mktemp("lent") / "runs"
    sweep = Sweep.from_parameters(domains=("gripper",), models=("linear",), configs=(("learn", "ff"),),
                                  distributions=("TN",), seeds=(0,), steps=12, batch_size=16, eval_every=6,
                                  out_dir=str(out), data_profile="small", instances=None, plan=False)
    (record,) = run_sweep(sweep, progress=False)
    return out / record["run"]


def _copy(run, where, name=None):
    copy = where / (name or run.name)
    shutil.copytree(run, copy)
    return copy


def _pieces(folder, runs, into, piece_bytes=None, extra=()):
    """The lent machine script's archive of ``runs`` (run folders of ``folder``), cut like `split -b`."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for run in runs:
            archive.add(folder / run, arcname=run)
        for name, data in extra:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    data = buffer.getvalue()
    size = piece_bytes or len(data)
    into.mkdir(parents=True, exist_ok=True)
    pieces = []
    for k, start in enumerate(range(0, len(data), size)):
        piece = into / f"runs-1.tgz.{k:02d}"
        piece.write_bytes(data[start:start + size])
        pieces.append(piece)
    return pieces


def _digest(folder):
    return {p.relative_to(folder).as_posix(): hashlib.sha1(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_tested_run_is_taken_whole_from_pieces_joined_in_order(trained_run, tmp_path):
    sent = tmp_path / "sent"
    _copy(trained_run, sent)
    pieces = _pieces(sent, [trained_run.name], tmp_path / "out", piece_bytes=1000)
    assert len(pieces) > 2
    folder = tmp_path / "runs"
    folder.mkdir()
    done = adopt_runs(list(reversed(pieces)), folder)
    assert done.adopted == [trained_run.name] and done.left_out == []
    assert _digest(folder / trained_run.name) == _digest(trained_run)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "runs", "sent"]  # no staging folder left


def test_a_dry_run_moves_nothing(trained_run, tmp_path):
    sent = tmp_path / "sent"
    _copy(trained_run, sent)
    folder = tmp_path / "runs"
    folder.mkdir()
    done = adopt_runs(_pieces(sent, [trained_run.name], tmp_path / "out"), folder, dry_run=True)
    assert done.adopted == [trained_run.name]
    assert list(folder.iterdir()) == []


def test_runs_it_cannot_take_whole_are_left_out_with_the_reason(trained_run, tmp_path):
    sent, folder = tmp_path / "sent", tmp_path / "runs"
    names = ["held", "untested", "two-kinds", "damaged", "good"]
    for name in names:
        _copy(trained_run, sent, name)
    held = _copy(trained_run, folder, "held")
    (held / "curves.jsonl").write_text("")  # the folder's own copy, which must stay as it is
    (sent / "untested" / "metrics-test.json").unlink()
    machines = sent / "two-kinds" / "machines.jsonl"
    first = json.loads(machines.read_text().splitlines()[0])
    machines.write_text(json.dumps(first) + "\n" + json.dumps({**first, "step": 6, "machine": "another"}) + "\n")
    curve = sent / "damaged" / "curves.jsonl"
    lines = curve.read_text().splitlines()
    curve.write_text("\n".join(["{not json"] + lines[1:]) + "\n")
    done = adopt_runs(_pieces(sent, names, tmp_path / "out"), folder)
    assert done.adopted == ["good"]
    reasons = dict(done.left_out)
    assert sorted(reasons) == ["damaged", "held", "two-kinds", "untested"]
    assert "already holds" in reasons["held"] and "not tested" in reasons["untested"]
    assert "2 kinds" in reasons["two-kinds"] and "damaged" in reasons["damaged"]
    assert (folder / "held" / "curves.jsonl").read_text() == ""
    assert sorted(p.name for p in folder.iterdir()) == ["good", "held"]


@pytest.mark.parametrize("name", ["loose.txt", "../escaped/file", ".hidden/file"])
def test_an_archive_with_files_outside_run_folders_is_refused(trained_run, tmp_path, name):
    sent = tmp_path / "sent"
    _copy(trained_run, sent)
    folder = tmp_path / "runs"
    folder.mkdir()
    with pytest.raises(ValueError, match="outside a run folder"):
        adopt_runs(_pieces(sent, [trained_run.name], tmp_path / "out", extra=[(name, b"x")]), folder)
    assert list(folder.iterdir()) == [] and not (tmp_path / "escaped").exists()


def test_a_missing_piece_or_folder_is_named(trained_run, tmp_path):
    sent = tmp_path / "sent"
    _copy(trained_run, sent)
    folder = tmp_path / "runs"
    folder.mkdir()
    pieces = _pieces(sent, [trained_run.name], tmp_path / "out", piece_bytes=1000)
    with pytest.raises(ValueError, match="do not join"):
        adopt_runs(pieces[:-1], folder)
    with pytest.raises(FileNotFoundError, match="no such archive piece"):
        adopt_runs([tmp_path / "nowhere.tgz.00"], folder)
    with pytest.raises(FileNotFoundError, match="no results folder"):
        adopt_runs(pieces, tmp_path / "absent")


def test_the_command_names_what_it_took_and_what_it_left_out(trained_run, tmp_path, capsys):
    sent, folder = tmp_path / "sent", tmp_path / "runs"
    _copy(trained_run, sent, "a")
    (_copy(trained_run, sent, "graded") / "metrics-test-grid.json").write_text("{}")
    _copy(trained_run, sent, "b")
    _copy(trained_run, folder, "b")
    pieces = _pieces(sent, ["a", "b", "graded"], tmp_path / "out")
    assert main(["adopt-runs", *map(str, pieces), "--into", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "took a\n" in out and "left out b: the folder already holds" in out
    assert "took graded (with its metrics on the whole test grid)" in out
    assert "2 runs taken, 1 left out" in out
    assert main(["adopt-runs", str(tmp_path / "none.tgz.00"), "--into", str(folder)]) == 2
    assert "no such archive piece" in capsys.readouterr().err


def test_with_a_commit_asked_for_only_runs_that_code_trained_are_taken(trained_run, tmp_path):
    sent, folder = tmp_path / "sent", tmp_path / "runs"
    folder.mkdir()
    for name, code in (("pinned", "38b9e834"), ("other", "1358cc06"), ("unrecorded", None)):
        run = _copy(trained_run, sent, name)
        rows = [json.loads(line) for line in (run / "machines.jsonl").read_text().splitlines()]
        rows = [{key: value for key, value in row.items() if key != "code"} | ({"code": code} if code else {})
                for row in rows]
        (run / "machines.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    pieces = _pieces(sent, ["pinned", "other", "unrecorded"], tmp_path / "out")
    done = adopt_runs(pieces, folder, code="38b9e834f00d")  # a longer hash of the same commit
    assert done.adopted == ["pinned"]
    reasons = dict(done.left_out)
    assert reasons["other"] == "trained by code 1358cc06, not 38b9e834f00d"
    assert "not recorded" in reasons["unrecorded"]
