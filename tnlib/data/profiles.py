"""Dataset profiles: which instances each split of a dataset holds, and how they are seeded and named.

A profile (``small``, ``paper``) gives, per domain and split, a :class:`SplitGrid` of generator parameters and seed
numbers, and the solver's limits per split. This module only describes datasets: :mod:`tnlib.data.generation`
makes them, and what reads a dataset (the manifest, the loader, the reports) takes profile names and slot names
from here without importing the generator.

Splits
------
``train``, ``val``, ``test`` and ``plan`` (instances for the planning experiments, drawn from the test
distribution: the test grid's parameters, cycled, with seeds of their own); and, in the paper profile, for
domains with an exact solver, ``test-grid``: test grid cells again, every slot, with the test split's seeds.
A split's *slots* are (parameters, seed number) pairs, listed seed-major (every parameter combination for seed
number 1, then for 2, ...); a split with a ``count`` keeps the first ``count`` slots, so a short ``plan`` split still covers every size evenly.

Generator seeds
---------------
The generator seed of attempt ``a`` (0-based) of slot (params, seed number ``n``) in split ``S`` is::

    seed = ((SPLIT_CODE[S] * 10**6 + params_code) * 10**4 + n) * 10**2 + a

with ``SPLIT_CODE = {train: 1, val: 2, test: 3, plan: 4}``, ``params_code`` = the first 8 bytes of
sha256(``"<domain>-<params>"``, e.g. ``"ferry-l3-c2"``) mod 10**6, ``0 <= n < 10**4`` and ``0 <= a < 100``. The
split code is the leading digit block, so two splits never share a seed (:func:`split_of_seed` recovers it), and
within a split (params, n, a) never repeat. ``params_code`` only decorrelates instances of different sizes that
share a seed number. An instance is named by :func:`tnlib.planning.generators.problem_name` with this seed
(``blocksworld-b5-s1482901000100``), so names are unique across the whole dataset and
``tnlib generate blocksworld --seed 1482901000100 --blocks 5`` rewrites the problem file exactly.
"""
from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from tnlib.data.schema import ALL_SPLITS, FAST_DOWNWARD_LMCUT, TEST_GRID, TNLIB_LMCUT
from tnlib.errors import DatasetError
from tnlib.files import COMPRESSED_SUFFIX
from tnlib.paper import LABEL_MEMORY_LIMIT_MB, LABEL_TIME_LIMITS, MAX_ATTEMPTS, PLAN_INSTANCES
from tnlib.planning.generators import DOMAIN_PARAMETERS, problem_name
from tnlib.planning.search_settings import PAPER_SEARCH

# The test grid draws with the test split's code: its slots are the test split's, and so are its problems
# (tnlib.data.schema.TEST_GRID); split_of_seed names a code's first split, test.
SPLIT_CODES = {"train": 1, "val": 2, "test": 3, "plan": 4, TEST_GRID: 3}
SEED_SCHEME = (
    "seed = ((SPLIT_CODE * 10**6 + params_code) * 10**4 + seed_number) * 10**2 + attempt; "
    "SPLIT_CODE train 1, val 2, test 3, plan 4; params_code = int.from_bytes(sha256('<domain>-<params>')[:8]) "
    "% 10**6; seed_number < 10**4; attempt < 100 (0-based)"
)

# The rule every split of format 2 is made under (part of a split's settings, so a dataset whose
# settings lack it is not taken for complete).
DISTINCT_RULE = (
    "instance_key v1: no instance twice in a split; splits made in the order train, val, test, plan, each disjoint "
    "from the earlier ones"
)

Params = tuple[tuple[str, Any], ...]  # a parameter combination, in the generator's parameter order
# The key of a split's recorded grid (SplitGrid.describe) that lists the cells stored compressed.
COMPRESSED_PROBLEMS = "compressed_problems"


# ---------------------------------------------------------------------------------------------------------------
# Profiles


@dataclass(frozen=True)
class SplitGrid:
    """The instances of one split: every parameter combination for every seed number (seed-major order), the
    first ``count`` of them when ``count`` is set."""

    combos: tuple[Params, ...]
    seeds: tuple[int, ...]
    count: int | None = None
    # Cells whose problem files the dataset stores gzip-compressed (tnlib.planning.pddl.pddl_file_bytes): those
    # whose plain files the repository has no room for. Every other cell's files are plain PDDL. A cell named here
    # and not in ``combos`` is none of this grid's (a profile may name such cells before its grid holds them).
    compressed: tuple[Params, ...] = ()

    def slots(self) -> list[tuple[Params, int]]:
        pairs = [(combo, n) for n in self.seeds for combo in self.combos]
        if self.count is not None:
            if self.count > len(pairs):
                raise ValueError(f"split asks for {self.count} instances but its grid has only {len(pairs)}")
            pairs = pairs[: self.count]
        return pairs

    def describe(self) -> dict:
        """JSON form for the manifest (``compressed_problems`` only where some cell stores compressed files, so a
        grid without any describes itself as it always has)."""
        described = {
            "params": [dict(combo) for combo in self.combos],
            "seed_numbers": describe_seed_numbers(self.seeds),
            "count": self.count,
        }
        compressed = [dict(combo) for combo in self.combos if combo in self.compressed]
        if compressed:
            described[COMPRESSED_PROBLEMS] = compressed
        return described

    def problem_file(self, domain: str, split: str, name: str, params: Mapping[str, Any] | Params) -> str:
        """Where an instance of cell ``params`` keeps its problem file, relative to the dataset root:
        ``DOMAIN/problems/SPLIT/NAME.pddl``, with ``.gz`` added in a cell of the grid stored compressed."""
        compressed = dict(params) in [dict(combo) for combo in self.combos if combo in self.compressed]
        return f"{domain}/problems/{split}/{name}.pddl{COMPRESSED_SUFFIX if compressed else ''}"


@dataclass(frozen=True)
class Profile:
    """A dataset recipe: a grid per domain and split, and the solver's limits per split."""

    name: str
    grids: dict[str, dict[str, SplitGrid]]
    time_limits: dict[str, float]  # seconds, per split
    memory_limit_mb: int = LABEL_MEMORY_LIMIT_MB
    max_attempts: int = MAX_ATTEMPTS
    sat_max_evaluations: int = PAPER_SEARCH.max_evaluations  # h_sat's GBFS, under the search's default limit
    lmcut: str = TNLIB_LMCUT  # whose LM-cut labels the lmcut column (tnlib.data.schema.LMCUT_SOURCES)

    def grid(self, domain: str, split: str) -> SplitGrid:
        try:
            return self.grids[domain][split]
        except KeyError:
            raise DatasetError(f"profile {self.name!r} has no {split!r} split for domain {domain!r}") from None


def combos(domain: str, **ranges: Iterable[Any]) -> tuple[Params, ...]:
    """Every combination of the given parameter values, in the generator's parameter order."""
    order = DOMAIN_PARAMETERS[domain]
    if set(ranges) != set(order):
        raise ValueError(f"{domain} takes parameters {', '.join(order)}, got {', '.join(ranges)}")
    values = [list(ranges[p]) for p in order]
    return tuple(tuple(zip(order, combo)) for combo in itertools.product(*values))


def square_grids(sizes: Iterable[int], ratios: Iterable[float]) -> tuple[Params, ...]:
    """visitall combinations with x = y (the paper's train and val grids)."""
    return tuple((("x", s), ("y", s), ("ratio", r)) for s in sizes for r in ratios)


def _seed_range(first: int, last: int) -> tuple[int, ...]:
    return tuple(range(first, last + 1))


def _paper_profile() -> Profile:
    """The paper's appendix table "List of instance generation parameters"; plan: 100 test-distribution draws."""
    r = (0.5, 1.0)
    grids = {
        "blocksworld": {
            "train": SplitGrid(combos("blocksworld", blocks=range(5, 17)), _seed_range(1, 38)),
            "val": SplitGrid(combos("blocksworld", blocks=range(5, 17)), _seed_range(1, 11)),
            "test": SplitGrid(combos("blocksworld", blocks=range(11, 23)), _seed_range(1, 11)),
        },
        "ferry": {
            "train": SplitGrid(combos("ferry", locations=range(2, 7), cars=range(2, 7)), _seed_range(1, 16)),
            "val": SplitGrid(combos("ferry", locations=range(2, 7), cars=range(2, 7)), _seed_range(1, 4)),
            "test": SplitGrid(combos("ferry", locations=(10, 15, 20, 25, 30), cars=(10, 15, 20, 25, 30)), _seed_range(1, 16)),
        },
        "gripper": {
            "train": SplitGrid(combos("gripper", balls=(2, 4, 6, 8, 10)), _seed_range(1, 80)),
            "val": SplitGrid(combos("gripper", balls=(2, 4, 6, 8, 10)), _seed_range(1, 20)),
            "test": SplitGrid(combos("gripper", balls=(20, 40, 60, 80, 100)), _seed_range(1, 20)),
        },
        "visitall": {
            "train": SplitGrid(square_grids(range(3, 6), r), _seed_range(1, 70)),
            "val": SplitGrid(square_grids(range(3, 6), r), _seed_range(1, 17)),
            "test": SplitGrid(combos("visitall", x=range(5, 8), y=range(5, 8), ratio=r), _seed_range(1, 17)),
        },
    }
    for splits in grids.values():
        test = splits["test"]
        splits["plan"] = SplitGrid(test.combos, _seed_range(1, PLAN_INSTANCES), count=PLAN_INSTANCES)
    # The test grid labelled exactly (tnlib.data.exact_solves), at the test split's seeds: the cells data/paper has
    # room for, smallest first (data/README.md, "The test grid, labelled exactly", gives each cell's size and time
    # and what is left out); cells the split lacks are filled into it by `tnlib data fill` (its other instances
    # stay as they are). gripper: the appendix's whole test grid, 20-100 balls. ferry: the appendix's whole test grid,
    # 10-30 locations, the 25 and 30 with their files compressed (below).
    # visitall's test split already holds every distinct instance its grid's slots draw but for four of 7x7 with
    # ratio 1, where A* timed out: that cell is its test grid. blocksworld: 11-22 blocks, the appendix's whole test
    # grid (labels: h_sat's searches on every state, about a minute an instance at 20-22 blocks).
    test_grid_cells = {
        "gripper": combos("gripper", balls=(20, 40, 60, 80, 100)),
        "ferry": combos("ferry", locations=(10, 15, 20, 25, 30), cars=(10, 15, 20, 25, 30)),
        "visitall": combos("visitall", x=(7,), y=(7,), ratio=(1.0,)),
        "blocksworld": combos("blocksworld", blocks=range(11, 23)),
    }
    # ferry's 25 and 30 locations store their problem files gzip-compressed: a plain 25- or 30-location file lists
    # every pair of locations (15-20 KB), a compressed one takes a tenth of that (data/README.md, "Left out, and
    # why: room"). The cells before them keep their plain files.
    compressed_test_grid_cells = {"ferry": combos("ferry", locations=(25, 30), cars=(10, 15, 20, 25, 30))}
    for domain, cells in test_grid_cells.items():
        grids[domain][TEST_GRID] = SplitGrid(cells, grids[domain]["test"].seeds,
                                             compressed=compressed_test_grid_cells.get(domain, ()))
    return Profile(
        name="paper",
        grids=grids,
        time_limits={**LABEL_TIME_LIMITS, "plan": LABEL_TIME_LIMITS["test"], TEST_GRID: LABEL_TIME_LIMITS["test"]},
        memory_limit_mb=LABEL_MEMORY_LIMIT_MB,
        lmcut=FAST_DOWNWARD_LMCUT,  # the paper's labels hold Fast Downward's LM-cut
    )


def _small_profile() -> Profile:
    """A reduced grid that generates on 2 cores in minutes: the paper's small sizes with fewer seeds for train
    and val, test and plan at sizes Fast Downward solves in seconds."""
    r = (0.5, 1.0)
    grids = {
        "blocksworld": {
            "train": SplitGrid(combos("blocksworld", blocks=range(4, 9)), _seed_range(1, 40)),
            "val": SplitGrid(combos("blocksworld", blocks=range(4, 9)), _seed_range(1, 10)),
            "test": SplitGrid(combos("blocksworld", blocks=(9, 10)), _seed_range(1, 25)),
        },
        "ferry": {
            "train": SplitGrid(combos("ferry", locations=range(2, 5), cars=range(2, 5)), _seed_range(1, 22)),
            "val": SplitGrid(combos("ferry", locations=range(2, 5), cars=range(2, 5)), _seed_range(1, 6)),
            "test": SplitGrid(combos("ferry", locations=(5, 6), cars=(5, 6)), _seed_range(1, 13)),
        },
        "gripper": {
            "train": SplitGrid(combos("gripper", balls=range(2, 7)), _seed_range(1, 40)),
            "val": SplitGrid(combos("gripper", balls=range(2, 7)), _seed_range(1, 10)),
            "test": SplitGrid(combos("gripper", balls=(8, 9, 10)), _seed_range(1, 17)),
        },
        "visitall": {
            "train": SplitGrid(square_grids((3, 4), r), _seed_range(1, 50)),
            "val": SplitGrid(square_grids((3, 4), r), _seed_range(1, 12)),
            "test": SplitGrid(square_grids((5,), r), _seed_range(1, 25)),
        },
    }
    for splits in grids.values():
        splits["plan"] = SplitGrid(splits["test"].combos, _seed_range(1, 100), count=24)
    return Profile(
        name="small",
        grids=grids,
        time_limits={"train": 60, "val": 60, "test": 120, "plan": 120},
        memory_limit_mb=4000,
    )


PROFILES: dict[str, Profile] = {"small": _small_profile(), "paper": _paper_profile()}


def get_profile(profile: str | Profile) -> Profile:
    if isinstance(profile, Profile):
        return profile
    try:
        return PROFILES[profile]
    except KeyError:
        raise DatasetError(f"unknown profile {profile!r}; choose from {', '.join(PROFILES)}") from None


# ---------------------------------------------------------------------------------------------------------------
# Seeds and names


def params_label(domain: str, params: Params | dict) -> str:
    """e.g. ``ferry-l3-c2``: the problem name without its seed."""
    return problem_name(domain, 0, **dict(params))[: -len("-s0")]


def params_code(domain: str, params: Params | dict) -> int:
    digest = hashlib.sha256(params_label(domain, params).encode()).digest()
    return int.from_bytes(digest[:8], "big") % 10**6


# The seed scheme's two digits for an attempt: a slot draws at most this many instances.
ATTEMPTS_PER_SLOT = 100


def generator_seed(split: str, domain: str, params: Params | dict, seed_number: int, attempt: int) -> int:
    """The generator seed of one attempt of one slot (module docstring: disjoint across splits)."""
    if split not in SPLIT_CODES:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(ALL_SPLITS)}")
    if not 0 <= seed_number < 10**4:
        raise ValueError(f"seed number must be in [0, 10000), got {seed_number}")
    if not 0 <= attempt < ATTEMPTS_PER_SLOT:
        raise ValueError(f"attempt must be in [0, {ATTEMPTS_PER_SLOT}), got {attempt}")
    return (((SPLIT_CODES[split] * 10**6 + params_code(domain, params)) * 10**4 + seed_number) * ATTEMPTS_PER_SLOT
            + attempt)


def split_of_seed(seed: int) -> str:
    """The split a generator seed belongs to (inverse of the leading block of :func:`generator_seed`); ``test`` for
    a test-grid seed, which draws the test split's problems."""
    code = seed // 10**12
    for split, c in SPLIT_CODES.items():
        if c == code:
            return split
    raise ValueError(f"{seed} is not a tnlib dataset seed")


def slot_key(domain: str, params: Params | dict, seed_number: int) -> str:
    """Work-file name of a slot, e.g. ``ferry-l3-c2-n7``."""
    return f"{params_label(domain, params)}-n{seed_number}"

def describe_seed_numbers(numbers: Sequence[int]) -> str:
    """``1-40`` style description of a sorted integer sequence."""
    numbers = sorted(numbers)
    parts, start = [], None
    for i, n in enumerate(numbers):
        if start is None:
            start = n
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            parts.append(f"{start}" if start == n else f"{start}-{n}")
            start = None
    return ",".join(parts)
