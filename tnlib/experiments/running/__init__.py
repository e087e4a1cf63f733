"""Experiments' running wing: what trains, tests and plans.

``sweep`` (domains x models x configs x seeds, local or Dask; its data checks and ``sweep.json``), ``presets`` (the
named sweeps), ``cells`` (one cell: train, until flat if asked, evaluate, plan), ``cell_settings`` (what a cell does
besides training, as one value), ``sweep_standing`` (what a sweep costs and where its runs stand), ``sweep_banner``
(what ``tnlib sweep`` prints before it starts), ``pruning`` (finished runs without their resume checkpoints),
``baselines`` (symbolic GBFS on the plan sets), ``rerun_check`` (does the current code still make a committed
report), ``experiments_notebook_parameters`` (the experiments notebook's checks), ``reproduce`` (the main job) and
``offline_math`` (its exported notebooks' formulas as MathML).
"""
