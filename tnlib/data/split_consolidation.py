"""A split's consolidation: its final attempt selection and solve outcomes turned into the split's problem
files, Parquet table and manifest entry, then its work folder removed -- in that order, so that a crash leaves
the work folder to resume from (:mod:`tnlib.data.generation` describes the storage and the crash safety)."""
from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any

from tnlib.data.attempt_selection import SlotChoice
from tnlib.data.instance_keys import INSTANCE_KEY_SCHEME, keys_fingerprint
from tnlib.data.manifest_writing import update_manifests
from tnlib.data.profiles import slot_key
from tnlib.data.schema import TABLE_COLUMNS, WORK, arrow_schema, split_table_bytes
from tnlib.data.split_work import SplitPlan
from tnlib.files import atomic_write_bytes
from tnlib.planning.generators import generate
from tnlib.planning.pddl import is_compressed, pddl_file_bytes


def _slot_result(sp: SplitPlan, choice: SlotChoice) -> dict:
    """One slot's outcome in the form the table and manifest are built from."""
    params = dict(choice.params)
    result: dict[str, Any] = {
        "key": slot_key(sp.domain, choice.params, choice.seed_number),
        "params": params,
        "seed_number": choice.seed_number,
        "status": choice.status,
        "rejected": choice.rejected,
    }
    seeds = [r["seed"] for r in choice.rejected] + ([choice.draw.seed] if choice.draw is not None else [])
    result["seconds"] = round(sum(sp.outcomes[s]["worker_seconds"] for s in seeds if s in sp.outcomes), 4)
    if choice.status == "ok":
        d = choice.draw
        outcome = sp.outcomes[d.seed]
        result.update(
            attempt=d.attempt,
            seed=d.seed,
            instance=d.name,
            instance_key=d.key,
            problem_text=generate(sp.domain, d.seed, **params),
            **{k: outcome[k] for k in ("plan", "plan_length", "solve_seconds", "expansions", "solve_reused",
                                       "label_seconds", "label_h_sat_seconds", "records")},
        )
    return result


def consolidate_split(sp: SplitPlan) -> dict:
    """Turn a split's final selection and solve outcomes into its problem files, Parquet table and manifest
    entries; returns the split's counts."""
    results = [_slot_result(sp, choice) for choice in sp.selection.choices]
    instances, failures, columns = [], [], {name: [] for name, _ in TABLE_COLUMNS}
    rejected_by_status: dict[str, int] = {}
    seconds = {"slots": 0.0, "solve": 0.0, "label": 0.0}
    for result in results:
        for rejected in result["rejected"]:
            rejected_by_status[rejected["status"]] = rejected_by_status.get(rejected["status"], 0) + 1
        seconds["slots"] += result["seconds"]
        if result["status"] != "ok":
            failures.append({k: result[k] for k in ("params", "seed_number", "status", "rejected")})
            continue
        instance = _write_instance(sp, result, columns)
        seconds["solve"] += result["solve_seconds"]
        seconds["label"] += result["label_seconds"]
        instances.append(instance)
    states = _write_table(sp, columns)
    problems_dir = sp.domain_dir / "problems" / sp.split
    # Problem files of an earlier generation of this split that the new one does not keep.
    referenced = {Path(i["problem"]).name for i in instances}
    if problems_dir.is_dir():
        for path in problems_dir.iterdir():
            if path.name not in referenced:
                path.unlink()
    counts = {
        "slots": len(results),
        "instances": len(instances),
        "states": states,
        "failed": len(failures),
        "retried": sum(1 for i in instances if i["rejected"]),
        "rejected_attempts": dict(sorted(rejected_by_status.items())),
        "duplicates_rejected": rejected_by_status.get("duplicate", 0),
        # slots of exhausted cells (counted in failed too)
        "unfilled": sum(1 for r in results if r["status"] in ("exhausted", "skipped")),
        "out_of_reach": sum(1 for r in results if r["status"] == "out_of_reach"),  # (counted in failed too)
        "solves_reused": sum(1 for i in instances if i["solve_reused"]),
    }
    update_manifests(sp, _manifest_entry(sp, counts, seconds, instances, failures))
    shutil.rmtree(sp.work_dir)
    with contextlib.suppress(OSError):
        (sp.domain_dir / WORK).rmdir()  # only when no other split is in progress
    return counts


def _write_instance(sp: SplitPlan, result: dict, columns: dict[str, list]) -> dict:
    """Write a kept slot's problem file and add its states to the table's ``columns``; its manifest record."""
    problem = sp.grid.problem_file(sp.domain, sp.split, result["instance"], result["params"])
    atomic_write_bytes(sp.root / problem, pddl_file_bytes(result["problem_text"], is_compressed(problem)))
    for record in result["records"]:
        columns["domain"].append(sp.domain)
        columns["split"].append(sp.split)
        columns["instance"].append(result["instance"])
        columns["problem"].append(problem)
        for name, value in record.items():
            columns[name].append(value)
    return {
        "instance": result["instance"],
        "instance_key": result["instance_key"],
        "params": result["params"],
        "seed_number": result["seed_number"],
        "seed": result["seed"],
        "attempt": result["attempt"],
        "plan_length": result["plan_length"],
        "solve_seconds": result["solve_seconds"],
        "solve_reused": result["solve_reused"],
        "expansions": result["expansions"],
        "label_seconds": result["label_seconds"],
        "problem": problem,
        "plan": result["plan"],
        "rejected": result["rejected"],
    }


def _write_table(sp: SplitPlan, columns: dict[str, list]) -> int:
    """Write the split's Parquet table (zstd: tnlib.data.schema.split_table_bytes); its number of rows."""
    import pyarrow as pa

    table = pa.table(columns, schema=arrow_schema())
    atomic_write_bytes(sp.domain_dir / f"{sp.split}.parquet", split_table_bytes(table, sp.split))
    return table.num_rows


def _manifest_entry(sp: SplitPlan, counts: dict, seconds: dict[str, float], instances: list[dict],
                    failures: list[dict]) -> dict:
    """The split's entry in its domain manifest."""
    earlier_keys: dict[str, list[str]] = {split: [] for split in sp.earlier}
    for key, owner in (sp.taken or {}).items():
        split = owner.split("/", 1)[0]
        if split in earlier_keys:
            earlier_keys[split].append(key)
    return {
        "table": f"{sp.split}.parquet",
        "settings": sp.settings,
        "counts": counts,
        "seconds": {"slots": round(seconds["slots"], 2), "solve": round(seconds["solve"], 2),
                    "label": round(seconds["label"], 2), "keys": round(sp.draw_seconds, 2)},
        # what this split was kept apart from, and where it ran out of distinct instances
        "instance_keys": {
            "scheme": INSTANCE_KEY_SCHEME,
            "disjoint_from": {split: keys_fingerprint(keys) for split, keys in earlier_keys.items()},
        },
        "exhausted_cells": sp.selection.exhausted_cells(),
        # cells given up at this split's limits (settings.time_limit / memory_limit_mb), with the attempts that hit them
        "out_of_reach_cells": sp.selection.out_of_reach_cells(),
        "instances": instances,
        "failures": failures,
    }


__all__ = ["consolidate_split"]
