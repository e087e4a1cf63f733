"""The files of a results folder (the run folder's own files are :mod:`tnlib.learning.run_files`'s).

A results folder (a sweep's ``out_dir``) holds run folders (:class:`RunDir`), ``sweep.json`` (the sweep) and
``baseline-DOMAIN-HEURISTIC.jsonl`` (GBFS with a symbolic heuristic over the plan split; over a plan set, in the
sub-folder named for it: ``plan-set/baseline-DOMAIN-HEURISTIC.jsonl``).

The files inside a run folder, and the baseline files, are written by the learning stage (training, evaluation,
split_planning), so their names live in :mod:`tnlib.learning.run_files`: a stage imports only the stages below
it, and a file name has one home. This module adds only what experiments owns -- finding run folders, metrics,
planning and baseline files in a results folder, and the sweep's own file.
"""
from __future__ import annotations

import os
from pathlib import Path

from tnlib.data.schema import PLAN_SETS
from tnlib.errors import DamagedFile
from tnlib.files import COMPRESSED_SUFFIX, damaged_message, read_json
from tnlib.learning.run_files import BASELINE, PLANNING, RunDir, baseline_file

__all__ = ["ResultsDir"]

# What to do about a damaged sweep.json: a sweep run again over the folder writes it anew from its own settings.
SWEEP_REMEDY = "run the sweep again over the folder (`tnlib sweep ... --out FOLDER`), which writes it anew"


class ResultsDir:
    """A folder of run folders (a sweep's ``out_dir``) and its own files."""

    SWEEP = "sweep.json"

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    @property
    def sweep_file(self) -> Path:
        return self.path / self.SWEEP

    def read_sweep(self):
        """The sweep the folder's ``sweep.json`` records (a :class:`tnlib.experiments.sweep_settings.Sweep`), None
        where there is none: the one reader of that file, through :meth:`Sweep.from_record` (which reads a flat
        record too, and a setting the file lacks as the paper's sweep has it). A DamagedFile
        naming the file when it holds no sweep."""
        if not self.sweep_file.is_file():
            return None
        # here, not at the top: a sweep's settings hold a TrainConfig (torch), which listing a folder does not need
        from tnlib.experiments.sweep_settings import Sweep

        record = read_json(self.sweep_file, SWEEP_REMEDY)
        try:
            return Sweep.from_record(record)
        except (TypeError, ValueError) as err:
            reason = f"not a sweep's record ({err})"
            raise DamagedFile(damaged_message(self.sweep_file, reason, SWEEP_REMEDY), self.sweep_file, reason) from None

    def planned_on(self) -> str:
        """The split or plan set this folder's sweep plans on: its ``plan_on`` (:meth:`read_sweep`), the plan split
        where the folder has no sweep.json."""
        sweep = self.read_sweep()
        return "plan" if sweep is None else sweep.plan_on

    def baseline_folder(self, split: str = "plan") -> Path:
        """Where the baselines over ``split`` go: the folder itself for the plan split, its sub-folder named for
        a plan set otherwise (a domain's baseline file has the same name over either)."""
        return self.path if split == "plan" else self.path / split

    def runs(self) -> list[RunDir]:
        """The run folders directly inside, sorted by name (those with a config.json)."""
        return [RunDir(p.parent) for p in sorted(self.path.glob(f"*/{RunDir.CONFIG}"))]

    def metrics_files(self, split: str = "test", checkpoint: str = RunDir.BEST) -> list[Path]:
        """Every metrics file of ``split`` and ``checkpoint`` below, recursively, sorted by path."""
        return sorted(self.path.rglob(RunDir.metrics_name(split, checkpoint)))

    def planning_files(self, split: str = "plan") -> list[Path]:
        """Every planning file of ``split`` (the plan split, or a plan set's name) below, recursively, sorted by path
        (the run folder is the parent); compressed ones too (:meth:`_records_below`)."""
        return [path for path in self._records_below(PLANNING.format(estimate="*"))
                if RunDir.planned_split_of(path) == split]

    def _records_below(self, pattern: str) -> list[Path]:
        """The JSON-lines files named ``pattern`` below, recursively, sorted by path, with their compressed
        copies (``.gz``, as exported records hold them) where no plain file of the same name stands beside."""
        found = set(self.path.rglob(pattern)) | {
            path for path in self.path.rglob(pattern + COMPRESSED_SUFFIX)
            if not path.with_name(path.name.removesuffix(COMPRESSED_SUFFIX)).is_file()}
        return sorted(found)

    def baseline_file(self, domain: str, heuristic: str, split: str = "plan") -> Path:
        return baseline_file(self.baseline_folder(split), domain, heuristic)

    def baseline_files(self, heuristic: str, split: str = "plan") -> dict[str, Path]:
        """``{domain: file}`` of every baseline file of ``heuristic`` over ``split`` below, recursively: for a plan
        set those in folders named for it, for the plan split those in any other folder."""
        found = self._records_below(BASELINE.format(domain="*", heuristic=heuristic))
        if split == "plan":
            found = [path for path in found if path.parent.name not in PLAN_SETS.values()]
        else:
            found = [path for path in found if path.parent.name == split]
        return {path.stem.split("-")[1]: path for path in found}
