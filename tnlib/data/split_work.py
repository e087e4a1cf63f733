"""One split of a dataset generation at work: its settings, its slots, its work folder and the claims two
generate runs on one folder take on its attempts (:class:`SplitPlan`); preparing it (a fresh start, a resumption,
or a stop when the folder holds it with other settings); and what the domain's earlier splits took that it must
keep apart from (their instance keys, the cells they found out of reach).

The work folder, ``ROOT/DOMAIN/.work/SPLIT/``, holds the split's settings (``settings.json``) and one file per
finished attempt (``attempts/SEED.json``); :mod:`tnlib.data.generation` describes the whole run and
:mod:`tnlib.data.generation_status` reads these folders for ``tnlib data status``.
"""
from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tnlib.data.attempt_selection import Draw, Selection
from tnlib.data.exact_solves import split_solver
from tnlib.data.instance_keys import instance_key, problem_from_text, problem_keys
from tnlib.data.profiles import DISTINCT_RULE, Params, Profile, SplitGrid, generator_seed
from tnlib.data.schema import DEFAULT_SOLVER, FORMAT_VERSION, MANIFEST, TNLIB_LMCUT, WORK, WORK_SETTINGS
from tnlib.data.solution_cache import text_sha256
from tnlib.errors import DamagedFile, DatasetError
from tnlib.files import atomic_write_json, check_shape, damaged_message, read_json, try_lock, unlock
from tnlib.planning.generators import DOMAIN_PARAMETERS, generate, problem_name


def split_lock(root: Path, domain: str, split: str) -> Path:
    """The lock under which one generate run at a time prepares or consolidates a split."""
    return root / f".{domain}-{split}.lock"


# What to do about a work folder whose settings file is damaged (its attempts cannot be trusted to match).
DAMAGED_SETTINGS_REMEDY = "rerun `tnlib data generate` with --force to start the split over"


@dataclass
class SplitPlan:
    """One (domain, split) of a generate run: settings, slots and work folder, and while it runs the draws and
    solve outcomes that the attempt selection (:func:`tnlib.data.attempt_selection.select_attempts`) reads."""

    root: Path
    domain: str
    split: str
    grid: SplitGrid
    settings: dict
    slots: list[tuple[Params, int]] = field(default_factory=list)
    earlier: list[str] = field(default_factory=list)  # splits of the domain this one avoids
    draws: dict[tuple[int, int], Draw] = field(default_factory=dict)  # (slot index, attempt) -> Draw
    slot_of_seed: dict[int, int] = field(default_factory=dict)
    outcomes: dict[int, dict] = field(default_factory=dict)  # seed -> run_attempt's outcome
    in_flight: set[int] = field(default_factory=set)
    claims: dict[int, int] = field(default_factory=dict)  # seed -> the lock held while this run solves it
    elsewhere: set[int] = field(default_factory=set)  # seeds another generate run is solving
    taken: dict[str, str] | None = None  # instance keys of the earlier splits -> "split/instance"
    given_up: dict[tuple, dict] | None = None  # cells an earlier split found out of reach under the same limits
    selection: Selection | None = None
    done: bool = False
    draw_seconds: float = 0.0

    @property
    def domain_dir(self) -> Path:
        return self.root / self.domain

    @property
    def work_dir(self) -> Path:
        return self.domain_dir / WORK / self.split

    def attempt_file(self, seed: int) -> Path:
        return self.work_dir / "attempts" / f"{seed}.json"

    def draw(self, slot: int, attempt: int) -> Draw:
        """Generate one attempt's problem and key it (cheap next to solving; cached for the run)."""
        found = self.draws.get((slot, attempt))
        if found is None:
            started = time.perf_counter()
            params, seed_number = self.slots[slot]
            seed = generator_seed(self.split, self.domain, params, seed_number, attempt)
            text = generate(self.domain, seed, **dict(params))
            problem = problem_from_text(text)
            found = Draw(attempt, seed, problem_name(self.domain, seed, **dict(params)), instance_key(problem),
                         text_sha256(text), problem.trivial)
            self.draws[(slot, attempt)] = found
            self.slot_of_seed[seed] = slot
            self.draw_seconds += time.perf_counter() - started
        return found

    @staticmethod
    def read_attempt(path: Path) -> dict:
        """A recorded solve (an attempt file); a DamagedFile when it is not JSON or not an attempt as
        :func:`tnlib.data.attempt_solving.run_attempt` records it."""
        outcome = read_json(path, shape="a generation attempt")
        if outcome["status"] == "solved":
            check_shape(outcome, "a solved generation attempt", path)
        return outcome

    def read_attempts(self) -> None:
        """Read back the solves an earlier (interrupted or running) run recorded in the work folder."""
        for path in sorted((self.work_dir / "attempts").glob("*.json")):
            try:
                outcome = self.read_attempt(path)
            except DamagedFile as err:
                # one solve's record, damaged after it was written (tnlib writes it atomically): the solve is
                # simply run again, as one in flight when a run was killed would be
                print(damaged_message(err.path, err.reason, "its solve runs again"), file=sys.stderr)
                path.unlink()
                continue
            self.outcomes[outcome["seed"]] = outcome

    def store_outcome(self, outcome: dict) -> None:
        if not self.made_elsewhere():
            atomic_write_json(self.attempt_file(outcome["seed"]), outcome)
        self.outcomes[outcome["seed"]] = outcome
        self.in_flight.discard(outcome["seed"])
        claim = self.claims.pop(outcome["seed"], None)
        if claim is not None:
            unlock(claim)

    # Two generate runs on one folder take turns per attempt: a run solves an attempt only while it holds the
    # attempt's lock, and records the outcome before releasing it; the other skips it meanwhile and reads the
    # recorded outcome when it appears (or claims the attempt when its holder stopped without one).

    def made_elsewhere(self) -> bool:
        """Whether another generate run has made this split meanwhile (consolidated it: its work folder is gone and
        the domain manifest lists it)."""
        if (self.work_dir / WORK_SETTINGS).is_file():
            return False
        manifest = self.domain_dir / MANIFEST
        try:
            return manifest.is_file() and self.split in read_json(manifest).get("splits", {})
        except DamagedFile:
            return False

    def recorded(self, seed: int) -> bool:
        """Read an attempt another run has recorded since this one read the work folder; True if there is one."""
        path = self.attempt_file(seed)
        if seed in self.outcomes or not path.is_file():
            return seed in self.outcomes
        try:
            self.outcomes[seed] = self.read_attempt(path)
        except DamagedFile:
            return False  # being replaced, or damaged: decided when it is claimed
        return True

    def claim(self, seed: int) -> bool:
        """Take the attempt's lock for this run's solve; False when another run is solving it."""
        fd = try_lock(self.attempt_file(seed).with_suffix(".lock"))
        if fd is None:
            self.elsewhere.add(seed)
            return False
        self.claims[seed] = fd
        self.elsewhere.discard(seed)
        return True

    def release(self, seed: int) -> None:
        unlock(self.claims.pop(seed))

    def look_elsewhere(self) -> bool:
        """Recheck the attempts other runs were solving: read those recorded, forget those whose holder stopped
        without a record (this run claims them next). True if anything changed."""
        changed = False
        for seed in sorted(self.elsewhere):
            if self.recorded(seed):
                self.elsewhere.discard(seed)
                changed = True
            elif self.claim(seed):
                self.release(seed)
                changed = True
        return changed


def _split_settings(profile: Profile, domain: str, split: str, overrides: dict) -> dict:
    """The settings a split is made under (recorded in its work folder and its manifest entry): the profile's,
    where ``overrides`` (the run's options for this split) gives None."""
    grid = profile.grid(domain, split)
    settings = {
        "profile": profile.name,
        "grid": grid.describe(),
        "time_limit": float(overrides.get("time_limit") or profile.time_limits[split]),
        "memory_limit_mb": overrides.get("memory_limit_mb") or profile.memory_limit_mb,
        "max_attempts": overrides.get("max_attempts") or profile.max_attempts,
        "sat_max_evaluations": overrides.get("sat_max_evaluations") or profile.sat_max_evaluations,
        "distinct_instances": DISTINCT_RULE,
        "format_version": FORMAT_VERSION,
    }
    if overrides.get("out_of_reach_after"):  # only when on: a split made without it has no such key
        settings["out_of_reach_after"] = overrides["out_of_reach_after"]
    if profile.lmcut != TNLIB_LMCUT:  # (tnlib.data.schema.TNLIB_LMCUT: why tnlib's is not recorded)
        settings["lmcut"] = profile.lmcut
    solver = split_solver(domain, overrides.get("solver"))
    if solver != DEFAULT_SOLVER:  # (tnlib.data.schema.DEFAULT_SOLVER: why the default is not recorded)
        settings["solver"] = solver
    return settings


def prepare_split(root: Path, profile: Profile, domain: str, split: str, overrides: dict, force: bool) -> SplitPlan | None:
    """Prepare one split: None when it is already complete with the same settings; raises DatasetError when the
    folder holds it (complete or in progress) with other settings and ``force`` is off. Attempts an interrupted
    run under the same settings finished are read back from the work folder, with ``force`` too."""
    grid = profile.grid(domain, split)
    settings = _split_settings(profile, domain, split, overrides)
    sp = SplitPlan(root, domain, split, grid, settings, slots=grid.slots())
    manifest_path = sp.domain_dir / MANIFEST
    done = read_json(manifest_path)["splits"].get(split) if manifest_path.is_file() else None
    if done is not None and not force:
        if done["settings"] != settings:
            raise DatasetError(
                f"{manifest_path}: split {split!r} was generated with other settings"
                f" ({_settings_diff(done['settings'], settings)}); use another --out, or --force to regenerate it"
            )
        if not sp.work_dir.exists():
            return None
        shutil.rmtree(sp.work_dir)  # a crash after consolidation, before clean-up
        return None
    settings_file = sp.work_dir / WORK_SETTINGS
    # An interrupted run under these very settings is resumed, --force or not: its attempts are what a fresh run
    # would recompute (a forced regeneration of hours must survive an interruption too). --force discards a
    # work folder only when its settings differ.
    stale = not settings_file.is_file() or (force and _recorded_settings(settings_file) != settings)
    if sp.work_dir.exists() and stale:
        shutil.rmtree(sp.work_dir)
    if settings_file.is_file():
        previous = read_json(settings_file, DAMAGED_SETTINGS_REMEDY)
        if previous != settings:
            raise DatasetError(
                f"{sp.work_dir}: an interrupted run of split {split!r} used other settings"
                f" ({_settings_diff(previous, settings)}); rerun it with those, or use --force to start over"
            )
    else:
        atomic_write_json(settings_file, settings)
    sp.read_attempts()
    return sp


def _recorded_settings(path: Path) -> dict | None:
    """A work folder's recorded settings, None when the file is damaged (--force then starts the split over)."""
    try:
        return read_json(path)
    except DamagedFile:
        return None


def _settings_diff(old: dict, new: dict) -> str:
    keys = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    return "; ".join(f"{k}: {json.dumps(old.get(k))[:80]} there, {json.dumps(new.get(k))[:80]} now" for k in keys)


def earlier_split_keys(sp: SplitPlan, by_key: dict) -> dict[str, str]:
    """Instance keys of the domain's earlier splits -> "split/instance": from this run's
    selection when the split was made in it, else from the manifest (keys computed from the problem files where
    an older manifest has none)."""
    taken: dict[str, str] = {}
    manifest_path = sp.domain_dir / MANIFEST
    for split in sp.earlier:
        made = by_key.get((sp.domain, split))
        if made is not None:
            for choice in made.selection.choices:
                if choice.status == "ok":
                    taken.setdefault(choice.draw.key, f"{split}/{choice.draw.name}")
            continue
        manifest = read_json(manifest_path)
        for inst, (_path, key) in zip(manifest["splits"][split]["instances"],
                                      problem_keys(sp.root, manifest, split)):
            taken.setdefault(key, f"{split}/{inst['instance']}")
    return taken


# The settings under which an out-of-reach verdict carries over from one split to a later one of the same domain.
REACH_SETTINGS = ("time_limit", "memory_limit_mb", "out_of_reach_after")


def earlier_out_of_reach_cells(sp: SplitPlan, by_key: dict) -> dict[tuple, dict]:
    """Cells the domain's earlier splits found out of reach under this split's limits (and K): this split does
    not try them again (their attempts are the evidence, named by the split that found them). Empty when the rule
    is off."""
    if not sp.settings.get("out_of_reach_after"):
        return {}
    given_up: dict[tuple, dict] = {}
    manifest_path = sp.domain_dir / MANIFEST
    for split in sp.earlier:
        made = by_key.get((sp.domain, split))
        if made is not None:
            settings, cells = made.settings, made.selection.out_of_reach_cells()
        else:
            entry = read_json(manifest_path)["splits"][split]
            settings, cells = entry["settings"], entry.get("out_of_reach_cells", [])
        if any(settings.get(k) != sp.settings.get(k) for k in REACH_SETTINGS):
            continue
        order = DOMAIN_PARAMETERS[sp.domain]
        for cell in cells:
            params = tuple((name, cell["params"][name]) for name in order)
            given_up.setdefault(params, {"split": cell["found_in"], "attempts": cell["attempts"]})
    return given_up


__all__ = [
    "DAMAGED_SETTINGS_REMEDY",
    "REACH_SETTINGS",
    "SplitPlan",
    "earlier_out_of_reach_cells",
    "earlier_split_keys",
    "prepare_split",
    "split_lock",
]
