"""Filling the empty slots of a finished split with a domain's exact solver, leaving its instances as they are.

Two kinds of slot are empty. A split made with Fast Downward's A* under ``out_of_reach_after`` leaves the slots of
cells A* could not solve within its limits empty (``failures`` with status ``out_of_reach``). And a split whose
profile's grid holds cells the split was not made with (the paper profile's ``test-grid``) lacks those cells' slots
altogether. Where the domain has an exact solver (:mod:`tnlib.planning.optimal_costs`),
:func:`fill_empty_slots` gives each such slot the instance the generator draws for it -- its attempts in order from
0, the same draws the A* run made or would have made next, or a generation with the whole grid would make --
keeping the first that is not trivial and repeats no instance the split must not share (the split's own, and those
of the splits it is disjoint from or that are disjoint from it: :data:`tnlib.data.schema.DISJOINT_FROM`; so a
test-grid slot keeps the test split's draw, as generation does), solved by the exact solver and labelled as
generation labels (:func:`tnlib.data.attempt_solving.run_attempt`). Each labelled attempt is kept under
``ROOT/DOMAIN/.work/fill/SPLIT/`` until the split is rewritten, so an interrupted fill resumes where it stopped when
run again. An exact solver never fails a solvable instance, so every such slot gets its instance (a slot whose
attempts are all trivial or repeats stops the fill with a DatasetError), and a split made from scratch with the
``exact`` solver would hold the same instance there.

Every instance the split had keeps its problem file, manifest record and table rows, byte for byte; the table is
rewritten with the new instances' rows at their slots (slot order, as generation writes it). Each new instance's
record says ``"solver": "exact"``, and where A* had given its slot up, carries the attempts A* rejected
(``fast_downward_rejected``); the split's ``exact_fill`` names the solver, the slots filled, their times, the cells
given up at A*'s limits that the fill completed (no longer under ``out_of_reach_cells``) and the cells it added
(``added_cells``), summed over every fill of the split. A new instance's problem file is stored gzip-compressed
where the profile's grid says its cell is (:attr:`tnlib.data.profiles.SplitGrid.compressed`; the record's
``problem`` then ends ``.pddl.gz``). The split's ``settings`` are left as they were -- they
still describe the run that made it -- but for the grid, which becomes the profile's grid once its added cells are
in (what the split's slots now are, and what a later ``generate`` compares with). The later splits' records of what
they are disjoint from and the train-pair records are brought up to date
(:func:`tnlib.data.train_pairs_writing.record_train_pairs`).
"""
from __future__ import annotations

import contextlib
import shutil
import time
from pathlib import Path

from tnlib.data.exact_solves import split_solver
from tnlib.data.attempt_solving import AttemptJob, run_attempt
from tnlib.data.instance_keys import instance_key, keys_fingerprint, problem_from_text
from tnlib.data.profiles import SplitGrid, generator_seed, get_profile
from tnlib.data.manifest_writing import write_manifest
from tnlib.data.schema import (ALL_SPLITS, DISJOINT_FROM, EXACT_SOLVER, MANIFEST, MANIFEST_LOCK, TABLE_COLUMNS,
                               TNLIB_LMCUT, WORK, arrow_schema, split_table_bytes)
from tnlib.data.train_pairs_writing import record_train_pairs
from tnlib.errors import DatasetError
from tnlib.files import atomic_write_bytes, atomic_write_json, locked, read_json, sha256_file
from tnlib.planning.generators import DOMAIN_PARAMETERS, generate, problem_name
from tnlib.planning.pddl import is_compressed, pddl_file_bytes

# Where a fill keeps each solved and labelled attempt until the split is rewritten (under ROOT/DOMAIN/WORK): a
# rerun after an interruption reads them back instead of labelling again.
FILL_WORK = "fill"


def _taken_keys(manifest: dict, split: str) -> dict[str, str]:
    """Instance key -> "split/instance" over the splits of a domain manifest that ``split`` shares no instance with:
    itself, those it is disjoint from and those disjoint from it."""
    apart = {split, *DISJOINT_FROM[split]} | {s for s, earlier in DISJOINT_FROM.items() if split in earlier}
    return {inst["instance_key"]: f"{name}/{inst['instance']}"
            for name, entry in manifest["splits"].items() if name in apart for inst in entry["instances"]}


def _slot_of(record: dict) -> tuple[tuple, int]:
    return tuple(record["params"].values()), record["seed_number"]


def _empty_slots(domain: str, split: str, entry: dict) -> tuple[list[dict], list[dict]]:
    """The split's slots to fill: those A* left empty as out of reach (its failures), and those of the profile's
    grid the split does not hold at all (as failure-shaped records with no status and nothing rejected)."""
    out_of_reach = [f for f in entry["failures"] if f["status"] == "out_of_reach"]
    held = {_slot_of(r) for r in entry["instances"] + entry["failures"]}
    grid = get_profile(entry["settings"]["profile"]).grid(domain, split)
    added = [{"params": dict(params), "seed_number": n, "rejected": []}
             for params, n in grid.slots() if (tuple(v for _name, v in params), n) not in held]
    return out_of_reach, added


def _fill_slot(domain: str, split: str, settings: dict, failure: dict, taken: dict[str, str], work: Path,
               grid: SplitGrid) -> tuple[dict, list]:
    """The instance record and table rows of one empty slot: its first draw that is neither trivial nor a repeat,
    solved exactly and labelled (the outcome kept in ``work``, one file per seed, for a rerun to read back)."""
    params = tuple((name, failure["params"][name]) for name in DOMAIN_PARAMETERS[domain])
    rejected: list[dict] = []
    for attempt in range(settings["max_attempts"]):
        seed = generator_seed(split, domain, params, failure["seed_number"], attempt)
        problem = problem_from_text(generate(domain, seed, **dict(params)))
        key = instance_key(problem)
        if problem.trivial:
            rejected.append({"seed": seed, "status": "trivial"})
            continue
        if key in taken:
            rejected.append({"seed": seed, "status": "duplicate", "of": taken[key]})
            continue
        kept = work / f"{seed}.json"
        if kept.is_file():
            outcome = read_json(kept)
        else:
            outcome = run_attempt(AttemptJob(domain, split, params, failure["seed_number"], attempt,
                                             settings["time_limit"], settings["memory_limit_mb"],
                                             settings["sat_max_evaluations"], solver=EXACT_SOLVER,
                                             lmcut=settings.get("lmcut", TNLIB_LMCUT)))
            atomic_write_json(kept, outcome)
        if outcome["status"] != "solved":
            raise DatasetError(f"{domain}/{split}: the exact solver did not solve seed {seed} "
                               f"({outcome['status']}: {outcome.get('message', '')})")
        name = problem_name(domain, seed, **dict(params))
        taken[key] = f"{split}/{name}"
        record = {
            "instance": name,
            "instance_key": key,
            "params": dict(params),
            "seed_number": failure["seed_number"],
            "seed": seed,
            "attempt": attempt,
            "plan_length": outcome["plan_length"],
            "solve_seconds": outcome["solve_seconds"],
            "solve_reused": False,
            "expansions": None,
            "label_seconds": outcome["label_seconds"],
            "problem": grid.problem_file(domain, split, name, params),
            "plan": outcome["plan"],
            "rejected": rejected,
            "solver": EXACT_SOLVER,
        }
        if failure.get("status") == "out_of_reach":
            record["fast_downward_rejected"] = failure["rejected"]
        return record, outcome["records"]
    raise DatasetError(f"{domain}/{split}: slot {failure['params']} #{failure['seed_number']} drew no new "
                       f"instance in {settings['max_attempts']} attempts")


def _rows_by_instance(table) -> dict[str, object]:
    """A split table's rows per instance (slices, in table order)."""
    names = table.column("instance").to_pylist()
    spans: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        spans.setdefault(name, [i, i])[1] = i + 1
    return {name: table.slice(lo, hi - lo) for name, (lo, hi) in spans.items()}


def _new_rows(domain: str, split: str, record: dict, rows: list[dict]):
    import pyarrow as pa

    columns: dict[str, list] = {name: [] for name, _ in TABLE_COLUMNS}
    for row in rows:
        columns["domain"].append(domain)
        columns["split"].append(split)
        columns["instance"].append(record["instance"])
        columns["problem"].append(record["problem"])
        for name, value in row.items():
            columns[name].append(value)
    return pa.table(columns, schema=arrow_schema())


def _fill_split(root: Path, domain: str, split: str, manifest: dict, progress) -> dict | None:
    """Fills one split's empty slots in ``manifest`` (writing its problem files and table); this fill's record (the
    split's ``exact_fill`` sums it with earlier ones), None when it had no empty slot (nothing is written then)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    entry = manifest["splits"][split]
    settings = entry["settings"]
    out_of_reach, grown = _empty_slots(domain, split, entry)
    if not out_of_reach and not grown:
        return None
    grid = get_profile(settings["profile"]).grid(domain, split)
    order = {(tuple(v for _name, v in params), n): i for i, (params, n) in enumerate(grid.slots())}
    outside = [r for r in entry["instances"] if _slot_of(r) not in order]
    if outside:
        raise DatasetError(f"{domain}/{split}: the profile's grid has no slot for {outside[0]['instance']}; a fill only "
                           f"adds cells to a split's grid")
    taken = _taken_keys(manifest, split)
    started = time.perf_counter()
    added: list[tuple[dict, object]] = []
    work = root / domain / WORK / FILL_WORK / split
    work.mkdir(parents=True, exist_ok=True)
    for failure in out_of_reach + grown:
        record, rows = _fill_slot(domain, split, settings, failure, taken, work, grid)
        added.append((record, _new_rows(domain, split, record, rows)))
        progress(f"{domain}/{split} {record['instance']}: h* {record['plan_length']}, exact solve "
                 f"{record['solve_seconds']:.3f} s, labels {record['label_seconds']:.1f} s")
    for record, _rows in added:
        text = generate(domain, record["seed"], **record["params"])
        atomic_write_bytes(root / record["problem"], pddl_file_bytes(text, is_compressed(record["problem"])))
    table = pq.read_table(root / domain / entry["table"]).replace_schema_metadata(None)
    pieces = _rows_by_instance(table)
    pieces.update({record["instance"]: rows for record, rows in added})
    instances = sorted(entry["instances"] + [record for record, _rows in added], key=lambda i: order[_slot_of(i)])
    table = pa.concat_tables([pieces[i["instance"]] for i in instances])
    atomic_write_bytes(root / domain / entry["table"], split_table_bytes(table, split))

    filled = {_slot_of(f) for f in out_of_reach}
    entry["instances"] = instances
    entry["failures"] = [f for f in entry["failures"] if _slot_of(f) not in filled]
    if grown:
        settings["grid"] = grid.describe()
    new = [record for record, _rows in added]
    counts = entry["counts"]
    counts.update(slots=counts["slots"] + len(grown), instances=len(instances), states=table.num_rows,
                  failed=len(entry["failures"]), retried=counts["retried"] + sum(1 for r in new if r["rejected"]))
    if out_of_reach:
        counts["out_of_reach"] -= len(out_of_reach)
    for record in new:
        for rejected in record["rejected"]:
            counts["rejected_attempts"][rejected["status"]] = counts["rejected_attempts"].get(rejected["status"], 0) + 1
    counts["duplicates_rejected"] = counts["rejected_attempts"].get("duplicate", 0)
    empty_cells = {tuple(f["params"].values()) for f in entry["failures"] if f["status"] == "out_of_reach"}
    given_up = entry.get("out_of_reach_cells", [])  # (a split made without the rule has no record)
    completed = [c for c in given_up if tuple(c["params"].values()) not in empty_cells]
    if out_of_reach:
        entry["out_of_reach_cells"] = [c for c in given_up if c not in completed]
    solve = sum(r["solve_seconds"] for r in new)
    label = sum(r["label_seconds"] for r in new)
    entry["seconds"]["solve"] = round(entry["seconds"]["solve"] + solve, 2)
    entry["seconds"]["label"] = round(entry["seconds"]["label"] + label, 2)
    cells = list({tuple(f["params"].items()): f["params"] for f in grown}.values())
    fill = {
        "solver": EXACT_SOLVER,
        "slots": len(new),
        "seconds": {"wall": round(time.perf_counter() - started, 2), "solve": round(solve, 4),
                    "label": round(label, 2)},
        "completed_out_of_reach_cells": completed,
        **({"added_cells": cells} if cells else {}),
    }
    entry["exact_fill"] = _summed_fill(entry.get("exact_fill"), fill)
    return fill


def _summed_fill(before: dict | None, fill: dict) -> dict:
    """A split's ``exact_fill`` record after one more fill: slots and seconds summed, cells listed in fill order."""
    if before is None:
        return fill
    summed = dict(before, slots=before["slots"] + fill["slots"],
                  seconds={k: round(before["seconds"][k] + fill["seconds"][k], 4) for k in fill["seconds"]})
    for cells in ("completed_out_of_reach_cells", "added_cells"):
        if before.get(cells) or fill.get(cells):
            summed[cells] = before.get(cells, []) + fill.get(cells, [])
    return summed


def fill_empty_slots(root: str | Path, domain: str, splits: list[str], progress=print) -> dict[str, dict]:
    """Gives every empty slot of ``splits`` (finished splits of ``domain`` in the dataset ``root``) -- out of reach
    at A*'s limits, or in a cell the profile's grid has gained since -- its instance, solved by the domain's exact
    solver (see the module docstring); returns this fill's record of each split that had one (what the split's
    ``exact_fill`` adds). A
    DatasetError where the domain has no exact solver."""
    root = Path(root)
    if split_solver(domain, EXACT_SOLVER) != EXACT_SOLVER:
        raise DatasetError(f"{domain!r} has no exact solver to fill slots with")
    path = root / domain / MANIFEST
    with locked(root / MANIFEST_LOCK):
        manifest = read_json(path)
        missing = [s for s in splits if s not in manifest["splits"]]
        if missing:
            raise DatasetError(f"{root}/{domain} has no {', '.join(missing)} split to fill")
        done = {}
        for split in (s for s in ALL_SPLITS if s in splits):
            record = _fill_split(root, domain, split, manifest, progress)
            if record is not None:
                done[split] = record
        by_split = {s: [i["instance_key"] for i in e["instances"]] for s, e in manifest["splits"].items()}
        for split, entry in manifest["splits"].items():
            record = entry["instance_keys"]["disjoint_from"]
            for earlier in record:
                if earlier in DISJOINT_FROM.get(split, ()):
                    record[earlier] = keys_fingerprint(by_split[earlier])
        files = manifest["files"]
        for split in done:
            entry = manifest["splits"][split]
            files[f"{domain}/{entry['table']}"] = sha256_file(root / domain / entry["table"])
            for instance in entry["instances"]:
                files[instance["problem"]] = sha256_file(root / instance["problem"])
        manifest["files"] = dict(sorted(files.items()))
        write_manifest(path, manifest)
        top = read_json(root / MANIFEST)
        top["domains"][domain]["sha256"] = sha256_file(path)
        write_manifest(root / MANIFEST, top)
    record_train_pairs(root, [domain])
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(root / domain / WORK / FILL_WORK)
    with contextlib.suppress(OSError):
        (root / domain / WORK).rmdir()  # only when no generation is in progress
    return done


__all__ = ["fill_empty_slots"]
