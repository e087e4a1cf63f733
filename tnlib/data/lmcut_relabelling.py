"""A dataset's ``lmcut`` column set to Fast Downward's LM-cut: the lower bound l the paper's labels hold.

The paper's authors labelled every state with Fast Downward's LM-cut; tnlib's own LM-cut breaks ties between
equally costly landmarks in another order, and on visitall it is markedly weaker (benchmarks/
compare_lmcut_fast_downward.py). :func:`relabel_lmcut` rewrites a finished split's ``lmcut`` column, problem by
problem, with Fast Downward's values (:mod:`tnlib.planning.fast_downward_states`: each problem translated once,
each state written into the translated task), and records how in the split's manifest entry (:data:`LMCUT_LABELS_RECORD`).

What it checks, stopping with a :class:`LabelError` before anything is written:

* a sample of each split's states (``check_states``, spread over its problems) evaluated again the authors' way
  -- each state written as a problem of its own and translated by itself -- gives the same values;
* every value lies between h_max and h*: ``hmax <= lmcut <= h_star`` (LM-cut is admissible and dominates h_max;
  the table's h_max is tnlib's, which equals Fast Downward's).

Each split is written whole (atomically) once its values are in, with its manifest records (the table's checksum,
and the train-pair records' checksums of it: its states and goals are unchanged), so the dataset verifies between
any two splits and an interrupted relabelling keeps the splits it finished; run again, it skips a split whose
record names the same Fast Downward and goes on with the rest.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from tnlib.data.labels import check_fast_downward_lmcut
from tnlib.data.manifest_writing import write_manifest
from tnlib.data.schema import (ALL_SPLITS, FAST_DOWNWARD_LMCUT, LMCUT_LABELS_RECORD, MANIFEST, MANIFEST_LOCK,
                               split_table_bytes)
from tnlib.data.train_pairs import RECORD as TRAIN_PAIRS_RECORD
from tnlib.errors import DatasetError, LabelError
from tnlib.files import atomic_write_bytes, locked, read_json, sha256_file
from tnlib.planning.fast_downward import fast_downward_version, fd_heuristic_value
from tnlib.planning.fast_downward_states import LMCUT, fd_state_values, state_problem_text, translate_once
from tnlib.planning.pddl import read_pddl_text
from tnlib.progress import progress as progress_display

# States per split evaluated again one problem a state (about 0.17 s each, against 0.015 s the fast way).
CHECK_STATES = 20


def relabel_lmcut(root: str | os.PathLike, domains: list[str] | None = None, splits: list[str] | None = None,
                  check_states: int = CHECK_STATES, progress: bool = True) -> dict[str, dict[str, dict]]:
    """Set the ``lmcut`` column of each finished split of ``domains`` (all by default) to Fast Downward's LM-cut.
    Returns ``{domain: {split: record}}`` for the splits it relabelled (a split already relabelled by this Fast
    Downward is left as it is, and not returned)."""
    root = Path(root)
    if not (root / MANIFEST).is_file():
        raise DatasetError(f"{root}: no {MANIFEST}; generate a dataset with `tnlib data generate`")
    top = read_json(root / MANIFEST)
    version = fast_downward_version()
    done: dict[str, dict[str, dict]] = {}
    for domain in domains or list(top["domains"]):
        if domain not in top["domains"]:
            raise DatasetError(f"domain {domain!r} is not in {root} (it has {', '.join(top['domains']) or 'none'})")
        manifest = read_json(root / domain / MANIFEST)
        for split in [s for s in ALL_SPLITS if s in manifest["splits"] and (splits is None or s in splits)]:
            if _holds_fast_downwards(manifest, split, version):
                continue
            record = _relabel_split(root, domain, split, manifest["splits"][split]["table"], check_states, progress)
            _record_split(root, domain, split, record)
            done.setdefault(domain, {})[split] = record
            manifest = read_json(root / domain / MANIFEST)
    return done


def _holds_fast_downwards(manifest: dict, split: str, version: str) -> bool:
    """Whether the split's column is this Fast Downward's LM-cut already: relabelled by it, or made by a profile
    that labels with it (its settings' ``lmcut``) under it."""
    entry = manifest["splits"][split]
    if entry.get(LMCUT_LABELS_RECORD, {}).get("fast_downward") == version:
        return True
    return entry["settings"].get("lmcut") == FAST_DOWNWARD_LMCUT and manifest.get("fast_downward") == version


def _relabel_split(root: Path, domain: str, split: str, table_name: str, check_states: int, progress: bool) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tnlib.data.schema import arrow_schema

    started = time.perf_counter()
    path = root / domain / table_name
    table = pq.read_table(path, schema=arrow_schema())
    problems = table.column("problem").to_pylist()
    states = table.column("state").to_pylist()
    by_problem: dict[str, list[int]] = {}
    for i, problem in enumerate(problems):
        by_problem.setdefault(problem, []).append(i)
    domain_path = root / domain / "domain.pddl"
    values = np.empty(len(problems))
    bar = progress_display(len(problems), f"{domain}/{split} LM-cut by Fast Downward", unit="states",
                           disable=not progress)
    try:
        for problem, rows in by_problem.items():
            sas = translate_once(domain_path, root / problem)
            values[rows] = fd_state_values(sas, [states[i] for i in rows], LMCUT)
            bar.update(len(rows))
    finally:
        bar.close()
    checked = _check_one_by_one(root, domain_path, problems, states, values, check_states)
    check_fast_downward_lmcut(values, table.column("hmax").to_numpy(), table.column("h_star").to_numpy(),
                              f"{domain}/{split} row", after="; nothing was written")
    before = table.column("lmcut").to_numpy()
    index = table.schema.get_field_index("lmcut")
    table = table.set_column(index, "lmcut", pa.array(values, type=pa.float64()))
    atomic_write_bytes(path, split_table_bytes(table, split))
    return {
        "fast_downward": fast_downward_version(),
        "heuristic": LMCUT,
        "how": "each problem translated once, each state written into the translated task's initial state; "
               "astar(lmcut(), bound=0) on it",
        "states": len(problems),
        "changed": int(np.sum(before != values)),
        "raised": int(np.sum(values > before)),
        "checked_one_by_one": checked,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _check_one_by_one(root: Path, domain_path: Path, problems: list[str], states: list[list[str]],
                      values: np.ndarray, count: int) -> int:
    """Evaluate ``count`` rows, evenly spread, again with each state a problem of its own (the authors' way);
    a LabelError on the first that differs. The number checked."""
    import tempfile

    rows = sorted(set(np.linspace(0, len(problems) - 1, num=min(count, len(problems))).astype(int).tolist()))
    with tempfile.TemporaryDirectory(prefix="tnlib-relabel-") as tmp:
        for i in rows:
            state_file = Path(tmp) / "state.pddl"
            state_file.write_text(state_problem_text(read_pddl_text(root / problems[i]), states[i]))
            alone = fd_heuristic_value(domain_path, state_file, LMCUT)
            if alone != values[i]:
                raise LabelError(f"{problems[i]}, row {i}: Fast Downward's LM-cut is {values[i]:g} with the state "
                                 f"written into the problem's translated task and {alone} with the state translated "
                                 "as a problem of its own; nothing was written")
    return len(rows)


def _record_split(root: Path, domain: str, split: str, record: dict) -> None:
    """The record in the split's manifest entry, the table's new checksum, the domain manifest's in the root's."""
    with locked(root / MANIFEST_LOCK):
        path = root / domain / MANIFEST
        manifest = read_json(path)
        entry = manifest["splits"][split]
        entry[LMCUT_LABELS_RECORD] = record
        # the settings a split is made under say whose LM-cut it holds (a profile's `lmcut`), as generation records
        entry["settings"]["lmcut"] = FAST_DOWNWARD_LMCUT
        checksum = sha256_file(root / domain / entry["table"])
        manifest["files"][f"{domain}/{entry['table']}"] = checksum
        # The train-pair records name the tables they were made from; the states and goals they key are unchanged.
        for name, other in manifest["splits"].items():
            pairs = other.get(TRAIN_PAIRS_RECORD)
            if pairs is not None and name == split:
                pairs["table_sha256"] = checksum
            if pairs is not None and split == "train":
                pairs["train_table_sha256"] = checksum
        write_manifest(path, manifest)
        top = read_json(root / MANIFEST)
        top["domains"][domain]["sha256"] = sha256_file(path)
        write_manifest(root / MANIFEST, top)


__all__ = ["CHECK_STATES", "relabel_lmcut"]
