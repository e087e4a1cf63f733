"""The CUDA path: the Truncated Gaussian, the three models, training, checkpoints and learned GBFS on a GPU agree
with the CPU, whose numbers the rest of the suite checks against references (mpmath, scipy, pyperplan).

Skipped where torch sees no CUDA device (CI has none); on a GPU machine: ``pytest tests/learning/test_cuda.py``.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from fixtures.heuristic_items import SMALL, items_from_rows, plan_rows
from tnlib import TruncatedNormal
from tnlib.device import machine_kind
from tnlib.learning.models import make_encoder
from tnlib.learning.heads import DistributionHead, HeadConfig
from tnlib.learning.learned_heuristic import LearnedHeuristic
from tnlib.learning.models import build_model
from tnlib.learning.split_planning import plan_problem
from tnlib.learning.training import TrainConfig, load_checkpoint, train
from tnlib.planning.pddl import resolve_domain
from tnlib.planning.search_settings import PAPER, SearchSettings

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

INF = math.inf
MODELS = ["linear", "nlm", "hgn"]
# float32 arithmetic in another order (cuBLAS, cuSPARSE, CUDA's libm) moves the last bits; these bound it
F32 = dict(rtol=2e-5, atol=2e-5)
F64 = dict(rtol=1e-11, atol=1e-12)


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cuda-problems")
    return [r for params in SMALL["blocksworld"] for seed in (1, 2) for r in plan_rows("blocksworld", params, seed,
                                                                                       folder)]


@pytest.fixture(scope="module")
def items(rows):
    return items_from_rows(rows)


def _config(out, device, **kwargs) -> TrainConfig:
    base = dict(domain="blocksworld", model="nlm", steps=20, batch_size=16, eval_every=5, checkpoint_every=5,
                out_dir=str(out), progress=False, seed=0, device=device)
    base.update(kwargs)
    if base["model"] == "nlm":
        base["model_args"] = {"depth": 3}
    return TrainConfig.from_dict(base)


# ------------------------------------------------------------------------------------------------------------
# The Truncated Gaussian
# ------------------------------------------------------------------------------------------------------------

# (loc, scale, low, high) over the regimes the implementation tells apart: inside, one-sided, upper bound only,
# unbounded, far tails on either side, narrow intervals
PARAMS = [(0.3, 1.0, 0.0, 2.0), (-3.0, 0.7, 0.0, 1.5), (5.0, 1.0, -1.0, 1.0), (0.3, 1.0, 0.0, INF),
          (-2.0, 0.5, 0.0, INF), (-1.0, 2.0, -INF, 1.0), (2.0, 3.0, -INF, INF), (-30.0, 1.0, 0.0, INF),
          (40.0, 2.0, -INF, 0.0), (-25.0, 1.0, 0.0, 0.5), (1.0, 1e3, 0.0, 1e-3), (7.0, 1e-3, 6.0, 6.0 + 1e-6)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_truncated_normal_on_cuda_equals_the_cpu(dtype):
    columns = [torch.tensor(c, dtype=dtype) for c in zip(*PARAMS)]
    cpu = TruncatedNormal(*columns)
    gpu = TruncatedNormal(*(c.cuda() for c in columns))
    tol = F32 if dtype == torch.float32 else F64
    q = torch.tensor([1e-6, 0.01, 0.3, 0.5, 0.9, 0.999, 0.25, 0.75, 0.5, 0.1, 0.6, 0.4], dtype=dtype)
    for name in ("mean", "variance", "mode"):
        torch.testing.assert_close(getattr(gpu, name).cpu(), getattr(cpu, name), **tol, msg=name)
    torch.testing.assert_close(gpu.entropy().cpu(), cpu.entropy(), **tol, msg="entropy")
    for name, argument in (("icdf", q), ("log_prob", cpu.icdf(q)), ("cdf", cpu.icdf(q))):
        torch.testing.assert_close(getattr(gpu, name)(argument.cuda()).cpu(), getattr(cpu, name)(argument),
                                   **tol, msg=name)
    samples = gpu.sample((1000,))
    assert samples.device.type == "cuda"
    assert bool(((samples >= gpu.low) & (samples <= gpu.high)).all())


def test_truncated_normal_gradients_on_cuda_equal_the_cpu():
    def grads(device):
        loc = torch.tensor([0.3, -2.0, -30.0, 5.0], dtype=torch.float64, device=device, requires_grad=True)
        scale = torch.tensor([1.0, 0.5, 1.0, 1.0], dtype=torch.float64, device=device, requires_grad=True)
        low = torch.tensor([0.0, 0.0, 0.0, -1.0], dtype=torch.float64, device=device)
        high = torch.tensor([2.0, INF, INF, 1.0], dtype=torch.float64, device=device)
        value = torch.tensor([1.0, 0.5, 0.01, 0.9], dtype=torch.float64, device=device)
        d = TruncatedNormal(loc, scale, low, high)
        (d.log_prob(value).sum() + d.mean.sum()).backward()
        return loc.grad.cpu(), scale.grad.cpu()

    for gpu, cpu in zip(grads("cuda"), grads("cpu")):
        torch.testing.assert_close(gpu, cpu, **F64)


# ------------------------------------------------------------------------------------------------------------
# Models and the head
# ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model_name", MODELS)
def test_forward_loss_and_gradients_on_cuda_equal_the_cpu(items, model_name):
    encoder = make_encoder(model_name, "blocksworld")
    kwargs = {"depth": 3} if model_name == "nlm" else {}
    torch.manual_seed(0)
    cpu_model = build_model(model_name, **encoder.model_kwargs(), **kwargs)
    torch.manual_seed(0)
    gpu_model = build_model(model_name, **encoder.model_kwargs(), **kwargs).cuda()
    head = DistributionHead(HeadConfig(distribution="TN", sigma="learn"))
    batch = encoder.collate_items(items[:16])
    gpu_batch = batch.to("cuda")

    # inference (on the CPU the NLM runs its fused kernels here, on CUDA torch's operators)
    cpu_model.eval(), gpu_model.eval()
    with torch.no_grad():
        torch.testing.assert_close(gpu_model(gpu_batch.inputs).cpu(), cpu_model(batch.inputs), **F32)

    # a training step's loss and gradients
    cpu_model.train(), gpu_model.train()
    losses = []
    for model, b in ((cpu_model, batch), (gpu_model, gpu_batch)):
        loss = head(model(b.inputs), b.residual, b.lower, b.upper).nll(b.h_star).mean()
        loss.backward()
        losses.append(loss.item())
    assert losses[1] == pytest.approx(losses[0], rel=1e-5)
    for (name, p_cpu), (_, p_gpu) in zip(cpu_model.named_parameters(), gpu_model.named_parameters()):
        torch.testing.assert_close(p_gpu.grad.cpu(), p_cpu.grad, rtol=1e-3, atol=1e-5, msg=name)


# ------------------------------------------------------------------------------------------------------------
# Training and checkpoints
# ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model_name", MODELS)
def test_training_on_cuda_is_deterministic(tmp_path, items, model_name):
    runs = [train(_config(tmp_path / name, "cuda", model=model_name, distribution="TN"), items, items)
            for name in ("a", "b")]
    a, b = (torch.load(run / "last.pt", map_location="cpu", weights_only=False)["model"] for run in runs)
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


@pytest.mark.parametrize("model_name", MODELS)
def test_training_on_cuda_follows_the_cpu_run(tmp_path, items, model_name):
    curves = []
    for device in ("cpu", "cuda"):
        run = train(_config(tmp_path / device, device, model=model_name, distribution="TN"), items, items)
        curves.append([json.loads(line) for line in (run / "curves.jsonl").read_text().splitlines()])
    assert [r["step"] for r in curves[0]] == [r["step"] for r in curves[1]] == [5, 10, 15, 20]
    for cpu, gpu in zip(*curves):  # the same batches and initial weights; only the rounding differs
        for key in ("train_loss", "val_mse", "val_nll"):
            assert gpu[key] == pytest.approx(cpu[key], rel=1e-2), (cpu["step"], key)


def test_a_cuda_run_resumes_on_the_cpu_and_its_checkpoint_loads_anywhere(tmp_path, items):
    config = _config(tmp_path, "cuda", steps=10)

    def interrupt(step):
        if step == 7:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(config, items, items, on_step=interrupt)
    resumed = _config(tmp_path, "cpu", steps=10)  # the device is a setting a run may change when resumed
    run = train(resumed, items, items)
    assert torch.load(run / "last.pt", map_location="cpu", weights_only=False)["step"] == 10
    starts = [json.loads(line) for line in (run / "machines.jsonl").read_text().splitlines()]
    assert [(s["step"], s["machine"]) for s in starts] == [(0, machine_kind("cuda")), (5, machine_kind("cpu"))]
    assert torch.cuda.get_device_name() in starts[0]["machine"]
    for device in ("cpu", "cuda"):
        model, *_ = load_checkpoint(run, device)
        assert {p.device.type for p in model.parameters()} == {device}


# ------------------------------------------------------------------------------------------------------------
# Learned GBFS
# ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model_name", MODELS)
def test_learned_gbfs_with_a_model_on_cuda_evaluates_and_plans_like_the_cpu(tmp_path, rows, items, model_name):
    run = train(_config(tmp_path, "cpu", model=model_name, distribution="TN", steps=30), items, items)
    problem = rows[-1]["problem"]
    domain = resolve_domain("blocksworld")
    gpu = LearnedHeuristic(run, domain, problem, device="cuda")
    cpu = LearnedHeuristic(run, domain, problem, device="cpu")
    assert next(gpu.model.parameters()).device.type == "cuda"
    task = cpu.task
    states = [task.init] + [s for _, s in task.successors(task.init)]
    np.testing.assert_allclose(gpu(states), cpu(states), **F32)
    record = plan_problem(gpu, domain, problem, SearchSettings(PAPER, 5000))
    assert record["solved"], record  # plan_problem validates every plan it returns
