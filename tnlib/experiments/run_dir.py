"""The files of a training run's folder and of a results folder, named in one place.

A run folder (``train`` writes it; one per configuration and seed) holds::

    config.json               the TrainConfig
    data.json                 the data the run trained and validated on: splits, instances and states used
    curves.jsonl              one line per validation: step, training loss, validation NLL and MSE, seconds
    best.pt, best-nll.pt      the weights with the best validation MSE / NLL
    last.pt                   the resumable checkpoint (optimizer, sampler state)
    metrics-SPLIT.json        test metrics of best.pt (metrics-SPLIT-STEM.json for another checkpoint)
    planning-ESTIMATE.jsonl   one line per planned instance of the plan split (ESTIMATE: default or clip)

A results folder (a sweep's ``out_dir``) holds run folders, ``sweep.json`` (the sweep) and
``baseline-DOMAIN-HEURISTIC.jsonl`` (GBFS with a symbolic heuristic over the plan split).
"""
from __future__ import annotations

import json
import os
from pathlib import Path


class RunDir:
    """One run folder: the path of each of its files."""

    CONFIG = "config.json"
    DATA = "data.json"
    CURVES = "curves.jsonl"
    BEST = "best.pt"
    BEST_NLL = "best-nll.pt"
    LAST = "last.pt"

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def config_file(self) -> Path:
        return self.path / self.CONFIG

    @property
    def data_file(self) -> Path:
        return self.path / self.DATA

    @property
    def curves_file(self) -> Path:
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

    def checkpoint(self, name: str = BEST) -> Path:
        return self.path / name

    @staticmethod
    def metrics_name(split: str = "test", checkpoint: str = BEST) -> str:
        """``metrics-SPLIT.json`` for ``best.pt``, ``metrics-SPLIT-STEM.json`` for another checkpoint."""
        stem = Path(checkpoint).stem
        return f"metrics-{split}.json" if stem == "best" else f"metrics-{split}-{stem}.json"

    def metrics_file(self, split: str = "test", checkpoint: str = BEST) -> Path:
        return self.path / self.metrics_name(split, checkpoint)

    def planning_file(self, estimate: str) -> Path:
        return self.path / f"planning-{estimate}.jsonl"

    @staticmethod
    def estimate_of(planning_file: str | os.PathLike) -> str:
        """The estimate a ``planning-ESTIMATE.jsonl`` file holds."""
        return Path(planning_file).stem.split("-", 1)[1]

    def read_config(self) -> dict:
        return json.loads(self.config_file.read_text())


class ResultsDir:
    """A folder of run folders (a sweep's ``out_dir``) and its own files."""

    SWEEP = "sweep.json"

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    @property
    def sweep_file(self) -> Path:
        return self.path / self.SWEEP

    def runs(self) -> list[RunDir]:
        """The run folders directly inside, sorted by name (those with a config.json)."""
        return [RunDir(p.parent) for p in sorted(self.path.glob(f"*/{RunDir.CONFIG}"))]

    def metrics_files(self, split: str = "test", checkpoint: str = RunDir.BEST) -> list[Path]:
        """Every metrics file of ``split`` and ``checkpoint`` below, recursively, sorted by path."""
        return sorted(self.path.rglob(RunDir.metrics_name(split, checkpoint)))

    def planning_files(self) -> list[Path]:
        """Every ``planning-*.jsonl`` below, recursively, sorted by path (the run folder is the parent)."""
        return sorted(self.path.rglob("planning-*.jsonl"))

    def baseline_file(self, domain: str, heuristic: str) -> Path:
        return self.path / f"baseline-{domain}-{heuristic}.jsonl"

    def baseline_files(self, heuristic: str) -> dict[str, Path]:
        """``{domain: file}`` of every baseline file of ``heuristic`` below, recursively."""
        return {path.stem.split("-")[1]: path for path in sorted(self.path.rglob(f"baseline-*-{heuristic}.jsonl"))}
