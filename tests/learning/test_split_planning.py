"""GBFS with learned heuristics: the values it plans with, validated plans, resumable split runs, Table 2."""
from __future__ import annotations

import importlib.util
import itertools
import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from fixtures.heuristic_items import SMALL, items_from_rows, plan_rows
from tnlib.data.loading import load_split
from tnlib.learning.models import make_encoder
from tnlib.experiments.results_dir import ResultsDir
from tnlib.experiments.reporting.table_rows import collect_planning
from tnlib.experiments.reporting.tables import render_table2
from tnlib.learning.learned_heuristic import LearnedHeuristic
from tnlib.learning.split_planning import plan_baseline, plan_problem, plan_split, planning_summary
from tnlib.planning.heuristics import evaluate_all
from tnlib.planning.pddl import resolve_domain
from tnlib.planning.task import load_task
from tnlib.learning.heads import HeadConfig
from tnlib.learning.training import TrainConfig, checkpoint_encoder, load_checkpoint, train
from tnlib.planning.search_settings import DISTINCT, PAPER, SearchSettings

# WL features need wlplan (environment.yml and CI install it); on a machine without it the wl cases skip
NEEDS_WLPLAN = pytest.mark.skipif(importlib.util.find_spec("wlplan") is None, reason="wlplan is not installed")


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    folder = tmp_path_factory.mktemp("planning-problems")
    return [r for params in SMALL["blocksworld"] for seed in (1, 2) for r in plan_rows("blocksworld", params, seed,
                                                                                       folder)]


def _train(tmp, rows, **kwargs):
    base = dict(domain="blocksworld", model="linear", steps=30, batch_size=8, eval_every=10, checkpoint_every=10,
                out_dir=str(tmp), progress=False, seed=0)
    base.update(kwargs)
    if base["model"] == "nlm":
        base["model_args"] = {"depth": 3}
    items = items_from_rows(rows, base.get("lower_bound", "lmcut"), base.get("residual", "ff"))
    return train(TrainConfig.from_dict(base), items, items)


@pytest.mark.parametrize("model, distribution", [("linear", "TN"), ("nlm", "N"), ("hgn", "TN"),
                                                      pytest.param("wl", "TN", marks=NEEDS_WLPLAN)])
def test_heuristic_values_are_the_models_point_estimates(tmp_path, rows, model, distribution):
    run = _train(tmp_path, rows, model=model, distribution=distribution)
    problem = rows[-1]["problem"]
    heuristic = LearnedHeuristic(run, resolve_domain("blocksworld"), problem)
    task = heuristic.task
    # the states of one optimal plan, and the reference: the head's estimate on dataset-style items of them
    mine = [r for r in rows if r["problem"] == problem]
    states = [task.facts_to_state([a for a in r["state"] if a in task.fact_index]) for r in mine]
    values = heuristic(states)
    model_, head, config, saved = load_checkpoint(run)
    encoder = checkpoint_encoder(config, saved)
    batch = encoder.collate_items(items_from_rows(mine))
    with torch.no_grad():
        expected = head(model_(batch.inputs), batch.residual, batch.lower, batch.upper).point_estimate()
    np.testing.assert_allclose(values, expected.double().numpy(), rtol=1e-5, atol=1e-5)
    if distribution == "TN":  # the truncated mean never falls below the (open) lower bound
        assert (values >= np.array([r["lmcut"] for r in mine]) - 0.1 - 1e-5).all()


@pytest.mark.parametrize("model", ["nlm", "hgn", "linear", pytest.param("wl", marks=NEEDS_WLPLAN)])
def test_packed_route_equals_the_item_route(tmp_path, rows, model):
    # the planner builds model inputs from packed states; the dataset route (atom strings -> collate_items) is
    # the reference: the same tensors, hence the same values
    run = _train(tmp_path, rows, model=model, distribution="N", steps=10)
    problem = rows[-1]["problem"]
    heuristic = LearnedHeuristic(run, resolve_domain("blocksworld"), problem)
    task = heuristic.task
    states = [task.init] + [s for _, s in task.successors(task.init)]
    values, features = heuristic._symbolic(states)
    inputs, residual, lower, upper = heuristic.encode(states, values, features)
    batch = heuristic.encoder.collate_items(heuristic._items(states, values))
    expected = batch.inputs
    if model == "nlm":
        assert all(torch.equal(a, b) for a, b in zip(inputs.tensors, expected.tensors))
    elif model == "hgn":
        assert torch.equal(inputs.node_features, expected.node_features)
    else:
        assert torch.equal(inputs, expected)
    for mine, theirs in ((residual, batch.residual), (lower, batch.lower), (upper, batch.upper)):
        assert torch.equal(mine, theirs)
    with torch.no_grad():
        reference = heuristic.head(heuristic.model(expected), batch.residual, batch.lower, batch.upper)
    assert np.array_equal(heuristic(states), reference.point_estimate().double().numpy())
    assert heuristic.calls == 1 and heuristic.evaluated == len(states)
    assert all(seconds > 0 for seconds in heuristic.seconds.values())


def test_gbfs_with_a_learned_heuristic_finds_valid_plans(tmp_path, rows):
    run = _train(tmp_path, rows, model="linear", distribution="TN")
    for problem, protocol in itertools.product(sorted({r["problem"] for r in rows}), (PAPER, DISTINCT)):
        heuristic = LearnedHeuristic(run, resolve_domain("blocksworld"), problem)
        record = plan_problem(heuristic, resolve_domain("blocksworld"), problem, SearchSettings(protocol, 5000))
        assert record["solved"], record  # (plan_problem validates every plan it returns)
        assert record["protocol"] == protocol
        assert record["evaluations"] >= record["plan_length"] - (protocol == PAPER)
        if protocol == DISTINCT:
            assert heuristic.evaluated == record["evaluations"]  # every evaluation went through the model
        else:  # counted per generated successor; a state seen again is not recomputed
            assert heuristic.evaluated <= record["evaluations"]
        assert heuristic.calls <= record["expansions"] + 1  # at most one batch per expansion, plus the initial state


def test_clip_estimate_is_for_gaussian_models_only(tmp_path, rows):
    tn = _train(tmp_path / "tn", rows, distribution="TN")
    n = _train(tmp_path / "n", rows, distribution="N")
    problem = rows[0]["problem"]
    with pytest.raises(ValueError, match="N models only"):
        LearnedHeuristic(tn, resolve_domain("blocksworld"), problem, estimate="clip")
    clipped = LearnedHeuristic(n, resolve_domain("blocksworld"), problem, estimate="clip")
    plain = LearnedHeuristic(n, resolve_domain("blocksworld"), problem)
    state = [clipped.task.init]
    lmcut = clipped.heuristics["lmcut"].batch(state)[0]
    assert clipped(state)[0] == pytest.approx(max(plain(state)[0], lmcut), rel=1e-6)
    with pytest.raises(ValueError, match="unknown estimate"):
        LearnedHeuristic(n, resolve_domain("blocksworld"), problem, estimate="median")


DEAD_END_DOMAIN = Path(__file__).resolve().parents[1] / "fixtures" / "pddl" / "deadend-domain.pddl"
DEAD_END_PROBLEM = Path(__file__).resolve().parents[1] / "fixtures" / "pddl" / "deadend-problem.pddl"


def _dead_end_rows() -> tuple[object, list, list[dict]]:
    """The fragile-vase task (dropping the vase is a dead end), its two live states and their rows."""
    task = load_task(DEAD_END_DOMAIN, DEAD_END_PROBLEM)
    states = [task.init, task.apply(task.init, "(walk)")]
    values = evaluate_all(task, states)
    rows = []
    for i, state in enumerate(states):
        row = {key: float(v[i]) for key, v in values.items()}
        row.update(state=sorted(task.state_to_facts(state)), goal=["(delivered)"], h_star=float(2 - i),
                   instance="fragile-1", problem=str(DEAD_END_PROBLEM), domain=str(DEAD_END_DOMAIN))
        rows.append(row)
    return task, states, rows


@pytest.mark.parametrize("distribution, residual, estimate", [
    ("N", "ff", "default"), ("N", "none", "default"), ("N", "ff", "clip"), ("N", "none", "clip"),
    ("TN", "ff", "default"), ("TN", "none", "default")])
def test_dead_ends_are_infinite_whether_or_not_the_estimate_reads_the_bound(tmp_path, distribution, residual,
                                                                              estimate):
    # N's mu never reads LM-cut's value, so its search skips LM-cut and finds dead ends with a cheaper relaxation
    # heuristic: the values must be the head's estimates on the dataset's items (LM-cut included) all the same
    task, live, rows = _dead_end_rows()
    config = TrainConfig.from_dict(dict(domain=str(DEAD_END_DOMAIN), model="linear", steps=5, batch_size=2,
                                        eval_every=5, out_dir=str(tmp_path), progress=False, seed=0,
                                        distribution=distribution, residual=residual))
    items = items_from_rows(rows, "lmcut", residual)
    run = train(config, items, items)
    assert run.parent == tmp_path  # named by the domain file, not its path
    heuristic = LearnedHeuristic(run, DEAD_END_DOMAIN, DEAD_END_PROBLEM, estimate=estimate)
    assert ("lmcut" in heuristic.heuristics) == (distribution == "TN" or estimate == "clip")
    values = heuristic([live[0], task.apply(task.init, "(drop)"), live[1]])
    assert math.isinf(values[1])
    model, head, _, saved = load_checkpoint(run)
    batch = checkpoint_encoder(config, saved).collate_items(items)
    with torch.no_grad():
        prediction = head(model(batch.inputs), batch.residual, batch.lower, batch.upper)
    expected = prediction.clipped_point_estimate() if estimate == "clip" else prediction.point_estimate()
    np.testing.assert_allclose(values[[0, 2]], expected.double().numpy(), rtol=1e-6)


def test_plan_split_on_the_shipped_data_is_resumable(tmp_path):
    table = load_split(None, "gripper", "train")
    items_rows = table.to_pylist()[:200]
    items = [{"h_star": torch.tensor(float(r["h_star"])), "lower": torch.tensor(r["lmcut"]),
              "upper": torch.tensor(math.inf), "residual": torch.tensor(r["ff"]),
              "features": torch.tensor([r["goalcount"], r["ff"], r["ff_ignored_deletes_total"],
                                        r["ff_ignored_deletes_mean"]], dtype=torch.float32),
              "ff": r["ff"], "lmcut": r["lmcut"], "state": r["state"], "goal": r["goal"],
              "instance": r["instance"], "problem": str(table.problem_path(r["instance"])), "domain": "gripper"}
             for r in items_rows]
    run = train(TrainConfig(domain="gripper", model="linear", steps=20, batch_size=16, eval_every=10,
                            checkpoint_every=10, out_dir=str(tmp_path), progress=False), items, items)
    first = plan_split(run, instances=2)
    assert len(first) == 2 and all(r["instance"] for r in first)
    lines = (run / "planning-default.jsonl").read_text().splitlines()
    again = plan_split(run, instances=2)  # nothing left to do: no new lines
    assert again == first
    assert (run / "planning-default.jsonl").read_text().splitlines() == lines
    # a line cut by a crash is planned again, not trusted
    (run / "planning-default.jsonl").write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])
    third = plan_split(run, instances=2)
    assert [r["evaluations"] for r in third] == [r["evaluations"] for r in first]
    baseline = plan_baseline(None, "gripper", out_dir=tmp_path, instances=2)
    assert len(baseline) == 2 and all(r["solved"] for r in baseline)
    rows = collect_planning(tmp_path)
    assert rows and rows[0]["column"] == "TN" and rows[0]["instances"] == 2
    assert rows[0]["protocols"] == [PAPER] and all(r["protocol"] == PAPER for r in first + baseline)
    # asked for the other protocol, a resumed run plans again instead of reusing the paper-protocol records
    distinct = plan_split(run, instances=2, settings=SearchSettings(DISTINCT))
    assert [r["protocol"] for r in distinct] == [DISTINCT, DISTINCT]
    assert all(d["evaluations"] <= p["evaluations"] + 1 for d, p in zip(distinct, first))
    assert collect_planning(run)[0]["protocols"] == [DISTINCT]
    # another evaluation limit: planned again, and the file keeps only records of the current setting
    tight = plan_split(run, instances=2, settings=SearchSettings(DISTINCT, 3))
    assert all(r["max_evaluations"] == 3 and not r["solved"] for r in tight)
    assert {json.loads(line)["max_evaluations"] for line in
            (run / "planning-default.jsonl").read_text().splitlines()} == {3}
    # weights trained further since (another best.pt): planned again with them
    assert all(r["checkpoint"] == first[0]["checkpoint"] for r in first + distinct + tight)
    best = run / "best.pt"
    state = torch.load(best, weights_only=False)
    state["model"] = {k: v + 1.0 for k, v in state["model"].items()}
    torch.save(state, best)
    retrained = plan_split(run, instances=2, settings=SearchSettings(DISTINCT, 3))
    assert all(r["checkpoint"] != first[0]["checkpoint"] for r in retrained)
    assert len((run / "planning-default.jsonl").read_text().splitlines()) == 2
    # another instance set (a split, a plan set) keeps its own file: Table 2 never mixes two sets' records
    on_test = plan_split(run, split="test", instances=1, settings=SearchSettings(DISTINCT, 3))
    assert len(on_test) == 1 and (run / "planning-test-default.jsonl").is_file()
    assert len((run / "planning-default.jsonl").read_text().splitlines()) == 2
    assert [p.name for p in ResultsDir(tmp_path).planning_files()] == ["planning-default.jsonl"]
    assert [p.name for p in ResultsDir(tmp_path).planning_files("test")] == ["planning-test-default.jsonl"]
    assert collect_planning(tmp_path)[0]["instances"] == 2


@pytest.fixture(scope="module")
def gripper_run(tmp_path_factory):
    """A tiny run folder trained on data/small's gripper (a few steps of the linear TN model: seconds)."""
    out = tmp_path_factory.mktemp("gripper-runs")
    return train(TrainConfig(domain="gripper", model="linear", head=HeadConfig(distribution="TN"), steps=20,
                             batch_size=16, eval_every=10, checkpoint_every=10, out_dir=str(out), progress=False))


def test_cli_plan_with_a_model_is_table2s_learned_gbfs(gripper_run, tmp_path, capsys):
    from tnlib.cli import main
    from tnlib.planning.plans import read_plan, validate_plan
    from tnlib.planning.search import gbfs
    from tnlib.planning.task import load_task

    table = load_split(None, "gripper", "plan")
    problem = table.problem_path(table.instances()[0])
    domain_file = resolve_domain("gripper")
    # the planning stage's record of this instance (what Table 2 counts)
    [stage] = plan_split(gripper_run, instances=1)
    for protocol in (PAPER, DISTINCT):
        # the reference: the library's learned GBFS called directly
        heuristic = LearnedHeuristic(gripper_run, domain_file, problem)
        direct = gbfs(heuristic.task, heuristic, SearchSettings(max_evaluations=10_000, protocol=protocol))
        assert direct.solved
        for model in (gripper_run, gripper_run / "best.pt"):  # a run folder or a checkpoint file
            assert main(["plan", "gripper", str(problem), "--model", str(model), "--protocol", protocol,
                         "--json"]) == 0
            record = json.loads(capsys.readouterr().out)
            assert (record["plan"], record["evaluations"], record["expansions"]) == \
                (direct.plan, direct.evaluations, direct.expansions)
            assert record["protocol"] == protocol and record["status"] == "solved"
            assert record["model"] == str(model) and record["checkpoint"] == str(gripper_run / "best.pt")
            assert (record["domain"], record["distribution"], record["estimate"]) == ("gripper", "TN", "default")
            assert record["lmcut"] == "tnlib"  # l from the LM-cut data/small's labels hold
            assert record["checkpoint_step"] == torch.load(gripper_run / "best.pt", weights_only=False)["step"]
            assert record["setup_seconds"] >= 0 and record["seconds"] >= 0  # (two times, the search's apart)
        if protocol == PAPER:
            assert (record["evaluations"], record["plan_length"]) == (stage["evaluations"], stage["plan_length"])
            paper_plan = record["plan"]
    # the text form: what it planned with, the plan one action per line, cost, evaluations and protocol
    plan_file = tmp_path / "out" / "gripper.plan"
    assert main(["plan", "gripper", str(problem), "--model", str(gripper_run)]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0] == "status: solved" and text[1].startswith(f"model: {gripper_run / 'best.pt'} (step ")
    # loading the model and its first evaluation's compilation are timed apart from the search
    assert re.search(r"estimate default; tnlib's LM-cut, as its training data's; set up in \d+\.\d{3} s: loaded, "
                     r"and its first evaluation compiled, before the search -- not in its seconds below\)$",
                     text[1]), text[1]
    assert f"cost: {stage['plan_length']} (unit cost)" in text
    assert f"evaluations: {stage['evaluations']}  expansions: {stage['expansions']}" in "\n".join(text)
    assert "(protocol: paper)" in text[4]
    printed = [line for line in text if line.startswith("(")]
    assert printed == paper_plan
    assert main(["plan", "gripper", str(problem), "--model", str(gripper_run), "--plan-file", str(plan_file)]) == 0
    assert not [line for line in capsys.readouterr().out.splitlines() if line.startswith("(")]
    plan = read_plan(plan_file)
    assert plan == printed
    assert validate_plan(load_task(domain_file, problem, remove_irrelevant_operators=False), plan).valid
    assert main(["validate", "gripper", str(problem), str(plan_file)]) == 0
    assert capsys.readouterr().out.startswith("VALID")
    # the evaluation limit applies as in the symbolic route
    assert main(["plan", "gripper", str(problem), "--model", str(gripper_run), "--max-evaluations", "3",
                 "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["status"] == "evaluation limit"


def _trained_with(run, lmcut):
    """Say in ``run``'s data.json that its training split held ``lmcut``'s LM-cut (as training records it)."""
    data = json.loads((run / "data.json").read_text())
    (run / "data.json").write_text(json.dumps({**data, "lmcut": lmcut}))


def test_planning_computes_the_lmcut_the_model_trained_with(gripper_run, tmp_path):
    from tnlib.planning.heuristics import FastDownwardLMCutHeuristic, LMCutHeuristic

    table = load_split(None, "gripper", "plan")
    problem, domain_file = table.problem_path(table.instances()[0]), resolve_domain("gripper")
    # data/small holds tnlib's LM-cut, and training recorded that
    assert json.loads((gripper_run / "data.json").read_text())["lmcut"] == "tnlib"
    mine = LearnedHeuristic(gripper_run, domain_file, problem)
    assert mine.lmcut_source == "tnlib" and type(mine.heuristics["lmcut"]) is LMCutHeuristic
    run = Path(shutil.copytree(gripper_run, tmp_path / gripper_run.name))
    _trained_with(run, "fast-downward")
    for checkpoint in (run, run / "best.pt"):  # a run folder or a checkpoint file in it
        theirs = LearnedHeuristic(checkpoint, domain_file, problem)
        assert theirs.lmcut_source == "fast-downward"
        assert type(theirs.heuristics["lmcut"]) is FastDownwardLMCutHeuristic
    told = LearnedHeuristic(run, domain_file, problem, fast_downward_lmcut=False)  # told otherwise, it does so
    assert told.lmcut_source == "tnlib" and type(told.heuristics["lmcut"]) is LMCutHeuristic


def test_records_planned_with_the_other_lmcut_are_planned_again(gripper_run, tmp_path):
    from tnlib.learning.split_planning import recorded_plans

    run = Path(shutil.copytree(gripper_run, tmp_path / "runs" / gripper_run.name))
    before = plan_split(run, instances=3)
    assert [r["lmcut"] for r in before] == ["tnlib"] * 3
    assert recorded_plans(run, instances=3) == before
    # records that name no LM-cut were planned with tnlib's: they stand
    path = run / "planning-default.jsonl"
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "lmcut"}) + "\n" for r in before))
    assert plan_split(run, instances=3) == [{k: v for k, v in r.items() if k != "lmcut"} for r in before]
    _trained_with(run, "fast-downward")
    assert recorded_plans(run, instances=3) is None  # planned with the other l: left to plan
    after = plan_split(run, instances=3)
    assert all(r["lmcut"] == "fast-downward" and r["solved"] for r in after)
    assert recorded_plans(run, instances=3) == after
    lines = [json.loads(line) for line in (run / "planning-default.jsonl").read_text().splitlines()]
    assert lines == after  # the file keeps the current setting's records only
    # each record is the search with Fast Downward's tie-breaking, counted the same way
    table = load_split(None, "gripper", "plan")
    for instance, record in zip(table.instances()[:3], after):
        problem = table.problem_path(instance)
        heuristic = LearnedHeuristic(run, resolve_domain("gripper"), problem, fast_downward_lmcut=True)
        assert plan_problem(heuristic, resolve_domain("gripper"), problem)["evaluations"] == record["evaluations"]


def test_an_estimate_that_reads_no_lmcut_keeps_its_records(tmp_path):
    from tnlib.learning.learned_heuristic import reads_lmcut_value

    assert not reads_lmcut_value(HeadConfig(distribution="N", residual="ff"), "default")
    assert reads_lmcut_value(HeadConfig(distribution="N", residual="ff"), "clip")
    assert reads_lmcut_value(HeadConfig(distribution="TN", residual="none"), "default")
    assert reads_lmcut_value(HeadConfig(distribution="N", residual="lmcut"), "default")
    run = train(TrainConfig(domain="gripper", model="linear", head=HeadConfig(distribution="N"), steps=10,
                            batch_size=16, eval_every=10, checkpoint_every=10, out_dir=str(tmp_path),
                            progress=False))
    mu = plan_split(run, instances=2)
    clip = plan_split(run, "clip", instances=2)
    assert [r["lmcut"] for r in mu + clip] == [None, None, "tnlib", "tnlib"]
    _trained_with(run, "fast-downward")
    assert plan_split(run, instances=2) == mu  # N's mu reads the bound only where it is infinite
    plan = load_split(None, "gripper", "plan")
    assert LearnedHeuristic(run, resolve_domain("gripper"), plan.problem_path(plan.instances()[0])).lmcut_source is None
    assert [r["lmcut"] for r in plan_split(run, "clip", instances=2)] == ["fast-downward"] * 2


def test_a_long_search_shows_its_evaluations_and_a_short_one_nothing(gripper_run, tmp_path, monkeypatch, capsys):
    import functools

    import tnlib.progress
    from tnlib.cli import main

    monkeypatch.setenv("TNLIB_PROGRESS", "text")
    table = load_split(None, "gripper", "plan")
    problem = table.problem_path(table.instances()[0])
    # at the default delay (30 s) these searches of a second show nothing: stdout's record is all
    for route in (["--heuristic", "ff"], ["--model", str(gripper_run)]):
        assert main(["plan", "gripper", str(problem), *route, "--json"]) == 0
        assert capsys.readouterr().err == ""
    # as if each ran long: a display from the start, its last line the search's count against the limit
    monkeypatch.setattr(tnlib.progress, "LateProgress", functools.partial(tnlib.progress.LateProgress, after_s=0))
    for route in (["--heuristic", "ff"], ["--model", str(gripper_run)]):
        assert main(["plan", "gripper", str(problem), *route, "--json", "--max-evaluations", "5000"]) == 0
        printed = capsys.readouterr()
        evaluations, lines = json.loads(printed.out)["evaluations"], printed.err.splitlines()
        assert lines[-1].startswith(f"{problem.stem}: {evaluations:,}/5,000 evaluations done"), lines
    # the planning stage of a one-process sweep (run progress on): the same, under the run's instance count
    run = tmp_path / gripper_run.name
    shutil.copytree(gripper_run, run, ignore=shutil.ignore_patterns("planning-*"))  # planned by other tests
    [record] = plan_split(run, instances=1, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert f"{problem.stem}: {record['evaluations']:,}/10,000 evaluations done" in "\n".join(lines)
    assert lines[-1].startswith(f"{run.name} default: 1/1 instances done")
    plan_split(run, instances=1, progress=False)  # planned already, and without progress: nothing
    assert capsys.readouterr().err == ""


def test_a_model_refuses_another_domains_problem(gripper_run, capsys):
    from tnlib.cli import main

    table = load_split(None, "ferry", "plan")
    problem = table.problem_path(table.instances()[0])
    with pytest.raises(ValueError, match="trained on gripper .* is a 'ferry' problem"):
        LearnedHeuristic(gripper_run, resolve_domain("ferry"), problem)
    assert main(["plan", "ferry", str(problem), "--model", str(gripper_run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tnlib plan: error: ") and "trained on gripper" in err
    # a TN model has no N+clip estimate; the CLI says so in one line
    assert main(["plan", "gripper", str(load_split(None, "gripper", "plan").problem_path(
        "gripper-b8-s4639370000102")), "--model", str(gripper_run), "--estimate", "clip"]) == 2
    assert "N models only" in capsys.readouterr().err


def test_planning_sees_the_states_the_dataset_labelled():
    # Along each labelled optimal plan, the grounding planning searches must reach the dataset's next state exactly
    # (the model was trained on those atoms) and give the dataset's heuristic values. Visitall with ratio 0.5 is
    # where relevance pruning would differ: it drops `visited` of cells that are not goals.
    from tnlib.planning.heuristics import evaluate_all
    from tnlib.planning.task import load_search_task, load_task

    table = load_split(None, "visitall", "test")
    instances = [i for i in table.instances() if "-r0.5-" in i][:2]
    assert instances
    pruned_differs = False
    for instance in instances:
        rows = sorted((r for r in table if r["instance"] == instance), key=lambda r: r["step"])
        problem = table.problem_path(instance)
        task, pruned = load_search_task("visitall", problem), load_task("visitall", problem)
        states = [task.facts_to_state([a for a in r["state"] if a in task.fact_index]) for r in rows]  # no statics
        for state, after in zip(states, states[1:]):
            assert after in {successor for _, successor in task.successors(state)}
            pruned_differs |= after not in {successor for _, successor in pruned.successors(state)}
        values = evaluate_all(task, states)
        for name in ("hmax", "hadd", "ff", "lmcut", "goalcount"):
            assert list(values[name]) == [r[name] for r in rows], name
    assert pruned_differs  # the pruned grounding would have shown the model states it never saw


def test_summary_counts_failures_at_the_limit():
    records = [{"solved": True, "evaluations": 100}, {"solved": False, "evaluations": 10_000},
               {"solved": True, "evaluations": 300}, {"solved": False, "evaluations": 42}]
    s = planning_summary(records, max_evaluations=10_000)
    assert s["coverage"] == 0.5
    assert s["evaluations"] == (100 + 10_000 + 300 + 10_000) / 4
    # a record names the limit it ran under; that limit counts, not the caller's default
    limited = [dict(r, max_evaluations=200) for r in records]
    assert planning_summary(limited)["evaluations"] == (100 + 200 + 300 + 200) / 4
    assert planning_summary(limited)["max_evaluations"] == 200
    with pytest.raises(ValueError, match="different evaluation limits"):
        planning_summary(limited[:2] + records[2:])
    unlimited = [dict(r, max_evaluations=None) for r in records]  # no limit: a failure exhausted the space
    assert planning_summary(unlimited)["evaluations"] == (100 + 10_000 + 300 + 42) / 4


def test_table2_refuses_to_pool_runs_that_differ_in_more_than_the_seed(tmp_path):
    for name, seed, link in (("s0", 0, "softplus"), ("s1", 1, "softplus"), ("b0", 0, "bounded")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(dict(
            domain="ferry", model="nlm", distribution="TN", sigma="learn", residual="ff", lower_bound="lmcut",
            seed=seed, sigma_link=link)))
        (folder / "planning-default.jsonl").write_text(json.dumps({"problem": "p.pddl", "protocol": PAPER,
                                                                   "solved": True, "evaluations": 9}) + "\n")
    with pytest.raises(ValueError, match="Table 2 cell ferry nlm TN learn/ff .*sigma_link"):
        render_table2(tmp_path)
    (tmp_path / "b0" / "planning-default.jsonl").unlink()
    assert "ferry" in render_table2(tmp_path)


def test_table2_counts_failures_at_the_limit_they_ran_under(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(dict(domain="ferry", model="nlm", distribution="TN",
                                                         sigma="learn", residual="ff", lower_bound="lmcut", seed=0)))
    lines = [{"problem": "p0.pddl", "protocol": PAPER, "max_evaluations": 200, "solved": True, "evaluations": 50},
             {"problem": "p1.pddl", "protocol": PAPER, "max_evaluations": 200, "solved": False, "evaluations": 200}]
    (folder / "planning-default.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    table = render_table2(tmp_path)
    assert table.splitlines()[0].endswith("; at most 200 evaluations")
    evaluations = table.split("**Average node evaluations")[1]
    ferry = [line for line in evaluations.splitlines() if line.startswith("| ferry")][0].split(" | ")
    assert ferry[4] == "125 (1 seed) |"  # (50 + 200) / 2, not (50 + 10,000) / 2; one seed: no ±0 and no bold


def test_table2_layout_and_no_bold_below_the_seeds_a_paired_interval_needs(tmp_path):
    from tnlib.experiments.reporting.seed_statistics import FEW_SEEDS_BOLD_RULE
    from tnlib.experiments.reporting.tables import table2_bold_rule

    def run(name, domain, sigma, residual, distribution, seed, results, estimate="default"):
        folder = tmp_path / name
        folder.mkdir(exist_ok=True)
        config = dict(domain=domain, model="nlm", distribution=distribution, sigma=sigma, residual=residual,
                      lower_bound="lmcut", seed=seed)
        (folder / "config.json").write_text(json.dumps(config))
        with (folder / f"planning-{estimate}.jsonl").open("w") as f:
            for i, (solved, evaluations) in enumerate(results):
                f.write(json.dumps({"problem": f"p{i}.pddl", "protocol": DISTINCT, "solved": solved,
                                    "evaluations": evaluations}) + "\n")

    run("a0", "ferry", "learn", "ff", "TN", 0, [(True, 100), (True, 200)])
    run("a1", "ferry", "learn", "ff", "TN", 1, [(True, 300), (True, 400)])
    run("b0", "ferry", "learn", "ff", "N", 0, [(True, 100), (False, 50)])
    run("b0", "ferry", "learn", "ff", "N", 0, [(True, 100), (True, 50)], estimate="clip")
    (tmp_path / "baseline-ferry-ff.jsonl").write_text(
        json.dumps({"problem": "p0.pddl", "protocol": DISTINCT, "solved": True, "evaluations": 7}) + "\n")
    table = render_table2(tmp_path)
    assert table.splitlines()[0] == "GBFS counting protocol: distinct; at most 10,000 evaluations"
    coverage, evaluations = table.split("**Average node evaluations")
    ferry_cov = [line for line in coverage.splitlines() if line.startswith("| ferry")][0].split(" | ")
    # FF, then learn/ff N, N+clip, TN; fixed/none, which no run has, is left out
    assert ferry_cov[1] == "1.00"
    # one or two seeds per column: no paired interval, so nothing is bold, and the rule says why
    assert ferry_cov[2] == "0.50 (1 seed)" and ferry_cov[3] == "1.00 (1 seed)"
    assert ferry_cov[4] == "1.00±0.00 |"
    assert "**" not in coverage.split("|---", 1)[1] and table2_bold_rule(tmp_path) == FEW_SEEDS_BOLD_RULE
    assert "fixed/none" not in table
    ferry_ev = [line for line in evaluations.splitlines() if line.startswith("| ferry")][0].split(" | ")
    assert ferry_ev[1] == "7"
    assert ferry_ev[2] == "5050 (1 seed)"  # the unsolved instance counts as 10,000 evaluations
    assert ferry_ev[3] == "75 (1 seed)" and ferry_ev[4] == "250±141 |"
    assert "**" not in evaluations.split("|---", 1)[1]


def _random_nlm_checkpoint(folder, domain: str, seed: int = 0):
    """A checkpoint of the authors' NLM (depth 5: arity-3 layers) at its seeded initialisation, TN, learned sigma,
    residual h_FF, LM-cut bound."""
    from tnlib.learning.models import build_model, model_arguments
    from tnlib.learning.checkpoints import CHECKPOINT_FORMAT

    config = TrainConfig(domain=domain, model="nlm", head=HeadConfig(distribution="TN"), seed=seed,
                         out_dir=str(folder), device="cpu")
    arguments = model_arguments("nlm", make_encoder("nlm", domain).model_kwargs())
    torch.manual_seed(seed)
    model = build_model("nlm", **arguments)
    path = folder / f"{domain}-nlm.pt"
    torch.save({"format": CHECKPOINT_FORMAT, "config": config.to_dict(), "model_kwargs": arguments,
                "model": model.state_dict(), "step": 0}, path)
    return path


@pytest.mark.parametrize("domain", ["blocksworld", "ferry", "gripper", "visitall"])
def test_the_nlm_inference_forward_plans_as_the_layer_by_layer_route(tmp_path, domain):
    # same plans, evaluation and expansion counts on data/small's plan instances: the fused forward moves only
    # rounding, never the order GBFS expands states in
    from tnlib.planning.search import gbfs

    checkpoint = _random_nlm_checkpoint(tmp_path, domain)
    table = load_split(None, domain, "plan")
    domain_file = resolve_domain(domain)
    for instance in table.instances()[:2]:
        problem = table.problem_path(instance)
        results = []
        for route in ("fused", "by-layer"):
            heuristic = LearnedHeuristic(checkpoint, domain_file, problem)
            if route == "by-layer":
                heuristic.model.forward = heuristic.model.forward_by_layers
            result = gbfs(heuristic.task, heuristic, SearchSettings(max_evaluations=2000))
            results.append((result.status, result.plan, result.evaluations, result.expansions))
        assert results[0][2] > 1
        assert results[0] == results[1]


def test_table2_leaves_out_a_run_still_planning_and_names_it(tmp_path):
    def run(name, seed, results):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(dict(domain="ferry", model="nlm", distribution="TN",
                                                             sigma="learn", residual="ff", lower_bound="lmcut",
                                                             seed=seed)))
        (folder / "planning-default.jsonl").write_text("".join(
            json.dumps({"problem": f"p{i}.pddl", "protocol": PAPER, "solved": solved, "evaluations": 10})
            + "\n" for i, solved in enumerate(results)))

    run("done", 0, [True, False, True, True])
    run("planning", 1, [True])  # 1 of the 4 instances so far: its coverage 1.00 would read as final
    table = render_table2(tmp_path)
    coverage = [line for line in table.split("**Average")[0].splitlines() if line.startswith("| ferry")][0]
    assert "0.75 (1 seed)" in coverage and "1.00" not in coverage
    assert "Left out, fewer instances planned than another run" in table
    assert "ferry learn/ff TN seed 1 (1 of 4)" in table
    (tmp_path / "planning" / "planning-default.jsonl").write_text("".join(
        json.dumps({"problem": f"p{i}.pddl", "protocol": PAPER, "solved": True, "evaluations": 10}) + "\n"
        for i in range(4)))
    finished = render_table2(tmp_path)
    assert "Left out" not in finished and "0.88±0.18" in finished


def test_recorded_seconds_part_the_current_settings_records_from_the_others(tmp_path):
    from tnlib.learning.run_files import RunDir
    from tnlib.learning.split_planning import recorded_seconds

    run = train(TrainConfig(domain="gripper", model="linear", head=HeadConfig(distribution="N"), steps=10,
                            batch_size=16, eval_every=10, checkpoint_every=10, out_dir=str(tmp_path),
                            progress=False))
    planned = plan_split(run, "clip", instances=2)
    current, other = recorded_seconds(run, "clip")
    assert current == {r["problem"]: r["seconds"] for r in planned} and other == {}
    # Fast Downward's l trained on: the records stand for another setting now; a damaged seconds value counts 0
    _trained_with(run, "fast-downward")
    path = RunDir(run).planning_file("clip")
    lines = path.read_text().splitlines()
    path.write_text(lines[0] + "\n" + json.dumps({**json.loads(lines[1]), "seconds": "soon"}) + "\n")
    assert recorded_seconds(run, "clip") == ({}, {planned[0]["problem"]: planned[0]["seconds"],
                                                  planned[1]["problem"]: 0.0})
    _trained_with(run, "tnlib")
    assert recorded_seconds(run, "clip")[0] == {planned[0]["problem"]: planned[0]["seconds"],
                                                planned[1]["problem"]: 0.0}
    RunDir(run).best.unlink()  # no weights: nothing is of the current setting
    assert recorded_seconds(run, "clip")[0] == {} and len(recorded_seconds(run, "clip")[1]) == 2
