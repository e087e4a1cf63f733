"""Every paired interval a README quotes ("-.36 [-.97, .25]") is one the code rendered into a report: a findings
file (findings.csv, at full precision) or a paired table (accuracy.md, planning.md, comparison.md, findings.md) of
some report folder under reports/. A sentence that fell behind its table -- a report rendered again since, or a
number copied from another run -- fails here. (A quoted interval is matched to the precision it is written at; it
is looked up in every report folder, not only the one its sentence names.) Each interval holds on its own; where
the direction it shows does not survive Holm's correction over all of its report's comparisons (findings.csv's
``verdict_holm``), the README says so right after it: "(not after Holm)"."""
from __future__ import annotations

import csv
import math
import re
from functools import lru_cache

import pytest

from tnlib.files import REPO_ROOT

NUMBER = r"-?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?|-?\.\d+"
INTERVAL = re.compile(rf"({NUMBER}) \[({NUMBER}), ({NUMBER})\]")
READMES = [REPO_ROOT / "README.md"] + sorted((REPO_ROOT / "reports").rglob("README.md"))


def half_unit(text: str) -> float:
    """Half the last place a quoted number is written to: .25 -> .005, 1,190 -> 5 (three significant digits)."""
    if "e" in text:
        mantissa, exponent = text.split("e")
        return half_unit(mantissa) * 10 ** int(exponent)
    if "." in text:
        return 0.5 * 10 ** -len(text.split(".")[1])
    digits = text.replace(",", "").lstrip("-")
    return 0.5 * 10 ** (len(digits) - len(digits.rstrip("0"))) if digits.strip("0") else 0.5


def value(text: str) -> float:
    return float(text.replace(",", ""))


@lru_cache(maxsize=1)
def rendered_intervals() -> list[tuple[tuple, tuple]]:
    """((mean, low, high), how far the rendering rounded each) of every interval the reports hold."""
    found = []
    for path in sorted((REPO_ROOT / "reports").rglob("findings.csv")):
        with path.open(newline="") as handle:
            found += [((float(r["mean"]), float(r["low"]), float(r["high"])), (0.0, 0.0, 0.0))
                      for r in csv.DictReader(handle) if r["low"]]
    for path in sorted((REPO_ROOT / "reports").rglob("*.md")):
        if path.name != "README.md":
            for match in INTERVAL.finditer(path.read_text()):
                found.append((tuple(value(g) for g in match.groups()), tuple(half_unit(g) for g in match.groups())))
    return found


HOLM_MARK = " (not after Holm)"


def quoted_intervals(with_mark: bool = False):
    for readme in READMES:
        for number, line in enumerate(readme.read_text().splitlines(), 1):
            for match in INTERVAL.finditer(line):
                marked = line[match.end():].startswith(HOLM_MARK)
                yield pytest.param(*((match.groups(), marked) if with_mark else (match.groups(),)),
                                   id=f"{readme.relative_to(REPO_ROOT)}:{number}: {match.group(0)}")


@lru_cache(maxsize=1)
def findings_rows() -> list[dict]:
    """Every comparison with a paired interval in the reports' findings.csv files."""
    rows = []
    for path in sorted((REPO_ROOT / "reports").rglob("findings.csv")):
        with path.open(newline="") as handle:
            rows += [r for r in csv.DictReader(handle) if r["low"]]
    return rows


def three_digits_half_unit(x: float) -> float:
    """Half the last place of ``x`` written to three significant digits, as findings.md writes it: a quote may be
    rounded from there rather than from findings.csv's full precision."""
    return 0.5 * 10 ** (math.floor(math.log10(abs(x))) - 2) if x else 0.0


def loses_direction_after_holm(quoted) -> bool | None:
    """Whether every findings row a quoted interval matches has a direction that Holm's correction leaves within
    noise; None where it matches none (an interval of another table only: plan cost, per size, comparison.md)."""
    wanted = [(value(g), half_unit(g) + 1e-9) for g in quoted]
    hits = [r for r in findings_rows()
            if all(abs(float(r[k]) - x) <= tolerance + three_digits_half_unit(float(r[k]))
                   for k, (x, tolerance) in zip(("mean", "low", "high"), wanted))]
    if not hits:
        return None
    return all(r["verdict"] in ("lower", "higher") and r["verdict_holm"] == "within noise" for r in hits)


def is_rendered(quoted) -> bool:
    wanted = [(value(g), half_unit(g) + 1e-9) for g in quoted]
    return any(all(abs(known[i] - x) <= tolerance + rounded[i] for i, (x, tolerance) in enumerate(wanted))
               for known, rounded in rendered_intervals())


@pytest.mark.parametrize("quoted", list(quoted_intervals()))
def test_a_quoted_interval_is_one_a_report_rendered(quoted):
    assert is_rendered(quoted), "rewrite the sentence from the report's findings.md or its paired tables"


def test_an_interval_no_report_holds_is_caught():
    assert is_rendered(("-.36", "-.97", ".25"))  # converged/nlm5 blocksworld learn/ff TN - N
    assert not is_rendered(("-.36", "-.97", ".45"))
    assert not is_rendered(("-.36", "-1.07", ".25"))
    assert half_unit("1,190") == 5 and half_unit("-.97") == pytest.approx(0.005) and half_unit("2e+03") == 500


@pytest.mark.parametrize("quoted, marked", list(quoted_intervals(with_mark=True)))
def test_a_quoted_direction_that_does_not_survive_holm_says_so(quoted, marked):
    lost = loses_direction_after_holm(quoted)
    if lost is None:
        assert not marked, "a mark on an interval no findings.csv holds"
    else:
        assert marked == lost, (f"add{HOLM_MARK!r} right after it: its report's findings.md has it within noise after "
                                "Holm" if lost else f"its direction survives Holm: drop{HOLM_MARK!r}")


def test_the_holm_check_tells_a_lost_direction_from_a_kept_one():
    assert loses_direction_after_holm(("-1.31", "-1.95", "-.68"))  # converged/nlm5 blocksworld learn/none TN - N
    assert loses_direction_after_holm(("-8.56", "-10.3", "-6.78")) is False  # visitall learn/none TN - N
    assert loses_direction_after_holm(("-.36", "-.97", ".25")) is False  # within noise before and after
    assert loses_direction_after_holm(("-99", "-999", "-9")) is None
