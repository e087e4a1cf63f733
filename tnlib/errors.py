"""Every error tnlib raises on purpose, in one place: each names what went wrong for a user to act on.

The command line (:mod:`tnlib.cli`) turns these into one line on stderr and exit code 2 instead of a traceback.
"""
from __future__ import annotations


class CommandError(Exception):
    """A user error worth one clear line on stderr and exit code 2, not a traceback."""


class TaskError(ValueError):
    """A PDDL file that cannot be turned into a task; the message names the file and the problem."""


class PlanError(ValueError):
    """A plan file that cannot be read (not a sequence of ``(action args)`` lines)."""


class LabelError(ValueError):
    """A plan that does not validate, or labels that contradict each other (see :mod:`tnlib.data.labels`)."""


class DatasetError(Exception):
    """A dataset that is missing, corrupt, or inconsistent with the settings asked for (one clear message)."""


class InstanceKeyError(ValueError):
    """A problem that cannot be keyed (:mod:`tnlib.data.instance_keys`): unreadable PDDL, an atom over an
    undeclared object, or too much symmetry."""


class TrainingDiverged(RuntimeError):
    """The loss or the gradient became NaN or infinite; nothing was saved for the offending step."""


class SchedulerUnreachable(ConnectionError):
    """The Dask scheduler at the given address did not answer."""


class ClusterMismatch(RuntimeError):
    """A Dask cluster whose scheduler or workers would not run a sweep's tasks as the process sending them would
    (another code, another filesystem or dataset, or no workers): the message names each and why."""


class MissingRuns(FileNotFoundError):
    """A results folder that holds none of the runs it was asked to read; the message says how to make them."""


class DamagedFile(Exception):
    """A file tnlib wrote that is now cut short or changed (a full disk, a copy cut short, an edit): the message
    names the file and what to do about it; ``path`` and ``reason`` let a caller that recovers say so instead."""

    def __init__(self, message: str, path=None, reason: str | None = None):
        super().__init__(message)
        self.path, self.reason = path, reason


class NothingToCompare(LookupError):
    """A rerun check (:mod:`tnlib.experiments.running.rerun_check`) that has nothing to compare with here: no
    figures made on this kind of machine, no kind confirmed, or the code that trained missing from git's history.
    Its own class, so that a KeyError or IndexError in the check fails it instead of reading as nothing to do."""


class OutsideFormulaScope(ValueError):
    """A state or goal that an exact optimal-cost formula of :mod:`tnlib.planning.optimal_costs` does not cover (or
    that is no state of the domain): the message names the condition it fails, so no wrong number is returned."""


class SearchNodeLimit(OutsideFormulaScope):
    """An exact solver's search (blocksworld's, visitall's) that did not prove the optimum within the search nodes
    it was given: the instance is in scope, only the budget ran out."""
