"""The experiments notebook's parameters, checked in the cell after them before anything runs."""
from __future__ import annotations

import os
from pathlib import Path

from tnlib.experiments.running.reproduce import NOTEBOOKS
from tnlib.experiments.running.sweep import check_results
from tnlib.experiments.sweep_settings import Sweep


def check_notebook_parameters(preset: str | None = "small", results_dir: str | os.PathLike | None = None,
                              run=True, reports_dir: str | os.PathLike | None = None, scheduler: str | None = None,
                              notebook_dir: str | os.PathLike | None = None,
                              **overrides) -> tuple[Sweep, Path | None]:
    """The experiments notebook's parameters, checked before anything runs: ``(sweep, reports folder or None)``,
    or a ValueError naming the first bad parameter.

    Relative ``results_dir``, ``reports_dir`` and ``data_root`` are relative to the notebooks folder
    (``notebook_dir``, default ``<repo>/notebooks``) whatever the kernel's working folder, so papermill started from
    the repository root writes where JupyterLab would; ``results_dir`` None is ``../runs/<preset>``. ``overrides``
    are :meth:`Sweep.from_parameters`' parameters; None keeps the preset's value. With ``run`` the dataset is
    checked too (:meth:`Sweep.check_data`: a DatasetError naming what to generate), so missing data stops this first
    cell, not the sweep; without it the results folder is (:func:`tnlib.experiments.running.sweep.check_results`: a
    MissingRuns saying how to make them), so a notebook that only reads shows no empty tables.
    """
    if not isinstance(run, bool):
        # papermill's -p makes booleans of True and False only; "true" or "no" arrive as text
        raise ValueError(f"run must be True or False, got {run!r} (papermill: -p run False, capitalised)")
    if scheduler is not None and not isinstance(scheduler, str):
        raise ValueError(f"scheduler must be None or a Dask scheduler address such as 'tcp://HOST:8786', "
                         f"got {scheduler!r}")
    if notebook_dir is None:
        notebook_dir = NOTEBOOKS

    def folder(name: str, value) -> Path:
        if not isinstance(value, (str, os.PathLike)) or not str(value):
            raise ValueError(f"{name} must be a folder path, got {value!r}")
        return (Path(notebook_dir) / value).resolve()  # an absolute value stays itself

    overrides = {name: value for name, value in overrides.items() if value is not None}
    if "data_root" in overrides:
        overrides["data_root"] = str(folder("data_root", overrides["data_root"]))
    results = folder("results_dir", f"../runs/{preset or 'paper'}" if results_dir is None else results_dir)
    sweep = Sweep.from_parameters(preset=preset, out_dir=str(results), **overrides)
    reports = None if reports_dir is None else folder("reports_dir", reports_dir)
    if run:
        sweep.check_data()
    else:
        check_results(sweep)
    return sweep, reports
