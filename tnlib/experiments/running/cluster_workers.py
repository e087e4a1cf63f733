"""A Dask cluster's scheduler and workers, asked what a sweep sent there would train with, before it is sent.

A sweep on a cluster (`tnlib sweep --scheduler`) pickles its cell function by reference: the scheduler, which
unpickles the task graph, and each worker import it from whatever tnlib they import (a scheduler on another code
fails every task at once; a worker on another code trains by it), and each worker writes into the results folder
as the sweep resolved it on the client, and reads the dataset there too (a worker on another filesystem trains runs
no one collects, or on other data). So the scheduler and every worker are asked first
(:func:`ask_cluster_workers`):

- the commit of its tnlib (:func:`tnlib.provenance.code_commit`, there) and where that package lies;
- each worker's machine kind (:func:`tnlib.device.machine_kind`, there) and torch's thread count: several threads
  sum a product in another order, so a run trained so rounds as no one-thread run does;
- whether a worker reads the results folder the client sees -- a token the client writes there -- and the
  dataset's manifest byte for byte.

:func:`judge_cluster_workers` turns the answers into refusals: a sweep (:func:`check_cluster_for_sweep`) refuses
other code, another folder or dataset; the paper-scale campaign (`tnlib cluster-check --code`) also a worker of
several threads, and names the machine kinds its runs were not yet trained on. The probe
(:func:`probe_this_process`) travels by value, so that a process importing another tnlib, or one without this
module (the campaign's pinned code), still answers. A campaign on local lanes asks only its own machine
(:func:`this_machine_for_results`: its kind, and whether the folder's runs met that kind before).
"""
from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from tnlib.errors import ClusterMismatch, SchedulerUnreachable
from tnlib.executors import pickled_by_value
from tnlib.provenance import same_commit

__all__ = ["ClusterVerdict", "ClusterWorker", "ask_cluster_workers", "check_cluster_for_sweep", "judge_cluster_workers",
           "kinds_trained", "probe_this_process", "this_machine_for_results"]

# the token's file name in the results folder; the leading dot keeps it out of the run folders' listing
TOKEN_PREFIX = ".cluster-check-"


@dataclass(frozen=True)
class ClusterWorker:
    """One worker's answers (:func:`probe_this_process`), or the scheduler's (``role``)."""

    address: str
    code: str
    package: str
    machine: str
    threads: int
    sees_results: bool
    manifest_sha256: str | None
    role: str = "worker"


@dataclass
class ClusterVerdict:
    """The scheduler and the workers, and what keeps each from the campaign (``refusals``: address -> reasons;
    none: go on), and the machine kinds among the workers that the results folder's runs were not yet trained
    on."""

    workers: list[ClusterWorker]
    refusals: dict[str, list[str]] = field(default_factory=dict)
    new_kinds: list[str] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return any(worker.role == "worker" for worker in self.workers) and not self.refusals

    @property
    def worker_kinds(self) -> list[str]:
        """The machine kinds among the workers: a run stopped part-way resumes on whichever worker is free, so on
        more than one kind it may go on on another."""
        return sorted({worker.machine for worker in self.workers if worker.role == "worker"})


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def probe_this_process(token_file: str, token: str, manifest: str) -> dict:
    """This process's answers, as :class:`ClusterWorker`'s fields (the address and role aside): run on the
    scheduler and on each worker, by value (:func:`tnlib.executors.pickled_by_value`: a process whose tnlib lacks
    this module, as the campaign's pinned code does, still runs it), so it imports what it needs itself, and only
    what every tnlib the campaign has met holds."""
    import hashlib
    from pathlib import Path

    import torch

    import tnlib
    from tnlib.device import machine_kind
    from tnlib.provenance import code_commit

    try:
        seen = Path(token_file).read_text() == token
    except OSError:
        seen = False
    try:
        manifest_sha256 = hashlib.sha256(Path(manifest).read_bytes()).hexdigest()
    except OSError:
        manifest_sha256 = None
    return {"code": code_commit(), "package": str(Path(tnlib.__file__).resolve().parent), "machine": machine_kind(),
            "threads": torch.get_num_threads(), "sees_results": seen, "manifest_sha256": manifest_sha256}


def ask_cluster_workers(scheduler: str, results: str | os.PathLike, manifest: str | os.PathLike,
                        timeout: float = 30.0) -> list[ClusterWorker]:
    """The scheduler at ``scheduler`` (first, its role "scheduler") and every worker of its cluster, asked
    (:func:`probe_this_process`) about the results folder ``results`` and the dataset manifest ``manifest``, both by
    the absolute paths the client resolves (as a sweep passes them). Raises
    :class:`tnlib.errors.SchedulerUnreachable` where the scheduler does not answer within ``timeout`` seconds."""
    from distributed import Client

    results = Path(results).resolve()
    results.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(16)
    token_file = results / f"{TOKEN_PREFIX}{token[:8]}"
    token_file.write_text(token)
    try:
        try:
            client = Client(scheduler, set_as_default=False, timeout=f"{timeout}s")
        except (OSError, TimeoutError) as err:
            raise SchedulerUnreachable(f"cannot reach the Dask scheduler at {scheduler!r}: {err}") from None
        arguments = (str(token_file), token, str(Path(manifest).resolve()))
        probe = pickled_by_value(probe_this_process)
        with client:
            own = client.run_on_scheduler(probe, *arguments)
            answers = client.run(probe, *arguments)
    finally:
        token_file.unlink(missing_ok=True)
    return [ClusterWorker(address=scheduler, role="scheduler", **own),
            *(ClusterWorker(address=address, **answer) for address, answer in sorted(answers.items()))]


def kinds_trained(results: Path) -> set[str]:
    """The machine kinds the results folder's runs name at any start of training (``machines.jsonl``, as
    :meth:`tnlib.learning.run_files.RunDir.training_starts` reads it: a damaged line names none)."""
    from tnlib.learning.run_files import RunDir

    return {start["machine"] for record in results.glob("*/machines.jsonl")
            for start in RunDir(record.parent).training_starts()}


def _same_code(found: str, asked: str) -> bool:
    """Whether ``found`` is the code ``asked``: the same commit however abbreviated, or the same edited checkout
    (its record word for word: processes reading one checkout on a shared filesystem)."""
    return found == asked or same_commit(found, asked)


def _code_reason(worker: ClusterWorker, code: str | None, codes: set[str]) -> str | None:
    if code is not None and not _same_code(worker.code, code):
        return f"its tnlib ({worker.package}) is at {worker.code}, not {code}"
    if code is None and len(codes) > 1:
        return f"its tnlib ({worker.package}) is at {worker.code}, where the cluster runs {len(codes)} codes"
    return None


def judge_cluster_workers(workers: list[ClusterWorker], manifest: str | os.PathLike, code: str | None = None,
                          results: str | os.PathLike | None = None, one_thread: bool = True) -> ClusterVerdict:
    """What keeps each process from a sweep trained by ``code`` (a commit, or a checkout's code_commit(); None: any
    one code, so long as they all agree), into the results folder every worker must see, on the dataset whose
    manifest is ``manifest``, and (``one_thread``) in one thread a worker, as a campaign of one-thread runs asks;
    with ``results``, the kinds its runs were not yet trained on. The scheduler is judged by its code alone: it
    unpickles the tasks and runs none."""
    verdict = ClusterVerdict(workers=list(workers))
    expected_manifest = _sha256(Path(manifest))
    codes = {worker.code for worker in workers}
    for worker in workers:
        reasons = [reason for reason in [_code_reason(worker, code, codes)] if reason]
        if worker.role == "worker":
            if one_thread and worker.threads != 1:
                reasons.append(f"torch runs {worker.threads} threads there, not 1 (start it with "
                               "OMP_NUM_THREADS=1)")
            if not worker.sees_results:
                reasons.append("it does not see the results folder the client sees (not the same filesystem "
                               "there)")
            if worker.manifest_sha256 is None:
                reasons.append("it finds no dataset manifest at the client's path")
            elif worker.manifest_sha256 != expected_manifest:
                reasons.append("its dataset manifest differs from the client's")
        elif reasons:
            reasons[-1] += ": it could not read the tasks"
        if reasons:
            verdict.refusals[worker.address] = reasons
    if results is not None:
        trained = kinds_trained(Path(results))
        verdict.new_kinds = sorted({worker.machine for worker in workers if worker.role == "worker"} - trained)
    return verdict


def this_machine_for_results(results: str | os.PathLike, kind: str) -> str:
    """One line for the start of a campaign on this machine (``kind``: :func:`tnlib.device.machine_kind` in the
    campaign's environment): the kind, and where no run of ``results`` was trained on it yet, what follows -- float32
    training rounds otherwise on another kind, so the runs started here are this kind's own and a run resumed here
    names two kinds -- and how to compare it with a kind already there."""
    trained = sorted(kinds_trained(Path(results)))
    if kind in trained or not trained:
        return f"this machine: {kind}"
    return (f"this machine: {kind} -- no run in {results} was trained on this kind yet (there: "
            f"{'; '.join(trained)}); its runs will round as this kind alone unless `make paper-scale-rerun-check "
            f"RERUN_KIND=\"{trained[0]}\"` gives that kind's curves here")


def check_cluster_for_sweep(scheduler: str, results: str | os.PathLike, manifest: str | os.PathLike) -> None:
    """Raise :class:`tnlib.errors.ClusterMismatch` where a sweep sent to ``scheduler`` would not run as this
    process's code into ``results`` on the dataset of ``manifest``: a scheduler or worker on another code (the
    scheduler could not read the tasks; a worker would train by other code), a worker that does not see the folder
    or the dataset. Several threads a worker are the cluster's choice here, not refused."""
    from tnlib.provenance import code_commit

    verdict = judge_cluster_workers(ask_cluster_workers(scheduler, results, manifest), manifest, code=code_commit(),
                                    one_thread=False)
    if not verdict.workers or all(worker.role != "worker" for worker in verdict.workers):
        raise ClusterMismatch(f"the Dask scheduler at {scheduler} has no workers: start them first "
                              f"(dask worker {scheduler})")
    if verdict.refusals:
        roles = {worker.address: worker.role for worker in verdict.workers}
        lines = [f"the {roles[address]} {address}: {'; '.join(reasons)}"
                 for address, reasons in verdict.refusals.items()]
        raise ClusterMismatch(f"nothing sent to the Dask cluster at {scheduler}, where a task would not run as "
                              f"here ({code_commit()}): " + " | ".join(lines)
                              + " -- start the scheduler and workers from this checkout's environment, on a "
                                "filesystem that holds the results folder and dataset at the same paths")
