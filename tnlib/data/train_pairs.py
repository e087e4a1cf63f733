"""Rows that repeat a training example: which val, test and plan rows equal a train (state, goal) pair.

The splits hold distinct instances (:mod:`tnlib.data.instance_keys`), but different instances pass through equal
states: a val instance's later states are often a train instance's later states with the objects renamed (in
``data/small``, 235 of ferry's 352 val rows, 97 of gripper's 126). To every model in tnlib such a row is a
training example (same input up to renaming, same h*), so a validation MSE over it rewards memorising train.
Model selection therefore uses only the val rows whose (state, goal) key
(:func:`tnlib.data.instance_keys.state_goal_key`) is not the key of any train row of the same domain.

The rule compares with the *whole* train split, not with the instances a run subsamples from it (the paper's
400): one subset for every run and seed, computed once per dataset, and safe for any subsample. The test and plan
splits get the same record, as information (the data card shows it; evaluation uses every test row, as the paper
does).

Each non-train split's manifest entry holds it under ``train_pairs``: the key scheme, the sha256 of the train
table and of the split's table it was computed from, ``rows``, ``equal_to_train`` and ``kept`` (rows minus
equal), and ``steps_equal_to_train`` (instance -> the plan steps of its rows that equal a train pair). Loading the
subset (:meth:`tnlib.data.loading.StateTable.without_train_pairs`) reads only that; ``tnlib data verify``
recomputes it; ``tnlib data train-pairs`` (and the end of ``tnlib data generate``) writes it, through
:mod:`tnlib.data.train_pairs_writing` (this module only computes and reads, so readers may import it).

Keying a row costs about a millisecond, so only rows that could match are keyed: a pair's key determines its
:func:`~tnlib.data.instance_keys.state_goal_signature` (object types and atoms per predicate, counted), and only
rows whose signature occurs on both sides are keyed (test and plan instances are larger than train's, so they
rarely are).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tnlib.data.instance_keys import problem_from_text, state_goal_key, state_goal_signature
from tnlib.data.schema import ALL_SPLITS, MANIFEST
from tnlib.planning.pddl import read_pddl_text
from tnlib.errors import DatasetError, InstanceKeyError
from tnlib.files import read_json

# Stored verbatim in every record (train_pairs.scheme): a new way of keying gets a new text.
PAIR_KEY_SCHEME = (
    "state_goal_key = instance_key of the problem with the row's state as initial atoms and its goal as goal "
    "(objects and types from the problem file); a row equals a train pair when its key is the key of any row of "
    "the domain's whole train split (tnlib.data.train_pairs, v1)"
)
RECORD = "train_pairs"  # the manifest entry's field
COMMAND = "tnlib data train-pairs"


def command_hint(root: str | os.PathLike) -> str:
    """The command that (re)writes the records of a dataset root, for messages."""
    return f"`{COMMAND} {root}`"


@dataclass
class _Row:
    instance: str
    step: int
    problem: str
    state: list[str]
    goal: list[str]


def _read_rows(root: Path, domain: str, split: str) -> list[_Row]:
    import pyarrow.parquet as pq

    table = pq.read_table(root / domain / f"{split}.parquet",
                          columns=["instance", "step", "problem", "state", "goal"]).to_pydict()
    return [_Row(*values) for values in zip(table["instance"], table["step"], table["problem"], table["state"],
                                            table["goal"])]


class _Keyer:
    """Signatures and keys of rows, each problem file parsed once."""

    def __init__(self, root: Path):
        self.root = root
        self.problems: dict = {}
        self.keys: dict = {}  # rows with the same atom strings and objects (often: equal names) are keyed once

    def problem(self, relative: str):
        if relative not in self.problems:
            self.problems[relative] = problem_from_text(read_pddl_text(self.root / relative))
        return self.problems[relative]

    def signature(self, row: _Row) -> tuple:
        return state_goal_signature(self.problem(row.problem), row.state, row.goal)

    def key(self, row: _Row) -> str:
        problem = self.problem(row.problem)
        exact = (problem.objects, problem.types, tuple(sorted(row.state)), tuple(sorted(row.goal)))
        if exact not in self.keys:
            self.keys[exact] = state_goal_key(problem, row.state, row.goal)
        return self.keys[exact]


def compute_train_pairs(root: str | os.PathLike, domain: str, splits: list[str] | None = None) -> dict[str, dict]:
    """Per non-train split of a domain (``splits``: those present, by default): ``rows``, ``equal_to_train``,
    ``kept`` and ``steps_equal_to_train``, computed from the tables and problem files (not the manifest)."""
    root = Path(root)
    manifest = read_json(root / domain / MANIFEST)
    present = [s for s in ALL_SPLITS if s in manifest["splits"]]
    if "train" not in present:
        return {}
    others = [s for s in present if s != "train" and (splits is None or s in splits)]
    keyer = _Keyer(root)
    train = _read_rows(root, domain, "train")
    rows = {s: _read_rows(root, domain, s) for s in others}
    signatures = {s: [keyer.signature(r) for r in rows[s]] for s in others}
    wanted = set().union(*signatures.values()) if signatures else set()
    train_signatures = set()
    train_keys = set()
    for row in train:
        signature = keyer.signature(row)
        train_signatures.add(signature)
        if signature in wanted:
            train_keys.add(keyer.key(row))
    out = {}
    for s in others:
        steps: dict[str, list[int]] = {}
        for row, signature in zip(rows[s], signatures[s]):
            if signature in train_signatures and keyer.key(row) in train_keys:
                steps.setdefault(row.instance, []).append(row.step)
        equal = sum(len(v) for v in steps.values())
        out[s] = {"rows": len(rows[s]), "equal_to_train": equal, "kept": len(rows[s]) - equal,
                  "steps_equal_to_train": {name: sorted(v) for name, v in sorted(steps.items())}}
    return out


def stale_records(root: str | os.PathLike, domain: str, manifest: dict, split: str | None = None,
                  missing: bool = True) -> list[str]:
    """What is wrong with a domain's records without keying anything: missing (with ``missing``), another
    scheme, made for another train table or another table of the split, counts that do not add up."""
    splits = manifest.get("splits", {})
    if "train" not in splits:
        return []
    files = manifest.get("files", {})
    fix = f"; run {command_hint(root)}"
    problems = []
    for s, entry in splits.items():
        if s == "train" or (split is not None and s != split):
            continue
        record = entry.get(RECORD)
        where = f"{domain}/{s}"
        if record is None:
            if missing:
                problems.append(f"{where}: the manifest does not record which rows equal a train (state, goal) "
                                f"pair{fix}")
            continue
        if record.get("scheme") != PAIR_KEY_SCHEME:
            problems.append(f"{where}: its train-pair record was made by another key scheme{fix}")
        elif record.get("train_table_sha256") != files.get(f"{domain}/{splits['train']['table']}"):
            problems.append(f"{where}: its train-pair record was made for another train table (train remade "
                            f"since){fix}")
        elif record.get("table_sha256") != files.get(f"{domain}/{entry['table']}"):
            problems.append(f"{where}: its train-pair record was made for another {s} table{fix}")
        else:
            marked = sum(len(v) for v in record["steps_equal_to_train"].values())
            rows = entry.get("counts", {}).get("states")
            if (record["rows"] != rows or record["equal_to_train"] != marked
                    or record["kept"] != record["rows"] - record["equal_to_train"]):
                problems.append(f"{where}: its train-pair record does not add up (rows {record['rows']} of "
                                f"{rows}, equal_to_train {record['equal_to_train']} with {marked} rows marked, kept "
                                f"{record['kept']}){fix}")
    return problems


def check_train_pairs(root: str | os.PathLike, domain: str, manifest: dict) -> list[str]:
    """Recompute every record of a domain and compare with the manifest: one line per split that differs
    (after :func:`stale_records`' checks)."""
    problems = stale_records(root, domain, manifest)
    if problems:
        return problems
    try:
        computed = compute_train_pairs(root, domain)
    except (OSError, InstanceKeyError) as err:
        return [f"{domain}: cannot key its rows for the train-pair check ({err})"]
    for split, counts in computed.items():
        record = manifest["splits"][split][RECORD]
        if record["steps_equal_to_train"] == counts["steps_equal_to_train"]:
            continue
        stored = {(i, t) for i, steps in record["steps_equal_to_train"].items() for t in steps}
        found = {(i, t) for i, steps in counts["steps_equal_to_train"].items() for t in steps}
        example = sorted(stored ^ found)[0]
        problems.append(
            f"{domain}/{split}: {counts['equal_to_train']} rows equal a train (state, goal) pair up to renaming, "
            f"the manifest marks {len(stored)} ({len(stored ^ found)} differ, e.g. {example[0]} step {example[1]} "
            f"{'marked but not equal' if example in stored else 'equal but not marked'}); run "
            f"{command_hint(root)}"
        )
    return problems


def train_pair_record(root: str | os.PathLike, domain: str, split: str) -> dict:
    """A split's record from the manifest (counts and ``steps_equal_to_train``); raises :class:`DatasetError`
    when it is missing or stale, naming the command that writes it."""
    root = Path(root)
    if split == "train":
        raise DatasetError(f"{domain}/train: its rows are the train pairs; model selection uses val (or test)")
    manifest = read_json(root / domain / MANIFEST)
    if split not in manifest.get("splits", {}):
        raise DatasetError(f"{domain}: split {split!r} was not generated")
    problems = stale_records(root, domain, manifest, split)
    if problems:
        raise DatasetError(problems[0])
    record = manifest["splits"][split].get(RECORD)
    if record is None:
        raise DatasetError(f"{domain}: no train split in {root}, so no rows to tell {split}'s apart from")
    return record


def steps_equal_to_train(root: str | os.PathLike, domain: str, split: str) -> dict[str, set[int]]:
    """instance -> steps of the split's rows that equal a train (state, goal) pair (:func:`train_pair_record`)."""
    record = train_pair_record(root, domain, split)
    return {name: set(steps) for name, steps in record["steps_equal_to_train"].items()}


__all__ = [
    "COMMAND",
    "PAIR_KEY_SCHEME",
    "RECORD",
    "check_train_pairs",
    "compute_train_pairs",
    "stale_records",
    "steps_equal_to_train",
    "train_pair_record",
]
