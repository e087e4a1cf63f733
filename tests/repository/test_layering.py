"""tnlib's layering: each stage imports only itself and the stages below it.

    cli > experiments > learning > data > planning > distributions > the foundation modules

Every module under tnlib/ is parsed with ``ast`` and every import in it -- at the top, inside functions and
classes, relative ones, and ``importlib.import_module("...")`` with a literal name -- is checked against
:data:`RANKS`. A module whose folder or name is missing from :data:`RANKS` fails too, so a new stage has to be
placed here on purpose.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

TNLIB = Path(__file__).resolve().parents[2] / "tnlib"

# Where each part of tnlib sits; a part may import parts of its own rank or lower ranks.
RANKS: dict[str, int] = {
    # The foundation: they import nothing of tnlib but each other (executors raises an error class), and every
    # stage may use them -- the paper's constants, every error, atomic writes, CPU or CUDA, the job runner,
    # progress display, the code's commit, and numba's on-disk cache kept fresh.
    "paper": 0, "errors": 0, "files": 0, "device": 0, "executors": 0, "progress": 0, "provenance": 0,
    "kernel_cache": 0,
    "distributions": 1,
    # The package itself (tnlib/__init__.py): it re-exports TruncatedNormal, so it sits with distributions; data
    # and cli import it for __version__.
    "": 1,
    "planning": 2,
    "data": 3,
    "learning": 4,
    "experiments": 5,
    # What the notebooks call beside tnlib.experiments (figures, the teaching notebooks' checks): a front end
    # for the notebooks at experiments' level, imported by no library stage (figure_home_violations checks it).
    "notebook": 5,
    "cli": 6,
    "__main__": 6,  # `python -m tnlib`: runs the command line
}


def _part(module: str) -> str:
    """The part of tnlib a dotted module name belongs to: ``tnlib.learning.training`` -> ``learning``."""
    names = module.split(".")
    return names[1] if len(names) > 1 else ""


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of every tnlib module that ``source`` (the code of ``module``) imports, anywhere."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: drop level - 1 trailing names of the package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module
            # `from tnlib import learning` imports the stage tnlib.learning, not only the package
            names = [f"{name}.{alias.name}" for alias in node.names] if name == "tnlib" else [name]
            found += [(node.lineno, each) for each in names]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node.lineno, node.args[0].value))
    return [(line, name) for line, name in found if name == "tnlib" or name.startswith("tnlib.")]


def _rank_of(name: str, root: Path) -> int | None:
    part = _part(name)
    if part in RANKS:
        return RANKS[part]
    # `from tnlib import __version__`: a name defined in the package itself, not a module of it
    return RANKS[""] if not (root / part).is_dir() and not (root / f"{part}.py").is_file() else None


def layering_violations(root: Path = TNLIB) -> list[str]:
    """One line per import of a higher stage (or of a module no rank is given for), naming file, line and import."""
    problems = []
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        where = f"{path.relative_to(root.parent)}"
        own = RANKS.get(_part(module))
        if own is None:
            problems.append(f"{where}: {module} has no rank in tests/repository/test_layering.py's RANKS; place it "
                            "there")
            continue
        for line, name in imported_modules(path.read_text(), module, path.name == "__init__.py"):
            rank = _rank_of(name, root)
            if rank is None:
                problems.append(f"{where}:{line}: imports {name}, which has no rank in RANKS")
            elif rank > own:
                problems.append(f"{where}:{line}: {_part(module) or 'tnlib'} imports {name} "
                                f"({_part(name)}, a stage above it)")
    return problems


def test_no_stage_imports_a_stage_above_it():
    problems = layering_violations()
    assert not problems, "upward imports in tnlib/:\n" + "\n".join(problems)


def test_every_top_level_part_of_tnlib_has_a_rank():
    parts = {p.stem for p in TNLIB.glob("*.py") if p.name != "__init__.py"}
    parts |= {p.name for p in TNLIB.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert parts <= set(RANKS), f"give these a rank in RANKS: {sorted(parts - set(RANKS))}"


def _write(root: Path, relative: str, source: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)


@pytest.mark.parametrize("source, line, imported", [
    ("from tnlib.experiments.results_dir import RunDir\n", 3, "tnlib.experiments.results_dir"),
    ("def f():\n    from tnlib.experiments import results_dir\n", 4, "tnlib.experiments"),  # inside a function
    ("class C:\n    def f(self):\n        import tnlib.cli\n", 5, "tnlib.cli"),
    ("from ..experiments import sweep\n", 3, "tnlib.experiments"),  # relative
    ("from tnlib import experiments\n", 3, "tnlib.experiments"),
    ("import importlib\nimportlib.import_module('tnlib.experiments.running.sweep')\n", 4, "tnlib.experiments.running.sweep"),
])
def test_the_check_names_an_upward_import(tmp_path, source, line, imported):
    root = tmp_path / "tnlib"
    _write(root, "__init__.py", "")
    _write(root, "experiments/__init__.py", "")
    _write(root, "learning/__init__.py", "")
    _write(root, "learning/training.py", "from tnlib.data import loading\nimport tnlib.paper\n" + source)
    stage = imported.split(".")[1]
    assert layering_violations(root) == [
        f"tnlib/learning/training.py:{line}: learning imports {imported} ({stage}, a stage above it)"]


def test_the_check_allows_own_and_lower_stages_and_names_an_unranked_module(tmp_path):
    root = tmp_path / "tnlib"
    _write(root, "__init__.py", "")
    _write(root, "learning/training.py", "from . import models\nfrom ..data import loading\nfrom tnlib import __version__\n"
                                        "def f():\n    from tnlib.learning.run_files import RunDir\n")
    assert layering_violations(root) == []
    _write(root, "plotting.py", "")
    assert layering_violations(root) == ["tnlib/plotting.py: tnlib.plotting has no rank in "
                                         "tests/repository/test_layering.py's RANKS; place it there"]


def test_a_results_folder_names_baselines_as_the_learning_stage_writes_them():
    from tnlib.experiments import results_dir
    from tnlib.learning import run_files

    assert "RunDir" not in results_dir.__all__  # one import path: tnlib.learning.run_files
    results = results_dir.ResultsDir("out")
    assert results.baseline_file("ferry", "ff") == run_files.baseline_file("out", "ferry", "ff")


# experiments/ is a base and two wings. The base (the modules at its root) is what a results folder holds and can
# show -- its files, its damaged records, the reports' scope header -- read by both wings. The running wing runs
# sweeps, cells, baselines and the main job; the reporting wing lays their results out as tables, pages and figures.
# Running imports reporting (a sweep's banner, the main job and the rerun check render reports); reporting never
# imports running, and the base neither wing.
EXPERIMENTS_WINGS = ("running", "reporting")


def experiments_wing_violations(root: Path = TNLIB) -> list[str]:
    """One line per import that crosses experiments/' wings the wrong way: the reporting wing importing the running
    wing, or a base module (experiments/' root) importing either; and one per experiments module in neither the
    base nor a wing's folder."""
    problems = []
    for path in sorted((root / "experiments").rglob("*.py")):
        module = _module_name(path, root)
        names = module.split(".")
        where = path.relative_to(root.parent)
        if len(names) > 3 and names[2] not in EXPERIMENTS_WINGS:
            problems.append(f"{where}: {module} is in no wing of experiments/ ({', '.join(EXPERIMENTS_WINGS)})")
            continue
        wing = names[2] if len(names) > 3 or (len(names) == 3 and path.name == "__init__.py") else None
        forbidden = {"running"} if wing == "reporting" else set() if wing == "running" else set(EXPERIMENTS_WINGS)
        for line, name in imported_modules(path.read_text(), module, path.name == "__init__.py"):
            parts = name.split(".")
            if len(parts) > 2 and parts[1] == "experiments" and parts[2] in forbidden:
                problems.append(f"{where}:{line}: {wing or 'the base of experiments/'} imports {name}")
    return problems


def test_reporting_never_imports_running_and_the_base_neither():
    problems = experiments_wing_violations()
    assert not problems, "imports across experiments/' wings:\n" + "\n".join(problems)
    assert all((TNLIB / "experiments" / wing / "__init__.py").is_file() for wing in EXPERIMENTS_WINGS)


def test_the_wing_check_names_reporting_importing_running_and_a_module_in_no_wing(tmp_path):
    root = tmp_path / "tnlib"
    _write(root, "__init__.py", "")
    _write(root, "experiments/scope.py", "from tnlib.experiments.results_dir import ResultsDir\n")
    _write(root, "experiments/results_dir.py", "")
    _write(root, "experiments/running/sweep.py", "from tnlib.experiments.reporting import tables\n")
    _write(root, "experiments/reporting/tables.py", "def f():\n    from tnlib.experiments.running.sweep import Sweep\n")
    _write(root, "experiments/plotting/curves.py", "")
    assert experiments_wing_violations(root) == [
        "tnlib/experiments/plotting/curves.py: tnlib.experiments.plotting.curves is in no wing of experiments/ "
        "(running, reporting)",
        "tnlib/experiments/reporting/tables.py:2: reporting imports tnlib.experiments.running.sweep"]
    _write(root, "experiments/scope.py", "from tnlib.experiments.reporting.tables import f\n")
    assert "tnlib/experiments/scope.py:1: the base of experiments/ imports tnlib.experiments.reporting.tables" in (
        experiments_wing_violations(root))



# Figures have two homes, and the layering is why. A figure a report page embeds is drawn in the reporting wing's
# report_figures: `tnlib report` renders its pages without the notebooks' front end, which no library stage imports.
# A figure only a notebook shows is drawn in tnlib/notebook/ (its *_figures modules, notebook_plotting and
# explorer_controls, all called through notebook/figures.py), which may use the reporting wing's. No other module
# builds a plotly figure; the rest of tnlib writes figures out (figure_html) or ships plotly.js, never draws one.
FIGURE_HOMES = ("tnlib.experiments.reporting.report_figures", "tnlib.notebook")
FIGURE_BUILDERS = ("plotly.graph_objects", "plotly.subplots", "plotly.express")
NOTEBOOK_IMPORTERS = ("notebook", "cli", "__main__")


def _builder_imports(source: str) -> list[tuple[int, str]]:
    """``(line, module)`` of every import of plotly's figure builders in ``source``, anywhere."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:  # `from plotly import graph_objects` too
            found += [(node.lineno, f"plotly.{alias.name}" if node.module == "plotly" else node.module)
                      for alias in node.names]
    return [(line, name) for line, name in found if name.startswith(FIGURE_BUILDERS)]


def figure_home_violations(root: Path = TNLIB) -> list[str]:
    """One line per import of plotly's figure builders outside :data:`FIGURE_HOMES`, and one per import of
    tnlib.notebook by a library stage (any part of tnlib but the notebooks' front end and the command line)."""
    problems = []
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        where = path.relative_to(root.parent)
        source = path.read_text()
        if not any(module == home or module.startswith(home + ".") for home in FIGURE_HOMES):
            problems += [f"{where}:{line}: imports {name}: draw the figure in one of {', '.join(FIGURE_HOMES)}"
                         for line, name in _builder_imports(source)]
        if _part(module) not in NOTEBOOK_IMPORTERS:
            problems += [f"{where}:{line}: {_part(module) or 'tnlib'} imports {name}, the notebooks' front end"
                         for line, name in imported_modules(source, module, path.name == "__init__.py")
                         if name.startswith("tnlib.notebook")]
    return problems


def test_figures_are_drawn_in_report_figures_or_the_notebook_front_end_which_no_library_stage_imports():
    problems = figure_home_violations()
    assert not problems, "figures outside their homes:\n" + "\n".join(problems)


def test_the_figure_check_names_a_figure_drawn_elsewhere_and_a_library_stage_importing_the_notebooks(tmp_path):
    root = tmp_path / "tnlib"
    _write(root, "__init__.py", "")
    _write(root, "experiments/reporting/report_figures.py", "import plotly.graph_objects as go\n")
    _write(root, "notebook/density_figures.py", "from plotly.subplots import make_subplots\n"
                                               "from tnlib.experiments.reporting import report_figures\n")
    _write(root, "cli/experiments.py", "from tnlib.notebook.handout import write_handout\n")
    _write(root, "experiments/reporting/reports.py", "import plotly.offline\n\n\ndef f():\n"
                                                    "    from plotly import graph_objects as go\n")
    _write(root, "experiments/reporting/tables.py", "from tnlib.notebook import figures\n")
    assert figure_home_violations(root) == [
        "tnlib/experiments/reporting/reports.py:5: imports plotly.graph_objects: draw the figure in one of "
        "tnlib.experiments.reporting.report_figures, tnlib.notebook",
        "tnlib/experiments/reporting/tables.py:1: experiments imports tnlib.notebook, the notebooks' front end"]

# data/'s writing wing: the modules that make a dataset or a plan set (and read only their own unfinished work).
# Everything else in data/ reads finished datasets and must not import them.
DATA_WRITING_WING = {"generation", "generation_status", "attempt_selection", "attempt_solving", "split_work",
                     "split_consolidation", "manifest_writing", "plan_set_generation", "labels", "slot_filling",
                     "solution_cache", "train_pairs_writing", "lmcut_relabelling"}


def data_wing_violations(root: Path = TNLIB) -> list[str]:
    """One line per import of a writing-wing module of data/ by a module outside that wing, anywhere in tnlib
    but the command line (which runs both)."""
    problems = []
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        if _part(module) == "cli" or (_part(module) == "data" and module.split(".")[-1] in DATA_WRITING_WING):
            continue
        for line, name in imported_modules(path.read_text(), module, path.name == "__init__.py"):
            names = name.split(".")
            if len(names) > 2 and names[1] == "data" and names[2] in DATA_WRITING_WING:
                problems.append(f"{path.relative_to(root.parent)}:{line}: imports {name}, which writes datasets")
    return problems


def test_what_reads_a_dataset_never_imports_what_writes_one():
    problems = data_wing_violations()
    assert not problems, "reading modules importing data/'s writing wing:\n" + "\n".join(problems)
    present = {path.stem for path in (TNLIB / "data").glob("*.py")}
    assert DATA_WRITING_WING <= present, f"no such data modules: {sorted(DATA_WRITING_WING - present)}"


def test_the_wing_check_names_a_reader_importing_the_generator(tmp_path):
    root = tmp_path / "tnlib"
    _write(root, "__init__.py", "")
    _write(root, "data/manifest.py", "def f():\n    from tnlib.data.generation import params_label\n")
    _write(root, "data/generation.py", "from tnlib.data.manifest import f\n")
    assert data_wing_violations(root) == [
        "tnlib/data/manifest.py:2: imports tnlib.data.generation, which writes datasets"]


def repeated_names(root: Path = TNLIB) -> dict[str, list[str]]:
    """Module-level function and class names defined in more than one module (dunders aside): name -> modules."""
    where: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not (
                    node.name.startswith("__") and node.name.endswith("__")):
                where.setdefault(node.name, []).append(_module_name(path, root))
    return {name: modules for name, modules in where.items() if len(modules) > 1}


def test_module_level_names_are_unique_across_the_package():
    # a name says what a thing is, and a reader searching for it lands on one definition
    assert not repeated_names(), repeated_names()


def test_the_name_check_finds_a_helper_defined_twice(tmp_path):
    root = tmp_path / "tnlib"
    _write(root, "__init__.py", "")
    _write(root, "planning/task.py", "def _csr(groups):\n    return groups\n")
    _write(root, "learning/models.py", "def _csr(rows):\n    return rows\n\n\ndef __getattr__(name):\n    return name\n")
    _write(root, "experiments/sweep.py", "def __getattr__(name):\n    return name\n")
    assert repeated_names(root) == {"_csr": ["tnlib.learning.models", "tnlib.planning.task"]}
