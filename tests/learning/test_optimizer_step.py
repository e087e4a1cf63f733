"""The optimizer step the training loop and the classroom regressions share, against the same calls made by hand."""
from __future__ import annotations

import pytest
import torch

from tnlib.learning.optimizer_step import optimizer_step


def _model_and_loss(seed: int = 0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    x = torch.randn(16, 3, generator=torch.Generator().manual_seed(seed))
    return model, lambda: (model(x) * 10).square().mean()  # gradients far above the clip


@pytest.mark.parametrize("grad_clip", [None, 0.1])
def test_the_step_is_zero_backward_clip_and_step_as_by_hand(grad_clip):
    shared, loss_shared = _model_and_loss()
    by_hand, loss_by_hand = _model_and_loss()
    norms = []
    first = torch.optim.AdamW(shared.parameters(), lr=1e-2, weight_decay=1e-2)
    second = torch.optim.AdamW(by_hand.parameters(), lr=1e-2, weight_decay=1e-2)
    for _ in range(3):
        optimizer_step(first, shared.parameters(), loss_shared(), grad_clip, norms.append)
        second.zero_grad(set_to_none=True)
        loss_by_hand().backward()
        if grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(by_hand.parameters(), grad_clip)
        second.step()
    assert all(torch.equal(a, b) for a, b in zip(shared.parameters(), by_hand.parameters()))
    assert len(norms) == (3 if grad_clip is not None else 0) and all(float(n) > 0.1 for n in norms)


def test_a_check_that_raises_stops_the_step():
    model, loss = _model_and_loss()
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)

    def refuse(norm):
        raise ArithmeticError(float(norm))

    with pytest.raises(ArithmeticError):
        optimizer_step(optimizer, model.parameters(), loss(), 0.1, refuse)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
