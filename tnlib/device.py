"""Where tensors live: CUDA when present, CPU otherwise."""
from __future__ import annotations

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
