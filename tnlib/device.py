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
    device = torch.device(prefer)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was requested but torch.cuda.is_available() is False")
    return device
