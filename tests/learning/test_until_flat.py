"""tnlib.learning.until_flat: the flattening criterion that decides whether a validation curve is still improving."""
from __future__ import annotations

import math

import pytest

from tnlib.learning.until_flat import still_improving


@pytest.mark.parametrize("values, expected", [
    ([10, 8, 6, 5, 4, 3, 2, 1], True),  # falling to the end
    ([10, 5, 4, 3.9, 3.9, 3.9, 3.9, 3.9], False),  # flat over the last quarter
    ([10, 5, 4, 1.0, 2, 2, 0.99, 1.5], False),  # exactly 1% better: not more than 1%
    ([10, 5, 4, 1.0, 2, 2, 0.989, 1.5], True),  # just over 1% better
    ([10, 1, 5, 5, 5, 5, 5, 5], False),  # the best came early, the end got worse
    ([9, 8, 7], None),  # too few evaluations to tell
    ([5, 4, 3, 2, 1], True),  # five values: the last quarter is the last two (rounded up)
    ([math.nan, math.nan, math.inf, 3.0], True),  # non-finite values never count as a best
    ([3.0, 2.0, 1.0, math.nan], False),
])
def test_still_improving(values, expected):
    assert still_improving(values) is expected


def test_still_improving_options():
    curve = [10, 9, 8, 7, 6, 5, 4.98, 4.97]
    assert still_improving(curve) is False  # 4.97 vs 5: 0.6% better
    assert still_improving(curve, improvement=0.001) is True
    assert still_improving(curve, last_fraction=0.5) is True  # the last four beat 7
    assert still_improving(curve[:3], minimum=3) is True
