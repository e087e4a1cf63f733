"""Running a sweep: resuming finished work, local and Dask execution giving the same results, training until flat,
sweeps side by side over one folder, and the sweep.json a sweep split along its grid writes."""
from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest

from tnlib.cli import main
from tnlib.errors import DatasetError
from tnlib.experiments.running.sweep import run_sweep
from tnlib.experiments.sweep_settings import Sweep

from fixtures.sweeps import small_linear_sweep


def test_sweep_runs_resumes_and_matches_dask(tmp_path):
    local = run_sweep(small_linear_sweep(tmp_path / "local"), progress=False)
    assert [r["run"] for r in local] == ["gripper-linear-N-learn-ff-llmcut-s0", "gripper-linear-TN-learn-ff-llmcut-s0"]
    assert all("coverage_default" in r for r in local) and "coverage_clip" in local[0]
    run = tmp_path / "local" / local[0]["run"]
    # checkpoints, metrics and planning results are not recomputed (config.json / curves are rewritten on resume)
    stamps = {p.name: p.stat().st_mtime_ns for p in run.iterdir() if p.suffix in (".pt",) or "-" in p.stem}
    again = run_sweep(small_linear_sweep(tmp_path / "local"), progress=False)  # everything is done: nothing is redone
    assert again == local
    assert {p.name: p.stat().st_mtime_ns for p in run.iterdir() if p.name in stamps} == stamps
    assert (tmp_path / "local" / "baseline-gripper-ff.jsonl").is_file()

    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as c:
        on_dask = run_sweep(small_linear_sweep(tmp_path / "dask"), scheduler=c.scheduler_address, progress=False)
    assert on_dask == local  # same seeds, same data: the same numbers wherever the cells run


def test_a_sweep_sends_nothing_to_a_cluster_that_would_not_run_its_tasks_as_here(tmp_path, monkeypatch, capsys):
    """A scheduler on another code (it could not unpickle the tasks), or a worker on another filesystem: the sweep
    stops before it sends a task, naming each and why."""
    from tnlib.errors import ClusterMismatch
    from tnlib.experiments.running import cluster_workers

    sweep = small_linear_sweep(tmp_path / "runs")
    manifest = sweep.dataset_path() / "manifest.json"
    here = cluster_workers.probe_this_process("/nonexistent", "t", str(manifest))
    scheduler = cluster_workers.ClusterWorker(address="tcp://head:8786", role="scheduler",
                                              **{**here, "code": "0123abcd"})
    worker = cluster_workers.ClusterWorker(address="tcp://node:4000", **here)  # its token unread: sees_results False
    asked = []
    monkeypatch.setattr(cluster_workers, "ask_cluster_workers",
                        lambda *arguments, **options: asked.append(arguments) or [scheduler, worker])
    with pytest.raises(ClusterMismatch) as refused:
        run_sweep(sweep, scheduler="tcp://head:8786", progress=False)
    message = str(refused.value)
    assert "the scheduler tcp://head:8786: its tnlib" in message and "could not read the tasks" in message
    assert "the worker tcp://node:4000: it does not see the results folder" in message
    assert asked and not [path for path in (tmp_path / "runs").iterdir() if path.is_dir()]  # nothing trained

    # the command says so in one line, exit 2
    status = main(["sweep", "--domains", "gripper", "--models", "linear", "--configs", "learn/ff", "--seeds", "0",
                   "--steps", "12", "--batch-size", "16", "--data-profile", "small", "--out", str(tmp_path / "cli"),
                   "--scheduler", "tcp://head:8786"])
    assert status == 2 and "nothing sent to the Dask cluster" in capsys.readouterr().err


def test_cli_refuses_bad_grids(capsys):
    assert main(["sweep", "--configs", "learn-ff"]) == 2
    assert "sigma/residual" in capsys.readouterr().err
    assert main(["sweep", "--models", "transformer"]) == 2
    assert "unknown model" in capsys.readouterr().err


def test_cli_runs_a_tiny_sweep(tmp_path, capsys):
    code = main(["sweep", "--preset", "small", "--domains", "gripper", "--models", "linear", "--configs", "fixed/none",
                 "--distributions", "TN", "--seeds", "0", "--steps", "6", "--eval-every", "3", "--plan-instances", "1",
                 "--workers", "1", "--out", str(tmp_path)])
    assert code == 0
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines() if line.startswith("{")]
    assert rows and rows[0]["run"] == "gripper-linear-TN-fixed-none-llmcut-s0"
    assert "preset 'small'" not in captured.err and "custom settings" in captured.err  # the banner came first
    assert "= 1 run\n" in captured.err


def test_cli_without_flags_announces_the_papers_setting(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("tnlib sweep: the paper's settings") and "= 160 runs" in err
    assert not (tmp_path / "runs").exists()
    assert main(["sweep", "--preset", "small", "--batch-size", "256", "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert "120 steps x batch 256" in err and "batch_size" not in err.splitlines()[0]


def test_missing_data_stops_the_sweep_before_training(tmp_path):
    root = tmp_path / "data" / "paper"
    (root / "gripper").mkdir(parents=True)
    (root / "manifest.json").write_text(json.dumps({"domains": {"gripper": {"manifest": "gripper/manifest.json"}},
                                                    "profile": "paper"}))
    (root / "gripper" / "manifest.json").write_text(json.dumps({"splits": {"train": {}, "val": {}}}))
    sweep = Sweep.from_parameters(data_root=str(tmp_path / "data"), domains=["gripper", "ferry"],
                                  out_dir=str(tmp_path / "runs"))
    assert sweep.dataset_path() == root
    with pytest.raises(DatasetError, match=r"lacks gripper/test, gripper/plan, ferry \(all splits\).*--domain gripper "
                                           r"--domain ferry --profile paper"):
        run_sweep(sweep, progress=False)
    assert not (tmp_path / "runs").exists()


def test_upper_bound_reaches_every_run_and_its_name(tmp_path, capsys):
    """`--upper-bound h_sat` (beyond the paper: TN doubly truncated in training) is a sweep setting like the lower
    bound: each run trains with it, its folder says so, and the banner names it."""
    sweep = small_linear_sweep(tmp_path, upper_bound="h_sat")
    assert {c.head.upper_bound for c in sweep.train_configs()} == {"h_sat"}
    assert [c.name for c in sweep.train_configs()] == [
        "gripper-linear-N-learn-ff-llmcut-uh_sat-s0", "gripper-linear-TN-learn-ff-llmcut-uh_sat-s0"]
    assert {c.head.upper_bound for c in small_linear_sweep(tmp_path).train_configs()} == {"none"}
    assert main(["sweep", "--preset", "small", "--upper-bound", "h_sat", "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert "u = h_sat (training only; beyond the paper)" in err and "upper_bound" in err.splitlines()[0]
    with pytest.raises(ValueError, match="upper"):
        Sweep.preset("small", upper_bound="h_max")


def _until_flat_config(out, **overrides):
    """One cheap cell that trains until flat: linear regression on data/small's ferry, validated every 100 steps."""
    params = dict(models="linear", domains="ferry", configs="learn/ff", distributions="TN", seeds=0, steps=200,
                  eval_every=100, max_steps=800, extend_steps=200, plan=False, out_dir=str(out))
    return Sweep.from_parameters(preset="small", **{**params, **overrides}).train_configs()[0]


def _scripted_verdicts(monkeypatch, verdicts):
    """Replace the still-improving rule by a script of answers; returns the curve lengths it was asked about."""
    import tnlib.experiments.running.cells as cells

    asked, answers = [], iter(verdicts)
    monkeypatch.setattr(cells, "still_improving", lambda values: asked.append(len(values)) or next(answers))
    return asked


def _trained(run_dir) -> tuple[int, list[int]]:
    """(config.json's steps, the validated steps of curves.jsonl)."""
    steps = json.loads((run_dir / "config.json").read_text())["steps"]
    return steps, [json.loads(line)["step"] for line in (run_dir / "curves.jsonl").read_text().splitlines()]


def test_train_until_flat_trains_on_while_improving_and_matches_a_straight_run(tmp_path, monkeypatch):
    """Still improving at 200 and 400 steps, flat at 600: the run stops at 600, its folder says so, and its
    weights, curve and best checkpoint are those of a run trained straight to 600 steps."""
    import torch

    from tnlib.experiments.running.cells import train_until_flat
    from tnlib.learning.training import train

    asked = _scripted_verdicts(monkeypatch, [True, True, False])
    run = train_until_flat(_until_flat_config(tmp_path / "chunks"), max_steps=800, extend_steps=200)
    assert asked == [2, 4, 6]  # checked after each chunk, on the whole curve
    assert _trained(run) == (600, [100, 200, 300, 400, 500, 600])
    straight = train(replace(_until_flat_config(tmp_path / "straight"), steps=600))
    for name in ("last.pt", "best.pt"):
        a, b = (torch.load(r / name, weights_only=False) for r in (run, straight))
        assert a["step"] == b["step"] and a.keys() == b.keys()
        assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    strip = lambda r: [{k: v for k, v in json.loads(line).items() if k != "seconds"}  # noqa: E731
                       for line in (r / "curves.jsonl").read_text().splitlines()]
    assert strip(run) == strip(straight)


def test_train_until_flat_stops_at_max_steps_and_at_a_flat_start(tmp_path, monkeypatch):
    from tnlib.experiments.running.cells import train_until_flat

    asked = _scripted_verdicts(monkeypatch, [True] * 10)
    assert _trained(train_until_flat(_until_flat_config(tmp_path / "a"), 800, 300))[0] == 800  # 200, 500, 800
    assert asked == [2, 5]  # at max_steps it stops without asking
    asked = _scripted_verdicts(monkeypatch, [False])
    assert _trained(train_until_flat(_until_flat_config(tmp_path / "b"), 800, 200)) == (200, [100, 200])
    assert asked == [2]


def test_train_until_flat_resumes_an_interrupted_chunk_to_its_end(tmp_path, monkeypatch):
    """A run interrupted at 300 steps, inside the chunk 200-400, finishes that chunk before it is judged: where a
    run stops does not depend on where it was interrupted."""
    from tnlib.experiments.running.cells import train_until_flat
    from tnlib.learning.training import train

    config = _until_flat_config(tmp_path)
    train(replace(config, steps=300))
    asked = _scripted_verdicts(monkeypatch, [False])
    assert _trained(train_until_flat(config, 800, 200)) == (400, [100, 200, 300, 400])
    assert asked == [4]
    asked = _scripted_verdicts(monkeypatch, [False])  # run again: judged where it stands, nothing trained
    assert _trained(train_until_flat(config, 800, 200))[0] == 400 and asked == [4]


def test_a_sweep_trains_until_flat_by_the_reports_rule(tmp_path):
    """Unscripted: every run of a sweep with max_steps ends flat by the reports' rule or at max_steps."""
    from tnlib.learning.until_flat import still_improving

    sweep = Sweep.from_parameters(preset="small", models="linear", domains="ferry", configs=["learn/ff", "fixed/none"],
                                  distributions="TN", seeds=0, steps=400, eval_every=100, max_steps=2000,
                                  extend_steps=400, plan=False, out_dir=str(tmp_path), workers=1)
    trained = []
    for row in run_sweep(sweep, progress=False):
        steps, validated = _trained(tmp_path / row["run"])
        trained.append(steps)
        assert validated == list(range(100, steps + 1, 100)) and 400 <= steps <= 2000 and (steps - 400) % 400 == 0
        curve = [json.loads(line)["val_mse"] for line in (tmp_path / row["run"] / "curves.jsonl").read_text().splitlines()]
        assert steps == 2000 or still_improving(curve) is False
        if steps > 400:  # it went on because the curve was still improving at the chunk before
            assert still_improving(curve[:(steps - 400) // 100]) is not False
    assert max(trained) > 400  # some run trained on (this grid: learn/ff to max_steps, fixed/none flat at once)


def test_cli_names_the_until_flat_flags(capsys):
    assert main(["sweep", "--preset", "small", "--max-steps", "100", "--dry-run"]) == 2
    assert "error: --max-steps must be an integer >= steps (120), or none, got 100" in capsys.readouterr().err


def test_a_cell_holds_its_runs_lock_while_it_trains(tmp_path, monkeypatch):
    """Two sweeps writing one folder never train a run at once: run_cell holds the run's lock while it trains, so a
    second process asking for it would wait or pass (here: a non-blocking try fails then, and succeeds after)."""
    import fcntl

    import tnlib.experiments.running.cells as cells

    config = _until_flat_config(tmp_path, max_steps=None)
    lock = tmp_path / ".ferry-linear-TN-learn-ff-llmcut-s0.lock"
    tries = []

    def try_lock() -> bool:
        with open(lock, "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            fcntl.flock(handle, fcntl.LOCK_UN)
            return True

    real_train = cells.train_until_flat
    monkeypatch.setattr(cells, "train_until_flat",
                        lambda *args, **kwargs: tries.append(try_lock()) or real_train(*args, **kwargs))
    summary = cells.run_cell(config, cells.CellSettings(max_steps=400, extend_steps=200, plan=False))
    assert summary["run"] == "ferry-linear-TN-learn-ff-llmcut-s0" and tries == [False]
    assert try_lock()  # released when the cell is done


def test_a_cell_waiting_for_another_process_on_its_run_says_so(tmp_path, capsys):
    """A sweep that reaches a run another process holds (a planning process beside training ones) prints one line
    naming the run before it waits, then does the work once the lock is free."""
    import fcntl
    import threading

    import tnlib.experiments.running.cells as cells

    config = _until_flat_config(tmp_path, max_steps=None, steps=20)
    lock = tmp_path / ".ferry-linear-TN-learn-ff-llmcut-s0.lock"
    holder = open(lock, "a")
    fcntl.flock(holder, fcntl.LOCK_EX)
    threading.Timer(1.0, lambda: fcntl.flock(holder, fcntl.LOCK_UN)).start()
    summary = cells.run_cell(config, cells.CellSettings(plan=False))
    holder.close()
    assert summary["run"] == "ferry-linear-TN-learn-ff-llmcut-s0"
    assert capsys.readouterr().err.splitlines() == [
        "ferry-linear-TN-learn-ff-llmcut-s0: another process is working on this run; waiting for it to finish"]
    cells.run_cell(config, cells.CellSettings(plan=False))  # free: nothing said
    assert capsys.readouterr().err == ""


def test_sweeps_side_by_side_plan_each_domains_baseline_once(tmp_path, capsys, monkeypatch):
    """Sweeps over one folder reach the h_FF baselines together: a domain another process holds is left for after
    the others, then waited for and found planned (the baseline resumes), never planned twice at once. Here the
    gripper baseline's lock is held until ferry's is planned, and released then."""
    import fcntl

    import tnlib.experiments.running.sweep as sweep_module
    import tnlib.learning.split_planning as split_planning
    from tnlib.files import try_lock

    sweep = small_linear_sweep(tmp_path, domains=("gripper", "ferry"))
    out_dir = sweep_module.ResultsDir(sweep.out_dir).baseline_folder(sweep.plan_on)
    held = sweep_module.baseline_lock(out_dir, "gripper")
    held.parent.mkdir(parents=True, exist_ok=True)
    holder = open(held, "a")
    fcntl.flock(holder, fcntl.LOCK_EX)
    planned = []

    def plan_baseline(data_root, domain, heuristic, **kwargs):
        planned.append(domain)
        # a lock of this domain's own is held while it plans: another process would find it busy
        assert try_lock(sweep_module.baseline_lock(out_dir, domain)) is None
        if domain == "ferry":
            fcntl.flock(holder, fcntl.LOCK_UN)  # the other process finishes gripper while this one plans ferry

    monkeypatch.setattr(split_planning, "plan_baseline", plan_baseline)
    sweep_module.run_baselines(sweep)
    holder.close()
    assert planned == ["ferry", "gripper"]
    assert capsys.readouterr().err.splitlines() == [
        "h_FF baseline of gripper: another process is planning it; coming back to it after the others"]


def test_a_sweep_counts_a_run_another_process_tests_when_it_is_tested(tmp_path, capsys, monkeypatch):
    """Two sweeps side by side: the runs the other process tests count among the runs done as soon as they are
    tested, not in the second pass, so each display counts the whole folder's pace (its time left is not about
    twice too long). Here the first run is busy, and the other process tests it while this one does the second."""
    import tnlib.experiments.running.cells as cells
    import tnlib.experiments.running.sweep as sweep_module

    monkeypatch.setenv("TNLIB_PROGRESS", "text")
    monkeypatch.setattr(sweep_module, "SWEEP_LINE_INTERVAL_S", 0.0)
    sweep = small_linear_sweep(tmp_path, seeds=(0, 1), plan=False, workers=1)
    names = [sweep.run_folder(config).path.name for config in sweep.train_configs()]
    assert len(names) == 4
    held = names[0]
    shown_before, lines = {}, []

    def run_cell(config, settings, wait_if_busy=True):
        name = sweep.run_folder(config).path.name
        lines.extend(capsys.readouterr().err.splitlines())
        shown_before.setdefault(name, list(lines))
        if name == held:
            return {"run": name, "busy": True} if not wait_if_busy else {"run": name}
        if name == names[1]:  # the other process tests the held run meanwhile
            (tmp_path / held).mkdir(exist_ok=True)
            (tmp_path / held / "metrics-test.json").write_text("{}")
        return {"run": name}

    monkeypatch.setattr(cells, "run_cell", run_cell)
    rows = run_sweep(sweep)
    assert sorted(row["run"] for row in rows) == sorted(names)
    # before the third run: its own first run and the other process's
    assert shown_before[names[2]][-1].startswith("sweep: 2/4 runs done")
    assert shown_before[names[3]][-1].startswith("sweep: 3/4 runs done")
    lines.extend(capsys.readouterr().err.splitlines())
    counts = [line.split()[1] for line in lines if line.startswith("sweep: ")]
    assert counts == ["0/4", "1/4", "2/4", "3/4", "4/4"]


def test_a_resumed_sweep_counts_runs_finished_before_it_as_done_not_as_progress(tmp_path, capsys, monkeypatch):
    """Runs a sweep finds finished return at once; counted as progress they would make the time left of the runs
    still to train look like seconds. They are done from the first line."""
    import tnlib.experiments.running.cells as cells
    import tnlib.experiments.running.sweep as sweep_module

    monkeypatch.setenv("TNLIB_PROGRESS", "text")
    monkeypatch.setattr(sweep_module, "SWEEP_LINE_INTERVAL_S", 0.0)
    sweep = small_linear_sweep(tmp_path, seeds=(0, 1), plan=False, workers=1)
    names = [sweep.run_folder(config).path.name for config in sweep.train_configs()]
    for name in names[:3]:  # finished by an earlier sweep
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics-test.json").write_text("{}")
    monkeypatch.setattr(cells, "run_cell", lambda config, settings, wait_if_busy=True:
                        {"run": sweep.run_folder(config).path.name})
    run_sweep(sweep)
    counts = [line.split()[1] for line in capsys.readouterr().err.splitlines() if line.startswith("sweep: ")]
    assert counts == ["3/4", "4/4"]


def test_a_sweep_does_the_runs_nobody_holds_first_and_comes_back_for_the_held_one(tmp_path, capsys):
    """Two sweeps over one grid share its runs: a run another process holds is left for a second pass instead of
    waited for in turn. Here the first run's lock is held until every other run is tested -- a sweep that waited
    for it in order would never get there -- and then the sweep finishes that run too."""
    import fcntl
    import threading

    sweep = small_linear_sweep(tmp_path, seeds=(0, 1), plan=False, workers=1)
    names = [sweep.run_folder(config).path.name for config in sweep.train_configs()]
    held, others = names[0], names[1:]
    holder = open(tmp_path / f".{held}.lock", "a")
    fcntl.flock(holder, fcntl.LOCK_EX)
    finished = {}
    worker = threading.Thread(target=lambda: finished.update(rows=run_sweep(sweep, progress=False)), daemon=True)
    worker.start()
    deadline = time.monotonic() + 120
    while not all((tmp_path / name / "metrics-test.json").is_file() for name in others):
        assert time.monotonic() < deadline and worker.is_alive(), "the sweep waited for the held run"
        time.sleep(0.05)
    assert not (tmp_path / held / "metrics-test.json").exists()
    fcntl.flock(holder, fcntl.LOCK_UN)
    holder.close()
    worker.join(120)
    assert not worker.is_alive()
    assert sorted(row["run"] for row in finished["rows"]) == sorted(names)
    assert (tmp_path / held / "metrics-test.json").is_file()
    assert f"{held}: another process is working on this run; coming back to it after the others" in \
        capsys.readouterr().err


def test_sweep_file_names_the_union_of_a_sweep_split_along_its_grid(tmp_path):
    from tnlib.experiments.running.sweep import write_sweep_file

    def written():
        return json.loads((tmp_path / "sweep.json").read_text())

    write_sweep_file(small_linear_sweep(tmp_path, domains=("visitall",), distributions=("TN",), seeds=(1,)))
    write_sweep_file(small_linear_sweep(tmp_path, domains=("gripper", "ferry"), configs=(("fixed", "none"),),
                            distributions=("N",), seeds=(0,), workers=2))
    record = written()
    assert record["domains"] == ["ferry", "gripper", "visitall"]  # the paper's order, not the order run
    assert record["configs"] == [["learn", "ff"], ["fixed", "none"]]
    assert record["distributions"] == ["N", "TN"] and record["seeds"] == [0, 1]
    assert Sweep.from_record(record).train_configs()  # still a valid sweep
    # anything else differing (here the steps) is another sweep: it replaces the file
    write_sweep_file(small_linear_sweep(tmp_path, domains=("ferry",), steps=24))
    record = written()
    assert record["domains"] == ["ferry"] and record["train"]["steps"] == 24 and record["seeds"] == [0]


def test_a_one_process_sweep_shows_each_runs_training_steps_and_planned_instances(tmp_path, monkeypatch, capsys):
    from tnlib.experiments.running.sweep import run_sweep

    monkeypatch.setenv("TNLIB_PROGRESS", "text")
    run = "gripper-linear-N-learn-ff-llmcut-s0"
    run_sweep(small_linear_sweep(tmp_path / "quiet", distributions=("N",)), progress=False)
    assert capsys.readouterr().err == ""
    sweep = small_linear_sweep(tmp_path / "shown", distributions=("N",))
    run_sweep(sweep, progress=True)  # the runs done only (a notebook's many short runs)
    assert [line.split(",")[0] for line in capsys.readouterr().err.splitlines()] == ["sweep: 0/1 runs done",
                                                                                    "sweep: 1/1 runs done"]
    shown = small_linear_sweep(tmp_path / "shown-runs", distributions=("N",))
    run_sweep(shown, progress=True, run_progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert any(line.startswith(f"{run}: 12/12 steps done") for line in lines), lines
    for estimate in ("default", "clip"):
        assert any(line.startswith(f"{run} {estimate}: 1/1 instances done") for line in lines), lines
    assert lines[-1].startswith("sweep: 1/1 runs done")
    run_sweep(shown, progress=True, run_progress=True)  # trained, tested and planned: one line says so
    assert capsys.readouterr().err.splitlines() == [
        f"sweep: 1/1 runs done already (trained, tested and planned in {tmp_path / 'shown-runs'})"]


def test_a_sweep_prints_a_line_per_run_only_where_its_runs_take_longer_than_the_line_interval(tmp_path, monkeypatch,
                                                                                             capsys):
    """Runs that take a fraction of a second (a notebook's tiny grid) give the first and the last line, not one each;
    a sweep whose runs were all finished before it says so in one line."""
    import tnlib.experiments.running.cells as cells
    from tnlib.experiments.running import sweep as sweep_module

    monkeypatch.setenv("TNLIB_PROGRESS", "text")
    grid = small_linear_sweep(tmp_path, seeds=(0, 1), plan=False)  # 4 runs
    monkeypatch.setattr(cells, "run_cell", lambda config, settings, wait_if_busy=True:
                        {"run": grid.run_folder(config).path.name})  # each done at once
    sweep_module.run_sweep(grid, progress=True)
    assert [line.split(",")[0] for line in capsys.readouterr().err.splitlines()] == ["sweep: 0/4 runs done",
                                                                                    "sweep: 4/4 runs done"]
    monkeypatch.setattr(sweep_module, "SWEEP_LINE_INTERVAL_S", 0.0)  # as if each took longer: a line per run
    sweep_module.run_sweep(grid, progress=True)
    assert [line.split(",")[0] for line in capsys.readouterr().err.splitlines()] == [
        f"sweep: {done}/4 runs done" for done in range(5)]
    for config in grid.train_configs():
        run = grid.run_folder(config)
        run.path.mkdir()
        run.metrics_file("test").write_text("{}")
    sweep_module.run_sweep(grid, progress=True)
    assert [line.split(",")[0] for line in capsys.readouterr().err.splitlines()] == ["sweep: 4/4 runs done"]


def test_training_and_planning_parts_of_one_sweep_unite_in_the_sweep_file(tmp_path):
    from tnlib.experiments.running.sweep import write_sweep_file

    write_sweep_file(small_linear_sweep(tmp_path, seeds=(0,), plan=False))
    record = write_sweep_file(small_linear_sweep(tmp_path, seeds=(1,), plan=True))
    assert record["seeds"] == [0, 1] and record["plan"] is True
    record = write_sweep_file(small_linear_sweep(tmp_path, seeds=(2,), plan=False))  # a training part after the planning one
    assert record["seeds"] == [0, 1, 2] and record["plan"] is True
    other = write_sweep_file(small_linear_sweep(tmp_path, seeds=(3,), plan=True, max_evaluations=50))  # other planning: another
    assert other["seeds"] == [3] and other["max_evaluations"] == 50


def test_trained_only_plans_the_tested_runs_and_starts_none(tmp_path):
    from tnlib.experiments.running.sweep import run_sweep

    run_sweep(small_linear_sweep(tmp_path, distributions=("N",), plan=False), progress=False)
    both = small_linear_sweep(tmp_path, plan=True, max_evaluations=200)
    rows = run_sweep(both, progress=False, trained_only=True)
    assert [row["run"] for row in rows] == ["gripper-linear-N-learn-ff-llmcut-s0"], rows
    assert "coverage_default" in rows[0] and "coverage_clip" in rows[0]
    untrained = both.run_folder(next(c for c in both.train_configs() if c.head.distribution == "TN"))
    assert not untrained.path.exists()
    record = json.loads((tmp_path / "sweep.json").read_text())
    assert record["plan"] is True and record["distributions"] == ["N", "TN"]


def test_trained_only_never_trains_a_tested_run_on(tmp_path):
    from tnlib.experiments.running.sweep import run_sweep

    trained = small_linear_sweep(tmp_path, distributions=("N",), plan=False)
    run_sweep(trained, progress=False)
    run = trained.run_folder(trained.train_configs()[0])
    weights, curve = run.best.read_bytes(), run.curves_file.read_text()
    # a sweep asking for more steps trains the run on; one that only plans plans the weights it was tested with
    longer = small_linear_sweep(tmp_path, distributions=("N",), plan=True, steps=24)
    [row] = run_sweep(longer, progress=False, trained_only=True)
    assert row["run"] == run.path.name and "coverage_default" in row and "coverage_clip" in row
    assert run.best.read_bytes() == weights and run.curves_file.read_text() == curve
    assert run.planning_file("clip").is_file()
    run_sweep(longer, progress=False)
    assert run.curves_file.read_text() != curve  # (what the planning pass left alone)


def test_a_sweep_file_without_a_setting_unites_with_the_sweep_at_its_default(tmp_path):
    from tnlib.experiments.running.sweep import write_sweep_file

    # a flat sweep record without the setting: a sweep that names none ran at its default
    record = json.loads(json.dumps(small_linear_sweep(tmp_path, seeds=(0,)).parameters()))
    del record["fixed_sigma"]
    (tmp_path / "sweep.json").write_text(json.dumps(record))
    assert write_sweep_file(small_linear_sweep(tmp_path, seeds=(1,)))["seeds"] == [0, 1]
    authors = write_sweep_file(small_linear_sweep(tmp_path, seeds=(2,), fixed_sigma="authors"))
    assert authors["seeds"] == [2] and authors["train"]["fixed_sigma"] == "authors"  # another setting: another sweep




@pytest.mark.parametrize("display", ["text", "bar"])
def test_a_finished_sweep_says_so_at_once_and_hands_no_run_to_a_worker(tmp_path, capsys, monkeypatch, display):
    """Rerun over its finished folder, a sweep reads its runs' records instead of handing each to a worker that
    loads its data and builds its model to find nothing to do, and says in one line that all is done -- no bar
    sitting at its end with no rate ("?runs/s")."""
    import tnlib.experiments.running.cells as cells
    import tnlib.experiments.running.sweep as sweep_module

    first = run_sweep(small_linear_sweep(tmp_path), progress=False)
    capsys.readouterr()

    def no_worker(*args, **kwargs):
        raise AssertionError("a finished run went to a worker")

    monkeypatch.setattr(cells, "run_cell", no_worker)
    monkeypatch.setattr(sweep_module, "run_jobs", no_worker)
    monkeypatch.setenv("TNLIB_PROGRESS", display)
    again = run_sweep(small_linear_sweep(tmp_path))
    assert again == first
    assert capsys.readouterr().err.splitlines() == [
        f"sweep: 2/2 runs done already (trained, tested and planned in {tmp_path})"]


def test_a_sweep_hands_a_worker_only_the_runs_with_work_left(tmp_path, capsys, monkeypatch):
    import tnlib.experiments.running.cells as cells
    import tnlib.experiments.running.sweep as sweep_module

    run_sweep(small_linear_sweep(tmp_path, plan=False), progress=False)
    worked, real_run_cell = [], cells.run_cell

    def run_cell(config, settings, wait_if_busy=True):
        worked.append(config.name)
        return real_run_cell(config, settings, wait_if_busy)

    monkeypatch.setattr(cells, "run_cell", run_cell)
    monkeypatch.setenv("TNLIB_PROGRESS", "text")
    monkeypatch.setattr(sweep_module, "SWEEP_LINE_INTERVAL_S", 0.0)
    rows = run_sweep(small_linear_sweep(tmp_path, plan=False, seeds=(0, 1), workers=1))
    assert sorted(worked) == ["gripper-linear-N-learn-ff-llmcut-s1", "gripper-linear-TN-learn-ff-llmcut-s1"]
    assert len(rows) == 4 and all("mse" in row for row in rows)
    counts = [line.split()[1] for line in capsys.readouterr().err.splitlines() if line.startswith("sweep: ")]
    assert counts == ["2/4", "3/4", "4/4"]


def test_a_runs_records_leave_it_to_its_cell_where_any_work_is_left(tmp_path):
    from tnlib.experiments.running.cells import recorded_cell_summary
    from tnlib.experiments.running.sweep import cell_settings
    from tnlib.learning.run_files import RunDir
    from tnlib.planning.search_settings import SearchSettings

    sweep = small_linear_sweep(tmp_path)
    rows = {row["run"]: row for row in run_sweep(sweep, progress=False)}
    config, settings = sweep.train_configs()[1], cell_settings(sweep)
    run = RunDir(tmp_path / config.name)
    assert recorded_cell_summary(config, settings) == rows[config.name]  # TN: both estimates planned
    assert recorded_cell_summary(replace(config, steps=18), settings) is None  # more steps asked
    assert recorded_cell_summary(replace(config, learning_rate=config.lr / 2), settings) is None  # trained otherwise
    assert recorded_cell_summary(config, replace(settings, plan_instances=2)) is None  # an instance to plan
    assert recorded_cell_summary(config, replace(settings, search=SearchSettings(
        settings.search.protocol, settings.search.max_evaluations + 1))) is None  # planned under another limit
    # until flat: a curve of two validations is too short to call flat, so the run trains on
    assert recorded_cell_summary(config, replace(settings, max_steps=24, extend_steps=6)) is None
    metrics = json.loads(run.metrics_file("test").read_text())
    run.metrics_file("test").write_text(json.dumps({**metrics, "checkpoint_step": 6}))  # tested at another step
    assert recorded_cell_summary(config, settings) is None
    run.metrics_file("test").write_text(json.dumps(metrics))
    run.last.rename(run.path / "elsewhere.pt")  # no resume checkpoint, not pruned: train() decides
    assert recorded_cell_summary(config, settings) is None
    (run.path / "elsewhere.pt").rename(run.last)
    assert recorded_cell_summary(config, settings) == rows[config.name]
