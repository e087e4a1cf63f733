"""tnlib.executors: the in-process and local-pool runners give every job's result once, run_jobs on top of them
(the Dask runner is exercised by tests/data/test_generation.py's runner-independence test)."""
from __future__ import annotations

import signal
import time

import pytest

from tnlib.executors import PoolRunner, SerialRunner, open_runner, run_jobs


def test_serial_runner_runs_in_submission_order_and_lazily():
    calls = []
    runner = open_runner(lambda job: calls.append(job) or job * job)
    assert isinstance(runner, SerialRunner) and not runner.busy
    for job in (3, 1, 2):
        runner.submit(job)
    assert runner.busy and calls == []  # nothing runs before its result is asked for
    assert [runner.next() for _ in range(3)] == [(3, 9), (1, 1), (2, 4)]
    assert not runner.busy
    with pytest.raises(RuntimeError, match="no job outstanding"):
        runner.next()
    assert list(run_jobs(abs, [-2, 5, -1])) == [2, 5, 1]


def test_pool_runner_returns_each_job_with_its_result():
    jobs = [-4, 3, -2, 1, 0, -7]
    with open_runner(abs, workers=2) as runner:
        assert isinstance(runner, PoolRunner)
        for job in jobs[:3]:
            runner.submit(job)
        seen = [runner.next()]
        for job in jobs[3:]:  # submitting while others are outstanding, as dataset generation does
            runner.submit(job)
        while runner.busy:
            seen.append(runner.next())
    assert sorted(seen) == sorted((job, abs(job)) for job in jobs)
    assert sorted(run_jobs(abs, jobs, workers=2)) == sorted(abs(job) for job in jobs)


def test_run_jobs_passes_a_jobs_exception_on():
    with pytest.raises(TypeError):
        list(run_jobs(abs, [1, "not a number", 2]))


def test_an_interrupted_pool_runner_stops_its_running_jobs_instead_of_waiting_for_them():
    # a SIGINT to this process alone (kill -INT, timeout -s INT) never reaches the workers: closing on it must
    # not wait for their jobs, which would run to their end (a paper-scale training run: hours)
    job_s = 90.0
    with pytest.raises(KeyboardInterrupt):
        with open_runner(time.sleep, workers=2) as runner:
            for _ in range(3):  # two running, one queued behind them
                runner.submit(job_s)
            time.sleep(3.0)  # the workers start and take their jobs
            workers = list(runner.pool._processes.values())
            raise KeyboardInterrupt
    # stopped by a signal, not ended by their jobs' return (exit code 0 after waiting them out)
    assert len(workers) == 2 and [w.exitcode for w in workers] == [-signal.SIGTERM] * 2


def test_a_dask_runner_sends_nothing_to_a_cluster_on_another_code(monkeypatch):
    """The cluster's worker (a process of its own) runs the checkout's code; this process -- and the local
    cluster's scheduler, which lives in it -- are made to say another: the runner refuses before a job is sent,
    naming the worker. On the same code it runs jobs."""
    distributed = pytest.importorskip("distributed")
    from tnlib import provenance
    from tnlib.errors import ClusterMismatch
    from tnlib.executors import DaskRunner

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as c:
        with DaskRunner(abs, c.scheduler_address) as runner:
            runner.submit(-3)
            assert runner.next() == (-3, 3)
        monkeypatch.setattr(provenance, "code_commit", lambda package=None: "0000000 another code")
        with pytest.raises(ClusterMismatch) as refused:
            DaskRunner(abs, c.scheduler_address)
    message = str(refused.value)
    assert "this process (0000000 another code)" in message and "the scheduler" not in message
    assert message.count(": tnlib ") == 1 and "tcp://127.0.0.1:" in message.split("--")[1]
