"""Training until flat: a run trains its first steps, then on in chunks while its validation curve still improves.

A validation curve is *still improving* when the best of its last quarter of evaluations beats the best before
them by more than 1% (:func:`still_improving`); a sweep's cell (:func:`tnlib.experiments.running.cells.train_until_flat`)
extends a run chunk by chunk until its curve is flat or it reaches a step cap (``Sweep.max_steps``), and the reports'
header uses the same rule to say how many runs were still improving when they stopped. Nothing here imports torch.
"""
from __future__ import annotations

import math
from typing import Sequence


# Training until flat (Sweep.max_steps): how many steps a still-improving run trains before it is checked again.
EXTEND_STEPS = 2000
# The flattening criterion (module docstring): the last LAST_FRACTION of evaluations must beat the best before
# them by more than IMPROVEMENT (relative) for a run to count as still improving; fewer than MIN_EVALUATIONS
# evaluations cannot tell.
LAST_FRACTION = 0.25
IMPROVEMENT = 0.01
MIN_EVALUATIONS = 4


def until_flat_end(steps: int, first: int, max_steps: int, extend_steps: int) -> int:
    """Where a run trained until flat (:func:`train_until_flat`) that has reached ``steps``
    stops its current chunk: the first chunk end ``first + k * extend_steps`` (or ``max_steps``) at or after it. A
    run's steps lie on the sweep's grid of chunks when this is ``steps`` itself."""
    if steps <= first:
        return first
    return min(max_steps, first + -(-(steps - first) // extend_steps) * extend_steps)


def still_improving(values: Sequence[float], last_fraction: float = LAST_FRACTION,
                    improvement: float = IMPROVEMENT, minimum: int = MIN_EVALUATIONS) -> bool | None:
    """Whether a validation curve was still improving at its end: the best of its last ``last_fraction`` of
    values (rounded up, at least one) is below ``(1 - improvement)`` times the best before them. None when it has
    fewer than ``minimum`` values. Non-finite values never count as a best."""
    if len(values) < minimum:
        return None
    last = max(1, math.ceil(len(values) * last_fraction))
    finite = [v if math.isfinite(v) else math.inf for v in values]
    before, after = min(finite[:-last]), min(finite[-last:])
    if not math.isfinite(after):
        return False
    if not math.isfinite(before):
        return True
    return after < before * (1 - improvement) if before > 0 else after < before


def check_until_flat(steps: int, max_steps, extend_steps: int, eval_every: int) -> None:
    """The train-until-flat settings' checks (a ValueError naming the bad one)."""
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < steps:
        raise ValueError(f"max_steps must be an integer >= steps ({steps}), or none, got {max_steps!r}")
    # Chunk ends on the validation grid: a run trained on in chunks then has the same curve, checkpoints and
    # weights as one trained straight to its last step.
    for name, value in (("steps", steps), ("extend_steps", extend_steps)):
        if value % eval_every:
            raise ValueError(f"with max_steps, {name} ({value}) must be a multiple of eval_every ({eval_every})")
