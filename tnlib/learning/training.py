"""Training: one readable loop, in the spirit of nanoGPT's ``train.py``.

``train(config) -> run folder`` trains one model (NLM, STRIPS-HGN, linear regression, or beyond the paper linear
regression over WL features) with one head configuration by the NLL of its distribution, as in the paper: AdamW,
batch 256, weight decay 1e-2 (NLM; none for HGN, as its authors trained it, and for the linear models, whose weight
decay the appendix says was removed), gradient norm clip 0.1, learning rate 1e-2 (NLM, linear) or 1e-3 (HGN, WL),
a configurable number of steps (the paper: 4e4).
The run folder holds

* ``config.json`` — the :class:`TrainConfig`;
* ``data.json`` — what it trained and validated on: splits, and the instances and states used (``instances`` is
  at most N: a split with fewer distinct instances is used whole, with a warning, and this file says how many;
  validation leaves out the val rows whose (state, goal) equals a train row's up to renaming objects,
  :func:`load_validation_items`, and this file says how many of the split's rows it kept);
* ``curves.jsonl`` — one JSON line per validation: step, mean training loss since the previous line, validation
  NLL and MSE, seconds since the start (for plots);
* ``best.pt`` — the weights with the best validation MSE so far (the paper's model selection, on the
  state-disjoint validation rows);
* ``best-nll.pt`` — the weights with the best validation NLL (the paper's choice for its NLL table of the linear
  models);
* ``last.pt`` — a periodic checkpoint with the optimizer and the batch sampler's RNG state, written atomically
  (temporary file + rename): ``train`` on a folder that has one resumes from it and ends with exactly the
  weights an uninterrupted run would have;
* ``machines.jsonl`` — one JSON line per start of training (the first and every resume): the step it started
  from, the kind of hardware (:func:`tnlib.device.machine_kind`), the commit of the code that trained
  (:func:`tnlib.provenance.code_commit`) and the host's processor and OpenBLAS kernels, which one kind's name can
  leave open (:func:`tnlib.device.processor_signature`), so a run resumed elsewhere or by other code says so.

The checkpoint files are :mod:`tnlib.learning.checkpoints`'s. A checkpoint holds the config and the model's
constructor arguments, so :func:`load_checkpoint` rebuilds model and
head without the data. A non-finite loss or gradient norm stops the run with :class:`TrainingDiverged`, naming
the step and the batch's instances, before anything is written for that step.

Determinism: the model is initialised after ``torch.manual_seed(seed)`` and batches are drawn (uniformly, with
replacement) from a dedicated ``torch.Generator`` seeded with ``seed``, so the same seed gives the same weights
on the same kind of machine and torch build, on the CPU and on CUDA (tests/learning/test_cuda.py); float32 rounds
differently on another kind of processor or GPU, so weights agree across kinds only to rounding.
"""
from __future__ import annotations

import copy
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Callable, Sequence

import torch
from torch import nn

import tnlib.progress
from tnlib.data.loading import HeuristicDataset, load_split
from tnlib.data.manifest import dataset_root, split_lmcut_source
from tnlib.data.schema import MANIFEST
from tnlib.data.train_pairs import train_pair_record
from tnlib.device import check_device, default_device, device_for_reading, machine_kind, processor_signature
from tnlib.errors import DamagedFile, DatasetError, TrainingDiverged
from tnlib.files import (append_jsonl, atomic_write_json, atomic_write_text, damaged_message, locked, read_json,
                         read_jsonl)
from tnlib.learning.checkpoints import (CHECKPOINT_FORMAT, read_checkpoint_file, read_resume_checkpoint,
                                        save_checkpoint, save_resume_checkpoint)
from tnlib.learning.encodings import Batch, Encoded, Encoder
from tnlib.learning.heads import DistributionHead, HeadConfig, point_estimates
from tnlib.learning.optimizer_step import optimizer_step
from tnlib.learning.models import (
    DEFAULT_LEARNING_RATES,
    DEFAULT_WEIGHT_DECAY,
    MODEL_CLASSES,
    build_model,
    check_model_args,
    make_encoder,
    model_arguments,
    recorded_model_arguments,
)
from tnlib.learning.run_files import RunDir, missing_checkpoint_message
from tnlib.paper import BATCH_SIZE, EVAL_EVERY, GRADIENT_CLIP, TRAIN_STEPS
from tnlib.provenance import code_commit

# Changing these between an interruption and the resume does not change the computation of the steps already done.
_RESUMABLE_CHANGES = {"steps", "device", "progress", "out_dir"}  # out_dir: a moved folder still resumes
# States per batch when predicting (validation, testing), before the cost budget splits a batch further: no
# gradients are kept, so a batch can be far larger than a training one.
PREDICTION_BATCH_SIZE = 1024


@dataclass
class TrainConfig:
    """Everything a training run depends on. Defaults are the paper's where it gives one; how often to validate
    (``eval_every``) and the learned sigma's link (``sigma_link``) it leaves open, and these defaults are tnlib's."""

    domain: str = "blocksworld"
    model: str = "nlm"  # nlm | hgn | linear
    # the distribution, sigma, residual, bounds and sigma link (tnlib.learning.heads.HeadConfig, its defaults)
    head: HeadConfig = field(default_factory=HeadConfig)
    # data (tnlib.data): a dataset root (None: tnlib.data's default) and splits; `instances` subsamples at most
    # that many training instances (the paper: 400; all, with a warning, when the split has fewer)
    data_root: str | None = None
    train_split: str = "train"
    val_split: str = "val"
    instances: int | None = None
    # optimisation
    steps: int = TRAIN_STEPS
    batch_size: int = BATCH_SIZE
    learning_rate: float | None = None  # None: 1e-2 (nlm, linear) or 1e-3 (hgn, wl)
    weight_decay: float | None = None  # None: per model (models.DEFAULT_WEIGHT_DECAY): 1e-2 (nlm), else 0
    grad_clip: float = GRADIENT_CLIP
    eval_every: int = EVAL_EVERY
    checkpoint_every: int = 500
    eval_batch_size: int = PREDICTION_BATCH_SIZE
    seed: int = 0
    # e.g. {"depth": 3} for a smaller NLM, {"layout": "paper-text"} for the paper-text layout (tnlib.learning.models)
    model_args: dict = field(default_factory=dict)
    # where
    out_dir: str = "runs"
    run_name: str | None = None
    device: str | None = None  # None: CUDA when present
    progress: bool = True

    def __post_init__(self) -> None:
        if self.device is not None:
            self.device = str(self.device)  # a torch.device is accepted; the config stays JSON
        self.validate()

    def validate(self) -> None:
        if self.model not in MODEL_CLASSES:
            raise ValueError(f"unknown model {self.model!r} (choose from {', '.join(MODEL_CLASSES)})")
        if not isinstance(self.head, HeadConfig):
            raise ValueError(f"head must be a HeadConfig, got {self.head!r}")
        for name in ("steps", "batch_size", "eval_every", "checkpoint_every", "eval_batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.instances is not None and (not isinstance(self.instances, int) or self.instances < 1):
            raise ValueError(f"instances must be an integer >= 1, or all, got {self.instances!r}")
        if self.weight_decay is not None and not self.weight_decay >= 0:
            raise ValueError(f"weight_decay must be >= 0, or None for the model's default, got {self.weight_decay!r}")
        if not self.grad_clip >= 0:
            raise ValueError(f"grad_clip must be >= 0, got {self.grad_clip!r}")
        if self.learning_rate is not None and not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        check_model_args(self.model, self.model_args)
        if self.device is not None and self.device != "auto":
            check_device(self.device)

    @property
    def lr(self) -> float:
        return self.learning_rate if self.learning_rate is not None else DEFAULT_LEARNING_RATES[self.model]

    @property
    def decay(self) -> float:
        """AdamW's weight decay: ``weight_decay``, or the model's when it is None (the paper's,
        ``tnlib.paper.WEIGHT_DECAY``; WL's as linear regression's)."""
        return self.weight_decay if self.weight_decay is not None else DEFAULT_WEIGHT_DECAY[self.model]

    @property
    def name(self) -> str:
        """The run folder's name: explicit, or built from what distinguishes runs in the paper's tables."""
        if self.run_name:
            return self.run_name
        head = self.head
        upper = "" if head.upper_bound == "none" else f"-u{head.upper_bound}"
        # the sigma mode's own setting (a learned sigma's link, a fixed sigma's value) names itself unless default
        setting, default = ((head.sigma_link, HeadConfig.sigma_link) if head.sigma == "learn"
                            else (head.fixed_sigma, HeadConfig.fixed_sigma))
        variant = "" if setting == default else f"-{setting}"
        # a domain given as a file names the run by the file (its folder, for a folder's domain.pddl): the path
        # itself would put the run folder beside the domain, outside out_dir
        domain, path = self.domain, Path(self.domain)
        if len(path.parts) > 1 or path.suffix == ".pddl":
            domain = path.parent.name if path.stem == "domain" else path.stem
        return (f"{domain}-{self.model}-{head.distribution}-{head.sigma}{variant}-{head.residual}"
                f"-l{head.lower_bound}{upper}-s{self.seed}")

    def to_dict(self) -> dict:
        """The settings as one flat JSON object, the head's beside the others: the record of a run folder's
        ``config.json`` and a checkpoint's ``config`` (:meth:`from_dict` reads it back)."""
        values = {}
        for f in fields(self):
            if f.name == "head":
                values.update(asdict(self.head))
            else:
                values[f.name] = copy.deepcopy(getattr(self, f.name))
        return values

    @classmethod
    def from_dict(cls, values: dict) -> "TrainConfig":
        """The configuration :meth:`to_dict` wrote (the head's settings flat beside the others): the one reader of
        that record. A record without a setting reads as that setting's default (what training without that
        setting did); a key no setting has is refused."""
        head_names = {f.name for f in fields(HeadConfig)}
        known = ({f.name for f in fields(cls)} - {"head"}) | head_names
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown config keys: {', '.join(unknown)}")
        head = HeadConfig(**{k: v for k, v in values.items() if k in head_names})
        return cls(head=head, **{k: v for k, v in values.items() if k not in head_names})


def read_run_config(run: RunDir | str | os.PathLike) -> TrainConfig:
    """The configuration a run folder was trained by, from its ``config.json`` (:meth:`TrainConfig.from_dict`);
    a DamagedFile naming the file when it is not a run's configuration."""
    return TrainConfig.from_dict((run if isinstance(run, RunDir) else RunDir(run)).read_config())


def _effective(config: TrainConfig, values: dict, name: str):
    """A setting's value as training uses it (``values``: ``config.to_dict()``): a None learning rate or weight
    decay is the model's default, so a run saved with the value spelled out resumes under the default."""
    if name == "learning_rate":
        return config.lr
    if name == "weight_decay":
        return config.decay
    return values[name]


# ---------------------------------------------------------------------------------------------------------------
# Data


def load_items(config: TrainConfig, split: str, instances: int | Sequence[str] | None = None,
               without_train_pairs: bool = False) -> list[dict]:
    """The items of one split from ``config.data_root`` through ``tnlib.data`` (the dataset pipeline).

    Each item also carries the raw ``ff`` and ``lmcut`` values of its state (for the baseline MSE columns).
    ``instances``: as :class:`tnlib.data.loading.HeuristicDataset`'s (None: all; N: N drawn by the run's seed; a
    list: those named). ``without_train_pairs``: only the rows whose (state, goal) is no train row's up to renaming objects
    (:meth:`tnlib.data.loading.StateTable.without_train_pairs`; what model selection validates on).
    """
    table = load_split(config.data_root, config.domain, split)
    if without_train_pairs:
        table = table.without_train_pairs()
    dataset = HeuristicDataset(
        table, lower_bound=config.head.lower_bound, residual=config.head.residual,
        upper_bound=config.head.upper_bound, instances=instances, seed=config.seed,
    )
    ff, lmcut = dataset.table.numpy("ff"), dataset.table.numpy("lmcut")
    return [{**dataset[i], "ff": float(ff[i]), "lmcut": float(lmcut[i])} for i in range(len(dataset))]


def data_used(config: TrainConfig, train_items: Sequence[dict], val_items: Sequence[dict],
              val_split_pairs: dict | None = None) -> dict:
    """What a run trains and validates on (its ``data.json``): the splits, the training instances asked for
    (``config.instances``; None: all) and used, and the instances and states of each. ``val_split_pairs``: the
    validation split's train-pair record (:mod:`tnlib.data.train_pairs`) when validation left out the rows equal
    to a train (state, goal) pair; then ``val_states`` counts the rows kept, ``val_states_in_split`` all of them
    and ``val_states_equal_to_train`` those left out (None: the items were given, not loaded)."""
    return {
        "data_root": config.data_root,
        "train_split": config.train_split,
        "val_split": config.val_split,
        "train_instances_requested": config.instances,
        "train_instances": len({item["instance"] for item in train_items}),
        "train_states": len(train_items),
        "val_instances": len({item["instance"] for item in val_items}),
        "val_states": len(val_items),
        "val_states_in_split": val_split_pairs["rows"] if val_split_pairs else None,
        "val_states_equal_to_train": val_split_pairs["equal_to_train"] if val_split_pairs else None,
        "lmcut": _lmcut_trained_with(config) if val_split_pairs else None,
    }


def _lmcut_trained_with(config: TrainConfig) -> str | None:
    """Whose LM-cut the training split's ``lmcut`` column holds as training starts (planning computes l with it:
    tnlib.learning.learned_heuristic.trained_lmcut), None where its manifest cannot say."""
    try:
        return split_lmcut_source(config.data_root, config.domain, config.train_split)
    except DatasetError:
        return None


def load_validation_items(config: TrainConfig) -> tuple[list[dict], dict]:
    """The items model selection validates on: the rows of ``config.val_split`` whose (state, goal) is not, up
    to renaming objects, that of any row of the domain's whole train split -- a row equal to a training example
    would reward memorising it. The whole split, not the run's subsample of training instances: one validation
    set for every run and seed, and safe for any subsample. Returns (items, the split's train-pair record)."""
    items = load_items(config, config.val_split, without_train_pairs=True)
    record = train_pair_record(dataset_root(config.data_root), config.domain, config.val_split)
    if not items:
        raise ValueError(f"{config.domain}/{config.val_split}: no row left to select a model on ({record['rows']} "
                         f"rows, {record['equal_to_train']} of them equal to a train (state, goal) pair up to "
                         "renaming objects)")
    return items, record


def encode_all(encoder: Encoder, items: Sequence[dict]) -> list[Encoded]:
    return [encoder.encode(item) for item in items]


# A batch's padded size (encoder.cost) is capped at evaluation, so a test set with 100-object instances does not
# allocate B * 100^3 NLM cells at once (at 2^22 cells and 8 channels, each arity-3 tensor is 128 MB).
EVAL_COST_BUDGET = 2**22


def batches(encoder: Encoder, encoded: Sequence[Encoded], batch_size: int, cost_budget: int = EVAL_COST_BUDGET):
    """Evaluation batches: ``(rows, Batch)`` over ``encoded`` ordered by size (less padding), each at most
    ``batch_size`` states and, past one state, at most ``cost_budget`` padded cells (``encoder.cost``)."""
    order = sorted(range(len(encoded)), key=lambda i: encoder.cost(encoded[i]))
    start = 0
    while start < len(order):
        stop = start + 1
        while (stop < len(order) and stop - start < batch_size
               and (stop + 1 - start) * encoder.cost(encoded[order[stop]]) <= cost_budget):
            stop += 1
        rows = order[start:stop]
        yield rows, encoder.collate([encoded[i] for i in rows])
        start = stop


@torch.no_grad()
def predict(model: nn.Module, head: DistributionHead, encoder: Encoder, encoded: Sequence[Encoded],
            device: torch.device, batch_size: int = PREDICTION_BATCH_SIZE) -> dict[str, torch.Tensor]:
    """Per-state float64 CPU tensors, in the order of ``encoded``: h_star, lower, upper, ff, lmcut, mu, sigma,
    estimate (the point estimate), clipped (N only: max(mu, l)) and nll."""
    was_training = model.training
    model.eval()
    columns: dict[str, list[torch.Tensor]] = {}
    order: list[int] = []
    for rows, batch in batches(encoder, encoded, batch_size):
        batch = batch.to(device)
        prediction = head(model(batch.inputs), batch.residual, batch.lower, batch.upper)
        values = {
            "h_star": batch.h_star, "lower": batch.lower, "upper": batch.upper, "ff": batch.ff, "lmcut": batch.lmcut,
            "mu": prediction.mu, "sigma": prediction.sigma, "estimate": prediction.point_estimate(),
            "nll": prediction.nll(batch.h_star),
        }
        if "clip" in point_estimates(prediction.distribution):
            values["clipped"] = prediction.clipped_point_estimate()
        for key, value in values.items():
            columns.setdefault(key, []).append(value.detach().double().cpu())
        order += rows
    model.train(was_training)
    inverse = torch.empty(len(order), dtype=torch.long)
    inverse[torch.tensor(order, dtype=torch.long)] = torch.arange(len(order))
    return {key: torch.cat(value)[inverse] for key, value in columns.items()}


def validation_metrics(model, head, encoder, encoded, device, batch_size) -> dict[str, float]:
    p = predict(model, head, encoder, encoded, device, batch_size)
    return {"val_mse": float((p["estimate"] - p["h_star"]).square().mean()), "val_nll": float(p["nll"].mean())}


# ---------------------------------------------------------------------------------------------------------------
# Resuming, and a checkpoint's model rebuilt (the files themselves: tnlib.learning.checkpoints)


def same_dataset(root, other) -> bool:
    """Whether two dataset roots (None: the default one) hold the same dataset: their root manifests, which chain
    the sha256 of every file, are byte-identical. A run resumes from a moved or cloned repository's data."""
    try:
        return (dataset_root(root) / MANIFEST).read_bytes() == (dataset_root(other) / MANIFEST).read_bytes()
    except (OSError, DatasetError):
        return False


def _check_same_configuration(run_dir: Path, checkpoint: dict, config: TrainConfig, model_kwargs: dict) -> None:
    """A ValueError naming what differs where ``run_dir``'s ``checkpoint`` was trained otherwise than ``config``
    asks (the settings a resume may change aside)."""
    saved = TrainConfig.from_dict(checkpoint["config"])
    saved_values, values = saved.to_dict(), config.to_dict()
    differs = [name for name in values if name not in _RESUMABLE_CHANGES
               and _effective(saved, saved_values, name) != _effective(config, values, name)
               and not (name == "data_root" and same_dataset(saved.data_root, config.data_root))]
    saved_model = recorded_model_arguments(saved.model, checkpoint["model_kwargs"])
    differs += [f"model argument {key}: {saved_model.get(key)!r} there, {value!r} now"
                for key, value in model_kwargs.items() if saved_model.get(key) != value]
    if differs:
        raise ValueError(f"{run_dir} holds a run with a different configuration ({', '.join(differs)}); "
                         "choose another run name (`--name`, run_name=) or start it afresh (`--restart`, resume=False)")


def trained_steps(config: TrainConfig) -> int | None:
    """The steps ``config``'s run folder holds it trained to, told from the run's files alone (no data, no model,
    a fraction of a second where :func:`train` takes seconds to find a trained run trained): the step of its resume
    checkpoint (or of a pruned run, ``pruned.json``) and of its last validation record, where the two agree, the
    checkpoint was trained by ``config``'s settings (the steps, and the model's arguments, which need the data to
    tell, aside) and ``config.json`` and ``data.json`` read back. None where any of that is missing, damaged or
    otherwise: :func:`train` is the one to find out what, and to mend or say it."""
    run = RunDir(Path(config.out_dir) / config.name)
    try:
        if run.last.is_file():
            checkpoint = read_checkpoint_file(run.last, written_here=True)
            step = checkpoint["step"]
        elif run.pruned_file.is_file():
            checkpoint, step = read_checkpoint_file(run.best, written_here=True), read_json(run.pruned_file)["step"]
        else:
            return None
        _check_same_configuration(run.path, checkpoint, config, {})
        run.read_config()
    except (DamagedFile, ValueError, KeyError, TypeError, OSError):
        return None
    validated = [record["step"] for record in read_jsonl(run.curves_file) if isinstance(record.get("step"), int)]
    if not run.data_file.is_file() or not validated or max(validated) != step:
        return None
    return step


def _finished_pruned_run(run: RunDir, config: TrainConfig, model_kwargs: dict) -> Path:
    """A finished run whose resume checkpoints were pruned (``pruned.json``): its folder, untouched, when ``config``
    asks for no more steps than it trained; a ValueError when it asks for more (there is no optimizer state to
    train on from) or for another configuration."""
    finished = read_json(run.pruned_file)["step"]
    best = read_checkpoint_file(run.best, written_here=True)
    _check_same_configuration(run.path, best, config, model_kwargs)
    if config.steps > finished:
        raise ValueError(f"{run.path} finished at step {finished:,} and its resume checkpoint was pruned (`tnlib "
                         f"prune`), so it cannot train on to step {config.steps:,}: start it afresh (`--restart`, "
                         "resume=False, or delete the folder) or keep its steps")
    if not _readable_config(run):
        atomic_write_json(run.config_file, config.to_dict(), indent=2)
    return run.path



def _readable_config(run: RunDir) -> bool:
    """Whether ``run``'s config.json is there and reads back as a run's configuration. A damaged one is said on
    stderr: the run's checkpoint matched the settings of this pass, which write it again."""
    if not run.config_file.is_file():
        return False
    try:
        run.read_config()
    except DamagedFile as err:
        print(damaged_message(err.path, err.reason, "writing it again from this run's settings"), file=sys.stderr)
        return False
    return True


def model_constructor_arguments(config: TrainConfig, encoder: Encoder) -> dict:
    """The model's constructor arguments, defaults spelled out (the NLM's layout, ...): checkpoints record them."""
    return model_arguments(config.model, {**encoder.model_kwargs(), **config.model_args})


def load_checkpoint(path: str | os.PathLike, device: str | torch.device | None = None):
    """Rebuild ``(model, head, config, checkpoint)`` from a ``.pt`` file or a run folder (its ``best.pt``)."""
    path = Path(path)
    if path.is_dir():
        path = RunDir(path).best
    if not path.is_file():
        raise FileNotFoundError(missing_checkpoint_message(path))
    checkpoint = read_checkpoint_file(path)
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != CHECKPOINT_FORMAT:
        found = (f"a torch file of format {checkpoint['format']!r}" if isinstance(checkpoint, dict)
                 and checkpoint.get("format") is not None else "a torch file without tnlib's format record"
                 if isinstance(checkpoint, dict) else f"a saved {type(checkpoint).__name__}")
        raise ValueError(f"{path}: not a tnlib checkpoint ({found}; tnlib's are of format {CHECKPOINT_FORMAT!r}); give "
                         "a checkpoint a run folder holds (best.pt, best-nll.pt or last.pt) or the run folder itself")
    config = TrainConfig.from_dict(checkpoint["config"])
    model = build_model(config.model, **recorded_model_arguments(config.model, checkpoint["model_kwargs"]))
    model.load_state_dict(checkpoint["model"])
    device = default_device(device) if device is not None else device_for_reading(config.device)
    model.to(device).eval()
    return model, DistributionHead(config.head), config, checkpoint


def checkpoint_encoder(config: TrainConfig, checkpoint: dict) -> Encoder:
    """The encoder a checkpoint's model was trained with, fitted state included (WL's colours)."""
    encoder = make_encoder(config.model, config.domain)
    encoder.load_state(checkpoint.get("encoder"))
    return encoder


# ---------------------------------------------------------------------------------------------------------------
# The loop


def train(
    config: TrainConfig,
    train_items: Sequence[dict] | None = None,
    val_items: Sequence[dict] | None = None,
    on_step: Callable[[int], None] | None = None,
    resume: bool = True,
    on_start: Callable[[int], None] | None = None,
    lock: bool = True,
) -> Path:
    """Train one model; returns its run folder (see the module docstring for what it contains).

    ``train_items`` / ``val_items`` are dataset items (dicts as ``tnlib.data.loading.HeuristicDataset`` yields); by default
    they are loaded from ``config.data_root``. ``on_step(step)`` is called after every completed step (notebooks
    use it for live plots; tests use it to interrupt); ``on_start(step)`` once before the first, with the step
    training starts from (0, or where a resumed run stopped), after the data and the run folder are ready (the
    command line prints its cost estimate there, after any error in the settings). With ``resume`` (the default) a run folder holding a
    ``last.pt`` of the same configuration continues from it; otherwise the folder is started afresh.

    Training holds the run's lock (:attr:`RunDir.lock_file`, the one a sweep's cell holds): a second process
    training the same run into the same folder waits for the first, then resumes the run it left -- trained to its
    steps, it trains none again, and no step is recorded twice. ``lock`` False: the caller holds it (a sweep's
    cell, through testing and planning too).
    """
    config.validate()
    run_dir = Path(config.out_dir) / config.name
    device = default_device(config.device)

    # -- data -------------------------------------------------------------------------------------------------
    encoder = make_encoder(config.model, config.domain)
    if train_items is None:
        train_items = load_items(config, config.train_split, config.instances)
    val_split_pairs = None
    if val_items is None:
        val_items, val_split_pairs = load_validation_items(config)
    if not train_items or not val_items:
        raise ValueError(f"empty data: {len(train_items)} training and {len(val_items)} validation items")
    encoder.fit(train_items)  # on the training items alone (WL's colours; a no-op for the paper's models)
    train_data = encode_all(encoder, train_items)
    val_data = encode_all(encoder, val_items)

    # -- model, head, optimizer, sampler ------------------------------------------------------------------------
    torch.manual_seed(config.seed)
    model_kwargs = model_constructor_arguments(config, encoder)
    model = build_model(config.model, **model_kwargs).to(device)
    head = DistributionHead(config.head)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.decay)
    sampler = torch.Generator().manual_seed(config.seed)

    # The run folder only now: a configuration that fails above (an unknown domain, missing data, a bad model
    # argument) leaves no empty folder behind.
    run_dir.mkdir(parents=True, exist_ok=True)
    run = RunDir(run_dir)
    parts = _Training(config, device, encoder, model_kwargs, model, head, optimizer, sampler, train_data, val_data,
                      data_used(config, train_items, val_items, val_split_pairs))
    if not lock:
        return _train_run(run, parts, resume, on_start, on_step)
    with locked(run.lock_file, waiting=f"{config.name}: another process is working on this run; waiting for it "
                                       "to finish"):
        return _train_run(run, parts, resume, on_start, on_step)


@dataclass
class _Training:
    """What :func:`train` sets up before it takes the run's lock: the settings, the model and its training state,
    the encoded data, and the record of the data used (``data.json``)."""

    config: TrainConfig
    device: torch.device
    encoder: Encoder
    model_kwargs: dict
    model: nn.Module
    head: DistributionHead
    optimizer: torch.optim.Optimizer
    sampler: torch.Generator
    train_data: list
    val_data: list
    data_used: dict


def _train_run(run: RunDir, parts: _Training, resume: bool, on_start: Callable[[int], None] | None,
               on_step: Callable[[int], None] | None) -> Path:
    """:func:`train`'s loop in ``run``, from step 0 or the run's resume checkpoint, under the run's lock."""
    config, device, encoder, model_kwargs = parts.config, parts.device, parts.encoder, parts.model_kwargs
    model, head, optimizer, sampler = parts.model, parts.head, parts.optimizer, parts.sampler
    train_data, val_data, run_dir = parts.train_data, parts.val_data, run.path
    step, best_val_mse, best_val_nll, loss_sum, loss_count, elapsed_before = 0, math.inf, math.inf, 0.0, 0, 0.0

    last_path, best_path, curves_path, best_nll_path = run.last, run.best, run.training_curves_file, run.best_nll
    checkpoint = read_resume_checkpoint(run) if resume else None
    if checkpoint is None and resume and run.pruned_file.is_file():
        return _finished_pruned_run(run, config, model_kwargs)
    if checkpoint is not None:
        _check_same_configuration(run_dir, checkpoint, config, model_kwargs)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        sampler.set_state(checkpoint["sampler_state"])
        step, best_val_mse, best_val_nll = checkpoint["step"], checkpoint["best_val_mse"], checkpoint["best_val_nll"]
        loss_sum, loss_count = checkpoint["loss_sum"], checkpoint["loss_count"]
        elapsed_before = checkpoint["elapsed"]
        # curve lines written after the checkpoint will be written again
        # (a line cut short by a crash or a full disk is dropped with them: read_jsonl skips it)
        kept = [record for record in read_jsonl(curves_path) if record["step"] <= step]
        _report_lost_curve_records(curves_path, kept, step, config)
        atomic_write_text(curves_path, "".join(json.dumps(record) + "\n" for record in kept))
        # a start past the checkpoint trained weights that are gone: its machine made none of the ones kept
        starts = [record for record in run.training_starts() if record["step"] <= step]
        atomic_write_text(run.machines_file, "".join(json.dumps(record) + "\n" for record in starts))
    else:
        for stale in (last_path, run.last_previous, best_path, best_nll_path, curves_path,
                      run.path / run.CURVES_EXPORTED, run.machines_file, run.pruned_file):
            stale.unlink(missing_ok=True)
        curves_path.touch()
    trains = checkpoint is None or step < config.steps  # a pass over a trained run (a planner's) leaves its record be
    if trains or not _readable_config(run):
        atomic_write_json(run.config_file, config.to_dict(), indent=2)
    if trains or not run.data_file.is_file():
        atomic_write_json(run.data_file, parts.data_used)

    encoder_state = encoder.state()

    def checkpoint_state(**extra) -> dict:
        return {
            "format": CHECKPOINT_FORMAT, "config": config.to_dict(), "model_kwargs": model_kwargs,
            "model": model.state_dict(), "step": step, "best_val_mse": best_val_mse, "best_val_nll": best_val_nll,
            **({"encoder": encoder_state} if encoder_state is not None else {}), **extra,
        }

    # -- loop ---------------------------------------------------------------------------------------------------

    started = time.perf_counter() - elapsed_before
    if on_start is not None:
        on_start(step)
    if step < config.steps:  # float32 training repeats bit for bit on one kind of hardware only: say which
        append_jsonl(run.machines_file, {"step": step, "machine": machine_kind(device), "code": code_commit(),
                                         "processor": processor_signature()})
    # looked up at each call (not imported by name): notebooks and tests replace the display
    bar = tnlib.progress.progress(config.steps, config.name, unit="steps", initial=step, leave=False,
                                  disable=not config.progress or step >= config.steps)  # trained: nothing to show
    model.train()
    while step < config.steps:
        rows = torch.randint(len(train_data), (config.batch_size,), generator=sampler).tolist()
        batch: Batch = encoder.collate([train_data[i] for i in rows]).to(device)
        prediction = head(model(batch.inputs), batch.residual, batch.lower, batch.upper)
        loss = prediction.nll(batch.h_star).mean()
        if not torch.isfinite(loss):
            raise TrainingDiverged(_diverged_message("loss", loss.item(), step + 1, batch, last_path))
        optimizer_step(optimizer, model.parameters(), loss, config.grad_clip,
                       lambda norm: _check_grad_norm(norm, step + 1, batch, last_path))
        step += 1
        loss_sum += loss.item()
        loss_count += 1

        if step % config.eval_every == 0 or step == config.steps:
            metrics = validation_metrics(model, head, encoder, val_data, device, config.eval_batch_size)
            record = {"step": step, "train_loss": loss_sum / loss_count, **metrics,
                      "seconds": round(time.perf_counter() - started, 3)}
            # fsynced before the checkpoints below: a checkpoint on disk never outlives the record of its step
            append_jsonl(curves_path, record)
            loss_sum, loss_count = 0.0, 0
            if metrics["val_mse"] < best_val_mse:
                best_val_mse = metrics["val_mse"]
                save_checkpoint(checkpoint_state(**metrics), best_path)
            if metrics["val_nll"] < best_val_nll:
                best_val_nll = metrics["val_nll"]
                save_checkpoint(checkpoint_state(**metrics), best_nll_path)
            bar.set_postfix(loss=f"{record['train_loss']:.3g}", val_mse=f"{metrics['val_mse']:.3g}")
        bar.update(1)  # after the step's validation: a line printed for it (the last always is) shows its MSE
        if step % config.checkpoint_every == 0 or step == config.steps:
            save_resume_checkpoint(checkpoint_state(
                optimizer=optimizer.state_dict(), sampler_state=sampler.get_state(), loss_sum=loss_sum,
                loss_count=loss_count, elapsed=time.perf_counter() - started,
            ), run)
        if on_step is not None:
            on_step(step)
    bar.close()
    return run_dir


def _report_lost_curve_records(curves_path: Path, kept: list[dict], step: int, config: TrainConfig) -> None:
    """Say on stderr which validation records up to the resumed ``step`` are unreadable (damaged after they were
    written): the weights they measured are gone, so they stay lost."""
    lost = sorted(set(range(config.eval_every, step + 1, config.eval_every)) - {r["step"] for r in kept})
    if not lost:
        return
    remedy = ("training goes on without them; to restore them, delete the run folder and train it again (the "
              "same settings and seed train the same weights)")
    if step >= config.steps:  # nothing left to train here: the curve stays short of them
        remedy = ("the run is trained, so its curve stays without them; to restore them, delete the run "
                  "folder and train it again (the same settings and seed train the same weights)")
    print(damaged_message(curves_path, f"the validation records of steps {', '.join(map(str, lost))} are "
                                       "unreadable", remedy), file=sys.stderr)


def _check_grad_norm(grad_norm: torch.Tensor, step: int, batch: Batch, last_path: Path) -> None:
    if not torch.isfinite(grad_norm):
        raise TrainingDiverged(_diverged_message("gradient norm", grad_norm.item(), step, batch, last_path))


def _diverged_message(what: str, value: float, step: int, batch: Batch, last_path: Path) -> str:
    instances = sorted(set(batch.instances))
    shown = ", ".join(instances[:8]) + (f", ... ({len(instances)} instances)" if len(instances) > 8 else "")
    saved = f"the last checkpoint ({last_path}) is from before it" if last_path.is_file() else "no checkpoint was written"
    return (f"training stopped: non-finite {what} ({value}) at step {step} on the batch drawn for that step "
            f"({len(batch)} states from: {shown}); {saved}")
