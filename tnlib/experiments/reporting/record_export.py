"""Exporting a results folder's records: every file a report reads, without the weights.

A committed report re-renders from git only if what it read is committed too, but a run's checkpoints (``*.pt``) are
most of its bytes (megabytes a run, against tens of kilobytes of records) and no report reads them.
:func:`export_records` copies a results folder's run folders and its own files (``sweep.json``, the baselines, a
plan set's sub-folder) to another folder, leaving out checkpoints and the lock files of processes (names starting
with a dot). Planning records -- a run's ``planning-*.jsonl`` and the ``baseline-*.jsonl`` beside the runs -- grow
with the plan set (a few hundred bytes per instance, run and estimate) and repeat their keys on every line, and a
run's ``curves.jsonl`` grows with its steps (a line per validation, up to 400 in a run trained on until flat), so
they are written gzip-compressed (``.jsonl.gz``: about a tenth of a planning record's bytes, a third of a curve's),
which every reader of a results folder accepts (:meth:`tnlib.experiments.results_dir.ResultsDir.planning_files`,
:attr:`tnlib.learning.run_files.RunDir.curves_file`). The compression is reproducible: the same records export to
the same bytes, so exporting again after a run is extended changes only what changed.
"""
from __future__ import annotations

import fnmatch
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from tnlib.files import COMPRESSED_SUFFIX, atomic_write_gzip
from tnlib.learning.run_files import BASELINE, PLANNING, RunDir
from tnlib.experiments.results_dir import ResultsDir

__all__ = ["RecordExport", "export_records"]

CHECKPOINT_SUFFIX = ".pt"
# the records export_records compresses: a run's planning records and curve, and the symbolic baselines'
COMPRESSED_RECORD_PATTERNS = (PLANNING.format(estimate="*"), BASELINE.format(domain="*", heuristic="*"),
                              RunDir.CURVES)


@dataclass(frozen=True)
class RecordExport:
    """What :func:`export_records` did: the run folders exported (``tested`` of them with test metrics), the
    files and bytes written, the bytes of checkpoints left out, and the bytes of the records it compresses (planning
    records and curves) before and after compression."""

    runs: int
    tested: int
    files: int
    written_bytes: int
    left_out_bytes: int
    record_bytes: int
    compressed_record_bytes: int


def _exported(path: Path) -> bool:
    """Whether a file of a results folder is a record: not a checkpoint, not a process's lock or temporary file."""
    return not path.name.startswith(".") and path.suffix != CHECKPOINT_SUFFIX


def _is_compressed_record(path: Path) -> bool:
    return any(fnmatch.fnmatchcase(path.name, pattern) for pattern in COMPRESSED_RECORD_PATTERNS)


def export_records(results: str | os.PathLike, out: str | os.PathLike, compress: bool = True) -> RecordExport:
    """Copy the records of the results folder ``results`` into ``out`` (see the module docstring): its run folders
    and its own files, without checkpoints; planning records and curves compressed unless ``compress`` is False. A
    record already in ``out`` under the other form (plain where this export compresses, or the reverse) is
    replaced, so a reader never finds both. Raises FileNotFoundError when ``results`` is not a folder, ValueError
    when ``out`` lies inside it (the export would copy itself)."""
    results, out = Path(results), Path(out)
    if not results.is_dir():
        raise FileNotFoundError(f"no results folder {results}")
    if out.resolve() == results.resolve() or results.resolve() in out.resolve().parents:
        raise ValueError(f"the export folder {out} lies inside the results folder {results}: choose one outside it")
    runs = ResultsDir(results).runs()
    files = written = left_out = records = compressed_records = 0
    for source in sorted(p for p in results.rglob("*") if p.is_file() and not p.is_symlink()):
        relative = source.relative_to(results)
        if any(part.startswith(".") for part in relative.parts[:-1]):
            continue
        if not _exported(source):
            left_out += source.stat().st_size if source.suffix == CHECKPOINT_SUFFIX else 0
            continue
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if _is_compressed_record(source):
            data = source.read_bytes()
            records += len(data)
            if compress:
                target = target.with_name(target.name + COMPRESSED_SUFFIX)
                atomic_write_gzip(target, data)
                target.with_name(source.name).unlink(missing_ok=True)
            else:
                shutil.copy2(source, target)
                target.with_name(source.name + COMPRESSED_SUFFIX).unlink(missing_ok=True)
            compressed_records += target.stat().st_size
        else:
            shutil.copy2(source, target)
        files += 1
        written += target.stat().st_size
    tested = sum(run.metrics_file("test").is_file() for run in runs)
    return RecordExport(len(runs), tested, files, written, left_out, records, compressed_records)
