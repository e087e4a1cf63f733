"""Test accuracy of trained models and the paper's Table 1.

``evaluate(checkpoint, split) -> metrics`` computes, on a split (default ``test``):

* ``mse`` — the MSE of the point estimate (N: mu; TN: its truncated mean) against h*;
* ``mse_clip`` — N only: the MSE of max(mu, l) (``None`` for TN);
* ``nll`` — the mean negative log-likelihood of h* (the training loss);
* ``mse_ff`` / ``mse_lmcut`` — the MSE of the h_FF and LM-cut heuristics on the same states (the table's
  baseline columns);

with the run's configuration (domain, model, distribution, sigma, residual, bounds, seed). ``evaluate_run`` also
writes them to ``<run>/metrics-<split>.json``; :func:`collect_results` reads every such file under a results
folder and :func:`render_table` lays them out as the paper's Table 1: per domain an ``MSE`` row and a ``+clip``
row, the h_FF and LM-cut columns, then N and TN for each (sigma, residual) configuration, each cell the mean +- std
over seeds, the best of N, N+clip and TN of a configuration in bold when its gap to the next value exceeds 0.1.
"""
from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from pathlib import Path
from typing import Sequence

import numpy as np

from tnlib.encodings import make_encoder
from tnlib.errors import DatasetError
from tnlib.paper import DOMAINS, TABLE1_BOLD_GAP, TABLE1_CONFIGS
from tnlib.training import encode_all, load_checkpoint, load_items, predict

DOMAIN_LABELS = {"blocksworld": "blocks", "ferry": "ferry", "gripper": "gripper", "visitall": "visitall"}


def _mse(a, b) -> float:
    return float(((a - b) ** 2).mean())


def evaluate(checkpoint: str | os.PathLike, split: str = "test", items: Sequence[dict] | None = None,
             data_root: str | None = None, batch_size: int = 1024, device: str | None = None) -> dict:
    """Test metrics of a checkpoint (a ``.pt`` file, or a run folder: its ``best.pt``) on a split.

    ``items`` overrides loading the split from the dataset (``data_root``, default: the run's).
    """
    model, head, config, saved = load_checkpoint(checkpoint, device)
    if items is None:
        if data_root is not None:
            config.data_root = data_root
        items = load_items(config, split)
    encoder = make_encoder(config.model, config.domain)
    p = predict(model, head, encoder, encode_all(encoder, items), next(model.parameters()).device, batch_size)
    h_star = p["h_star"]
    lmcut_known = not bool(p["lmcut"].isnan().any())
    return {
        "domain": config.domain, "model": config.model, "distribution": config.distribution, "sigma": config.sigma,
        "residual": config.residual, "lower_bound": config.lower_bound, "upper_bound": config.upper_bound,
        "seed": config.seed, "split": split, "states": len(items), "checkpoint_step": saved["step"],
        "mse": _mse(p["estimate"], h_star),
        "mse_clip": _mse(p["clipped"], h_star) if "clipped" in p else None,
        "nll": float(p["nll"].mean()),
        "mse_ff": _mse(p["ff"], h_star),
        "mse_lmcut": _mse(p["lmcut"], h_star) if lmcut_known else None,
    }


def evaluate_run(run_dir: str | os.PathLike, split: str = "test", checkpoint: str = "best.pt", **kwargs) -> dict:
    """:func:`evaluate` a run folder's checkpoint and write the metrics into the folder: ``metrics-<split>.json``
    for ``best.pt`` (what :func:`collect_results` reads), ``metrics-<split>-<stem>.json`` for another one
    (e.g. ``best-nll.pt``, the paper's choice for NLL)."""
    metrics = evaluate(Path(run_dir) / checkpoint, split, **kwargs)
    stem = Path(checkpoint).stem
    name = f"metrics-{split}.json" if stem == "best" else f"metrics-{split}-{stem}.json"
    Path(run_dir, name).write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics


def collect_results(results_dir: str | os.PathLike, split: str = "test", checkpoint: str = "best.pt") -> list[dict]:
    """Every metrics file of ``split`` and ``checkpoint`` (see :func:`evaluate_run`) under ``results_dir``,
    recursively, sorted by path."""
    stem = Path(checkpoint).stem
    name = f"metrics-{split}.json" if stem == "best" else f"metrics-{split}-{stem}.json"
    return [json.loads(p.read_text()) for p in sorted(Path(results_dir).rglob(name))]


# ---------------------------------------------------------------------------------------------------------------
# Table 1


def _stats(values: list[float]) -> tuple[float, float] | None:
    """Mean and sample std (ddof=1; 0 for one seed) of the finite values, or None."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    array = np.asarray(values, dtype=np.float64)
    return float(array.mean()), float(array.std(ddof=1)) if len(array) > 1 else 0.0


def _number(x: float) -> str:
    """Like the paper: two decimals under 100, fewer above, no leading zero (.76)."""
    if not math.isfinite(x):
        return str(x)
    text = f"{x:.2f}" if abs(x) < 100 else f"{x:.1f}" if abs(x) < 1e4 else f"{x:.3g}"
    return text.replace("0.", ".", 1) if text.startswith(("0.", "-0.")) and "e" not in text else text


def _cell(stats: tuple[float, float] | None) -> str:
    if stats is None:
        return ""
    mean, std = stats
    std_text = f"{std:.1f}" if abs(std) < 1e4 else f"{std:.2g}"
    if std_text.startswith("0."):
        std_text = std_text[1:]
    return f"{_number(mean)}±{std_text}"


def table1_cells(results: Sequence[dict], model: str = "nlm", lower_bound: str = "lmcut",
                 configs: Sequence[tuple[str, str]] = TABLE1_CONFIGS, metric: str = "mse") -> dict:
    """The table's numbers: ``{domain: {"ff": x, "lmcut": x, (sigma, residual, column): (mean, std)}}``.

    ``column`` is ``N``, ``N+clip`` or ``TN``. ``metric`` is ``mse`` (with ``mse_clip`` for N+clip) or ``nll``.
    """
    groups: dict = defaultdict(lambda: defaultdict(list))
    for r in results:
        if r["model"] != model or r["lower_bound"] != lower_bound:
            continue
        cell = groups[r["domain"]]
        cell["ff"].append(r.get("mse_ff"))
        cell["lmcut"].append(r.get("mse_lmcut"))
        key = (r["sigma"], r["residual"], r["distribution"])
        cell[key].append(r[metric])
        if r["distribution"] == "N" and metric == "mse":
            cell[(r["sigma"], r["residual"], "N+clip")].append(r["mse_clip"])
    table = {}
    for domain in sorted(groups, key=lambda d: DOMAINS.index(d) if d in DOMAINS else 99):
        cells = groups[domain]
        row = {"ff": _stats(cells["ff"]), "lmcut": _stats(cells["lmcut"])}
        for sigma, residual in configs:
            for column in ("N", "N+clip", "TN"):
                row[(sigma, residual, column)] = _stats(cells.get((sigma, residual, column), []))
        table[domain] = row
    return table


def _bold_keys(row: dict, configs) -> set:
    """Per configuration, the best (smallest mean) of N, N+clip and TN when the next distinct value is more than
    TABLE1_BOLD_GAP worse. Values tied with the best are all bold, as the paper does for N and N+clip (ferry, fixed/h_FF:
    both 2.98 in bold); comparisons use the displayed precision (two decimals) so a gap shown as .10 is not bold."""
    bold = set()
    for sigma, residual in configs:
        means = {(sigma, residual, c): round(row[(sigma, residual, c)][0], 2)
                 for c in ("N", "N+clip", "TN") if row[(sigma, residual, c)] is not None}
        if not means:
            continue
        best = min(means.values())
        others = [v for v in means.values() if v > best]
        if others and min(others) - best > TABLE1_BOLD_GAP + 1e-9:
            bold |= {k for k, v in means.items() if v == best}
    return bold


def render_table(results: str | os.PathLike | Sequence[dict], model: str = "nlm", lower_bound: str = "lmcut",
                 configs: Sequence[tuple[str, str]] = TABLE1_CONFIGS, fmt: str = "markdown",
                 metric: str = "mse", split: str = "test", checkpoint: str = "best.pt") -> str:
    """The paper's Table 1 layout from a results folder (or a list of metrics dicts), as Markdown or LaTeX.

    Rows: per domain ``MSE`` (h_FF, LM-cut, then N and TN per configuration) and ``+clip`` (N+clip under N).
    With ``metric="nll"`` the rows are the NLL (no +clip row, no baseline columns), as in the appendix's linear
    table (which evaluates the best-NLL checkpoints: ``checkpoint="best-nll.pt"``). Cells are mean±std over seeds; bold marks the best of N, N+clip and TN of a configuration when the gap
    to the second best exceeds 0.1.
    """
    if fmt not in ("markdown", "latex"):
        raise ValueError(f"unknown format {fmt!r} (markdown or latex)")
    if metric not in ("mse", "nll"):
        raise ValueError(f"unknown metric {metric!r} (mse or nll)")
    if isinstance(results, (str, os.PathLike)):
        results = collect_results(results, split, checkpoint)
    cells = table1_cells(results, model, lower_bound, configs, metric)
    latex = fmt == "latex"

    def show(stats, bold=False) -> str:
        text = _cell(stats)
        if latex:
            text = text.replace("±", r"$\pm$")
        if bold and text:
            return rf"\textbf{{{text}}}" if latex else f"**{text}**"
        return text

    def baseline(stats) -> str:
        return "" if stats is None else _number(stats[0])

    header = ["domain", "metric", "h_FF", "LM-cut"] + [f"{s}/{r} {d}" for s, r in configs for d in ("N", "TN")]
    lines = []
    for domain, row in cells.items():
        bold = _bold_keys(row, configs) if metric == "mse" else set()
        label = DOMAIN_LABELS.get(domain, domain)
        first = [label, metric.upper(), baseline(row["ff"]) if metric == "mse" else "",
                 baseline(row["lmcut"]) if metric == "mse" else ""]
        for sigma, residual in configs:
            for d in ("N", "TN"):
                key = (sigma, residual, d)
                first.append(show(row[key], key in bold))
        lines.append(first)
        if metric == "mse":
            clip = ["", "+clip", "", ""]
            for sigma, residual in configs:
                key = (sigma, residual, "N+clip")
                clip += [show(row[key], key in bold), ""]
            lines.append(clip)
    if latex:
        out = [r"\begin{tabular}{ll" + "l" * 2 + "c" * (2 * len(configs)) + "}", r"\toprule",
               " & ".join(["", "", "", ""] + [rf"\multicolumn{{2}}{{c}}{{{s}/{r}}}" for s, r in configs]) + r" \\",
               " & ".join(["domain", "metric", r"$h^{FF}$", r"$h^{LM-cut}$"]
                          + [r"$\mathcal{N}$", r"$\mathcal{TN}$"] * len(configs)) + r" \\", r"\midrule"]
        out += [" & ".join(line) + r" \\" for line in lines]
        out += [r"\bottomrule", r"\end{tabular}"]
        return "\n".join(out) + "\n"
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------------------------
# `tnlib evaluate`


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "evaluate", help="test metrics of trained runs, or the paper's Table 1 from a results folder",
        description="Evaluate run folders (their best.pt) on a split and write metrics-<split>.json into each; "
                    "with --table, render Table 1 from every metrics file under a folder.")
    p.add_argument("runs", nargs="+", help="run folders or .pt checkpoints (with --table: a results folder)")
    p.add_argument("--split", default="test")
    p.add_argument("--data", default=None, help="dataset root (default: the run's)")
    p.add_argument("--device", default=None)
    p.add_argument("--checkpoint", default="best.pt",
                   help="which checkpoint of each run folder: best.pt (best validation MSE) or best-nll.pt")
    p.add_argument("--table", action="store_true", help="render Table 1 from the metrics under RUNS[0]")
    p.add_argument("--model", default="nlm", help="with --table: which model's results (default: nlm)")
    p.add_argument("--lower-bound", default="lmcut", help="with --table: which lower bound's results")
    p.add_argument("--metric", default="mse", help="with --table: mse (Table 1) or nll")
    p.add_argument("--latex", action="store_true", help="with --table: LaTeX instead of Markdown")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON lines")
    p.set_defaults(func=_run_evaluate)


def _run_evaluate(args) -> int:
    from tnlib.cli import CommandError

    try:
        if args.table:
            print(render_table(args.runs[0], args.model, args.lower_bound, fmt="latex" if args.latex else "markdown",
                               metric=args.metric, split=args.split, checkpoint=args.checkpoint), end="")
            return 0
        for run in args.runs:
            path = Path(run)
            metrics = (evaluate_run(path, args.split, args.checkpoint, data_root=args.data, device=args.device)
                       if path.is_dir()
                       else evaluate(path, args.split, data_root=args.data, device=args.device))
            if args.json:
                print(json.dumps(metrics))
            else:
                clip = "" if metrics["mse_clip"] is None else f"  MSE+clip {metrics['mse_clip']:.4g}"
                print(f"{run}: {args.split} MSE {metrics['mse']:.4g}{clip}  NLL {metrics['nll']:.4g}  "
                      f"(h_FF {metrics['mse_ff']:.4g}, {metrics['states']} states)")
    except (ValueError, FileNotFoundError, DatasetError) as err:
        raise CommandError(str(err)) from None
    return 0
