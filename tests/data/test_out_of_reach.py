"""The out-of-reach rule of dataset generation: a cell whose solves hit the limits K times in a row is
given up, recorded with those attempts, inherited by later splits under the same limits, deterministic whatever
order the solves finish in, resumable after a kill; and `tnlib sweep --dry-run` names missing data and cells out of
reach before anything runs."""
from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import tnlib.planning.fast_downward as fast_downward
from tnlib.data.generation import GenerateOptions, generate_dataset
from tnlib.data.profiles import Profile, SplitGrid, combos
from tnlib.data.attempt_selection import Draw, select_attempts
from tnlib.data.manifest import cell_card, data_card
from tnlib.errors import DatasetError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dataset_helpers import LIMITS  # noqa: E402

HARD = 5  # gripper balls: the fake planner "times out" on these


def two_cell_profile(seeds: int = 6) -> Profile:
    """gripper with an easy cell (3 balls) and a hard one (5 balls, timed out by ``fake_solve``)."""
    s = tuple(range(1, seeds + 1))
    grids = {"gripper": {
        "train": SplitGrid(combos("gripper", balls=(3, HARD)), s),
        "val": SplitGrid(combos("gripper", balls=(3, HARD)), (1, 2)),
    }}
    return Profile("reach", grids, dict(LIMITS), memory_limit_mb=2000, max_attempts=20)


@pytest.fixture
def fake_solve(monkeypatch):
    """Fast Downward as it is, except that problems with HARD balls time out at the limit."""
    real = fast_downward.solve
    calls = []

    def solve(domain, path, time_limit=None, memory_limit_mb=None):
        calls.append(path)
        if f"-b{HARD}-" in Path(path).name:
            return fast_downward.SolveResult(status="timeout", plan=None, seconds=float(time_limit), expansions=None)
        return real(domain, path, time_limit=time_limit, memory_limit_mb=memory_limit_mb)

    monkeypatch.setattr(fast_downward, "solve", solve)
    return calls


def interrupt_after(monkeypatch, calls: list, solves: int):
    """Make the planner raise KeyboardInterrupt once ``calls`` (``fake_solve``'s record) holds ``solves`` solves --
    not an Exception: run_attempt does not record it, the run stops there. Returns the planner to restore."""
    counting = fast_downward.solve

    def interrupting(*args, **kwargs):
        if len(calls) == solves:
            raise KeyboardInterrupt
        return counting(*args, **kwargs)

    monkeypatch.setattr(fast_downward, "solve", interrupting)
    return counting


def draws_for(cells: int, slots_per_cell: int):
    """A fake selection input: ``cells`` x ``slots_per_cell`` slots, every draw distinct and non-trivial."""
    slots = [(((("n", c),)), n) for n in range(1, slots_per_cell + 1) for c in range(cells)]

    def draw(slot: int, attempt: int) -> Draw:
        return Draw(attempt, slot * 100 + attempt, f"p{slot}-{attempt}", f"k{slot}-{attempt}", "", False)

    return slots, draw


def test_selection_gives_up_a_cell_after_k_limit_hits_in_a_row_and_asks_for_no_more():
    slots, draw = draws_for(cells=2, slots_per_cell=5)  # slot i: cell i % 2
    outcomes: dict[int, dict] = {}
    asked = []
    while True:
        sel = select_attempts("train", slots, draw, outcomes.get, {}, 20, out_of_reach_after=3)
        if sel.complete:
            break
        for d in sel.needed:
            asked.append(d.seed)
            cell = (d.seed // 100) % 2
            outcomes[d.seed] = ({"status": "solved"} if cell == 0 else {"status": "timeout", "seconds": 9.0})
    statuses = [c.status for c in sel.choices]
    assert statuses[0::2] == ["ok"] * 5
    assert statuses[1::2] == ["out_of_reach"] * 5
    # Exactly three solves of the hard cell ran: never more than K - (current run) were asked for at once.
    hard = [s for s in asked if (s // 100) % 2 == 1]
    assert len(hard) == 3
    (cell,) = sel.out_of_reach_cells()
    assert cell["params"] == {"n": 1} and cell["instances"] == 0 and cell["unfilled"] == 5
    assert cell["found_in"] == "train"
    assert [a["status"] for a in cell["attempts"]] == ["timeout"] * 3
    assert [a["seconds"] for a in cell["attempts"]] == [9.0] * 3
    # Without the rule the same outcomes fail every slot after its 20 attempts, 100 solves of the hard cell.
    outcomes_off: dict[int, dict] = {}
    while True:
        sel = select_attempts("train", slots, draw, outcomes_off.get, {}, 20)
        if sel.complete:
            break
        for d in sel.needed:
            outcomes_off[d.seed] = {"status": "solved"} if (d.seed // 100) % 2 == 0 else {"status": "timeout"}
    assert [c.status for c in sel.choices][1::2] == ["failed"] * 5 and not sel.out_of_reach_cells()


def test_a_solve_between_limit_hits_breaks_the_run_and_the_verdict_ignores_arrival_order():
    slots, draw = draws_for(cells=1, slots_per_cell=8)
    # slot 2's first attempt is solved: runs are 2 (slots 0, 1), then 3 (slots 3, 4, 5) -> out of reach at slot 5.
    verdict = {2 * 100: "solved"}

    def outcome_of(seed):
        return {"status": verdict.get(seed, "timeout"), "seconds": 1.0}

    results = []
    for order in (1, -1):  # answer each round's needed solves first-to-last, then last-to-first
        outcomes: dict[int, dict] = {}
        while True:
            sel = select_attempts("test", slots, draw, outcomes.get, {}, 20, out_of_reach_after=3)
            if sel.complete:
                break
            for d in sel.needed[::order][:1]:  # one at a time, like a worker finishing
                outcomes[d.seed] = outcome_of(d.seed)
        results.append(([c.status for c in sel.choices], sel.out_of_reach_cells()))
    assert results[0] == results[1]
    statuses, (cell,) = results[0]
    assert statuses == ["out_of_reach", "out_of_reach", "ok"] + ["out_of_reach"] * 5
    assert [a["seed_number"] for a in cell["attempts"]] == [4, 5, 6]


def test_generation_records_out_of_reach_cells_and_later_splits_inherit_them(tmp_path, fake_solve):
    report = generate_dataset(tmp_path, ["gripper"], two_cell_profile(), ["train", "val"],
                              GenerateOptions(progress=False, time_limit=7, out_of_reach_after=2))
    manifest = json.loads((tmp_path / "gripper" / "manifest.json").read_text())
    train, val = manifest["splits"]["train"], manifest["splits"]["val"]
    assert train["settings"]["out_of_reach_after"] == 2 and train["settings"]["time_limit"] == 7
    (cell,) = train["out_of_reach_cells"]
    assert cell["params"] == {"balls": HARD} and cell["instances"] == 0 and cell["unfilled"] == 6
    assert [(a["seed_number"], a["status"], a["seconds"]) for a in cell["attempts"]] == [
        (1, "timeout", 7.0), (2, "timeout", 7.0)]
    assert train["counts"]["out_of_reach"] == 6 and train["counts"]["instances"] == 6
    assert report.splits["gripper/train"]["out_of_reach"] == 6
    # val: same limits and K, so the hard cell is not tried again; its verdict names the split that found it.
    (inherited,) = val["out_of_reach_cells"]
    assert inherited["found_in"] == "train" and inherited["unfilled"] == 2 and inherited["attempts"] == cell["attempts"]
    hard_solves = [p for p in fake_solve if f"-b{HARD}-" in Path(p).name]
    assert len(hard_solves) == 2
    card = data_card(tmp_path)
    assert f"gripper train `gripper-b{HARD}`: out of reach at 7 s / 2000 MB" in card
    assert "2 solves in a row hit the limit (7.0 s, 7.0 s)" in card
    assert f"gripper val `gripper-b{HARD}`: out of reach at 7 s / 2000 MB (found in train)" in card
    cells = cell_card(tmp_path)
    assert f"| gripper | train | `gripper-b{HARD}` | 6 | 0 | 0 / 6 / 0 | - | 2 | 7 s / 2000 MB |" in cells
    assert "| gripper | train | `gripper-b3` | 6 | 6 | 0 / 0 / 0 |" in cells
    assert f"| gripper | val | `gripper-b{HARD}` | 2 | 0 | 0 / 2 / 0 | - | 0 | 7 s / 2000 MB |" in cells


def test_the_rule_is_off_unless_asked_for_and_settings_without_it_stay_as_they_were(tmp_path, fake_solve):
    profile = two_cell_profile(seeds=1)
    generate_dataset(tmp_path, ["gripper"], profile, ["train"],
                     GenerateOptions(progress=False, time_limit=7, max_attempts=2))
    entry = json.loads((tmp_path / "gripper" / "manifest.json").read_text())["splits"]["train"]
    assert "out_of_reach_after" not in entry["settings"] and entry["out_of_reach_cells"] == []
    assert [f["status"] for f in entry["failures"]] == ["failed"]
    with pytest.raises(DatasetError, match="out_of_reach_after"):
        generate_dataset(tmp_path, ["gripper"], profile, ["train"],
                         GenerateOptions(progress=False, time_limit=7, max_attempts=2, out_of_reach_after=1))
    with pytest.raises(DatasetError, match="out_of_reach_after must be at least 1"):
        generate_dataset(tmp_path / "x", ["gripper"], profile, ["train"],
                         GenerateOptions(progress=False, out_of_reach_after=0))


def test_an_interrupted_run_resumes_to_the_same_split_without_redoing_its_solves(tmp_path, fake_solve, monkeypatch):
    """Interrupted after a few solves (the time-outs of the hard cell among them), rerun: the solves already
    recorded are not run again and the split equals that of an uninterrupted run."""
    import pyarrow.parquet as pq

    import tnlib.planning.fast_downward as fd

    whole = tmp_path / "whole"
    generate_dataset(whole, ["gripper"], two_cell_profile(), ["train"],
                     GenerateOptions(progress=False, time_limit=7, out_of_reach_after=2))
    solves_whole = len(fake_solve)
    fake_solve.clear()
    counting = interrupt_after(monkeypatch, fake_solve, 4)
    root = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        generate_dataset(root, ["gripper"], two_cell_profile(), ["train"],
                         GenerateOptions(progress=False, time_limit=7, out_of_reach_after=2))
    attempts = root / "gripper" / ".work" / "train" / "attempts"
    assert len(list(attempts.glob("*.json"))) == 4 and not (root / "gripper" / "train.parquet").exists()
    monkeypatch.setattr(fd, "solve", counting)
    before = len(fake_solve)
    generate_dataset(root, ["gripper"], two_cell_profile(), ["train"],
                     GenerateOptions(progress=False, time_limit=7, out_of_reach_after=2))
    assert len(fake_solve) - before == solves_whole - 4  # only what the first run had not finished
    assert pq.read_table(root / "gripper" / "train.parquet").equals(pq.read_table(whole / "gripper" / "train.parquet"))
    entries = [json.loads((r / "gripper" / "manifest.json").read_text())["splits"]["train"] for r in (whole, root)]
    assert entries[0]["out_of_reach_cells"] == entries[1]["out_of_reach_cells"] != []
    assert not (root / "gripper" / ".work").exists()


def test_an_interrupted_forced_regeneration_resumes_with_the_same_command(tmp_path, fake_solve, monkeypatch):
    """`generate --force` over an existing split (new limits: hours of solving for data/paper), interrupted, then
    the same command again: the attempts it finished are kept, not redone, and the split equals an uninterrupted
    forced run's. Other settings with --force start over."""
    import pyarrow.parquet as pq

    import tnlib.planning.fast_downward as fd

    old = GenerateOptions(progress=False, time_limit=7, out_of_reach_after=2)
    new = GenerateOptions(progress=False, time_limit=8, out_of_reach_after=2, force=True, reuse_solutions=False)
    whole, root = tmp_path / "whole", tmp_path / "resumed"
    for folder in (whole, root):
        generate_dataset(folder, ["gripper"], two_cell_profile(), ["train"], old)
    fake_solve.clear()
    generate_dataset(whole, ["gripper"], two_cell_profile(), ["train"], new)
    solves_whole = len(fake_solve)
    fake_solve.clear()
    counting = interrupt_after(monkeypatch, fake_solve, 3)
    with pytest.raises(KeyboardInterrupt):
        generate_dataset(root, ["gripper"], two_cell_profile(), ["train"], new)
    attempts = root / "gripper" / ".work" / "train" / "attempts"
    assert len(list(attempts.glob("*.json"))) == 3
    monkeypatch.setattr(fd, "solve", counting)
    before = len(fake_solve)
    generate_dataset(root, ["gripper"], two_cell_profile(), ["train"], new)  # the same command
    assert len(fake_solve) - before == solves_whole - 3
    assert pq.read_table(root / "gripper" / "train.parquet").equals(pq.read_table(whole / "gripper" / "train.parquet"))
    settings = json.loads((root / "gripper" / "manifest.json").read_text())["splits"]["train"]["settings"]
    assert settings["time_limit"] == 8
    # Interrupted again, then forced with other settings: the work folder is discarded, every solve runs.
    fake_solve.clear()
    interrupt_after(monkeypatch, fake_solve, 3)
    with pytest.raises(KeyboardInterrupt):
        generate_dataset(root, ["gripper"], two_cell_profile(), ["train"], replace(new, time_limit=9))
    monkeypatch.setattr(fd, "solve", counting)
    before = len(fake_solve)
    generate_dataset(root, ["gripper"], two_cell_profile(), ["train"], replace(new, time_limit=6))
    assert len(fake_solve) - before == solves_whole


def test_sweep_dry_run_names_missing_splits_and_cells_out_of_reach(tmp_path, fake_solve, capsys):
    from tnlib.cli import main
    from tnlib.experiments.sweep_settings import Sweep

    profile = two_cell_profile(seeds=2)
    profile.grids["gripper"]["test"] = SplitGrid(combos("gripper", balls=(4, HARD)), (1,))
    profile.grids["gripper"]["plan"] = SplitGrid(combos("gripper", balls=(4, HARD)), (1, 2), count=2)
    generate_dataset(tmp_path, ["gripper"], profile, ["train", "val"],
                     GenerateOptions(progress=False, time_limit=7, test_time_limit=7, out_of_reach_after=2))
    sweep = Sweep.from_parameters(preset="small", data_root=str(tmp_path), domains=["gripper"])
    root, missing, out_of_reach = sweep.data_gaps()
    assert root == tmp_path.resolve() and missing == ["gripper/test", "gripper/plan"]
    at = f"1 cell(s) out of reach at 7 s / 2000 MB (gripper-b{HARD})"
    assert out_of_reach == [f"gripper/train: {at}: 2 of 4 slots empty, 2 instances there",
                            f"gripper/val: {at}: 2 of 4 slots empty, 2 instances there"]
    with pytest.raises(DatasetError, match="lacks gripper/test, gripper/plan"):
        sweep.check_data(accept_out_of_reach=True)
    args = ["sweep", "--preset", "small", "--data-root", str(tmp_path), "--domains", "gripper", "--dry-run"]
    assert main(args) == 0
    banner = capsys.readouterr().err
    assert "missing   gripper/test, gripper/plan (never generated" in banner
    assert f"    gripper/train: 1 cell(s) out of reach at 7 s / 2000 MB (gripper-b{HARD})" in banner

    # Test and plan generated: nothing is missing, the hard cell is out of reach there too (found in train).
    generate_dataset(tmp_path, ["gripper"], profile, ["test", "plan"],
                     GenerateOptions(progress=False, time_limit=7, test_time_limit=7, out_of_reach_after=2))
    _root, missing, out_of_reach = sweep.data_gaps()
    assert missing == [] and [line.split(":")[0] for line in out_of_reach] == [
        "gripper/train", "gripper/val", "gripper/test", "gripper/plan"]
    with pytest.raises(DatasetError, match="cells out of reach of its solver limits.*--accept-out-of-reach"):
        sweep.check_data()
    assert sweep.check_data(accept_out_of_reach=True) == tmp_path.resolve()
    assert main(args) == 0
    banner = capsys.readouterr().err
    assert "missing" not in banner and "gripper/plan: 1 cell(s) out of reach" in banner
    # The real run stops before any training unless the user accepts the gaps (exit 2, one line).
    assert main(args[:-1] + ["--out", str(tmp_path / "runs")]) == 2
    assert "--accept-out-of-reach" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_status_of_an_interrupted_run_shows_per_cell_where_it_stands_and_writes_nothing(tmp_path, fake_solve,
                                                                                      monkeypatch, capsys):
    """`tnlib data status` reads the work folder of an interrupted (or running) generation: the solves recorded per
    cell, the cells already given up (the verdict the finished run records), the splits waiting for an earlier
    one -- and changes no file, so it is safe beside a running generate."""
    import tnlib.planning.fast_downward as fd
    from tnlib.cli import main
    from tnlib.data.generation_status import generation_status, status_card

    counting = interrupt_after(monkeypatch, fake_solve, 4)
    root = tmp_path / "root"
    run = GenerateOptions(progress=False, time_limit=7, out_of_reach_after=2)
    with pytest.raises(KeyboardInterrupt):
        generate_dataset(root, ["gripper"], two_cell_profile(), ["train", "val"], run)
    outcomes = [json.loads(p.read_text()) for p in (root / "gripper" / ".work" / "train" / "attempts").glob("*.json")]
    timeouts = sum(o["status"] == "timeout" for o in outcomes)
    assert len(outcomes) == 4 and timeouts == 2  # the hard cell's first two solves: given up at K = 2

    files = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    train, val = generation_status(root)
    assert (train["split"], val["split"], val["waiting_for"]) == ("train", "val", "train")
    given_up = train["selection"].out_of_reach_cells()
    card = status_card(root)
    assert main(["data", "status", str(root)]) == 0
    assert capsys.readouterr().out.strip() == card
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == files  # nothing written

    assert "gripper train (limits 7 s / 2000 MB, out of reach after 2): " in card
    assert ", 4 solve(s) recorded, " in card and "gripper val (limits 7 s / 2000 MB, out of reach after 2): waits " \
        "for gripper train" in card
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in card.splitlines()
            if line.startswith("| `gripper-b")}
    easy, hard = rows["`gripper-b3`"], rows[f"`gripper-b{HARD}`"]
    assert hard[3] == f"0 / {timeouts}" and easy[3] == f"{4 - timeouts} / 0"
    assert (hard[1], hard[2], hard[5]) == ("0", "0 / 6 / 0", "0")  # given up: no slot of it is open any more
    assert easy[1] == str(4 - timeouts)  # the easy cell's solved slots are its instances so far
    assert f"`gripper-b{HARD}`: out of reach at 7 s / 2000 MB: 2 solves in a row hit the limit" in card
    # A sweep's banner says the data it reads is being regenerated.
    from tnlib.experiments.sweep_settings import Sweep
    from tnlib.experiments.running.sweep_banner import sweep_data_lines

    banner = sweep_data_lines(Sweep.from_parameters(preset="small", data_root=str(root), domains=["gripper"]))
    assert any(line.startswith("  in progress  gripper: an unfinished `tnlib data generate`") and
               f"tnlib data status {root}`" in line for line in banner), banner

    # The resumed run reaches the verdict the status showed, and afterwards nothing is in progress.
    monkeypatch.setattr(fd, "solve", counting)
    generate_dataset(root, ["gripper"], two_cell_profile(), ["train", "val"], run)
    manifest = json.loads((root / "gripper" / "manifest.json").read_text())
    recorded = manifest["splits"]["train"]["out_of_reach_cells"]
    assert [c["attempts"] for c in recorded] == [c["attempts"] for c in given_up] != []
    assert generation_status(root) == [] and status_card(root).endswith("no generation in progress (no work folder)")
    unchanged = Sweep.from_parameters(preset="small", data_root=str(root), domains=["gripper"])
    assert not any("in progress" in line for line in sweep_data_lines(unchanged))
    # A plan set being drawn or solved (its work folder) is named as such, and only to a sweep that plans on it.
    (root / "gripper" / ".work" / "plan-set").mkdir(parents=True)
    assert status_card(root) == (f"{root}: no generation in progress; an unfinished `tnlib data plan-set` (running "
                                 "or interrupted; rerun it to resume): gripper/plan-set")
    planning = sweep_data_lines(Sweep.from_parameters(preset="small", data_root=str(root), domains=["gripper"],
                                                      plan=True, plan_on="plan-set"))
    assert [line for line in planning if "in progress" in line] == [
        f"  in progress  gripper: an unfinished `tnlib data plan-set` of plan-set in {root} (running or interrupted; "
        "rerun it to resume)"]
    unchanged = Sweep.from_parameters(preset="small", data_root=str(root), domains=["gripper"])
    assert not any("in progress" in line for line in sweep_data_lines(unchanged))
    assert main(["data", "status", str(tmp_path / "nowhere")]) == 2
    assert "nowhere: no such folder" in capsys.readouterr().err
