"""Loading tnlib datasets: checked against their manifests, as tables or as torch datasets.

A dataset root (e.g. ``data/small``, made by ``tnlib data generate``; layout in :mod:`tnlib.data.generation`)
holds one Parquet table per domain and split with one row per state on an instance's optimal plan (columns:
:mod:`tnlib.data.schema`).
:func:`load_split` returns a :class:`StateTable`; :class:`HeuristicDataset` turns one into per-state training
items. Loading verifies the manifest and sha256 checksums first and raises :class:`DatasetError` with a message
that names the file and the command that regenerates it.
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import torch

from tnlib.data.manifest import generate_hint, check_dataset, dataset_root
from tnlib.data.schema import ALL_SPLITS, DEFAULT_PROFILE, FEATURE_COLUMNS, arrow_schema
from tnlib.errors import DatasetError
from tnlib.paper import DOMAINS, LOWER_BOUNDS, MAIN_LOWER_BOUND, MAIN_RESIDUAL, RESIDUALS, UPPER_BOUNDS

__all__ = ["HeuristicDataset", "StateTable", "collate", "load_split"]


# ---------------------------------------------------------------------------------------------------------------
# Tables


class StateTable:
    """One domain and split: a thin wrapper around the pyarrow table, one row per state."""

    def __init__(self, table, root: Path, domain: str, split: str):
        self.table = table
        self.root = Path(root)
        self.domain = domain
        self.split = split

    def __len__(self) -> int:
        return self.table.num_rows

    def __repr__(self) -> str:
        return f"<StateTable {self.domain}/{self.split}: {len(self.instances())} instances, {len(self)} states>"

    def __getitem__(self, index: int) -> dict:
        if not -len(self) <= index < len(self):
            raise IndexError(f"row {index} out of range for {len(self)} rows")
        return self.table.slice(index % len(self), 1).to_pylist()[0]

    def __iter__(self) -> Iterator[dict]:
        return iter(self.to_pylist())

    @property
    def columns(self) -> list[str]:
        return self.table.column_names

    def instances(self) -> list[str]:
        """Instance names in table order (each once)."""
        return list(dict.fromkeys(self.table.column("instance").to_pylist()))

    def to_pylist(self) -> list[dict]:
        return self.table.to_pylist()

    def column(self, name: str) -> list:
        return self.table.column(name).to_pylist()

    def numpy(self, name: str) -> np.ndarray:
        """A numeric column as a numpy array."""
        return self.table.column(name).to_numpy()

    def select_instances(self, names: Sequence[str]) -> "StateTable":
        """The rows of the given instances, in table order; raises KeyError for unknown names."""
        import pyarrow as pa
        import pyarrow.compute as pc

        unknown = set(names) - set(self.instances())
        if unknown:
            raise KeyError(f"unknown instance(s) in {self.domain}/{self.split}: {', '.join(sorted(unknown)[:5])}")
        mask = pc.is_in(self.table.column("instance"), value_set=pa.array(list(names), pa.string()))
        return StateTable(self.table.filter(mask), self.root, self.domain, self.split)

    def without_train_pairs(self) -> "StateTable":
        """The rows whose (state, goal) is not, up to renaming objects, that of any row of the domain's whole
        train split: the state-disjoint validation set (:mod:`tnlib.data.train_pairs`; from the manifest's
        record, which ``tnlib data verify`` recomputes). Raises :class:`DatasetError` for the train split and
        when the record is missing or stale."""
        import pyarrow as pa

        from tnlib.data.train_pairs import steps_equal_to_train

        drop = steps_equal_to_train(self.root, self.domain, self.split)
        keep = [step not in drop.get(name, ()) for name, step in zip(self.column("instance"), self.column("step"))]
        return StateTable(self.table.filter(pa.array(keep, pa.bool_())), self.root, self.domain, self.split)

    def problem_path(self, instance: str) -> Path:
        """Absolute path of an instance's problem file."""
        rows = self.select_instances([instance])
        return self.root / rows.table.column("problem")[0].as_py()

    def optimal_cost(self, instance: str) -> int | None:
        """h* of the instance's initial state: the label of its row at step 0 of the optimal plan (None where the
        table holds no such row), as :meth:`tnlib.data.plan_sets.PlanSet.optimal_cost` gives a plan set's."""
        if not hasattr(self, "_initial_costs"):
            self._initial_costs = {name: int(h) for name, step, h in zip(self.column("instance"), self.column("step"),
                                                                         self.column("h_star")) if step == 0}
        return self._initial_costs.get(instance)


def load_split(
    root: str | os.PathLike | None, domain: str, split: str, verify: bool = True, profile: str = DEFAULT_PROFILE
) -> StateTable:
    """Load one domain and split. ``root`` is a dataset root, or a folder whose ``profile`` sub-folder is one
    (``None``: :func:`default_data_root`). With ``verify`` (the default) the manifests and the checksums of the
    split's files are checked first; any problem raises :class:`DatasetError`."""
    import pyarrow.parquet as pq

    if domain not in DOMAINS:
        raise DatasetError(f"unknown domain {domain!r}; choose from {', '.join(DOMAINS)}")
    if split not in ALL_SPLITS:
        raise DatasetError(f"unknown split {split!r}; choose from {', '.join(ALL_SPLITS)}")
    base = dataset_root(root, profile)
    if verify:
        check_dataset(base, domain, split)
    path = base / domain / f"{split}.parquet"
    if not path.is_file():
        raise DatasetError(f"{path} missing; generate it with {generate_hint(domain, profile, split, root=base)}")
    try:
        table = pq.read_table(path, schema=arrow_schema())
    except Exception as err:  # noqa: BLE001
        hint = generate_hint(domain, profile, split, force=True, root=base, splits=SPLITS)
        raise DatasetError(f"{path}: cannot read ({err}); regenerate with {hint}") from None
    return StateTable(table, base, domain, split)


# ---------------------------------------------------------------------------------------------------------------
# Torch datasets


def _choice(name: str, value: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


class HeuristicDataset(torch.utils.data.Dataset):
    """Per-state training items from a :class:`StateTable`.

    ``lower_bound``: the truncation's lower bound l (``'lmcut'``, ``'hmax'``, ``'blind'``, or ``'none'`` = -inf);
    ``residual``: the base the model's output is added to (``'ff'``, ``'lmcut'``, or ``'none'`` = 0);
    ``upper_bound``: ``'none'`` (+inf) or ``'h_sat'`` (+inf where GBFS found no plan);
    ``instances``: None for all, an int N for at most N distinct instances drawn at random (seeded by ``seed``;
    the paper trains on 400): all of them, with a warning, when the split has fewer (splits hold distinct
    instances only, and small grids have few: the paper profile's gripper train split has 239); or a list of
    instance names. :meth:`instances` lists those used. ``goal_states=False`` leaves out each plan's last state
    (h* = 0).

    Each item is a dict: ``h_star``, ``lower``, ``upper``, ``residual`` (float32 scalar tensors), ``features``
    (float32 [4]: goalcount, ff, ignored deletes total, mean), ``state`` and ``goal`` (lists of atoms),
    ``instance``, ``problem`` (absolute path) and ``domain`` (str). Batch with :func:`collate`.
    """

    def __init__(
        self,
        table: StateTable,
        lower_bound: str = MAIN_LOWER_BOUND,
        residual: str = MAIN_RESIDUAL,
        upper_bound: str = "none",
        instances: int | Sequence[str] | None = None,
        seed: int = 0,
        goal_states: bool = True,
    ):
        self.lower_bound = _choice("lower_bound", lower_bound, LOWER_BOUNDS)
        self.residual = _choice("residual", residual, RESIDUALS)
        self.upper_bound = _choice("upper_bound", upper_bound, UPPER_BOUNDS)
        if instances is not None:
            names = table.instances()
            if isinstance(instances, (int, np.integer)) and not isinstance(instances, bool):
                if instances < 1:
                    raise ValueError(f"instances={instances}: must be at least 1 (or None for all)")
                if instances >= len(names):
                    if instances > len(names):
                        warnings.warn(
                            f"{table.domain}/{table.split}: instances={instances} asked for, but the split has "
                            f"{len(names)} distinct instances; using all {len(names)}", stacklevel=2,
                        )
                    instances = names
                else:
                    picked = np.random.default_rng(seed).choice(len(names), size=int(instances), replace=False)
                    instances = [names[i] for i in sorted(picked)]
            table = table.select_instances(list(instances))
        if not goal_states:
            import pyarrow.compute as pc

            keep = pc.less(table.table.column("step"), table.table.column("plan_length"))
            table = StateTable(table.table.filter(keep), table.root, table.domain, table.split)
        self.table = table
        rows = len(table)
        self.h_star = torch.as_tensor(table.numpy("h_star").astype(np.float32))
        self.lower = (
            torch.full((rows,), -torch.inf) if lower_bound == "none"
            else torch.as_tensor(table.numpy(lower_bound).astype(np.float32))
        )
        if upper_bound == "none":
            self.upper = torch.full((rows,), torch.inf)
        else:
            values = table.numpy("h_sat").astype(np.float32)
            self.upper = torch.as_tensor(np.where(np.isnan(values), np.inf, values).astype(np.float32))
        self.residual_values = (
            torch.zeros(rows) if residual == "none" else torch.as_tensor(table.numpy(residual).astype(np.float32))
        )
        self.features = torch.as_tensor(
            np.stack([table.numpy(c).astype(np.float32) for c in FEATURE_COLUMNS], axis=1).reshape(rows, 4)
        )
        self.states = table.column("state")
        self.goals = table.column("goal")
        self.instance_names = table.column("instance")
        self.problems = [str(table.root / p) for p in table.column("problem")]
        self.domain = table.domain

    def __len__(self) -> int:
        return len(self.h_star)

    def __getitem__(self, index: int) -> dict:
        return {
            "h_star": self.h_star[index],
            "lower": self.lower[index],
            "upper": self.upper[index],
            "residual": self.residual_values[index],
            "features": self.features[index],
            "state": self.states[index],
            "goal": self.goals[index],
            "instance": self.instance_names[index],
            "problem": self.problems[index],
            "domain": self.domain,
        }

    def instances(self) -> list[str]:
        return list(dict.fromkeys(self.instance_names))

    collate = staticmethod(lambda batch: collate(batch))


def collate(batch: Sequence[dict]) -> dict:
    """Stack the tensors of a list of items; keep lists for the rest (states differ in length)."""
    out: dict = {}
    for key in batch[0]:
        values = [item[key] for item in batch]
        out[key] = torch.stack(values) if isinstance(values[0], torch.Tensor) else values
    return out
