"""Reusing solves across dataset runs: a problem file that is byte-identical to one already solved is not solved again.

Solving is most of a dataset's generation time (Fast Downward A* + LM-cut). When a dataset is regenerated under
new rules (another selection of attempts, a relabelling), most attempts are the same problems as before: the
generator is deterministic, so the same seed gives the same PDDL bytes. :class:`SolutionCache` collects, from
existing dataset roots, what their solves gave -- the optimal plan of every instance and the failure of every
attempt that timed out, ran out of memory or was proved unsolvable -- keyed by the sha256 of the problem text (of the
decompressed text for a problem file stored gzip-compressed).

A cached result is used only when it is provably what a new solve would give:

* the problem text's sha256 equals the solved problem's (checked against the file on disk for instances, and
  against the regenerated text for rejected attempts, whose files are not kept);
* the Fast Downward build (:func:`tnlib.planning.fast_downward.fast_downward_version`) is the one that solved it:
  A* + LM-cut is deterministic, so the same build on the same bytes returns the same plan;
* the limits prove it. A failure (time-out, out of memory) is reused only under the very limits it happened
  under: a time-out at 120 s says nothing at 1800 s (nor, strictly, at 100 s: on a loaded machine the wall-clock
  backstop can stop a search before its CPU limit). A plan found, or unsolvability proved, under some limits is
  what the same search finds under limits at least as large: the limits only stop the search, never steer it.
  So a problem solved in 10 s is not solved again when the dataset is regenerated at 300 s. An entry made under
  exactly the requested limits is preferred.

Labels (heuristic values, h_sat) are always recomputed from the plan with the current code, so a cached plan
never carries stale labels. A failure's verdict depends on the machine when the solve time is near the limit --
as does a fresh run's (see :mod:`tnlib.data.generation`); reused verdicts are marked ``"reused": true``.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from tnlib.data.schema import DEFAULT_SOLVER, MANIFEST
from tnlib.files import read_json

REUSABLE_FAILURES = ("timeout", "out_of_memory", "unsolvable")  # planner errors and exceptions are always retried
# Verdicts a search reaches before any limit stops it: they hold under every larger limit too.
LIMIT_INDEPENDENT = ("solved", "unsolvable")


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class SolutionCache:
    """sha256 of a problem text -> what solving it gave (``status``, and for solved ones ``plan``,
    ``solve_seconds``, ``expansions``), with the Fast Downward build and limits it was solved under; a problem
    solved under several limits has an entry for each (the first one recorded per build and limits)."""

    entries: dict[str, list[dict]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, sha256: str, entry: dict) -> None:
        known = self.entries.setdefault(sha256, [])
        if not any(_entry_limits(e) == _entry_limits(entry) for e in known):
            known.append(entry)

    def lookup(self, sha256: str, fast_downward: str, time_limit: float, memory_limit_mb: int | None) -> dict | None:
        """What a solve of this problem text under these limits would give, if an entry proves it (module
        docstring): one made under exactly these limits, else a plan or an unsolvability proof found under
        limits no larger. None otherwise."""
        wanted = (fast_downward, float(time_limit), memory_limit_mb)
        known = self.entries.get(sha256, [])
        for entry in known:
            if _entry_limits(entry) == wanted:
                return entry
        for entry in known:
            if (entry["status"] in LIMIT_INDEPENDENT and entry["fast_downward"] == fast_downward
                    and float(entry["time_limit"]) <= float(time_limit)
                    and _memory_at_most(entry["memory_limit_mb"], memory_limit_mb)):
                return entry
        return None

    @classmethod
    def from_datasets(cls, roots: Iterable[str | os.PathLike], domains: Iterable[str] | None = None) -> "SolutionCache":
        """Everything the dataset roots' manifests record (roots without a manifest are ignored)."""
        from tnlib.planning.generators import generate
        from tnlib.planning.pddl import read_pddl_text

        cache = cls()
        wanted = set(domains) if domains is not None else None
        for root in roots:
            root = Path(root)
            top_path = root / MANIFEST
            if not top_path.is_file():
                continue
            top = read_json(top_path)
            for domain, ref in top.get("domains", {}).items():
                if wanted is not None and domain not in wanted:
                    continue
                path = root / ref["manifest"]
                if not path.is_file():
                    continue
                manifest = read_json(path)
                build = manifest.get("fast_downward")
                files = manifest.get("files", {})
                for entry in manifest.get("splits", {}).values():
                    if entry["settings"].get("solver", DEFAULT_SOLVER) != DEFAULT_SOLVER:
                        continue  # another solver's plans: not what Fast Downward gives under these limits
                    limits = {"fast_downward": build, "time_limit": entry["settings"]["time_limit"],
                              "memory_limit_mb": entry["settings"]["memory_limit_mb"]}
                    for inst in entry.get("instances", []):
                        problem = root / inst["problem"]
                        listed = files.get(inst["problem"])
                        if inst.get("solver", DEFAULT_SOLVER) != DEFAULT_SOLVER:
                            continue  # filled in by another solver (tnlib.data.slot_filling)
                        if listed is None or not problem.is_file():
                            continue
                        if hashlib.sha256(problem.read_bytes()).hexdigest() != listed:
                            continue  # the file changed since it was solved: its plan proves nothing
                        # The manifest lists the stored bytes, which for a gzip-compressed file are not the text a
                        # regenerated attempt is keyed by: key every solve by its problem text.
                        digest = text_sha256(read_pddl_text(problem))
                        cache.add(digest, {"status": "solved", "plan": list(inst["plan"]),
                                           "solve_seconds": inst["solve_seconds"], "expansions": inst["expansions"],
                                           "source": str(problem), **limits})
                    rejected = [(inst["params"], r) for inst in entry.get("instances", [])
                                for r in inst["rejected"] + inst.get("fast_downward_rejected", [])]
                    rejected += [(f["params"], r) for f in entry.get("failures", []) for r in f["rejected"]]
                    for params, r in rejected:
                        if r.get("status") not in REUSABLE_FAILURES:
                            continue
                        text = generate(domain, r["seed"], **params)
                        cache.add(text_sha256(text), {"status": r["status"], "seconds": r.get("seconds"),
                                                      "source": f"{path} seed {r['seed']}", **limits})
        return cache


def _entry_limits(entry: dict) -> tuple:
    return entry["fast_downward"], float(entry["time_limit"]), entry["memory_limit_mb"]


def _memory_at_most(recorded: int | None, limit: int | None) -> bool:
    """Whether a limit of ``limit`` MiB allows all that ``recorded`` did (None: no limit)."""
    return limit is None or (recorded is not None and recorded <= limit)


__all__ = ["LIMIT_INDEPENDENT", "REUSABLE_FAILURES", "SolutionCache", "text_sha256"]
