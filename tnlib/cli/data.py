"""`tnlib data generate | fill | plan-set | verify | train-pairs | card | status`: build, check and describe
datasets (see :mod:`tnlib.data`)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tnlib.cli import COMMANDS, declare_outputs
from tnlib.data.generation import GenerateOptions, generate_dataset
from tnlib.data.generation_status import status_card
from tnlib.data.manifest import (
    cell_card,
    data_card,
    default_data_root,
    find_datasets,
    verify_dataset,
)
from tnlib.data.plan_set_generation import CHECK_TIME_LIMIT, generate_plan_set
from tnlib.data.plan_sets import find_plan_sets, load_plan_set, verify_plan_set
from tnlib.data.profiles import PROFILES
from tnlib.data.schema import (ALL_SPLITS, DEFAULT_PROFILE, DEFAULT_SOLVER, MANIFEST, PLAN_SETS, SOLVERS, SPLITS,
                               TEST_GRID)
from tnlib.data.slot_filling import fill_empty_slots
from tnlib.data.lmcut_relabelling import CHECK_STATES, relabel_lmcut
from tnlib.errors import CommandError, DatasetError, LabelError
from tnlib.paper import DOMAINS
from tnlib.planning.search_settings import PAPER_SEARCH


def _profile_limits_text(split: str | None) -> str:
    """Each profile's solve limit for ``split`` (its time limit, seconds) or, with None, its memory limit (MiB),
    as a flag's help shows them: ``paper 300, small 60``."""
    return ", ".join(f"{name} {profile.time_limits[split] if split else profile.memory_limit_mb}"
                     for name, profile in sorted(PROFILES.items()))


def register_data(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "data",
        help=COMMANDS["data"][1],
        description="Datasets of optimally solved instances labelled per state (see tnlib.data, data/README.md).",
    )
    commands = parser.add_subparsers(dest="data_command", metavar="SUBCOMMAND")

    _register_generate(commands)
    _register_plan_set(commands)

    ver = commands.add_parser(
        "verify",
        help="check manifests, checksums and distinct instances; non-zero exit on any problem",
        description="Verify every dataset under FOLDER (default: the data root) against its manifests, and that "
        "no instance occurs twice in a split or in two splits (up to renaming objects); print duplicate counts.",
    )
    ver.add_argument("folder", nargs="?", type=Path, help="dataset root or data root")
    ver.set_defaults(func=_run_verify)

    pairs = commands.add_parser(
        "train-pairs",
        help="(re)compute which val/test/plan rows equal a train (state, goal) pair; record it in the manifests",
        description="Key every row's (state, goal) up to renaming objects and record, per val, test and plan "
        "split, the rows equal to a row of the domain's whole train split (model selection validates on the "
        "others; see tnlib.data.train_pairs). `tnlib data generate` does this itself; run it after changing a "
        "dataset's splits by other means (e.g. merging manifests).",
    )
    pairs.add_argument("folder", nargs="?", type=Path, help="dataset root or data root (default: the data root)")
    pairs.add_argument("--domain", action="append", metavar="D", help="only this domain (repeatable)")
    pairs.set_defaults(func=_run_train_pairs)

    relabel = commands.add_parser(
        "relabel-lmcut",
        help="set finished splits' lmcut column (the truncation's lower bound l) to Fast Downward's LM-cut, the "
        "paper's labels",
        description="Rewrite the lmcut column of a dataset root's finished splits with Fast Downward's LM-cut, the "
        "value the paper's labels hold (tnlib's own LM-cut breaks ties in another order and is weaker on "
        "visitall): each problem translated once and each state written into its translated task; a sample of "
        "each split's states translated one by one must give the same values, and every value must lie between "
        "h_max and h*, or nothing is written (tnlib.data.lmcut_relabelling). A split already relabelled by this "
        "Fast Downward is skipped, so an interrupted run resumes.",
    )
    relabel.add_argument("folder", type=Path, help="dataset root")
    relabel.add_argument("--domain", action="append", metavar="D", help="only this domain (repeatable)")
    relabel.add_argument("--splits", nargs="+", choices=ALL_SPLITS, help="only these splits (default: all)")
    relabel.add_argument("--check-states", type=int, default=CHECK_STATES, metavar="N",
                         help="states per split evaluated again with each state translated as a problem of its own "
                         "(default: %(default)s)")
    relabel.set_defaults(func=_run_relabel_lmcut)

    card = commands.add_parser("card", help="print the data card table (Markdown) of a dataset root")
    card.add_argument("folder", nargs="?", type=Path, help="dataset root (default: DATA_ROOT/small)")
    card.add_argument("--cells", action="store_true",
                      help="one row per cell (parameter combination) instead: instances solved, slots left empty "
                      "and why, solve times, attempts at the limit")
    card.add_argument("--domain", action="append", help="only this domain (repeatable; with --cells)")
    card.set_defaults(func=_run_card)

    fill = commands.add_parser(
        "fill", help="give the empty slots of finished splits (out of reach for A*, or in cells the profile's grid "
        "has gained) their instances, solved by the domain's exact solver (every other instance stays as it is)",
        description="Fill the slots that A* left empty as out of reach in finished splits of a dataset root, and the "
        "slots of cells the profile's grid has gained since a split was made (the paper profile's test-grid): each "
        "gets the generator's draw for it, solved by the domain's exact solver and labelled; the split's other "
        "instances, problem files and table rows stay byte for byte (tnlib.data.slot_filling). Resumable: an "
        "interrupted run keeps its labelled attempts and reads them back when rerun.",
    )
    fill.add_argument("folder", type=Path, help="dataset root")
    fill.add_argument("--domain", required=True, help="a domain with an exact solver")
    fill.add_argument("--splits", nargs="+", default=["train", "val"], choices=ALL_SPLITS,
                      help="the splits whose empty slots to fill (default: train val)")
    fill.set_defaults(func=_run_fill)

    status = commands.add_parser(
        "status", help="where an unfinished `generate` stands, per cell (reads its work folder; safe while it runs)",
        description="Where the unfinished splits of a dataset root stand -- a `tnlib data generate` that is running "
        "or was interrupted -- read from its work folders without writing anything: per cell, the instances so far, "
        "the solves recorded (solved, at the limit) and their times, the slots still open, and the cells already "
        "given up as out of reach. Rerunning the same `generate` command resumes from exactly this state.",
    )
    status.add_argument("folder", nargs="?", type=Path, help="dataset root (default: DATA_ROOT/small)")
    status.set_defaults(func=_run_status)
    parser.set_defaults(func=lambda args: (parser.print_help(), 0)[1])


def _register_generate(commands: argparse._SubParsersAction) -> None:
    """``tnlib data generate``: a dataset generated, or resumed."""
    gen = commands.add_parser(
        "generate",
        help="generate (or resume) a dataset",
        description="Generate instances, solve them with A* + LM-cut, label every state on the optimal plan and "
        "store the splits as Parquet with a manifest. Rerunning the same command resumes an interrupted run.",
    )
    gen.add_argument("--domain", action="append", required=True, metavar="D",
                     help=f"domain ({', '.join(DOMAINS)}) or 'all'; repeatable")
    gen.add_argument("--profile", default=DEFAULT_PROFILE, choices=sorted(PROFILES),
                     help="grid and limits (default %(default)s)")
    gen.add_argument("--splits", default=",".join(SPLITS), metavar="S,S",
                     help=f"comma-separated splits (default {','.join(SPLITS)}; {TEST_GRID}: the test grid "
                     "again, every slot, for the domains with an exact solver)")
    gen.add_argument("--workers", type=int, default=1, metavar="N", help="local worker processes (default 1)")
    gen.add_argument("--scheduler", metavar="ADDRESS", help="run on this Dask scheduler instead of locally")
    gen.add_argument("--out", type=Path, metavar="FOLDER",
                     help="dataset root (default: DATA_ROOT/PROFILE, DATA_ROOT = $TNLIB_DATA or <repo>/data)")
    gen.add_argument("--time-limit", type=float, metavar="S",
                     help=f"solve limit for train and val (seconds; default: the profile's, {_profile_limits_text('train')})")
    gen.add_argument("--test-time-limit", type=float, metavar="S",
                     help=f"solve limit for test and plan (seconds; default: the profile's, {_profile_limits_text('test')})")
    gen.add_argument("--memory-limit", type=int, metavar="MB",
                     help=f"solve memory limit (MiB; default: the profile's, {_profile_limits_text(None)})")
    gen.add_argument("--max-attempts", type=int, metavar="N", help="attempts per instance (default 20)")
    gen.add_argument("--sat-evaluations", type=int, metavar="N",
                     help=f"GBFS evaluation limit for h_sat (default: {PAPER_SEARCH.max_evaluations})")
    gen.add_argument("--out-of-reach-after", type=int, metavar="K",
                     help="give up a cell (parameter combination) after K solves in a row hit the time or memory "
                     "limit: its remaining slots stay empty and the manifest lists the cell as out of reach, with "
                     "those attempts' times (default: off, every slot gets its attempts as in the paper)")
    gen.add_argument("--solver", choices=SOLVERS, metavar="NAME",
                     help=f"how instances are solved optimally: {DEFAULT_SOLVER} (A* + LM-cut under the limits; the "
                     "default) or exact (the domain's exact solver, no limits, where it has one: gripper, ferry, "
                     "visitall; A* + LM-cut elsewhere); each split's manifest entry records the route it took")
    gen.add_argument("--force", action="store_true", help="regenerate the splits even if present (rerunning the "
                     "same command after an interruption resumes it)")
    gen.add_argument("--reuse", action="append", type=Path, default=[], metavar="FOLDER",
                     help="also reuse solves recorded in this dataset root (repeatable; the output root is always "
                     "used): same problem bytes and Fast Downward build, the same limits (a plan: limits no larger)")
    gen.add_argument("--no-reuse", action="store_true", help="solve every attempt again (e.g. to time the solves)")
    gen.add_argument("--quiet", action="store_true", help="no progress bar")
    gen.set_defaults(func=_run_data_generate)
    declare_outputs(gen, out="folder")


def _register_plan_set(commands: argparse._SubParsersAction) -> None:
    """``tnlib data plan-set``: a label-free plan set drawn, or resumed."""
    plan_set = commands.add_parser(
        "plan-set",
        help="draw (or resume) a label-free plan set at the test sizes: problems for planning, no optimal solve needed",
        description="Draw a domain's plan instances from the test grid (or the grid the authors' scripts used) by "
        "the generator alone: distinct up to renaming objects, disjoint from the dataset's train, val and test "
        "splits, non-trivial, and each shown solvable by a validated satisficing plan (Fast Downward, lazy greedy "
        "h_FF). With --optimal-time-limit every instance is also solved optimally under that limit, so the "
        "paper's selection (solved optimally within a limit) can be applied; the labelled plan split's solves of "
        "the same draws are recorded too. Rerunning resumes; another --optimal-time-limit adds its solves.",
    )
    plan_set.add_argument("folder", type=Path, help="dataset root holding the domain's train, val and test splits")
    plan_set.add_argument("--domain", action="append", required=True, metavar="D",
                          help=f"domain ({', '.join(DOMAINS)}) or 'all'; repeatable")
    plan_set.add_argument("--grid", default="test", choices=sorted(PLAN_SETS),
                          help="test: the profile's plan slots over its test grid (default); authors: the grid the "
                          "authors' scripts drew the paper's plan instances from")
    plan_set.add_argument("--count", type=int, metavar="N", help="instances per domain (default: the profile's plan "
                          "count, 100 for paper)")
    plan_set.add_argument("--check-time-limit", type=float, default=CHECK_TIME_LIMIT, metavar="S",
                          help=f"satisficing plan's time limit (seconds; default {CHECK_TIME_LIMIT:g})")
    plan_set.add_argument("--optimal-time-limit", type=float, metavar="S",
                          help="also solve every instance optimally (A* + LM-cut) under this limit (seconds)")
    plan_set.add_argument("--exact", action="store_true",
                          help="also record every instance's h* by the domain's exact solver (no limit; its optimal "
                          "plan validated, and checked against every optimal plan A* found)")
    plan_set.add_argument("--exact-max-nodes", type=int, metavar="N",
                          help="with --exact: give the searching solvers (blocksworld, visitall) at most N search "
                          "nodes per instance, recording status node_limit where that is not enough (default: no "
                          "bound); a rerun with a larger N (or none) tries those again")
    plan_set.add_argument("--workers", type=int, default=1, metavar="N", help="local worker processes (default 1)")
    plan_set.add_argument("--quiet", action="store_true", help="no progress display")
    plan_set.set_defaults(func=_run_plan_set)


def _run_data_generate(args: argparse.Namespace) -> int:
    domains: list[str] = []
    for d in args.domain:
        for name in d.split(","):
            for item in DOMAINS if name == "all" else [name]:
                if item not in domains:
                    domains.append(item)
    splits = [s for s in args.splits.split(",") if s]
    if args.workers < 1:
        raise CommandError(f"--workers must be >= 1, got {args.workers}")
    if args.out_of_reach_after is not None and args.out_of_reach_after < 1:
        raise CommandError(f"--out-of-reach-after must be >= 1, got {args.out_of_reach_after}")
    out = args.out or default_data_root() / args.profile
    try:
        options = GenerateOptions(
            workers=args.workers, scheduler=args.scheduler, force=args.force, progress=not args.quiet,
            time_limit=args.time_limit, test_time_limit=args.test_time_limit, memory_limit_mb=args.memory_limit,
            max_attempts=args.max_attempts, sat_max_evaluations=args.sat_evaluations, reuse=args.reuse,
            reuse_solutions=not args.no_reuse, out_of_reach_after=args.out_of_reach_after, solver=args.solver,
        )
        report = generate_dataset(out, domains, args.profile, splits, options)
    except DatasetError as err:
        raise CommandError(str(err)) from None
    for name in report.skipped:
        print(f"{name}: complete, skipped")
    for name, counts in report.splits.items():
        unfilled = f", {counts['unfilled']} slots unfilled (cell exhausted)" if counts["unfilled"] else ""
        if counts.get("out_of_reach"):
            unfilled += f", {counts['out_of_reach']} slots unfilled (cell out of reach at the split's limits)"
        print(f"{name}: {counts['instances']} instances, {counts['states']} states, "
              f"{counts['failed']} failed, {counts['retried']} retried, {counts['duplicates_rejected']} duplicate "
              f"attempts rejected{unfilled}")
    print(f"{out}: done in {report.wall_seconds:.1f} s ({report.solves} solves run, {report.reused_solves} reused)")
    return 0


def _run_plan_set(args: argparse.Namespace) -> int:
    if args.exact_max_nodes is not None and not args.exact:
        raise CommandError("--exact-max-nodes bounds the exact solves: give it with --exact")
    domains = [d for name in args.domain for part in name.split(",") for d in (DOMAINS if part == "all" else [part])]
    for domain in dict.fromkeys(domains):
        report = generate_plan_set(args.folder, domain, grid=args.grid, count=args.count,
                                   check_time_limit=args.check_time_limit, optimal_time_limit=args.optimal_time_limit,
                                   workers=args.workers, progress=not args.quiet, exact=args.exact,
                                   exact_max_nodes=args.exact_max_nodes)
        plan_set = load_plan_set(args.folder, domain, PLAN_SETS[args.grid])
        checked = sum(plan_set.record(i)["satisficing"].get("valid", False) for i in plan_set.instances())
        costs = [plan_set.optimal_cost(i) for i in plan_set.instances()]
        short = sum(plan_set.record(i).get("exact", {}).get("status") == "node_limit" for i in plan_set.instances())
        exact = f", {sum(c is not None for c in costs)} with an exact h*" if any(c is not None for c in costs) else ""
        exact += f", {short} past the exact search's node budget" if short else ""
        print(f"{report.folder}: {report.instances} instances ({checked} with a validated satisficing plan{exact}), "
              f"{report.exhausted} slots exhausted, {report.solves_run} solves run, {report.wall_seconds:.0f} s")
    return 0


def _run_verify(args: argparse.Namespace) -> int:
    folder = args.folder or default_data_root()
    roots = find_datasets(folder)
    if not roots:
        print(f"{folder}: no dataset (no {MANIFEST}); generate one with `tnlib data generate`", file=sys.stderr)
        return 1
    bad = 0
    for root in roots:
        duplicates: dict = {}
        pairs: dict = {}
        problems = verify_dataset(root, duplicates=duplicates, train_pairs=pairs)
        for domain, name in find_plan_sets(root):
            problems += [f"{domain}/{name}: {p}" for p in verify_plan_set(root, domain, name)]
        for problem in problems:
            print(f"{root}: {problem}", file=sys.stderr)
        bad += bool(problems)
        print(f"{root}: {'FAILED' if problems else 'ok'}")
        # Duplicate counts, up to renaming objects (tnlib.data.instance_keys).
        for domain, splits in duplicates.items():
            parts = []
            for split, d in splits.items():
                text = f"{split} {d.instances}: {d.within} repeated"
                if split != "train":
                    text += f", {d.in_train} in train, {d.in_earlier} in earlier splits"
                parts.append(text)
            print(f"  {domain} duplicates: " + "; ".join(parts))
        for domain, records in pairs.items():
            if records:
                print(f"  {domain} states = a train (state, goal) pair: " + "; ".join(_pair_counts(records)))
    return 1 if bad else 0


def _pair_counts(records: dict) -> list[str]:
    return [f"{split} {r['equal_to_train']} of {r['rows']}" + (f" ({r['kept']} kept for model selection)"
                                                               if split == "val" else "")
            for split, r in records.items()]


def _run_train_pairs(args: argparse.Namespace) -> int:
    import time

    from tnlib.data.train_pairs_writing import record_train_pairs

    folder = args.folder or default_data_root()
    roots = find_datasets(folder)
    if not roots:
        raise CommandError(f"{folder}: no dataset (no {MANIFEST}); generate one with `tnlib data generate`")
    for root in roots:
        started = time.perf_counter()
        try:
            records = record_train_pairs(root, args.domain)
        except DatasetError as err:
            raise CommandError(str(err)) from None
        for domain, by_split in records.items():
            print(f"{root}/{domain}: states = a train (state, goal) pair: "
                  + ("; ".join(_pair_counts(by_split)) or "no split besides train"))
        print(f"{root}: recorded in {time.perf_counter() - started:.1f} s")
    return 0


def _run_relabel_lmcut(args: argparse.Namespace) -> int:
    if args.check_states < 0:
        raise CommandError(f"--check-states must be 0 or more, got {args.check_states}")
    try:
        done = relabel_lmcut(args.folder, args.domain, args.splits, args.check_states)
    except (DatasetError, LabelError) as err:
        raise CommandError(str(err)) from None
    for domain, by_split in done.items():
        for split, record in by_split.items():
            print(f"{args.folder}/{domain}/{split}: {record['states']} states, {record['changed']} changed "
                  f"({record['raised']} raised), {record['checked_one_by_one']} checked one by one, "
                  f"{record['seconds']:.0f} s")
    if not done:
        print(f"{args.folder}: every split asked for holds this Fast Downward's LM-cut already")
    return 0


def _run_card(args: argparse.Namespace) -> int:
    folder = args.folder or default_data_root() / "small"
    if not (folder / MANIFEST).is_file():
        raise CommandError(f"{folder}: no {MANIFEST}; generate it with `tnlib data generate`")
    print(cell_card(folder, args.domain) if args.cells else data_card(folder))
    return 0


def _run_fill(args: argparse.Namespace) -> int:
    if not (args.folder / MANIFEST).is_file():
        raise CommandError(f"{args.folder}: no {MANIFEST}; generate it with `tnlib data generate`")
    done = fill_empty_slots(args.folder, args.domain, args.splits)
    for split in args.splits:
        record = done.get(split)
        print(f"{args.domain}/{split}: " + ("no empty slot" if record is None else
                                           f"{record['slots']} slots filled in {record['seconds']['wall']:.0f} s"))
    return 0


def _run_status(args: argparse.Namespace) -> int:
    folder = args.folder or default_data_root() / "small"
    if not folder.is_dir():
        raise CommandError(f"{folder}: no such folder")
    print(status_card(folder))
    return 0


REGISTER = {"data": register_data}
