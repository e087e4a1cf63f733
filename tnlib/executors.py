"""Running independent jobs: in this process, on a local process pool, or on a Dask cluster.

Two ways in, one implementation. :func:`run_jobs` hands a function and a fixed list of picklable jobs to a runner
and yields the results as they complete (sweeps: one job per training run). :func:`open_runner` gives the runner
itself, for callers that decide what to submit next from the results so far (dataset generation: which attempt
a slot keeps depends on the other slots' instances, so attempts are submitted in rounds): ``submit(job)``,
``next()`` -> ``(job, result)`` of a finished job, ``busy`` while any is outstanding, ``close()``.

Local pools start their workers with ``spawn``, not ``fork``: the parent has threads (tqdm's monitor, torch's
pools) that fork would copy mid-lock; and on Linux each worker dies with its parent (SIGKILL included) instead of
finishing orphaned jobs.
"""
from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable, Iterator, Sequence

from tnlib.errors import ClusterMismatch, SchedulerUnreachable


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this (child) process when its parent dies -- a worker process, a Fast Downward search
    -- so that nothing runs on orphaned when the job that started it is killed (until its CPU limit, for a search).
    No-op elsewhere."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


class SerialRunner:
    """Runs each job in this process, in submission order, when its result is asked for."""

    def __init__(self, function: Callable[[Any], Any]) -> None:
        self.function = function
        self.queue: list[Any] = []

    @property
    def busy(self) -> bool:
        return bool(self.queue)

    def submit(self, job: Any, key: str | None = None) -> None:
        self.queue.append(job)

    def next(self) -> tuple[Any, Any]:
        if not self.queue:
            raise RuntimeError("next() on a runner with no job outstanding")
        job = self.queue.pop(0)
        return job, self.function(job)

    def close(self, interrupted: bool = False) -> None:
        """Drop the jobs not yet run; ``interrupted`` (Ctrl-C) also stops those running, where another process
        runs them."""
        self.queue.clear()

    def __enter__(self):
        return self

    def __exit__(self, kind, *exc) -> None:
        self.close(interrupted=kind is not None and issubclass(kind, KeyboardInterrupt))


class PoolRunner(SerialRunner):
    """Jobs on ``workers`` local processes. Of jobs that finish together, ``next`` returns the one submitted
    first, so a caller that reads results one at a time sees a reproducible order wherever timing allows."""

    def __init__(self, function: Callable[[Any], Any], workers: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        super().__init__(function)
        context = multiprocessing.get_context("spawn")
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=die_with_parent)
        self.futures: dict = {}  # future -> (submission number, job)
        self.submitted = 0

    @property
    def busy(self) -> bool:
        return bool(self.futures)

    def submit(self, job: Any, key: str | None = None) -> None:
        self.futures[self.pool.submit(self.function, job)] = (self.submitted, job)
        self.submitted += 1

    def next(self) -> tuple[Any, Any]:
        from concurrent.futures import FIRST_COMPLETED, wait

        if not self.futures:
            raise RuntimeError("next() on a runner with no job outstanding")
        finished, _ = wait(list(self.futures), return_when=FIRST_COMPLETED)
        future = min(finished, key=lambda f: self.futures[f][0])
        _number, job = self.futures.pop(future)
        return job, future.result()

    def close(self, interrupted: bool = False) -> None:
        """Cancel the jobs not yet started and wait for the running ones -- or, ``interrupted``, stop them: a worker
        catches the KeyboardInterrupt of a Ctrl-C as its job's result and goes on to the job queued behind it
        (which would train to its end before the pool let go), and a SIGINT sent to this process alone never
        reaches the workers. Every job tnlib runs here resumes from what it wrote, so stopping loses little."""
        self.futures.clear()
        if interrupted:
            for process in list((self.pool._processes or {}).values()):  # (ProcessPoolExecutor has no public way)
                process.terminate()
        self.pool.shutdown(wait=True, cancel_futures=True)


def pickled_by_value(function: Callable) -> Callable:
    """A copy of ``function`` that Dask pickles by value, not by name: a process whose tnlib lacks the function
    (another version's) can still run it. Its globals are only the builtins: it imports what it needs itself."""
    import types

    copy = types.FunctionType(function.__code__, {"__builtins__": __builtins__}, function.__name__,
                              function.__defaults__)
    copy.__qualname__ = f"pickled_by_value.<locals>.{function.__name__}"
    return copy


def code_of_this_process() -> tuple[str, str]:
    """(the commit of this process's tnlib, as :func:`tnlib.provenance.code_commit` says it; its package folder)."""
    from pathlib import Path

    from tnlib import provenance

    return provenance.code_commit(), str(Path(provenance.__file__).resolve().parent)


def cluster_code_mismatches(client) -> list[str]:
    """One line for the scheduler and each worker of ``client``'s cluster whose tnlib is not this process's code:
    the scheduler unpickles the tasks, which name this code's modules, and a worker runs them by its own."""
    here = code_of_this_process()[0]
    probe = pickled_by_value(code_of_this_process)
    answers = {f"the scheduler {client.scheduler.address}": client.run_on_scheduler(probe), **client.run(probe)}
    return [f"{address}: tnlib {code} ({package})" for address, (code, package) in sorted(answers.items())
            if code != here]


class DaskRunner(SerialRunner):
    """Jobs on the Dask cluster whose scheduler is at ``scheduler``; ``key`` names a task there. Its scheduler and
    workers must run this process's code (:func:`cluster_code_mismatches`), or nothing is sent."""

    def __init__(self, function: Callable[[Any], Any], scheduler: str) -> None:
        from distributed import Client, as_completed

        super().__init__(function)
        try:
            self.client = Client(scheduler, set_as_default=False, timeout="30s")
        except (OSError, TimeoutError) as err:
            raise SchedulerUnreachable(f"cannot reach the Dask scheduler at {scheduler!r}: {err}") from None
        mismatched = cluster_code_mismatches(self.client)
        if mismatched:
            self.client.close()
            raise ClusterMismatch(f"nothing sent to the Dask cluster at {scheduler}: it runs another code than this "
                                  f"process ({code_of_this_process()[0]}) -- {'; '.join(mismatched)}; start its "
                                  "scheduler and workers from this checkout's environment")
        self.completed = as_completed(loop=self.client.loop)
        self.jobs: dict = {}  # task key -> (job, future)

    @property
    def busy(self) -> bool:
        return bool(self.jobs)

    def submit(self, job: Any, key: str | None = None) -> None:
        future = self.client.submit(self.function, job, pure=False, **({"key": key} if key is not None else {}))
        self.jobs[future.key] = (job, future)
        self.completed.add(future)

    def next(self) -> tuple[Any, Any]:
        if not self.jobs:
            raise RuntimeError("next() on a runner with no job outstanding")
        future = next(self.completed)
        job, _ = self.jobs.pop(future.key)
        return job, future.result()

    def close(self, interrupted: bool = False) -> None:
        with contextlib.suppress(Exception):
            self.client.cancel([future for _job, future in self.jobs.values()])
        self.jobs.clear()
        self.client.close()


def open_runner(function: Callable[[Any], Any], workers: int = 1,
                scheduler: str | None = None) -> SerialRunner:
    """A runner for ``function``: on the Dask scheduler at ``scheduler``, else on ``workers`` local processes,
    else (``workers <= 1``) in this process. Raises :class:`tnlib.errors.SchedulerUnreachable` when the
    scheduler does not answer. Close it (or use it as a context manager) to cancel what is still outstanding."""
    if scheduler:
        return DaskRunner(function, scheduler)
    if workers > 1:
        return PoolRunner(function, workers)
    return SerialRunner(function)


def run_jobs(function: Callable[[Any], Any], jobs: Sequence[Any], workers: int = 1, scheduler: str | None = None,
             keys: Sequence[str] | None = None) -> Iterator[Any]:
    """``function(job)`` for every job, yielded in completion order: on the Dask scheduler at ``scheduler``
    (``keys`` names the tasks there), else on ``workers`` local processes, else (``workers <= 1``) here, in order.

    Raises :class:`tnlib.errors.SchedulerUnreachable` when the scheduler does not answer. When the consumer stops
    early or a job raises, the jobs not yet started are cancelled; on a Ctrl-C the running ones are stopped too. A
    consumer that can be interrupted between two results closes the generator itself (``contextlib.closing``):
    otherwise the pool lives on, unclosed, until the generator is collected.
    """
    with open_runner(function, workers, scheduler) as runner:
        for i, job in enumerate(jobs):
            runner.submit(job, key=keys[i] if keys is not None else None)
        while runner.busy:
            yield runner.next()[1]


__all__ = ["DaskRunner", "PoolRunner", "SerialRunner", "cluster_code_mismatches", "code_of_this_process",
           "open_runner", "pickled_by_value", "run_jobs"]
