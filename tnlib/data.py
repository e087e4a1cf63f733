"""Loading tnlib datasets: checked against their manifests, as tables or as torch datasets.

A dataset root (e.g. ``data/small``, made by ``tnlib data generate``; layout in :mod:`tnlib.datasets`) holds one
Parquet table per domain and split with one row per state on an instance's optimal plan:

============================  ==========================================================================
column                        meaning
============================  ==========================================================================
``domain``                    domain key (``blocksworld``, ``ferry``, ``gripper``, ``visitall``)
``split``                     ``train``, ``val``, ``test`` or ``plan``
``instance``                  problem name (unique in the dataset; encodes the generator seed)
``problem``                   problem PDDL path, relative to the dataset root
``step``                      position on the optimal plan (0 = initial state)
``plan_length``               length of the instance's optimal plan
``state``                     atoms true in the state, static ones included, lower case, sorted
``goal``                      the goal atoms, sorted
``h_star``                    optimal cost-to-go (``plan_length - step``)
``blind`` ... ``lmcut``       tnlib's blind, goal count, h_max, h_add, h_FF, LM-cut (float64)
``ff_ignored_deletes_total``  delete effects of h_FF's relaxed plan; ``..._mean``: per relaxed action
``h_sat``                     length of a GBFS(h_FF) plan from the state (an upper bound on h*), NaN if none
============================  ==========================================================================

:func:`load_split` returns a :class:`StateTable`; :class:`HeuristicDataset` turns one into per-state training
items. Loading verifies the manifest and sha256 checksums first and raises :class:`DatasetError` with a message
that names the file and the command that regenerates it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import torch

from tnlib.datasets import (
    DOMAINS,
    FORMAT,
    MANIFEST,
    SPLITS,
    DatasetError,
    arrow_schema,
    read_json,
    sha256_file,
)

FEATURE_COLUMNS = ("goalcount", "ff", "ff_ignored_deletes_total", "ff_ignored_deletes_mean")
LOWER_BOUNDS = ("lmcut", "hmax", "blind", "none")
RESIDUALS = ("ff", "lmcut", "none")
UPPER_BOUNDS = ("none", "h_sat")
DEFAULT_PROFILE = "small"

__all__ = [
    "DatasetError",
    "FEATURE_COLUMNS",
    "HeuristicDataset",
    "StateTable",
    "check_dataset",
    "collate",
    "dataset_root",
    "default_data_root",
    "find_datasets",
    "load_split",
    "verify_dataset",
]


def default_data_root() -> Path:
    """Where datasets live: ``$TNLIB_DATA`` when set, else ``<repo>/data``."""
    env = os.environ.get("TNLIB_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[1] / "data"


def _generate_hint(
    domain: str | None = None, profile: str = DEFAULT_PROFILE, split: str | None = None, force: bool = False
) -> str:
    command = f"tnlib data generate --domain {domain or 'all'} --profile {profile}"
    if split:
        command += f" --splits {split}"
    return f"`{command}{' --force' if force else ''}`"


def dataset_root(root: str | os.PathLike | None = None, profile: str = DEFAULT_PROFILE) -> Path:
    """The dataset root to read: ``root`` itself when it holds a manifest, else ``root/profile``
    (``root`` defaults to :func:`default_data_root`). Raises DatasetError when neither has one."""
    base = Path(root) if root is not None else default_data_root()
    for candidate in (base, base / profile):
        if (candidate / MANIFEST).is_file():
            return candidate
    raise DatasetError(
        f"no dataset at {base} (no {MANIFEST} there or in {base / profile}); generate it with "
        f"{_generate_hint(profile=profile)} (add --out {base} if that is not the default data root)"
    )


def find_datasets(folder: str | os.PathLike) -> list[Path]:
    """``folder`` when it is a dataset root, else its sub-folders that are."""
    folder = Path(folder)
    if (folder / MANIFEST).is_file():
        return [folder]
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if (p / MANIFEST).is_file())


# ---------------------------------------------------------------------------------------------------------------
# Verification


def _load_json(path: Path, problems: list[str], what: str) -> dict | None:
    if not path.is_file():
        problems.append(f"{what} missing: {path}")
        return None
    try:
        return read_json(path)
    except (OSError, ValueError) as err:
        problems.append(f"{what} unreadable ({err.__class__.__name__}: {err}): {path}")
        return None


def verify_dataset(
    root: str | os.PathLike, domain: str | None = None, split: str | None = None, deep: bool = True,
    duplicates: dict | None = None,
) -> list[str]:
    """Every problem found in a dataset root (empty list: all good).

    Checks the root and domain manifests, that every file they list exists with its sha256, that no unlisted
    table or problem file sits among them, (``deep``) each table's schema and row count, and that no instance
    occurs twice in a split or in two splits (:mod:`tnlib.instance_keys`: same initial state and goal up to
    renaming objects). ``domain`` and ``split`` restrict the checks to that part of the dataset (a split is
    checked against itself and the domain's earlier splits, with the keys the manifest stores); a whole-dataset
    check (neither given, ``deep``) recomputes every key from its problem file. ``duplicates``, when a dict, gets
    the duplicate counts per domain and split (:class:`tnlib.instance_keys.SplitDuplicates`).
    """
    root = Path(root)
    problems: list[str] = []
    top = _load_json(root / MANIFEST, problems, "dataset manifest")
    if top is None:
        return problems
    if top.get("format") != FORMAT:
        return [f"{root / MANIFEST}: not a tnlib dataset manifest (format {top.get('format')!r})"]
    profile = top.get("profile", DEFAULT_PROFILE)
    domains = top.get("domains", {})
    if domain is not None and domain not in domains:
        hint = _generate_hint(domain, profile)
        return [f"domain {domain!r} is not in this dataset (it has {', '.join(domains) or 'none'}); run {hint}"]
    for name, ref in domains.items():
        if domain is not None and name != domain:
            continue
        manifest_path = root / ref["manifest"]
        manifest = _load_json(manifest_path, problems, f"{name} manifest")
        if manifest is None:
            continue
        if sha256_file(manifest_path) != ref["sha256"]:
            problems.append(f"{manifest_path}: checksum differs from the dataset manifest (edited or corrupt)")
        splits = manifest.get("splits", {})
        if split is not None and split not in splits:
            problems.append(
                f"{name}: split {split!r} was not generated (has {', '.join(splits) or 'none'}); run "
                f"{_generate_hint(name, profile, split)}"
            )
            continue
        wanted = [split] if split is not None else list(splits)
        listed = manifest.get("files", {})
        for relative, digest in listed.items():
            if split is not None and not _in_split(relative, name, split):
                continue
            path = root / relative
            fix = _generate_hint(name, profile, _split_of(relative, name), force=True)
            if not path.is_file():
                problems.append(f"{relative}: missing (listed in {name}/{MANIFEST}); regenerate with {fix}")
            elif sha256_file(path) != digest:
                problems.append(f"{relative}: checksum mismatch (changed or corrupt); regenerate with {fix}")
        for relative in _files_on_disk(root, name):
            if relative not in listed and (split is None or _in_split(relative, name, split)):
                problems.append(f"{relative}: not listed in {name}/{MANIFEST} (a stray or foreign file)")
        if deep:
            for s in wanted:
                problems += _check_table(root, name, s, splits[s])
        # [instance keys] distinct within each split, disjoint across splits
        from tnlib.instance_keys import check_domain_instances

        found, counts = check_domain_instances(
            root, name, manifest, split, recompute=deep and domain is None and split is None,
            hint=lambda s, n=name: _generate_hint(n, profile, ",".join(_from(s, splits)), force=True),
        )
        problems += found
        if duplicates is not None:
            duplicates[name] = counts
    return problems


def _from(split: str, splits: dict) -> list[str]:
    """``split`` and the splits after it: what must be remade together (tnlib.datasets: later splits are made
    disjoint from earlier ones)."""
    order = [s for s in SPLITS if s in splits]
    return order[order.index(split):] if split in order else [split]


def _split_of(relative: str, domain: str) -> str | None:
    rest = relative[len(domain) + 1:]
    if rest.endswith(".parquet"):
        return rest[: -len(".parquet")]
    if rest.startswith("problems/"):
        return rest.split("/")[1]
    return None


def _in_split(relative: str, domain: str, split: str) -> bool:
    return relative == f"{domain}/domain.pddl" or _split_of(relative, domain) == split


def _files_on_disk(root: Path, domain: str) -> Iterator[str]:
    folder = root / domain
    if not folder.is_dir():
        return
    for path in folder.glob("*.parquet"):
        yield path.relative_to(root).as_posix()
    for path in (folder / "problems").glob("*/*.pddl"):
        yield path.relative_to(root).as_posix()


def _check_table(root: Path, domain: str, split: str, entry: dict) -> list[str]:
    import pyarrow.parquet as pq

    path = root / domain / entry["table"]
    if not path.is_file():
        return []  # reported as missing already
    try:
        metadata = pq.read_metadata(path)
        schema = pq.read_schema(path)
    except Exception as err:  # noqa: BLE001 - pyarrow raises several types for damaged files
        return [f"{path.relative_to(root)}: not a readable Parquet file ({err})"]
    problems = []
    expected = arrow_schema()
    if not schema.remove_metadata().equals(expected):
        problems.append(
            f"{path.relative_to(root)}: columns {schema.names} differ from the format's {expected.names}"
        )
    if metadata.num_rows != entry["counts"]["states"]:
        problems.append(
            f"{path.relative_to(root)}: {metadata.num_rows} rows, the manifest says {entry['counts']['states']}"
        )
    return problems


def check_dataset(root: str | os.PathLike, domain: str | None = None, split: str | None = None) -> None:
    """Raise :class:`DatasetError` listing every problem :func:`verify_dataset` finds."""
    problems = verify_dataset(root, domain, split)
    if problems:
        shown = "\n  ".join(problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise DatasetError(f"dataset {root} failed verification:\n  {shown}{more}")


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

    def problem_path(self, instance: str) -> Path:
        """Absolute path of an instance's problem file."""
        rows = self.select_instances([instance])
        return self.root / rows.table.column("problem")[0].as_py()


def load_split(
    root: str | os.PathLike | None, domain: str, split: str, verify: bool = True, profile: str = DEFAULT_PROFILE
) -> StateTable:
    """Load one domain and split. ``root`` is a dataset root, or a folder whose ``profile`` sub-folder is one
    (``None``: :func:`default_data_root`). With ``verify`` (the default) the manifests and the checksums of the
    split's files are checked first; any problem raises :class:`DatasetError`."""
    import pyarrow.parquet as pq

    if domain not in DOMAINS:
        raise DatasetError(f"unknown domain {domain!r}; choose from {', '.join(DOMAINS)}")
    if split not in SPLITS:
        raise DatasetError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
    base = dataset_root(root, profile)
    if verify:
        check_dataset(base, domain, split)
    path = base / domain / f"{split}.parquet"
    if not path.is_file():
        raise DatasetError(f"{path} missing; generate it with {_generate_hint(domain, profile, split)}")
    try:
        table = pq.read_table(path, schema=arrow_schema())
    except Exception as err:  # noqa: BLE001
        raise DatasetError(
            f"{path}: cannot read ({err}); regenerate with {_generate_hint(domain, profile, split, force=True)}"
        ) from None
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
    ``instances``: None for all, an int N for N instances drawn at random (seeded by ``seed``; the paper trains on
    400), or a list of instance names; ``goal_states=False`` leaves out each plan's last state (h* = 0).

    Each item is a dict: ``h_star``, ``lower``, ``upper``, ``residual`` (float32 scalar tensors), ``features``
    (float32 [4]: goalcount, ff, ignored deletes total, mean), ``state`` and ``goal`` (lists of atoms),
    ``instance``, ``problem`` (absolute path) and ``domain`` (str). Batch with :func:`collate`.
    """

    def __init__(
        self,
        table: StateTable,
        lower_bound: str = "lmcut",
        residual: str = "ff",
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
                if not 0 < instances <= len(names):
                    raise ValueError(
                        f"instances={instances}: {table.domain}/{table.split} has {len(names)} instances"
                    )
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
