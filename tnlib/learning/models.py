"""The paper's three models and WL's by name: the registry that builds them and their encoders, linear regression
and WL's linear map.

Each maps a batch of encoded inputs (:mod:`tnlib.learning.encodings`) to ``raw [B, 2]``: an unconstrained output for mu
and one for sigma, which :class:`tnlib.learning.heads.DistributionHead` turns into a distribution. The Neural Logic
Machine is :mod:`tnlib.learning.nlm`, STRIPS-HGN :mod:`tnlib.learning.strips_hgn`; linear regression,
``nn.Linear(4, 2)`` on the four features, is here, and so is the linear map on WL features (a fourth family, not
in the paper: WL-GOOSE's learner).
"""
from __future__ import annotations

import inspect

import torch
from torch import nn

from tnlib.learning.encodings import Encoder, HGNEncoder, LinearEncoder, NLMEncoder
from tnlib.learning.nlm import NLM
from tnlib.learning.strips_hgn import STRIPSHGN
from tnlib.learning.wl_features import WLEncoder
from tnlib.paper import LEARNING_RATES, WEIGHT_DECAY


class LinearRegression(nn.Module):
    """``raw = W x + b`` on the four features (goal count, h_FF, total and mean ignored deletes)."""

    def __init__(self, num_features: int = 4):
        super().__init__()
        self.linear = nn.Linear(num_features, 2)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.linear(features)


class WLLinear(LinearRegression):
    """``raw = W x + b`` on a state's WL colour counts, each scaled to [0, 1] by its training maximum
    (:mod:`tnlib.learning.wl_features`): WL-GOOSE's linear learner, with the paper's heads on top. Its feature
    count comes from the fitted encoder, so it has no default."""

    def __init__(self, num_features: int):
        super().__init__(num_features)


MODEL_CLASSES = {"nlm": NLM, "hgn": STRIPSHGN, "linear": LinearRegression, "wl": WLLinear}
# The paper's for its three models. WL (not in the paper): tnlib's choice, 1e-3 -- at 1e-2 ferry's validation MSE
# jumps between 1.5 and 3.3 over 3,000 steps, at 1e-3 it falls steadily to 0.63 (at 1e-4 to 1.17): thousands of
# weights on counts, against linear regression's four on features of similar size.
DEFAULT_LEARNING_RATES = {**LEARNING_RATES, "wl": 1e-3}
DEFAULT_WEIGHT_DECAY = {**WEIGHT_DECAY, "wl": WEIGHT_DECAY["linear"]}


def check_model_args(name: str, args, setting: str = "model_args") -> None:
    """A ValueError naming ``setting`` unless ``args`` is a mapping of arguments the model ``name``'s constructor
    takes, each of its default's type (``depth=3`` for an NLM). Arguments without a default (an NLM's input
    channels) come from the data, not from the user."""
    if name not in MODEL_CLASSES:
        raise ValueError(f"{setting}: unknown model {name!r} (choose from {', '.join(MODEL_CLASSES)})")
    if not isinstance(args, dict):
        raise ValueError(f"{setting}: {name}'s arguments must be a mapping such as {{\"depth\": 3}}, got {args!r}")
    cls = MODEL_CLASSES[name]
    settable = {key: parameter.default for key, parameter in inspect.signature(cls).parameters.items()
                if parameter.default is not inspect.Parameter.empty}
    for key, value in args.items():
        if key not in settable:
            raise ValueError(f"{setting}: {name} ({cls.__name__}) takes no argument {key!r} "
                             f"(it takes {', '.join(settable) or 'none'})")
        default = settable[key]
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        choices = getattr(cls, "ARG_CHOICES", {}).get(key)
        if choices is not None:
            if value not in choices:
                raise ValueError(f"{setting}: {name}'s {key} must be one of {', '.join(choices)} "
                                 f"(default {default!r}), got {value!r}")
            continue
        if isinstance(default, bool):
            ok, kind = isinstance(value, bool), "true or false"
        elif isinstance(default, int):
            ok, kind = number and isinstance(value, int), "a whole number"
        elif isinstance(default, float):
            ok, kind = number, "a number"
        else:
            ok, kind = True, ""
        if not ok:
            raise ValueError(f"{setting}: {name}'s {key} must be {kind} (default {default!r}), got {value!r}")


def model_arguments(name: str, given: dict) -> dict:
    """Every constructor argument of model ``name`` that has a default, at its default, updated with ``given``:
    what a checkpoint records, so that a later change of a default does not change the model it rebuilds."""
    defaults = {key: parameter.default for key, parameter in inspect.signature(MODEL_CLASSES[name]).parameters.items()
                if parameter.default is not inspect.Parameter.empty}
    return {**defaults, **given}


def recorded_model_arguments(name: str, recorded: dict) -> dict:
    """The constructor arguments of the model a checkpoint holds, from the ones it ``recorded``: an argument it
    does not record takes the value such a checkpoint's model was built with (the class's ``RECORDED_BEFORE``:
    STRIPS-HGN's "means" layout, not its default), any other its default."""
    return model_arguments(name, {**getattr(MODEL_CLASSES[name], "RECORDED_BEFORE", {}), **recorded})


def build_model(name: str, **kwargs) -> nn.Module:
    """A model by name (``nlm``, ``hgn``, ``linear``, ``wl``) with its constructor arguments."""
    try:
        cls = MODEL_CLASSES[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r} (choose from {', '.join(MODEL_CLASSES)})") from None
    return cls(**kwargs)


ENCODERS = {"nlm": NLMEncoder, "hgn": HGNEncoder, "linear": LinearEncoder, "wl": WLEncoder}


def make_encoder(model: str, domain: str) -> Encoder:
    """The encoder for a model name (``nlm``, ``hgn``, ``linear``, ``wl``) on a domain key or domain file."""
    try:
        cls = ENCODERS[model]
    except KeyError:
        raise ValueError(f"unknown model {model!r} (choose from {', '.join(ENCODERS)})") from None
    return cls(domain)
