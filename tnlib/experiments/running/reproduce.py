"""The main job: `tnlib reproduce` regenerates the main job's reports (all of reports/ but those of LEFT_OUT).

It executes the notebooks headless with papermill (rendered to HTML in reports/notebooks/): the explorer, the
classroom notebook, and the experiments notebook, which runs the sweep's ``small`` preset (train NLM N and TN
models on data/small, evaluate them, plan with them; runs/small/) and writes reports/accuracy.md, planning.md and
training_curves.html, each opening with what the runs can and cannot show (tnlib.experiments.scope). Then it
measures the Truncated Normal's accuracy and speed against scipy and stable-trunc-gaussian
(reports/truncated_normal.md). Each step writes its outputs atomically, so an
interrupted run never leaves a half-written report behind. Every step runs each time (reports are rebuilt from
what is there); the expensive part, the sweep, resumes from runs/small/ and redoes nothing already finished.
``--keep-existing`` skips steps whose outputs exist. What each notebook prints is passed on to the terminal,
indented under its step, as it comes; the notebooks run with ``TNLIB_PROGRESS=text`` (tnlib.progress), so the
sweep's progress is a line per finished run there and in the rendered report.
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, TextIO

from tnlib.files import REPO_ROOT, atomic_write_text
from tnlib.progress import ENV_VAR as PROGRESS_ENV_VAR
from tnlib.experiments.reporting.report_files import ACCURACY_SEEDS, PLANNING_SEEDS

ROOT = REPO_ROOT  # the repository: notebooks/, reports/, benchmarks/
NOTEBOOKS = ROOT / "notebooks"
REPORTS = ROOT / "reports"

# Headless parameters of each notebook for the main job (small enough for 2 CPU cores), and what else each
# writes into reports/.
NOTEBOOK_PARAMETERS: dict[str, dict] = {
    "truncated_gaussian_explorer.ipynb": {"interactive": False},
    "statistics_of_heuristic_learning.ipynb": {},
    # the sweep's "small" preset (tnlib.experiments.presets.PRESETS, where its numbers live and what it leaves to
    # the converged presets): NLM, Table 2's two configurations, N vs TN, two seeds, on data/small (resumable);
    # sized for a 2-core CPU -- far from the paper's 4e4 steps, which the reports' header says
    "heuristic_learning_experiments.ipynb": {"preset": "small", "results_dir": "../runs/small",
                                             "reports_dir": "../reports"},
}
EXTRA_OUTPUTS = {
    "heuristic_learning_experiments.ipynb": ["accuracy.md", "planning.md", "training_curves.html",
                                             ACCURACY_SEEDS, PLANNING_SEEDS],
}
# the Truncated Normal's peer table, beside its report (measured by hand: the peers are not the project's dependencies)
PEERS_REPORT = "truncated_normal_peers.md"
# What the main job leaves in reports/ as it is, each measured or rendered by its own command (said in its README
# or section): the folders and files, and why. The Makefile's and README's words on `make reproduce` name the same.
LEFT_OUT = {
    "speed.md": "the speed measurements (benchmarks/)",
    PEERS_REPORT: "the Truncated Normal beside its peers (measured by hand: they are not dependencies)",
    "speed-cuda/": "the measurements on a lent GPU",
    "converged/": "the converged presets (hours of training each)",
    "plan-set/": "the symbolic baselines on the plan sets (tnlib baselines)",
    "paper-scale*/": "the paper-scale campaigns (days of training; make paper-scale)",
}


def sweep_scope_text() -> str:
    """What the experiments notebook's short sweep (the small preset) is and leaves to the converged presets: said
    by `tnlib reproduce --help` and by the main job as it starts (the reports' header says it from the runs)."""
    from tnlib.experiments.presets import PRESETS

    small = PRESETS["small"]
    return (f"Its sweep is the small preset, a first look at the whole pipeline in minutes, not the evidence: NLM, "
            f"Table 2's two configurations, N and TN, {len(small['seeds'])} seeds, {small['steps']} steps, the first "
            f"{small['plan_instances']} plan instances per domain at most {small['max_evaluations']} evaluations. "
            "Training until flat, the other two configurations and models, more seeds and the paper's 10,000 "
            "evaluations are the converged presets' (reports/converged/).")


def left_out_text() -> str:
    """:data:`LEFT_OUT` as a sentence (`tnlib reproduce --help`)."""
    return "Left as they are in reports/ -- " + "; ".join(f"{name}: {why}" for name, why in LEFT_OUT.items()) + "."


@dataclass
class Step:
    name: str
    outputs: list[Path]
    run: Callable[[], None]


def execute_notebook(name: str, parameters: dict, html_out: Path, timeout_s: int | None = None) -> None:
    """Run notebooks/NAME with papermill and render the executed copy to HTML (plots embedded, no CDN)."""
    import nbformat
    import papermill

    with tempfile.TemporaryDirectory() as tmp, _environment(**{PROGRESS_ENV_VAR: "text"}):
        executed = Path(tmp) / name
        # the kernel (which inherits this environment) prints its progress as text lines; they and everything
        # else the notebook prints are passed on to this terminal, indented, as they come
        papermill.execute_notebook(str(NOTEBOOKS / name), str(executed), parameters=parameters,
                                   kernel_name="python3", cwd=str(NOTEBOOKS), progress_bar=False,
                                   execution_timeout=timeout_s, stdout_file=_Indented(sys.stdout),
                                   stderr_file=_Indented(sys.stderr), config=kernel_transport_config())
        notebook = nbformat.read(executed, as_version=4)
    _name_injected_parameters(notebook)
    atomic_write_text(html_out, notebook_html(notebook, html_out.parent))


def _name_injected_parameters(notebook) -> None:
    """Give the cell papermill injects a fixed id (papermill draws a random one, which the HTML prints as the cell's
    anchor): the same notebook and parameters then render the same page, and a re-render changes no committed
    line it need not."""
    for cell in notebook.cells:
        if "injected-parameters" in cell.get("metadata", {}).get("tags", []):
            cell["id"] = "injected-parameters"


def kernel_transport_config():
    """The kernel manager's settings for the notebooks the main job runs: where the system has them, local
    sockets (IPC) instead of TCP on the loopback address, on which ipykernel warns at every start that its
    traffic is not encrypted -- a warning about nothing here, printed once per notebook into the job's output."""
    from traitlets.config import Config

    config = Config()
    if os.name == "posix":
        config.KernelManager.transport = "ipc"
    return config


def notebook_html(notebook, folder: Path) -> str:
    """An executed notebook as the HTML report in ``folder``: JupyterLab's look with :data:`REPORT_CSS` on top,
    formulas as MathML, plotly.js shared from ``folder``, and no path of this machine (:func:`_relative_paths`)."""
    from nbconvert import HTMLExporter

    from tnlib.experiments.reporting.reports import REPORT_CSS  # (here, not above: `tnlib reproduce --help` needs none of it)
    from tnlib.experiments.running.offline_math import offline_html

    # no require.js: nothing in the reports needs it, and with it plotly.js would register as an AMD module
    # instead of defining window.Plotly. Formulas become MathML (offline_html), so nothing loads MathJax.
    exporter = HTMLExporter(template_name="lab", require_js_url="")
    body, _ = exporter.from_notebook_node(notebook)
    # after JupyterLab's styles, so the report's rules win at equal specificity
    body = body.replace("</head>", f"<style>{REPORT_CSS}</style>\n</head>", 1)
    return _relative_paths(offline_html(_share_plotly_bundle(body, folder)))


def _relative_paths(html: str) -> str:
    """The repository's absolute path cut from anything a cell printed that names a file in it (``ROOT/data/small``
    becomes ``data/small``): committed reports must not show the folder of the machine they ran on. The notebook
    code prints relative paths already (tnlib.files.shown_path); this catches any other output."""
    return html.replace(f"{ROOT}/", "").replace(str(ROOT), ".")


@contextlib.contextmanager
def _environment(**values: str) -> Iterator[None]:
    """Environment variables set for the duration (a kernel started inside inherits them), then restored."""
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class _Indented:
    """A writable stream that passes text on to ``stream`` with each line indented (a notebook's output, under
    the main job's step line); papermill writes a kernel's output in chunks that need not end a line."""

    def __init__(self, stream: TextIO, indent: str = "    ") -> None:
        self.stream, self.indent, self.at_line_start = stream, indent, True

    def write(self, text: str) -> int:
        for piece in text.splitlines(keepends=True):
            if self.at_line_start:
                self.stream.write(self.indent)
            self.stream.write(piece)
            self.at_line_start = piece.endswith("\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def _share_plotly_bundle(body: str, folder: Path) -> str:
    """Move the embedded plotly.js bundle (4.8 MB) into one plotly.min.js beside the HTML files."""
    import plotly.offline

    bundle = plotly.offline.get_plotlyjs()
    if bundle not in body:
        return body
    shared = folder / "plotly.min.js"
    if not shared.exists() or shared.read_text() != bundle:
        atomic_write_text(shared, bundle)
    return body.replace(bundle, '</script><script src="plotly.min.js"></script><script type="text/javascript">', 1)


def _script(path: str, *args: str) -> str:
    """Run a benchmark script as ``python PATH ARGS`` would and return what it printed -- in this process, so the
    report's four scripts import torch, scipy and the compiled kernels once, not four times (seconds each). Each
    script sets the thread count it times with; the count is put back after it. What it writes to stderr (scipy's
    warnings on the cases it gets wrong) is shown only if it fails. The script's folder leads sys.path while it
    runs, as under ``python PATH``, so it imports its sibling scripts."""
    import runpy

    import torch

    threads, argv, printed, warned = torch.get_num_threads(), sys.argv, io.StringIO(), io.StringIO()
    search_path = list(sys.path)
    sys.argv = [str(ROOT / path), *args]
    sys.path.insert(0, str((ROOT / path).parent))
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(warned), contextlib.chdir(ROOT):
            runpy.run_path(str(ROOT / path), run_name="__main__")
    except BaseException:
        sys.stderr.write(warned.getvalue())
        raise
    finally:
        sys.argv, sys.path[:] = argv, search_path
        torch.set_num_threads(threads)
    return printed.getvalue()


# Elements per call in the methods table, and for scipy's mean, var and entropy over arrays of bounds (they loop in
# Python, about 8,000 elements a second). tnlib's and scipy's rates read the same at these sizes as at 100,000 and
# 2,000 (CPU time, best of 7, within the machine's noise), in a third of the time; Normal's fastest rows (its mean
# and variance are its parameters) measure a call's fixed cost at any size.
METHOD_POINTS = 30_000
METHOD_SCIPY_POINTS = 500


def truncated_normal_report(out: Path) -> None:
    load = os.getloadavg()[0]  # the timings below are wall time: other processes on the cores stretch them
    accuracy = _script("benchmarks/accuracy_truncated_normal.py")
    speed = _script("benchmarks/bench_truncated_normal.py")
    mixed = _script("benchmarks/bench_truncated_normal.py", "--inputs", "mixed")
    methods = _script("benchmarks/bench_truncated_normal_methods.py", "--points", str(METHOD_POINTS),
                      "--scipy-points", str(METHOD_SCIPY_POINTS))
    text = f"""# Truncated Normal: accuracy and speed

Regenerated by `make reproduce` (`python -m tnlib reproduce`). Machine: {os.cpu_count()} CPU cores, torch
{_torch_version()}, one thread (as tnlib's processes run), load average {load:.1f} as the render began.

## Accuracy against mpmath (80 digits at the exact floating inputs)

Worst error per regime over a few parameter sets and observation points
(`python benchmarks/accuracy_truncated_normal.py`). stable-trunc-gaussian replaces infinite bounds by 1e5,
as its authors do; scipy is `scipy.stats.truncnorm`.

{accuracy}
## Speed: the training loss forward + backward, float32, one thread

Medians of the training loss, the NLL `-log_prob(x)` (as the models' heads compute it), and of `-log_prob(x) + mean`
(the truncated mean's gradients too), forward + backward, with torch's `Normal` NLL (`-log_prob(x)`, forward +
backward) timed in the same run (`python benchmarks/bench_truncated_normal.py`).

```
{speed.rstrip()}
```

The same on every regime training meets (`--inputs mixed`: sigma 0.1, 1 or 10; mu 20 sigma below the bound, within
a sigma of it, or 20 sigma above it):

```
{mixed.rstrip()}
```

## Speed of every public method, one thread, beside scipy and torch's Normal

Millions of values per second (`python benchmarks/bench_truncated_normal_methods.py --points {METHOD_POINTS}
--scipy-points {METHOD_SCIPY_POINTS}`): per regime
a batch of standard normals truncated to the interval, each element its own distribution. `log_prob`, `cdf`,
`icdf`, `rsample` and `sample` reuse one distribution object (its per-element state is built once); `mean`,
`variance` and `entropy` build it each call, as that state is what they cost. `rsample` inverts the cdf at
uniforms (its gradients are those of x(u)) and `sample` draws by exact rejection; both stand beside scipy's `rvs`.
`sample-one` draws one distribution (scalar parameters) {METHOD_POINTS:,} times, `sample((n,))`, beside scipy's
`rvs` and a scalar Normal's `sample((n,))`. scipy's are `truncnorm`'s (float64 only; its `mean`, `var` and
`entropy` over arrays of bounds on {METHOD_SCIPY_POINTS:,} elements, as they loop in Python); Normal is torch's,
without truncation.
The last two columns are tnlib / scipy and tnlib / Normal.

```
{methods.rstrip()}
```

## Beside the other truncated Gaussians

Measured by hand, not by this render: the peers (numpyro and TensorFlow Probability on JAX, torchrl,
stable-trunc-gaussian) are not the project's dependencies, so the main job cannot run them on a fresh machine. Their
table -- accuracy against mpmath and speed, per method and regime, with the versions, the commands that installed
and ran them, the date and the machine's load -- is in [{PEERS_REPORT}]({PEERS_REPORT})
(`python benchmarks/bench_truncated_normal_peers.py --markdown`).
"""
    atomic_write_text(out, text)


def _torch_version() -> str:
    import torch

    return torch.__version__


def steps() -> list[Step]:
    result = []
    for name, params in NOTEBOOK_PARAMETERS.items():
        html = REPORTS / "notebooks" / name.replace(".ipynb", ".html")
        outputs = [html] + [REPORTS / extra for extra in EXTRA_OUTPUTS.get(name, [])]
        result.append(Step(f"notebook {name}", outputs,
                           lambda name=name, params=params, html=html: execute_notebook(name, params, html)))
    report = REPORTS / "truncated_normal.md"
    result.append(Step("truncated normal accuracy and speed", [report], lambda: truncated_normal_report(report)))
    return result


def reproduce(keep_existing: bool = False, only: str | None = None) -> int:
    """Run every step (or those whose name contains ``only``: a ValueError listing the names when none does)."""
    todo = [s for s in steps() if only is None or only in s.name]
    if not todo:
        names = "; ".join(s.name for s in steps())
        raise ValueError(f"no step's name contains {only!r} (the steps: {names})")
    if any("heuristic_learning_experiments" in step.name for step in todo):
        print(sweep_scope_text(), flush=True)
    for i, step in enumerate(todo, 1):
        if keep_existing and all(p.exists() for p in step.outputs):
            print(f"[{i}/{len(todo)}] {step.name}: kept (its outputs exist)", flush=True)
            continue
        start = time.perf_counter()
        print(f"[{i}/{len(todo)}] {step.name} ...", flush=True)
        step.run()
        print(f"[{i}/{len(todo)}] {step.name}: done in {time.perf_counter() - start:.0f} s "
              f"-> {', '.join(str(p.relative_to(ROOT)) for p in step.outputs)}", flush=True)
    return 0
