"""The notebooks: committed clean (no outputs, a papermill ``parameters`` cell), executed headless with papermill
on small parameters, converted to HTML that shows the figures without network access, and rejecting bad
parameters in the first cell after the parameters."""
from __future__ import annotations

import ast
import json
import re
import typing
from pathlib import Path

import nbformat
import pytest
import scipy.stats

papermill = pytest.importorskip("papermill")
from nbconvert import HTMLExporter  # noqa: E402
from papermill.exceptions import PapermillExecutionError  # noqa: E402

from tnlib.notebook.figures import BUNDLE_MARKER  # noqa: E402

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
EXPLORER = NOTEBOOK_DIR / "truncated_gaussian_explorer.ipynb"
CLASSROOM = NOTEBOOK_DIR / "statistics_of_heuristic_learning.ipynb"
EXPERIMENTS = NOTEBOOK_DIR / "heuristic_learning_experiments.ipynb"
NOTEBOOKS = [EXPLORER, CLASSROOM, EXPERIMENTS]
PLOTLY_MIME = "application/vnd.plotly.v1+json"
# Small parameters: seconds, not minutes.
SMALL_CLASSROOM = dict(num_train=60, num_test=80, steps=5, demo_steps=12, hidden_units=4, comparison_seeds=3)
SMALL_EXPLORER = dict(num_points=101)
# Kernel start and the torch import dominate; a generous limit per cell still catches a hang.
CELL_TIMEOUT_S = 120


def execute(notebook: Path, tmp_path: Path, **parameters) -> nbformat.NotebookNode:
    output = tmp_path / notebook.name
    papermill.execute_notebook(
        str(notebook), str(output), parameters=parameters, kernel_name="python3", cwd=str(tmp_path),
        execution_timeout=CELL_TIMEOUT_S, progress_bar=False, log_output=False,
    )
    return nbformat.read(output, as_version=4)


def outputs_of(notebook: nbformat.NotebookNode) -> list[dict]:
    return [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]


def printed_text(notebook: nbformat.NotebookNode) -> str:
    return "".join(output.get("text", "") for output in outputs_of(notebook) if output["output_type"] == "stream")


def check_figures_and_bundle(notebook: nbformat.NotebookNode, minimum_figures: int) -> None:
    """Figures are displayed (plotly mimetype and offline HTML), the plotly.js bundle is embedded exactly
    once, no cell failed."""
    outputs = outputs_of(notebook)
    assert not [output for output in outputs if output["output_type"] == "error"]
    figures = [output for output in outputs if PLOTLY_MIME in output.get("data", {})]
    assert len(figures) >= minimum_figures
    assert all("Plotly.newPlot" in output["data"]["text/html"] for output in figures)
    bundles = [output for output in outputs if BUNDLE_MARKER in output.get("data", {}).get("text/html", "")]
    assert len(bundles) == 1


def check_offline_html(notebook: nbformat.NotebookNode, minimum_figures: int) -> None:
    """nbconvert's HTML holds plotly.js once and loads nothing plotly-related from the network. (The template's
    own require.js and MathJax tags remain; figures do not need them: plotly.js sets window.Plotly itself.)"""
    html, _ = HTMLExporter().from_notebook_node(notebook)
    assert html.count(BUNDLE_MARKER) == 1
    assert len(re.findall(r"plotly\.js v\d", html)) == 1
    assert html.count("Plotly.newPlot(") >= minimum_figures
    external_scripts = re.findall(r"<script\b[^>]*\bsrc\s*=\s*[\"']([^\"']+)", html)
    assert not [source for source in external_scripts if "plot" in source.lower()]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_committed_notebook_has_no_outputs_and_a_parameters_cell(path):
    raw = json.loads(path.read_text())
    # nbformat >= 4.5 requires an id per cell (a missing one is a warning today, an error in later nbformat)
    missing = [index for index, cell in enumerate(raw["cells"]) if not cell.get("id")]
    assert not missing, f"cells without an id in {path.name}: {missing}"
    assert len({cell["id"] for cell in raw["cells"]}) == len(raw["cells"]), f"repeated cell ids in {path.name}"
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata.kernelspec.name == "python3"
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"outputs left in {path.name}"
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    tagged = [index for index, cell in enumerate(code_cells) if "parameters" in cell.metadata.get("tags", [])]
    assert len(tagged) == 1
    # The cell right after the parameters validates them before anything else runs.
    assert re.search(r"\bcheck_|\.from_parameters\(", code_cells[tagged[0] + 1].source)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_papermill_knows_every_parameter_of_the_parameters_cell(path):
    # papermill reads a parameter's line only with one "=" in it, comment included; a parameter it cannot read is
    # missing from `papermill --help-notebook`, and `-p` on it warns "Passed unknown parameter"
    notebook = nbformat.read(path, as_version=4)
    cell = next(cell for cell in notebook.cells if "parameters" in cell.metadata.get("tags", []))
    assigned = [target.id for node in ast.parse(cell.source).body
                for target in ([node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", []))]
    assert assigned and sorted(papermill.inspect_notebook(str(path))) == sorted(assigned)


def conforms(value: object, annotation: object) -> bool:
    """Whether ``value`` is of the type ``annotation`` (typing's Optional, Union and list[...] or a plain class)."""
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Union:
        return any(conforms(value, argument) for argument in arguments)
    if origin is list:
        return isinstance(value, list) and all(conforms(item, arguments[0]) for item in value)
    if annotation is type(None):
        return value is None
    if annotation in (int, float) and isinstance(value, bool):
        return False
    return isinstance(value, annotation) or (annotation is float and isinstance(value, int))


@pytest.mark.parametrize("value, annotation, expected", [
    (None, "Optional[list[str]]", True), (["a"], "Optional[list[str]]", True), ([1], "Optional[list[str]]", False),
    ("all", "Union[int, str, None]", True), (2.5, "Union[int, str, None]", False), (True, "int", False),
    (1, "float", True), ("x", "bool", False),
])
def test_conforms_tells_a_value_of_the_annotated_type_from_another(value, annotation, expected):
    assert conforms(value, eval(annotation, vars(typing))) is expected


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_papermill_shows_each_parameter_with_its_type_default_and_whole_help(path):
    # `papermill --help-notebook` prints "name: type (default value)  help"; without an annotation the type reads
    # "Unknown type", and a comment continued on the next line is left out of the help
    notebook = nbformat.read(path, as_version=4)
    cell = next(cell for cell in notebook.cells if "parameters" in cell.metadata.get("tags", []))
    assert not [line for line in cell.source.splitlines() if re.match(r"^\s+#", line)], "a help comment goes on"
    for name, parameter in papermill.inspect_notebook(str(path)).items():
        assert parameter["inferred_type_name"] != "None", f"{path.name}: {name} has no annotation papermill reads"
        annotation = eval(parameter["inferred_type_name"], vars(typing))
        default = ast.literal_eval(parameter["default"])
        assert conforms(default, annotation), f"{path.name}: {name} = {default!r} is no {annotation}"
        assert parameter["help"], f"{path.name}: {name} has no help"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_wrapped_bullets_do_not_start_a_line_with_a_list_number(path):
    # Markdown reads a bullet's continuation line that starts "500) ..." or "2. ..." as a new numbered list
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        if cell.cell_type != "markdown":
            continue
        in_bullet = False
        for line in cell.source.splitlines():
            if re.match(r"^\s*[*-] ", line):
                in_bullet = True
            elif not line.strip() or not line.startswith("  "):
                in_bullet = False
            elif in_bullet:
                assert not re.match(r"^\s+\d+[.)](\s|$)", line), f"{path.name} cell {index}: {line!r}"


def test_explorer_runs_headless_and_renders_offline_html(tmp_path):
    # The default interactive=True: the widget cell must not hang or fail without a frontend.
    notebook = execute(EXPLORER, tmp_path, **SMALL_EXPLORER)
    # 1 main figure + 1 preset overview + 1 per preset.
    check_figures_and_bundle(notebook, minimum_figures=9)
    check_offline_html(notebook, minimum_figures=9)
    text = printed_text(notebook)
    mean = float(re.search(r"truncated mean E\[x\] \(heuristic\)\s+(-?[\d.]+)", text).group(1))
    # the paper's Figure 1 case, N(0, 1) on [0.2, 1.7], printed to four decimals
    assert mean == pytest.approx(scipy.stats.truncnorm(0.2, 1.7).mean(), abs=5e-5)
    assert "paper Figure 1" in text
    widget_outputs = [o for o in outputs_of(notebook) if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(widget_outputs) == 1


def test_explorer_non_interactive_with_infinite_bounds(tmp_path):
    notebook = execute(EXPLORER, tmp_path, interactive=False, low="-inf", high="inf", observed=1.0, **SMALL_EXPLORER)
    check_figures_and_bundle(notebook, minimum_figures=9)
    text = printed_text(notebook)
    assert "interactive=False: widgets skipped" in text
    # No bounds: the truncated mean is mu and both NLLs agree.
    assert re.search(r"truncated mean E\[x\] \(heuristic\)\s+0$", text, re.M)
    normal = re.search(r"NLL of x under Normal\s+([\d.]+)", text).group(1)
    truncated = re.search(r"NLL of x under Truncated Normal\s+([\d.]+)", text).group(1)
    assert normal == truncated
    assert not [o for o in outputs_of(notebook) if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]


def test_classroom_runs_headless_with_small_parameters(tmp_path):
    notebook = execute(CLASSROOM, tmp_path, **SMALL_CLASSROOM)
    # NLL vs mu, NLL vs sigma, entropies, Figure 1, tail samples, bound NLL, descent, label gaps, loss curves,
    # estimates, scatter, Holm's step-down.
    check_figures_and_bundle(notebook, minimum_figures=12)
    check_offline_html(notebook, minimum_figures=12)
    text = printed_text(notebook)
    # Section 7 reads data/small's training labels: one row per domain.
    assert all(re.search(rf"^{domain}\s+\d+\s+\d+\.\d%", text, re.M) for domain in ("blocksworld", "visitall"))
    assert "between 0.572365 and 0.572365; log(sqrt(pi)) = 0.572365" in text
    table_row = re.search(r"Truncated Gaussian[^\n]*?\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\n", text)
    assert table_row, text
    assert all(0.0 < float(value) < 1e3 for value in table_row.groups())
    closed = re.search(r"closed bound[^\n]*mu after 12 steps =\s+(-?[\d.]+)", text)
    assert closed and float(closed.group(1)) < 5.0  # already moving down from h* = l = 5
    # section 5b's checks print, and section 8 compares over comparison_seeds seeds (here 3), at the last step
    assert "truncnorm(low, high, loc, scale), the pitfall: 6.0503" in text and "censored (Tobit) MLE" in text
    assert re.search(r"^\s+2\s+[\d.]+\s+[\d.]+", text, re.M) and "at step 5, TN mean minus" in text
    # section 8d reads the committed five-seed NLM report's ferry learn/ff cell: its table, 2 to 5 seeds
    assert re.search(r"^0,1,2,3,4 +1\.386 +1\.606 +within spread .*\[-0\.70, \+0\.26\] holds 0 +-0\.84$", text, re.M)
    # section 8e: families with no real difference, then which of that report's directions Holm keeps
    after_holm = re.search(r"^ +176 +([\d.]+) +1\.000 +1\.000 +([\d.]+)$", text, re.M)
    assert after_holm and abs(float(after_holm.group(1)) - 0.05) < 0.01 and float(after_holm.group(2)) < 0.06
    assert "converged/nlm5: 176 comparisons with an interval, 60 show a direction on their own" in text


@pytest.mark.parametrize(
    "path, parameters, message",
    [
        (EXPLORER, {"scale": 0.0}, "scale must be"),
        (EXPLORER, {"low": 2.0, "high": 1.0}, "low must be < high"),
        (EXPLORER, {"num_points": 10**8}, "num_points must be between 11 and 20001, got 100000000"),
        (CLASSROOM, {"steps": 0}, "steps must be >= 1"),
        (CLASSROOM, {"label_split": "training"}, "label_split must be one of train, val, test, plan"),
        (CLASSROOM, {"seed_cell": "ferry learn-ff"}, "seed_cell: converged/nlm5 has no cell 'ferry learn-ff'"),
        (EXPERIMENTS, {"run": "maybe"}, "run must be True or False, got 'maybe'"),
        (EXPERIMENTS, {"max_steps": 100}, "max_steps must be an integer >= steps (120), or none, got 100"),
    ],
    ids=["explorer-scale", "explorer-bounds", "explorer-num-points", "classroom-steps", "classroom-split",
         "classroom-seed-cell", "experiments-run", "experiments-max-steps"],
)
def test_bad_parameters_fail_in_the_first_cell_after_the_parameters(tmp_path, path, parameters, message):
    with pytest.raises(PapermillExecutionError) as failure:
        execute(path, tmp_path, **parameters)
    assert failure.value.ename == "ValueError" and message in failure.value.evalue
    executed = nbformat.read(tmp_path / path.name, as_version=4)
    injected = next(i for i, cell in enumerate(executed.cells) if "injected-parameters" in cell.metadata.get("tags", []))
    failed = [i for i, cell in enumerate(executed.cells)
              if cell.cell_type == "code" and any(o["output_type"] == "error" for o in cell.outputs)]
    # (papermill inserts a markdown cell flagging the failure, so count code cells only)
    first_code_after = next(i for i in range(injected + 1, len(executed.cells)) if executed.cells[i].cell_type == "code")
    assert failed == [first_code_after]


def test_experiments_notebook_runs_a_tiny_sweep_and_writes_reports(tmp_path, monkeypatch):
    monkeypatch.delenv("TNLIB_PROGRESS", raising=False)  # papermill's kernel alone must choose text progress
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    runs, reports = tmp_path / "runs", tmp_path / "reports"
    notebook = execute(EXPERIMENTS, tmp_path, results_dir=str(runs), domains=["gripper"], models=["linear"],
                       configs=["learn/ff"], seeds=[0], steps=6, eval_every=3, plan_instances=1, workers=1,
                       max_steps=12, extend_steps=3, reports_dir=str(reports))
    check_figures_and_bundle(notebook, minimum_figures=1)
    html = "".join(o.get("data", {}).get("text/markdown", "") for o in outputs_of(notebook))
    assert "| gripper | MSE |" in html and "| gripper |" in html.split("Ratio of solved")[1]
    assert {p.name for p in reports.iterdir()} == {"accuracy.md", "planning.md", "training_curves.html",
                                                   "accuracy-seeds.csv", "planning-seeds.csv"}
    assert (runs / "gripper-linear-TN-learn-ff-llmcut-s0" / "planning-default.jsonl").is_file()
    # the settings are printed before the sweep runs (the small preset with the overrides), the scope header after
    assert "tnlib sweep: custom settings" in printed_text(notebook) and "= 2 runs\n" in printed_text(notebook)
    assert "## What these results can and cannot show" in html and "| models | linear (missing: nlm, hgn) |" in html
    # the small preset's batch size, the notebook's steps, trained until flat (6 steps, then on up to 12)
    assert "until flat: a run still improving then trains on, 3 steps at a time, up to 12 steps" in printed_text(notebook)
    assert re.search(r"\| training per run \| (6|9|12) steps x batch 64 = .* trained until flat", html)
    # the sweep's progress is text the saved notebook keeps (a tqdm widget would say "0/2" forever)
    assert re.search(r"^sweep: 0/2 runs done, .*\n(.*\n)*sweep: 2/2 runs done, ", printed_text(notebook), re.M)
    assert not [o for o in outputs_of(notebook) if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert "## What these results can and cannot show" in (reports / "accuracy.md").read_text()
    # the banner names the data as a repository path, not the folder of this machine
    root = str(NOTEBOOK_DIR.parent)
    assert "  data      data/small (profile small)" in printed_text(notebook) and root not in printed_text(notebook)
    assert "Nothing is bold: some cell has fewer than" in html  # the rule under each table, and why
    assert "No cell has three seeds yet" in printed_text(notebook)  # one seed: no paired intervals to draw


def test_experiments_notebook_states_the_bold_rules_as_the_tables_apply_them():
    from tnlib.paper import TABLE1_BOLD_GAP

    notebook = nbformat.read(EXPERIMENTS, as_version=4)
    prose = {cell.source.splitlines()[0]: cell.source for cell in notebook.cells if cell.cell_type == "markdown"}
    table1, table2 = prose["## Test accuracy (Table 1 layout)"], prose["## Planning (Table 2 layout)"]
    # below three seeds both tables bold nothing; with three or more, the paired rule (table1_bold_rule /
    # table2_bold_rule)
    assert "with fewer than three seeds in a cell, nothing" in " ".join(table1.split())
    assert f"a gap of more than {TABLE1_BOLD_GAP:g}, would bold noise" in " ".join(table1.split())
    assert "with fewer than three seeds, nothing" in " ".join(table2.split())
    assert "with three or more in every cell" in " ".join(table1.split()) and "paired 95%" in table1
    assert "three or more, the paired rule above" in " ".join(table2.split())


def test_experiments_notebook_rejects_a_malformed_config(tmp_path):
    with pytest.raises(PapermillExecutionError, match="sigma/residual"):
        execute(EXPERIMENTS, tmp_path, results_dir=str(tmp_path / "runs"), configs=["learn-ff"], run=False)
