"""`tnlib generate`, `tnlib solve`, `tnlib plan`, `tnlib heuristics` and `tnlib validate`: the planning core.

Library modules are imported inside the functions, so that each command loads only what it uses (none of them
torch but `plan --model`; `generate` and `solve` not even numba).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from tnlib.cli import COMMANDS, declare_outputs
from tnlib.errors import CommandError, PlanError, TaskError
from tnlib.paper import BASELINE_HEURISTIC, DOMAINS, LABEL_MEMORY_LIMIT_MB, LABEL_TIME_LIMITS


def register_generate(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "generate",
        help=COMMANDS["generate"][1],
        description="Generate one problem instance, distributed like the IPC generators' (see tnlib.planning.generators).",
    )
    parser.add_argument("domain", choices=sorted(DOMAINS), help="domain key")
    parser.add_argument("--seed", type=int, required=True, help="random seed (integer)")
    parser.add_argument("--blocks", type=int, help="blocksworld: number of blocks")
    parser.add_argument("--locations", type=int, help="ferry: number of locations")
    parser.add_argument("--cars", type=int, help="ferry: number of cars")
    parser.add_argument("--balls", type=int, help="gripper: number of balls")
    parser.add_argument("--x", type=int, help="visitall: grid width")
    parser.add_argument("--y", type=int, help="visitall: grid height")
    parser.add_argument("--ratio", type=float, help="visitall: fraction of cells to visit, in (0, 1]")
    parser.add_argument("-o", "--output", type=Path, help="output file (default: stdout)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing --output file")
    parser.set_defaults(func=_run_generate)
    declare_outputs(parser, output="file")


def _run_generate(args: argparse.Namespace) -> int:
    from tnlib.planning.generators import DOMAIN_PARAMETERS, generate

    all_params = ("blocks", "locations", "cars", "balls", "x", "y", "ratio")
    given = {p: getattr(args, p) for p in all_params if getattr(args, p) is not None}
    expected = DOMAIN_PARAMETERS[args.domain]
    missing = [f"--{p}" for p in expected if p not in given]
    unknown = [f"--{p}" for p in given if p not in expected]
    if missing or unknown:
        wanted = " ".join(f"--{p} N" for p in expected)
        problem = f"missing {', '.join(missing)}" if missing else f"{', '.join(unknown)} does not apply"
        raise CommandError(f"{args.domain} takes {wanted}: {problem}")
    if args.output is not None and args.output.exists() and not args.force:
        raise CommandError(f"--output {args.output}: exists; pass --force to overwrite it")
    try:
        text = generate(args.domain, args.seed, **given)
    except ValueError as err:
        raise CommandError(str(err)) from err
    if args.output is None:
        sys.stdout.write(text)
    else:
        from tnlib.files import atomic_write_text

        args.output.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.output, text)
        settings = ", ".join(f"{name} {value:g}" if isinstance(value, float) else f"{name} {value}"
                             for name, value in given.items())
        print(f"wrote {args.output}: {args.domain} problem, seed {args.seed}, {settings}")
    return 0


def register_solve(subparsers: argparse._SubParsersAction) -> None:
    from tnlib.planning.fast_downward import SEARCH

    parser = subparsers.add_parser(
        "solve",
        help=COMMANDS["solve"][1],
        description=f"Optimal planning with Fast Downward's {SEARCH}. Exit code 0 when solved, 1 otherwise.",
    )
    parser.add_argument("domain", help=f"domain file, or a shipped domain: {', '.join(DOMAINS)}")
    parser.add_argument("problem", type=Path, help="problem file")
    parser.add_argument("--time-limit", type=float, default=LABEL_TIME_LIMITS["train"], metavar="S",
                        help="seconds (default %(default)g: the paper's limit for a training instance's label)")
    parser.add_argument("--memory-limit", type=int, default=LABEL_MEMORY_LIMIT_MB, metavar="MB",
                        help="MiB (default %(default)s, the paper's)")
    parser.add_argument("--plan-file", type=Path, metavar="F", help="write the plan here when solved")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.set_defaults(func=_run_solve)
    declare_outputs(parser, plan_file="file")


def _run_solve(args: argparse.Namespace) -> int:
    from tnlib.planning.fast_downward import SEARCH, run_fast_downward
    from tnlib.planning.task import check_pddl

    if not args.time_limit > 0:
        raise CommandError(f"--time-limit must be a number of seconds > 0, got {args.time_limit:g}")
    try:
        if args.problem.is_file():  # (a missing one: Fast Downward's wrapper names it)
            # tnlib's parser first: one line naming the file for malformed PDDL, not Fast Downward's whole log
            check_pddl(args.domain, args.problem)
        result, plan_text = run_fast_downward(
            args.domain, args.problem, SEARCH, args.time_limit, args.memory_limit
        )
    except (FileNotFoundError, ValueError) as err:  # TaskError is a ValueError
        raise CommandError(str(err)) from None
    if args.plan_file is not None and plan_text is not None:
        from tnlib.files import atomic_write_text

        atomic_write_text(args.plan_file, plan_text)  # creates the folder; never half a plan
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        print(f"status: {result.status}")
        if result.solved:
            print(f"cost: {result.cost:g}")
            print(f"plan length: {len(result.plan)}")
        print(f"seconds: {result.seconds:.3f}")
        if result.expansions is not None:
            print(f"expansions: {result.expansions}")
        if result.solved and not args.plan_file:  # (as `tnlib plan` does: with a plan file, the plan is there)
            for step in result.plan:
                print(step)
        if result.log:
            print(result.log, file=sys.stderr)
    return 0 if result.solved else 1


def register_plan(subparsers) -> None:
    from tnlib.planning.heuristics import HEURISTIC_NAMES
    from tnlib.planning.search_settings import PAPER, PAPER_SEARCH, PROTOCOLS

    parser = subparsers.add_parser(
        "plan",
        help=COMMANDS["plan"][1],
        description=(
            "Eager GBFS (default) or A* on a PDDL problem with a symbolic heuristic, or GBFS with a trained model "
            "(--model: the batched learned GBFS of Table 2). Exit code 0 when solved, 1 otherwise."
        ),
    )
    parser.add_argument("domain", help="domain file, or a shipped domain: blocksworld, ferry, gripper, visitall")
    parser.add_argument("problem", help="problem file")
    parser.add_argument("--heuristic", choices=HEURISTIC_NAMES,
                        help=f"a symbolic heuristic (default: {BASELINE_HEURISTIC})")
    parser.add_argument(
        "--model", type=Path, metavar="RUN_OR_CHECKPOINT",
        help="plan with a trained model instead: a run folder (its best.pt) or a checkpoint file (.pt)",
    )
    parser.add_argument(
        "--estimate", default=None, metavar="E",
        help="with --model, the value GBFS orders by: 'default' (N: mu, TN: the truncated mean; the default) or "
             "'clip' (N+clip: max(mu, lower bound); N models only)",
    )
    parser.add_argument("--device", default=None, help="with --model: cpu or cuda (default: the checkpoint's)")
    parser.add_argument("--search", choices=("gbfs", "astar"), default="gbfs", help="default: gbfs")
    parser.add_argument(
        "--protocol", choices=PROTOCOLS, default=PAPER,
        help="GBFS evaluation counting: 'paper' (the paper's planner: every generated successor counts, goal test "
             "at generation; default) or 'distinct' (each distinct state counts once, goal test at expansion)",
    )
    parser.add_argument(
        "--max-evaluations", type=int, default=PAPER_SEARCH.max_evaluations, metavar="N",
        help=f"heuristic evaluation limit (default {PAPER_SEARCH.max_evaluations}; 0 = none)",
    )
    parser.add_argument("--time-limit", type=float, default=None, metavar="S", help="seconds (default: none)")
    parser.add_argument("--plan-file", metavar="F", help="write the plan here (IPC format) when solved")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.set_defaults(func=_run_plan)
    declare_outputs(parser, plan_file="file")


def _run_plan(args) -> int:
    from tnlib.planning.plans import validate_plan, write_plan
    from tnlib.planning.search import astar, gbfs
    from tnlib.planning.search_settings import DISTINCT, SearchSettings
    from tnlib.planning.task import load_search_task
    from tnlib.progress import LateProgress

    if args.time_limit is not None and args.time_limit < 0:
        raise CommandError("--time-limit must be >= 0")
    if args.max_evaluations < 0:
        raise CommandError(f"--max-evaluations must be >= 0 (0: no limit), got {args.max_evaluations}")
    if args.model is not None:
        if args.heuristic is not None:
            raise CommandError("--model and --heuristic exclude each other: a search uses one heuristic")
        if args.search != "gbfs":
            raise CommandError("--model plans with GBFS only (the paper's Table 2 search), not --search astar")
    elif args.estimate is not None or args.device is not None:
        raise CommandError(f"{'--estimate' if args.estimate is not None else '--device'} applies to --model only")
    limit = args.max_evaluations if args.max_evaluations > 0 else None
    # a GBFS that runs long (minutes at the paper's sizes) shows its evaluations on stderr; most end in seconds
    searching = LateProgress(limit or 0, Path(args.problem).stem, unit="evaluations",
                             disable=limit is None or args.search != "gbfs")
    if args.model is not None:
        try:
            result, about = _plan_with_model(args, limit, searching.update_to)
        finally:
            searching.close()
    else:
        heuristic = args.heuristic or BASELINE_HEURISTIC
        try:
            task = load_search_task(args.domain, args.problem)
        except TaskError as err:
            raise CommandError(str(err)) from None
        if args.search == "gbfs":
            try:
                result = gbfs(task, heuristic, SearchSettings(args.protocol, limit, args.time_limit),
                              searching.update_to)
            finally:
                searching.close()
        else:
            result = astar(task, heuristic, SearchSettings(DISTINCT, limit, args.time_limit))
        if result.solved:
            verdict = validate_plan(task, result.plan)
            if not verdict.valid:  # a bug, never a user error: say so loudly
                raise RuntimeError(f"search returned an invalid plan: {verdict.message}")
        about = {"search": args.search, "heuristic": heuristic}
    if result.solved and args.plan_file:
        Path(args.plan_file).parent.mkdir(parents=True, exist_ok=True)
        write_plan(result.plan, args.plan_file)
    if args.json:
        record = result.to_dict()
        record.update(about, problem=str(args.problem))
        print(json.dumps(record))
    else:
        print(f"status: {result.status}")
        if "model" in about:
            lmcut = {"fast-downward": "; LM-cut breaking ties as Fast Downward does, as its training data's",
                     "tnlib": "; tnlib's LM-cut, as its training data's"}.get(about["lmcut"], "")
            print(f"model: {about['checkpoint']} (step {about['checkpoint_step']}, {about['distribution']} head, "
                  f"estimate {about['estimate']}{lmcut}; set up in {about['setup_seconds']:.3f} s: loaded, and its "
                  "first evaluation compiled, before the search -- not in its seconds below)")
        if result.solved:
            print(f"plan length: {result.plan_length}")
            print(f"cost: {result.plan_length} (unit cost)")
        print(f"evaluations: {result.evaluations}  expansions: {result.expansions}  seconds: {result.seconds:.3f}"
              + (f"  (protocol: {result.protocol})" if result.protocol else ""))
        if result.solved and not args.plan_file:
            for step in result.plan:
                print(step)
    return 0 if result.solved else 1


def _plan_with_model(args, limit: int | None, on_evaluations):
    """GBFS with a trained model, by the path Table 2's planning stage takes (a :class:`LearnedHeuristic` for the
    problem, :func:`tnlib.learning.learned_heuristic.search_problem`, which validates the plan it returns).
    Returns the search result and what the JSON record adds about the model. The model is loaded and evaluated
    once on the initial state before the search (torch's and the kernels' first-call set-up), so the search's
    seconds are the search's, as for a symbolic heuristic; that set-up is ``setup_seconds``. The warm-up leaves
    the search as it is: an evaluation depends on the state alone, and the counts are the search's own."""
    import time

    from tnlib.learning.run_files import RunDir, missing_checkpoint_message
    from tnlib.learning.learned_heuristic import LearnedHeuristic, search_problem
    from tnlib.planning.pddl import resolve_domain
    from tnlib.planning.search_settings import SearchSettings

    model = args.model
    checkpoint = RunDir(model).best if model.is_dir() else model
    if not checkpoint.is_file():
        if model.is_dir() and not (model / RunDir.CONFIG).is_file():
            raise CommandError(f"--model {model}: a folder that is not a run folder (no {RunDir.CONFIG}, no "
                               f"{RunDir.BEST}); name a run folder or a checkpoint file")
        raise CommandError(f"--model {model}: {missing_checkpoint_message(checkpoint)}")
    started = time.perf_counter()
    try:
        domain_file = resolve_domain(args.domain)
        heuristic = LearnedHeuristic(checkpoint, domain_file, args.problem, estimate=args.estimate or "default",
                                     device=args.device)
    except (FileNotFoundError, ValueError) as err:  # TaskError is a ValueError; so are a foreign file and a mismatch
        raise CommandError(str(err)) from None
    heuristic([heuristic.task.init])
    setup_seconds = time.perf_counter() - started
    result = search_problem(heuristic, domain_file, args.problem,
                            SearchSettings(args.protocol, limit, args.time_limit), on_evaluations)
    about = {"search": "gbfs", "heuristic": "model", "model": str(model), "checkpoint": str(checkpoint),
             "checkpoint_step": heuristic.checkpoint_step, "domain": heuristic.config.domain,
             "distribution": heuristic.config.head.distribution, "estimate": heuristic.estimate,
             "lmcut": heuristic.lmcut_source, "setup_seconds": round(setup_seconds, 3)}
    return result, about


def register_heuristics(subparsers) -> None:
    parser = subparsers.add_parser(
        "heuristics",
        help=COMMANDS["heuristics"][1],
        description=(
            "Evaluate blind, goalcount, hmax, hadd, ff, lmcut and the linear-model features on the initial state "
            "and, with --plan, on each state the plan visits. Infinite values (dead ends) print as null in JSON."
        ),
    )
    parser.add_argument("domain", help="domain file, or a shipped domain: blocksworld, ferry, gripper, visitall")
    parser.add_argument("problem", help="problem file")
    parser.add_argument("--plan", metavar="PLAN", help="plan file (IPC format)")
    parser.add_argument("--json", action="store_true", help="print a JSON list, one object per state")
    parser.set_defaults(func=_run_heuristics)


def _json_number(value: float):
    if math.isinf(value) or math.isnan(value):
        return None
    return int(value) if float(value).is_integer() else value


def _run_heuristics(args) -> int:
    from tnlib.planning.heuristics import evaluate_all
    from tnlib.planning.plans import read_plan, validate_plan
    from tnlib.planning.task import load_task

    try:
        task = load_task(args.domain, args.problem)
        plan = read_plan(args.plan) if args.plan else []
        # Simulate on the unpruned grounding (a plan may use goal-irrelevant actions); both groundings have the
        # same facts, so their packed states are interchangeable.
        full = load_task(args.domain, args.problem, remove_irrelevant_operators=False) if plan else task
    except (TaskError, PlanError) as err:
        raise CommandError(str(err)) from None
    verdict = validate_plan(full, plan)
    if verdict.failed_step is not None:
        raise CommandError(f"{args.plan}: {verdict.message}")
    assert full.fact_names == task.fact_names
    states = [full.init]
    for step in plan:
        states.append(full.apply(states[-1], step))
    values = evaluate_all(task, states)
    records = []
    for i, state in enumerate(states):
        record = {"step": i, "action": plan[i - 1] if i else None, "is_goal": task.is_goal(state)}
        record.update({name: _json_number(float(column[i])) for name, column in values.items()})
        records.append(record)
    if args.json:
        print(json.dumps(records))
    else:
        columns = ["step", *values]
        short = {"ignored_deletes_total": "del_total", "ignored_deletes_mean": "del_mean"}
        print("  ".join(f"{short.get(c, c):>10}" for c in columns) + "  action")
        for record in records:
            cells = ["inf" if record[c] is None else (f"{record[c]:.3g}" if isinstance(record[c], float)
                                                       else str(record[c])) for c in columns]
            print("  ".join(f"{c:>10}" for c in cells) + f"  {record['action'] or ''}")
    return 0


def register_validate(subparsers) -> None:
    parser = subparsers.add_parser(
        "validate",
        help=COMMANDS["validate"][1],
        description="Simulate an IPC-format plan. Exit code 0 when valid, 1 when not, 2 on unreadable input.",
    )
    parser.add_argument("domain", help="domain file, or a shipped domain: blocksworld, ferry, gripper, visitall")
    parser.add_argument("problem", help="problem file")
    parser.add_argument("plan", help="plan file (IPC format)")
    parser.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    parser.set_defaults(func=_run_validate)


def _run_validate(args) -> int:
    from tnlib.planning.plans import read_plan, validate_plan
    from tnlib.planning.task import load_task

    try:
        task = load_task(args.domain, args.problem, remove_irrelevant_operators=False)
        plan = read_plan(args.plan)
    except (TaskError, PlanError) as err:
        raise CommandError(str(err)) from None
    verdict = validate_plan(task, plan)
    if args.json:
        print(json.dumps({
            "valid": verdict.valid,
            "length": verdict.length,
            "message": verdict.message,
            "failed_step": verdict.failed_step,
            "failed_action": verdict.failed_action,
            "missing_preconditions": verdict.missing_preconditions,
            "unmet_goals": verdict.unmet_goals,
        }))
    else:
        print(("VALID: " if verdict.valid else "INVALID: ") + verdict.message)
    return 0 if verdict.valid else 1


REGISTER = {"generate": register_generate, "solve": register_solve, "plan": register_plan,
            "heuristics": register_heuristics, "validate": register_validate}
