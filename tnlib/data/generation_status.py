"""Where an unfinished dataset generation stands: read from its work folders, written nowhere.

``tnlib data status ROOT`` prints :func:`status_card`. The work folders belong to :mod:`tnlib.data.split_work`
(the attempt files, the split's settings, the attempt selection a resumed run starts from), so this module sits
in data/'s writing wing beside it; nothing that reads a finished dataset imports it.
"""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from tnlib.data.split_work import (
    DAMAGED_SETTINGS_REMEDY,
    SplitPlan,
    earlier_out_of_reach_cells,
    earlier_split_keys,
)
from tnlib.data.attempt_selection import select_attempts
from tnlib.data.manifest import format_empty_counts, format_solve_range, out_of_reach_lines
from tnlib.data.profiles import COMPRESSED_PROBLEMS, SplitGrid, params_label
from tnlib.data.schema import (DISJOINT_FROM, LIMIT_HITS, MANIFEST, WORK, WORK_SETTINGS, unfinished_plan_sets,
                               unfinished_splits)
from tnlib.files import read_json
from tnlib.paper import DOMAINS
from tnlib.planning.generators import DOMAIN_PARAMETERS


def _grid_from_settings(domain: str, grid: dict) -> SplitGrid:
    """The :class:`SplitGrid` a split's recorded settings describe (:meth:`SplitGrid.describe`)."""
    order = DOMAIN_PARAMETERS[domain]
    seeds: list[int] = []
    for part in str(grid["seed_numbers"]).split(","):
        first, _, last = part.partition("-")
        seeds += range(int(first), int(last or first) + 1)
    cells = lambda listed: tuple(tuple((name, params[name]) for name in order) for params in listed)  # noqa: E731
    return SplitGrid(cells(grid["params"]), tuple(seeds), grid.get("count"), cells(grid.get(COMPRESSED_PROBLEMS, ())))


def generation_status(root: str | os.PathLike) -> list[dict]:
    """Where the unfinished splits under ``root`` stand -- a `generate` run that is running or was interrupted --
    read from their work folders (nothing is written). One dict per (domain, split) with a work folder, in the
    order they are made: ``domain``, ``split``, ``settings``, ``attempts`` (solves recorded), and either
    ``waiting_for`` (an earlier split still in progress) or ``selection``, the attempt selection
    (:func:`tnlib.data.attempt_selection.select_attempts`) over the solves recorded so far -- exactly the state a
    resumed run starts from: which slots are settled, which cells are already out of reach, which solves come
    next."""
    root = Path(root)
    status = []
    for domain in DOMAINS:
        work = root / domain / WORK
        running = unfinished_splits(root, domain)
        for split in running:
            settings = read_json(work / split / WORK_SETTINGS, DAMAGED_SETTINGS_REMEDY)
            grid = _grid_from_settings(domain, settings["grid"])
            sp = SplitPlan(root, domain, split, grid, settings, slots=grid.slots())
            sp.read_attempts()
            entry = {"domain": domain, "split": split, "settings": settings, "attempts": dict(sp.outcomes)}
            before = [s for s in running if s in DISJOINT_FROM[split]]
            if before:
                entry["waiting_for"] = before[-1]
            else:
                manifest_path = sp.domain_dir / MANIFEST
                made = set(read_json(manifest_path)["splits"]) if manifest_path.is_file() else set()
                sp.earlier = [s for s in DISJOINT_FROM[split] if s in made]
                entry["selection"] = select_attempts(
                    split, sp.slots, sp.draw, sp.outcomes.get, earlier_split_keys(sp, {}), settings["max_attempts"],
                    settings.get("out_of_reach_after"), earlier_out_of_reach_cells(sp, {}))
                entry["seed_cells"] = {d.seed: sp.slots[sp.slot_of_seed[d.seed]][0] for d in sp.draws.values()}
            status.append(entry)
    return status


def status_card(root: str | os.PathLike) -> str:
    """Markdown: where each unfinished split under ``root`` stands (:func:`generation_status`),
    per cell: slots, instances so far, slots left empty so far and why, the solves recorded (solved, at the limit)
    with the planner's time on the solved ones, and the slots still open; then the cells already given up."""
    root = Path(root)
    entries = generation_status(root)
    if not entries:
        # a plan set's work folder is a `plan-set` job's (drawing or solving), which this card does not describe
        drawing = [f"{domain}/{name}" for domain in DOMAINS for name in unfinished_plan_sets(root, domain)]
        if drawing:
            return (f"{root}: no generation in progress; an unfinished `tnlib data plan-set` (running or "
                    f"interrupted; rerun it to resume): {', '.join(drawing)}")
        return f"{root}: no generation in progress (no work folder)"
    lines: list[str] = []
    for entry in entries:
        domain, split, settings = entry["domain"], entry["split"], entry["settings"]
        limit = f"{settings['time_limit']:g} s / {settings['memory_limit_mb']} MB"
        rule = settings.get("out_of_reach_after")
        head = f"{domain} {split} (limits {limit}{f', out of reach after {rule}' if rule else ''})"
        if "waiting_for" in entry:
            lines += [f"{head}: waits for {domain} {entry['waiting_for']}; {len(entry['attempts'])} solve(s) "
                      "recorded", ""]
            continue
        selection, outcomes = entry["selection"], entry["attempts"]
        cells: dict[str, dict] = {}
        for choice in selection.choices:
            cell = cells.setdefault(params_label(domain, choice.params), {
                "slots": 0, "ok": 0, "open": 0, "empty": Counter(), "solved": [], "hits": 0})
            cell["slots"] += 1
            outcome = outcomes.get(choice.draw.seed) if choice.draw is not None else None
            solved = outcome is not None and outcome["status"] == "solved"
            if choice.status == "ok" or (choice.status == "pending" and solved):
                cell["ok"] += 1
            elif (choice.status == "pending" and choice.params in selection.out_of_reach
                  and (choice.draw is None or outcome is not None)):
                # its solve failed in a cell now given up: when its round ends, it is marked out of reach
                cell["empty"]["out_of_reach"] += 1
            elif choice.status == "pending":
                cell["open"] += 1
            else:
                cell["empty"]["exhausted" if choice.status == "skipped" else choice.status] += 1
        for seed, outcome in outcomes.items():
            params = entry["seed_cells"].get(seed)
            if params is None:
                continue  # a solve the current selection no longer draws
            cell = cells[params_label(domain, params)]
            if outcome["status"] == "solved":
                cell["solved"].append(outcome["solve_seconds"])
            cell["hits"] += outcome["status"] in LIMIT_HITS
        settled = sum(c["slots"] - c["open"] for c in cells.values())
        total = sum(c["slots"] for c in cells.values())
        lines += [f"{head}: {settled} of {total} slots settled, {len(outcomes)} solve(s) recorded, "
                  f"{len(selection.needed)} to run next", "",
                  "| cell | slots | instances so far | empty: exhausted / out of reach / failed | solves: solved / at "
                  "the limit | solve s (median, max) | slots open |",
                  "|---|---|---|---|---|---|---|"]
        for label, cell in cells.items():
            times = cell["solved"]
            lines.append(f"| `{label}` | {cell['slots']} | {cell['ok']} | {format_empty_counts(cell['empty'])} "
                         f"| {len(times)} / {cell['hits']} | {format_solve_range(times)} | {cell['open']} |")
        given_up = out_of_reach_lines(domain, split, {"settings": settings,
                                                      "out_of_reach_cells": selection.out_of_reach_cells()})
        if given_up:
            given_up = ["In a cell given up, a slot whose solve failed counts as out of reach above; the selection "
                        "marks it when its round ends, so the lines below may count fewer so far.", "", *given_up]
        lines += ["", *(given_up or ["No cell given up so far."]), ""]
    return "\n".join(lines).rstrip()
