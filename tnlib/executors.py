"""Running independent jobs: in this process, on a local process pool, or on a Dask cluster.

Dataset generation (one job per instance slot) and sweeps (one job per training run) both hand a function and a
list of picklable arguments to :func:`run_jobs` and consume the results as they complete. Local pools start their
workers with ``spawn``, not ``fork``: the parent has threads (tqdm's monitor, torch's pools) that fork would copy
mid-lock; and on Linux each worker dies with its parent (SIGKILL included) instead of finishing orphaned jobs.
"""
from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable, Iterator, Sequence

from tnlib.errors import SchedulerUnreachable


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def run_jobs(function: Callable[[Any], Any], jobs: Sequence[Any], workers: int = 1, scheduler: str | None = None,
             keys: Sequence[str] | None = None) -> Iterator[Any]:
    """``function(job)`` for every job, yielded in completion order: on the Dask scheduler at ``scheduler``
    (``keys`` names the tasks there), else on ``workers`` local processes, else (``workers <= 1``) here, in order.

    Raises :class:`tnlib.errors.SchedulerUnreachable` when the scheduler does not answer. When the consumer stops
    early or a job raises, the jobs not yet started are cancelled.
    """
    if scheduler:
        yield from _run_dask(function, jobs, scheduler, keys)
    elif workers > 1:
        yield from _run_pool(function, jobs, workers)
    else:
        for job in jobs:
            yield function(job)


def _run_pool(function, jobs, workers: int) -> Iterator[Any]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_die_with_parent) as pool:
        futures = [pool.submit(function, job) for job in jobs]
        try:
            for future in as_completed(futures):
                yield future.result()
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def _run_dask(function, jobs, scheduler: str, keys) -> Iterator[Any]:
    from distributed import Client, as_completed

    try:
        client = Client(scheduler, set_as_default=False, timeout="30s")
    except (OSError, TimeoutError) as err:
        raise SchedulerUnreachable(f"cannot reach the Dask scheduler at {scheduler!r}: {err}") from None
    with client:
        futures = client.map(function, jobs, pure=False, **({"key": list(keys)} if keys is not None else {}))
        try:
            for future in as_completed(futures, loop=client.loop):
                yield future.result()
        finally:
            client.cancel(futures)
