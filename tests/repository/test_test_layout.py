"""The tests mirror the package: each stage's folder under tests/ holds a test_X.py per module X of that stage of
tnlib/ (experiments/' wings included; foundation/ for tnlib/'s top-level modules), and the files that test an aspect
running through several modules instead are listed in :data:`ASPECT_FILES`, each with what it tests. A new test file
named after no module fails until it is renamed after its module or listed here on purpose."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# tests/<stage>/ -> tnlib's folder whose modules its files are named after (None: tnlib/'s top-level modules).
STAGE_FOLDERS = {"distributions": "distributions", "planning": "planning", "data": "data", "learning": "learning",
                 "experiments": "experiments", "notebook": "notebook", "cli": "cli", "foundation": None}

# Test files named after an aspect, not a module, and what each tests. tests/repository/ checks the whole tree
# (layering, size, the READMEs' claims, the benchmarks' imports): its files are all named after an aspect.
ASPECT_FILES = {
    "cli/test_cli.py": "the entry points and every sub-command registered",
    "cli/test_newcomer_path.py": "the commands a newcomer runs first, end to end",
    "cli/test_user_errors.py": "a new user's mistakes answered in one line, across commands",
    "data/test_out_of_reach.py": "the out-of-reach rule, through generation, its resumption and the sweep's dry run",
    "distributions/test_truncated_normal_cdf_float32.py": "a float32 batch's cdf against mpmath and the float64 route",
    "distributions/test_truncated_normal_icdf_pass.py": "the icdf's vectorized pass against its per-element kernel",
    "distributions/test_truncated_normal_kernels.py": "the compiled CPU kernels against the torch route",
    "distributions/test_truncated_normal_moment_routes.py": "the moment kernels' shortcuts against the routes "
                                                            "they stand in for and mpmath",
    "distributions/test_truncated_normal_sampling.py": "TruncatedNormal.sample, by the kernels and by torch",
    "distributions/test_truncated_normal_sweep.py": "a dense sweep of every method against mpmath",
    "distributions/test_truncated_normal_torch.py": "TruncatedNormal as torch's own distributions are checked",
    "experiments/test_campaign_cost.py": "benchmarks/campaign_cost.py's count of the campaign's training left",
    "experiments/test_committed_renders.py": "the committed reports rendered again from their files, line for line",
    "experiments/test_committed_reports.py": "the committed reports' runs trained again from scratch",
    "foundation/test_torn_files.py": "every file tnlib writes, damaged, read by the commands that read it",
    "learning/test_cuda.py": "the CUDA path against the CPU's, across the distributions, models and training",
    "learning/test_heuristic_at_bound.py": "benchmarks/heuristic_at_bound.py: a heuristic at its bound, as Table 1 "
                                           "scores it and as GBFS computes it",
    "learning/test_plan_with_trained_bound.py": "benchmarks/plan_with_trained_bound.py: Fast Downward's LM-cut "
                                                "as a learned heuristic's l",
    "notebook/test_browser.py": "the explorer notebook run in JupyterLab in a headless browser",
    "notebook/test_notebooks.py": "the notebooks committed clean, executed by papermill and exported",
    "notebook/test_slider_figures_browser.py": "the exported notebooks' slider figures in a headless browser",
    "planning/test_lmcut_supporter_ties.py": "benchmarks/lmcut_supporter_ties.py: LM-cut restated, and with Fast "
                                             "Downward's tie-breaking of supporters",
    "planning/test_search_protocols.py": "GBFS's counting protocols against the authors' planner, restated",
}


def unmirrored_test_files(root: Path = ROOT) -> list[str]:
    """tests/<stage>/test_X.py files named after no module X of their stage and not in :data:`ASPECT_FILES`, and
    listed files that no longer exist."""
    tests, package = root / "tests", root / "tnlib"
    problems = []
    for stage, folder in STAGE_FOLDERS.items():
        modules = ({path.stem for path in package.glob("*.py")} if folder is None
                   else {path.stem for path in (package / folder).rglob("*.py")})
        for path in sorted((tests / stage).glob("test_*.py")):
            relative = f"{stage}/{path.name}"
            if path.stem.removeprefix("test_") not in modules and relative not in ASPECT_FILES:
                where = "tnlib/" if folder is None else f"tnlib/{folder}/"
                problems.append(f"tests/{relative}: {where} has no module {path.stem.removeprefix('test_')}; name "
                                "the file after the module it tests, or list it in ASPECT_FILES")
    problems += [f"tests/{relative}: listed in ASPECT_FILES but missing" for relative in ASPECT_FILES
                 if not (tests / relative).is_file()]
    return problems


def test_every_test_file_is_named_after_a_module_of_its_stage_or_listed_as_an_aspect():
    problems = unmirrored_test_files()
    assert not problems, "\n".join(problems)
    stages = {path.name for path in (ROOT / "tests").iterdir() if path.is_dir() and any(path.glob("test_*.py"))}
    assert stages == set(STAGE_FOLDERS) | {"repository"}, sorted(stages)


def test_the_layout_check_names_a_file_after_no_module_and_a_listed_file_gone(tmp_path):
    for relative in ("tnlib/paper.py", "tnlib/experiments/reporting/tables.py", "tnlib/learning/training.py",
                     "tests/experiments/test_tables.py", "tests/foundation/test_paper.py",
                     "tests/learning/test_teaching.py", *(f"tests/{aspect}" for aspect in ASPECT_FILES)):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("")
    assert unmirrored_test_files(tmp_path) == [
        "tests/learning/test_teaching.py: tnlib/learning/ has no module teaching; name the file after the module it "
        "tests, or list it in ASPECT_FILES"]
    (tmp_path / "tests" / "cli" / "test_cli.py").unlink()
    assert unmirrored_test_files(tmp_path)[-1] == "tests/cli/test_cli.py: listed in ASPECT_FILES but missing"
