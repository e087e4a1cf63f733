"""Files that survive crashes: atomic writes, append-only JSON lines, checksums.

An atomic write goes to a temporary file in the target's folder, is flushed to disk, then renamed over the target
(``os.replace``), so a reader -- or a run resumed after a crash, even SIGKILL -- sees the old file or the new one,
never a part. A JSON-lines file is appended one fsynced line at a time; a line cut by a crash is skipped on
reading, so an interrupted run loses at most the record it was writing.
"""
from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Any, Iterator, NamedTuple

from tnlib.errors import DamagedFile


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (creating its folder); the file is readable by all (0644)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:  # name the file the caller asked for, not the temporary one beside it
        raise OSError(err.errno, f"cannot write it ({err.strerror or err})", str(path)) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; reports and datasets are shared files
        os.replace(tmp, path)
    except BaseException as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(err, OSError):  # a full disk, a folder in the way: name the file asked for, not the temporary
            raise OSError(err.errno, f"cannot write it ({err.strerror or err})", str(path)) from None
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any, indent: int = 1) -> None:
    atomic_write_text(path, json.dumps(obj, indent=indent) + "\n")


def json_one_record_a_line(value: Any) -> str:
    """``value`` as JSON text with each record on a line of its own: an object's members one to a line (an object
    within one likewise, indented a space a level), a list that holds objects or lists one element to a line, each
    element written whole and compactly, and a list of plain values on one line. A file of many records (a
    dataset manifest: instance records, file checksums, grid cells) thus changes by whole lines in a diff, as with
    ``indent``, at a fraction of the bytes: indenting every value of a record puts each on a line of its own."""
    return _record_lines(value, "")


def _record_lines(value: Any, pad: str) -> str:
    inner = pad + " "
    if isinstance(value, dict) and value:
        members = (f"{inner}{_member_name(key)}: {_record_lines(item, inner)}" for key, item in value.items())
        return "{\n" + ",\n".join(members) + f"\n{pad}}}"
    if isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
        return "[\n" + ",\n".join(inner + json.dumps(item, separators=(",", ":")) for item in value) + f"\n{pad}]"
    return json.dumps(value, separators=(",", ":"))


def _member_name(key: Any) -> str:
    """An object's key as :func:`json.dumps` writes it: a number, boolean or null key as the string of its JSON."""
    return json.dumps(key if isinstance(key, str) else json.dumps(key))


def atomic_write_json_records(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` atomically as :func:`json_one_record_a_line` writes it."""
    atomic_write_text(path, json_one_record_a_line(obj) + "\n")


def read_json(path: str | os.PathLike, remedy: str = "", shape: str | None = None) -> Any:
    """The JSON value in ``path``; a :class:`DamagedFile` naming the file (and ``remedy``, what to do) when it is not
    JSON any more -- cut short or changed after tnlib wrote it -- or, with ``shape`` (a kind of record of
    :data:`RECORD_SHAPES`), when it is JSON of another shape."""
    try:
        with open(path, encoding="utf-8") as fh:
            value = json.load(fh)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        reason = f"not valid JSON ({_reason(err)})"
        raise DamagedFile(damaged_message(path, reason, remedy), path, reason) from None
    if shape is not None:
        check_shape(value, shape, path, remedy)
    return value


# What each kind of JSON record tnlib writes and reads back holds: the keys its readers index, and the JSON type of
# each ("... or null": null too). A record may hold more keys. One that parses but is of another shape -- edited by
# hand, a line appended by another program, a file of another kind copied over it -- is damaged as one cut short
# is, and its readers name it so instead of failing on a key deep in the code that reads it.
RECORD_SHAPES: dict[str, dict[str, str]] = {
    # a run folder's config.json (tnlib.learning.training.TrainConfig.to_dict)
    "a run's configuration": {"domain": "text", "model": "text", "distribution": "text", "sigma": "text",
                              "residual": "text", "lower_bound": "text", "seed": "a whole number"},
    # a run folder's metrics-SPLIT.json (tnlib.learning.evaluation.evaluate_run)
    "a run's test metrics": {"domain": "text", "model": "text", "distribution": "text", "sigma": "text",
                             "residual": "text", "lower_bound": "text", "mse": "a number", "nll": "a number"},
    # a line of a planning-*.jsonl or baseline-*.jsonl file (tnlib.learning.split_planning.plan_problem)
    "a planning record": {"problem": "text", "protocol": "text", "solved": "true or false",
                          "evaluations": "a whole number"},
    # an attempt file of an unfinished generation (tnlib.data.attempt_solving.run_attempt); a solved one holds its
    # plan and labels too
    "a generation attempt": {"seed": "a whole number", "attempt": "a whole number", "status": "text",
                             "worker_seconds": "a number"},
    "a solved generation attempt": {"plan": "a list", "plan_length": "a whole number", "solve_seconds": "a number",
                                    "expansions": "a whole number or null", "solve_reused": "true or false",
                                    "label_seconds": "a number", "label_h_sat_seconds": "a number",
                                    "records": "a list"},
}
# The Python types of the JSON types above. JSON's true and false are Python bools, which are ints too: a whole
# number or a number is never one.
_JSON_TYPES: dict[str, tuple[type, ...]] = {"text": (str,), "a whole number": (int,), "a number": (int, float),
                                            "true or false": (bool,), "a list": (list,), "an object": (dict,)}


def check_shape(value: Any, kind: str, path: str | os.PathLike, remedy: str = "") -> None:
    """A :class:`DamagedFile` naming ``path`` (and ``remedy``) unless ``value``, read from it, is a record of
    ``kind`` (:data:`RECORD_SHAPES`)."""
    problem = _shape_problem(value, kind)
    if problem is not None:
        reason = f"it is {problem}"
        raise DamagedFile(damaged_message(path, reason, remedy), path, reason)


def has_shape(value: Any, kind: str) -> bool:
    """Whether ``value`` is a record of ``kind`` (:data:`RECORD_SHAPES`)."""
    return _shape_problem(value, kind) is None


def _shape_problem(value: Any, kind: str) -> str | None:
    """Why ``value`` is not a record of ``kind``, as "not ...", or None when it is one."""
    if not isinstance(value, dict):
        return f"not {kind} (a JSON object) but {_shown_json(value)}"
    for key, expected in RECORD_SHAPES[kind].items():
        if key not in value:
            return f"not {kind}: it has no {key!r}"
        found = value[key]
        types = _JSON_TYPES[expected.removesuffix(" or null")]
        if not ((found is None and expected.endswith(" or null"))
                or (isinstance(found, types) and (bool in types or not isinstance(found, bool)))):
            return f"not {kind}: its {key!r} is {_shown_json(found)}, not {expected}"
    return None


def _shown_json(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def damaged_message(path: str | os.PathLike, reason: str, remedy: str = "") -> str:
    """One line for a damaged file: which, why, and what to do."""
    return f"{shown_path(path)} is damaged: {reason}; " + (remedy or "restore it from a copy, or delete it and "
                                                            "rerun the command that made it")


def _reason(err: Exception) -> str:
    if isinstance(err, json.JSONDecodeError):
        return f"{err.msg}, line {err.lineno} column {err.colno}"
    return str(err)


def append_jsonl(path: str | os.PathLike, record: dict) -> None:
    """Append one JSON line, flushed and fsynced; after a line torn by a crash, start on a new line."""
    path = Path(path)
    torn = False
    if path.is_file() and path.stat().st_size:
        with path.open("rb") as f:  # its last byte only: curves and planning records grow with every append
            f.seek(-1, os.SEEK_END)
            torn = f.read(1) != b"\n"
    with path.open("a") as f:
        # the torn line stays unparseable and read_jsonl skips it
        f.write(("\n" if torn else "") + json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


# A file whose name ends so is gzip-compressed: committed records (tnlib export-records) and the problem files of
# the dataset cells stored compressed (tnlib.data.profiles.SplitGrid.compressed) are; a file a run appends to
# never is.
COMPRESSED_SUFFIX = ".gz"
# The level every compressed file tnlib writes is made at: with no name and no time in the header, the same bytes
# compress to the same file, so a rewrite leaves git and the manifests' checksums unchanged.
GZIP_LEVEL = 9


class JsonLines(NamedTuple):
    """A JSON-lines file as :func:`read_json_lines` reads it: its records, and the lines it skipped."""

    records: list[dict]
    unreadable: tuple[int, ...]  # the numbers (from 1) of the lines that are not JSON
    lines: int  # how many lines the file holds
    cut_end: bool  # its last line is one of them and has no newline: a write stopped mid-line (or a copy cut short)

    def damage(self) -> str | None:
        """What is unreadable, as a reason for :func:`damaged_message`; None when every line reads."""
        if not self.unreadable:
            return None
        middle = [n for n in self.unreadable if not (self.cut_end and n == self.lines)]
        parts = []
        if middle:
            numbers = ", ".join(map(str, middle))
            parts.append(f"line {numbers} of {self.lines} is not JSON" if len(middle) == 1 else
                         f"lines {numbers} of {self.lines} are not JSON")
        if self.cut_end:
            parts.append(f"its last line ({self.lines}) is cut short")
        return " and ".join(parts)


def read_jsonl(path: str | os.PathLike, shape: str | None = None, remedy: str = "") -> list[dict]:
    """The records of a JSON-lines file: :func:`read_json_lines`'s, without what it skipped. For a reader whose
    caller names the damage (a resume rewrites the file, a report lists it in its header)."""
    return read_json_lines(path, shape, remedy).records


def read_json_lines(path: str | os.PathLike, shape: str | None = None, remedy: str = "") -> JsonLines:
    """The records of a JSON-lines file (none when it does not exist), skipping lines cut by a crash or damaged
    since (not UTF-8, not JSON) and counting them: each record stands alone, what writes these files redoes a
    missing one, and what reads them says what it skipped. A ``.gz`` file (exported records, written whole) is read
    through gzip and whole or not at all: a damaged one raises DamagedFile. With ``shape`` (a kind of record of
    :data:`RECORD_SHAPES`), a line that is JSON of another shape raises DamagedFile naming the file, the line and
    ``remedy``: no crash leaves one, so it is not skipped."""
    path = Path(path)
    if not path.is_file():
        return JsonLines([], (), 0, False)
    data = path.read_bytes()
    if path.suffix == COMPRESSED_SUFFIX:
        data = _gunzipped(path, data)
    records, unreadable = [], []
    lines = data.splitlines()
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            if line.strip():  # (a blank line holds no record to lose)
                unreadable.append(number)
            continue
        if shape is not None:
            reason = _shape_problem(record, shape)
            if reason is not None:
                reason = f"line {number} is {reason}"
                raise DamagedFile(damaged_message(path, reason, remedy), path, reason)
        records.append(record)
    cut_end = bool(unreadable) and unreadable[-1] == len(lines) and not data.endswith(b"\n")
    return JsonLines(records, tuple(unreadable), len(lines), cut_end)


def _gunzipped(path: Path, data: bytes) -> bytes:
    return gunzipped(path, data, "restore it from git, or export the records again (tnlib export-records)")


def gunzipped(path: str | os.PathLike, data: bytes, remedy: str = "") -> bytes:
    """The bytes the gzip file ``path`` holds (``data``, its bytes), checked against its checksum; a damaged one
    raises DamagedFile naming the file and ``remedy``. Unlike a plain file's lines, nothing before the damage can
    be trusted: deflate decodes changed bytes into other lines that may still parse, and only the checksum at the
    end tells."""
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as err:
        reason = "its gzip stream is cut short" if isinstance(err, EOFError) else f"not a whole gzip stream ({err})"
        raise DamagedFile(damaged_message(path, reason, remedy), path, reason) from None


def gzip_bytes(data: bytes) -> bytes:
    """``data`` gzip-compressed, reproducibly: level :data:`GZIP_LEVEL`, no file name and time 0 in the header, so
    the same bytes always give the same file (with the same zlib)."""
    return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)


def atomic_write_gzip(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` gzip-compressed to ``path``, atomically and reproducibly (:func:`gzip_bytes`), so a repeated
    export leaves git unchanged."""
    atomic_write_bytes(path, gzip_bytes(data))


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# The repository (or install) root: what printed paths are shown relative to.
REPO_ROOT = Path(__file__).resolve().parents[1]


def _in_repository(path: Path) -> str | None:
    """``path`` relative to the repository root (POSIX), or None outside it."""
    try:
        return path.resolve().relative_to(REPO_ROOT).as_posix() or "."
    except ValueError:
        return None


def shown_path(path: str | os.PathLike) -> str:
    """``path`` as output (banners, notebook prints, reports) shows it: relative to the repository root when it
    lies inside it, so a rendered report names ``data/small``, not the folder of the machine it ran on; other
    paths as given."""
    inside = _in_repository(Path(path))
    return str(path) if inside is None else inside


def shown_folder(path: str | os.PathLike) -> str:
    """A results folder as a report names it: its path in the repository (``reports/paper-scale/runs``, not three
    folders all called ``runs``), or outside the repository only its name -- a committed report does not carry
    the folders of the machine that rendered it."""
    inside = _in_repository(Path(path))
    return Path(path).name if inside is None else inside


def try_lock(path: str | os.PathLike) -> int | None:
    """Take an exclusive advisory lock on ``path`` (created if missing) without waiting: the open descriptor that
    holds it (pass it to :func:`unlock`), or None when another process holds it."""
    import fcntl

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def unlock(fd: int) -> None:
    """Release a lock taken with :func:`try_lock`."""
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


@contextlib.contextmanager
def locked(path: str | os.PathLike, waiting: str | None = None) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``path`` (created if missing) for the ``with`` block: several processes
    (`generate` runs, `data train-pairs`) may update one dataset's manifests. ``waiting``: a line printed to stderr
    when another process holds the lock, before waiting for it (a wait of hours should not look like a hang)."""
    import fcntl

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting:
                print(waiting, file=sys.stderr, flush=True)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextlib.contextmanager
def locked_if_free(path: str | os.PathLike) -> Iterator[bool]:
    """:func:`try_lock` for a ``with`` block: yields True holding the lock when no other process holds it, else False
    at once, holding nothing -- a sweep then does the runs nobody is working on first and comes back to this one."""
    fd = try_lock(path)
    if fd is None:
        yield False
        return
    try:
        yield True
    finally:
        unlock(fd)
