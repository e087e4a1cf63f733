"""Which code made a record: a commit is the same commit however far it is abbreviated, and a code with uncommitted
changes, or none recorded, is no commit."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from tnlib.files import REPO_ROOT
from tnlib.provenance import code_commit, same_commit


@pytest.mark.parametrize("recorded, code, same", [
    ("38b9e834", "38b9e834", True),
    ("38b9e834", "38b9e8341fa0", True),
    ("38b9e8341fa0", "38b9e834", True),
    ("38b9e834", "38b9e835", False),
    ("38b9e834 with uncommitted changes to tnlib/", "38b9e834", False),
    ("unknown", "38b9e834", False),
    ("unknown", "unknown", False),  # no commit at all, however it is spelt
    (None, "38b9e834", False),
    ("38b9e", "38b9e834", False),  # too short to name one commit
])
def test_same_commit_takes_abbreviations_and_refuses_edited_or_unknown_code(recorded, code, same):
    assert same_commit(recorded, code) is same


def test_this_checkout_names_its_commit_or_says_it_was_edited():
    found = code_commit()
    head = found.split()[0]
    assert found == "unknown" or (len(head) >= 7 and all(c in "0123456789abcdef" for c in head))
    if (REPO_ROOT / ".git").exists() and shutil.which("git"):  # a checkout names its own HEAD, never "unknown"
        actual = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
        assert actual.returncode == 0 and actual.stdout.startswith(head), (found, actual.stdout)
    assert same_commit(found, head) == (" " not in found and found != "unknown")
