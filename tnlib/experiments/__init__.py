"""Experiments: a base and two wings.

The base, at this folder's root, is what a results folder holds and can show, read by both wings: its files
(``results_dir``), the sweep that made it (``sweep_settings``: a sweep's settings, its grid, its data checks and its
``sweep.json`` record; ``presets``: the named sweeps), its records that lost lines (``damaged_records``) and the
reports' header of what the runs can and cannot show (``scope`` collects it, ``scope_page`` writes it).
:mod:`tnlib.experiments.running` runs things: sweeps over configurations and their cells, the symbolic baselines,
the main job that regenerates reports/, the rerun check. :mod:`tnlib.experiments.reporting` lays results out: the
paper's Table 1 and Table 2, the reports, their figures, the seeds' statistics. Running imports reporting (a main
job ends in its reports); reporting never imports running (tests/repository/test_layering.py).
"""
