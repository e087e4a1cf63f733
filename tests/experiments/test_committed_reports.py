"""The committed reports are what the current code produces (tnlib.experiments.running.rerun_check): a fixed subset of a
committed report's runs is trained again from scratch and its per-seed metrics must equal the committed ones made
on this kind of machine -- the report's own, or a reference recorded for this kind beside it. A change that moves
rounding in training or evaluation (a faster kernel, another torch) fails here, and the reports it touches are to
be rerun; on a kind of machine with nothing recorded there is nothing to compare, and it skips."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tnlib.cli import main
from tnlib.experiments.running import rerun_check
from tnlib.experiments.running.rerun_check import (CHECKED_REPORT, COMPARED, CURVE_FOLDER, CURVE_RERUNS, KEY, REFERENCES,
                                           check, check_curve, check_model_curves, committed_rows, confirmed_kinds,
                                           curve_differences, curve_run, differences, made_here, record_reference,
                                           report_machine)
from tnlib.errors import NothingToCompare
from tnlib.files import read_jsonl
from tnlib.learning.run_files import RunDir


@pytest.mark.slow
def test_rerunning_committed_linear_runs_gives_the_committed_metrics():
    try:
        against, changed = check(CHECKED_REPORT)
    except NothingToCompare as err:
        pytest.skip(str(err))
    assert changed == [], against


@pytest.mark.slow
def test_training_a_committed_nlm_runs_first_steps_again_gives_its_committed_curve():
    try:
        against, changed = check_curve()
    except NothingToCompare as err:
        pytest.skip(str(err))
    assert changed == [], against


@pytest.mark.slow
def test_training_strips_hgn_wl_and_nlm_again_gives_the_curves_recorded_for_this_kind():
    try:
        against, changed = check_model_curves()
    except NothingToCompare as err:
        pytest.skip(str(err))
    assert changed == [], against


def test_model_curves_are_recorded_per_kind_and_compared_value_by_value(tmp_path, monkeypatch):
    """--record writes a kind's curves; a later rerun on that kind is compared row by row, another kind's rows are
    neither compared nor replaced."""
    path = tmp_path / "curve-references.csv"
    kind = {"now": "CPU X, AVX2"}
    monkeypatch.setattr("tnlib.experiments.running.rerun_check.this_machine_kind", lambda: kind["now"])
    processor = {"now": "family 6 model 1, OpenBLAS Haswell"}
    monkeypatch.setattr(rerun_check, "this_processor", lambda: processor["now"])
    monkeypatch.setattr(rerun_check, "code_commit", lambda: "def5678")
    curves = {"hgn": [{"step": "100", "train_loss": "0.5", "val_mse": "1.5", "val_nll": "2.0"}],
              "wl": [{"step": "100", "train_loss": "0.25", "val_mse": "1.25", "val_nll": "2.5"}],
              "nlm": [{"step": "100", "train_loss": "0.75", "val_mse": "1.75", "val_nll": "2.25"}]}
    monkeypatch.setattr(rerun_check, "model_curve", lambda model: [dict(row) for row in curves[model]])
    with pytest.raises(NothingToCompare, match=r"this kind of machine \(CPU X, AVX2; family 6 model 1, "):
        check_model_curves(path=path)
    against, lines = check_model_curves(record=True, path=path)
    assert lines == [] and against.endswith("hgn, wl, nlm recorded for this kind in curve-references.csv")
    kind["now"] = "CPU Y, AVX512"
    check_model_curves(record=True, path=path)
    saved = list(csv.DictReader(path.open()))
    assert [(r["machine"], r["model"], r["commit"]) for r in saved] == [
        (machine, model, "def5678") for machine in ("CPU X, AVX2", "CPU Y, AVX512") for model in ("hgn", "wl", "nlm")]
    curves["wl"] = [{"step": "100", "train_loss": "0.25", "val_mse": "1.2500001", "val_nll": "2.5"}]
    against, lines = check_model_curves(path=path)
    assert against == "the first 300 steps of hgn, wl, nlm (CPU Y, AVX512)"
    assert lines == ["wl step 100: val_mse 1.2500001 now, 1.25 recorded"]
    assert len(list(csv.DictReader(path.open()))) == 6  # a comparison writes nothing
    # a kind recorded before a model joined the check: the others compared, the newcomer named and recorded on ask
    rows = [r for r in rerun_check._read_csv_rows(path) if (r["machine"], r["model"]) != ("CPU Y, AVX512", "nlm")]
    rerun_check._write_rows(path, rerun_check.MODEL_CURVE_COLUMNS, rows)
    against, lines = check_model_curves(path=path)
    assert against == ("the first 300 steps of hgn, wl (CPU Y, AVX512); nlm not compared: nothing recorded for "
                       "this kind (--record records it)")
    against, _ = check_model_curves(record=True, path=path)
    assert against.endswith("; nlm recorded for this kind in curve-references.csv")
    assert len(list(csv.DictReader(path.open()))) == 6
    # another processor under the same name: nothing recorded for it, and recording keeps the first one's rows
    processor["now"] = "family 6 model 2, OpenBLAS SkylakeX"
    with pytest.raises(NothingToCompare, match=r"\(CPU Y, AVX512; family 6 model 2, OpenBLAS SkylakeX\)"):
        check_model_curves(path=path)
    check_model_curves(record=True, path=path)
    assert sorted({(r["machine"], r["processor"]) for r in csv.DictReader(path.open())}) == [
        ("CPU X, AVX2", "family 6 model 1, OpenBLAS Haswell"), ("CPU Y, AVX512", "family 6 model 1, OpenBLAS Haswell"),
        ("CPU Y, AVX512", "family 6 model 2, OpenBLAS SkylakeX")]


def test_the_curve_check_takes_a_run_whose_first_steps_were_all_trained_on_this_kind(tmp_path):
    def fake_run(name, machines, last_step):
        run = tmp_path / name
        run.mkdir()
        (run / "config.json").write_text("{}")
        (run / "machines.jsonl").write_text("".join(json.dumps({"step": step, "machine": machine}) + "\n"
                                                    for step, machine in machines))
        (run / "curves.jsonl").write_text("".join(json.dumps({"step": step, "val_mse": 1.0}) + "\n"
                                                  for step in range(100, last_step + 1, 100)))

    fake_run("a-started-elsewhere", [(0, "Y")], 400)
    fake_run("b-resumed-elsewhere-early", [(0, "X"), (200, "Y")], 400)
    fake_run("c-too-short", [(0, "X")], 200)
    fake_run("d-resumed-elsewhere-later", [(0, "X"), (300, "Y")], 400)
    fake_run("e-all-here", [(0, "X")], 400)
    assert curve_run(tmp_path, "X", 300) == tmp_path / "d-resumed-elsewhere-later"
    assert curve_run(tmp_path, "Y", 300) == tmp_path / "a-started-elsewhere"
    assert curve_run(tmp_path, "Z", 300) is None


def test_the_curve_check_runs_on_kinds_a_recorded_rerun_confirmed(tmp_path, monkeypatch):
    """A kind of machine is compared only once a rerun on it agreed (--record); a rerun that disagrees confirms
    nothing."""
    runs = tmp_path / "runs"
    run = runs / "blocksworld-run"
    run.mkdir(parents=True)
    (run / "config.json").write_text("{}")
    (run / "machines.jsonl").write_text(json.dumps({"step": 0, "machine": "CPU X, AVX2"}) + "\n")
    (run / "curves.jsonl").write_text(json.dumps({"step": 300, "val_mse": 1.0}) + "\n")
    monkeypatch.setattr("tnlib.experiments.running.rerun_check.this_machine_kind", lambda: "CPU X, AVX2")
    monkeypatch.setattr(rerun_check, "this_processor", lambda: "family 6 model 1, OpenBLAS Haswell")
    monkeypatch.setattr(rerun_check, "code_commit", lambda: "def5678")
    reruns = iter([["step 300: val_mse 1.5 now, 1.0 committed"], [], []])
    monkeypatch.setattr(rerun_check, "curve_differences", lambda path, steps: next(reruns))
    with pytest.raises(NothingToCompare, match=r"confirmed on this kind of machine \(CPU X, AVX2; family 6 model 1, OpenBLAS Haswell\)"):
        check_curve(runs, code=None)
    assert check_curve(runs, record=True, code=None)[1] == ["step 300: val_mse 1.5 now, 1.0 committed"]
    assert confirmed_kinds(runs) == set() and not (tmp_path / CURVE_RERUNS).exists()
    against, lines = check_curve(runs, record=True, code=None)
    assert lines == [] and against.endswith(f"recorded as confirmed in {CURVE_RERUNS}")
    assert confirmed_kinds(runs) == {"CPU X, AVX2"}
    assert list(csv.DictReader((tmp_path / CURVE_RERUNS).open())) == [
        {"machine": "CPU X, AVX2", "processor": "family 6 model 1, OpenBLAS Haswell", "run": "blocksworld-run",
         "steps": "300", "commit": "def5678"}]
    assert check_curve(runs, code=None) == ("blocksworld-run's first 300 steps (CPU X, AVX2)", [])


def test_a_kind_confirmed_on_one_processor_is_not_compared_on_another_of_the_same_name(tmp_path, monkeypatch):
    """A virtual machine's generic CPU name covers several generations, whose OpenBLAS kernels round NLM's training
    differently: a confirmation holds on its own processor, and one recorded before processors were named on the
    whole kind."""
    (tmp_path / "runs").mkdir()
    rows = [{"machine": "CPU X, AVX512", "processor": "family 6 model 143, OpenBLAS SapphireRapids", "run": "r",
             "steps": "300", "commit": "abc"},
            {"machine": "CPU Y, AVX2", "processor": "", "run": "r", "steps": "300", "commit": "abc"}]
    rerun_check._write_rows(tmp_path / CURVE_RERUNS, rerun_check.CURVE_RERUN_COLUMNS, rows)
    assert confirmed_kinds(tmp_path / "runs") == {"CPU X, AVX512", "CPU Y, AVX2"}
    assert confirmed_kinds(tmp_path / "runs", "family 6 model 106, OpenBLAS SkylakeX") == {"CPU Y, AVX2"}
    assert confirmed_kinds(tmp_path / "runs", "family 6 model 143, OpenBLAS SapphireRapids") == {
        "CPU X, AVX512", "CPU Y, AVX2"}
    monkeypatch.setattr("tnlib.experiments.running.rerun_check.this_machine_kind", lambda: "CPU X, AVX512")
    monkeypatch.setattr(rerun_check, "this_processor", lambda: "family 6 model 106, OpenBLAS SkylakeX")
    with pytest.raises(NothingToCompare, match=r"\(CPU X, AVX512; family 6 model 106, OpenBLAS SkylakeX\)"):
        check_curve(tmp_path / "runs", code=None)


def test_a_committed_curve_that_the_code_does_not_reproduce_is_named_value_by_value(tmp_path):
    """The rerun of a committed run's first 100 steps, compared with a curve whose first validation was altered
    (and one validation short of the steps): each difference is a line."""
    source = sorted(CURVE_FOLDER.glob("blocksworld-nlm-*"))[0]
    run = tmp_path / source.name
    run.mkdir()
    (run / "config.json").write_text((source / "config.json").read_text())
    first = read_jsonl(RunDir(source).curves_file)[0]
    assert first["step"] == 100
    (run / "curves.jsonl").write_text(json.dumps({**first, "val_mse": 12345.0}) + "\n")
    lines = curve_differences(run, 100)
    assert any(line.startswith("step 100: val_mse ") and line.endswith(" now, 12345.0 committed") for line in lines)
    (run / "curves.jsonl").write_text("")
    assert curve_differences(run, 100) == ["1 validations up to step 100 now, 0 committed"]


def row(column="TN", mse="1.5", seed="1", **values) -> dict:
    base = {"domain": "gripper", "sigma": "learn", "residual": "ff", "column": column, "seed": seed,
            "steps": "6000", "checkpoint_step": "3000", "mse": mse, "nll": "0.5", "nll_best_nll": "0.4"}
    return {**base, **values}


@pytest.fixture
def report(tmp_path):
    """A report made on "CPU X, AVX512", its per-seed CSV holding two rows."""
    folder = tmp_path / "linear"
    folder.mkdir()
    (folder / "accuracy.md").write_text("# Test accuracy\n\nRendered at commit abc1234 with Python 3.11.7, torch "
                                        "2.13.0+cpu, numpy 2.4.6, numba 0.68.1, on CPU X, AVX512.\n\n## Tables\n")
    with (folder / "accuracy-seeds.csv").open("w") as f:
        writer = csv.DictWriter(f, ["domain", "model", "lower_bound", *KEY, *COMPARED])
        writer.writeheader()
        writer.writerows({**r, "model": "linear", "lower_bound": "lmcut"} for r in (row("N", "2.5"), row("TN")))
    return folder


def test_a_report_is_compared_on_the_kind_of_machine_its_header_names(report):
    assert report_machine(report) == "CPU X, AVX512"
    assert made_here(report, "CPU X, AVX512") and not made_here(report, "CPU Y, AVX2")
    rows, source = committed_rows(report, "CPU X, AVX512")
    assert source == "accuracy-seeds.csv" and rows == [row("N", "2.5"), row("TN")]
    assert committed_rows(report, "CPU Y, AVX2") is None


def test_a_header_naming_no_machine_was_made_on_the_projects_amd_epyc_with_avx2(report):
    (report / "accuracy.md").write_text("Rendered at commit abc1234 with Python 3.11.7, torch 2.13.0+cpu.\n")
    assert report_machine(report) is None
    assert made_here(report, "AMD EPYC 7B13, AVX2") and not made_here(report, "AMD EPYC, AVX512")


def test_a_reference_recorded_for_another_kind_is_what_that_kind_compares_with(report, monkeypatch):
    monkeypatch.setattr(rerun_check, "code_commit", lambda: "def5678")
    with pytest.raises(ValueError, match="its own accuracy-seeds.csv is the reference"):
        record_reference(report, [row()], "CPU X, AVX512")
    record_reference(report, [row(mse="1.25")], "CPU Y, AVX2")
    record_reference(report, [row(mse="1.75")], "GPU Z, CUDA 12.8")
    record_reference(report, [row(mse="1.5")], "CPU Y, AVX2")  # a new reference replaces the kind's old one
    saved = list(csv.DictReader((report / REFERENCES).open()))
    assert [(r["machine"], r["commit"], r["mse"]) for r in saved] == [("GPU Z, CUDA 12.8", "def5678", "1.75"),
                                                                      ("CPU Y, AVX2", "def5678", "1.5")]
    assert committed_rows(report, "CPU Y, AVX2") == ([row(mse="1.5")], REFERENCES)
    assert committed_rows(report, "CPU X, AVX512")[1] == "accuracy-seeds.csv"  # the report's own kind: the report


def test_differences_name_each_value_that_moved_and_each_row_not_committed():
    committed = [row("N", "2.5"), row("TN")]
    assert differences([row("TN"), row("N", "2.5")], committed) == []
    assert differences([row("TN", mse="1.5000001", nll_best_nll="0.41"), row("TN", seed="2")], committed) == [
        "gripper learn ff TN 1: mse 1.5000001 now, 1.5 committed",
        "gripper learn ff TN 1: nll_best_nll 0.41 now, 0.4 committed",
        "gripper learn ff TN 2: not in the committed rows"]


def test_the_command_checks_records_and_says_which_rows_it_compared_with(report, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(rerun_check, "CHECKED_REPORT", report)
    (tmp_path / "no-runs").mkdir()  # the NLM and STRIPS-HGN/WL curve checks: nothing here, stubbed training
    monkeypatch.setattr(rerun_check, "CURVE_FOLDER", tmp_path / "no-runs")
    monkeypatch.setattr(rerun_check, "MODEL_CURVE_REFERENCES", tmp_path / "curve-references.csv")
    monkeypatch.setattr(rerun_check, "model_curve", lambda model: [{"step": "100", "train_loss": "0.5",
                                                                     "val_mse": "1.5", "val_nll": "2.0"}])
    monkeypatch.setattr("tnlib.experiments.running.rerun_check.this_machine_kind", lambda: "CPU Y, AVX2")
    monkeypatch.setattr(rerun_check, "this_processor", lambda: "family 6 model 1, OpenBLAS Haswell")
    monkeypatch.setattr(rerun_check, "code_commit", lambda: "def5678")
    reruns = iter([[row("N", "2.5"), row("TN")], [row("N", "2.5"), row("TN", mse="1.6")]])
    monkeypatch.setattr(rerun_check, "rerun_rows", lambda folder: next(reruns))
    assert main(["rerun-check"]) == 2
    assert ("holds no metrics made on this kind of machine (CPU Y, AVX2; family 6 model 1, OpenBLAS Haswell)"
            in capsys.readouterr().err)
    assert main(["rerun-check", "--record"]) == 0
    assert f"recorded as this kind's reference in {REFERENCES}" in capsys.readouterr().out
    assert main(["rerun-check"]) == 1
    out = capsys.readouterr().out
    assert f"compared with {REFERENCES} (CPU Y, AVX2)" in out and "mse 1.6 now, 1.5 committed" in out
    assert "compared with the first 300 steps of hgn, wl, nlm (CPU Y, AVX2)" in out  # recorded by --record above


def test_the_committed_references_name_their_machines_and_rows_of_the_checked_subset():
    path = CHECKED_REPORT / REFERENCES
    if not path.is_file():
        pytest.skip("no reference recorded beside the report")
    saved = list(csv.DictReader(path.open()))
    own = report_machine(CHECKED_REPORT)
    assert saved and all(r["machine"] and r["machine"] != own for r in saved)
    report_rows = {tuple(r[k] for k in KEY) for r in csv.DictReader((CHECKED_REPORT / "accuracy-seeds.csv").open())}
    assert {tuple(r[k] for k in KEY) for r in saved} <= report_rows


def test_a_report_rendered_from_edited_code_says_so_beside_its_commit(tmp_path):
    """code_commit names the checkout's commit, and adds that the package's files differ from it when they do:
    a header never claims a commit that would not make the report."""
    import subprocess

    from tnlib.provenance import code_commit

    package = tmp_path / "repo" / "tnlib"
    package.mkdir(parents=True)
    (package / "module.py").write_text("x = 1\n")
    (tmp_path / "repo" / "notes.md").write_text("notes\n")

    def git(*args):
        return subprocess.run(["git", *args], cwd=tmp_path / "repo", capture_output=True, text=True, check=True)

    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    commit = git("rev-parse", "--short", "HEAD").stdout.strip()
    assert code_commit(package) == commit
    (tmp_path / "repo" / "notes.md").write_text("edited outside the package\n")
    assert code_commit(package) == commit
    (package / "module.py").write_text("x = 2\n")
    assert code_commit(package) == f"{commit} with uncommitted changes to tnlib/"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert code_commit(outside) == "unknown"  # not in a git checkout


def test_a_source_tree_exported_by_git_archive_names_its_commit(tmp_path):
    """The campaign trains from ``git archive`` of a pinned commit: no git there, yet its records name the commit."""
    import importlib.util
    import subprocess
    import tarfile

    import tnlib.provenance

    repo = tmp_path / "repo"
    (repo / "tnlib").mkdir(parents=True)
    (repo / "tnlib" / "provenance.py").write_text(Path(tnlib.provenance.__file__).read_text())
    (repo / ".gitattributes").write_text("tnlib/provenance.py export-subst\n")

    def git(*args):
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True)

    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    commit = git("rev-parse", "--short", "HEAD").stdout.decode().strip()
    (tmp_path / "code.tar").write_bytes(git("archive", "HEAD", "tnlib").stdout)
    with tarfile.open(tmp_path / "code.tar") as archive:
        archive.extractall(tmp_path / "exported", filter="data")
    spec = importlib.util.spec_from_file_location("exported_provenance", tmp_path / "exported/tnlib/provenance.py")
    exported = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exported)
    assert exported.code_commit() == commit


@pytest.mark.skipif(not (Path(__file__).resolve().parents[2] / ".git").exists(), reason="not a git checkout")
def test_a_run_is_retrained_by_the_code_of_a_named_commit_in_a_process_of_its_own(tmp_path):
    """The curve check of a folder trained by older code: the commit's tnlib, exported from git, retrains the run in a
    child process (here HEAD's, on a run this checkout trained, so no value differs); a commit git does not hold is
    a NothingToCompare that names it."""
    from tnlib.files import REPO_ROOT
    from tnlib.learning.heads import HeadConfig
    from tnlib.learning.training import TrainConfig, train

    config = TrainConfig(domain="gripper", model="linear", head=HeadConfig(distribution="N", sigma="fixed",
                                                                           residual="none"),
                         data_root=str(REPO_ROOT / "data" / "small"), steps=100, batch_size=16, eval_every=50,
                         seed=0, out_dir=str(tmp_path), device="cpu", progress=False)
    run = train(config)
    assert rerun_check.curve_differences_by_code(run, 100, "HEAD") == []
    with pytest.raises(NothingToCompare, match="commit 0000000"):
        rerun_check.curve_differences_by_code(run, 100, "0000000")
