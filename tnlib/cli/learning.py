"""`tnlib train` and `tnlib evaluate`. The flags of `train` are generated from the fields of :class:`TrainConfig` and
of its head's :class:`HeadConfig` (:mod:`tnlib.cli.config_flags`), so a new field of either is a new flag."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from tnlib.cli import COMMANDS, declare_outputs
from tnlib.cli.config_flags import add_config_flags, config_values, name_flags
from tnlib.errors import CommandError, DatasetError, TrainingDiverged
from tnlib.files import read_jsonl
from tnlib.learning.run_files import RunDir
from tnlib.paper import BATCH_SIZE, MAIN_LOWER_BOUND, MAIN_TABLES_MODEL

# TrainConfig and HeadConfig fields whose flag is not --field-name, and help texts. The dataset root and the model's
# arguments are --data-root and --model-args, as in `tnlib sweep` (whose fields share the names); TRAIN_ALIASES'
# spellings are accepted too, unlisted, so that scripts written with them run.
TRAIN_FLAGS = {"learning_rate": "--lr", "out_dir": "--out", "run_name": "--name"}
TRAIN_ALIASES = {"data_root": "--data", "model_args": "--model-arg"}
TRAIN_HELP = {
    "domain": "blocksworld | ferry | gripper | visitall",
    "model": "nlm | hgn | linear | wl (WL features, WL-GOOSE's learner: not in the paper)",
    "distribution": "N | TN",
    "sigma": "learn | fixed (--fixed-sigma)",
    "residual": "ff | lmcut | none",
    "lower_bound": "lmcut | hmax | blind | none",
    "upper_bound": "none | h_sat",
    "sigma_link": "a learned sigma: softplus (softplus(x) + 0.01, default) | bounded (the authors' 10 sigmoid(x) "
                  "+ 0.1)",
    "fixed_sigma": "a fixed sigma: paper (1/sqrt 2, default) | authors (their code's sqrt 2)",
    "data_root": "dataset root (default: tnlib.data's, data/small)",
    "instances": "subsample at most this many training instances (default: all; the paper: 400)",
    "steps": "training steps (default: %(default)s, the paper's: hours on a CPU, see the estimate printed before "
             "training; e.g. --steps 2000)",
    "learning_rate": "default: 1e-2 (nlm, linear), 1e-3 (hgn, wl)",
    "weight_decay": "AdamW's; default: 1e-2 (nlm, the paper's), 0 (hgn, the authors'; linear, wl)",
    "model_args": "a model constructor argument, e.g. depth=3 or layout=paper-text (repeatable: --model-args "
                  "depth=3 --model-args width=8)",
    "out_dir": "folder of run folders (default: %(default)s)",
    "run_name": "run folder name (default: from the configuration)",
    "device": "cpu | cuda (default: CUDA when present)",
    "progress": "a progress bar (--no-progress: none)",
}


def register_train(subparsers) -> None:
    from tnlib.learning.heads import HeadConfig
    from tnlib.learning.training import TrainConfig

    p = subparsers.add_parser("train", help=COMMANDS["train"][1],
                              description="Train one model with one head configuration; writes a run folder "
                                          "(config, curves.jsonl, best.pt, last.pt) and resumes an interrupted one.")
    add_config_flags(p, TrainConfig, TRAIN_FLAGS, TRAIN_HELP, skip=("head",), aliases=TRAIN_ALIASES)
    head = p.add_argument_group("the head", "what distribution of h* the model predicts, and how "
                                            "(tnlib.learning.heads.HeadConfig)")
    add_config_flags(head, HeadConfig, TRAIN_FLAGS, TRAIN_HELP)
    p.add_argument("--restart", action="store_true", help="start afresh even if the run folder has a checkpoint")
    p.set_defaults(func=_run_train)
    declare_outputs(p, out_dir="folder")


def _keep_freed_memory() -> None:
    """What ``MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=...`` do, for a ``tnlib train`` process started without
    them: glibc otherwise maps and unmaps every large tensor on every step (2-3x slower NLM training, see the
    shared training-cost spec). Only the command does this: a notebook's process keeps the allocator it had."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_trim_threshold, m_mmap_max = -1, -4  # glibc's mallopt parameter numbers
    if "MALLOC_MMAP_MAX_" not in os.environ:
        libc.mallopt(m_mmap_max, 0)
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        libc.mallopt(m_trim_threshold, 2**31 - 1)


def _run_train(args) -> int:
    from tnlib.learning.heads import HeadConfig
    from tnlib.learning.run_files import RunDir
    from tnlib.learning.training import TrainConfig, train

    _keep_freed_memory()
    try:
        head = HeadConfig(**config_values(args, HeadConfig, TRAIN_FLAGS))
        config = TrainConfig(head=head, **config_values(args, TrainConfig, TRAIN_FLAGS, skip=("head",)))
    except ValueError as err:
        raise CommandError(name_flags(str(err), TrainConfig, TRAIN_FLAGS)) from None

    def announce(start_step: int) -> None:
        if 0 < start_step < config.steps:  # said whether or not a progress display shows it
            print(f"tnlib train: resuming {config.name} from its checkpoint at step {start_step:,} of "
                  f"{config.steps:,} (--restart starts afresh)", file=sys.stderr, flush=True)
        estimate = cost_estimate(config, start_step)
        if estimate:
            print(estimate, file=sys.stderr, flush=True)

    try:
        run_dir = train(config, resume=not args.restart, on_start=announce)
    except (ValueError, FileNotFoundError, TrainingDiverged, DatasetError) as err:
        if isinstance(err, OSError) and err.filename is not None:  # a path the system refused: said with a remedy
            raise
        raise CommandError(name_flags(str(err), TrainConfig, TRAIN_FLAGS)) from None
    best = read_jsonl(RunDir(run_dir).training_curves_file)[-1]
    print(f"{run_dir}: {config.steps} steps, last validation MSE {best['val_mse']:.4g}")
    return 0


# A run estimated at least this long gets its estimate printed before it starts (a few steps of a test do not).
ESTIMATE_FROM_S = 60


def cost_estimate(config, start_step: int = 0) -> str | None:
    """One line on what a run will cost and how to change it, from the sweep's estimate
    (:func:`tnlib.learning.training_cost.run_hours`): on CUDA the step time measured on a GPU where there is one for the
    dataset's profile and the batch size (:func:`~tnlib.learning.training_cost.measured_gpu_step_seconds`), else
    the paper's V100 time; on a CPU the step time measured for the profile of the dataset trained on, the model and
    the domain (:func:`~tnlib.learning.training_cost.measured_cpu_step_seconds`), else tnlib's step time at 16
    objects (an upper bound for smaller instances); None for a run estimated under :data:`ESTIMATE_FROM_S` seconds
    or, on a CPU, a model without a measured step time. A resumed run (``start_step`` > 0) counts the steps it has
    left."""
    from tnlib.device import default_device
    from tnlib.learning.training_cost import (
        CPU_SECONDS_PER_STEP,
        CPU_TIMED_OBJECTS,
        MEASURED_BATCH_SIZE,
        MEASURED_GPU,
        measured_cpu_step_seconds,
        measured_gpu_step_seconds,
        run_hours,
    )
    from tnlib.paper import TRAIN_STEPS
    from tnlib.progress import duration

    steps_left = config.steps - start_step
    gpu_hours, cpu_hours = run_hours(config.model, config.domain, steps_left, config.batch_size)
    profile = _profile(config.data_root)
    cpu_step = measured_cpu_step_seconds(profile, config.batch_size, config.model, config.domain)
    if default_device(config.device).type == "cuda":
        hours, where = gpu_hours, "on a GPU (the paper's V100 time per run, scaled by steps x batch)"
        measured = measured_gpu_step_seconds(profile, config.batch_size, config.model, config.domain)
        if measured is not None:
            hours = measured * steps_left / 3600
            where = f"on a GPU ({measured} s per step measured on {MEASURED_GPU} at this batch size)"
    elif cpu_step is not None:
        hours = cpu_step * steps_left / 3600
        scaled = "" if config.batch_size == MEASURED_BATCH_SIZE else f", scaled to batch {config.batch_size}"
        where = (f"on 2 CPU cores ({cpu_step:.2g} s per step: the time measured on the {profile} profile's "
                 f"{config.domain} at batch {MEASURED_BATCH_SIZE}{scaled})")
    elif cpu_hours is not None:
        hours, where = cpu_hours, (f"on 2 CPU cores ({CPU_SECONDS_PER_STEP[config.model]} s per step at batch "
                                   f"{BATCH_SIZE} with {CPU_TIMED_OBJECTS} objects; smaller instances train faster)")
    else:
        return None
    if hours * 3600 < ESTIMATE_FROM_S:
        return None
    which = (f"the default, the paper's {TRAIN_STEPS:,}" if config.steps == TRAIN_STEPS else "--steps")
    resumed = f", {config.steps - start_step:,} left from step {start_step:,}" if start_step else ""
    return (f"tnlib train: {config.steps:,} steps ({which}{resumed}) at batch {config.batch_size} of {config.model} on "
            f"{config.domain}: about {duration(hours * 3600)} {where}; --steps N changes it (e.g. --steps 2000)")


def _profile(data_root: str | None) -> str | None:
    """The profile a dataset root's manifest names (small, paper, ...); None where there is no dataset there."""
    from tnlib.data.manifest import dataset_root
    from tnlib.data.schema import MANIFEST

    try:
        return json.loads((dataset_root(data_root) / MANIFEST).read_text()).get("profile")
    except (DatasetError, OSError, ValueError):
        return None


def register_evaluate(subparsers) -> None:
    p = subparsers.add_parser(
        "evaluate", help=COMMANDS["evaluate"][1],
        description="Evaluate run folders (their best.pt) on a split and write metrics-<split>.json into each; "
                    "with --table, render Table 1 from every metrics file under a folder.")
    p.add_argument("runs", nargs="+", help="run folders or .pt checkpoints (with --table: a results folder)")
    p.add_argument("--split", default="test",
                   help="train | val | test | plan | test-grid (default: test); test-grid: the domain's whole test "
                        "grid, its test-grid split's cells and the cells its test split labels whole, with one "
                        "record per cell (what `tnlib report` lays out as Table 1 per size)")
    p.add_argument("--data-root", default=None, help="dataset root (default: the run's)")
    p.add_argument("--data", dest="data_root", default=argparse.SUPPRESS, help=argparse.SUPPRESS)  # train's alias
    p.add_argument("--device", default=None,
                   help="cpu | cuda (default: the run's device setting, else CUDA when present)")
    p.add_argument("--checkpoint", default=RunDir.BEST,
                   help=f"which checkpoint of each run folder: {RunDir.BEST} (best validation MSE; the default) or "
                        f"{RunDir.BEST_NLL}")
    p.add_argument("--table", action="store_true", help="render Table 1 from the metrics under RUNS[0]")
    p.add_argument("--model", default=MAIN_TABLES_MODEL,
                   help="with --table: which model's results (default: %(default)s)")
    p.add_argument("--lower-bound", default=MAIN_LOWER_BOUND,
                   help="with --table: which lower bound's results (default: %(default)s)")
    p.add_argument("--metric", default="mse", help="with --table: mse (Table 1; the default) or nll")
    p.add_argument("--latex", action="store_true", help="with --table: LaTeX instead of Markdown")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON lines")
    p.set_defaults(func=_run_evaluate)


def _table_results(folder: str, args) -> list[dict]:
    """The metrics a ``--table`` renders, or a CommandError saying why there are none (not an empty table)."""
    from tnlib.experiments.reporting.table_rows import collect_results

    if not Path(folder).is_dir():
        raise CommandError(f"{folder}: no such folder")
    results = collect_results(folder, args.split, args.checkpoint)
    if not results:
        raise CommandError(f"{folder}: no {args.split} metrics of {args.checkpoint} checkpoints under it (write them "
                           f"with `tnlib evaluate RUN_FOLDER --split {args.split}`)")
    matching = [r for r in results if r.get("model") == args.model and r.get("lower_bound") == args.lower_bound]
    if not matching:
        found = sorted({f"--model {r.get('model')} --lower-bound {r.get('lower_bound')}" for r in results})
        raise CommandError(f"{folder}: no metrics of model {args.model!r} with lower bound {args.lower_bound!r} "
                           f"(found: {'; '.join(found)})")
    return results


def _run_evaluate(args) -> int:
    from tnlib.experiments.reporting.tables import render_table
    from tnlib.learning.evaluation import evaluate, evaluate_run

    try:
        if args.table:
            results = _table_results(args.runs[0], args)
            print(render_table(results, args.model, args.lower_bound, fmt="latex" if args.latex else "markdown",
                               metric=args.metric), end="")
            return 0
        for run in args.runs:
            path = Path(run)
            metrics = (evaluate_run(path, args.split, args.checkpoint, data_root=args.data_root, device=args.device)
                       if path.is_dir()
                       else evaluate(path, args.split, data_root=args.data_root, device=args.device))
            if args.json:
                print(json.dumps(metrics))
            else:
                clip = "" if metrics["mse_clip"] is None else f"  MSE+clip {metrics['mse_clip']:.4g}"
                print(f"{run}: {args.split} MSE {metrics['mse']:.4g}{clip}  NLL {metrics['nll']:.4g}  "
                      f"(h_FF {metrics['mse_ff']:.4g}, {metrics['states']} states)")
    except (ValueError, FileNotFoundError, DatasetError) as err:
        raise CommandError(str(err)) from None
    return 0


REGISTER = {"train": register_train, "evaluate": register_evaluate}
