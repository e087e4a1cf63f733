"""The explorer's and the classroom notebook's parameter checks: bad parameters (from papermill, a widget or a
hand edit) become one ``ValueError`` naming the first bad one."""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from tnlib.data.manifest import dataset_root
from tnlib.data.schema import SPLITS
from tnlib.errors import DatasetError
from tnlib.experiments.running.reproduce import NOTEBOOKS
from tnlib.experiments.presets import PRESETS
from tnlib.notebook.seed_comparison import SEED_REPORTS, committed_seed_values, seeds_as_they_arrive
from tnlib.notebook.trained_distributions import trained_seeds
from tnlib.paper import DOMAINS, OPEN_BOUND_EPSILON

#: The configurations of the committed paper-scale runs (the classroom's section 8c reads them).
TRAINED_CONFIGURATIONS = tuple(f"{sigma}/{residual}" for sigma, residual in PRESETS["paper-scale"]["configs"])


def checked_float(name: str, value: object) -> float:
    """``float(value)``, accepting the strings "inf"/"-inf" that papermill can pass for infinite bounds."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got the boolean {value!r}")
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number (or 'inf'/'-inf' for a bound), got {value!r}") from None
    if math.isnan(number):
        raise ValueError(f"{name} must not be NaN")
    return number


def checked_int(name: str, value: object, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if maximum is not None and not minimum <= value <= maximum:
        raise ValueError(f"{name} must be between {minimum} and {maximum}, got {value}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


#: Allowed range of the explorer's ``num_points`` (grid points per density curve). The dense grid over the
#: truncated bulk already resolves every density at the default 801; above the maximum the nine figures of
#: the notebook would hold millions of points (1e8 exhausts the kernel's memory).
MIN_NUM_POINTS, MAX_NUM_POINTS = 11, 20_001
DEFAULT_NUM_POINTS = 801


@dataclass(frozen=True)
class ExplorerParameters:
    """Validated parameters of ``truncated_gaussian_explorer.ipynb``."""

    loc: float
    scale: float
    low: float
    high: float
    observed: float
    num_points: int
    interactive: bool


def check_explorer_parameters(
    loc: object,
    scale: object,
    low: object,
    high: object,
    observed: object,
    num_points: object = DEFAULT_NUM_POINTS,
    interactive: object = True,
) -> ExplorerParameters:
    """Validate the explorer's parameters; raise ``ValueError`` naming the first bad one.

    ``low``/``high`` may be ``-inf``/``inf`` (or those strings); ``observed`` may lie outside the bounds
    (its truncated NLL is then infinite, which the explorer shows).
    """
    loc_value = checked_float("loc", loc)
    scale_value = checked_float("scale", scale)
    low_value = checked_float("low", low)
    high_value = checked_float("high", high)
    observed_value = checked_float("observed", observed)
    if not math.isfinite(loc_value):
        raise ValueError(f"loc must be finite, got {loc_value}")
    if not (scale_value > 0 and math.isfinite(scale_value)):
        raise ValueError(f"scale must be a finite number > 0, got {scale_value}")
    if low_value == math.inf:
        raise ValueError("low must be < inf")
    if high_value == -math.inf:
        raise ValueError("high must be > -inf")
    if not low_value < high_value:
        raise ValueError(f"low must be < high, got low={low_value} and high={high_value}")
    if not math.isfinite(observed_value):
        raise ValueError(f"observed must be finite, got {observed_value}")
    points = checked_int("num_points", num_points, minimum=MIN_NUM_POINTS, maximum=MAX_NUM_POINTS)
    if not isinstance(interactive, bool):
        # papermill's -p makes booleans of True and False only; "true" or "no" arrive as text
        raise ValueError(f"interactive must be True or False, got {interactive!r} "
                         "(papermill: -p interactive False, capitalised)")
    return ExplorerParameters(loc_value, scale_value, low_value, high_value, observed_value, points, interactive)


@dataclass(frozen=True)
class ClassroomParameters:
    """Validated parameters of ``statistics_of_heuristic_learning.ipynb``; the defaults are the checks' and the
    synthetic regression's."""

    seed: int = 0
    num_train: int = 500
    num_test: int = 2000
    steps: int = 400
    learning_rate: float = 0.03
    hidden_units: int = 16
    open_bound_margin: float = OPEN_BOUND_EPSILON
    demo_steps: int = 300
    data_root: str | None = None  # section 7's dataset (None: the default data root)
    label_split: str = "train"
    comparison_seeds: int = 8  # section 8's comparison over seeds: seeds seed, seed + 1, ...
    trained_domain: str = "ferry"  # section 8c's committed paper-scale NLM runs: domain, configuration, seed
    trained_configuration: str = "fixed/none"
    trained_seed: int = 0
    trained_states: int = 6
    seed_report: str = SEED_REPORTS[0]  # section 8d's committed five-seed report and cell
    seed_cell: str = "ferry learn/ff"


# The synthetic regression's own parameters, the first of ClassroomParameters' fields.
REGRESSION_PARAMETERS = ("seed", "num_train", "num_test", "steps", "learning_rate", "hidden_units", "open_bound_margin")


def check_regression_parameters(seed: object, num_train: object, num_test: object, steps: object,
                                learning_rate: object, hidden_units: object, open_bound_margin: object) -> dict:
    """The synthetic regression's parameters checked (``{name: value}``), a ``ValueError`` naming the first bad one:
    what the regression needs alone, without the committed reports and dataset the notebook's other sections read."""
    checked = {
        "seed": checked_int("seed", seed, minimum=0),
        "num_train": checked_int("num_train", num_train, minimum=2),
        "num_test": checked_int("num_test", num_test, minimum=2),
        "steps": checked_int("steps", steps, minimum=1),
        "learning_rate": checked_float("learning_rate", learning_rate),
    }
    if not (checked["learning_rate"] > 0 and math.isfinite(checked["learning_rate"])):
        raise ValueError(f"learning_rate must be a finite number > 0, got {checked['learning_rate']}")
    checked["hidden_units"] = checked_int("hidden_units", hidden_units, minimum=1)
    checked["open_bound_margin"] = margin = checked_float("open_bound_margin", open_bound_margin)
    if not (margin > 0 and math.isfinite(margin)):
        raise ValueError(f"open_bound_margin must be a finite number > 0 (the paper uses 0.1), got {margin}")
    return checked


def check_classroom_parameters(*values: object, **named: object) -> ClassroomParameters:
    """Validate the classroom notebook's parameters; raise ``ValueError`` naming the first bad one.

    The parameters are :class:`ClassroomParameters`' fields, in its order (``values``) or by name (``named``); a
    field not given takes the dataclass's default, and ``data_root`` "" is the default data root, as None."""
    names = [field.name for field in fields(ClassroomParameters)]
    if len(values) > len(names):
        raise TypeError(f"check_classroom_parameters takes at most {len(names)} parameters, got {len(values)}")
    given = dict(zip(names, values))
    unknown, twice = sorted(set(named) - set(names)), sorted(set(named) & set(given))
    if unknown or twice:
        raise TypeError(f"check_classroom_parameters: unknown parameters {unknown}" if unknown else
                        f"check_classroom_parameters: {twice} given by position and by name")
    given.update(named)
    raw = {field.name: given.get(field.name, field.default) for field in fields(ClassroomParameters)}
    checked = check_regression_parameters(*(raw[name] for name in REGRESSION_PARAMETERS))
    checked["demo_steps"] = checked_int("demo_steps", raw["demo_steps"], minimum=1)
    data_root = raw["data_root"]
    if data_root is not None and not isinstance(data_root, str):
        raise ValueError(f"data_root must be a folder name (\"\" for the default), got {data_root!r}")
    if data_root:  # relative to the notebooks folder, as the experiments notebook's, whatever the working folder
        data_root = str((NOTEBOOKS / data_root).resolve())
    if data_root and not Path(data_root).is_dir():
        raise ValueError(f"data_root: no such folder {data_root!r} (\"\" for the default data root)")
    if data_root:
        try:
            dataset_root(data_root)
        except DatasetError as error:
            raise ValueError(f"data_root: {error}") from None
    checked["data_root"] = data_root or None
    if raw["label_split"] not in SPLITS:
        raise ValueError(f"label_split must be one of {', '.join(SPLITS)}, got {raw['label_split']!r}")
    checked["comparison_seeds"] = checked_int("comparison_seeds", raw["comparison_seeds"], minimum=3, maximum=50)
    if raw["trained_domain"] not in DOMAINS:
        raise ValueError(f"trained_domain must be one of {', '.join(DOMAINS)}, got {raw['trained_domain']!r}")
    if raw["trained_configuration"] not in TRAINED_CONFIGURATIONS:
        raise ValueError(f"trained_configuration must be one of {', '.join(TRAINED_CONFIGURATIONS)} (the paper-scale "
                         f"runs' configurations), got {raw['trained_configuration']!r}")
    checked["trained_seed"] = checked_int("trained_seed", raw["trained_seed"], minimum=0)
    seeds = trained_seeds(raw["trained_domain"], raw["trained_configuration"])
    if checked["trained_seed"] not in seeds:
        raise ValueError(f"trained_seed must be a seed of the committed paper-scale runs of {raw['trained_domain']} "
                         f"{raw['trained_configuration']} ({', '.join(map(str, seeds)) or 'none'}), got "
                         f"{checked['trained_seed']}")
    checked["trained_states"] = checked_int("trained_states", raw["trained_states"], minimum=1, maximum=12)
    if raw["seed_report"] not in SEED_REPORTS:
        raise ValueError(f"seed_report must be one of {', '.join(SEED_REPORTS)} (the committed five-seed reports), "
                         f"got {raw['seed_report']!r}")
    if not isinstance(raw["seed_cell"], str):
        raise ValueError(f"seed_cell must be 'DOMAIN SIGMA/RESIDUAL', e.g. 'ferry learn/ff', got {raw['seed_cell']!r}")
    try:
        seeds_as_they_arrive(committed_seed_values(raw["seed_report"], raw["seed_cell"]))
    except ValueError as error:
        raise ValueError(f"seed_cell: {error}") from None
    return ClassroomParameters(**{**raw, **checked})
