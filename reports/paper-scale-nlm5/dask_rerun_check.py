"""Does a run trained as a task of a Dask worker (in the worker's thread, not a process's main thread) round as the
lanes' runs do? The pinned code's rerun check (tnlib.experiments.rerun_check.curve_differences: the first 300 steps
of a committed run, from scratch, compared value for value) run as a task on a one-thread local Dask worker, for the
first run of each domain named whose first steps were trained on this machine's kind. Run with the pinned code and
the campaign's environment, from the repository root:

    nice -n 19 env OMP_NUM_THREADS=1 OPENBLAS_CORETYPE=Haswell TNLIB_DATA=$PWD/data \
        PYTHONPATH=$PWD/.campaign/38b9e834 .venv/bin/python -P reports/paper-scale-nlm5/dask_rerun_check.py blocksworld
"""
import sys
import time
from pathlib import Path

RUNS = Path("reports/paper-scale-nlm5/runs")


def first_runs_of_this_kind() -> dict:
    from tnlib.device import machine_kind
    from tnlib.files import read_jsonl

    kind = machine_kind()
    runs = sorted(p for p in RUNS.iterdir() if (p / "machines.jsonl").is_file())
    started_here = [p for p in runs if read_jsonl(p / "machines.jsonl")[0]["step"] == 0
                    and read_jsonl(p / "machines.jsonl")[0]["machine"] == kind
                    and any(row["step"] >= 300 for row in read_jsonl(p / "curves.jsonl"))]
    return {p.name.split("-")[0]: p for p in reversed(started_here)}


def main(domains: list[str]) -> int:
    from distributed import Client, LocalCluster

    from tnlib.device import machine_kind
    from tnlib.experiments.rerun_check import curve_differences

    chosen = first_runs_of_this_kind()
    missing = [domain for domain in domains if domain not in chosen]
    if missing or not domains:
        print(f"no run of {', '.join(missing) or 'any domain named'} started on {machine_kind()}; "
              f"these have one: {', '.join(sorted(chosen))}")
        return 2
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        start = time.time()
        differ = False
        for domain in domains:
            lines = client.submit(curve_differences, chosen[domain].resolve(), 300, pure=False).result()
            differ |= bool(lines)
            print(f"{chosen[domain].name} on {machine_kind()}, first 300 steps as a Dask worker's task:",
                  "\n  ".join(lines) or "identical", f"({time.time() - start:.0f} s)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
