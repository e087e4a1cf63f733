"""tnlib.notebook.label_gaps: how far the admissible bounds lie below h* in data/small, read against the Parquet
columns, and the claims of the classroom notebook's section 7 about the real labels."""
from __future__ import annotations

import numpy as np
import pytest

from tnlib.notebook import label_gaps, notebook_parameters


def test_label_gaps_are_the_datasets_own_labels():
    """Against the Parquet columns read directly: h* - l per bound, h_FF - h*, and the exact fractions; the
    figure's bars are the shares of each gap."""
    import pyarrow.parquet as pq

    from tnlib.data.manifest import default_data_root
    from tnlib.notebook import figures

    gaps = label_gaps.label_gaps()
    assert [g.domain for g in gaps] == ["blocksworld", "ferry", "gripper", "visitall"]
    figure = figures.label_gap_figure(gaps)
    for g, bars in zip(gaps, figure.data):
        table = pq.read_table(default_data_root() / "small" / g.domain / "train.parquet")
        h_star = np.asarray(table.column("h_star").to_pylist(), dtype=float)
        assert g.states == table.num_rows == len(h_star) > 0
        for bound in label_gaps.LOWER_BOUND_COLUMNS:
            expected = h_star - np.asarray(table.column(bound).to_pylist(), dtype=float)
            np.testing.assert_array_equal(g.lower_gaps[bound], expected)
            assert g.exact_fraction(bound) == sum(e == 0 for e in expected) / len(expected)
        np.testing.assert_array_equal(g.ff_error, np.asarray(table.column("ff").to_pylist(), dtype=float) - h_star)
        lmcut = h_star - np.asarray(table.column("lmcut").to_pylist(), dtype=float)
        assert list(bars.x) == list(range(len(bars.x))) and len(bars.x) == int(max(g.lower_gaps["lmcut"].max()
                                                                                  for g in gaps)) + 1
        assert [round(v, 12) for v in bars.y] == [round(float(np.mean(lmcut == k)), 12) for k in bars.x]
        assert sum(bars.y) == pytest.approx(1.0)
    text = label_gaps.format_label_gaps(gaps)
    assert f"blocksworld  {gaps[0].states:>6}  {gaps[0].exact_fraction('lmcut'):>11.1%}" in text


def test_what_to_look_for_in_the_real_labels():
    """Each assertion is a claim of section 7's "What to look for" (data/small, train split)."""
    gaps = label_gaps.label_gaps()
    for g in gaps:
        # LM-cut equals h* on more than half of the training states, in every domain ...
        assert g.exact_fraction("lmcut") > 0.5, g.domain
        # ... and the weaker bounds are exact far less often.
        assert g.exact_fraction("hmax") < g.exact_fraction("lmcut") - 0.05
        assert g.exact_fraction("blind") < g.exact_fraction("hmax")
        # h_FF errs on both sides: it is not admissible, and it is not an upper bound either.
        assert np.any(g.ff_error > 0) and np.any(g.ff_error < 0)
    above = {g.domain: float(np.mean(g.ff_error > 0)) for g in gaps}
    assert max(above, key=above.get) == "visitall"  # where h_FF overestimates most
    # Exercise 6: on the larger test instances LM-cut is exact less often and the mean gap is larger, everywhere.
    for train, test in zip(gaps, label_gaps.label_gaps(split="test")):
        assert test.exact_fraction("lmcut") < train.exact_fraction("lmcut")
        assert np.mean(test.lower_gaps["lmcut"]) > np.mean(train.lower_gaps["lmcut"])


def test_label_gaps_name_bad_input():
    from tnlib.errors import DatasetError

    with pytest.raises(ValueError, match="label_split must be one of train, val, test, plan, got 'training'"):
        notebook_parameters.check_classroom_parameters(label_split="training")
    with pytest.raises(ValueError, match="data_root: no such folder '/nonexistent/data'"):
        notebook_parameters.check_classroom_parameters(data_root="/nonexistent/data")
    assert notebook_parameters.check_classroom_parameters(data_root="").data_root is None
    with pytest.raises(DatasetError, match="unknown split 'training'"):
        label_gaps.label_gaps(split="training")


def test_label_gaps_refuse_a_bound_above_h_star(monkeypatch):
    """A corrupt label (l > h*) is an error, not a negative gap in the figure."""
    class Table:
        def numpy(self, name):
            columns = {"h_star": [3, 2], "lmcut": [3, 3], "hmax": [1, 1], "blind": [1, 1], "ff": [3, 2]}
            return np.asarray(columns[name], dtype=float)

    monkeypatch.setattr(label_gaps, "load_split", lambda *args, **kwargs: Table())
    with pytest.raises(ValueError, match="blocksworld/train: lmcut exceeds h\\* on 1 state"):
        label_gaps.label_gaps(domains=("blocksworld",))


def test_the_truncated_gaussian_fits_the_real_gaps_better_than_the_gaussian():
    """Section 7's fitted model: on data/small, fitted on train and scored on test, the TN's NLL of h* - LM-cut is
    below the Gaussian's in every domain (by about half a nat or more), and its MSE is no worse."""
    fits = label_gaps.fit_gap_models(label_gaps.label_gaps(split="train"), label_gaps.label_gaps(split="test"))
    assert [f.domain for f in fits] == ["blocksworld", "ferry", "gripper", "visitall"]
    for fit in fits:
        assert fit.truncated_nll < fit.gaussian_nll - 0.4
        # every domain's gaps are too spread for a maximum: the exponential limit, whose mean is the Gaussian's
        assert fit.truncated.exists is False and fit.truncated.variance >= fit.truncated.squared_distance
        assert fit.truncated_mse == pytest.approx(fit.gaussian_mse)
    table = label_gaps.format_gap_fits(fits)
    assert "NLL TN" in table and table.count("none: exp(") == 4
