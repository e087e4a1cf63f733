"""The benchmark scripts keep up with the package: nothing runs them on CI (they print timings), so a renamed
function would otherwise surface only when someone next measures. Every name a script imports -- at the top or
inside a function, from tnlib or from a sibling script -- must exist."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))


def imported_names(path: Path) -> list[tuple[str, str, int]]:
    """(module, name, line) for every ``from MODULE import NAME`` of a tnlib module or a sibling script."""
    siblings = {p.stem for p in SCRIPTS}
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            top = node.module.split(".")[0]
            if top == "tnlib" or node.module in siblings:
                found.extend((node.module, alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((alias.name, "", node.lineno) for alias in node.names
                         if alias.name.split(".")[0] == "tnlib")
    return found


def missing_names(script: Path) -> list[str]:
    """``script:line: module has no name`` for each imported name that does not exist."""
    missing = []
    for module_name, name, line in imported_names(script):
        module = importlib.import_module(module_name)
        if name and name != "*" and not hasattr(module, name):
            try:  # a submodule imported by name (from tnlib.planning import heuristics)
                importlib.import_module(f"{module_name}.{name}")
            except ModuleNotFoundError:
                missing.append(f"{script.name}:{line}: {module_name} has no {name}")
    return missing


def test_there_are_benchmark_scripts_to_check():
    assert sum(bool(imported_names(p)) for p in SCRIPTS) >= 10


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_every_name_a_benchmark_imports_exists(script, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    assert not missing_names(script), "\n".join(missing_names(script))


def test_the_check_notices_a_name_that_is_gone(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    script = tmp_path / "bench_gone.py"
    script.write_text("import tnlib.planning\n\n\ndef main():\n"
                      "    from tnlib.planning.search import gbfs, no_such_search\n"
                      "    from bench_wl import largest_plan_instance, no_such_helper\n")
    assert missing_names(script) == ["bench_gone.py:5: tnlib.planning.search has no no_such_search",
                                     "bench_gone.py:6: bench_wl has no no_such_helper"]
