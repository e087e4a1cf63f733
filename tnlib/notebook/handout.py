"""A student copy of a teaching notebook: the exercises' solutions left out, no outputs.

The classroom notebook folds each solution under its exercise (``<details><summary>Solution</summary> ...
</details>`` in a Markdown cell) so that a reader tries first; a class handed the notebook as an assignment should
not have them at all. :func:`student_copy` replaces each folded solution with a line for the student's answer and
clears every code cell's outputs, so the copy is what students run themselves; a first cell says what it is, and
the rest -- prose, formulas, parameters, code -- is left exactly as it is.
"""
from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path

from tnlib.files import atomic_write_text

# A folded solution: from its opening tag to the first closing tag after it, with the line break that ends it.
SOLUTION = re.compile(r"<details><summary>Solution</summary>.*?</details>[ \t]*\n?", re.S)
ANSWER_LINE = "*Your solution:*\n"
# The first cell of a student copy.
STUDENT_NOTE = "*Student copy: the exercises' solutions are left out (made by `tnlib handout`).*"


def student_copy(notebook: dict) -> tuple[dict, int]:
    """``notebook`` (nbformat 4 as a dict) without its folded solutions and outputs, and how many solutions were
    left out. A ValueError for a notebook with no folded solution (nothing to hand out without)."""
    student = copy.deepcopy(notebook)
    removed = 0
    for cell in student["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
        elif cell["cell_type"] == "markdown":
            text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            text, count = SOLUTION.subn(ANSWER_LINE, text)
            if count:
                cell["source"] = text.splitlines(keepends=True)
                removed += count
    if not removed:
        raise ValueError("the notebook folds no solution (<details><summary>Solution</summary>): nothing to leave "
                         "out")
    student["cells"].insert(0, {"cell_type": "markdown", "id": "student-copy", "metadata": {},
                                "source": [STUDENT_NOTE]})
    return student, removed


def write_handout(notebook_path: str | os.PathLike, out: str | os.PathLike) -> int:
    """Write :func:`student_copy` of the notebook at ``notebook_path`` to ``out``; returns the solutions left out.
    Refuses to overwrite the notebook itself."""
    notebook_path, out = Path(notebook_path), Path(out)
    if out.resolve() == notebook_path.resolve():
        raise ValueError(f"{out} is the notebook itself: write the student copy elsewhere")
    try:
        notebook = json.loads(notebook_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{notebook_path}: not a readable notebook ({err})") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ValueError(f"{notebook_path}: not a notebook (no list of cells)")
    try:
        student, removed = student_copy(notebook)
    except ValueError as err:
        raise ValueError(f"{notebook_path}: {err}") from None
    atomic_write_text(out, json.dumps(student, indent=1, ensure_ascii=False) + "\n")
    return removed
