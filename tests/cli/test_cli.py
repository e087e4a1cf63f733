"""The package's entry points: `tnlib` and `python -m tnlib`, every sub-command registered, the main job's plan."""
from __future__ import annotations

import subprocess
import sys

import pytest

import tnlib
from tnlib.cli import COMMANDS, build_parser, main

EXPECTED = {"reproduce", "generate", "solve", "plan", "validate", "heuristics", "data", "train", "evaluate", "sweep",
            "report"}


def _choices(parser):
    return set(next(a for a in parser._actions if a.dest == "command").choices)


def test_every_command_is_listed_and_its_module_registers_it():
    assert _choices(build_parser()) == set(COMMANDS) >= EXPECTED
    for name in COMMANDS:
        parser = build_parser(name)  # imports the module, which must register this very command, with a func
        subparsers = next(a for a in parser._actions if a.dest == "command")
        assert name in subparsers.choices
        assert callable(subparsers.choices[name].get_default("func")), name


def test_a_command_has_one_help_line_listed_and_registered_alike():
    # `tnlib --help` lists COMMANDS' lines without importing the modules; each module registers its command with
    # that same line, so the two cannot drift apart
    for name, (_, line) in COMMANDS.items():
        subparsers = next(a for a in build_parser(name)._actions if a.dest == "command")
        (registered,) = [action.help for action in subparsers._choices_actions if action.dest == name]
        assert registered == line, name


def _flags(parser, path):
    """(command path, argparse action) of every optional flag under ``parser``, sub-commands included."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _flags(sub, f"{path} {name}")
        elif action.option_strings and not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield path, action


def test_every_flag_with_a_default_says_it_in_its_help():
    """The README: `tnlib COMMAND --help` shows every flag with its default. A flag that falls back to something
    (a value, or the dataset profile's limits) names it; only flags that are simply off when absent need not."""
    import argparse

    missing, limits = [], {}
    for name in COMMANDS:
        command = next(a for a in build_parser(name)._actions if a.dest == "command").choices[name]
        for path, action in _flags(command, f"tnlib {name}"):
            if path == "tnlib data generate" and action.dest in ("time_limit", "test_time_limit", "memory_limit"):
                limits[action.dest] = action.help
            switch = isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction))
            off = switch or action.default in (None, [], argparse.SUPPRESS)
            if not off and "default" not in (action.help or ""):  # "%(default)s" counts too
                missing.append(f"{path} {action.option_strings[0]} (default {action.default!r})")
    assert not missing, missing
    from tnlib.data.profiles import PROFILES

    assert f"paper {PROFILES['paper'].time_limits['train']:g}" in limits["time_limit"]
    assert f"paper {PROFILES['paper'].time_limits['test']:g}" in limits["test_time_limit"]
    assert f"small {PROFILES['small'].memory_limit_mb}" in limits["memory_limit"]


def test_python_dash_m_and_version():
    out = subprocess.run([sys.executable, "-m", "tnlib", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"tnlib {tnlib.__version__}"
    assert main([]) == 0  # no command: help, exit 0


def test_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["no-such-command"])
    assert exit_info.value.code == 2


def test_cli_import_does_not_load_torch():
    code = "import sys, tnlib.cli; tnlib.cli.build_parser(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("command", ["reproduce", "baselines", "handout", "rerun-check", "report"])
def test_a_commands_help_loads_neither_torch_nor_scipy_nor_numba(command):
    # (what made `--help` of these take seconds: the help is their flags, not the work they do)
    code = ("import sys, contextlib, io, tnlib.cli\n"
            f"with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
            f"    tnlib.cli.main([{command!r}, '--help'])\n"
            "print(sorted(m for m in ('torch', 'scipy', 'numba') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr


def test_main_job_plans_every_notebook_and_report():
    from tnlib.experiments.running.reproduce import NOTEBOOKS, steps

    names = [s.name for s in steps()]
    notebooks = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert [n for n in names if n.startswith("notebook ")] == [f"notebook {n}" for n in
                                                                 ["truncated_gaussian_explorer.ipynb",
                                                                  "statistics_of_heuristic_learning.ipynb",
                                                                  "heuristic_learning_experiments.ipynb"]]
    assert {n.split(" ", 1)[1] for n in names if n.startswith("notebook ")} == set(notebooks)
    outputs = {p.name for s in steps() for p in s.outputs}
    assert {"accuracy.md", "planning.md", "training_curves.html", "truncated_normal.md"} <= outputs


def test_a_report_script_run_in_the_main_jobs_process_prints_as_its_command_would(tmp_path, monkeypatch,
                                                                                    capsys):
    import os

    import torch

    from tnlib.experiments.running.reproduce import ROOT, _script

    script = tmp_path / "bench_demo.py"
    (tmp_path / "bench_demo_sibling.py").write_text("THREADS = 3\n")
    script.write_text("import os, sys, torch\n\nfrom bench_demo_sibling import THREADS\n\n"
                      "if __name__ == '__main__':\n"
                      "    torch.set_num_threads(THREADS)  # (each benchmark sets the count it times with)\n"
                      "    print('a warning', file=sys.stderr)\n"
                      "    print(sys.argv[1:], os.getcwd() == sys.argv[2])\n"
                      "    assert sys.argv[1] == '--points', 'the failure'\n")
    monkeypatch.chdir(tmp_path)
    threads, argv, search_path = torch.get_num_threads(), list(sys.argv), list(sys.path)
    assert _script(str(script), "--points", str(ROOT)) == f"['--points', '{ROOT}'] True\n"
    # in the repository, importing its sibling scripts, as `python benchmarks/SCRIPT` from it; and then the
    # caller's settings as they were
    assert (torch.get_num_threads(), sys.argv, os.getcwd(), sys.path) == (threads, argv, str(tmp_path), search_path)
    assert capsys.readouterr().err == ""  # what a script warns of is not the main job's output
    with pytest.raises(AssertionError, match="the failure"):
        _script(str(script), "--repeats", str(ROOT))
    assert capsys.readouterr().err == "a warning\n"  # unless it fails: then all it said is shown
    assert (torch.get_num_threads(), sys.argv, os.getcwd()) == (threads, argv, str(tmp_path))


@pytest.mark.parametrize("command, config", [("train", "tnlib.learning.training:TrainConfig"),
                                             ("sweep", "tnlib.experiments.sweep_settings:Sweep")])
def test_config_flags_cover_every_field_and_default_to_the_config(command, config):
    import importlib

    from tnlib.cli.config_flags import config_values

    module, name = config.split(":")
    cls = getattr(importlib.import_module(module), name)
    parser = build_parser(command)
    subparser = next(a for a in parser._actions if a.dest == "command").choices[command]
    dests = {action.dest for action in subparser._actions}
    args = parser.parse_args([command])
    if command == "train":
        # the training settings and its head's, flat as a run folder records them (TrainConfig.to_dict): a new
        # field of either gets its flag without touching the CLI, and every flag defaults to the dataclasses'
        from tnlib.learning.heads import HeadConfig

        flat = cls().to_dict()
        assert set(flat) <= dests
        values = {**config_values(args, cls, {"model_args": "--model-arg"}, skip=("head",)),
                  **config_values(args, HeadConfig)}
        assert values == flat
        return
    if command == "sweep":
        # the sweep's own settings and its template's, flat as its parameters: a new one gets its flag without
        # touching the CLI; flags not given are left to the preset (none: the paper's settings, the defaults)
        from tnlib.cli.experiments import sweep_parameters

        assert set(cls.parameter_names()) <= dests
        values = sweep_parameters(args)
        assert values == {} and cls.from_parameters(preset=args.preset, **values) == cls.from_parameters()


def test_sweep_flags_override_the_preset_even_at_the_papers_value():
    from tnlib.cli.experiments import sweep_parameters
    from tnlib.experiments.sweep_settings import Sweep

    args = build_parser("sweep").parse_args(["sweep", "--preset", "small", "--batch-size", "256", "--no-plan"])
    values = sweep_parameters(args)
    assert values == {"batch_size": 256, "plan": False}
    sweep = Sweep.from_parameters(preset=args.preset, **values)
    assert (sweep.train.batch_size, sweep.plan, sweep.train.steps) == (256, False, Sweep.preset("small").train.steps)


def test_optional_counts_take_all_and_reject_words(capsys):
    from tnlib.cli.experiments import sweep_parameters

    args = build_parser("sweep").parse_args(["sweep", "--plan-instances", "all", "--instances", "12"])
    assert sweep_parameters(args) == {"plan_instances": None, "instances": 12}
    with pytest.raises(SystemExit):
        build_parser("sweep").parse_args(["sweep", "--plan-instances", "some"])
    assert "expected a whole number or 'all', got 'some'" in capsys.readouterr().err


def test_config_flags_parse_key_values_and_switches():
    from tnlib.cli.config_flags import config_values
    from tnlib.learning.training import TrainConfig

    args = build_parser("train").parse_args(["train", "--model-arg", "depth=3", "--model-arg", "name=x", "--lr", "0.5",
                                             "--no-progress", "--instances", "7"])
    values = config_values(args, TrainConfig)
    assert values["model_args"] == {"depth": 3, "name": "x"}
    assert values["learning_rate"] == 0.5 and values["progress"] is False and values["instances"] == 7
    bad = build_parser("train").parse_args(["train", "--model-arg", "depth"])
    with pytest.raises(ValueError, match="expects KEY=VALUE"):
        config_values(bad, TrainConfig, {"model_args": "--model-arg"})
