"""Experiments' running wing: what trains, tests and plans.

``sweep`` (a sweep's grid run locally or on Dask; the ``sweep.json`` it writes), ``cells`` (one cell: train,
until flat if asked, evaluate, plan), ``cell_settings`` (what a cell does besides training, as one value),
``sweep_standing`` (what a sweep costs and where its runs stand), ``sweep_banner``
(what ``tnlib sweep`` prints before it starts), ``pruning`` (finished runs without their resume checkpoints),
``baselines`` (symbolic GBFS on the plan sets), ``rerun_check`` (does the current code still make a committed
report), ``experiments_notebook_parameters`` (the experiments notebook's checks), ``reproduce`` (the main job) and
``offline_math`` (its exported notebooks' formulas as MathML).
"""
