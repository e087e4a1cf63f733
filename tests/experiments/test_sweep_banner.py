"""The banner a sweep prints before it starts: its settings against the paper's, its grid, and the compute it
needs from the hours measured on CPUs and a GPU, planning on a plan set included."""
from __future__ import annotations

import pytest

from tnlib.cli import main
from tnlib.data.manifest import dataset_root
from tnlib.experiments.running.sweep_banner import describe_sweep
from tnlib.experiments.running.sweep_standing import measured_gpu_hours, measured_hours, plan_set_hours
from tnlib.experiments.sweep_settings import Sweep


def test_banner_says_what_runs_and_what_it_costs():
    paper = describe_sweep(Sweep.from_parameters())
    assert paper.startswith("tnlib sweep: the paper's settings")
    assert "= 160 runs" in paper and "40,000 steps x batch 256 per run (100% of the paper's" in paper
    assert "400 training instances" in paper and "GPU" in paper and "needs a GPU machine" in paper
    assert "140.0 GPU-hours" in paper  # 40 runs per domain x (0.5 + 0.5 + 0.5 + 2 h on visitall)
    assert "not run   the paper's hgn and linear models" in paper
    small = describe_sweep(Sweep.preset("small"))
    assert small.startswith("tnlib sweep: preset 'small' -- not the paper's settings")
    assert "= 32 runs" in small and "(0.075% of the paper's" in small and "needs a GPU" not in small
    custom = describe_sweep(Sweep.preset("small", steps=601))
    assert custom.startswith("tnlib sweep: custom settings") and "steps" in custom.splitlines()[0]
    everything = describe_sweep(Sweep.from_parameters(models=["nlm", "hgn", "linear"]))
    assert "not run" not in everything and "linear runs: minutes each" in everything


def test_the_small_presets_banner_counts_its_two_processes_in_english():
    """The README says `--preset small` runs two processes; the banner's measured line says so, spelled right."""
    banner = describe_sweep(Sweep.preset("small"))
    assert "with 2 processes on" in banner and "processs" not in banner
    assert "with 1 process on" in describe_sweep(Sweep.preset("small", workers=1))


@pytest.mark.parametrize("name, model, steps", [("converged", "nlm", 6000), ("converged-linear", "linear", 6000),
                                               ("converged-wl", "wl", 6000)])
def test_converged_presets_plan_at_the_papers_limit_and_can_tell_flat_curves(name, model, steps, capsys):
    """The converged presets: the four configurations, N and TN, seeds for a spread, the paper's
    10,000-evaluation limit on every plan instance, and enough validations for the still-improving rule to judge the
    last quarter; past the steps at which the probes' curves still fell (NLM blocksworld at 3,000 steps)."""
    from tnlib.learning.until_flat import LAST_FRACTION, MIN_EVALUATIONS
    from tnlib.paper import MAX_EVALUATIONS, TABLE1_CONFIGS

    sweep = Sweep.preset(name)
    assert (sweep.models, sweep.train.steps, sweep.train.batch_size, sweep.workers) == ([model], steps, 64, 1)
    assert sweep.configs == list(TABLE1_CONFIGS) and sweep.distributions == ["N", "TN"] and len(sweep.seeds) >= 2
    assert (sweep.max_evaluations, sweep.plan_instances, sweep.plan) == (MAX_EVALUATIONS, None, True)
    assert sweep.dataset_path().name == "small" and sweep.matching_preset() == name
    evaluations = sweep.train.steps // sweep.train.eval_every
    assert evaluations >= MIN_EVALUATIONS and evaluations * LAST_FRACTION >= 5  # a last quarter of 5+ validations
    if model == "nlm":
        assert sweep.train.steps > 3000
    # the banner prints the hours measured on a 2-core machine, scaled by the grid (runs per domain)
    assert main(["sweep", "--preset", name, "--dry-run"]) == 0
    err = capsys.readouterr().err
    runs = 4 * 4 * 2 * len(sweep.seeds)
    assert err.startswith(f"tnlib sweep: preset {name!r}") and f"= {runs} runs" in err and "10,000 evaluations" in err
    from tnlib.learning.training_cost import MEASURED_RUN_OVERHEAD_SECONDS, MEASURED_STEP_SECONDS

    step_seconds, overhead = MEASURED_STEP_SECONDS["small"], MEASURED_RUN_OVERHEAD_SECONDS["small"]

    def hours(steps):
        expected = sum(runs / 4 * (steps * step_seconds[model][d] + overhead[model])
                       for d in sweep.domains) / 3600
        return f"{expected:.1f} hours" if expected >= 1 else f"{expected * 60:.0f} minutes"

    # they train until flat: the banner gives the hours at `steps` and at `max_steps`
    assert sweep.max_steps > sweep.train.steps and sweep.extend_steps % sweep.train.eval_every == 0
    assert (f"measured  about {hours(steps)} (up to {hours(sweep.max_steps)} if every run trained to max_steps) "
            "with 1 process") in err
    assert f"until flat: a run still improving then trains on, 2,000 steps at a time, up to {sweep.max_steps:,}" in err
    one = Sweep.preset(name, domains="ferry", configs="learn/ff", seeds=0, workers=2)
    assert measured_hours(one) == pytest.approx(
        2 * (steps * step_seconds[model]["ferry"] + overhead[model]) / 3600 / 2)
    assert measured_hours(Sweep.preset(name, batch_size=256)) is None  # not measured: no figure
    on_paper = measured_hours(Sweep.preset(name, data_profile="paper"))  # measured there for NLM only
    if model in MEASURED_STEP_SECONDS["paper"]:
        assert on_paper == pytest.approx(sum(
            runs / 4 * (steps * MEASURED_STEP_SECONDS["paper"][model][d] + MEASURED_RUN_OVERHEAD_SECONDS["paper"][model])
            for d in sweep.domains) / 3600)
    else:
        assert on_paper is None
    assert measured_hours(Sweep.preset(name, models=["hgn"])) == pytest.approx(
        sum(runs / 4 * (steps * step_seconds["hgn"][d] + overhead["hgn"])
            for d in sweep.domains) / 3600)
    # the figures are of the models' default arguments, which the banner says when a sweep sets others
    assert "default arguments" not in describe_sweep(Sweep.preset(name, models=["hgn"]))
    means = describe_sweep(Sweep.preset(name, models=["hgn"], model_args={"hgn": {"layout": "means"}}))
    assert "each model with its default arguments, not this sweep's model_args" in means


@pytest.mark.parametrize("name", ["paper-scale", "paper-scale-wl"])
def test_paper_scale_banners_give_the_hours_measured_on_data_paper_without_planning(name):
    from tnlib.learning.training_cost import MEASURED_RUN_OVERHEAD_SECONDS, MEASURED_STEP_SECONDS

    sweep = Sweep.preset(name)
    (model,) = sweep.models
    step_seconds = MEASURED_STEP_SECONDS["paper"][model]
    per_domain = len(sweep.configs) * len(sweep.distributions) * len(sweep.seeds)
    expected = per_domain * sum(sweep.train.steps * step_seconds[d] + MEASURED_RUN_OVERHEAD_SECONDS["paper"][model]
                                for d in sweep.domains) / 3600
    assert measured_hours(sweep) == pytest.approx(expected)
    line = next(x for x in describe_sweep(sweep).splitlines() if x.startswith("  measured"))
    assert f"{model} blocksworld {step_seconds['blocksworld']} s" in line and f"visitall {step_seconds['visitall']} s" in line
    # planning on the plan set at the paper's sizes is a separate step the measured overhead leaves out
    planning = Sweep.preset(name, plan=True)
    assert planning.plan_on != "plan"
    for line in (line, next(x for x in describe_sweep(planning).splitlines() if x.startswith("  measured"))):
        assert "test evaluation per run" in line and "planning" not in line
    assert "test evaluation and planning per run" in describe_sweep(Sweep.preset("converged"))


def test_plan_set_banner_bounds_planning_by_the_rates_measured_at_the_largest_instances(tmp_path):
    from tnlib.data.plan_sets import load_plan_set
    from tnlib.learning.training_cost import MEASURED_PLAN_SET_EVALUATIONS_PER_SECOND as RATES

    sweep = Sweep.preset("paper-scale-wl")
    assert sweep.plan and sweep.plan_on == "plan-set" and sweep.plan_per_cell == 1
    root = dataset_root(sweep.data_root_or_default(), sweep.data_profile)
    plan_sets = {d: load_plan_set(root, d) for d in sweep.domains}
    cells = {d: len({s.record(i)["cell"] for i in s.instances()}) for d, s in plan_sets.items()}
    # one instance per grid cell; per seed and configuration N plans twice (N, N+clip), TN once
    searches = 3 * len(sweep.configs) * len(sweep.seeds)
    expected = sum(searches * cells[d] * 10_000 / RATES["wl"][d] for d in sweep.domains) / 3600
    hours, unmeasured = plan_set_hours(sweep)
    assert hours == pytest.approx(expected) and unmeasured == []
    line = next(x for x in describe_sweep(sweep).splitlines() if x.startswith("  plan set"))
    assert f"at most about {expected:.1f} hours on top with 1 process" in line and "gripper 1,124" in line
    # every instance of the set, two processes, a model without a measured rate
    everything = Sweep.preset("paper-scale-wl", plan_per_cell=None, workers=2, models=["wl", "hgn"])
    sizes = {d: len(s) for d, s in plan_sets.items()}
    hours, unmeasured = plan_set_hours(everything)
    assert hours == pytest.approx(sum(searches * sizes[d] * 10_000 / RATES["wl"][d] for d in sweep.domains) / 3600 / 2)
    assert unmeasured == ["hgn"]
    assert "hgn: no measured rate, not counted" in describe_sweep(everything)
    # no estimate where nothing is planned on a plan set, nor where the plan set is not there
    for quiet in (Sweep.preset("paper-scale"), Sweep.preset("converged"),
                  Sweep.preset("paper-scale-wl", data_root=str(tmp_path))):
        assert plan_set_hours(quiet) is None and "  plan set" not in describe_sweep(quiet)


def test_banner_gives_the_training_hours_measured_on_a_gpu_where_measured():
    from tnlib.learning.training_cost import MEASURED_GPU, MEASURED_GPU_STEP_SECONDS

    for sweep in (Sweep(), Sweep.preset("paper-scale")):
        table = MEASURED_GPU_STEP_SECONDS["paper"][sweep.train.batch_size]
        runs_per_domain = len(sweep.configs) * len(sweep.distributions) * len(sweep.seeds)
        expected = sum(runs_per_domain * sweep.train.steps * table[m][d] for m in sweep.models for d in sweep.domains) / 3600
        assert measured_gpu_hours(sweep) == pytest.approx(expected)
        line = next(x for x in describe_sweep(sweep).splitlines() if x.startswith("  on a GPU"))
        assert line.startswith(f"  on a GPU  training alone about {expected:.1f} hours") and MEASURED_GPU in line
        if sweep.max_steps is not None:  # a sweep that trains until flat: also the hours at max_steps
            at_most = sum(runs_per_domain * sweep.max_steps * table[m][d] for m in sweep.models for d in sweep.domains)
            assert f"(up to {at_most / 3600:.1f} hours at max_steps)" in line
    both = Sweep.from_parameters(models=["nlm", "linear"], domains=["ferry"], seeds=[0])
    table = MEASURED_GPU_STEP_SECONDS["paper"][256]
    assert measured_gpu_hours(both) == pytest.approx(8 * 40_000 * (table["nlm"]["ferry"] + table["linear"]["ferry"])
                                                      / 3600)
    with_hgn = Sweep.from_parameters(models=["nlm", "hgn"], domains=["ferry"], seeds=[0])
    assert measured_gpu_hours(with_hgn) == pytest.approx(8 * 40_000 * (table["nlm"]["ferry"] + table["hgn"]["ferry"])
                                                          / 3600)
    # not measured: data/small, a batch size without a measurement, a model without one (WL features)
    assert measured_gpu_hours(Sweep.from_parameters(models=["nlm", "wl"], domains=["ferry"], seeds=[0])) is None
    assert measured_gpu_hours(Sweep.preset("small")) is None and "on a GPU" not in describe_sweep(Sweep.preset("small"))
    assert measured_gpu_hours(Sweep.from_parameters(batch_size=128)) is None


def test_banner_and_notebook_show_paths_relative_to_the_repository():
    from tnlib.experiments.running.sweep_banner import describe_sweep
    from tnlib.experiments.sweep_settings import Sweep
    from tnlib.files import REPO_ROOT, shown_path

    assert shown_path(REPO_ROOT / "runs" / "small") == "runs/small"
    assert shown_path("/elsewhere/runs") == "/elsewhere/runs"
    banner = describe_sweep(Sweep.preset("small"))
    assert str(REPO_ROOT) not in banner and "  results   runs/small" in banner
