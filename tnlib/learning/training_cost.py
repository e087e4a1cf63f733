"""What training costs: tnlib's measured step times on this project's CPUs and the paper's GPU hours per run.

``tnlib train`` prints its estimate from these before its first step, and a sweep's banner sums them over its runs.
"""
from __future__ import annotations

from tnlib.paper import BATCH_SIZE, GPU_HOURS_PER_RUN, TRAIN_STEPS

# tnlib's training step on a 2-core CPU at batch 256 (NLM and STRIPS-HGN on 16-block blocksworld; the shared spec
# "training-cost": 0.54 s and 2.3 s). The CPU estimate scales them by steps and batch size, not by instance size;
# smaller instances train faster (NLM at 8 objects: 0.062 s), so for data/small (training instances of 4-8 blocks,
# at most 8 objects in ferry, 10 in gripper, 16 in visitall) it is an upper bound, and the banner says so. Linear
# regression trains in minutes: no estimate. STRIPS-HGN's is for its default "authors" layout: the spec's 2.3 s
# (measured on the "means" layout) times 1.47, the two layouts' ratio in blocksworld training steps below.
CPU_SECONDS_PER_STEP = {"nlm": 0.54, "hgn": 3.4}
CPU_TIMED_OBJECTS = 16
# Measured on this project's shared 2-core machine (one thread per process, two processes side by side) at batch 64,
# validation every 100 steps: wall seconds per training step, validation included (seconds of curves.jsonl over
# steps), per dataset profile, model and domain -- the machine's load moves them by up to 2x, and machines of
# another kind by 1.5x. data/small: medians over the 6,000-step runs of reports/converged/ (NLM 16 runs per domain,
# STRIPS-HGN and linear regression 16 per domain), AMD EPYC. data/paper: steps 100-400 of a 400-step TN learn/ff
# run (`tnlib train --data-root data/paper --steps 400 --batch-size 64 --eval-every 100`), two domains side by side
# (visitall with blocksworld, ferry with gripper) and nothing else running, AMD EPYC (AVX2), with the NLM kernels
# that skip each state's padded objects (reports/speed.md part 2): visitall's 5x5 training instances (25 objects)
# make its arity-3 tensors 3.8x those of blocksworld's 16 blocks. The NLM's data/paper values are those runs'
# (0.072 / 0.043 / 0.068 / 0.172 s, the NLM code of ec873ff5) divided by the speed-up of the step since, measured
# in one process on AMD EPYC (AVX-512), one thread, beside the paper-scale campaign (load 7.5-9 on 2 cores): both
# codes alternating step by step on the same batches, `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE
# MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184 OMP_NUM_THREADS=1 .venv/bin/python
# benchmarks/bench_nlm_training_step.py --steps 12 --before ec873ff5`, CPU-time ratios, the median of three runs:
# blocksworld 1.40x, ferry 1.33x, gripper 1.51x, visitall 1.61x (reports/speed.md part 2). On top, per run
# (MEASURED_RUN_OVERHEAD_SECONDS): the test evaluation, and on data/small planning every plan instance at 10,000
# evaluations (twice for N: default and clip; NLM: an 8-run sweep took 1,118 s, its training 1,089 s; STRIPS-HGN:
# 16 runs took 2,015 s, their training 1,831 s); on data/paper the two test evaluations (best and best-NLL
# checkpoints: 10 s blocksworld to 70 s visitall), planning being a separate step there.
# tnlib.experiments.running.sweep_standing.measured_hours sums them for the banner.
# STRIPS-HGN's are for its default "authors" layout: the medians measured on its "means" layout times the ratio of
# the two in 400-step runs on data/small, one after the other, twice each (Intel Xeon, beside three other jobs):
# blocksworld 1.47, ferry 1.31, gripper 1.43, visitall 1.42 (`tnlib train --model hgn --model-args layout=...`);
# the run overhead likewise by 1.4. Estimates ignore the model arguments a sweep sets (another layout, depth).
MEASURED_BATCH_SIZE = 64
MEASURED_STEP_SECONDS = {
    "small": {"nlm": {"blocksworld": 0.021, "ferry": 0.021, "gripper": 0.030, "visitall": 0.106},
              "hgn": {"blocksworld": 0.054, "ferry": 0.016, "gripper": 0.023, "visitall": 0.023},
              "linear": {"blocksworld": 0.0008, "ferry": 0.0008, "gripper": 0.0008, "visitall": 0.0008},
              # WL: 1,000-step runs, one at a time beside two NLM trainings, Intel Xeon (AVX-512)
              "wl": {"blocksworld": 0.0042, "ferry": 0.0038, "gripper": 0.0023, "visitall": 0.0028}},
    "paper": {"nlm": {"blocksworld": 0.051, "ferry": 0.032, "gripper": 0.045, "visitall": 0.107},
              # WL: medians over the 80 runs of reports/paper-scale-wl (6,000-40,000 steps each, two sweep
              # processes side by side, a third niced one beside them for 7 of their 62 minutes; AMD EPYC with
              # AVX-512)
              "wl": {"blocksworld": 0.0031, "ferry": 0.0025, "gripper": 0.0015, "visitall": 0.0011}},
}
# (WL on data/small: fitting the colours, the test evaluation and planning every plan instance, N default and clip,
# 26 s beside 23 s of training in a blocksworld learn/ff run of 8,000 steps.)
# (WL on data/paper: fitting the colours of the training states and the test evaluation of both checkpoints, the
# runs' wall time less their training: 7 s gripper to 37 s ferry, 27 s on average.)
MEASURED_RUN_OVERHEAD_SECONDS = {"small": {"nlm": 5.0, "hgn": 16.0, "linear": 3.0, "wl": 26.0},
                                 "paper": {"nlm": 30.0, "wl": 27.0}}

# Learned GBFS at the paper's test sizes: evaluations per second (the paper's counting; the head's h_FF residual and
# LM-cut bound computed for every state, as under Table 2's TN learn/ff) at each domain's largest plan-set instance
# (blocksworld 22 blocks, ferry 30 x 30, gripper 100 balls, visitall 7 x 7), one thread beside two niced training
# processes, AMD EPYC (AVX-512): `benchmarks/bench_wl.py --evaluations 3000` (reports/speed.md part 6;
# the NLM with random weights, as its cost depends on the instance, not the weights). A larger instance costs more
# per evaluation, so hours from these bound a plan set's planning from above (sweep_standing.plan_set_hours);
# setting up a search (grounding, the model) is under half a second an instance, left out.
MEASURED_PLAN_SET_EVALUATIONS_PER_SECOND = {
    "nlm": {"blocksworld": 849, "ferry": 157, "gripper": 13.8, "visitall": 335},
    "wl": {"blocksworld": 1057, "ferry": 1379, "gripper": 1124, "visitall": 2116},
}

# Measured on one NVIDIA H100 80GB (torch 2.11.0+cu130; reports/speed.md part 5): seconds per step of
# the training loop on data/paper, one run at a time, validation left out, per batch size, model and domain
# (medians of two 20-step runs; STRIPS-HGN in its default "authors" layout, measured on a second machine of the same
# kind). The GPU mostly waits on the CPU's collation and kernel launches, so batch 256 costs only 0.8-2.6x batch
# 64. tnlib.experiments.running.sweep_standing.measured_gpu_hours sums them for the banner.
MEASURED_GPU = "one NVIDIA H100"
MEASURED_GPU_STEP_SECONDS = {
    "paper": {
        64: {"nlm": {"blocksworld": 0.019, "ferry": 0.018, "gripper": 0.019, "visitall": 0.046},
             "hgn": {"blocksworld": 0.018, "ferry": 0.016, "gripper": 0.021, "visitall": 0.020},
             "linear": {"blocksworld": 0.002, "ferry": 0.002, "gripper": 0.003, "visitall": 0.002}},
        256: {"nlm": {"blocksworld": 0.041, "ferry": 0.034, "gripper": 0.033, "visitall": 0.118},
              "hgn": {"blocksworld": 0.024, "ferry": 0.026, "gripper": 0.024, "visitall": 0.017},
              "linear": {"blocksworld": 0.003, "ferry": 0.002, "gripper": 0.004, "visitall": 0.003}},
    },
}


def measured_gpu_step_seconds(profile: str, batch_size: int, model: str, domain: str) -> float | None:
    """Seconds per training step measured on :data:`MEASURED_GPU` for a dataset profile, batch size, model and
    domain; None where that was not measured."""
    return MEASURED_GPU_STEP_SECONDS.get(profile, {}).get(batch_size, {}).get(model, {}).get(domain)


def measured_cpu_step_seconds(profile: str | None, batch_size: int, model: str, domain: str) -> float | None:
    """Wall seconds per training step on this project's 2-core CPUs for a dataset profile, model and domain
    (:data:`MEASURED_STEP_SECONDS`, validation every 100 steps included), at ``batch_size``: the time measured at
    :data:`MEASURED_BATCH_SIZE` scaled by the batch (a step's work grows with it; measured on data/small's NLM in
    blocksworld, batch 256 takes 0.09 s a step against 0.021 s at 64, so the scaling does not flatter); None where
    that was not measured."""
    seconds = MEASURED_STEP_SECONDS.get(profile or "", {}).get(model, {}).get(domain)
    return None if seconds is None else seconds * batch_size / MEASURED_BATCH_SIZE


def run_hours(model: str, domain: str, steps: int, batch_size: int) -> tuple[float, float | None]:
    """(GPU-hours, CPU-hours) of one training run, as :func:`tnlib.experiments.running.sweep_standing.estimated_hours`
    counts them; the CPU-hours are None for a model without a measured step time (linear regression and WL:
    minutes), the GPU-hours 0 for a model the paper did not train (WL)."""
    hours = GPU_HOURS_PER_RUN.get(model, {"default": 0.0})
    gpu = hours.get(domain, hours["default"]) * steps * batch_size / (TRAIN_STEPS * BATCH_SIZE)
    seconds = CPU_SECONDS_PER_STEP.get(model)
    cpu = None if seconds is None else seconds * batch_size / BATCH_SIZE * steps / 3600
    return gpu, cpu
