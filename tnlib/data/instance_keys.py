"""Instance keys: when are two planning problems the same, and keeping a dataset's splits apart.

Two problems are *the same instance* when one is the other with its objects renamed: a bijection between their
objects that maps the initial atoms onto the initial atoms and the goal atoms onto the goal atoms (the problem
name, the order of objects and atoms, and upper/lower case do not matter). Every model in tnlib reads a state as
a set of atoms and treats objects as interchangeable (the NLM is equivariant to object permutations; the linear
model's features are heuristic values), so such a pair is one training example written twice: a val or test
instance that is a renamed train instance is a leak, even when no atom string is shared. Renamings include the
generators' symmetries: gripper's balls with the same start and goal room, its two rooms and two grippers,
ferry's locations and cars, blocksworld's blocks, and the rotations and reflections of a visitall grid.

:func:`instance_key` maps a problem to the sha256 of its *canonical form*: its atoms with every object renamed to
``o0, o1, ...`` by a canonical labelling, so that equal keys mean the same instance and different keys different
instances (up to sha256 collisions). The labelling is the textbook individualisation-refinement scheme:

1. binary relations that hold between *every* two distinct objects of a set (ferry's ``not-eq``) carry nothing
   but that set; they become a mark on its members (lossless, and it lets 2. split ferry into its parts);
2. the objects fall into connected components (objects linked by an atom of two or more objects); the canonical
   form of the problem is the sorted list of its components' canonical forms (isomorphic components are
   interchangeable, so sorting is all a renaming can change);
3. within a component, colour refinement gives every object a colour from its type, its one-object atoms and,
   repeatedly, the colours of the atoms it takes part in; while some colour class has several objects, one of
   them is given a colour of its own (each in turn, a search tree) and refinement runs again. Every leaf (all
   colours distinct) names the objects by colour; the component's canonical form is the smallest sorted atom
   list over all leaves.
   Objects whose exchange is itself a renaming that maps the problem onto itself (same type, same atoms with
   everything else: gripper balls with equal rooms, ferry cars with equal origin and destination) give equal
   subtrees, so only one of each such class is tried -- exact, and what keeps a 100-ball gripper instance cheap.

Every step depends only on the problem's structure, never on object names, so renamed problems get the same
form; and the form is the problem's atom list under a renaming, so different instances get different forms. The
search is exponential only for problems with large symmetry groups that step 3's exchanges do not cover; it stops
with :class:`InstanceKeyError` past :data:`MAX_LEAVES` leaves rather than run on (no generated instance comes
near: see tests/data/test_instance_keys.py).

A (state, goal) pair is keyed the same way, with the state in place of the initial atoms
(:func:`state_goal_key`): two dataset rows with equal pair keys are one training example (the same input and,
since h* depends only on the pair, the same label). :mod:`tnlib.data.train_pairs` uses it to keep model selection
away from the training states.

:func:`exact_key` is a weaker test: the same atom strings with only the problem name removed. A problem's exact
key equals another's only if their instance keys are equal. Problems are read from their text alone by
:func:`tnlib.planning.pddl.problem_sections` (:func:`problem_from_text`).

Split rules (used by :mod:`tnlib.data.generation`; checked by ``tnlib data verify``, :mod:`tnlib.data.manifest`):
within a domain, the splits are made in the order train, val, test, plan; no instance occurs twice in a split, and
none occurs in two splits. :func:`tnlib.data.attempt_selection.select_attempts` is the deterministic rule that picks each slot's attempt under
these constraints (in :mod:`tnlib.data.attempt_selection`, the generator's side), and
:func:`check_domain_instances` counts (:func:`domain_duplicates`) what a dataset root breaks
of them.
"""
from __future__ import annotations

import hashlib
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from tnlib.data.schema import ALL_SPLITS, DISJOINT_FROM
from tnlib.errors import DamagedFile, InstanceKeyError, TaskError
from tnlib.planning.pddl import parse_atom, problem_sections, read_pddl_text

# Stored verbatim in every split's manifest entry (instance_keys.scheme): a new scheme gets a new text and version.
INSTANCE_KEY_SCHEME = (
    "instance_key = sha256 of the canonical form: init and goal atoms with objects renamed canonically (complete "
    "binary relations as marks; components sorted; colour refinement and individualisation, smallest certificate); "
    "equal keys = same problem up to renaming objects (tnlib.instance_keys, v1)"
)
MAX_LEAVES = 50_000  # search-tree leaves per component before giving up (generated instances need at most dozens)

Atom = tuple[str, ...]  # (predicate, arg, ...), lower case


# ---------------------------------------------------------------------------------------------------------------
# Reading problems


@dataclass(frozen=True)
class ProblemAtoms:
    """What identifies an instance: its objects (with their types) and its initial and goal atoms."""

    name: str
    objects: tuple[str, ...]
    types: tuple[str, ...]  # per object, "object" when untyped
    init: frozenset[Atom]
    goal: frozenset[Atom]

    @property
    def trivial(self) -> bool:
        """The goal holds initially (an optimal plan is empty)."""
        return self.goal <= self.init

    def renamed(self, mapping: Mapping[str, str], name: str | None = None) -> "ProblemAtoms":
        """The same problem with objects renamed by ``mapping`` (a bijection; missing objects keep their names)."""
        rename = lambda atom: (atom[0], *(mapping.get(a, a) for a in atom[1:]))  # noqa: E731
        objects = tuple(mapping.get(o, o) for o in self.objects)
        if len(set(objects)) != len(objects):
            raise ValueError("the renaming maps two objects to one name")
        return ProblemAtoms(name or self.name, objects, self.types, frozenset(map(rename, self.init)),
                            frozenset(map(rename, self.goal)))

    def to_pddl(self, domain: str) -> str:
        """PDDL text (objects in the given order, atoms sorted): for tests and for writing renamed problems."""
        typed = any(t != "object" for t in self.types)
        objects = " ".join(f"{o} - {t}" if typed else o for o, t in zip(self.objects, self.types))
        atoms = lambda s: "\n".join(f"    ({' '.join(a)})" for a in sorted(s))  # noqa: E731
        return (f"(define (problem {self.name})\n  (:domain {domain})\n  (:objects {objects})\n  (:init\n"
                f"{atoms(self.init)}\n  )\n  (:goal (and\n{atoms(self.goal)}\n  ))\n)\n")


def problem_from_text(text: str) -> ProblemAtoms:
    """The objects, initial atoms and goal atoms of a STRIPS problem file's text (goal: one atom or an ``and``),
    read by :func:`tnlib.planning.pddl.problem_sections`; an :class:`InstanceKeyError` where it is malformed."""
    try:
        name, objects, types, init, goal = problem_sections(text)
    except TaskError as err:
        raise InstanceKeyError(str(err)) from None
    return ProblemAtoms(name, tuple(objects), tuple(types), init, goal)


def _as_problem(problem: ProblemAtoms | str | os.PathLike) -> ProblemAtoms:
    if isinstance(problem, ProblemAtoms):
        return problem
    if isinstance(problem, os.PathLike):
        try:
            text = read_pddl_text(problem)
        except DamagedFile as err:
            raise InstanceKeyError(str(err)) from None
        return problem_from_text(text)
    return problem_from_text(problem)


# ---------------------------------------------------------------------------------------------------------------
# Keys


def exact_key(problem: ProblemAtoms | str | os.PathLike) -> str:
    """sha256 of the sorted initial and goal atom strings (objects as named; problem name left out)."""
    p = _as_problem(problem)
    text = "init\n" + "\n".join(" ".join(a) for a in sorted(p.init)) + "\ngoal\n"
    text += "\n".join(" ".join(a) for a in sorted(p.goal))
    return hashlib.sha256(text.encode()).hexdigest()


def instance_key(problem: ProblemAtoms | str | os.PathLike) -> str:
    """sha256 of :func:`canonical_form`: equal exactly for problems that differ only by renaming objects."""
    return hashlib.sha256(canonical_form(problem).encode()).hexdigest()


def _atom_tuple(text: str) -> Atom:
    """A dataset table's atom string, ``"(at c0 l1)"``, as an :data:`Atom` (lower case)."""
    name, args = parse_atom(text)
    return (name, *args)


def _predicate(atom: str | Atom) -> str:
    if isinstance(atom, tuple):
        return atom[0]
    head = atom.strip().lstrip("(").split(None, 1)[0]
    return head.rstrip(")").lower()


def state_goal_key(problem: ProblemAtoms, state: Iterable[str | Atom], goal: Iterable[str | Atom]) -> str:
    """The :func:`instance_key` of a (state, goal) pair of ``problem``: the problem with ``state`` in place of its
    initial atoms and ``goal`` as its goal (atoms as tuples or as the tables' strings). Equal keys: the same
    (state, goal) pair up to renaming objects -- for every model in tnlib, the same training example."""
    atoms = lambda items: frozenset(a if isinstance(a, tuple) else _atom_tuple(a) for a in items)  # noqa: E731
    return instance_key(ProblemAtoms(problem.name, problem.objects, problem.types, atoms(state), atoms(goal)))


def state_goal_signature(problem: ProblemAtoms, state: Iterable[str | Atom], goal: Iterable[str | Atom]) -> tuple:
    """A cheap invariant of :func:`state_goal_key`: the object types and the atoms per predicate of the state
    and of the goal, counted. Renaming objects changes none of it, so pairs with different signatures have
    different keys; only pairs whose signature occurs on both sides need their keys computed."""
    count = lambda items: tuple(sorted(Counter(_predicate(a) for a in items).items()))  # noqa: E731
    return tuple(sorted(Counter(problem.types).items())), count(state), count(goal)


Fact = tuple[str, str, tuple[int, ...]]  # (phase, predicate, object indices); phase: "type", "init", "goal"


def canonical_form(problem: ProblemAtoms | str | os.PathLike) -> str:
    """The problem's atoms, objects renamed ``o0, o1, ...`` canonically (module docstring), one per line."""
    p = _as_problem(problem)
    index = {o: i for i, o in enumerate(p.objects)}
    facts: list[Fact] = [("type", t, (i,)) for i, t in enumerate(p.types)]
    nullary: list[tuple[str, str]] = []
    for phase, atoms in (("init", p.init), ("goal", p.goal)):
        for atom in atoms:
            unknown = [a for a in atom[1:] if a not in index]
            if unknown:
                raise InstanceKeyError(f"problem {p.name}: ({' '.join(atom)}) names undeclared {unknown[0]!r}")
            if len(atom) == 1:
                nullary.append((phase, atom[0]))
            else:
                facts.append((phase, atom[0], tuple(index[a] for a in atom[1:])))
    facts = _mark_complete_relations(facts)

    # Components: union-find over atoms that link two or more objects.
    parent = list(range(len(p.objects)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for _phase, _pred, args in facts:
        for a in args[1:]:
            ra, rb = find(args[0]), find(a)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    members: dict[int, list[int]] = {}
    for i in range(len(p.objects)):
        members.setdefault(find(i), []).append(i)
    by_component: dict[int, list[Fact]] = {}
    for fact in facts:
        by_component.setdefault(find(fact[2][0]), []).append(fact)
    forms = []
    for root, objs in members.items():
        local = {o: k for k, o in enumerate(objs)}
        local_facts = [(ph, pr, tuple(local[a] for a in args)) for ph, pr, args in by_component.get(root, [])]
        forms.append((len(objs), _component_form(len(objs), local_facts, p.name)))
    forms.sort()
    lines = [f"{phase} ({pred})" for phase, pred in sorted(nullary)]
    offset = 0
    for size, form in forms:
        lines += [f"{ph} ({' '.join([pr, *(f'o{a + offset}' for a in args)])})" for ph, pr, args in form]
        offset += size
    return "\n".join(lines) + "\n"


def _mark_complete_relations(facts: list[Fact]) -> list[Fact]:
    """Replace each binary relation that holds between every two distinct objects of its support (and nothing
    else) by a unary mark on that support: the set determines the relation, so nothing is lost."""
    groups: dict[tuple[str, str], list[tuple[int, ...]]] = {}
    for phase, pred, args in facts:
        if len(args) == 2:
            groups.setdefault((phase, pred), []).append(args)
    complete = set()
    for key, pairs in groups.items():
        support = {a for pair in pairs for a in pair}
        if (len(support) >= 2 and all(a != b for a, b in pairs)
                and len(set(pairs)) == len(support) * (len(support) - 1)):
            complete.add(key)
    if not complete:
        return facts
    out = [f for f in facts if (f[0], f[1]) not in complete or len(f[2]) != 2]
    for phase, pred in sorted(complete):
        support = sorted({a for pair in groups[(phase, pred)] for a in pair})
        out += [(phase, f"{pred}*all-pairs", (a,)) for a in support]
    return out


def _component_form(n: int, facts: list[Fact], name: str) -> tuple[Fact, ...]:
    """The smallest sorted fact list over the leaves of the individualisation-refinement tree."""
    incidences: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for f, (_ph, _pr, args) in enumerate(facts):
        for pos, a in enumerate(args):
            incidences[a].append((f, pos))
    twin = _exchangeable_classes(n, facts, incidences)

    def refine(colours: list[int]) -> list[int]:
        count = len(set(colours))
        while True:
            fact_colours = [tuple(colours[a] for a in args) for _ph, _pr, args in facts]
            signatures = [
                (colours[u], tuple(sorted((facts[f][0], facts[f][1], pos, fact_colours[f])
                                          for f, pos in incidences[u])))
                for u in range(n)
            ]
            ranks = {s: r for r, s in enumerate(sorted(set(signatures)))}
            colours = [ranks[s] for s in signatures]
            if len(ranks) == count:
                return colours
            count = len(ranks)

    def individualise(colours: list[int], chosen: Sequence[int]) -> list[int]:
        order = {u: k for k, u in enumerate(chosen)}
        keys = [(c, order.get(u, len(chosen))) for u, c in enumerate(colours)]
        ranks = {k: r for r, k in enumerate(sorted(set(keys)))}
        return [ranks[k] for k in keys]

    best: tuple[Fact, ...] | None = None
    leaves = 0

    def search(colours: list[int]) -> None:
        nonlocal best, leaves
        cells: dict[int, list[int]] = {}
        for u, c in enumerate(colours):
            cells.setdefault(c, []).append(u)
        open_cells = [(len(us), c) for c, us in cells.items() if len(us) > 1]
        if not open_cells:
            leaves += 1
            if leaves > MAX_LEAVES:
                raise InstanceKeyError(f"problem {name}: more than {MAX_LEAVES} leaves in the canonical-form search "
                                       "(too symmetric to key)")
            form = tuple(sorted((ph, pr, tuple(colours[a] for a in args)) for ph, pr, args in facts))
            if best is None or form < best:
                best = form
            return
        _size, target = min(open_cells)
        cell = cells[target]
        classes = {twin[u] for u in cell}
        if len(classes) == 1:
            # All exchangeable with each other: every order of individualising them gives the same leaves.
            search(refine(individualise(colours, cell)))
            return
        tried = set()
        for u in cell:
            if twin[u] in tried:
                continue
            tried.add(twin[u])
            search(refine(individualise(colours, [u])))

    search(refine([0] * n))
    assert best is not None
    return best


def _exchangeable_classes(n: int, facts: list[Fact], incidences: list[list[tuple[int, int]]]) -> list[int]:
    """For each object, the smallest object it can be exchanged with by a renaming that maps the facts onto
    themselves, found as equal neighbourhoods: the facts of u with u written as -1. Equal neighbourhoods never
    mention each other's object (u's never contains u), so swapping u and v maps u's facts onto v's and back."""
    groups: dict[tuple, int] = {}
    out = []
    for u in range(n):
        hood = tuple(sorted((facts[f][0], facts[f][1], tuple(-1 if a == u else a for a in facts[f][2]))
                            for f, _pos in incidences[u]))
        out.append(groups.setdefault(hood, u))
    return out


# ---------------------------------------------------------------------------------------------------------------
# Counting duplicates in a dataset root



@dataclass
class SplitDuplicates:
    """Duplicates of one split: instances repeating an earlier instance of the same split, instances equal to a
    train instance, and instances equal to an instance of any earlier split (train included)."""

    instances: int = 0
    within: int = 0
    in_train: int = 0
    in_earlier: int = 0
    within_examples: list[str] = field(default_factory=list)  # "file repeats file", the first few
    earlier_examples: list[str] = field(default_factory=list)


def domain_duplicates(
    keys_by_split: Mapping[str, Sequence[tuple[str, str]]], max_examples: int = 3
) -> dict[str, SplitDuplicates]:
    """Count duplicates per split from ``{split: [(problem file, key), ...]}`` (files as they should be named in
    messages). "Earlier" splits are those a split is kept disjoint from (:data:`tnlib.data.schema.DISJOINT_FROM`;
    for a split it does not name, every split before it)."""
    report: dict[str, SplitDuplicates] = {}
    first_of: dict[str, dict[str, str]] = {}  # split -> key -> its first problem file there
    train = {key: path for path, key in keys_by_split.get("train", ())}
    for split in [s for s in ALL_SPLITS if s in keys_by_split] + [s for s in keys_by_split if s not in ALL_SPLITS]:
        earlier: dict[str, str] = {}
        for other in DISJOINT_FROM.get(split, tuple(first_of)):
            for key, path in first_of.get(other, {}).items():
                earlier.setdefault(key, path)
        counts = SplitDuplicates()
        seen: dict[str, str] = {}
        for path, key in keys_by_split[split]:
            counts.instances += 1
            first = seen.setdefault(key, path)
            if first != path:
                counts.within += 1
                if len(counts.within_examples) < max_examples:
                    counts.within_examples.append(f"{path} repeats {first}")
            if split != "train" and key in train:
                counts.in_train += 1
            if key in earlier:
                counts.in_earlier += 1
                if len(counts.earlier_examples) < max_examples:
                    counts.earlier_examples.append(f"{path} repeats {earlier[key]}")
        first_of[split] = seen
        report[split] = counts
    return report


def problem_keys(root: str | os.PathLike, manifest: dict, split: str, key: Callable = instance_key,
                 stored: bool = True) -> list[tuple[str, str]]:
    """(problem file, key) per instance of a split, in manifest order: the key stored in the manifest when
    ``stored`` and present, else computed from the problem file."""
    root = Path(root)
    out = []
    for inst in manifest["splits"][split]["instances"]:
        value = inst.get("instance_key") if stored and key is instance_key else None
        if value is None:
            value = key(root / inst["problem"])
        out.append((inst["problem"], value))
    return out


def check_domain_instances(
    root: str | os.PathLike,
    domain: str,
    manifest: dict,
    split: str | None = None,
    recompute: bool = False,
    hint: Callable[[str], str] | None = None,
) -> tuple[list[str], dict[str, SplitDuplicates]]:
    """The duplicate rule's verdict on one domain of a dataset root: (problems, counts per split).

    ``split``: check only that split, against itself and the earlier splits. ``recompute``: key every problem
    file and compare with the manifest's ``instance_key`` (else the stored keys are used; manifests without them
    are keyed from their files). ``hint(split)``: the command that remakes a split, for
    the messages. Missing problem files are left to the checksum check.
    """
    root = Path(root)
    splits = manifest.get("splits", {})
    order = [s for s in ALL_SPLITS if s in splits]
    if split is not None:
        order = [s for s in order if s in DISJOINT_FROM.get(split, ()) or s == split]
    problems: list[str] = []
    keys_by_split: dict[str, list[tuple[str, str]]] = {}
    for s in order:
        pairs = []
        for inst in splits[s].get("instances", []):
            relative, stored = inst["problem"], inst.get("instance_key")
            key = stored
            if recompute or stored is None:
                path = root / relative
                if not path.is_file():
                    continue
                try:
                    key = instance_key(path)
                except InstanceKeyError as err:
                    problems.append(f"{relative}: cannot compute its instance key ({err})")
                    continue
                if stored is not None and stored != key:
                    problems.append(f"{relative}: the manifest's instance_key differs from the problem file's "
                                    "(manifest edited, or keyed by another scheme)")
            pairs.append((relative, key))
        keys_by_split[s] = pairs
    counts = domain_duplicates(keys_by_split)
    for s, d in counts.items():
        if split is not None and s != split:
            continue
        fix = f"; regenerate with {hint(s)}" if hint else ""
        if d.within:
            problems.append(f"{domain}/{s}: {d.within} of {d.instances} instances repeat another instance of the "
                            f"split (same initial state and goal up to renaming objects), e.g. "
                            f"{'; '.join(d.within_examples)}{fix}")
        if d.in_earlier:
            problems.append(f"{domain}/{s}: {d.in_earlier} of {d.instances} instances also occur in an earlier split "
                            f"({d.in_train} in train), e.g. {'; '.join(d.earlier_examples)}{fix}")
    return problems, counts


def keys_fingerprint(keys: Iterable[str]) -> str:
    """sha256 of a split's sorted instance keys: what a later split records as the set it is disjoint from."""
    return hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()


__all__ = [
    "INSTANCE_KEY_SCHEME",
    "InstanceKeyError",
    "MAX_LEAVES",
    "ProblemAtoms",
    "SplitDuplicates",
    "canonical_form",
    "check_domain_instances",
    "domain_duplicates",
    "exact_key",
    "instance_key",
    "keys_fingerprint",
    "problem_from_text",
    "problem_keys",
    "state_goal_key",
    "state_goal_signature",
]
