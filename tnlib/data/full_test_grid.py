"""A domain's whole test grid, cell by cell, from the splits that label each cell in full.

The ``test`` split was labelled under a solver's limits, so at the larger sizes it holds the easier draws or none
(its out-of-reach cells); the ``test-grid`` split labels the test split's very slots and draws exactly, but only in
the cells its profile gave it (:data:`tnlib.data.schema.TEST_GRID`). A cell of the test grid is therefore labelled
whole by ``test-grid`` where that split's grid has it, else by ``test`` where no slot of it met a solver limit
(every slot filled, or left empty only because the cell has no more distinct problems: visitall's cells other
than 7x7 ratio 1 in data/paper, which is why its test grid holds one cell), else by neither: such a cell is listed,
empty, so that what a table per size leaves out is said, not silent.

:func:`full_test_grid` reads only the manifests (no table): the cells in the test split's grid order (the
profile's test grid), then any cell only the test-grid has.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from tnlib.data.manifest import dataset_root
from tnlib.data.schema import LIMIT_HITS, MANIFEST, TEST_GRID
from tnlib.errors import DatasetError
from tnlib.files import read_json

__all__ = ["GridCell", "full_test_grid"]

# Empty slots that say nothing against a cell's labels: its draws ran out of distinct problems.
_NO_MORE_PROBLEMS = ("exhausted", "skipped")


@dataclass(frozen=True)
class GridCell:
    """One cell of the test grid: its generator parameters, the split that labels it whole (``test-grid``,
    ``test``, or None: neither) and that split's instances of it."""

    params: dict
    split: str | None
    instances: tuple[str, ...] = ()


def _cell_key(params: dict) -> tuple:
    return tuple(sorted(params.items()))


def _whole(entry: dict, key: tuple) -> bool:
    """Whether the split ``entry`` (a manifest's split record) labels the cell ``key`` whole: no attempt of it met a
    solver limit and no slot of it was left empty but for want of distinct problems."""
    records = [r for r in entry.get("instances", []) + entry.get("failures", []) if _cell_key(r["params"]) == key]
    return (all(r.get("status", "ok") in ("ok",) + _NO_MORE_PROBLEMS for r in records)
            and not any(attempt.get("status") in LIMIT_HITS for r in records for attempt in r.get("rejected", [])))


def _instances(entry: dict, key: tuple) -> tuple[str, ...]:
    return tuple(r["instance"] for r in entry.get("instances", []) if _cell_key(r["params"]) == key)


def full_test_grid(root: str | os.PathLike | None, domain: str) -> list[GridCell]:
    """The cells of ``domain``'s test grid in the dataset ``root`` (None: the default root), each with the split
    that labels it whole (module docstring). A DatasetError when the domain has no test-grid split."""
    base = dataset_root(root)
    manifest = base / domain / MANIFEST
    if not manifest.is_file():
        raise DatasetError(f"{manifest} missing: {base} holds no {domain} dataset")
    splits = read_json(manifest)["splits"]
    if TEST_GRID not in splits:
        raise DatasetError(f"{base}: {domain} has no {TEST_GRID} split (make it with `tnlib data generate --domain "
                           f"{domain} --splits {TEST_GRID} --solver exact`, or fill it with `tnlib data fill`)")
    grid, test = splits[TEST_GRID], splits.get("test", {})
    in_grid = {_cell_key(p) for p in grid["settings"]["grid"]["params"]}
    test_params = test.get("settings", {}).get("grid", {}).get("params", [])
    cells = []
    for params in test_params + [p for p in grid["settings"]["grid"]["params"]
                                 if _cell_key(p) not in {_cell_key(q) for q in test_params}]:
        key = _cell_key(params)
        if key in in_grid:
            cells.append(GridCell(dict(params), TEST_GRID, _instances(grid, key)))
        elif _whole(test, key):
            cells.append(GridCell(dict(params), "test", _instances(test, key)))
        else:
            cells.append(GridCell(dict(params), None))
    return cells
