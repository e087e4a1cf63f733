"""Runs trained on another machine, taken into a results folder.

A lent GPU machine trains whole runs of a sweep and sends back those it finished as one archive cut into pieces
(reports/speed-cuda/lent_machine.sh: ``runs-K.tgz.00``, ``.01``, ... joined in order). :func:`adopt_runs` unpacks
them beside the results folder and moves in each run the folder can take whole. It takes a run only if

- the folder has no run of that name: a run the folder holds was started here, and a run is trained on one kind of
  machine (float32 training rounds differently on another, so a run resumed elsewhere would be neither machine's);
- it was tested (``metrics-test.json``): a run part-way stays on the machine that trained it;
- its records read whole (:func:`tnlib.experiments.damaged_records.damaged_records`) and its ``machines.jsonl``
  names one kind of machine (and, where a commit is asked for, that commit's code at every start).

Nothing in the folder is overwritten, and a run left out is named with the reason, so the call can be repeated.
"""
from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from tnlib.experiments.damaged_records import damaged_records
from tnlib.files import read_jsonl
from tnlib.learning.run_files import RunDir
from tnlib.provenance import same_commit

__all__ = ["RunsAdopted", "adopt_runs"]


@dataclass
class RunsAdopted:
    """What :func:`adopt_runs` did: the runs moved into the folder (or that would be, on a dry run), and those
    left out, each with the reason."""

    adopted: list[str] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)


def _joined_archive(pieces: Sequence[str | os.PathLike]) -> bytes:
    if not pieces:
        raise FileNotFoundError("no archive pieces given (the lent machine's runs-K.tgz.NN files)")
    missing = [str(piece) for piece in pieces if not Path(piece).is_file()]
    if missing:
        raise FileNotFoundError(f"no such archive piece: {', '.join(missing)}")
    return b"".join(Path(piece).read_bytes() for piece in sorted(pieces, key=lambda piece: Path(piece).name))


def _unpack(pieces: Sequence[str | os.PathLike], into: Path) -> list[Path]:
    """The run folders of the joined archive, unpacked into ``into``; members outside a run folder refuse."""
    try:
        with tarfile.open(fileobj=io.BytesIO(_joined_archive(pieces)), mode="r:gz") as archive:
            members = archive.getmembers()
            for member in members:
                parts = Path(member.name).parts
                if not parts or parts[0].startswith(".") or (len(parts) < 2 and not member.isdir()):
                    raise ValueError(f"the archive holds {member.name!r}, outside a run folder: not the lent "
                                     "machine script's archive of tested runs")
            archive.extractall(into, filter="data")  # refuses absolute paths, '..' and links leaving the folder
    except (tarfile.TarError, EOFError, zlib.error) as err:
        raise ValueError(f"the pieces do not join into a whole gzipped tar archive ({err}): are they all there, "
                         "from one call?") from None
    return sorted(path for path in into.iterdir() if path.is_dir())


def _reason_to_leave_out(run: RunDir, folder: Path, code: str | None) -> str | None:
    if (folder / run.name).exists():
        return ("the folder already holds a run of this name: taken before, or started here (a run trains on "
                "one kind of machine)")
    if not run.metrics_file("test").is_file():
        return "not tested (a run part-way stays on the machine that trained it)"
    starts = read_jsonl(run.machines_file)
    machines = {row.get("machine") for row in starts}
    if len(machines) != 1 or None in machines:
        return f"its machines.jsonl names {len(machines - {None})} kinds of machine, not one"
    if code is not None and not all(same_commit(row.get("code"), code) for row in starts):
        recorded = sorted({str(row.get("code", "not recorded")) for row in starts})
        return f"trained by code {', '.join(recorded)}, not {code}"
    return None


def adopt_runs(pieces: Sequence[str | os.PathLike], folder: str | os.PathLike, code: str | None = None,
               dry_run: bool = False) -> RunsAdopted:
    """Move each run of the archive ``pieces`` into the results folder ``folder`` that it can take whole (see the
    module docstring); with ``code`` (a commit hash), only runs whose every start of training that commit's code
    made (``machines.jsonl``'s ``code``); with ``dry_run``, only say which."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no results folder {folder}")
    done = RunsAdopted()
    with tempfile.TemporaryDirectory(prefix=".adopting-", dir=folder.parent) as staging:
        staging = Path(staging)
        runs = _unpack(pieces, staging)
        damaged = {Path(path).relative_to(staging).parts[0]: what for path, what in damaged_records(staging)}
        for run in runs:
            reason = _reason_to_leave_out(RunDir(run), folder, code) or (
                f"a damaged record: {damaged[run.name]}" if run.name in damaged else None)
            if reason:
                done.left_out.append((run.name, reason))
                continue
            if not dry_run:
                shutil.move(str(run), str(folder / run.name))  # same file system: a rename
            done.adopted.append(run.name)
    return done
