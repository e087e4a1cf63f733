"""The README's table of the package's layout names every module: a row per folder of tnlib/, and in it each
module of that folder by its name in backticks. A module added without a word there fails here."""
from __future__ import annotations

import re

import pytest

from tnlib.files import REPO_ROOT

ROW = re.compile(r"^\| `(tnlib/[\w/]*/)` \|(.*)$", re.M)


def layout_rows() -> dict[str, str]:
    return dict(ROW.findall((REPO_ROOT / "README.md").read_text(encoding="utf-8")))


def test_every_folder_of_the_package_has_a_row():
    # (the top level's modules have rows of their own, named by file)
    folders = {f"{init.parent.relative_to(REPO_ROOT).as_posix()}/" for init in (REPO_ROOT / "tnlib").rglob("__init__.py")
               if init.parent != REPO_ROOT / "tnlib"}
    assert sorted(folders - set(layout_rows())) == []


def test_every_top_level_module_is_named():
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    modules = sorted(path.name for path in (REPO_ROOT / "tnlib").glob("*.py")
                     if path.stem not in ("__init__", "__main__"))
    assert [module for module in modules if f"`tnlib/{module}`" not in text] == []


@pytest.mark.parametrize("folder", sorted(layout_rows()))
def test_a_row_names_every_module_of_its_folder(folder):
    named = set(re.findall(r"`([\w.]+)`", layout_rows()[folder]))
    modules = sorted(path.stem for path in (REPO_ROOT / folder).glob("*.py") if path.stem != "__init__")
    assert [module for module in modules if module not in named] == []
