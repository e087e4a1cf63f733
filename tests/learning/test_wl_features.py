"""WL features: the encoder against wlplan called directly, invariance to renaming objects, the fitted state in
checkpoints, and a trained WL model planning through the same interface as the paper's models."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from fixtures.heuristic_items import small_items
from tnlib.learning.models import make_encoder
from tnlib.learning.training import TrainConfig, checkpoint_encoder, load_checkpoint, train
from tnlib.learning.wl_features import WL_GRAPH, WL_ITERATIONS, WLEncoder
from tnlib.planning.pddl import resolve_domain

wlplan = pytest.importorskip("wlplan")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("wl")


@pytest.fixture(scope="module", params=["blocksworld", "ferry", "gripper", "visitall"])
def domain_items(request, folder):
    return request.param, small_items(request.param, folder)


def _wlplan_features(domain: str, items: list[dict], queries: list[dict]) -> np.ndarray:
    """The features of ``queries`` from wlplan alone: its own PDDL parser (the ``pddl`` package) for the domain
    and problems, fitted on ``items`` in the same order."""
    from wlplan.data import DomainDataset, ProblemDataset
    from wlplan.feature_generator import init_feature_generator
    from wlplan.planning import Atom, State, parse_domain, parse_problem

    domain_file = str(resolve_domain(domain))
    wl_domain = parse_domain(domain_file)
    predicates = {p.name: p for p in wl_domain.predicates}
    problems = {}

    def problem(path):
        if path not in problems:
            problems[path] = parse_problem(domain_file, path)
        return problems[path]

    def state(atoms):
        parts = [re.findall(r"[^\s()]+", atom) for atom in atoms]
        return State([Atom(predicates[p[0]], p[1:]) for p in parts])

    groups: dict[str, list] = {}
    for item in items:
        groups.setdefault(item["problem"], []).append(state(item["state"]))
    generator = init_feature_generator("wl", wl_domain, graph_representation=WL_GRAPH, iterations=WL_ITERATIONS)
    generator.collect(DomainDataset(wl_domain, [ProblemDataset(problem(p), s) for p, s in groups.items()]))
    rows = []
    for query in queries:
        generator.set_problem(problem(query["problem"]))
        rows.append(generator.embed(state(query["state"])))
    return np.asarray(rows, dtype=np.float64)


def _dense(encoder: WLEncoder, items: list[dict]) -> np.ndarray:
    examples = [encoder.encode(item).inputs for item in items]
    out = np.zeros((len(items), encoder.num_features))
    for row, example in zip(out, examples):
        row[example.columns] = example.counts
    return out


def _by_column_content(features: np.ndarray) -> np.ndarray:
    """The columns in an order fixed by their contents: colour numbers follow the order colours are first met in
    (which follows, e.g., the goal atoms' order in the file, sorted in tnlib's items), so two feature maps are the
    same map when their columns agree up to renumbering, the same renumbering for every state."""
    return features[:, np.lexsort(features)]


def test_features_equal_wlplans_own(domain_items):
    domain, items = domain_items
    encoder = WLEncoder(domain)
    encoder.fit(items)
    queries = items[::3]
    mine = _dense(encoder, queries)
    theirs = _wlplan_features(domain, items, queries)
    assert mine.shape == theirs.shape and mine.shape[1] > 10 and (mine.sum(axis=1) > 0).all()
    np.testing.assert_array_equal(_by_column_content(mine), _by_column_content(theirs))


def _rename(text: str, names: dict[str, str]) -> str:
    return re.sub(r"[^\s()]+", lambda m: names.get(m.group(0).lower(), m.group(0)), text)


def test_features_and_predictions_do_not_depend_on_object_names(domain_items, folder):
    domain, items = domain_items
    encoder = WLEncoder(domain)
    encoder.fit(items)
    item = items[len(items) // 2]
    from tnlib.learning.encodings import problem_objects

    objects = problem_objects(domain, item["problem"]).objects
    # new names, which sort in the reverse order of the old ones
    names = {o: f"renamed-{len(objects) - k:02d}" for k, o in enumerate(sorted(objects))}
    renamed_file = folder / f"renamed-{domain}.pddl"
    renamed_file.write_text(_rename(open(item["problem"]).read(), names))
    renamed = {**item, "problem": str(renamed_file), "state": [_rename(a, names) for a in item["state"]],
               "goal": [_rename(a, names) for a in item["goal"]]}
    assert renamed["state"] != item["state"]
    batch = encoder.collate_items([item, renamed])
    assert torch.equal(batch.inputs[0], batch.inputs[1])
    model = torch.nn.Linear(encoder.num_features, 2)
    # one state per call, each in its own (aligned) memory: rows of equal inputs at different offsets of one batch
    # round differently (the GEMM kernel peels an unaligned row another way; seen on AMD EPYC with AVX-512)
    assert torch.equal(model(batch.inputs[:1].clone()), model(batch.inputs[1:].clone()))


def test_an_unfitted_encoder_says_so(domain_items):
    domain, items = domain_items
    with pytest.raises(RuntimeError, match="fit it on the training items"):
        WLEncoder(domain).encode(items[0])


def test_colours_unseen_in_training_are_not_counted(domain_items):
    domain, items = domain_items
    few = items[:1]  # one state
    encoder = WLEncoder(domain)
    encoder.fit(few)
    features = encoder.num_features
    later = items[-1]  # another instance: some of its colours were never seen
    example = encoder.encode(later).inputs
    assert encoder.num_features == features and (example.columns < features).all()
    seen_everything = WLEncoder(domain)
    seen_everything.fit(items)
    assert _dense(seen_everything, [later]).sum() > example.counts.sum()


def test_scaled_features_lie_in_the_unit_interval(domain_items):
    domain, items = domain_items
    encoder = WLEncoder(domain)
    encoder.fit(items)
    batch = encoder.collate_items(items)
    assert batch.inputs.shape == (len(items), encoder.num_features)
    assert float(batch.inputs.min()) >= 0.0 and float(batch.inputs.max()) == 1.0


def test_the_fitted_state_travels_in_the_checkpoint(tmp_path, domain_items):
    domain, items = domain_items
    run = train(TrainConfig(domain=domain, model="wl", steps=20, batch_size=8, eval_every=10, checkpoint_every=10,
                            out_dir=str(tmp_path), progress=False, seed=0, device="cpu"), items, items)
    model, head, config, saved = load_checkpoint(run)
    assert "encoder" in saved
    restored = checkpoint_encoder(config, saved)
    fitted = make_encoder("wl", domain)
    fitted.fit(items)
    for a, b in zip(restored.collate_items(items).inputs, fitted.collate_items(items).inputs):
        assert torch.equal(a, b)
    assert model.linear.in_features == fitted.num_features
    # the same seed trains the same weights
    again = train(TrainConfig(domain=domain, model="wl", steps=20, batch_size=8, eval_every=10, checkpoint_every=10,
                              out_dir=str(tmp_path / "again"), progress=False, seed=0, device="cpu"), items, items)
    other, *_ = load_checkpoint(again)
    for (name, p), (_, q) in zip(model.state_dict().items(), other.state_dict().items()):
        assert torch.equal(p, q), name


def test_a_checkpoint_with_the_plain_fitted_state_loads_to_the_same_features(domain_items):
    """Checkpoints hold the colour table packed; those that hold it as a dict and the scales as a list still load."""
    import zlib

    domain, items = domain_items
    fitted = make_encoder("wl", domain)
    fitted.fit(items)
    packed = fitted.state()
    assert set(packed) == {"generator_zlib", "scale"} and packed["scale"].dtype == torch.float64
    plain = {"generator": json.loads(zlib.decompress(packed["generator_zlib"])), "scale": packed["scale"].tolist()}
    expected = fitted.collate_items(items).inputs
    for state in (packed, plain):
        restored = make_encoder("wl", domain)
        restored.load_state(state)
        assert np.array_equal(restored.scale, fitted.scale)
        assert torch.equal(restored.collate_items(items).inputs, expected)


@pytest.mark.parametrize("distribution, sigma, residual", [("N", "learn", "ff"), ("TN", "fixed", "none"),
                                                           ("TN", "learn", "ff"), ("N", "fixed", "none")])
def test_train_and_plan_commands_take_wl_with_every_head(tmp_path, capsys, distribution, sigma, residual):
    from tnlib.cli import main

    argv = ["train", "--domain", "gripper", "--model", "wl", "--data", "data/small", "--steps", "20",
            "--eval-every", "10", "--batch-size", "16", "--out", str(tmp_path), "--no-progress", "--device", "cpu",
            "--distribution", distribution, "--sigma", sigma, "--residual", residual]
    assert main(argv) == 0
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert run.name == f"gripper-wl-{distribution}-{sigma}-{residual}-llmcut-s0"
    problem = sorted((Path("data/small/gripper/problems/plan")).glob("*.pddl"))[0]
    capsys.readouterr()
    for estimate in (["default", "clip"] if distribution == "N" else ["default"]):
        code = main(["plan", "gripper", str(problem), "--model", str(run), "--estimate", estimate, "--json",
                     "--max-evaluations", "2000"])
        record = json.loads(capsys.readouterr().out)
        # after 20 steps the model may not guide well enough: the search runs to its end either way
        assert record["status"] in ("solved", "evaluation limit") and (code == 0) == (record["status"] == "solved")
        assert record["estimate"] == estimate and record["model"] == str(run)
