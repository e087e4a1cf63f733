"""`tnlib sweep` and `tnlib reproduce`. The flags of `sweep` are generated from :class:`Sweep`'s fields
(:mod:`tnlib.cli.config_flags`), so a new field of the sweep is a new flag. `tnlib sweep` alone runs the paper's
settings; `--preset NAME` starts from a named preset instead, and every flag given overrides it. Either way the
command first prints what it will run (settings, number of runs, the compute it needs) on stderr."""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import fields
from pathlib import Path

from tnlib.cli import COMMANDS, declare_outputs
from tnlib.cli.config_flags import add_config_flags, config_values, name_flags
from tnlib.cli.learning import TRAIN_HELP
from tnlib.errors import CommandError, NothingToCompare
from tnlib.experiments.reporting.report_files import ACCURACY_SEEDS
from tnlib.paper import ABLATIONS, MAIN_TABLES_MODEL


def selection_seconds(text: str) -> float:
    """``--selection S``: a time limit of the recorded optimal solves, a finite number of seconds > 0 (a limit of 0
    or less selects no instance, so a report would come out empty without saying why)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number of seconds, got {text!r}") from None
    if not (seconds > 0 and math.isfinite(seconds)):
        raise argparse.ArgumentTypeError(f"a number of seconds > 0, got {text}")
    return seconds

SWEEP_FLAGS = {"out_dir": "--out"}
SWEEP_HELP = {
    "configs": "sigma/residual pairs, e.g. learn/ff fixed/none learn/lmcut",
    "model_args": "MODEL={...}: constructor arguments per model, e.g. nlm='{\"depth\": 3}' (repeatable)",
    "plan": "plan with every trained model (--no-plan: train and evaluate only)",
    "plan_instances": "plan the first N instances of the plan split or set (default: all; a plan set lists its "
                      "grid cells in turn, so its first N are spread over the cells)",
    "plan_per_cell": "on a plan set: plan the first N instances of each of its grid cells (default: all)",
    "plan_on": "what to plan on: the dataset's plan split (plan) or one of its label-free plan sets "
                  "(plan-set: the paper's test grid at its sizes; plan-set-authors)",
    "upper_bound": "none | h_sat: TN bounded above by a satisficing plan's cost in training (beyond the paper)",
    "sigma_link": "a learned sigma: softplus (default) | bounded (the authors' 10 sigmoid(x) + 0.1)",
    "fixed_sigma": TRAIN_HELP["fixed_sigma"],
    "max_steps": "train until flat: runs still improving after --steps train on, in chunks of --extend-steps, "
                 "up to this many steps (default: none, every run trains --steps)",
    "extend_steps": "with --max-steps, the chunk a still-improving run trains on before it is checked again",
    "workers": "local processes running cells side by side (default 1; the small preset: 2)",
    "data_profile": "the dataset profile: the data root's sub-folder to read (default: paper)",
    "data_root": "dataset root, holding the data profile's folder (default: $TNLIB_DATA or <repo>/data)",
    "device": TRAIN_HELP["device"],
    "out_dir": "results folder (default: runs/paper; the small preset: runs/small)",
}


def register_sweep(subparsers) -> None:
    from tnlib.experiments import sweep_settings
    from tnlib.experiments.presets import PRESETS
    from tnlib.experiments.running import sweep
    from tnlib.learning.heads import HeadConfig
    from tnlib.learning.training import TrainConfig

    Sweep = sweep_settings.Sweep

    parser = subparsers.add_parser("sweep", help=COMMANDS["sweep"][1],
                                   description=sweep.__doc__.splitlines()[0] + " The defaults shown are the "
                                   "paper's settings; --preset replaces them with the preset's.")
    parser.add_argument("--preset", choices=sorted(PRESETS),
                        help="start from a named preset instead of the paper's settings (small: what `make "
                             "reproduce` runs on 2 CPU cores); the other flags override it")
    add_config_flags(parser, Sweep, SWEEP_FLAGS, SWEEP_HELP, skip=("train",), defaults=False)
    # the template's settings, flat as ever: one flag each, the paper's sweep's value its default
    training = parser.add_argument_group("training", "what every run of the sweep trains by (its TrainConfig "
                                                     "template, tnlib.learning.training)")
    template = Sweep().train
    for cls, values, names in ((HeadConfig, template.head, sweep_settings.HEAD_PARAMETERS),
                               (TrainConfig, template, sweep_settings.TRAIN_PARAMETERS)):
        add_config_flags(training, cls, SWEEP_FLAGS, SWEEP_HELP, defaults=False, values=values,
                         skip=[f.name for f in fields(cls) if f.name not in names])
    parser.add_argument("--scheduler", help="address of a Dask scheduler to run the cells on")
    parser.add_argument("--dry-run", action="store_true",
                        help="print what the sweep would run, and which data it would lack, and stop")
    parser.add_argument("--accept-out-of-reach", action="store_true",
                        help="run on a dataset whose generation gave up cells at its solver limits (listed by "
                        "--dry-run), training and testing on the cells that exist")
    parser.add_argument("--trained-only", action="store_true",
                        help="only the runs already trained and tested, none started: with --plan, plan them "
                        "beside sweeps (--no-plan) still training the others into the same --out")
    parser.set_defaults(func=_run_sweep)
    declare_outputs(parser, out_dir="folder")


def sweep_parameters(args) -> dict:
    """The parameters of :meth:`Sweep.from_parameters` the parsed ``tnlib sweep`` arguments give: the flags given,
    the sweep's own settings and its template's flat beside them (a flag not given is left to the preset)."""
    from tnlib.experiments.sweep_settings import HEAD_PARAMETERS, TRAIN_PARAMETERS, Sweep

    given = config_values(args, Sweep, SWEEP_FLAGS, skip=("train",))
    given.update({name: getattr(args, name) for name in (*HEAD_PARAMETERS, *TRAIN_PARAMETERS) if hasattr(args, name)})
    return given


def _run_sweep(args) -> int:
    from tnlib.experiments.running.sweep import run_sweep
    from tnlib.experiments.running.sweep_banner import describe_sweep, sweep_data_lines
    from tnlib.experiments.sweep_settings import Sweep
    from tnlib.experiments.running.sweep_standing import sweep_standing

    from tnlib.errors import ClusterMismatch, DatasetError, SchedulerUnreachable, TrainingDiverged

    try:
        sweep = Sweep.from_parameters(preset=args.preset, **sweep_parameters(args))
    except ValueError as err:
        raise CommandError(name_flags(str(err), Sweep.parameter_names(), SWEEP_FLAGS)) from err
    if args.trained_only and not sweep.plan:
        raise CommandError("--trained-only plans the runs already trained and tested, and this sweep does not plan "
                           "(its preset's or --no-plan): add --plan")
    print(describe_sweep(sweep), file=sys.stderr, flush=True)
    print("\n".join(sweep_data_lines(sweep) + sweep_standing(sweep)), file=sys.stderr, flush=True)
    if args.dry_run:
        return 0
    try:
        rows = run_sweep(sweep, scheduler=args.scheduler, accept_out_of_reach=args.accept_out_of_reach,
                         trained_only=args.trained_only, run_progress=True)
    except (DatasetError, SchedulerUnreachable, ClusterMismatch) as err:
        raise CommandError(str(err)) from err
    except (ValueError, FileNotFoundError, TrainingDiverged) as err:  # a run's own refusal, as `tnlib train` gives it
        raise CommandError(str(err)) from None
    for row in rows:
        print(json.dumps(row))
    return 0


def register_reproduce(subparsers) -> None:
    from tnlib.experiments.running import reproduce

    first_line = reproduce.__doc__.splitlines()[0].replace("those of LEFT_OUT", "what is left out below")
    parser = subparsers.add_parser("reproduce", help=COMMANDS["reproduce"][1], description=" ".join(
        [first_line, reproduce.sweep_scope_text(), reproduce.left_out_text()]))
    parser.add_argument("--keep-existing", action="store_true", help="skip steps whose outputs already exist")
    parser.add_argument("--only", help="run only the steps whose name contains this text")
    parser.set_defaults(func=_run_reproduce)


def _run_reproduce(args) -> int:
    from tnlib.experiments.running import reproduce

    try:
        return reproduce.reproduce(keep_existing=args.keep_existing, only=args.only)
    except ValueError as err:
        raise CommandError(str(err)) from None


def register_report(subparsers) -> None:
    parser = subparsers.add_parser(
        "report", help=COMMANDS["report"][1],
        description="Render the reports of one results folder (a sweep's --out): accuracy.md (Table 1), "
                    "planning.md (Table 2), training_curves.html and figure2.html (validation curves, N vs TN, "
                    "with the seeds' range), each opening with what the runs can and cannot show; beside them the "
                    "per-seed CSVs, findings.md (every comparison the tables rest on, with its paired interval, on its own and "
                    "after Holm), convergence.md (figure2 counted: TN's best validation MSE so far over N's, paired "
                    "by seed, part-way and at the end), intervals.html, and accuracy-by-size.md where runs were "
                    "evaluated on the whole test grid.")
    parser.add_argument("results", nargs="+",
                        help="results folder (run folders, planning files), e.g. runs/small; with --ablation, "
                             "one or more")
    parser.add_argument("--out", required=True, help="folder to write the reports into")
    parser.add_argument("--ablation", choices=sorted(ABLATIONS),
                        help="render one of the appendix's NLM ablations instead (accuracy.md and planning.md): "
                             "residual (learn/ff, learn/lmcut, learn/none) or lower-bound (learn/ff with l = "
                             "lmcut, hmax, blind), from the runs of every RESULTS folder")
    parser.add_argument("--model", default=MAIN_TABLES_MODEL,
                        help=f"with --ablation: which model's runs (default: {MAIN_TABLES_MODEL})")
    parser.add_argument("--against", metavar="RESULTS",
                        help="another results folder: also write comparison.md, the cells both hold side by side "
                             "(e.g. runs trained with --upper-bound h_sat against runs without)")
    parser.add_argument("--against-report", metavar="REPORT",
                        help="a rendered report folder (its per-seed CSVs; its run folders need not be here): also "
                             "write against-report.md, every cell both hold paired by seed (e.g. the same runs "
                             "trained again on another lower bound)")
    parser.add_argument("--selection", type=selection_seconds, metavar="S",
                        help="for a sweep that planned on a plan set (--plan-on plan-set): also Table 2 under the "
                             "paper's selection, on the instances whose recorded optimal solve finished within S "
                             "seconds")
    parser.add_argument("--paper-tables", action="store_true",
                        help="set the paper's own NLM Tables 1 and 2 beside the NLM ones, in the same layout, and "
                             "write headline.md: the NLM tables in brief beside the paper's")
    parser.add_argument("--calibration", action="store_true",
                        help="also write calibration.md: interval coverage, width and mass below l of the runs with "
                        "a learned sigma on the test split (beyond the paper; a few seconds per run)")
    parser.set_defaults(func=_run_report)
    declare_outputs(parser, out="folder")


def _run_report(args) -> int:
    from tnlib.experiments.damaged_records import damaged_records_notice
    from tnlib.experiments.reporting.report_gaps import untested_notes
    from tnlib.experiments.reporting.reports import render_results, write_ablation
    from tnlib.experiments.reporting.size_tables import size_metrics_note
    from tnlib.files import shown_path

    try:
        if args.ablation:
            extra = [flag for flag, given in (("--against", args.against), ("--against-report", args.against_report),
                                              ("--selection", args.selection is not None),
                                              ("--paper-tables", args.paper_tables),
                                              ("--calibration", args.calibration)) if given]
            if extra:
                raise CommandError(f"{extra[0]} does not go with --ablation")
            written = write_ablation(args.results, args.out, args.ablation, model=args.model)
        elif len(args.results) > 1:
            raise CommandError(f"one results folder per report ({len(args.results)} given); several only with "
                               "--ablation")
        else:
            written = render_results(args.results[0], args.out, against=args.against,
                                     against_report=args.against_report, selection_seconds=args.selection, paper_tables=args.paper_tables,
                                     calibration=args.calibration)
    except ValueError as err:
        raise CommandError(str(err)) from None
    for path in written:
        print(f"wrote {shown_path(path)}")
    # the header of each page lists them too; said here as well, so that a report of damaged records does not pass
    # for a clean one on the terminal either
    for folder in args.results:
        for line in damaged_records_notice(folder):
            print(f"tnlib report: warning: {line}", file=sys.stderr)
        for line in untested_notes(folder):  # an empty table on the page: what fills it, said here too
            print(f"tnlib report: note: {line}", file=sys.stderr)
        size_note = None if args.ablation else size_metrics_note(folder)
        if size_note:
            print(f"tnlib report: note: {size_note}", file=sys.stderr)
    return 0


def register_intervals(subparsers) -> None:
    parser = subparsers.add_parser(
        "intervals", help=COMMANDS["intervals"][1],
        description="Write intervals.html -- TN against N and N+clip, paired by seed, as `tnlib report` draws it -- "
                    "from a rendered report's accuracy-seeds.csv and planning-seeds.csv, for a report whose run "
                    "folders are not on this machine. Needs three seeds in a cell.")
    parser.add_argument("report", help="a rendered report's folder, e.g. reports/converged/linear")
    parser.add_argument("--out", help="the HTML file to write (default: REPORT/intervals.html)")
    parser.set_defaults(func=_run_intervals)
    declare_outputs(parser, out="file")


def _run_intervals(args) -> int:
    from tnlib.experiments.reporting.reports import write_seed_csv_intervals
    from tnlib.files import shown_path

    try:
        path = write_seed_csv_intervals(args.report, args.out)
    except ValueError as err:
        raise CommandError(str(err)) from None
    print(f"wrote {shown_path(path)}")
    return 0


def register_findings(subparsers) -> None:
    parser = subparsers.add_parser(
        "findings", help=COMMANDS["findings"][1],
        description="Write findings.md and findings.csv -- every TN-vs-N, TN-vs-N+clip and learned-vs-fixed-sigma "
                    "comparison with its paired interval, verdict (on its own and after Holm's correction over "
                    "all of them) and the paper's direction, as `tnlib report` "
                    "writes them -- from a rendered report's accuracy-seeds.csv and planning-seeds.csv, for a "
                    "report whose run folders are not on this machine.")
    parser.add_argument("report", help="a rendered report's folder, e.g. reports/converged/linear")
    parser.set_defaults(func=_run_findings)


def _run_findings(args) -> int:
    from tnlib.experiments.reporting.findings import write_report_findings
    from tnlib.files import shown_path

    if not (Path(args.report) / ACCURACY_SEEDS).is_file():
        raise CommandError(f"{args.report} holds no accuracy-seeds.csv: give a rendered report's folder")
    try:
        written = write_report_findings(args.report)
    except ValueError as err:
        raise CommandError(str(err)) from None
    for path in written:
        print(f"wrote {shown_path(path)}")
    return 0


def register_baselines(subparsers) -> None:
    from tnlib.data.schema import PLAN_SETS
    from tnlib.experiments.running.baselines import BASELINE_HEURISTICS
    from tnlib.paper import DOMAINS
    from tnlib.planning.search_settings import PAPER_SEARCH

    parser = subparsers.add_parser(
        "baselines", help=COMMANDS["baselines"][1],
        description="Plan every instance of a dataset's label-free plan sets (`tnlib data plan-set`) with GBFS and "
                    "each symbolic heuristic, under the paper's protocol, resumably (one JSON line per instance), "
                    "then write OUT/baselines.md: coverage and average evaluations per grid cell and per domain, on "
                    "every instance and under the paper's selection by optimal solves, beside the paper's h_FF.")
    parser.add_argument("data", help="dataset root holding the plan sets, e.g. data/paper")
    parser.add_argument("--out", required=True, help="folder for the planning records and baselines.md")
    parser.add_argument("--domains", nargs="+", default=list(DOMAINS), choices=DOMAINS,
                        help=f"(default: {' '.join(DOMAINS)})")
    parser.add_argument("--heuristics", nargs="+", default=list(BASELINE_HEURISTICS), choices=BASELINE_HEURISTICS,
                        help=f"(default: {' '.join(BASELINE_HEURISTICS)})")
    parser.add_argument("--plan-sets", nargs="+", default=[PLAN_SETS["test"]], choices=list(PLAN_SETS.values()),
                        help=f"(default: {PLAN_SETS['test']})")
    parser.add_argument("--max-evaluations", type=int, default=PAPER_SEARCH.max_evaluations,
                        help=f"GBFS's evaluation limit (default: {PAPER_SEARCH.max_evaluations:,})")
    parser.add_argument("--selection", type=selection_seconds, nargs="*", default=[], metavar="S",
                        help="also show each domain's rows under the paper's selection: the instances solved "
                             "optimally within S seconds by the recorded solves (repeatable values)")
    parser.add_argument("--render-only", action="store_true", help="write baselines.md from what is planned")
    parser.add_argument("--workers", type=int, default=1, help="local processes planning side by side (default: 1)")
    parser.set_defaults(func=_run_baselines)
    declare_outputs(parser, out="folder")


def _run_baselines(args) -> int:
    import shlex

    from tnlib.experiments.running.baselines import render_plan_set_baselines, run_plan_set_baselines
    from tnlib.files import shown_path

    if not args.render_only:
        run_plan_set_baselines(args.data, args.out, args.domains, args.heuristics, args.plan_sets, args.max_evaluations,
                      args.workers, progress=lambda done: print(f"planned {done}", flush=True))
    command = "tnlib baselines " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if len(sys.argv) > 2 else ""
    path = render_plan_set_baselines(args.data, args.out, args.domains, args.heuristics, args.plan_sets, args.selection,
                            command=command.replace(" --render-only", ""))
    print(f"wrote {shown_path(path)}")
    return 0


def register_rerun_check(subparsers) -> None:
    from tnlib.experiments.running.rerun_check import CURVE_STEPS, SUBSET

    parser = subparsers.add_parser(
        "rerun-check", help=COMMANDS["rerun-check"][1],
        description="Train a fixed subset of the committed linear five-seed report's runs again from scratch "
                    f"({SUBSET['domains']} {SUBSET['configs']}, seed {SUBSET['seeds']}: N and TN, "
                    "15 s here) and compare the per-seed metrics with those committed for this kind of machine, digit "
                    f"for digit; then train the first {CURVE_STEPS} steps of a committed NLM five-seed run trained on "
                    "this kind of machine again and compare its validation curve (about 10 s), on kinds where "
                    "that once agreed; then train a fixed short STRIPS-HGN, WL and NLM run and compare their curves "
                    "with those recorded for this kind (about 30 s). Exit 0 when all agree, 1 when one differs (a "
                    "change moved rounding: rerun the reports it touches), 2 when nothing was made or confirmed on this "
                    "kind of machine.")
    parser.add_argument("--record", action="store_true",
                        help="where the linear report holds nothing made on this kind of machine, record the rerun "
                             "as its reference (rerun-references.csv beside the report); where no NLM rerun was "
                             "confirmed on it, confirm it if the curve agrees (curve-reruns.csv beside the runs); "
                             "where no STRIPS-HGN, WL or NLM curve is recorded for it, record them "
                             "(curve-references.csv)")
    parser.set_defaults(func=_run_rerun_check)


def _run_rerun_check(args) -> int:
    from tnlib.experiments.running.rerun_check import (CHECKED_REPORT, CURVE_FOLDER, MODEL_CURVE_REFERENCES, check,
                                               check_curve, check_model_curves)
    from tnlib.files import shown_path

    if not (CHECKED_REPORT / ACCURACY_SEEDS).is_file():
        raise CommandError(f"{CHECKED_REPORT} has no accuracy-seeds.csv: the check runs in a checkout of tnlib")
    checks = ((CHECKED_REPORT, lambda: check(CHECKED_REPORT, record=args.record)),
              (CURVE_FOLDER, lambda: check_curve(CURVE_FOLDER, record=args.record)),
              (MODEL_CURVE_REFERENCES, lambda: check_model_curves(args.record, MODEL_CURVE_REFERENCES)))
    compared, nothing, differ = 0, [], False
    for folder, run_check in checks:
        try:
            against, differences = run_check()
        except NothingToCompare as err:
            nothing.append(str(err))
            continue
        compared += 1
        differ = differ or bool(differences)
        print(f"{shown_path(folder)}: compared with {against}")
        for line in differences:
            print(f"  {line}")
        print("  differs: rerun the reports this code touches" if differences else
              "  the rerun agrees digit for digit")
    if not compared:
        raise CommandError("; ".join(nothing) + " -- nothing compared")
    for line in nothing:
        print(f"not compared: {line}")
    return 1 if differ else 0


def register_handout(subparsers) -> None:
    from tnlib.experiments.running.reproduce import NOTEBOOKS

    classroom = NOTEBOOKS / "statistics_of_heuristic_learning.ipynb"
    parser = subparsers.add_parser(
        "handout", help=COMMANDS["handout"][1],
        description="Write a copy of a teaching notebook for students: each exercise's folded solution is "
                    "replaced by a line for their answer and every output is cleared; everything else is left "
                    "as it is.")
    parser.add_argument("notebook", nargs="?", default=str(classroom),
                        help="the notebook (default: the classroom notebook, notebooks/statistics_of_heuristic_"
                             "learning.ipynb)")
    parser.add_argument("--out", required=True, help="where to write the student copy, e.g. handout.ipynb")
    parser.set_defaults(func=_run_handout)
    declare_outputs(parser, out="file")


def _run_handout(args) -> int:
    from tnlib.files import shown_path
    from tnlib.notebook.handout import write_handout

    try:
        removed = write_handout(args.notebook, args.out)
    except ValueError as err:
        raise CommandError(str(err)) from None
    print(f"wrote {shown_path(args.out)}: {removed} solution{'' if removed == 1 else 's'} left out, outputs cleared")
    return 0


def register_prune(subparsers) -> None:
    parser = subparsers.add_parser(
        "prune", help=COMMANDS["prune"][1],
        description="Remove last.pt and last-previous.pt from every run of a results folder that has trained to "
                    "its steps and been tested, leaving pruned.json (the step it finished at): reports, rerun "
                    "checks, evaluation and planning read none of them, and a sweep run again over the folder finds "
                    "those runs finished. Training a pruned run further needs a fresh start.")
    parser.add_argument("results", help="a results folder (a sweep's --out), e.g. reports/converged/nlm5/runs")
    parser.add_argument("--dry-run", action="store_true", help="only list the runs it would prune")
    parser.set_defaults(func=_run_prune)


def _run_prune(args) -> int:
    from tnlib.experiments.running.pruning import prune_finished_runs
    from tnlib.files import shown_path

    try:
        pruned = prune_finished_runs(args.results, dry_run=args.dry_run)
    except FileNotFoundError as err:
        raise CommandError(str(err)) from None
    for run in pruned:
        print(f"{shown_path(run.run)}: finished at step {run.step:,}, {run.freed_bytes / 1024:,.0f} KB")
    freed = sum(run.freed_bytes for run in pruned) / 2**20
    print(f"{'would prune' if args.dry_run else 'pruned'} {len(pruned)} finished run{'' if len(pruned) == 1 else 's'}"
          f" of {shown_path(args.results)}: {freed:.1f} MiB")
    return 0


def register_export_records(subparsers) -> None:
    parser = subparsers.add_parser(
        "export-records", help=COMMANDS["export-records"][1],
        description="Copy the run folders and own files of a results folder (sweep.json, the baselines, a plan "
                    "set's sub-folder) into another folder without their checkpoints (*.pt) -- every file "
                    "`tnlib report` reads (but --calibration, which needs the weights), so a report rendered from "
                    "the copy re-renders from git. Planning records and curves are written gzip-compressed "
                    "(.jsonl.gz), reproducibly; every reader of a results folder takes them. Exporting again "
                    "replaces what changed.")
    parser.add_argument("results", help="a results folder (a sweep's --out), e.g. runs/paper-scale-wl")
    parser.add_argument("--out", required=True, help="the folder to copy into, e.g. reports/paper-scale-wl/records")
    parser.add_argument("--plain", action="store_true",
                        help="copy planning records and curves as they are, uncompressed")
    parser.set_defaults(func=_run_export_records)
    declare_outputs(parser, out="folder")


def _run_export_records(args) -> int:
    from tnlib.experiments.reporting.record_export import export_records
    from tnlib.files import shown_path

    try:
        export = export_records(args.results, args.out, compress=not args.plain)
    except (FileNotFoundError, ValueError) as err:
        raise CommandError(str(err)) from None
    untested = export.runs - export.tested
    print(f"exported {export.runs} run{'' if export.runs == 1 else 's'} of {shown_path(args.results)} to "
          f"{shown_path(args.out)}: {export.files} files, {export.written_bytes / 2**20:.1f} MiB (checkpoints left "
          f"out: {export.left_out_bytes / 2**20:.1f} MiB)")
    if export.record_bytes:
        print(f"planning records and curves: {export.record_bytes / 2**20:.2f} MiB"
              + (f", compressed to {export.compressed_record_bytes / 2**20:.2f} MiB" if not args.plain else ""))
    if untested:
        print(f"{untested} of the runs have no test metrics yet (still training, or stopped): a report tables only "
              "tested runs; export again when they are done")
    return 0


def register_restore_weights(subparsers) -> None:
    parser = subparsers.add_parser(
        "restore-weights", help=COMMANDS["restore-weights"][1],
        description="Write back every best.pt and best-nll.pt that the run folders of a committed results folder "
                    "lack and git's history holds: a snapshot commits the weights once and then takes them out of "
                    "the tracked tree, so a new checkout restores them before it resumes the runs, plans with them "
                    "or calibrates them. Files already there are left alone.")
    parser.add_argument("results", help="a results folder in a git checkout, e.g. reports/paper-scale-nlm5/runs")
    parser.add_argument("--dry-run", action="store_true", help="only list the files it would write")
    parser.set_defaults(func=_run_restore_weights)


def _run_restore_weights(args) -> int:
    from tnlib.experiments.running.weights_history import restore_weights
    from tnlib.files import shown_path

    try:
        restored = restore_weights(args.results, dry_run=args.dry_run)
    except (FileNotFoundError, ValueError) as err:
        raise CommandError(str(err)) from None
    for path in restored.written:
        print(f"{'would restore' if args.dry_run else 'restored'} {shown_path(path)}")
    print(f"{shown_path(args.results)}: {len(restored.written)} weight file"
          f"{'' if len(restored.written) == 1 else 's'} {'to restore' if args.dry_run else 'restored'} from git's "
          f"history, {len(restored.present)} already there")
    if restored.exported:
        print(f"{len(restored.exported)} run folder{'' if len(restored.exported) == 1 else 's'} of exported records "
              "(`tnlib export-records`), which keep no weights: they render reports, they do not plan or resume")
    if restored.not_in_history:
        shown = ", ".join(shown_path(path) for path in restored.not_in_history[:5])
        more = len(restored.not_in_history) - 5
        print(f"not in history ({len(restored.not_in_history)}): {shown}{f' and {more} more' if more > 0 else ''} -- "
              "trained after the last snapshot; only the machine that trained them has them")
        return 1
    return 0


def register_adopt_runs(subparsers) -> None:
    parser = subparsers.add_parser(
        "adopt-runs", help=COMMANDS["adopt-runs"][1],
        description="Unpack the runs a lent machine trained and sent back (reports/speed-cuda/lent_machine.sh's "
                    "runs-K.tgz.NN pieces, joined in order) and move into the results folder each it can take "
                    "whole: tested, its records whole, trained on one kind of machine, and of a name the folder "
                    "does not hold (a run started here stays the folder's). Nothing there is overwritten; each run "
                    "left out is named with the reason.")
    parser.add_argument("pieces", nargs="+", help="the archive's pieces, e.g. /work/.device/1/runs-1.tgz.*")
    parser.add_argument("--into", required=True, help="the results folder, e.g. reports/paper-scale-nlm5/runs")
    parser.add_argument("--code", metavar="COMMIT",
                        help="take only runs trained by this commit's code at every start (machines.jsonl), as a "
                             "campaign pinned to one code asks")
    parser.add_argument("--dry-run", action="store_true", help="only say which runs it would take")
    parser.set_defaults(func=_run_adopt_runs)


def _run_adopt_runs(args) -> int:
    from tnlib.data.schema import TEST_GRID
    from tnlib.experiments.running.adopted_runs import adopt_runs
    from tnlib.files import shown_path
    from tnlib.learning.run_files import RunDir

    try:
        done = adopt_runs(args.pieces, args.into, code=args.code, dry_run=args.dry_run)
    except (FileNotFoundError, ValueError) as err:
        raise CommandError(str(err)) from None
    for name in done.adopted:
        graded = not args.dry_run and RunDir(Path(args.into) / name).metrics_file(TEST_GRID).is_file()
        print(f"{'would take' if args.dry_run else 'took'} {name}"
              + (" (with its metrics on the whole test grid)" if graded else ""))
    for name, reason in done.left_out:
        print(f"left out {name}: {reason}")
    print(f"{shown_path(args.into)}: {len(done.adopted)} run{'' if len(done.adopted) == 1 else 's'} "
          f"{'to take' if args.dry_run else 'taken'}, {len(done.left_out)} left out")
    return 0


def register_cluster_check(subparsers) -> None:
    parser = subparsers.add_parser(
        "cluster-check", help=COMMANDS["cluster-check"][1],
        description="Ask the scheduler and every worker of a Dask cluster what a sweep sent there would train "
                    "with: the commit of their tnlib (the scheduler unpickles the tasks), each worker's machine kind, "
                    "torch's threads, whether it sees the results folder the client sees and the same dataset. "
                    "Exit 1 where a worker would train otherwise than the others or "
                    "than --code (a campaign pinned to one code: `make paper-scale SCHEDULER=...` asks first).")
    parser.add_argument("scheduler", help="the Dask scheduler's address, e.g. tcp://HOST:8786")
    parser.add_argument("--results", default=None,
                        help="the results folder the sweep writes (default: the sweep's, runs/paper; the campaign's: "
                             "reports/paper-scale-nlm5/runs)")
    parser.add_argument("--data", default=None,
                        help="the dataset folder the sweep reads (default: $TNLIB_DATA/paper or <repo>/data/paper)")
    parser.add_argument("--code", metavar="COMMIT", help="the commit every worker's tnlib must be")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                        help="how long to wait for the scheduler to answer (default 30)")
    parser.set_defaults(func=_run_cluster_check)


def _run_cluster_check(args) -> int:
    from tnlib.data.schema import MANIFEST
    from tnlib.experiments.running.cluster_workers import ask_cluster_workers, judge_cluster_workers
    from tnlib.experiments.sweep_settings import Sweep
    from tnlib.errors import SchedulerUnreachable
    from tnlib.files import shown_path

    data = Path(args.data) if args.data else Sweep().dataset_path()
    results = args.results or Sweep().out_dir
    manifest = data / MANIFEST
    if not manifest.is_file():
        raise CommandError(f"no dataset manifest at {manifest}: name the dataset folder the sweep reads (--data)")
    try:
        workers = ask_cluster_workers(args.scheduler, results, manifest, timeout=args.timeout)
    except SchedulerUnreachable as err:
        raise CommandError(str(err)) from None
    verdict = judge_cluster_workers(workers, manifest, code=args.code, results=results)
    for worker in verdict.workers:
        if worker.role == "scheduler":
            print(f"scheduler {worker.address}: tnlib {worker.code} ({worker.package})")
        else:
            print(f"{worker.address}: tnlib {worker.code} ({worker.package}), {worker.machine}, "
                  f"{worker.threads} thread{'' if worker.threads == 1 else 's'}")
        for reason in verdict.refusals.get(worker.address, []):
            print(f"  refused: {reason}")
    for kind in verdict.new_kinds:
        print(f"new to {shown_path(results)}: {kind} -- no run there was trained on it yet; once one has trained 300 "
              "steps there, `make paper-scale-rerun-check` on such a machine checks that it repeats")
    if len(verdict.worker_kinds) > 1:
        print(f"the workers are of {len(verdict.worker_kinds)} machine kinds: a run stopped part-way may resume on "
              "another kind (its machines.jsonl then names both); stop the cluster between runs, or keep it to one")
    count = sum(worker.role == "worker" for worker in verdict.workers)
    if not count:
        print(f"no workers at {args.scheduler}: start them first (make paper-scale-worker SCHEDULER=...)")
    print(f"{count} worker{'' if count == 1 else 's'}, {len(verdict.refusals)} refused"
          + ("" if verdict.ready else ": nothing sent"))
    return 0 if verdict.ready else 1


REGISTER = {"sweep": register_sweep, "reproduce": register_reproduce, "report": register_report,
            "intervals": register_intervals, "findings": register_findings, "baselines": register_baselines,
            "rerun-check": register_rerun_check, "handout": register_handout, "prune": register_prune,
            "export-records": register_export_records, "restore-weights": register_restore_weights,
            "adopt-runs": register_adopt_runs, "cluster-check": register_cluster_check}
