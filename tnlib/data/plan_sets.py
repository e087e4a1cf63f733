"""Label-free plan sets: loading and checking them (:mod:`tnlib.data.plan_set_generation` makes them).

GBFS coverage and evaluation counts (the paper's Table 2) need problems, not h*: a plan set is a dataset's plan
instances drawn by the generator alone, at the paper's test sizes, without the optimal solves that hold the
labelled ``plan`` split back. Per domain, ``ROOT/DOMAIN/<folder>/`` (:data:`tnlib.data.schema.PLAN_SETS`) holds

* ``manifest.json``: the grid and slots it was drawn from, the settings, and per instance its generator
  parameters and seed, instance key, sha256, the attempts rejected before it (trivial, or a repeat of a train, val
  or test instance or of an earlier one of the set), a satisficing plan that shows it solvable (its length, the
  planner's time, the validator's verdict) and every optimal solve tried on it (status, seconds, limits; from the
  labelled plan split's generation, which drew the same seeds, or run for the set), and, where it was asked for
  (``tnlib data plan-set ... --exact``), the exact solver's h* of the initial state (``exact``: its optimal plan's
  length, seconds and the validator's verdict);
* ``problems/NAME.pddl``: its problem files.

:meth:`PlanSet.optimal_selection` applies the paper's own selection (the instances Fast Downward solved optimally
within a time limit) where the recorded solves decide it.
"""
from __future__ import annotations

import os
from pathlib import Path

from tnlib.data.instance_keys import instance_key
from tnlib.data.manifest import dataset_root
from tnlib.data.schema import MANIFEST, PLAN_SET_FORMAT, PLAN_SETS, SPLITS
from tnlib.errors import DatasetError, InstanceKeyError
from tnlib.files import read_json, sha256_file
from tnlib.paper import DOMAINS

# The splits a plan set must not repeat an instance of (it stands in for the labelled plan split, so that one is not
# among them).
PLAN_SET_DISJOINT_FROM = tuple(s for s in SPLITS if s != "plan")


def plan_set_folder(root: str | os.PathLike, domain: str, name: str) -> Path:
    """``ROOT/DOMAIN/<name>``, for a plan set's folder name (a value of :data:`PLAN_SETS`)."""
    if name not in PLAN_SETS.values():
        raise DatasetError(f"unknown plan set {name!r}; choose from {', '.join(PLAN_SETS.values())}")
    return Path(root) / domain / name


def plan_set_hint(root: str | os.PathLike, domain: str, name: str) -> str:
    """The command that makes (or resumes) a plan set."""
    grid = next(g for g, folder in PLAN_SETS.items() if folder == name)
    return f"`tnlib data plan-set {root} --domain {domain} --grid {grid}`"


class PlanSet:
    """One domain's plan set: ``instances()`` and ``problem_path(instance)`` as a split's table offers them, each
    instance's ``record``, and the paper's selection by optimal solves (:meth:`optimal_selection`)."""

    def __init__(self, root: Path, domain: str, name: str, manifest: dict):
        self.root, self.domain, self.name, self.manifest = root, domain, name, manifest
        self.folder = plan_set_folder(root, domain, name)
        self._records = {r["instance"]: r for r in manifest["instances"]}

    def __repr__(self) -> str:
        return f"PlanSet({self.domain}/{self.name}: {len(self._records)} instances)"

    def __len__(self) -> int:
        return len(self._records)

    def instances(self) -> list[str]:
        return list(self._records)

    def record(self, instance: str) -> dict:
        return self._records[instance]

    def first_per_cell(self, count: int) -> list[str]:
        """The first ``count`` instances of every grid cell, in the set's order (a subset stratified over the
        grid: what planning takes where every instance would cost too much)."""
        taken: dict[str, int] = {}
        chosen = []
        for name in self._records:
            cell = self._records[name]["cell"]
            if taken.get(cell, 0) < count:
                taken[cell] = taken.get(cell, 0) + 1
                chosen.append(name)
        return chosen

    def optimal_cost(self, instance: str) -> int | None:
        """h* of the instance's initial state, from the exact solver's validated plan (None: not recorded)."""
        exact = self._records[instance].get("exact")
        if exact is None or exact.get("status") != "solved" or not exact.get("valid"):
            return None
        return exact["plan_length"]

    def problem_path(self, instance: str) -> Path:
        return self.root / self._records[instance]["problem"]

    def optimal_selection(self, seconds: float) -> tuple[list[str], list[str]]:
        """The paper's selection at ``seconds``: (instances an optimal solve finished within ``seconds``, instances
        no recorded solve decides -- none succeeded and none ran that long). The others were not solved within it."""
        kept, unknown = [], []
        for name, record in self._records.items():
            verdict = optimal_verdict(record.get("optimal", []), seconds)
            if verdict is True:
                kept.append(name)
            elif verdict is None:
                unknown.append(name)
        return kept, unknown


def optimal_verdict(attempts: list[dict], seconds: float) -> bool | None:
    """Did Fast Downward solve the instance optimally within ``seconds``? True / False from the recorded solves
    (a limit stops the search and never steers it, so a time-out at a limit of at least ``seconds`` proves No), None
    when they do not tell."""
    if any(a["status"] == "solved" and a["seconds"] <= seconds for a in attempts):
        return True
    if any(a["status"] == "solved" or (a["status"] == "timeout" and a["time_limit"] >= seconds) for a in attempts):
        return False
    return None


def load_plan_set(root: str | os.PathLike | None, domain: str, name: str = PLAN_SETS["test"],
                  verify: bool = True) -> PlanSet:
    """A domain's plan set from a dataset root (``None``: the default data root); with ``verify`` its files and
    keys are checked first (:func:`verify_plan_set`). A missing or damaged set raises :class:`DatasetError` naming
    the command that makes it."""
    if domain not in DOMAINS:
        raise DatasetError(f"unknown domain {domain!r}; choose from {', '.join(DOMAINS)}")
    base = dataset_root(root)
    path = plan_set_folder(base, domain, name) / MANIFEST
    if not path.is_file():
        raise DatasetError(f"{path} missing: make the plan set with {plan_set_hint(base, domain, name)}")
    if verify:
        problems = verify_plan_set(base, domain, name, recompute=False)
        if problems:
            raise DatasetError(f"{base}/{domain}/{name} fails its checks: " + "; ".join(problems[:5]))
    return PlanSet(base, domain, name, _read_manifest(path))


def _read_manifest(path: Path) -> dict:
    try:
        manifest = read_json(path)
    except (OSError, ValueError) as err:
        raise DatasetError(f"{path}: unreadable ({err.__class__.__name__}: {err})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != PLAN_SET_FORMAT:
        raise DatasetError(f"{path}: not a tnlib plan set manifest")
    return manifest


def taken_instance_keys(root: Path, domain: str) -> dict[str, str]:
    """Instance keys of the dataset's train, val and test instances -> ``split/instance``: what a plan set must not
    repeat. Raises DatasetError when the domain or one of those splits is missing."""
    path = root / domain / MANIFEST
    if not path.is_file():
        raise DatasetError(f"{path} missing: a plan set is drawn disjoint from the domain's train, val and test "
                           "splits, so generate them first")
    splits = read_json(path).get("splits", {})
    missing = [s for s in PLAN_SET_DISJOINT_FROM if s not in splits]
    if missing:
        raise DatasetError(f"{root}/{domain} has no {', '.join(missing)} split: a plan set is drawn disjoint from "
                           "train, val and test, so generate them first")
    return {inst["instance_key"]: f"{s}/{inst['instance']}" for s in PLAN_SET_DISJOINT_FROM
            for inst in splits[s]["instances"]}


def verify_plan_set(root: str | os.PathLike, domain: str, name: str = PLAN_SETS["test"],
                    recompute: bool = True) -> list[str]:
    """Every problem found in one plan set (empty: all good): the manifest, each problem file's presence and
    sha256, no stray file, (``recompute``: keys computed from the files, else the stored ones) no instance
    twice in the set nor shared with the dataset's train, val or test split, and a recorded exact h* that is a
    validated plan's and equal to every optimal plan Fast Downward's A* found for the instance."""
    root = Path(root)
    folder = plan_set_folder(root, domain, name)
    hint = plan_set_hint(root, domain, name)
    try:
        manifest = _read_manifest(folder / MANIFEST)
    except DatasetError as err:
        return [f"{err}; remake it with {hint}"]
    problems: list[str] = []
    listed = set()
    keys: dict[str, str] = {}
    try:
        taken = taken_instance_keys(root, domain)
    except DatasetError as err:
        return [str(err)]
    for record in manifest["instances"]:
        relative = record["problem"]
        listed.add(relative)
        path = root / relative
        if not path.is_file():
            problems.append(f"{relative}: missing (listed in {domain}/{name}/{MANIFEST}); remake with {hint}")
            continue
        if sha256_file(path) != record["sha256"]:
            problems.append(f"{relative}: checksum mismatch (changed or corrupt); remake with {hint} --force")
            continue
        key = record["instance_key"]
        if recompute:
            try:
                key = instance_key(path)
            except InstanceKeyError as err:
                problems.append(f"{relative}: cannot compute its instance key ({err})")
                continue
            if key != record["instance_key"]:
                problems.append(f"{relative}: the manifest's instance_key differs from the problem file's")
        if key in taken:
            problems.append(f"{relative}: the same instance as {taken[key]} (up to renaming objects)")
        if key in keys:
            problems.append(f"{relative}: the same instance as {keys[key]} of the set (up to renaming objects)")
        keys[key] = relative
        problems += _exact_cost_problems(relative, record)
    for path in sorted((folder / "problems").glob("*.pddl")):
        relative = path.relative_to(root).as_posix()
        if relative not in listed:
            problems.append(f"{relative}: not listed in {domain}/{name}/{MANIFEST} (a stray or foreign file)")
    return problems


def _exact_cost_problems(relative: str, record: dict) -> list[str]:
    """What is wrong with an instance's recorded exact h* (empty: nothing, or none recorded, or a search that ran
    out of its node budget): it must come from a validated plan and equal the length of every optimal plan A* found
    (the labelled split records no length)."""
    exact = record.get("exact")
    if exact is None or exact.get("status") == "node_limit":
        return []
    if exact.get("status") != "solved" or not exact.get("valid"):
        return [f"{relative}: its exact solve did not give a validated plan ({exact.get('message', exact['status'])})"]
    found = [o for o in record.get("optimal", []) if o["status"] == "solved" and "plan_length" in o]
    return [f"{relative}: exact h* {exact['plan_length']} but Fast Downward's A* found an optimal plan of "
            f"{o['plan_length']}" for o in found if o["plan_length"] != exact["plan_length"]]


def find_plan_sets(root: str | os.PathLike) -> list[tuple[str, str]]:
    """(domain, plan set folder name) of every plan set in a dataset root."""
    root = Path(root)
    return [(domain, name) for domain in DOMAINS for name in PLAN_SETS.values()
            if (root / domain / name / MANIFEST).is_file()]
