"""Shared test set-up: one thread per test module, torch's global generator seeded before each test, the CPU as
the default device outside tests/learning/test_cuda.py, and the folder each module's problem corpus is written to (the
problem files themselves come from planning_corpus.py, built deterministically and cached by folder)."""
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


@pytest.fixture(autouse=True)
def seeded_torch():
    """A test that builds a model or draws a tensor without a seed of its own gets the same numbers whichever tests
    ran before it in its process (pytest -n 2 deals tests to processes in no fixed order): its tolerances were
    checked on those numbers, not on whatever the generator's state happened to be."""
    torch.manual_seed(0)


@pytest.fixture(autouse=True, scope="module")
def cpu_unless_the_test_is_about_cuda(request):
    """tnlib runs on CUDA when present; the suite checks the CPU's numbers against references (and compares CPU
    tensors with what a checkpoint loads), so on a GPU machine it still runs on the CPU, module-scoped fixtures
    (runs trained once per module) included. tests/learning/test_cuda.py, which compares the two, sees the GPU."""
    if request.module.__name__ == "test_cuda":
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.cuda, "is_available", lambda: False)
        yield


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> str:
    """A folder for the module's generated problem files (``planning_corpus.instance(corpus, domain, ...)``)."""
    return str(tmp_path_factory.mktemp("corpus"))
