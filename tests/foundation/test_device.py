"""The kind of machine a run records (tnlib.device.machine_kind) names what decides its rounding: the CPU, torch's
vector kernels, and OpenBLAS's kernels where the environment forces them; the processor's signature what that name
leaves unsaid."""
from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tnlib.device import forced_blas_kernels, machine_kind, processor_signature


def test_a_cpu_whose_blas_picks_its_own_kernels_is_named_by_model_and_vector_kernels(monkeypatch):
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    monkeypatch.delenv("OPENBLAS_L2_SIZE", raising=False)
    assert forced_blas_kernels() is None
    kind = machine_kind()
    assert kind.endswith(f", {torch.backends.cpu.get_cpu_capability()}") and "OpenBLAS" not in kind


def test_forced_openblas_kernels_are_part_of_the_kind(monkeypatch):
    import scipy.linalg.cython_blas  # noqa: F401 - the BLAS is loaded (its kernels chosen) before the variables change
    from threadpoolctl import threadpool_info

    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    monkeypatch.delenv("OPENBLAS_L2_SIZE", raising=False)
    free = machine_kind()
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setenv("OPENBLAS_L2_SIZE", "512")
    loaded = "/".join(sorted({i["architecture"] for i in threadpool_info() if i.get("internal_api") == "openblas"}))
    assert forced_blas_kernels() == f"OpenBLAS {loaded}, L2 512"
    assert machine_kind() == f"{free}, OpenBLAS {loaded}, L2 512"
    monkeypatch.delenv("OPENBLAS_L2_SIZE")
    assert machine_kind() == f"{free}, OpenBLAS {loaded}"


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="OpenBLAS's Haswell kernels are x86's")
def test_the_kind_names_the_kernels_openblas_was_forced_to_in_a_fresh_process():
    script = "from tnlib.device import machine_kind; print(machine_kind())"
    forced = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                            env={"PATH": "", "OPENBLAS_CORETYPE": "Haswell"}).stdout.strip()
    free = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          env={"PATH": ""}).stdout.strip()
    assert forced == f"{free}, OpenBLAS Haswell"


def test_the_processor_signature_names_the_processor_and_openblas_kernels():
    from threadpoolctl import threadpool_info

    signature = processor_signature()
    kernels = {info.get("architecture") for info in threadpool_info() if info.get("internal_api") == "openblas"}
    assert kernels and signature.endswith("OpenBLAS " + "/".join(sorted(kernels)))
    family = [line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("cpu family")]
    if family:
        assert signature.startswith(f"family {family[0].split(':')[1].strip()} model ")
