"""tnlib.notebook.handout through `tnlib handout`: the student copy of the classroom notebook leaves out every
solution and output and keeps the rest, and bad inputs are refused."""
from __future__ import annotations

import json
from pathlib import Path


CLASSROOM = Path(__file__).resolve().parents[2] / "notebooks" / "statistics_of_heuristic_learning.ipynb"


def test_the_student_copy_leaves_out_every_solution_and_output_and_keeps_the_rest(tmp_path):
    from tnlib.cli import main
    from tnlib.notebook.handout import ANSWER_LINE, STUDENT_NOTE

    teacher = json.loads(CLASSROOM.read_text())
    teacher["cells"][2]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["42\n"]}]
    teacher["cells"][2]["execution_count"] = 7
    source = tmp_path / "classroom.ipynb"
    source.write_text(json.dumps(teacher))
    assert main(["handout", str(source), "--out", str(tmp_path / "handout.ipynb")]) == 0
    student = json.loads((tmp_path / "handout.ipynb").read_text())
    assert "".join(student["cells"][0]["source"]) == STUDENT_NOTE
    kept = student["cells"][1:]
    assert len(kept) == len(teacher["cells"])
    folded = 0
    for mine, theirs in zip(kept, teacher["cells"]):
        text, original = "".join(mine["source"]), "".join(theirs["source"])
        assert mine["cell_type"] == theirs["cell_type"]
        if mine["cell_type"] == "code":
            assert text == original and mine["outputs"] == [] and mine["execution_count"] is None
        elif "<details><summary>Solution</summary>" in original:
            folded += original.count("<details><summary>Solution</summary>")
            assert "<details>" not in text and "</details>" not in text and "```python" not in text
            assert text.count(ANSWER_LINE) == original.count("<details><summary>Solution</summary>")
            # what stands outside the solutions is kept word for word: the exercises' statements
            assert [line for line in text.splitlines() if line.startswith("**Exercise")] == \
                [line for line in original.splitlines() if line.startswith("**Exercise")]
        else:
            assert text == original
    assert folded == 14  # every exercise of the classroom notebook has its solution folded under it


def test_handout_refuses_the_notebook_itself_and_notebooks_without_solutions(tmp_path, capsys):
    from tnlib.cli import main

    assert main(["handout", str(CLASSROOM), "--out", str(CLASSROOM)]) == 2
    assert "is the notebook itself" in capsys.readouterr().err
    explorer_nb = CLASSROOM.with_name("truncated_gaussian_explorer.ipynb")
    assert main(["handout", str(explorer_nb), "--out", str(tmp_path / "x.ipynb")]) == 2
    err = capsys.readouterr().err
    assert "truncated_gaussian_explorer.ipynb: the notebook folds no solution" in err
    broken = tmp_path / "broken.ipynb"
    broken.write_text('{"cells": [')
    assert main(["handout", str(broken), "--out", str(tmp_path / "y.ipynb")]) == 2
    assert "broken.ipynb: not a readable notebook" in capsys.readouterr().err
    assert not (tmp_path / "x.ipynb").exists() and not (tmp_path / "y.ipynb").exists()
