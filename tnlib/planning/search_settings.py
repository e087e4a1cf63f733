"""What GBFS is asked to do besides its heuristic: the counting protocol and the limits, as one value.

Two counting protocols (:func:`tnlib.planning.search.gbfs` describes them): ``paper``, the planner of the paper's
experiments (every generated successor counts, goal test at generation), and ``distinct`` (each distinct state
counts once, goal test at expansion, as Fast Downward). A sweep, a command or a test builds one
:class:`SearchSettings` and it travels unchanged to the search; its own module, so that describing a sweep does not
load the search and its compiled heuristics.

The evaluation limit's default is :class:`SearchSettings`' alone (the paper's, :data:`tnlib.paper.MAX_EVALUATIONS`):
whatever else takes a limit -- a sweep, a dataset profile's h_sat labels, the commands, the tables' reading of
records that do not name theirs -- defaults to ``PAPER_SEARCH.max_evaluations``.
"""
from __future__ import annotations

from dataclasses import dataclass

from tnlib.paper import MAX_EVALUATIONS

PAPER = "paper"
DISTINCT = "distinct"
PROTOCOLS = (PAPER, DISTINCT)


@dataclass(frozen=True)
class SearchSettings:
    """How GBFS counts its evaluations and when it gives up, one value from a sweep or a command down to
    :func:`gbfs`: the counting ``protocol`` (:data:`PROTOCOLS`), the evaluation limit (None: none) and a time limit
    in seconds (None: none). The default is the paper's: its planner's counting and 10,000 evaluations."""

    protocol: str = PAPER
    max_evaluations: int | None = MAX_EVALUATIONS
    time_limit: float | None = None

    def __post_init__(self):
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"unknown search protocol {self.protocol!r}; choose one of {', '.join(PROTOCOLS)}")
        if self.max_evaluations is not None and (isinstance(self.max_evaluations, bool) or self.max_evaluations < 0):
            raise ValueError(f"max_evaluations must be None or a whole number >= 0, got {self.max_evaluations!r}")
        if self.time_limit is not None and self.time_limit < 0:
            raise ValueError(f"time_limit must be None or >= 0 seconds, got {self.time_limit!r}")


PAPER_SEARCH = SearchSettings()
#: A*'s default: each distinct state counted once (the only counting A* has) and no limit, so it ends with an
#: optimal plan or none.
UNLIMITED_SEARCH = SearchSettings(DISTINCT, max_evaluations=None)
