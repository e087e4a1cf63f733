"""Test accuracy of trained models (the numbers of the paper's Table 1).

``evaluate(checkpoint, split) -> metrics`` computes, on a split (default ``test``):

* ``mse`` — the MSE of the point estimate (N: mu; TN: its truncated mean) against h*;
* ``mse_clip`` — N only: the MSE of max(mu, l) (``None`` for TN);
* ``nll`` — the mean negative log-likelihood of h* (the training loss);
* ``mse_ff`` / ``mse_lmcut`` — the MSE of the h_FF and LM-cut heuristics on the same states (the table's
  baseline columns);

with the run's configuration (domain, model, distribution, sigma, residual, bounds, seed). ``evaluate_run`` also
writes them to ``<run>/metrics-<split>.json``, which :mod:`tnlib.experiments.reporting.tables` lays out as Table 1.

On ``test-grid`` the metrics are those of the domain's whole test grid (:func:`evaluate_test_grid`): the cells the
test-grid split labels exactly and those the test split labels whole (:mod:`tnlib.data.full_test_grid`), over
all of them and per cell under ``sizes`` -- what :mod:`tnlib.experiments.reporting.size_tables` lays out as Table 1 per
size.
"""
from __future__ import annotations

import os
from typing import Sequence

import numpy as np
import torch

from tnlib.data.full_test_grid import full_test_grid
from tnlib.data.schema import TEST_GRID
from tnlib.files import atomic_write_json
from tnlib.learning.heads import Prediction
from tnlib.learning.run_files import RunDir
from tnlib.learning.training import (PREDICTION_BATCH_SIZE, checkpoint_encoder, encode_all, load_checkpoint,
                                    load_items, predict)


def _mse(a, b) -> float:
    return float(((a - b) ** 2).mean())


def _run_fields(config, saved: dict, split: str) -> dict:
    """What a metrics file says of the run and the checkpoint it evaluated."""
    return {"domain": config.domain, "model": config.model, "distribution": config.head.distribution,
            "sigma": config.head.sigma, "residual": config.head.residual, "lower_bound": config.head.lower_bound,
            "upper_bound": config.head.upper_bound, "seed": config.seed, "split": split,
            "checkpoint_step": saved["step"]}


def _accuracy(p: dict, rows=None) -> dict:
    """The states, MSEs and NLL of predict's columns ``p`` (``rows``: only those rows)."""
    if rows is not None:
        rows = torch.as_tensor(rows, dtype=torch.long)
        p = {key: value[rows] for key, value in p.items()}
    h_star = p["h_star"]
    lmcut_known = not bool(p["lmcut"].isnan().any())
    return {
        "states": len(h_star),
        "mse": _mse(p["estimate"], h_star),
        "mse_clip": _mse(p["clipped"], h_star) if "clipped" in p else None,
        "nll": float(p["nll"].mean()),
        "mse_ff": _mse(p["ff"], h_star),
        "mse_lmcut": _mse(p["lmcut"], h_star) if lmcut_known else None,
    }


def split_predictions(checkpoint: str | os.PathLike, split: str = "test", items: Sequence[dict] | None = None,
                      data_root: str | None = None, batch_size: int = PREDICTION_BATCH_SIZE,
                      device: str | None = None):
    """``(config, checkpoint dict, predict's columns)`` of a checkpoint (a ``.pt`` file, or a run folder: its
    ``best.pt``) on a split's labelled states; ``items`` overrides loading the split from the dataset
    (``data_root``, default: the run's)."""
    model, head, config, saved = load_checkpoint(checkpoint, device)
    if items is None:
        if data_root is not None:
            config.data_root = data_root
        items = load_items(config, split)
    encoder = checkpoint_encoder(config, saved)
    return config, saved, predict(model, head, encoder, encode_all(encoder, items), next(model.parameters()).device,
                                  batch_size)


def split_distributions(checkpoint: str | os.PathLike, split: str = "test", items: Sequence[dict] | None = None,
                        data_root: str | None = None, device: str | None = None):
    """``(config, Prediction, predict's columns)``: :func:`split_predictions` with the predicted distribution of
    each state as a :class:`tnlib.learning.heads.Prediction` (its ``torch_distribution`` a Normal or a
    TruncatedNormal, as the run's head builds it in training)."""
    config, _, p = split_predictions(checkpoint, split, items, data_root, device=device)
    return config, Prediction(config.head.distribution, p["mu"], p["sigma"], p["lower"], p["upper"]), p


def evaluate(checkpoint: str | os.PathLike, split: str = "test", items: Sequence[dict] | None = None,
             data_root: str | None = None, batch_size: int = PREDICTION_BATCH_SIZE,
             device: str | None = None) -> dict:
    """Test metrics of a checkpoint (a ``.pt`` file, or a run folder: its ``best.pt``) on a split; on
    ``test-grid`` (unless ``items`` are given), :func:`evaluate_test_grid`'s.

    ``items`` overrides loading the split from the dataset (``data_root``, default: the run's).
    """
    if split == TEST_GRID and items is None:
        return evaluate_test_grid(checkpoint, data_root, batch_size, device)
    config, saved, p = split_predictions(checkpoint, split, items, data_root, batch_size, device)
    return {**_run_fields(config, saved, split), **_accuracy(p)}


def evaluate_test_grid(checkpoint: str | os.PathLike, data_root: str | None = None,
                       batch_size: int = PREDICTION_BATCH_SIZE,
                       device: str | None = None) -> dict:
    """Test metrics of a checkpoint on its domain's whole test grid (:func:`tnlib.data.full_test_grid.full_test_grid`):
    :func:`evaluate`'s over every labelled cell's states, and under ``sizes`` one record per cell of the grid, in
    its order -- ``params``, the ``split`` that labels it (None: neither labels it whole; then no metrics),
    ``instances`` and, where it has states, the same metrics over them."""
    model, head, config, saved = load_checkpoint(checkpoint, device)
    if data_root is not None:
        config.data_root = data_root
    cells = full_test_grid(config.data_root, config.domain)
    items: list[dict] = []
    cell_of_row: list[int] = []
    for split in (TEST_GRID, "test"):
        cell_of = {name: i for i, cell in enumerate(cells) if cell.split == split for name in cell.instances}
        if cell_of:
            loaded = load_items(config, split, instances=list(cell_of))
            cell_of_row += [cell_of[item["instance"]] for item in loaded]
            items += loaded
    encoder = checkpoint_encoder(config, saved)
    p = predict(model, head, encoder, encode_all(encoder, items), next(model.parameters()).device, batch_size)
    cell_of_row = np.asarray(cell_of_row, dtype=np.int64)
    sizes = []
    for i, cell in enumerate(cells):
        rows = np.flatnonzero(cell_of_row == i)
        sizes.append({"params": cell.params, "split": cell.split, "instances": len(cell.instances),
                      **(_accuracy(p, rows) if len(rows) else {"states": 0})})
    return {**_run_fields(config, saved, TEST_GRID), **_accuracy(p), "sizes": sizes}


def evaluate_run(run_dir: str | os.PathLike, split: str = "test", checkpoint: str = RunDir.BEST, **kwargs) -> dict:
    """:func:`evaluate` a run folder's checkpoint and write the metrics into the folder: ``metrics-<split>.json``
    for ``best.pt`` (what :func:`tnlib.experiments.reporting.table_rows.collect_results` reads),
    ``metrics-<split>-<stem>.json`` for another one (e.g. ``best-nll.pt``, the paper's choice for NLL)."""
    run = RunDir(run_dir)
    metrics = evaluate(run.checkpoint(checkpoint), split, **kwargs)
    atomic_write_json(run.metrics_file(split, checkpoint), metrics, indent=2)
    return metrics
