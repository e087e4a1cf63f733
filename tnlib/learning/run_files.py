"""The names of the files that the learning stage writes, in one place.

A run folder (``train`` writes it; one per configuration and seed) holds::

    config.json               the TrainConfig
    data.json                 the data the run trained and validated on: splits, instances and states used
    curves.jsonl              one line per validation: step, training loss, validation NLL and MSE, seconds
                              (curves.jsonl.gz instead in exported records: ``tnlib export-records`` compresses it)
    best.pt, best-nll.pt      the weights with the best validation MSE / NLL
    last.pt                   the resumable checkpoint (optimizer, sampler state)
    pruned.json               instead of last.pt, in a finished run whose resume checkpoints were removed to save
                              space (``tnlib prune``): the step it finished at; training it on needs a fresh start
    machines.jsonl            one line per start of training: the step it started from, the kind of hardware,
                              the code's commit and the host's processor
    metrics-SPLIT.json        test metrics of best.pt (metrics-SPLIT-STEM.json for another checkpoint)
    planning-ESTIMATE.jsonl   one line per planned instance of the plan split (ESTIMATE: default or clip)

and :func:`tnlib.learning.split_planning.plan_baseline` writes ``baseline-DOMAIN-HEURISTIC.jsonl`` (GBFS with a
symbolic heuristic over the plan split) into the folder it is given, a sweep's results folder.

Why here and not in :mod:`tnlib.experiments.results_dir`: every one of these files is written by learning's own
modules (training, evaluation, split_planning), and a stage imports only the stages below it, so the names
live with their writers. :mod:`tnlib.experiments.results_dir` builds on this module -- its ``RunDir`` is this class --
and adds what only experiments owns: a results folder of run folders and its ``sweep.json``.
"""
from __future__ import annotations

import os
from pathlib import Path

from tnlib.files import COMPRESSED_SUFFIX, read_json, read_jsonl

# baseline-DOMAIN-HEURISTIC.jsonl: GBFS with a symbolic heuristic over a domain's plan split (plan_baseline)
BASELINE = "baseline-{domain}-{heuristic}.jsonl"
# planning-ESTIMATE.jsonl: GBFS with a run's model over the plan split (plan_split); over another split or a plan
# set (plan_split(..., split=...)), planning-SPLIT-ESTIMATE.jsonl, so that records of two instance sets never mix
PLANNING = "planning-{estimate}.jsonl"
PLANNING_ON = "planning-{split}-{estimate}.jsonl"
# What to do about a damaged config.json: training writes it again (tnlib.learning.training.train), even for a run
# trained to its steps, which it only reads.
CONFIG_REMEDY = ("restore it from a copy, or run the sweep or `tnlib train` that made the run again (it writes the "
                 "file again)")


#: What a command sent to a run folder that is not there adds: the README's examples name folders a fresh clone lacks.
NO_RUNS_YET = ("run folders are not in git, so a fresh clone has none: `tnlib sweep --preset small` or `make "
               "reproduce` trains runs/small/, `tnlib train` one run into runs/")
#: Where a run's weights are when its folder is there and they are not: the committed reports keep their runs'
#: weights in git's history rather than its tree.
WEIGHTS_IN_HISTORY = ("a committed run keeps its weights in git's history, not its tree: `tnlib restore-weights "
                      "{results}` writes them back (a run still training has no best.pt before its first validation)")


def missing_checkpoint_message(path: str | os.PathLike) -> str:
    """Why a checkpoint ``path`` (a file, or a run folder meaning its best.pt) is not there, and what brings it: a run
    folder whose weights are not in the working tree, or no run folder at all."""
    path = Path(path)
    folder = path if path.suffix != ".pt" else path.parent
    if (folder / RunDir.CONFIG).is_file():
        where = f"{folder / RunDir.BEST}" if folder == path else f"{path}"
        return f"no checkpoint at {where}; {WEIGHTS_IN_HISTORY.format(results=folder.parent)}"
    return f"no run folder or checkpoint at {path} ({NO_RUNS_YET})"


def baseline_file(folder: str | os.PathLike, domain: str, heuristic: str) -> Path:
    """Where :func:`tnlib.learning.split_planning.plan_baseline` writes ``domain``'s ``heuristic`` baseline."""
    return Path(folder) / BASELINE.format(domain=domain, heuristic=heuristic)


class RunDir:
    """One run folder: the path of each of its files."""

    CONFIG = "config.json"
    DATA = "data.json"
    CURVES = "curves.jsonl"
    # A finished run's curve as exported records hold it (tnlib export-records): read, never appended to.
    CURVES_EXPORTED = CURVES + COMPRESSED_SUFFIX
    BEST = "best.pt"
    BEST_NLL = "best-nll.pt"
    LAST = "last.pt"
    # the checkpoint before last.pt, kept so that a damaged last.pt costs only the steps since it
    LAST_PREVIOUS = "last-previous.pt"
    # the second name last.pt takes for a moment while it becomes last-previous.pt (tnlib.learning.training)
    LAST_PREVIOUS_LINK = ".last-previous.pt.link"
    MACHINES = "machines.jsonl"
    PRUNED = "pruned.json"

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def lock_file(self) -> Path:
        """The lock beside the run folder that training, a sweep's cell and pruning hold while they change the run
        (:func:`tnlib.files.locked`): two processes never work on one run at once."""
        return self.path.parent / f".{self.name}.lock"

    @property
    def config_file(self) -> Path:
        return self.path / self.CONFIG

    @property
    def data_file(self) -> Path:
        return self.path / self.DATA

    @property
    def curves_file(self) -> Path:
        """The run's validation records as a reader finds them: ``curves.jsonl``, or where only an exported copy
        is there, ``curves.jsonl.gz`` (read_jsonl reads either)."""
        exported = self.path / self.CURVES_EXPORTED
        return exported if exported.is_file() and not self.training_curves_file.is_file() else (
            self.training_curves_file)

    @property
    def training_curves_file(self) -> Path:
        """``curves.jsonl``: the file training writes, one line appended per validation."""
        return self.path / self.CURVES

    @property
    def best(self) -> Path:
        return self.path / self.BEST

    @property
    def best_nll(self) -> Path:
        return self.path / self.BEST_NLL

    @property
    def last(self) -> Path:
        return self.path / self.LAST

    @property
    def last_previous(self) -> Path:
        return self.path / self.LAST_PREVIOUS

    @property
    def last_previous_link(self) -> Path:
        return self.path / self.LAST_PREVIOUS_LINK

    @property
    def machines_file(self) -> Path:
        return self.path / self.MACHINES

    @property
    def pruned_file(self) -> Path:
        return self.path / self.PRUNED

    def training_starts(self) -> list[dict]:
        """The records of ``machines.jsonl`` (``step``, ``machine`` and, from the records that name it, ``code``),
        in the order written; a damaged line -- one
        cut short, or left without the two keys by a changed byte -- says nothing and is skipped."""
        return [record for record in read_jsonl(self.machines_file)
                if isinstance(record.get("step"), int) and isinstance(record.get("machine"), str)]

    def checkpoint(self, name: str = BEST) -> Path:
        return self.path / name

    @staticmethod
    def metrics_name(split: str = "test", checkpoint: str = BEST) -> str:
        """``metrics-SPLIT.json`` for ``best.pt``, ``metrics-SPLIT-STEM.json`` for another checkpoint."""
        stem = Path(checkpoint).stem
        return f"metrics-{split}.json" if stem == "best" else f"metrics-{split}-{stem}.json"

    def metrics_file(self, split: str = "test", checkpoint: str = BEST) -> Path:
        return self.path / self.metrics_name(split, checkpoint)

    def planning_file(self, estimate: str, split: str = "plan") -> Path:
        name = PLANNING.format(estimate=estimate) if split == "plan" else PLANNING_ON.format(split=split,
                                                                                              estimate=estimate)
        return self.path / name

    @staticmethod
    def _planning_stem(planning_file: str | os.PathLike) -> str:
        """``planning-SPLIT-ESTIMATE`` of a planning file, plain (``.jsonl``) or compressed (``.jsonl.gz``)."""
        return Path(planning_file).name.removesuffix(COMPRESSED_SUFFIX).removesuffix(".jsonl")

    @staticmethod
    def estimate_of(planning_file: str | os.PathLike) -> str:
        """The estimate a planning file holds (estimates have no dash: ``default``, ``clip``)."""
        return RunDir._planning_stem(planning_file).rsplit("-", 1)[1]

    @staticmethod
    def planned_split_of(planning_file: str | os.PathLike) -> str:
        """The split (or plan set) a planning file's records were planned on."""
        return RunDir._planning_stem(planning_file)[len("planning-"):].rpartition("-")[0] or "plan"

    def read_config(self) -> dict:
        """The run's ``config.json``; a DamagedFile naming it when it is not JSON, or not a run's configuration."""
        return read_json(self.config_file, CONFIG_REMEDY, shape="a run's configuration")
