"""benchmarks/campaign_cost.py: which runs' training has ended (their length known, a test or nothing left to do),
so that the hours it expects count only the training that is left."""
from __future__ import annotations

from fixtures.benchmark_scripts import load_benchmark
from fixtures.run_folders import FALLING, FLAT, write_data_root, write_metrics, write_run
from tnlib.learning.run_files import RunDir


def load_campaign_cost():
    return load_benchmark("campaign_cost")


def test_a_run_trained_to_a_flat_chunk_end_has_ended_before_its_test(tmp_path):
    """Tested, or at the end of its chunk with a flat curve (or at max_steps): ended, at its steps. At the end of
    its chunk still improving (the sweep trains it on), or part-way through it: not ended."""
    cost = load_campaign_cost()
    data, results = tmp_path / "data", tmp_path / "runs"
    write_data_root(data)
    tested = write_run(results, data, FALLING, seed=0)  # 8 evaluations every 50 steps: step 400 of 400
    write_metrics(tested, 1.0, 1.0)
    flat = write_run(results, data, FLAT, seed=1)
    improving = write_run(results, data, FALLING, seed=2)
    part_way = write_run(results, data, FLAT[:4], seed=3)
    assert cost.ended_steps(RunDir(tested), max_steps=2000) == 400
    assert cost.ended_steps(RunDir(flat), max_steps=2000) == 400
    assert cost.ended_steps(RunDir(improving), max_steps=2000) is None
    assert cost.ended_steps(RunDir(improving), max_steps=400) == 400  # at the cap it stops, improving or not
    assert cost.ended_steps(RunDir(part_way), max_steps=2000) is None
    assert cost.ended_steps(RunDir(results / "not-started"), max_steps=2000) is None
