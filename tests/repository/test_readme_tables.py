"""A README table laid out as headline.md lays its tables out holds only rows some report's headline.md renders, cell
for cell: a table copied from an earlier snapshot, or a row edited by hand, fails here. (The last column's header may
be named in the README's words; the rows may not.)"""
from __future__ import annotations

import pytest

from tnlib.files import REPO_ROOT

HEADLINE_HEADER = "| domain | configuration | TN / N / N+clip | TN - N | TN - N+clip |"
READMES = [REPO_ROOT / "README.md"] + sorted((REPO_ROOT / "reports").rglob("README.md"))


def cells(line: str) -> tuple[str, ...]:
    return tuple(cell.strip() for cell in line.strip().strip("|").split("|"))


def headline_layout_rows(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """(line number, cells) of every data row of the tables in ``text`` whose header is headline.md's."""
    lines, found, inside = text.splitlines(), [], False
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith(HEADLINE_HEADER):
            inside = True
        elif inside and stripped.startswith("|") and not stripped.startswith("|---"):
            found.append((number, cells(stripped)))
        elif not stripped.startswith("|"):
            inside = False
    return found


def rendered_rows() -> set[tuple[str, ...]]:
    rows = set()
    for path in (REPO_ROOT / "reports").rglob("headline.md"):
        rows |= {row for _, row in headline_layout_rows(path.read_text())}
    return rows


QUOTED = [pytest.param(row, id=f"{readme.relative_to(REPO_ROOT)}:{number}: {' | '.join(row[:2])}")
          for readme in READMES for number, row in headline_layout_rows(readme.read_text())]


@pytest.mark.parametrize("row", QUOTED)
def test_a_readme_row_laid_out_as_headline_md_is_one_a_report_rendered(row):
    assert row in rendered_rows(), ("copy the table from the report's headline.md (rendered by `tnlib report ... "
                                    "--paper-tables`)")


def test_a_row_edited_by_hand_is_caught():
    text = (REPO_ROOT / "reports" / "paper-scale" / "headline.md").read_text()
    rows = headline_layout_rows(text)
    assert len(rows) >= 8 and rows[0][1] in rendered_rows()
    edited = rows[0][1][:2] + ("9.99 / 9.99 / 9.99",) + rows[0][1][3:]
    assert edited not in rendered_rows()
    readme = f"  {HEADLINE_HEADER} last |\n  |---|\n  | {' | '.join(edited)} |\n\nprose\n| a | b |\n"
    assert headline_layout_rows(readme) == [(3, edited)]
