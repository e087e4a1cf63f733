"""tnlib.notebook.notebook_parameters: the classroom notebook's and the explorer's parameter checks name the bad
parameter and accept the notebooks' defaults."""
from __future__ import annotations

import math

import pytest

from tnlib.notebook import notebook_parameters
from tnlib.paper import OPEN_BOUND_EPSILON


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"steps": 0}, "steps"),
        ({"steps": 2.5}, "steps"),
        ({"learning_rate": 0.0}, "learning_rate"),
        ({"learning_rate": float("nan")}, "learning_rate"),
        ({"num_train": 1}, "num_train"),
        ({"num_test": True}, "num_test"),
        ({"hidden_units": 0}, "hidden_units"),
        ({"open_bound_margin": 0.0}, "open_bound_margin"),
        ({"seed": -1}, "seed"),
        ({"demo_steps": 0}, "demo_steps"),
        ({"trained_domain": "logistics"}, "trained_domain"),
        ({"trained_configuration": "learn/none"}, "trained_configuration.*learn/ff, fixed/none"),
        ({"trained_seed": -1}, "trained_seed"),
        ({"trained_seed": 7}, r"trained_seed must be a seed of the committed paper-scale runs of ferry fixed/none "
                              r"\(0, 1\), got 7"),
        ({"trained_states": 13}, "trained_states"),
    ],
)
def test_check_parameters_names_the_bad_parameter(overrides, message):
    with pytest.raises(ValueError, match=message):
        notebook_parameters.check_classroom_parameters(**overrides)


def test_a_relative_data_root_is_the_notebooks_folders_from_any_working_folder(tmp_path, monkeypatch):
    from pathlib import Path

    monkeypatch.chdir(tmp_path)  # papermill started from elsewhere than notebooks/
    params = notebook_parameters.check_classroom_parameters(data_root="../data/small")
    assert Path(params.data_root) == Path(__file__).resolve().parents[2] / "data" / "small"


def test_a_data_root_without_a_dataset_fails_in_the_check_not_in_section_7(tmp_path):
    with pytest.raises(ValueError, match=f"data_root: no dataset at {tmp_path}.*this checkout ships the small dataset"):
        notebook_parameters.check_classroom_parameters(data_root=str(tmp_path))


def test_check_parameters_accepts_the_notebook_defaults():
    params = notebook_parameters.check_classroom_parameters()
    assert params.steps == 400 and params.open_bound_margin == OPEN_BOUND_EPSILON


def test_the_classroom_check_takes_the_dataclass_fields_in_order_or_by_name():
    from dataclasses import astuple

    defaults = notebook_parameters.ClassroomParameters()
    assert notebook_parameters.check_classroom_parameters(*astuple(defaults)) == defaults
    assert notebook_parameters.check_classroom_parameters(1, steps=7) == notebook_parameters.ClassroomParameters(
        seed=1, steps=7)
    with pytest.raises(TypeError, match="unknown parameters.*'step'"):
        notebook_parameters.check_classroom_parameters(step=7)
    with pytest.raises(TypeError, match="by position and by name"):
        notebook_parameters.check_classroom_parameters(1, seed=2)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"scale": 0.0}, "scale"),
        ({"scale": -1.0}, "scale"),
        ({"low": 2.0, "high": 1.0}, "low must be < high"),
        ({"low": 1.0, "high": 1.0}, "low must be < high"),
        ({"low": "inf"}, "low"),
        ({"high": float("-inf")}, "high"),
        ({"loc": float("nan")}, "loc"),
        ({"observed": float("inf")}, "observed"),
        ({"high": "ten"}, "high"),
        ({"num_points": 3}, "num_points"),
        ({"num_points": 10**8}, r"num_points must be between 11 and 20001, got 100000000"),
        ({"num_points": 20_002}, r"num_points must be between 11 and 20001"),
        ({"interactive": "yes"}, "interactive"),
        ({"interactive": "false"}, r"got 'false' \(papermill: -p interactive False, capitalised\)"),
    ],
)
def test_check_explorer_parameters_names_the_bad_parameter(overrides, message):
    arguments = dict(loc=0.0, scale=1.0, low=0.2, high=1.7, observed=0.5, num_points=101, interactive=False)
    arguments.update(overrides)
    with pytest.raises(ValueError, match=message):
        notebook_parameters.check_explorer_parameters(**arguments)


def test_check_explorer_parameters_accepts_infinite_bounds_as_strings():
    params = notebook_parameters.check_explorer_parameters(0, 1, "-inf", "inf", 0.5)
    assert params.low == -math.inf and params.high == math.inf and isinstance(params.loc, float)


def test_the_regression_checks_its_own_parameters_without_the_committed_reports(monkeypatch):
    """The synthetic regression's parameters are the dataclass's first fields, and checking them reads nothing the
    notebook's later sections read (the committed runs and reports)."""
    from dataclasses import fields

    from tnlib.notebook import synthetic_regression

    names = [field.name for field in fields(notebook_parameters.ClassroomParameters)]
    assert names[:len(notebook_parameters.REGRESSION_PARAMETERS)] == list(notebook_parameters.REGRESSION_PARAMETERS)

    def unread(*args, **kwargs):
        raise AssertionError("the regression's check read a committed report")

    monkeypatch.setattr(notebook_parameters, "trained_seeds", unread)
    monkeypatch.setattr(notebook_parameters, "committed_seed_values", unread)
    result = synthetic_regression.run_synthetic_regression(seed=0, num_train=20, num_test=10, steps=2)
    assert set(result.test_mse) == set(synthetic_regression.MODEL_LABELS)
    with pytest.raises(ValueError, match="steps"):
        synthetic_regression.run_synthetic_regression(steps=0)


def test_the_classroom_notebooks_parameters_cell_has_the_dataclass_defaults():
    """The parameters cell papermill overrides and ClassroomParameters name the same defaults ("" is the default
    data root, None in the dataclass), so the synthetic regression run alone and in the notebook agree."""
    import ast
    import json
    from dataclasses import fields
    from pathlib import Path

    notebook = Path(__file__).resolve().parents[2] / "notebooks" / "statistics_of_heuristic_learning.ipynb"
    cell = next(c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code")
    in_cell = {node.target.id: ast.literal_eval(node.value) for node in ast.parse("".join(cell["source"])).body
               if isinstance(node, ast.AnnAssign)}
    defaults = {field.name: field.default for field in fields(notebook_parameters.ClassroomParameters)}
    assert in_cell.pop("data_root") == "" and defaults.pop("data_root") is None
    assert in_cell == defaults
