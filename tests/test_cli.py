"""The package's entry points: `tnlib` and `python -m tnlib`, every sub-command registered, the main job's plan."""
from __future__ import annotations

import subprocess
import sys

import pytest

import tnlib
from tnlib.cli import COMMANDS, build_parser, main

EXPECTED = {"reproduce", "generate", "solve", "plan", "validate", "heuristics", "data", "train", "evaluate", "sweep"}


def _choices(parser):
    return set(next(a for a in parser._actions if a.dest == "command").choices)


def test_every_command_is_listed_and_its_module_registers_it():
    assert _choices(build_parser()) == set(COMMANDS) >= EXPECTED
    for name in COMMANDS:
        parser = build_parser(name)  # imports the module, which must register this very command, with a func
        subparsers = next(a for a in parser._actions if a.dest == "command")
        assert name in subparsers.choices
        assert callable(subparsers.choices[name].get_default("func")), name


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


def test_main_job_plans_every_notebook_and_report():
    from tnlib.experiments.reproduce import NOTEBOOKS, steps

    names = [s.name for s in steps()]
    notebooks = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert [n for n in names if n.startswith("notebook ")] == [f"notebook {n}" for n in
                                                                 ["truncated_gaussian_explorer.ipynb",
                                                                  "statistics_of_heuristic_learning.ipynb",
                                                                  "heuristic_learning_experiments.ipynb"]]
    assert {n.split(" ", 1)[1] for n in names if n.startswith("notebook ")} == set(notebooks)
    outputs = {p.name for s in steps() for p in s.outputs}
    assert {"accuracy.md", "planning.md", "training_curves.html", "truncated_normal.md"} <= outputs
