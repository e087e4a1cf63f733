"""How calibrated a sweep's trained runs are: their predicted distributions of h* checked on the test split.

Beyond the paper, which reads only point estimates and the NLL: for every configuration with a learned sigma (a
fixed sigma is a claim about the noise, not a prediction of it), the share of test states inside each run's
central prediction intervals, their width and the probability put below the admissible bound
(:mod:`tnlib.learning.calibration`), the seeds' states pooled. The experiments notebook shows the table and the PIT
histograms (:func:`tnlib.notebook.calibration_figures.sweep_calibration_figures`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tnlib.experiments.results_dir import ResultsDir
from tnlib.experiments.sweep_settings import Sweep
from tnlib.learning.calibration import COVERAGE_LEVELS, Calibration, pooled_calibration, run_calibration
from tnlib.learning.run_files import RunDir
from tnlib.learning.training import TrainConfig, read_run_config
from tnlib.paper import DISTRIBUTIONS, DOMAINS, MODELS


@dataclass(frozen=True)
class CalibrationRow:
    """One configuration's calibration: ``config`` the (sigma, residual) pair, ``seeds`` the seeds whose tested runs
    it pools into ``calibration``; ``per_seed`` their own, in the same order (the spread over seeds)."""

    domain: str
    model: str
    config: tuple[str, str]
    distribution: str
    seeds: tuple[int, ...]
    calibration: Calibration
    per_seed: tuple[Calibration, ...]


def sweep_calibration(sweep: Sweep, split: str = "test") -> list[CalibrationRow]:
    """A :class:`CalibrationRow` per (domain, model, learned-sigma configuration, distribution) of the sweep with at
    least one run trained and tested in its results folder, in the sweep's order; each run's PIT draws its uniforms
    from its seed."""
    return _pooled_rows([(config, sweep.run_folder(config)) for config in sweep.train_configs()], split)


def folder_calibration(results_dir, split: str = "test") -> list[CalibrationRow]:
    """:func:`sweep_calibration` of every run in a results folder (``tnlib report --calibration``): domains, models
    and distributions in the paper's order."""
    runs = [(read_run_config(run.path), run) for run in ResultsDir(results_dir).runs()]

    def order(pair):
        config = pair[0]
        return (_rank(DOMAINS, config.domain), _rank(MODELS, config.model), config.head.sigma,
                config.head.residual, _rank(DISTRIBUTIONS, config.head.distribution), config.seed)

    return _pooled_rows(sorted(runs, key=order), split)


def _rank(names, name) -> tuple[int, str]:
    return (names.index(name) if name in names else len(names), name)


def _pooled_rows(runs: list[tuple[TrainConfig, RunDir]], split: str) -> list[CalibrationRow]:
    groups: dict[tuple, list[tuple[int, Calibration]]] = {}
    for config, run in runs:
        head = config.head
        if head.sigma != "learn" or not run.metrics_file("test").is_file():
            continue
        key = (config.domain, config.model, (head.sigma, head.residual), head.distribution)
        groups.setdefault(key, []).append((config.seed, run_calibration(run.path, split, seed=config.seed)))
    return [CalibrationRow(*key, seeds=tuple(seed for seed, _ in runs),
                           calibration=pooled_calibration([check for _, check in runs]),
                           per_seed=tuple(check for _, check in runs))
            for key, runs in groups.items()]


def calibration_markdown(rows: list[CalibrationRow]) -> str:
    """The rows as a Markdown table: coverage of each central interval (calibrated: its nominal share; the seeds'
    states pooled, which is the mean over seeds), the 90% interval's mean width and the probability below l - 1/2;
    the last three with their standard deviation over seeds (two or more)."""
    if not rows:
        return "*No run with a learned sigma is trained and tested yet.*"
    levels = " | ".join(f"{level:.0%}" + (" (± std over seeds)" if level == 0.9 else "") for level in COVERAGE_LEVELS)
    lines = [f"| domain | model | config | distribution | seeds | {levels} | 90% width | P(below l) |",
             "|---|---|---|---|---|" + "---|" * len(COVERAGE_LEVELS) + "---|---|"]
    for row in rows:
        def spread(name: str, key: float | None, scale: float, digits: int) -> str:
            return _mean_std([getattr(check, name) if key is None else getattr(check, name)[key]
                              for check in row.per_seed], scale, digits)

        shares = " | ".join(f"{spread('coverage', level, 100, 1)}%" if level == 0.9 else
                            f"{row.calibration.coverage[level]:.1%}" for level in COVERAGE_LEVELS)
        lines.append(f"| {row.domain} | {row.model} | {'/'.join(row.config)} | {row.distribution} | "
                     f"{', '.join(map(str, row.seeds))} | {shares} | {spread('mean_width', 0.9, 1, 2)} | "
                     f"{spread('mass_below_bound', None, 100, 1)}% |")
    return "\n".join(lines)


def _mean_std(values: list[float], scale: float, digits: int) -> str:
    """``mean ± std`` over seeds (sample std, two or more), scaled (100: percent)."""
    mean = scale * float(np.mean(values))
    if len(values) < 2:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {scale * float(np.std(values, ddof=1)):.{digits}f}"
