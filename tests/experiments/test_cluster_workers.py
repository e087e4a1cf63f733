"""A Dask cluster's workers are asked what a pinned sweep would train with there, and refused where a run would be
trained by another code, in several threads, into a folder the client does not see, or on other data."""
from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
from dataclasses import replace

import pytest

from tnlib.cli import main
from tnlib.experiments.running.cluster_workers import (
    TOKEN_PREFIX,
    ClusterWorker,
    ask_cluster_workers,
    judge_cluster_workers,
    probe_this_process,
    this_machine_for_results,
)
from tnlib.executors import pickled_by_value
from tnlib.provenance import code_commit


@pytest.fixture
def manifest(tmp_path):
    path = tmp_path / "data" / "manifest.json"
    path.parent.mkdir()
    path.write_text('{"domains": {}}')
    return path


def _worker(manifest, **changes) -> ClusterWorker:
    import hashlib

    good = ClusterWorker(address="tcp://10.0.0.1:4000", code="38b9e834", package="/shared/.campaign/38b9e834/tnlib",
                         machine="AMD EPYC, AVX512, OpenBLAS Haswell", threads=1, sees_results=True,
                         manifest_sha256=hashlib.sha256(manifest.read_bytes()).hexdigest())
    return replace(good, **changes)


def test_workers_that_would_train_as_the_campaign_does_are_ready(manifest):
    workers = [_worker(manifest), _worker(manifest, address="tcp://10.0.0.2:4000")]
    verdict = judge_cluster_workers(workers, manifest, code="38b9e834")
    assert verdict.ready and verdict.refusals == {}
    # a longer or shorter spelling of the same commit is the same code
    assert judge_cluster_workers(workers, manifest, code="38b9e8341f").ready


@pytest.mark.parametrize("changes, reason", [
    ({"code": "ba5f6667"}, "at ba5f6667, not 38b9e834"),
    ({"code": "38b9e834 with uncommitted changes to tnlib/"}, "with uncommitted changes"),
    ({"threads": 4}, "4 threads"),
    ({"sees_results": False}, "does not see the results folder"),
    ({"manifest_sha256": None}, "no dataset manifest"),
    ({"manifest_sha256": "0" * 64}, "manifest differs"),
])
def test_a_worker_that_would_train_otherwise_is_refused_with_the_reason(manifest, changes, reason):
    workers = [_worker(manifest), _worker(manifest, address="tcp://10.0.0.2:4000", **changes)]
    verdict = judge_cluster_workers(workers, manifest, code="38b9e834")
    assert not verdict.ready
    assert list(verdict.refusals) == ["tcp://10.0.0.2:4000"]
    assert any(reason in line for line in verdict.refusals["tcp://10.0.0.2:4000"]), verdict.refusals


def test_without_a_commit_the_workers_must_agree_on_one_code(manifest):
    agreeing = [_worker(manifest, code="aaaa1111"), _worker(manifest, address="tcp://b:1", code="aaaa1111")]
    assert judge_cluster_workers(agreeing, manifest).ready
    split = [agreeing[0], replace(agreeing[1], code="bbbb2222")]
    assert set(judge_cluster_workers(split, manifest).refusals) == {"tcp://10.0.0.1:4000", "tcp://b:1"}


def test_no_workers_is_not_ready(manifest):
    assert not judge_cluster_workers([], manifest).ready
    assert not judge_cluster_workers([_worker(manifest, role="scheduler")], manifest).ready


def test_a_scheduler_on_another_code_is_refused_as_it_could_not_read_the_tasks(manifest):
    # the scheduler runs no task: its threads, folder and data do not matter, its code does
    scheduler = _worker(manifest, address="tcp://head:8786", role="scheduler", threads=8, sees_results=False,
                        manifest_sha256=None)
    assert judge_cluster_workers([scheduler, _worker(manifest)], manifest, code="38b9e834").ready
    other = replace(scheduler, code="ba5f6667")
    verdict = judge_cluster_workers([other, _worker(manifest)], manifest, code="38b9e834")
    assert list(verdict.refusals) == ["tcp://head:8786"] and "could not read" in verdict.refusals["tcp://head:8786"][0]
    assert not judge_cluster_workers([other, _worker(manifest)], manifest).ready  # no commit asked: one code


def test_kinds_no_run_of_the_folder_was_trained_on_are_named(manifest, tmp_path):
    results = tmp_path / "runs"
    (results / "run-a").mkdir(parents=True)
    (results / "run-a" / "machines.jsonl").write_text(
        json.dumps({"step": 0, "machine": "AMD EPYC, AVX512, OpenBLAS Haswell"}) + "\n")
    workers = [_worker(manifest, address="tcp://head:8786", role="scheduler", machine="the head node"),
               _worker(manifest), _worker(manifest, address="tcp://b:1", machine="Intel Xeon, AVX2")]
    verdict = judge_cluster_workers(workers, manifest, results=results)
    assert verdict.new_kinds == ["Intel Xeon, AVX2"] and verdict.ready
    # (the scheduler's machine is no worker's kind)
    assert verdict.worker_kinds == ["AMD EPYC, AVX512, OpenBLAS Haswell", "Intel Xeon, AVX2"]


def test_a_campaign_names_a_machine_kind_its_runs_were_not_trained_on(tmp_path):
    results = tmp_path / "runs"
    assert this_machine_for_results(results, "Intel Xeon, AVX512") == "this machine: Intel Xeon, AVX512"
    (results / "run-a").mkdir(parents=True)
    (results / "run-a" / "machines.jsonl").write_text(
        json.dumps({"step": 0, "machine": "AMD EPYC, AVX512, OpenBLAS Haswell"}) + "\n" + "{torn\n")
    assert this_machine_for_results(results, "AMD EPYC, AVX512, OpenBLAS Haswell") == (
        "this machine: AMD EPYC, AVX512, OpenBLAS Haswell")
    note = this_machine_for_results(results, "Intel Xeon, AVX512, OpenBLAS Haswell")
    assert note.startswith(f"this machine: Intel Xeon, AVX512, OpenBLAS Haswell -- no run in {results} was trained")
    assert 'RERUN_KIND="AMD EPYC, AVX512, OpenBLAS Haswell"' in note


def test_the_probe_reads_the_token_and_the_manifest_and_names_this_code(manifest, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("secret")
    answer = probe_this_process(str(token_file), "secret", str(manifest))
    assert answer["sees_results"] and answer["code"] == code_commit()
    assert answer["manifest_sha256"] == _worker(manifest).manifest_sha256
    elsewhere = probe_this_process(str(tmp_path / "absent"), "secret", str(tmp_path / "no-manifest.json"))
    assert not elsewhere["sees_results"] and elsewhere["manifest_sha256"] is None
    assert not probe_this_process(str(token_file), "another", str(manifest))["sees_results"]


def test_the_probe_travels_by_value_and_answers_with_the_workers_own_tnlib(manifest, tmp_path):
    """A worker whose tnlib lacks this module (the campaign's pinned code) still runs the probe, and names its own
    code: a stand-in tnlib with only the two functions the probe asks for."""
    import cloudpickle

    fake = tmp_path / "worker-site" / "tnlib"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "provenance.py").write_text("def code_commit():\n    return 'c0ffee00'\n")
    (fake / "device.py").write_text("def machine_kind():\n    return 'a worker machine'\n")
    token_file = tmp_path / "token"
    token_file.write_text("t")
    payload = cloudpickle.dumps((pickled_by_value(probe_this_process), (str(token_file), "t", str(manifest))))
    script = textwrap.dedent("""
        import json, pickle, sys
        probe, arguments = pickle.loads(sys.stdin.buffer.read())
        print(json.dumps(probe(*arguments)))
    """)
    done = subprocess.run([sys.executable, "-P", "-c", script], input=payload, capture_output=True,
                          env={"PYTHONPATH": str(fake.parent), "OMP_NUM_THREADS": "1"}, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    answer = json.loads(done.stdout)
    assert answer["code"] == "c0ffee00" and answer["machine"] == "a worker machine"
    assert answer["package"] == str(fake.resolve()) and answer["sees_results"]
    assert pickle.loads(payload)  # (and the client can read its own payload)


def test_the_scheduler_and_workers_of_a_local_cluster_answer_and_the_token_is_removed(manifest, tmp_path):
    distributed = pytest.importorskip("distributed")
    results = tmp_path / "runs"
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  env={"OMP_NUM_THREADS": "1"}) as cluster:
        scheduler, worker = ask_cluster_workers(cluster.scheduler_address, results, manifest)
    assert scheduler.role == "scheduler" and scheduler.code == code_commit()
    assert worker.role == "worker" and worker.sees_results and worker.threads == 1 and worker.code == code_commit()
    assert worker.manifest_sha256 == _worker(manifest).manifest_sha256
    assert not list(results.glob(f"{TOKEN_PREFIX}*"))


def test_the_command_says_in_one_line_that_the_scheduler_does_not_answer(manifest, tmp_path, capsys):
    pytest.importorskip("distributed")
    status = main(["cluster-check", "tcp://127.0.0.1:9", "--results", str(tmp_path / "runs"),
                   "--data", str(manifest.parent), "--timeout", "1"])
    assert status == 2
    assert "cannot reach the Dask scheduler" in capsys.readouterr().err


def test_the_command_needs_a_dataset_manifest(tmp_path, capsys):
    status = main(["cluster-check", "tcp://127.0.0.1:9", "--results", str(tmp_path / "runs"),
                   "--data", str(tmp_path)])
    assert status == 2 and "no dataset manifest" in capsys.readouterr().err


def test_the_command_prints_each_process_and_warns_of_workers_of_several_kinds(manifest, tmp_path, monkeypatch,
                                                                                 capsys):
    from tnlib.experiments.running import cluster_workers

    answers = [_worker(manifest, address="tcp://head:8786", role="scheduler"), _worker(manifest),
               _worker(manifest, address="tcp://b:1", machine="Intel Xeon, AVX2")]
    monkeypatch.setattr(cluster_workers, "ask_cluster_workers", lambda *arguments, **options: answers)
    status = main(["cluster-check", "tcp://head:8786", "--results", str(tmp_path / "runs"),
                   "--data", str(manifest.parent), "--code", "38b9e834"])
    out = capsys.readouterr().out
    assert status == 0 and "scheduler tcp://head:8786: tnlib 38b9e834" in out
    assert "the workers are of 2 machine kinds" in out and "2 workers, 0 refused" in out
    answers[2] = replace(answers[2], threads=2)
    asked = []
    monkeypatch.setattr(cluster_workers, "ask_cluster_workers",
                        lambda *arguments, **options: asked.append(arguments) or answers)
    # without --results, the folder a sweep writes by default
    assert main(["cluster-check", "tcp://head:8786", "--data", str(manifest.parent), "--code", "38b9e834"]) == 1
    assert "refused: torch runs 2 threads there" in capsys.readouterr().out
    from tnlib.experiments.sweep_settings import Sweep
    assert asked[0][1] == Sweep().out_dir
