"""Tiny test-only dataset profiles (seconds to generate) shared by the dataset tests."""
from __future__ import annotations

from pathlib import Path

from tnlib.data.profiles import Profile, SplitGrid, combos

LIMITS = {"train": 30, "val": 30, "test": 30, "plan": 30}


def tiny_profile(seeds: int = 2, sat_max_evaluations: int = 10_000) -> Profile:
    """Every domain and split at sizes Fast Downward solves at once (test sizes above train sizes)."""
    s = tuple(range(1, seeds + 1))
    grids = {
        "blocksworld": {
            "train": SplitGrid(combos("blocksworld", blocks=(3, 4)), s),
            "val": SplitGrid(combos("blocksworld", blocks=(3,)), s),
            "test": SplitGrid(combos("blocksworld", blocks=(5,)), s),
        },
        "ferry": {
            "train": SplitGrid(combos("ferry", locations=(2,), cars=(2, 3)), s),
            "val": SplitGrid(combos("ferry", locations=(2,), cars=(2,)), s),
            "test": SplitGrid(combos("ferry", locations=(3,), cars=(3,)), s),
        },
        "gripper": {
            "train": SplitGrid(combos("gripper", balls=(2, 3)), s),
            "val": SplitGrid(combos("gripper", balls=(2,)), s),
            "test": SplitGrid(combos("gripper", balls=(4,)), s),
        },
        "visitall": {
            "train": SplitGrid(combos("visitall", x=(2,), y=(2,), ratio=(1.0,)), s),
            "val": SplitGrid(combos("visitall", x=(2,), y=(2,), ratio=(0.5,)), s),
            "test": SplitGrid(combos("visitall", x=(3,), y=(3,), ratio=(0.5,)), s),
        },
    }
    for splits in grids.values():
        splits["plan"] = SplitGrid(splits["test"].combos, tuple(range(1, 10)), count=2)
    return Profile("tiny", grids, dict(LIMITS), memory_limit_mb=2000, max_attempts=20,
                   sat_max_evaluations=sat_max_evaluations)


def failing_profile() -> Profile:
    """One-block blocksworld always has an empty goal: every attempt is trivial, so every slot fails."""
    grids = {"blocksworld": {"train": SplitGrid(combos("blocksworld", blocks=(1, 2)), (1, 2))}}
    return Profile("failing", grids, dict(LIMITS), memory_limit_mb=2000, max_attempts=3)


def crowded_profile(seeds: int = 30, max_attempts: int = 5) -> Profile:
    """Cells with almost no distinct instances. visitall 2x2 with ratio 1 has one instance up to renaming (every
    start cell is a corner); gripper with one ball has two non-trivial ones (the ball must change rooms; the
    robot starts with it or not), and val repeats train's grid."""
    grids = {
        "visitall": {"train": SplitGrid(combos("visitall", x=(2,), y=(2,), ratio=(1.0,)), tuple(range(1, seeds + 1)))},
        "gripper": {
            "train": SplitGrid(combos("gripper", balls=(1,)), (1, 2, 3)),
            "val": SplitGrid(combos("gripper", balls=(1,)), (1, 2)),
        },
    }
    return Profile("crowded", grids, dict(LIMITS), memory_limit_mb=2000, max_attempts=max_attempts)


def gripper_profile(seeds: int) -> Profile:
    """Many quick slots in one split (for the kill-and-resume test)."""
    grids = {"gripper": {"train": SplitGrid(combos("gripper", balls=(2, 3)), tuple(range(1, seeds + 1)))}}
    return Profile("gripper-many", grids, dict(LIMITS), memory_limit_mb=2000)


def shared_dataset(tmp_path_factory, name: str, build) -> Path:
    """A dataset built once per test session, also when pytest-xdist runs the tests on several workers.

    Under xdist every worker has its own base temp folder inside one per-session folder; the first worker to get
    the lock builds the dataset there and the others reuse it (generation is deterministic, so any worker would
    build the same). ``build(folder)`` writes the dataset into ``folder``.
    """
    import fcntl
    import os

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = shared / f"shared-{name}"
    with open(shared / f"shared-{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (folder / "ready").is_file():
                build(folder / "dataset")
                (folder / "ready").write_text("ok")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return folder / "dataset"
