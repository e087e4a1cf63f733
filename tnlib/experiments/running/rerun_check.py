"""Whether a committed report is what the current code produces: a fixed subset of its runs is trained again from
scratch and its per-seed metrics compared with the committed ones, digit for digit.

float32 training repeats bit for bit on one kind of machine only (:func:`tnlib.device.machine_kind`: AVX-512 and
AVX2 kernels round differently, and a difference at one step grows over thousands), so the rerun is compared with
metrics made on the machine's own kind: the report's own per-seed CSV where its header names this kind, or else a
reference recorded for this kind beside the report (:data:`REFERENCES`, written by :func:`record_reference` from a
rerun of the same code). A later change that moves rounding -- a faster kernel, another torch -- then fails the
check on every kind that has a reference, and the reports it touches are to be rerun.

Linear regression does not run NLM's kernels, so a second check (:func:`check_curve`) trains the first
:data:`CURVE_STEPS` steps of a committed NLM run folder again (:data:`CURVE_FOLDER`: the five-seed runs, committed
with every validation in their curves.jsonl and the kind of machine of every stretch of steps in machines.jsonl)
and compares its curve, value for value, with the committed one -- on a run whose first steps were trained on this
machine's kind, and only on kinds where such a rerun once agreed (:data:`CURVE_RERUNS`, written by ``--record``):
the kind is a CPU model, its vector ISA and OpenBLAS's kernels where the environment forces them (NLM's kernels
call OpenBLAS, and an AVX-512 machine forced onto its Haswell kernels rounds NLM's training differently). Two
machines of one kind can still differ in the kernels OpenBLAS picks -- a virtual machine's generic CPU name covers
several generations -- so each recorded row also names its processor (:func:`tnlib.device.processor_signature`) and
is compared on that processor only; a row recorded before processors were named is compared on its whole kind.

A committed folder keeps the rounding of the code that trained it, so its check retrains with that code
(:data:`CURVE_FOLDER_CODE`: exported from git into a temporary folder and run in a child process, as the
paper-scale campaign runs its pinned code) when later code rounds NLM's training differently.

STRIPS-HGN and WL features have no committed run folders (a STRIPS-HGN run's checkpoints are 840 KB), and a kind of
machine may have none of nlm5/'s runs, so a third check (:func:`check_model_curves`) trains a fixed short run of
STRIPS-HGN, WL and NLM (:data:`MODEL_CURVE_RUNS`) and compares each curve with the one recorded for this kind of
machine in :data:`MODEL_CURVE_REFERENCES` (``--record`` adds a kind, or a model a kind lacks).
"""
from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path

from tnlib.errors import NothingToCompare
from tnlib.files import REPO_ROOT, atomic_write_text, read_jsonl, shown_folder
from tnlib.learning.run_files import RunDir
from tnlib.provenance import code_commit
from tnlib.experiments.reporting.report_files import ACCURACY_SEEDS

# (The reports, the sweep and torch are imported where a check runs: `tnlib rerun-check --help` reads only the
# constants below.)

# The subset rerun: two runs of the linear five-seed report (N, with its N+clip column, and TN), 15 s on one core.
SUBSET = {"preset": "converged-linear", "domains": "gripper", "configs": "learn/ff", "seeds": 1}
# The report whose runs the subset reruns.
CHECKED_REPORT = REPO_ROOT / "reports" / "converged" / "linear"
# A row's identity and the values compared (the per-seed CSV's columns).
KEY = ("domain", "sigma", "residual", "column", "seed")
COMPARED = ("steps", "checkpoint_step", "mse", "nll", "nll_best_nll")
# Beside the report: the subset's rows as the code reran them on other kinds of machine.
REFERENCES = "rerun-references.csv"
REFERENCE_COLUMNS = ("machine", "processor", "commit", *KEY, *COMPARED)
# The committed run folders whose first steps check NLM, how many steps (three validations, about 10 s of one core in
# blocksworld) and the values of a curves.jsonl row compared (its seconds are the machine's, not the code's).
CURVE_FOLDER = REPO_ROOT / "reports" / "converged" / "nlm5" / "runs"
CURVE_STEPS = 300
CURVE_FIELDS = ("step", "train_loss", "val_mse", "val_nll")
# The commit whose NLM training rounds as CURVE_FOLDER's runs were trained: the commit after it formed an arity-3
# output together with its exists/forall (the fused training route), which adds in another order, so later code
# retrains those runs' first steps with this commit's tnlib (None: with the checkout's own).
CURVE_FOLDER_CODE = "a756ed74"
# Beside CURVE_FOLDER: the kinds of machine on which a rerun reproduced a committed curve, the run and the commit.
CURVE_RERUNS = "curve-reruns.csv"
CURVE_RERUN_COLUMNS = ("machine", "processor", "run", "steps", "commit")
# The models checked by a fixed short run each (gripper, TN learn/ff, seed 0, data/small at batch 64, on the CPU) and
# the file of their curves as each kind of machine trained them.
MODEL_CURVE_RUNS = ("hgn", "wl", "nlm")
MODEL_CURVE_REFERENCES = REPO_ROOT / "reports" / "converged" / "curve-references.csv"
MODEL_CURVE_COLUMNS = ("machine", "processor", "commit", "model", *CURVE_FIELDS)
# The kind of machine of a report whose header names none: this project's 2-core AMD EPYC machines with AVX2
# kernels (reports/speed.md).
UNNAMED_MACHINE = ("AMD EPYC", "AVX2")


def this_machine_kind() -> str:
    """This machine's kind (:func:`tnlib.device.machine_kind`)."""
    from tnlib.device import machine_kind as kind

    return kind()


def this_processor() -> str:
    """This machine's processor and OpenBLAS kernels (:func:`tnlib.device.processor_signature`)."""
    from tnlib.device import processor_signature

    return processor_signature()


def recorded_here(row: dict, machine: str, processor: str) -> bool:
    """Whether a recorded row was made on ``machine``'s kind and ``processor`` (a row that names no processor, on
    the kind alone)."""
    return row["machine"] == machine and row.get("processor", "") in ("", processor)


def report_machine(report_dir: str | os.PathLike) -> str | None:
    """The kind of machine named by the header of ``report_dir``'s accuracy.md (None where it names none)."""
    from tnlib.experiments.reporting.reports import RENDERED_AT

    header = (Path(report_dir) / "accuracy.md").read_text()
    line = header.split(RENDERED_AT, 1)[-1].split("\n", 1)[0]
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
    from tnlib.experiments.reporting.reports import accuracy_seed_rows
    from tnlib.experiments.running.sweep import run_sweep
    from tnlib.experiments.sweep_settings import Sweep
    from tnlib.experiments.reporting.table_rows import collect_results

    preset = SUBSET["preset"]
    settings = {k: v for k, v in SUBSET.items() if k != "preset"}
    run_sweep(Sweep.preset(preset, **settings, plan=False, out_dir=str(out_dir)), progress=False)
    rows = accuracy_seed_rows(collect_results(out_dir), collect_results(out_dir, checkpoint=RunDir.BEST_NLL))
    return [{k: "" if row[k] is None else str(row[k]) for k in (*KEY, *COMPARED)} for row in rows]


def _read_csv_rows(path: Path) -> list[dict]:
    """A CSV file's rows ([] where there is no file)."""
    if not path.is_file():
        return []
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _write_rows(path: Path, columns: tuple[str, ...], rows: list[dict]) -> None:
    """``rows`` as a CSV file of ``columns``, replaced atomically."""
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, out.getvalue())


def _curve_lines(rerun: list[dict], reference: list[dict], label: str, source: str) -> list[str]:
    """One line per value of :data:`CURVE_FIELDS` that differs between two curves, row by row."""
    return [f"{label}step {theirs['step']}: {name} {mine.get(name)} now, {theirs.get(name)} {source}"
            for mine, theirs in zip(rerun, reference) for name in CURVE_FIELDS if mine.get(name) != theirs.get(name)]


def committed_rows(report_dir: str | os.PathLike, machine: str, processor: str = ""
                   ) -> tuple[list[dict], str] | None:
    """The subset's committed rows for ``machine``'s kind and ``processor`` (:func:`recorded_here`) and where they
    come from, or None where the report holds none for them."""
    report_dir = Path(report_dir)
    if made_here(report_dir, machine):
        source = report_dir / ACCURACY_SEEDS
        rows = _read_csv_rows(source)
    else:
        source = report_dir / REFERENCES
        rows = [row for row in _read_csv_rows(source) if recorded_here(row, machine, processor)]
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


def record_reference(report_dir: str | os.PathLike, rows: list[dict], machine: str, processor: str = "") -> Path:
    """Write ``rows`` (a rerun on ``machine``'s kind and ``processor``) as their reference beside the report,
    replacing any it had for them. Refused for the report's own kind, whose reference is the report itself."""
    report_dir = Path(report_dir)
    if made_here(report_dir, machine):
        raise ValueError(f"{report_dir} was made on this kind of machine ({machine}): its own accuracy-seeds.csv "
                         "is the reference, rerun the report instead")
    path = report_dir / REFERENCES
    kept = [row for row in _read_csv_rows(path) if not recorded_here(row, machine, processor)]
    commit = code_commit()
    _write_rows(path, REFERENCE_COLUMNS, kept + [{"machine": machine, "processor": processor, "commit": commit, **row}
                                                 for row in rows])
    return path


def check(report_dir: str | os.PathLike = CHECKED_REPORT, record: bool = False) -> tuple[str, list[str]]:
    """Rerun :data:`SUBSET` and compare it with ``report_dir``'s rows for this machine's kind: (what it was
    compared with, the differences). With ``record``, a kind that has no rows gets the rerun as its reference.
    A :class:`~tnlib.errors.NothingToCompare` where there is nothing to compare with and ``record`` is off."""
    machine, processor = this_machine_kind(), this_processor()
    committed = committed_rows(report_dir, machine, processor)
    if committed is None and not record:
        raise NothingToCompare(f"{Path(report_dir)} holds no metrics made on this kind of machine ({machine}; "
                               f"{processor}): float32 training repeats bit for bit on its own kind only; record a "
                               "reference with --record")
    with tempfile.TemporaryDirectory(prefix="tnlib-rerun-") as folder:
        rows = rerun_rows(folder)
    if committed is None:
        path = record_reference(report_dir, rows, machine, processor)
        return f"nothing: recorded as this kind's reference in {path.name}", []
    reference, source = committed
    return f"{source} ({machine})", differences(rows, reference)


def curve_run(folder: str | os.PathLike, machine: str, steps: int = CURVE_STEPS) -> Path | None:
    """The first run folder of ``folder`` (by name: blocksworld, the quickest, first) whose steps up to ``steps``
    were all trained on ``machine``'s kind (its machines.jsonl) and whose curve reaches ``steps``; None if none."""
    for run in sorted(Path(folder).iterdir()):
        if not (run / "config.json").is_file() or not (run / "machines.jsonl").is_file():
            continue
        stretches = read_jsonl(run / "machines.jsonl")  # each start of training: its step and machine
        early = [row for row in stretches if row["step"] < steps]
        if not early or early[0]["step"] != 0 or any(row["machine"] != machine for row in early):
            continue
        if any(row["step"] >= steps for row in read_jsonl(RunDir(run).curves_file)):
            return run
    return None


def curve_differences_by_code(run: str | os.PathLike, steps: int, commit: str) -> list[str]:
    """:func:`curve_differences` computed by the tnlib of ``commit`` (``git archive`` into a temporary folder, run in
    a child process that imports only it, on this checkout's datasets). A :class:`~tnlib.errors.NothingToCompare` where git or the
    commit is not there."""
    import subprocess
    import sys

    with tempfile.TemporaryDirectory(prefix="tnlib-code-") as code:
        archive = subprocess.run(["git", "-C", str(REPO_ROOT), "archive", commit, "tnlib"], capture_output=True)
        exported = archive if archive.returncode else subprocess.run(["tar", "-x", "-C", code],
                                                                     input=archive.stdout, capture_output=True)
        if exported.returncode or not (Path(code) / "tnlib" / "__init__.py").is_file():
            raise NothingToCompare(f"the code that trained {Path(run).parent.name}'s runs (commit {commit}) is not in "
                              f"this checkout's git history: {exported.stderr.decode().strip() or 'nothing exported'}")
        # the module by its name in that commit's code, whose experiments/ may have no running/ wing
        script = ("import json, sys\n"
                  "try:\n    from tnlib.experiments.running.rerun_check import curve_differences\n"
                  "except ModuleNotFoundError:\n    from tnlib.experiments.rerun_check import curve_differences\n"
                  "print(json.dumps(curve_differences(sys.argv[1], int(sys.argv[2]))))")
        # one torch thread, as the folder's runs trained (a cell a core): `make test` exports two, and MKL may
        # split a product between threads otherwise than one thread adds it
        env = {**os.environ, "PYTHONPATH": code, "TNLIB_DATA": str(REPO_ROOT / "data"), "OMP_NUM_THREADS": "1"}
        copy = _plain_copy(Path(run), Path(code))
        done = subprocess.run([sys.executable, "-P", "-c", script, str(copy), str(steps)],
                              cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"retraining {Path(run).name} with commit {commit} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _plain_copy(run: Path, folder: Path) -> Path:
    """``run``'s configuration and curve in a run folder of their own under ``folder``, the curve as plain
    ``curves.jsonl``: the commit retraining it may read only that name, and exported records hold the curve
    compressed."""
    copy = folder / "runs" / run.name
    copy.mkdir(parents=True)
    (copy / RunDir.CONFIG).write_bytes((run / RunDir.CONFIG).read_bytes())
    rows = read_jsonl(RunDir(run).curves_file)
    atomic_write_text(copy / RunDir.CURVES, "".join(json.dumps(row) + "\n" for row in rows))
    return copy


def curve_differences(run: str | os.PathLike, steps: int = CURVE_STEPS) -> list[str]:
    """Train ``run``'s configuration from scratch for ``steps`` steps (in a temporary folder, on this checkout's
    copy of its dataset) and compare its curve with the committed one: one line per row or value that differs."""
    from tnlib.learning.training import read_run_config, train

    run = Path(run)
    committed = [row for row in read_jsonl(RunDir(run).curves_file) if row["step"] <= steps]
    config = read_run_config(run)
    with tempfile.TemporaryDirectory(prefix="tnlib-rerun-") as folder:
        config = replace(config, steps=steps, out_dir=folder, run_name=None, progress=False)
        rerun = read_jsonl(RunDir(train(config)).training_curves_file)
    lines = _curve_lines(rerun, committed, "", "committed")
    if len(rerun) != len(committed):
        lines.append(f"{len(rerun)} validations up to step {steps} now, {len(committed)} committed")
    return lines


def confirmed_kinds(folder: str | os.PathLike = CURVE_FOLDER, processor: str | None = None) -> set[str]:
    """The kinds of machine on which a rerun of ``folder``'s first steps once agreed with the committed curve (on
    ``processor``, where one is given: :func:`recorded_here`)."""
    path = Path(folder).parent / CURVE_RERUNS
    return {row["machine"] for row in _read_csv_rows(path)
            if processor is None or recorded_here(row, row["machine"], processor)}


def check_curve(folder: str | os.PathLike = CURVE_FOLDER, steps: int = CURVE_STEPS,
                record: bool = False, code: str | None = CURVE_FOLDER_CODE) -> tuple[str, list[str]]:
    """Train the first ``steps`` steps of a committed run of ``folder`` trained on this machine's kind again
    (:func:`curve_run`) and compare the curves: (which run, the differences). On a kind not yet confirmed
    (:func:`confirmed_kinds`) only with ``record``, which confirms it where the rerun agrees. A
    :class:`~tnlib.errors.NothingToCompare` where there is nothing to compare on this kind."""
    machine, processor, folder = this_machine_kind(), this_processor(), Path(folder)
    confirmed = machine in confirmed_kinds(folder, processor)
    if not confirmed and not record:
        raise NothingToCompare(f"no rerun of {shown_folder(folder)} was confirmed on this kind of machine ({machine}; "
                               f"{processor}): record one with --record")
    run = curve_run(folder, machine, steps)
    if run is None:
        raise NothingToCompare(f"no run in {shown_folder(folder)} had its first {steps} steps trained on this kind of "
                          f"machine ({machine}): float32 training repeats bit for bit on its own kind only")
    lines = curve_differences(run, steps) if code is None else curve_differences_by_code(run, steps, code)
    against = f"{run.name}'s first {steps} steps ({machine}" + (f", retrained by commit {code})" if code else ")")
    if not confirmed and not lines:
        path = folder.parent / CURVE_RERUNS
        _write_rows(path, CURVE_RERUN_COLUMNS, _read_csv_rows(path) + [
            {"machine": machine, "processor": processor, "run": run.name, "steps": steps, "commit": code_commit()}])
        against += f"; this kind recorded as confirmed in {path.name}"
    return against, lines


def model_curve(model: str, steps: int = CURVE_STEPS) -> list[dict]:
    """The validation curve of :data:`MODEL_CURVE_RUNS`' fixed short run of ``model``, trained from scratch in a
    temporary folder: its rows' :data:`CURVE_FIELDS`, as strings (as the references file holds them)."""
    from tnlib.learning.heads import HeadConfig
    from tnlib.learning.training import TrainConfig, train

    with tempfile.TemporaryDirectory(prefix="tnlib-rerun-") as folder:
        config = TrainConfig(domain="gripper", model=model, head=HeadConfig(distribution="TN", sigma="learn",
                                                                              residual="ff"),
                             data_root=str(REPO_ROOT / "data" / "small"), steps=steps, batch_size=64, eval_every=100,
                             seed=0, out_dir=folder, device="cpu", progress=False)
        rows = read_jsonl(RunDir(train(config)).training_curves_file)
    return [{name: repr(row[name]) for name in CURVE_FIELDS} for row in rows]


def check_model_curves(record: bool = False, path: str | os.PathLike = MODEL_CURVE_REFERENCES
                       ) -> tuple[str, list[str]]:
    """Train each model of :data:`MODEL_CURVE_RUNS` for :data:`CURVE_STEPS` steps and compare its curve with the
    one recorded for this machine's kind in ``path``: (what was compared, the differences). With ``record``, a
    model with nothing recorded for this kind gets the rerun as its reference. A :class:`~tnlib.errors.NothingToCompare` where
    nothing is recorded for this kind and ``record`` is off."""
    machine, processor, path = this_machine_kind(), this_processor(), Path(path)
    saved = _read_csv_rows(path)
    mine = {model: [row for row in saved if recorded_here(row, machine, processor) and row["model"] == model]
            for model in MODEL_CURVE_RUNS}
    if not record and not any(mine.values()):
        raise NothingToCompare(f"no STRIPS-HGN, WL or NLM curve recorded for this kind of machine ({machine}; "
                               f"{processor}) in {path.name}: record them with --record")
    lines, compared, recorded, missing = [], [], [], []
    for model in MODEL_CURVE_RUNS:
        if not mine[model] and not record:
            missing.append(model)
            continue
        rerun = model_curve(model)
        if not mine[model]:
            saved += [{"machine": machine, "processor": processor, "commit": code_commit(), "model": model, **row}
                      for row in rerun]
            recorded.append(model)
            continue
        compared.append(model)
        lines += _curve_lines(rerun, mine[model], f"{model} ", "recorded")
        if len(rerun) != len(mine[model]):
            lines.append(f"{model}: {len(rerun)} validations now, {len(mine[model])} recorded")
    if recorded:
        _write_rows(path, MODEL_CURVE_COLUMNS, saved)
    against = (f"the first {CURVE_STEPS} steps of {', '.join(compared)} ({machine})" if compared else
               f"nothing yet ({machine})")
    if recorded:
        against += f"; {', '.join(recorded)} recorded for this kind in {path.name}"
    if missing:
        against += f"; {', '.join(missing)} not compared: nothing recorded for this kind (--record records it)"
    return against, lines
