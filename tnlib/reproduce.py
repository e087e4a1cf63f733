"""The main job: `tnlib reproduce` (placeholder, filled in below)."""
from __future__ import annotations


def register(subparsers) -> None:
    parser = subparsers.add_parser("reproduce", help="run the main job on the small embedded default")
    parser.set_defaults(func=lambda args: 0)
