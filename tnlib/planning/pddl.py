"""PDDL files: where a domain file is, and reading domains, problems and atoms with pyperplan's parser.

Every part of tnlib that reads PDDL goes through here: :func:`read_pddl_text` reads a file's text, plain or
gzip-compressed (a name ending ``.gz``: the problem files of the dataset cells stored compressed), and what needs a
plain file (Fast Downward) writes that text out; :func:`pddl_file_bytes` makes a file's bytes, reproducibly.
:func:`parse_domain` and :func:`parse_problem` turn a malformed, unreadable or mismatched file into one
:class:`TaskError` line that names it (pyperplan itself raises anything, even SystemExit), :func:`problem_atoms`
lists a problem's initial and goal atoms, and :func:`parse_atom` splits an atom string. :func:`problem_sections`
reads a STRIPS problem's objects and atoms from its text alone, without the domain, for what must handle thousands
of problems quickly and needs nothing else (instance keys).
Grounding and compiling to arrays are :mod:`tnlib.planning.task`'s.
"""
from __future__ import annotations

import contextlib
import functools
import io
import logging
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

from tnlib.errors import DamagedFile, TaskError
from tnlib.files import COMPRESSED_SUFFIX, gunzipped, gzip_bytes

# pyperplan implements STRIPS with types; anything else it would misread or reject deep inside the parser.
SUPPORTED_REQUIREMENTS = frozenset({"strips", "typing"})

DOMAINS_DIR = Path(__file__).resolve().parent / "domains"


def shipped_domains() -> list[str]:
    """Keys of the domains shipped in ``tnlib/planning/domains`` (e.g. ``blocksworld``)."""
    return sorted(p.parent.name for p in DOMAINS_DIR.glob("*/domain.pddl"))


def resolve_domain(name_or_path: str | os.PathLike) -> Path:
    """Return the domain file for a shipped domain key (``blocksworld``, ...) or an existing path.

    A path that exists wins over a key of the same name. Raises :class:`TaskError` for neither.
    """
    path = Path(name_or_path)
    if path.is_file():
        return path
    if path.is_dir() and (path / "domain.pddl").is_file():
        return path / "domain.pddl"
    key = str(name_or_path)
    shipped = DOMAINS_DIR / key / "domain.pddl"
    if os.sep not in key and shipped.is_file():
        return shipped
    raise TaskError(
        f"{key}: no such domain file and not a shipped domain (shipped: {', '.join(shipped_domains())})"
    )


@contextmanager
def quiet_pyperplan() -> Iterator[None]:
    """Silence pyperplan's root-logger messages without configuring logging for the user.

    ``logging.info`` on an unconfigured root logger calls ``basicConfig`` (installing a stderr handler for the
    whole process); a temporary NullHandler prevents that, and ``logging.disable`` drops the records.
    """
    root = logging.getLogger()
    guard = logging.NullHandler()
    root.addHandler(guard)
    previous = root.manager.disable
    logging.disable(logging.INFO)
    try:
        yield
    finally:
        logging.disable(previous)
        root.removeHandler(guard)


def is_compressed(path: str | os.PathLike) -> bool:
    """Whether a PDDL file is stored gzip-compressed (its name ends ``.gz``)."""
    return str(path).endswith(COMPRESSED_SUFFIX)


def read_pddl_text(path: str | os.PathLike) -> str:
    """The PDDL text of a file, plain or gzip-compressed (:func:`is_compressed`). OSError where it cannot be read;
    :class:`DamagedFile` where a compressed one is not a whole gzip stream; UnicodeDecodeError where it is not
    UTF-8."""
    path = Path(path)
    if not is_compressed(path):
        return path.read_text(encoding="utf-8")
    return gunzipped(path, path.read_bytes(), "restore it from git, or remake it (tnlib data verify names the "
                                              "command)").decode("utf-8")


def pddl_stem(path: str | os.PathLike) -> str:
    """A PDDL file's name without its suffixes: ``NAME`` of ``NAME.pddl`` and of ``NAME.pddl.gz`` alike."""
    name = Path(path).name.removesuffix(COMPRESSED_SUFFIX)
    return name.removesuffix(".pddl") if name.endswith(".pddl") else Path(name).stem


def pddl_file_bytes(text: str, compressed: bool) -> bytes:
    """The bytes of a PDDL file holding ``text``: UTF-8, gzip-compressed when ``compressed`` -- reproducibly
    (:func:`tnlib.files.gzip_bytes`: the same text always gives the same file, so its checksum is stable)."""
    data = text.encode("utf-8")
    return gzip_bytes(data) if compressed else data


def _uncommented_lines(path: Path) -> list[str] | None:
    """The file's lines without their ``;`` comments, None where it cannot be read as text (named elsewhere)."""
    with contextlib.suppress(OSError, UnicodeDecodeError, DamagedFile):
        return [line.split(";", 1)[0] for line in read_pddl_text(path).splitlines()]
    return None


def _read_for_parser(path: Path, what: str):
    """A file's text as the line iterator pyperplan's parser reads; a TaskError naming it where it cannot be read."""
    try:
        return io.StringIO(read_pddl_text(path))
    except OSError as err:
        raise TaskError(f"{path}: cannot read {what} file ({err.strerror or err})") from None
    except DamagedFile as err:
        raise TaskError(f"{path}: cannot read {what} file ({err.reason})") from None
    except UnicodeDecodeError as err:
        raise TaskError(_malformed(path, what, err)) from None


def _malformed(path: Path, what: str, err: BaseException) -> str:
    """The message for a file pyperplan's parser rejects, with what the file's text tells of the cause. Its lexer
    raises a bare StopIteration when the tokens run out: for a file with no PDDL at all, say it is empty."""
    lines = _uncommented_lines(path)
    if isinstance(err, StopIteration):
        if lines is not None and not any(line.strip() for line in lines):
            return f"{path}: the {what} file is empty (no PDDL in it)"
        return f"{path}: malformed PDDL {what}: it ends before the definition is complete{_what_is_missing(lines, what)}"
    return (f"{path}: malformed PDDL {what}: {describe_pyperplan_error(err)}{_early_close_hint(lines)}"
            f"{_other_kind_hint(lines, what)}")


def _early_close_hint(lines: list[str] | None) -> str:
    """Where the definition's parentheses close before the file's text ends -- a ``)`` too many, the usual cause
    of the parser's "Unexpected token" -- by line; empty where they do not."""
    depth, closed_at = 0, None
    for number, line in enumerate(lines or (), 1):
        for column, char in enumerate(line):
            if closed_at is not None and not char.isspace():
                return (f" (the definition's parentheses close at line {closed_at[0]}, column {closed_at[1]}, and "
                        "text follows: a ')' too many before it?)")
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0 and char == ")":
                closed_at = (number, column + 1)
    return ""


def _other_kind_hint(lines: list[str] | None, what: str) -> str:
    """A hint where the file is the other kind of definition -- a problem given as the domain or the other way
    round, the commands' two arguments swapped."""
    other = {"domain": "problem", "problem": "domain"}[what]
    if lines is not None and re.search(rf"\(\s*define\s*\(\s*{other}\b", " ".join(lines).lower()):
        return f" -- it is a {other} file: the domain comes first, then the problem (DOMAIN PROBLEM)"
    return ""


# The sections every problem definition needs, which the parser expects in this order.
REQUIRED_PROBLEM_SECTIONS = (":init", ":goal")


def _what_is_missing(lines: list[str] | None, what: str) -> str:
    """Why a definition ended early, where the text tells: parentheses left open, or (all closed) a problem without a
    required section."""
    if lines is None:
        return ""
    text = "\n".join(lines).lower()
    unclosed = text.count("(") - text.count(")")
    if unclosed > 0:
        return f" ({unclosed} parenthes{'is' if unclosed == 1 else 'es'} left open)"
    missing = [section for section in REQUIRED_PROBLEM_SECTIONS if section not in text] if what == "problem" else []
    return f" (it has no {' and no '.join(f'({s} ...)' for s in missing)} section)" if missing else ""


def describe_pyperplan_error(err: BaseException) -> str:
    if isinstance(err, SystemExit):
        return f"the parser gave up (exit status {err.code})"
    text = str(err).strip() or type(err).__name__
    return text


def parse_domain(domain_file: Path):
    from pyperplan.pddl import parser as pp

    text = _read_for_parser(domain_file, "domain")
    try:
        ast = pp.parse_domain_def(pp.parse_lisp_iterator(text))
    except (Exception, SystemExit) as err:  # noqa: BLE001 - pyperplan raises anything, even SystemExit
        raise TaskError(_malformed(domain_file, "domain", err)) from None
    if ast.requirements is not None:
        unknown = sorted(k.name for k in ast.requirements.keywords if k.name not in SUPPORTED_REQUIREMENTS)
        if unknown:
            raise TaskError(
                f"{domain_file}: unsupported requirement(s) {', '.join(':' + r for r in unknown)}"
                f" (supported: {', '.join(':' + r for r in sorted(SUPPORTED_REQUIREMENTS))})"
            )
    try:
        visitor = pp.TraversePDDLDomain()
        ast.accept(visitor)
        return visitor.domain
    except (Exception, SystemExit) as err:  # noqa: BLE001
        raise TaskError(f"{domain_file}: invalid PDDL domain: {describe_pyperplan_error(err)}") from None


def parse_problem(problem_file: Path, domain):
    from pyperplan.pddl import parser as pp

    text = _read_for_parser(problem_file, "problem")
    try:
        ast = pp.parse_problem_def(pp.parse_lisp_iterator(text))
    except (Exception, SystemExit) as err:  # noqa: BLE001
        raise TaskError(_malformed(problem_file, "problem", err)) from None
    if ast.domainName != domain.name:
        raise TaskError(
            f"{problem_file}: problem is for domain '{ast.domainName}' but the domain file defines '{domain.name}'"
        )
    try:
        visitor = pp.TraversePDDLProblem(domain)
        ast.accept(visitor)
        problem = visitor.get_problem()
    except (Exception, SystemExit) as err:  # noqa: BLE001
        raise TaskError(f"{problem_file}: problem does not match its domain: {describe_pyperplan_error(err)}") from None
    _check_problem_atoms(problem_file, problem)
    return problem


def _check_problem_atoms(problem_file: Path, problem) -> None:
    """Checks pyperplan skips: init predicates and arities, goal objects."""
    domain = problem.domain
    known_objects = set(problem.objects) | set(domain.constants)
    for section, atoms in (("init", problem.initial_state), ("goal", problem.goal)):
        for atom in atoms:
            predicate = domain.predicates.get(atom.name)
            if predicate is None:
                raise TaskError(f"{problem_file}: undeclared predicate '{atom.name}' in {section}")
            if len(atom.signature) != len(predicate.signature):
                raise TaskError(
                    f"{problem_file}: predicate '{atom.name}' takes {len(predicate.signature)} argument(s),"
                    f" {len(atom.signature)} given in {section}"
                )
            for obj, _types in atom.signature:
                if obj not in known_objects:
                    raise TaskError(f"{problem_file}: undeclared object '{obj}' in {section} atom '{atom.name}'")


# cached: encoding a dataset parses the same atoms in state after state (2.5 million calls for the test splits of
# nlm5's calibration, 9% of that report's time), and a domain's instances name few distinct atoms (object names
# repeat from instance to instance); bounded all the same
@functools.lru_cache(maxsize=1 << 16)
def parse_atom(atom: str) -> tuple[str, tuple[str, ...]]:
    """``"(on b1 b2)" -> ("on", ("b1", "b2"))`` (case-insensitive, any whitespace)."""
    parts = atom.strip().lower().strip("()").split()
    if not parts:
        raise ValueError(f"malformed atom {atom!r}")
    return parts[0], tuple(parts[1:])


def format_atom(name: str, args: Sequence[str]) -> str:
    """``("on", ("b1", "b2")) -> "(on b1 b2)"``, lower case: the form datasets and models store atoms in."""
    return "(" + " ".join([name, *args]).lower() + ")"


def problem_atoms(domain_file: str | os.PathLike, problem_file: str | os.PathLike) -> tuple[list[str], list[str]]:
    """The problem's initial and goal atoms as lower-case ``(pred arg ...)`` strings, sorted (statics included).
    ``domain_file`` may be a shipped domain key."""
    with quiet_pyperplan():
        problem = parse_problem(Path(problem_file), parse_domain(resolve_domain(domain_file)))
    init = sorted({format_atom(a.name, [obj for obj, _types in a.signature]) for a in problem.initial_state})
    goal = sorted({format_atom(a.name, [obj for obj, _types in a.signature]) for a in problem.goal})
    return init, goal


# ---------------------------------------------------------------------------------------------------------------
# A STRIPS problem's objects and atoms from its text alone (no domain, no pyperplan)

_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_NOT_ATOMS = ("not", "and", "or", "=", "forall", "exists", "imply", "when")


def _sexpr(text: str) -> list:
    """The text's one parenthesised form as nested lists of lower-case tokens, comments dropped."""
    text = re.sub(r";[^\n]*", " ", text).lower()
    stack: list[list] = [[]]
    for token in _TOKEN.findall(text):
        if token == "(":
            stack.append([])
        elif token == ")":
            if len(stack) == 1:
                raise TaskError("unbalanced parentheses: one ')' too many")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(token)
    if len(stack) != 1 or len(stack[0]) != 1 or not isinstance(stack[0][0], list):
        raise TaskError("not one parenthesised (define ...) form")
    return stack[0][0]


def _shown_expr(expr) -> str:
    if isinstance(expr, str):
        return expr
    return "(" + " ".join(_shown_expr(x) for x in expr) + ")"


def _atom_of(expr, where: str) -> tuple[str, ...]:
    if isinstance(expr, list) and expr and expr[0] in _NOT_ATOMS:
        raise TaskError(f"{where}: only positive atoms are supported, got {_shown_expr(expr)}")
    if not isinstance(expr, list) or not expr or not all(isinstance(x, str) for x in expr):
        raise TaskError(f"{where}: expected an atom (pred arg ...), got {_shown_expr(expr)}")
    return tuple(expr)


def problem_sections(text: str) -> tuple[str, list[str], list[str], frozenset, frozenset]:
    """(name, objects, their types, initial atoms, goal atoms) of a STRIPS problem's text, lower case, an atom a
    tuple ``(predicate, arg, ...)``, an untyped object's type ``object``; the goal is one atom or an ``and`` of
    atoms. A :class:`TaskError` says what is malformed (the caller names the file)."""
    form = _sexpr(text)
    if not form or form[0] != "define":
        raise TaskError("a problem file starts with (define (problem NAME) ...)")
    name, objects, types, init, goal = None, [], [], None, None
    for part in form[1:]:
        if not isinstance(part, list) or not part:
            continue
        head = part[0]
        if head == "problem" and len(part) == 2:
            name = part[1]
        elif head == ":objects":
            pending: list[str] = []
            items = part[1:]
            i = 0
            while i < len(items):
                if items[i] == "-":
                    if i + 1 >= len(items) or not isinstance(items[i + 1], str):
                        raise TaskError(":objects: '-' must be followed by a type name")
                    objects += pending
                    types += [items[i + 1]] * len(pending)
                    pending = []
                    i += 2
                else:
                    pending.append(items[i])
                    i += 1
            objects += pending
            types += ["object"] * len(pending)
        elif head == ":init":
            init = frozenset(_atom_of(a, ":init") for a in part[1:])
        elif head == ":goal":
            if len(part) != 2:
                raise TaskError(":goal takes one formula")
            body = part[1]
            atoms = body[1:] if isinstance(body, list) and body and body[0] == "and" else [body]
            goal = frozenset(_atom_of(a, ":goal") for a in atoms)
    if name is None or init is None or goal is None:
        missing = [w for w, v in (("(problem NAME)", name), (":init", init), (":goal", goal)) if v is None]
        raise TaskError(f"problem without {', '.join(missing)}")
    if len(set(objects)) != len(objects):
        raise TaskError(f"problem {name}: an object is declared twice")
    return name, objects, types, init, goal
