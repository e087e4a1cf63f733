"""The dataset format: file names, splits, the columns of a split table, and the work folders of unfinished jobs.

One row per state on an instance's optimal plan:

============================  ==========================================================================
column                        meaning
============================  ==========================================================================
``domain``                    domain key (``blocksworld``, ``ferry``, ``gripper``, ``visitall``)
``split``                     ``train``, ``val``, ``test``, ``plan`` or ``test-grid``
``instance``                  problem name (unique in a split; encodes the generator seed, so a test-grid
                              instance named like a test one is the same problem)
``problem``                   problem PDDL path, relative to the dataset root
``step``                      position on the optimal plan (0 = initial state)
``plan_length``               length of the instance's optimal plan
``state``                     atoms true in the state, static ones included, lower case, sorted
``goal``                      the goal atoms, sorted
``h_star``                    optimal cost-to-go (``plan_length - step``)
``blind`` ... ``lmcut``       tnlib's blind, goal count, h_max, h_add, h_FF, LM-cut (float64); ``lmcut`` is
                              Fast Downward's LM-cut (the paper's labels) where the split's manifest entry
                              holds an ``lmcut_labels`` record (tnlib.data.lmcut_relabelling; data/paper)
``ff_ignored_deletes_total``  delete effects of h_FF's relaxed plan; ``..._mean``: per relaxed action
``h_sat``                     length of a GBFS(h_FF) plan from the state (an upper bound on h*), NaN if none
============================  ==========================================================================

The linear model's features are the columns :data:`FEATURE_COLUMNS`: :data:`tnlib.paper.LINEAR_FEATURES` with
the two ignored-delete counts prefixed ``ff_`` (they are counted on h_FF's relaxed plan).
"""
from __future__ import annotations

import os
from pathlib import Path

from tnlib.paper import LINEAR_FEATURES

FORMAT = "tnlib-heuristic-dataset"
FORMAT_VERSION = 2  # instance keys; splits distinct and disjoint (tnlib.data.instance_keys)
# The splits every profile makes, in the order they are made (what `tnlib data generate` makes by default).
SPLITS = ("train", "val", "test", "plan")
# The test grid labelled in full: the test split's very slots and generator draws, made where a domain has an exact
# solver (tnlib.data.exact_solves), so no cell is lost to a solver's limits. It shares the test split's instances
# wherever the test split holds the slot's first eligible draw, so that a table on both compares the same problems
# at the sizes both have; it is kept apart from what a model is trained and selected on (DISJOINT_FROM).
TEST_GRID = "test-grid"
# Every split a dataset may hold, in the order they are made.
ALL_SPLITS = SPLITS + (TEST_GRID,)
# The splits each split shares no instance with (up to renaming objects; tnlib.data.instance_keys): each of the
# four is disjoint from the ones made before it, so every instance of them is distinct; the test grid is disjoint
# from train and val, and draws the test split's problems again.
DISJOINT_FROM: dict[str, tuple[str, ...]] = {
    "train": (),
    "val": ("train",),
    "test": ("train", "val"),
    "plan": ("train", "val", "test"),
    TEST_GRID: ("train", "val"),
}
MANIFEST = "manifest.json"
# The lock every writer of a dataset root's manifests holds, beside them.
MANIFEST_LOCK = ".manifest.lock"
# Where an unfinished generation keeps its per-attempt work files, under each domain folder (removed when a split
# is consolidated), and the settings file of a split's or a plan set's work folder there.
WORK = ".work"
WORK_SETTINGS = "settings.json"
# Solve outcomes that mean "not within the split's limits" (tnlib.planning.fast_downward statuses): what the
# attempt selection's out-of-reach rule counts, and the cell card reports.
LIMIT_HITS = ("timeout", "out_of_memory")
DEFAULT_PROFILE = "small"

# How a split's instances get their optimal plans (its settings' ``solver``; tnlib.data.exact_solves): Fast
# Downward's A* with LM-cut, under the split's time and memory limits, or the domain's exact solver
# (tnlib.planning.optimal_costs) where it has one. A split made by the default route records no ``solver``, so the
# settings of a split that name no solver match the default route.
DEFAULT_SOLVER = "fast-downward"
EXACT_SOLVER = "exact"
SOLVERS = (DEFAULT_SOLVER, EXACT_SOLVER)

# Whose LM-cut a split's ``lmcut`` column holds (its settings' ``lmcut``; tnlib.data.labels): tnlib's own or Fast
# Downward's, the one the paper's labels hold (tnlib.planning.fast_downward_states; the two break ties between
# equally costly landmarks otherwise). A split labelled with tnlib's records no ``lmcut``, so the settings of splits
# made before the choice existed match it; a split relabelled with Fast Downward's afterwards
# (tnlib.data.lmcut_relabelling) says so in its manifest entry's LMCUT_LABELS_RECORD. Planning computes l with the
# LM-cut a model's training split holds (tnlib.learning.learned_heuristic).
TNLIB_LMCUT = "tnlib"
FAST_DOWNWARD_LMCUT = "fast-downward"
LMCUT_SOURCES = (TNLIB_LMCUT, FAST_DOWNWARD_LMCUT)
LMCUT_LABELS_RECORD = "lmcut_labels"

# Label-free plan sets (tnlib.data.plan_sets reads them, tnlib.data.plan_set_generation writes them): problem files
# drawn from a grid by the generator alone, for planning only. Per domain, ROOT/DOMAIN/<folder>/ holds the set's
# manifest and its problems/ folder; the folder names the grid the set was drawn from ("test": the profile's plan
# slots over its test grid, the paper's appendix; "authors": tnlib.paper.AUTHORS_PLAN_GRID, the grid the authors'
# scripts drew their 100 plan instances from).
PLAN_SET_FORMAT = "tnlib-plan-set"
PLAN_SETS = {"test": "plan-set", "authors": "plan-set-authors"}

# The heuristic values a labelled state holds, one column each: every heuristic tnlib.planning.heuristics offers.
HEURISTIC_COLUMNS = ("blind", "goalcount", "hmax", "hadd", "ff", "lmcut")
# The table's columns, in order, with their Arrow types (meanings above).
TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("domain", "string"),
    ("split", "string"),
    ("instance", "string"),
    ("problem", "string"),
    ("step", "int64"),
    ("plan_length", "int64"),
    ("state", "list<string>"),
    ("goal", "list<string>"),
    ("h_star", "int64"),
    *((name, "float64") for name in HEURISTIC_COLUMNS),
    ("ff_ignored_deletes_total", "float64"),
    ("ff_ignored_deletes_mean", "float64"),
    ("h_sat", "float64"),
)

# The columns a labelled state fills (tnlib.data.labels), in table order; the first four name where it comes from.
RECORD_COLUMNS = tuple(name for name, _ in TABLE_COLUMNS[4:])
FEATURE_COLUMNS = tuple(f"ff_{name}" if name.startswith("ignored_deletes") else name for name in LINEAR_FEATURES)


# How a split's table is written (pyarrow.parquet.write_table's options). train, val, test and plan: zstd at its
# default level with dictionary encoding, the form they were made in, so that a split made again is the file a
# training campaign reads, byte for byte. The test grid's tables are the large ones (up to 15,000 states, each
# listing its problem's static atoms again: a ferry state of 20 locations holds 380 (connected ...) atoms): with
# no dictionary, zstd level 19 and pages of up to 16 MiB (a column a page, so zstd sees the whole column) they
# take half the bytes -- data/paper's four: 0.91 MiB under the splits' options, 0.45 MiB under these -- which the
# repository's size limit needs; level 22 saves 1.5% more at three times the writing time. Readers read either form.
SPLIT_TABLE_OPTIONS = dict(compression="zstd")
TEST_GRID_TABLE_OPTIONS = dict(compression="zstd", compression_level=19, use_dictionary=False, data_page_size=2**24)


def split_table_bytes(table, split: str) -> bytes:
    """The Parquet file of a split's pyarrow ``table``, written as that split's tables are (above)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = pa.BufferOutputStream()
    pq.write_table(table, buffer, **(TEST_GRID_TABLE_OPTIONS if split == TEST_GRID else SPLIT_TABLE_OPTIONS))
    return buffer.getvalue().to_pybytes()


def arrow_schema():
    """The pyarrow schema of a split table (:data:`TABLE_COLUMNS`)."""
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "list<string>": pa.list_(pa.string())}
    return pa.schema([(name, types[kind]) for name, kind in TABLE_COLUMNS])


def unfinished_splits(root: str | os.PathLike, domain: str) -> list[str]:
    """The splits of ``domain`` under ``root`` with a `generate` work folder (running or interrupted), in the order
    they are made."""
    work = Path(root) / domain / WORK
    return [split for split in ALL_SPLITS if (work / split / WORK_SETTINGS).is_file()]


def unfinished_plan_sets(root: str | os.PathLike, domain: str) -> list[str]:
    """The plan sets of ``domain`` under ``root`` with a `plan-set` work folder (drawing or solving, running or
    interrupted)."""
    work = Path(root) / domain / WORK
    return [name for name in PLAN_SETS.values() if (work / name).is_dir()]
