"""One optimizer step on a loss, shared by the training loop (:func:`tnlib.learning.training.train`) and the
classroom notebook's full-batch regressions (:mod:`tnlib.notebook.synthetic_regression`); its own module, so that
the notebook does not load the training stage's data and models to take it."""
from __future__ import annotations

from typing import Callable, Iterable

import torch
from torch import nn


def optimizer_step(optimizer: torch.optim.Optimizer, parameters: Iterable[torch.Tensor], loss: torch.Tensor,
                   grad_clip: float | None = None,
                   check_grad_norm: Callable[[torch.Tensor], None] | None = None) -> None:
    """One step on ``loss``: the gradients cleared and computed, their norm clipped to ``grad_clip`` (None: not
    clipped) and handed to ``check_grad_norm`` (which stops the step by raising), then the optimizer's step."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip is not None:
        grad_norm = nn.utils.clip_grad_norm_(parameters, grad_clip)
        if check_grad_norm is not None:
            check_grad_norm(grad_norm)
    optimizer.step()
