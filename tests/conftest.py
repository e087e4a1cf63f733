"""Shared test set-up."""
from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tests use tiny tensors: OpenMP threads only add synchronisation, and under pytest -n 2 they oversubscribe
    the two cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
