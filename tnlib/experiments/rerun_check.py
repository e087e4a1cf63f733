"""Whether a committed report is what the current code produces: a fixed subset of its runs is trained again from
scratch and its per-seed metrics compared with the committed ones, digit for digit.

float32 training repeats bit for bit on one kind of machine only (:func:`tnlib.device.machine_kind`: AVX-512 and
AVX2 kernels round differently, and a difference at one step grows over thousands), so the rerun is compared with
metrics made on the machine's own kind: the report's own per-seed CSV where its header names this kind, or else a
reference recorded for this kind beside the report (:data:`REFERENCES`, written by :func:`record_reference` from a
rerun of the same code). A later change that moves rounding -- a faster kernel, another torch -- then fails the
check on every kind that has a reference, and the reports it touches are to be rerun.
"""
from __future__ import annotations

import csv
import io
import os
import tempfile
from pathlib import Path

from tnlib.device import machine_kind
from tnlib.experiments.reports import accuracy_seed_rows, code_commit
from tnlib.experiments.sweep import Sweep, run_sweep
from tnlib.experiments.tables import collect_results
from tnlib.files import atomic_write_text
from tnlib.learning.run_files import RunDir

# The subset rerun: two runs of the linear five-seed report (N, with its N+clip column, and TN), 15 s on one core.
SUBSET = {"preset": "converged-linear", "domains": "gripper", "configs": "learn/ff", "seeds": 1}
# The report whose runs the subset reruns.
CHECKED_REPORT = Path(__file__).resolve().parents[2] / "reports" / "converged" / "linear"
# A row's identity and the values compared (the per-seed CSV's columns).
KEY = ("domain", "sigma", "residual", "column", "seed")
COMPARED = ("steps", "checkpoint_step", "mse", "nll", "nll_best_nll")
# Beside the report: the subset's rows as the code reran them on other kinds of machine.
REFERENCES = "rerun-references.csv"
REFERENCE_COLUMNS = ("machine", "commit", *KEY, *COMPARED)
# The kind of machine of a report whose header names none (headers before they did): this project's 2-core AMD
# EPYC machines with AVX2 kernels (reports/speed.md).
UNNAMED_MACHINE = ("AMD EPYC", "AVX2")


def report_machine(report_dir: str | os.PathLike) -> str | None:
    """The kind of machine named by the header of ``report_dir``'s accuracy.md (None where it names none)."""
    header = (Path(report_dir) / "accuracy.md").read_text()
    line = header.split("Rendered at commit", 1)[-1].split("\n", 1)[0]
    return line.rsplit(", on ", 1)[1].rstrip(".") if ", on " in line else None


def made_here(report_dir: str | os.PathLike, machine: str) -> bool:
    """Whether ``report_dir``'s runs were made on ``machine``'s kind (:data:`UNNAMED_MACHINE` for a header naming
    none)."""
    named = report_machine(report_dir)
    if named is not None:
        return named == machine
    return machine.startswith(UNNAMED_MACHINE[0]) and machine.endswith(UNNAMED_MACHINE[1])


def rerun_rows(out_dir: str | os.PathLike) -> list[dict]:
    """Train :data:`SUBSET` from scratch into ``out_dir`` (a fresh folder) and return its per-seed rows, as
    ``accuracy-seeds.csv`` holds them (strings)."""
    preset = SUBSET["preset"]
    settings = {k: v for k, v in SUBSET.items() if k != "preset"}
    run_sweep(Sweep.preset(preset, **settings, plan=False, out_dir=str(out_dir)), progress=False)
    rows = accuracy_seed_rows(collect_results(out_dir), collect_results(out_dir, checkpoint=RunDir.BEST_NLL))
    return [{k: "" if row[k] is None else str(row[k]) for k in (*KEY, *COMPARED)} for row in rows]


def committed_rows(report_dir: str | os.PathLike, machine: str) -> tuple[list[dict], str] | None:
    """The subset's committed rows for ``machine``'s kind and where they come from, or None where the report
    holds none for it."""
    report_dir = Path(report_dir)
    if made_here(report_dir, machine):
        source = report_dir / "accuracy-seeds.csv"
        rows = list(csv.DictReader(source.open()))
    else:
        source = report_dir / REFERENCES
        if not source.is_file():
            return None
        rows = [row for row in csv.DictReader(source.open()) if row["machine"] == machine]
        if not rows:
            return None
    return [{k: row[k] for k in (*KEY, *COMPARED)} for row in rows], source.name


def differences(rerun: list[dict], committed: list[dict]) -> list[str]:
    """One line per rerun row missing from ``committed`` or per value that differs (empty when they agree)."""
    by_key = {tuple(row[k] for k in KEY): row for row in committed}
    lines = []
    for row in rerun:
        key = tuple(row[k] for k in KEY)
        mine = by_key.get(key)
        if mine is None:
            lines.append(f"{' '.join(key)}: not in the committed rows")
            continue
        lines += [f"{' '.join(key)}: {name} {row[name]} now, {mine[name]} committed"
                  for name in COMPARED if row[name] != mine[name]]
    return lines


def record_reference(report_dir: str | os.PathLike, rows: list[dict], machine: str) -> Path:
    """Write ``rows`` (a rerun on ``machine``) as that kind's reference beside the report, replacing any it had.
    Refused for the report's own kind, whose reference is the report itself."""
    report_dir = Path(report_dir)
    if made_here(report_dir, machine):
        raise ValueError(f"{report_dir} was made on this kind of machine ({machine}): its own accuracy-seeds.csv "
                         "is the reference, rerun the report instead")
    path = report_dir / REFERENCES
    kept = [row for row in csv.DictReader(path.open()) if row["machine"] != machine] if path.is_file() else []
    commit = code_commit()
    out = io.StringIO()
    writer = csv.DictWriter(out, REFERENCE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(kept + [{"machine": machine, "commit": commit, **row} for row in rows])
    atomic_write_text(path, out.getvalue())
    return path


def check(report_dir: str | os.PathLike = CHECKED_REPORT, record: bool = False) -> tuple[str, list[str]]:
    """Rerun :data:`SUBSET` and compare it with ``report_dir``'s rows for this machine's kind: (what it was
    compared with, the differences). With ``record``, a kind that has no rows gets the rerun as its reference.
    A :class:`LookupError` where there is nothing to compare with and ``record`` is off."""
    machine = machine_kind()
    committed = committed_rows(report_dir, machine)
    if committed is None and not record:
        raise LookupError(f"{Path(report_dir)} holds no metrics made on this kind of machine ({machine}): float32 "
                          "training repeats bit for bit on its own kind only; record a reference with --record")
    with tempfile.TemporaryDirectory(prefix="tnlib-rerun-") as folder:
        rows = rerun_rows(folder)
    if committed is None:
        path = record_reference(report_dir, rows, machine)
        return f"nothing: recorded as this kind's reference in {path.name}", []
    reference, source = committed
    return f"{source} ({machine})", differences(rows, reference)
