"""What a sweep's cell does besides training its configuration: how long it trains, and where and how it plans.

:class:`CellSettings` is one value per sweep (:func:`tnlib.experiments.running.sweep.cell_settings`), handed with each
cell's training configuration to :func:`tnlib.experiments.running.cells.run_cell`; its own module, so that a sweep builds it
without loading torch.
"""
from __future__ import annotations

from dataclasses import dataclass

from tnlib.learning.until_flat import EXTEND_STEPS
from tnlib.planning.search_settings import PAPER_SEARCH, SearchSettings


@dataclass(frozen=True)
class CellSettings:
    """Train until flat with ``max_steps`` (None: the configuration's steps; chunks of ``extend_steps``), then plan
    when ``plan``: on ``plan_on`` (the plan split, or a plan set), its first ``plan_per_cell`` instances of each grid
    cell and at most ``plan_instances`` (None: all), under ``search``. ``progress``: show the cell's training steps
    and planned instances where it runs (a sweep in one process: its terminal, log or notebook). ``train`` False:
    the run is trained and tested already and the cell only plans with its best checkpoint, never deciding
    whether to train on (a planning process beside training lanes, on code newer than the code that trains)."""

    train: bool = True
    max_steps: int | None = None
    extend_steps: int = EXTEND_STEPS
    plan: bool = True
    plan_on: str = "plan"
    plan_per_cell: int | None = None
    plan_instances: int | None = None
    search: SearchSettings = PAPER_SEARCH
    progress: bool = False
