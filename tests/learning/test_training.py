"""The training loop: reproducibility, resume after interruption, model selection, divergence, bad configs, CLI."""
from __future__ import annotations

import json
import math

import pytest
import torch

from fixtures.heuristic_items import small_items
from tnlib.cli import main
from tnlib.errors import TrainingDiverged
from tnlib.learning.heads import HeadConfig
from tnlib.learning.training import TrainConfig, load_checkpoint, read_run_config, train



@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("training")


@pytest.fixture(scope="module")
def items(folder):
    return {d: small_items(d, folder) for d in ("blocksworld", "gripper")}


def config(tmp, **kwargs) -> TrainConfig:
    base = dict(domain="blocksworld", model="linear", steps=12, batch_size=8, eval_every=4, checkpoint_every=4,
                out_dir=str(tmp), progress=False, seed=3, model_args={})
    base.update(kwargs)
    if base["model"] == "nlm" and not base["model_args"]:
        base["model_args"] = {"depth": 3}
    return TrainConfig.from_dict(base)


def weights(run_dir, name="last.pt") -> dict:
    return torch.load(run_dir / name, weights_only=False)["model"]


def assert_same_weights(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


def curves(run_dir) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k != "seconds"}
            for line in (run_dir / "curves.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("model", ["linear", "nlm", "hgn"])
def test_same_seed_same_weights_other_seed_other_weights(tmp_path, items, model):
    data = items["blocksworld"]
    a = train(config(tmp_path / "a", model=model), data, data)
    b = train(config(tmp_path / "b", model=model), data, data)
    c = train(config(tmp_path / "c", model=model, seed=4), data, data)
    assert_same_weights(weights(a), weights(b))
    assert curves(a) == curves(b)
    assert any(not torch.equal(weights(a)[k], weights(c)[k]) for k in weights(a))


def test_n_training_does_not_read_the_lower_bound_tn_training_does(tmp_path):
    # The appendix's lower-bound ablation (l = hmax, blind) needs N only to clip it at another l: N's weights and
    # curves must be those of l = lmcut (so its N runs can be compared with the l = lmcut ones), while TN's loss is
    # truncated at l and must change with it. Through the dataset, which is where l is read.
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "data" / "small"
    runs = {(dist, bound): train(config(tmp_path / f"{dist}-{bound}", distribution=dist, lower_bound=bound,
                                        data_root=str(root), instances=6, steps=6, eval_every=3))
            for dist in ("N", "TN") for bound in ("lmcut", "blind")}
    assert_same_weights(weights(runs["N", "lmcut"]), weights(runs["N", "blind"]))
    assert curves(runs["N", "lmcut"]) == curves(runs["N", "blind"])
    tn_lmcut, tn_blind = weights(runs["TN", "lmcut"]), weights(runs["TN", "blind"])
    assert any(not torch.equal(tn_lmcut[k], tn_blind[k]) for k in tn_lmcut)


@pytest.mark.parametrize("model", ["nlm", "hgn"])
def test_interrupted_run_resumes_to_the_same_weights(tmp_path, items, model):
    data = items["gripper"]
    straight = train(config(tmp_path / "straight", model=model, domain="gripper", steps=10, eval_every=3), data, data)

    def interrupt(step):
        if step == 6:  # after the checkpoint at step 4: steps 5-6 are redone after the resume
            raise KeyboardInterrupt

    cfg = config(tmp_path / "resumed", model=model, domain="gripper", steps=10, eval_every=3)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, data, data, on_step=interrupt)
    assert torch.load(tmp_path / "resumed" / cfg.name / "last.pt", weights_only=False)["step"] == 4
    resumed = train(cfg, data, data)
    assert_same_weights(weights(straight), weights(resumed))
    assert_same_weights(weights(straight, "best.pt"), weights(resumed, "best.pt"))
    assert curves(straight) == curves(resumed)
    assert [c["step"] for c in curves(resumed)] == [3, 6, 9, 10]


def test_a_second_training_of_one_run_waits_for_the_first_and_trains_no_step_again(tmp_path, items, capsys):
    import threading

    data = items["gripper"]
    cfg = config(tmp_path, domain="gripper", steps=12)
    second: list[threading.Thread] = []

    def start_the_second(step):
        if step == 1:  # the first holds the run: the same training started beside it must wait, not train
            second.append(threading.Thread(target=train, args=(cfg, data, data)))
            second[0].start()
            second[0].join(timeout=3)
            assert second[0].is_alive()

    run = train(cfg, data, data, on_step=start_the_second)
    second[0].join(timeout=60)
    assert not second[0].is_alive()
    assert [c["step"] for c in curves(run)] == [4, 8, 12]
    assert capsys.readouterr().err.splitlines() == [
        f"{cfg.name}: another process is working on this run; waiting for it to finish"]


def machine_starts(run_dir) -> list[tuple[int, str]]:
    return [(r["step"], r["machine"]) for r in map(json.loads, (run_dir / "machines.jsonl").read_text().splitlines())]


def test_each_start_of_training_records_its_step_hardware_and_code(tmp_path, items, monkeypatch):
    import tnlib.learning.training as training
    from tnlib.device import machine_kind

    data = items["gripper"]
    cfg = config(tmp_path, domain="gripper", steps=10, eval_every=3)
    run_dir = tmp_path / cfg.name
    straight = train(config(tmp_path / "straight", domain="gripper", steps=10, eval_every=3), data, data)
    assert machine_starts(straight) == [(0, machine_kind("cpu"))]
    from tnlib.provenance import code_commit
    from tnlib.device import processor_signature
    assert [(r["code"], r["processor"]) for r in map(json.loads, (straight / "machines.jsonl").read_text().splitlines())
            ] == [(code_commit(), processor_signature())]

    def stop_at(last):
        def interrupt(step):
            if step == last:
                raise KeyboardInterrupt
        return interrupt

    for machine, stop in (("first kind", 6), ("second kind", 9)):  # checkpoints every 4 steps: resumes at 4, 8
        monkeypatch.setattr(training, "machine_kind", lambda device, machine=machine: machine)
        with pytest.raises(KeyboardInterrupt):
            train(cfg, data, data, on_step=stop_at(stop))
    assert machine_starts(run_dir) == [(0, "first kind"), (4, "second kind")]
    # a start at a later step than the checkpoint resumed from (a damaged last.pt sends the run back to the one
    # before) trained none of the weights that go on: it is dropped with them
    with (run_dir / "machines.jsonl").open("a") as f:
        f.write(json.dumps({"step": 9, "machine": "lost kind"}) + "\n")
    monkeypatch.setattr(training, "machine_kind", lambda device: "third kind")
    train(cfg, data, data)
    assert machine_starts(run_dir) == [(0, "first kind"), (4, "second kind"), (8, "third kind")]
    assert_same_weights(weights(straight), weights(run_dir))
    monkeypatch.setattr(training, "machine_kind", lambda device: "fourth kind")
    train(cfg, data, data)  # finished: asked again, it trains nothing and records nothing
    assert machine_starts(run_dir)[-1] == (8, "third kind")
    train(cfg, data, data, resume=False)
    assert machine_starts(run_dir) == [(0, "fourth kind")]


def test_best_checkpoint_has_the_best_validation_mse(tmp_path, items):
    data = items["blocksworld"]
    run = train(config(tmp_path, steps=40, eval_every=5, checkpoint_every=10), data[:10], data[10:])
    records = curves(run)
    best = min(records, key=lambda r: r["val_mse"])
    saved = torch.load(run / "best.pt", weights_only=False)
    assert saved["step"] == best["step"] and saved["val_mse"] == best["val_mse"]
    best_nll = min(records, key=lambda r: r["val_nll"])
    saved_nll = torch.load(run / "best-nll.pt", weights_only=False)
    assert saved_nll["step"] == best_nll["step"] and saved_nll["val_nll"] == best_nll["val_nll"]
    assert [r["step"] for r in records] == list(range(5, 41, 5))
    assert all(math.isfinite(r["train_loss"]) for r in records)
    # the checkpoint rebuilds the model and head on its own
    model, head, cfg, _ = load_checkpoint(run)
    assert cfg == TrainConfig.from_dict(json.loads((run / "config.json").read_text()))
    from tnlib.learning.encodings import LinearEncoder
    from tnlib.learning.training import validation_metrics

    encoder = LinearEncoder()
    metrics = validation_metrics(model, head, encoder, [encoder.encode(i) for i in data[10:]], torch.device("cpu"), 7)
    assert metrics["val_mse"] == pytest.approx(best["val_mse"], rel=1e-6)


def test_passing_over_a_trained_run_leaves_its_configuration_as_it_trained(tmp_path, items):
    data = items["blocksworld"]
    run = train(config(tmp_path, steps=8, device="cpu"), data[:10], data[10:])
    recorded = (run / "config.json").read_text()
    train(config(tmp_path, steps=8), data[:10], data[10:])  # another process's setting: device unset
    assert (run / "config.json").read_text() == recorded
    train(config(tmp_path, steps=12), data[:10], data[10:])  # trained on: the configuration it trained by now
    assert json.loads((run / "config.json").read_text())["steps"] == 12
    assert json.loads((run / "config.json").read_text())["device"] is None


def test_a_run_trained_on_cuda_is_read_on_the_cpu_of_a_machine_without_cuda(tmp_path, items):
    data = items["blocksworld"]
    run = train(config(tmp_path, steps=8), data[:10], data[10:])
    saved = torch.load(run / "best.pt", weights_only=False)
    saved["config"]["device"] = "cuda"  # what a run trained on a lent GPU records
    torch.save(saved, run / "best.pt")
    assert not torch.cuda.is_available()  # the suite runs on the CPU (conftest)
    model, _, cfg, _ = load_checkpoint(run)
    assert cfg.device == "cuda"
    assert {p.device.type for p in model.parameters()} == {"cpu"}
    for name, value in model.state_dict().items():
        assert torch.equal(value, saved["model"][name])
    with pytest.raises(ValueError, match="cuda"):  # asked for explicitly, CUDA stays a requirement
        load_checkpoint(run, "cuda")


def test_nan_loss_stops_with_the_step_and_batch_and_keeps_the_good_checkpoint(tmp_path, items):
    data = items["blocksworld"]
    cfg = config(tmp_path, steps=10, checkpoint_every=1, eval_every=1)
    run_dir = tmp_path / cfg.name

    def poison(step):
        if step == 3:
            model_params = torch.load(run_dir / "last.pt", weights_only=False)["model"]
            assert all(torch.isfinite(v).all() for v in model_params.values())
            poison.model.linear.weight.data[0, 0] = float("nan")

    # reach the live model through the optimizer-free route: patch build_model to keep a handle on it
    import tnlib.learning.training as training

    original = training.build_model

    def build(*args, **kwargs):
        poison.model = original(*args, **kwargs)
        return poison.model

    training.build_model = build
    try:
        with pytest.raises(TrainingDiverged, match=r"non-finite loss \(nan\) at step 4 .*blocksworld-b"):
            train(cfg, data, data, on_step=poison)
    finally:
        training.build_model = original
    last = torch.load(run_dir / "last.pt", weights_only=False)
    assert last["step"] == 3
    assert all(torch.isfinite(v).all() for v in last["model"].values())
    assert [c["step"] for c in curves(run_dir)] == [1, 2, 3]


def test_nan_in_the_data_is_reported_before_any_checkpoint(tmp_path, items):
    data = [dict(i, features=torch.full((4,), float("nan"))) for i in items["blocksworld"]]
    cfg = config(tmp_path)
    with pytest.raises(TrainingDiverged, match="step 1 .*no checkpoint was written"):
        train(cfg, data, data)
    assert not (tmp_path / cfg.name / "last.pt").exists() and not (tmp_path / cfg.name / "best.pt").exists()


@pytest.mark.parametrize("kwargs, message", [
    (dict(model="mlp"), "unknown model"), (dict(residual="hadd"), "residual"),
    (dict(lower_bound="ff"), "lower bound"), (dict(upper_bound="lmcut"), "upper bound"),
    (dict(distribution="Laplace"), "distribution"), (dict(sigma="auto"), "sigma"),
    (dict(steps=0), "steps"), (dict(batch_size=0), "batch_size"), (dict(learning_rate=0.0), "learning_rate"),
    (dict(seed=-1), "seed"),
])
def test_bad_config_is_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig.from_dict(kwargs)


def test_resume_refuses_a_different_configuration(tmp_path, items):
    data = items["blocksworld"]
    train(config(tmp_path, run_name="run"), data, data)
    with pytest.raises(ValueError, match="different configuration.*learning_rate"):
        train(config(tmp_path, run_name="run", learning_rate=0.5), data, data)
    more = train(config(tmp_path, run_name="run", steps=16), data, data)  # more steps continues the run
    assert torch.load(more / "last.pt", weights_only=False)["step"] == 16


def test_paper_defaults():
    cfg = TrainConfig()
    assert (cfg.batch_size, cfg.grad_clip, cfg.steps) == (256, 0.1, 40_000)
    assert TrainConfig(model="nlm").lr == 1e-2 and TrainConfig(model="linear").lr == 1e-2
    assert TrainConfig(model="hgn").lr == 1e-3
    # weight decay: the paper's 1e-2 for NLM; none for HGN (as its authors trained it) and linear regression (the
    # appendix removed it)
    assert cfg.weight_decay is None and cfg.head.sigma_link == "softplus"
    assert TrainConfig(model="nlm").decay == 1e-2 and TrainConfig(model="hgn").decay == 0.0
    assert TrainConfig(model="linear").decay == 0.0
    assert TrainConfig(model="linear", weight_decay=0.05).decay == 0.05


@pytest.mark.parametrize("domain, begins", [("ferry", "ferry-"), ("/problems/fragile.pddl", "fragile-"),
                                            ("fragile.pddl", "fragile-"), ("/problems/ferry2/domain.pddl", "ferry2-")])
def test_a_run_is_named_by_its_domain_key_or_file_and_never_by_a_path(domain, begins):
    name = TrainConfig(domain=domain, model="linear").name
    assert name.startswith(begins) and "/" not in name and ".pddl" not in name


@pytest.mark.parametrize("model, weight_decay, expected", [
    ("linear", None, 0.0), ("nlm", None, 1e-2), ("hgn", None, 0.0), ("linear", 0.03, 0.03),
])
def test_the_optimizer_gets_the_models_weight_decay(tmp_path, items, model, weight_decay, expected):
    data = items["blocksworld"]
    run = train(config(tmp_path, model=model, weight_decay=weight_decay, steps=4), data, data)
    groups = torch.load(run / "last.pt", weights_only=False)["optimizer"]["param_groups"]
    assert [g["weight_decay"] for g in groups] == [expected]
    assert json.loads((run / "config.json").read_text())["weight_decay"] == weight_decay


def test_resume_compares_the_effective_weight_decay(tmp_path, items):
    data = items["blocksworld"]
    # a run saved with the linear model's decay spelled out (0) resumes under the default (None -> 0) ...
    train(config(tmp_path, run_name="run", weight_decay=0.0, steps=8), data, data)
    assert torch.load(train(config(tmp_path, run_name="run", steps=12), data, data) / "last.pt",
                      weights_only=False)["step"] == 12
    # ... but not one saved with another decay (1e-2, the NLM's)
    train(config(tmp_path, run_name="other", weight_decay=1e-2, steps=8), data, data)
    with pytest.raises(ValueError, match="different configuration.*weight_decay"):
        train(config(tmp_path, run_name="other", steps=12), data, data)


def test_checkpoints_record_the_sigma_link_and_ones_without_it_load_with_softplus(tmp_path, items):
    from tnlib.learning.encodings import LinearEncoder
    from tnlib.learning.heads import SIGMA_FLOOR

    data = items["blocksworld"]
    run = train(config(tmp_path, sigma_link="bounded"), data, data)
    assert run.name.endswith("-learn-bounded-ff-llmcut-s3")  # its own folder beside a softplus run
    assert json.loads((run / "config.json").read_text())["sigma_link"] == "bounded"
    model, head, cfg, checkpoint = load_checkpoint(run)
    assert checkpoint["config"]["sigma_link"] == "bounded" and head.config.sigma_link == "bounded"
    encoder = LinearEncoder()
    batch = encoder.collate([encoder.encode(item) for item in data[:16]])
    raw = model(batch.inputs).detach()
    sigma = head(raw, batch.residual, batch.lower, batch.upper).sigma
    torch.testing.assert_close(sigma, 10 * torch.sigmoid(raw[:, 1]) + 0.1)
    # a checkpoint whose config names no sigma_link loads with softplus, the link it was trained with
    old = torch.load(run / "best.pt", weights_only=False)
    del old["config"]["sigma_link"]
    torch.save(old, tmp_path / "old.pt")
    _, old_head, old_cfg, _ = load_checkpoint(tmp_path / "old.pt")
    assert old_cfg.head.sigma_link == "softplus" and old_head.config.sigma_link == "softplus"
    sigma = old_head(raw, batch.residual, batch.lower, batch.upper).sigma
    torch.testing.assert_close(sigma, torch.nn.functional.softplus(raw[:, 1]) + SIGMA_FLOOR)


def test_a_run_folders_record_reads_back_and_a_setting_it_predates_reads_as_its_default(tmp_path):
    config = TrainConfig(domain="ferry", model="linear", head=HeadConfig(sigma_link="bounded"), seed=3,
                         out_dir=str(tmp_path))
    folder = tmp_path / config.name
    folder.mkdir()
    record = config.to_dict()
    (folder / "config.json").write_text(json.dumps(record))
    assert read_run_config(folder) == config
    del record["sigma_link"], record["eval_batch_size"]  # a record written before these settings existed
    (folder / "config.json").write_text(json.dumps(record))
    older = read_run_config(folder)
    assert older.head.sigma_link == HeadConfig.sigma_link and older.eval_batch_size == TrainConfig.eval_batch_size
    assert older.name == config.name.replace("-bounded", "")  # the link named itself only where not the default
    (folder / "config.json").write_text(json.dumps({**config.to_dict(), "colour": "red"}))
    with pytest.raises(ValueError, match="unknown config keys: colour"):
        read_run_config(folder)


def test_cli_train_and_evaluate(tmp_path, items, monkeypatch, capsys):
    import tnlib.learning.evaluation as accuracy
    import tnlib.learning.training as training

    data = items["blocksworld"]
    monkeypatch.setattr(training, "load_items", lambda cfg, split, instances=None: data)
    monkeypatch.setattr(training, "load_validation_items", lambda cfg: (data, None))
    monkeypatch.setattr(accuracy, "load_items", lambda cfg, split, instances=None: data)
    code = main(["train", "--model", "linear", "--steps", "6", "--batch-size", "4", "--eval-every", "3",
                 "--out", str(tmp_path), "--name", "cli", "--no-progress", "--distribution", "N"])
    assert code == 0
    assert (tmp_path / "cli" / "best.pt").is_file()
    assert main(["evaluate", str(tmp_path / "cli"), "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert metrics["model"] == "linear" and metrics["distribution"] == "N" and metrics["mse_clip"] is not None
    assert (tmp_path / "cli" / "metrics-test.json").is_file()
    assert main(["train", "--steps", "0", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "steps must be an integer >= 1" in capsys.readouterr().err


def test_evaluation_batches_respect_the_cost_budget_and_keep_the_order(items):
    from tnlib.learning.encodings import NLMEncoder
    from tnlib.learning.nlm import NLM
    from tnlib.learning.heads import DistributionHead, HeadConfig
    from tnlib.learning.training import batches, predict

    data = items["blocksworld"]
    encoder = NLMEncoder("blocksworld")
    encoded = [encoder.encode(i) for i in data]
    sizes = [[len(rows), max(encoder.cost(encoded[r]) for r in rows)] for rows, _ in batches(encoder, encoded, 5, 150)]
    assert all(n * cost <= 150 or n == 1 for n, cost in sizes) and sum(n for n, _ in sizes) == len(data)
    assert max(n for n, _ in sizes) <= 5
    torch.manual_seed(0)
    model, head = NLM(encoder.input_channels, depth=3), DistributionHead(HeadConfig())
    small = predict(model, head, encoder, encoded, torch.device("cpu"), batch_size=3)
    whole = predict(model, head, encoder, encoded, torch.device("cpu"), batch_size=1000)
    assert torch.equal(small["h_star"], torch.tensor([float(i["h_star"]) for i in data], dtype=torch.float64))
    torch.testing.assert_close(small["estimate"], whole["estimate"], rtol=1e-6, atol=1e-6)


def test_instances_is_at_most_n_and_the_run_records_what_it_used(tmp_path):
    """The paper's 400 training instances from a split that holds fewer distinct ones (the shipped paper profile's
    gripper train split): every instance is used, one warning names the domain and both counts, and the run's
    data.json records the number actually used."""
    from pathlib import Path

    from tnlib.paper import TRAIN_INSTANCES

    root = Path(__file__).resolve().parents[2] / "data" / "paper"
    splits = json.loads((root / "gripper" / "manifest.json").read_text())["splits"]
    available = splits["train"]["counts"]["instances"]
    assert available < TRAIN_INSTANCES  # what this test is about; regenerating the data may change it
    cfg = config(tmp_path, domain="gripper", data_root=str(root), instances=TRAIN_INSTANCES, steps=2, eval_every=2,
                 checkpoint_every=2)
    with pytest.warns(UserWarning) as caught:
        run = train(cfg)
    messages = [str(w.message) for w in caught if "asked for" in str(w.message)]
    assert messages == [f"gripper/train: instances={TRAIN_INSTANCES} asked for, but the split has {available} "
                        f"distinct instances; using all {available}"]
    used = json.loads((run / "data.json").read_text())
    pairs = splits["val"]["train_pairs"]
    val_instances = {i["instance"] for i in splits["val"]["instances"]}
    # instances all of whose states are train pairs leave validation altogether
    whole = {i["instance"] for i in splits["val"]["instances"]
             if len(pairs["steps_equal_to_train"].get(i["instance"], [])) == i["plan_length"] + 1}
    assert pairs["equal_to_train"] > 0 and pairs["kept"] > 0
    assert used == {
        "data_root": str(root), "train_split": "train", "val_split": "val",
        "train_instances_requested": TRAIN_INSTANCES, "train_instances": available,
        "train_states": splits["train"]["counts"]["states"],
        "val_instances": len(val_instances - whole), "val_states": pairs["kept"],
        "val_states_in_split": splits["val"]["counts"]["states"], "val_states_equal_to_train": pairs["equal_to_train"],
        "lmcut": "fast-downward",  # data/paper's labels hold Fast Downward's LM-cut: planning computes that one
    }
    # Fewer than the split holds: a subsample of exactly that many, recorded the same way.
    run = train(config(tmp_path, domain="gripper", data_root=str(root), instances=5, steps=2, eval_every=2,
                       checkpoint_every=2, run_name="five"))
    assert json.loads((run / "data.json").read_text())["train_instances"] == 5


def test_model_selection_validates_on_the_val_rows_that_are_no_train_pair(tmp_path):
    """The best checkpoint is chosen by the MSE over the val rows whose (state, goal) is not a train row's up to
    renaming objects (data/paper gripper: most val rows are): the recorded validation MSE is that subset's, not
    the whole split's."""
    from pathlib import Path

    from tnlib.learning.models import make_encoder
    from tnlib.learning.training import encode_all, load_items, predict

    root = Path(__file__).resolve().parents[2] / "data" / "paper"
    cfg = config(tmp_path, domain="gripper", data_root=str(root), instances=20, steps=4, eval_every=2,
                 checkpoint_every=2)
    run = train(cfg)
    model, head, _, checkpoint = load_checkpoint(run / "best.pt")
    encoder = make_encoder(cfg.model, cfg.domain)

    def mse(items):
        p = predict(model, head, encoder, encode_all(encoder, items), torch.device("cpu"))
        return float((p["estimate"] - p["h_star"]).square().mean())

    kept = load_items(cfg, "val", without_train_pairs=True)
    every = load_items(cfg, "val")
    assert 0 < len(kept) < len(every)
    assert checkpoint["val_mse"] == pytest.approx(mse(kept), rel=1e-6)
    assert checkpoint["val_mse"] != pytest.approx(mse(every), rel=1e-3)
    assert min(c["val_mse"] for c in curves(run)) == checkpoint["val_mse"]


def test_checkpoints_spell_out_the_nlm_layout_they_were_trained_with(tmp_path, items):
    from nlm_reference import nlm_reference_forward
    from tnlib.learning.encodings import NLMEncoder

    data = items["blocksworld"]
    run = train(config(tmp_path, model="nlm", steps=4), data, data)
    model, _, _, checkpoint = load_checkpoint(run)
    # the defaults are spelled out in the checkpoint: a later change of default does not change what it rebuilds
    assert checkpoint["model_kwargs"]["layout"] == "authors" and checkpoint["model_kwargs"]["exclude_self"] is False
    assert model.layout == "authors" and model.readout is None
    text_run = train(config(tmp_path, model="nlm", run_name="text", steps=4,
                            model_args={"depth": 3, "layout": "paper-text", "exclude_self": True}), data, data)
    loaded, _, _, _ = load_checkpoint(text_run)
    assert (loaded.layout, loaded.exclude_self, len(loaded.layers)) == ("paper-text", True, 3)
    encoder = NLMEncoder("blocksworld")
    batch = encoder.collate([encoder.encode(item) for item in data[:8]])
    with torch.no_grad():
        torch.testing.assert_close(loaded(batch.inputs), nlm_reference_forward(loaded, batch.inputs))
        assert (loaded(batch.inputs) - model(batch.inputs)).abs().max() > 1e-3  # not the authors' layout's model


def test_resume_refuses_a_run_of_another_nlm_layout(tmp_path, items):
    data = items["blocksworld"]
    train(config(tmp_path, model="nlm", run_name="run", steps=4, model_args={"depth": 3, "layout": "paper-text"}),
          data, data)
    with pytest.raises(ValueError, match="different configuration.*layout: 'paper-text' there, 'authors' now"):
        train(config(tmp_path, model="nlm", run_name="run", steps=8, model_args={"depth": 3}), data, data)


def test_checkpoints_rebuild_the_hgn_layout_they_were_trained_with(tmp_path, items):
    from tnlib.learning.encodings import HGNEncoder

    data = items["gripper"]
    run = train(config(tmp_path, model="hgn", domain="gripper", steps=4), data, data)
    model, _, _, checkpoint = load_checkpoint(run)
    assert checkpoint["model_kwargs"]["layout"] == "authors" and model.layout == "authors"
    means = train(config(tmp_path, model="hgn", domain="gripper", run_name="means", steps=4,
                         model_args={"layout": "means"}), data, data)
    loaded, _, _, _ = load_checkpoint(means)
    assert loaded.layout == "means"
    encoder = HGNEncoder("gripper")
    batch = encoder.collate([encoder.encode(item) for item in data[:8]])
    with torch.no_grad():
        assert (loaded(batch.inputs) - model(batch.inputs)).abs().max() > 1e-3
    with pytest.raises(ValueError, match="different configuration.*layout: 'means' there, 'authors' now"):
        train(config(tmp_path, model="hgn", domain="gripper", run_name="means", steps=8), data, data)


def test_hgn_checkpoints_that_record_no_layout_load_as_the_means_layout(tmp_path, items):
    data = items["gripper"]
    run = train(config(tmp_path, model="hgn", domain="gripper", steps=4, model_args={"layout": "means"}),
                data, data)
    best = run / "best.pt"
    checkpoint = torch.load(best, weights_only=False)
    del checkpoint["model_kwargs"]["layout"]  # as checkpoints written before STRIPSHGN took a layout
    torch.save(checkpoint, best)
    model, _, _, _ = load_checkpoint(best)
    assert model.layout == "means"
    assert model.state_dict().keys() == checkpoint["model"].keys()


def test_resume_from_a_moved_copy_of_the_same_data(tmp_path):
    """A run resumes when its data_root now names another folder holding the same dataset (a moved or cloned
    repository); a folder with other data is refused, and the refused attempt leaves the run's data.json alone."""
    import shutil
    from pathlib import Path

    from tnlib.learning.training import same_dataset

    small = Path(__file__).resolve().parents[2] / "data" / "small"
    first, moved, other = (tmp_path / name for name in ("first", "moved", "other"))
    for copy in (first, moved, other):
        shutil.copytree(small, copy)
    manifest = other / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"profile": "small"', '"profile": "elsewhere"'))
    assert same_dataset(first, moved) and not same_dataset(first, other) and not same_dataset(first, tmp_path)
    settings = dict(domain="ferry", steps=4, eval_every=2, checkpoint_every=2, run_name="run")
    run = train(config(tmp_path / "runs", data_root=str(first), **settings))
    before = weights(run)
    resumed = train(config(tmp_path / "runs", data_root=str(moved), **{**settings, "steps": 6}))
    assert torch.load(resumed / "last.pt", weights_only=False)["step"] == 6
    assert json.loads((run / "data.json").read_text())["data_root"] == str(moved)
    straight = train(config(tmp_path / "straight", data_root=str(first), **{**settings, "steps": 6}))
    assert_same_weights(weights(resumed), weights(straight))
    assert any(not torch.equal(before[k], weights(resumed)[k]) for k in before)
    with pytest.raises(ValueError, match=r"different configuration \(data_root\)"):
        train(config(tmp_path / "runs", data_root=str(other), **{**settings, "steps": 8}))
    assert json.loads((run / "data.json").read_text())["data_root"] == str(moved)
