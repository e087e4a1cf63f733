"""Datasets of labelled states: the format (schema), per-state labels of a solved instance (labels), generating
a dataset resumably on one machine or a Dask cluster (generation), filling the slots A* left out of reach with
an exact solver (slot_filling), its manifests and checks (manifest), the rows of val, test and plan that equal a
train (state, goal) pair (train_pairs), and checked loaders and torch datasets (loading).

``tnlib.data.load_split`` is :func:`tnlib.data.loading.load_split`, imported on first use (so that the dataset
commands start without torch).
"""
from __future__ import annotations

__all__ = ["load_split"]


def __getattr__(name: str):
    if name == "load_split":
        from tnlib.data.loading import load_split

        return load_split
    raise AttributeError(f"module 'tnlib.data' has no attribute {name!r}")
