"""Command-line flags generated from a configuration dataclass, so a new config field gets its flag for free.

Each field becomes ``--field-name`` (underscores as dashes; ``flags`` renames some) with the field's default:
``int`` / ``float`` / ``str`` fields (``None`` allowed) take one value of that type (an ``int | None`` field
also ``all`` or ``none`` for None), sequences take one or more
(``nargs="+"``; pairs such as ``("learn", "ff")`` are written ``learn/ff``), a ``bool`` gets both
``--field-name`` and ``--no-field-name`` (argparse's BooleanOptionalAction), and a ``dict`` field takes repeated
``KEY=VALUE`` (VALUE read as JSON when it parses, as a string otherwise). :func:`config_values` reads the parsed arguments back into
keyword arguments for the dataclass. With ``defaults=False`` a flag that is not given is left out of those keyword
arguments (``tnlib sweep --preset`` fills them from the preset, not from the dataclass's defaults).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import re
import typing
from typing import Any, Sequence, Union


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def _optional_int(text: str) -> int | None:
    """An ``int | None`` field's value: a whole number, or ``all`` / ``none`` for None (e.g. every instance)."""
    if text.lower() in ("all", "none"):
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number or 'all', got {text!r}") from None


def _kind(annotation) -> tuple[str, type]:
    """("scalar" | "sequence" | "bool" | "dict", element type) of a field's type."""
    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin is Union or str(origin) == "<class 'types.UnionType'>":  # X | None
        return _kind(args[0])
    if annotation is bool:
        return "bool", bool
    if annotation is dict or origin is dict:
        return "dict", str
    if origin is not None and origin not in (tuple,) and args:  # Sequence[X], list[X]
        element = args[0]
        return "sequence", (element if element in (int, float) else str)
    if annotation in (int, float, str):
        return "scalar", annotation
    return "scalar", str


def _flag(name: str, flags: dict[str, str]) -> str:
    return flags.get(name, "--" + name.replace("_", "-"))


def _shown_value(value: Any) -> Any:
    return "/".join(map(str, value)) if isinstance(value, tuple) else value


def _default_text(value: Any) -> str:
    """A default as it is typed on the command line: a sequence space-separated, a pair as ``a/b``, None as
    ``none``."""
    if value is None:
        return "none"
    if isinstance(value, (list, tuple)) and value and not all(isinstance(v, (str, int, float)) for v in value):
        return " ".join(str(_shown_value(v)) for v in value)
    if isinstance(value, (list, tuple)):
        return " ".join(map(str, value))
    return str(value)


def _with_default(text: str | None, default: Any) -> str:
    """The help text with ``(default: X)`` added, unless it already says what the default is (a None default
    needs words: data_root's "tnlib.data's", a learning rate's per model, ...)."""
    text = text or ""
    if "default" in text:
        return text
    return f"{text} (default: {_default_text(default)})".strip().replace("%", "%%")


def add_config_flags(parser: argparse.ArgumentParser, cls: type, flags: dict[str, str] | None = None,
                     help: dict[str, str] | None = None, skip: Sequence[str] = (), defaults: bool = True,
                     aliases: dict[str, str] | None = None, values: Any = None) -> None:
    """One flag per field of the dataclass ``cls`` (except ``skip``); ``flags`` maps a field to its flag name
    (a bool has ``--NAME`` and ``--no-NAME``), ``help`` to its help text, to which the field's
    default is added (``(default: X)``) unless the text says it. With ``defaults=False`` a flag that is not given
    sets nothing (its field is absent from :func:`config_values`). ``aliases`` maps a field to another spelling
    its flag is also taken by, not shown in ``--help``
    (another command's spelling of the same setting, which scripts may use). ``values``: an
    instance of ``cls`` whose values are the defaults, instead of the class's (a template's settings)."""
    flags, help, aliases = flags or {}, help or {}, aliases or {}
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if field.name in skip:
            continue
        kind, element = _kind(hints[field.name])
        default = _default(field) if values is None else getattr(values, field.name)
        text = help.get(field.name)
        if kind == "bool":
            # both --NAME and --no-NAME: a preset may have turned the setting either way
            action = parser.add_argument(_flag(field.name, flags), dest=field.name,
                                         action=argparse.BooleanOptionalAction, default=default,
                                         help=_with_default(text, default))
        elif kind == "dict":
            action = parser.add_argument(_flag(field.name, flags), dest=field.name, action="append", default=[],
                                         metavar="KEY=VALUE", help=text)
        elif kind == "sequence":
            action = parser.add_argument(_flag(field.name, flags), dest=field.name, nargs="+", type=element,
                                         default=[_shown_value(v) for v in default], help=_with_default(text, default))
        else:
            optional = type(None) in typing.get_args(hints[field.name])
            convert = _optional_int if (optional and element is int) else element
            action = parser.add_argument(_flag(field.name, flags), dest=field.name, type=convert, default=default,
                                         help=_with_default(text, default))
        if not defaults:
            action.default = argparse.SUPPRESS
        if field.name in aliases:
            parser.add_argument(aliases[field.name], dest=field.name, action=action.__class__, nargs=action.nargs,
                                type=action.type, metavar=action.metavar, default=argparse.SUPPRESS,
                                help=argparse.SUPPRESS)


def _key_values(flag: str, pairs: Sequence[str]) -> dict:
    values = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep:
            raise ValueError(f"{flag} expects KEY=VALUE, got {pair!r}")
        try:
            values[key] = json.loads(raw)
        except json.JSONDecodeError:
            values[key] = raw
    return values


def config_values(args: argparse.Namespace, cls: type, flags: dict[str, str] | None = None,
                  skip: Sequence[str] = ()) -> dict:
    """The dataclass's keyword arguments from arguments parsed with :func:`add_config_flags`; a ValueError for a
    malformed ``KEY=VALUE``."""
    flags = flags or {}
    hints = typing.get_type_hints(cls)
    values = {}
    for field in dataclasses.fields(cls):
        if field.name in skip or not hasattr(args, field.name):  # not given, and added with defaults=False
            continue
        value = getattr(args, field.name)
        if _kind(hints[field.name])[0] == "dict":
            value = _key_values(_flag(field.name, flags), value)
        values[field.name] = value
    return values


def name_flags(message: str, cls: type | Sequence[str], flags: dict[str, str] | None = None) -> str:
    """A validation message of the dataclass ``cls`` (or of the settings named in a sequence) that starts with a
    setting's name (``learning_rate must be > 0, got -1.0``), starting with its flag instead (``--lr must be > 0,
    got -1.0``): the command line's user typed the flag, not the field."""
    flags = flags or {}
    names = [field.name for field in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else list(cls)
    for name in sorted(names, key=lambda n: -len(n)):  # (longest first: eval_batch_size)
        match = re.match(rf"{name}(?=[\s:])", message)
        if match:
            return _flag(name, flags) + message[match.end():]
    return message
