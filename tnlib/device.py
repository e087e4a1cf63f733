"""Where tensors live: CUDA when present, CPU otherwise; and what kind of hardware that is."""
from __future__ import annotations

import contextlib
import os
import platform
from pathlib import Path

import torch


def default_device(prefer: str | None = None) -> torch.device:
    """The device tnlib trains and evaluates on.

    ``prefer`` may be ``"cpu"``, ``"cuda"`` or ``None`` (CUDA if available). Asking for CUDA on a machine
    without it is an error rather than a silent fall-back, so a GPU run never quietly runs on the CPU.
    """
    if prefer is None or prefer == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = check_device(prefer)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was requested but torch.cuda.is_available() is False")
    return device


# Where tnlib's models run: torch parses many more device types (xla, meta, ...), none of which tnlib supports.
DEVICE_TYPES = ("cpu", "cuda", "mps")


def check_device(name: str | torch.device) -> torch.device:
    """``name`` as a torch device, or a ValueError naming the ``device`` setting: a device type tnlib runs on
    (:data:`DEVICE_TYPES`, with an index as in ``cuda:1``). Whether the machine has it is checked where it is used
    (:func:`default_device`): a configuration may be written on one machine and run on another."""
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError, ValueError):
        device = None
    if device is None or device.type not in DEVICE_TYPES:
        raise ValueError(f"device must be one of {', '.join(DEVICE_TYPES)} (or cuda:N; None: CUDA when present), "
                         f"got {str(name)!r}")
    return device


def device_for_reading(trained_on: str | None) -> torch.device:
    """Where a saved model is read when no device is asked for: the device it trained on where this machine has
    it, the CPU otherwise. A checkpoint records its training's device setting, which is no requirement on the
    machine that evaluates or plans with it later (a run trained on a lent GPU is planned on a CPU-only one)."""
    if trained_on in (None, "auto"):
        return default_device(None)
    device = check_device(trained_on)
    available = {"cuda": torch.cuda.is_available, "mps": torch.backends.mps.is_available}.get(device.type)
    return device if available is None or available() else torch.device("cpu")


def machine_kind(device: str | torch.device | None = None) -> str:
    """The kind of hardware that computes on ``device`` (default: the CPU), as reports and run folders name it.

    A CPU is its model name and the vector instructions torch's kernels use on it (``AMD EPYC, AVX512``), and the
    OpenBLAS kernels where the environment forces them (``AMD EPYC, AVX512, OpenBLAS Haswell``, see
    :func:`forced_blas_kernels`); a CUDA device its name and CUDA version. float32 training rounds differently on
    another kind -- AVX-512 against AVX2 kernels, a GPU against a CPU -- so exact figures repeat on their own kind
    only, and a run trained on two kinds is the product of that sequence of machines."""
    device = torch.device("cpu" if device is None else device)
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)}, CUDA {torch.version.cuda}"
    name = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    kind = f"{name}, {torch.backends.cpu.get_cpu_capability()}"
    forced = forced_blas_kernels()
    return f"{kind}, {forced}" if forced else kind


def forced_blas_kernels() -> str | None:
    """The OpenBLAS kernels the environment forces (``OPENBLAS_CORETYPE``, ``OPENBLAS_L2_SIZE``), as the BLAS
    that NLM's numba kernels call reports them (``OpenBLAS Haswell``, ``OpenBLAS Haswell, L2 512``); None where
    OpenBLAS picks its kernels from the CPU, which the rest of the kind already names. Some machines set these
    variables to keep older OpenBLAS builds off kernels that fail on their processor; the AVX2 kernels they force
    on an AVX-512 CPU round NLM's training differently from the ones OpenBLAS picks there itself."""
    coretype, l2_size = os.environ.get("OPENBLAS_CORETYPE"), os.environ.get("OPENBLAS_L2_SIZE")
    if not coretype and not l2_size:
        return None
    import scipy.linalg.cython_blas  # noqa: F401 - loads the BLAS numba's np.dot calls, so threadpoolctl sees it
    from threadpoolctl import threadpool_info

    found = {info.get("architecture") for info in threadpool_info() if info.get("internal_api") == "openblas"}
    kernels = "/".join(sorted(a for a in found if a)) or coretype or "default"
    return f"OpenBLAS {kernels}" + (f", L2 {l2_size}" if l2_size else "")


def processor_signature() -> str:
    """What a CPU's kind leaves unsaid that still moves NLM's rounding: the processor's family, model and stepping
    numbers, and the kernels OpenBLAS picked on it (``family 6 model 143 stepping 8, OpenBLAS SapphireRapids``).

    A virtual machine's generic name (``Intel(R) Xeon(R) Processor``) covers several generations of processor,
    on which OpenBLAS picks different kernels for the products NLM's numba kernels ask of it: two machines of one
    kind trained blocksworld's first 300 steps to different curves. Kept out of :func:`machine_kind`, which names
    the kinds run folders and reports already record; the rerun checks record it beside a kind."""
    numbers = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("cpu family", "model", "stepping") and key not in numbers:
                numbers[key] = value.strip()
            if not line.strip() and numbers:
                break  # the first processor's block is enough: the machine's cores are one model
    import scipy.linalg.cython_blas  # noqa: F401 - loads the BLAS numba's np.dot calls, so threadpoolctl sees it
    from threadpoolctl import threadpool_info

    found = sorted({info.get("architecture") or "default" for info in threadpool_info()
                    if info.get("internal_api") == "openblas"})
    cpu = (f"family {numbers.get('cpu family', '?')} model {numbers.get('model', '?')} "
           f"stepping {numbers.get('stepping', '?')}") if numbers else platform.machine()
    return f"{cpu}, OpenBLAS {'/'.join(found) or 'absent'}"
