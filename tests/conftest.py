"""Shared test set-up: one thread per test module, and the folder each module's problem corpus is written to
(the problem files themselves come from planning_corpus.py, built deterministically and cached by folder)."""
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


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> str:
    """A folder for the module's generated problem files (``planning_corpus.instance(corpus, domain, ...)``)."""
    return str(tmp_path_factory.mktemp("corpus"))
