"""Where the paper's directions hold (tnlib.experiments.reporting.paper_directions): TN against N per cell, in two
results folders, by the summed-std gap below three seeds and the paired interval from three."""
from __future__ import annotations

import json

from fixtures.run_folders import write_metrics


def write_visitall_metrics(folder, distribution, seed, mse) -> None:
    """A tested visitall learn/ff NLM run with only the fields the directions read."""
    run = folder / f"visitall-{distribution}-s{seed}"
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps(dict(
        domain="visitall", model="nlm", distribution=distribution, sigma="learn", residual="ff", lower_bound="lmcut",
        seed=seed)))
    write_metrics(run, mse, 1.0)


def test_directions_say_where_the_papers_tn_against_n_holds(tmp_path):
    """render_directions: the paper's TN-vs-N direction per cell (a gap beyond the summed std over seeds), in which
    of two folders it shows, and whether the folders agree; below three seeds a folder's direction is the summed-std
    gap too."""
    from tnlib.experiments.reporting.paper_directions import render_directions

    def folder(name, mses):
        for (distribution, seed), mse in mses.items():
            write_visitall_metrics(tmp_path / name, distribution, seed, mse)
        return tmp_path / name

    # the paper: visitall learn/ff TN 5.30±.6 against N 7.67±.4 and N+clip 7.60±.4 -- TN lower beyond the spread
    large = folder("large", {("TN", 0): 2.0, ("TN", 1): 2.2, ("N", 0): 4.0, ("N", 1): 4.4})
    small = folder("small", {("TN", 0): 3.0, ("TN", 1): 5.0, ("N", 0): 4.0, ("N", 1): 4.2})
    text = render_directions(large, small, names=("large", "small"), configs=[("learn", "ff")])
    rows = {tuple(c.strip() for c in line.split("|")[1:4]): [c.strip() for c in line.split("|")[4:9]]
            for line in text.splitlines() if line.startswith("| visitall")}
    assert rows[("visitall", "learn/ff", "TN vs N")] == [
        "TN lower (5.30 vs 7.67)", "TN lower (2.10 vs 4.20)", "within noise (4.00 vs 4.10)", "only in large",
        "differ"]
    ferry = [line for line in text.splitlines() if line.startswith("| ferry")]
    assert ferry and all(line.endswith("| the paper has none |  |") for line in ferry)  # 3.45±.8 against 3.73±.7
    assert "not run" in text and "only in large 2" in text
    assert "The two folders agree in 0 of the 2 comparisons both ran, differ in 2." in text


def test_directions_with_three_seeds_or_more_follow_the_paired_interval(tmp_path):
    """With at least three seeds a folder's direction is the paired interval's: a shift every seed shows counts
    though the seeds' spread is far wider (the summed-std gap would call it a tie), and a difference whose sign
    changes from seed to seed does not."""
    from tnlib.experiments.reporting.paper_directions import render_directions

    def folder(name, shifts):
        for seed, (n_mse, shift) in enumerate(zip((1.0, 5.0, 9.0, 3.0), shifts)):
            for distribution, mse in (("N", n_mse), ("TN", n_mse + shift)):
                write_visitall_metrics(tmp_path / name, distribution, seed, mse)
        return tmp_path / name

    steady = folder("steady", (-.5, -.6, -.4, -.5))
    mixed = folder("mixed", (-.5, .6, .1, -.4))
    text = render_directions(steady, mixed, names=("steady", "mixed"), configs=[("learn", "ff")])
    row = next(line for line in text.splitlines() if line.startswith("| visitall | learn/ff | TN vs N |"))
    cells = [c.strip() for c in row.split("|")[5:9]]
    assert cells[0].startswith("TN lower (4.00 vs 4.50; -.50 [-.63, -.37]")
    assert cells[1].startswith("within noise (4.45 vs 4.50; -.05 [")
    assert cells[2:] == ["only in steady", "differ"]
    same = render_directions(steady, steady, names=("a", "b"), configs=[("learn", "ff")])
    assert "The two folders agree in 2 of the 2 comparisons both ran, differ in 0." in same
