"""Where torch runs: one choice for every trainer and encoder, and what a results file records about it.

    device()            # $TOOLKIT_DEVICE if set (cpu, cuda, cuda:1, mps), else "cuda" when torch sees a GPU, else "cpu"
    mixed_precision()   # the autocast dtype a trainer uses on that device: bf16 (fp16 on GPUs without bf16) on cuda,
                        # None (full fp32) on cpu -- the papers trained on GPUs; fp32 is what every CPU number here used
    describe()          # {"device", "torch", "cuda", "gpu"}: recorded in every results/<nb>/<profile>.json
"""
from __future__ import annotations

import contextlib
import os

ENV = "TOOLKIT_DEVICE"


def device(override: str | None = None) -> str:
    """``override``, else ``$TOOLKIT_DEVICE``, else ``"cuda"`` when ``torch.cuda.is_available()``, else ``"cpu"``."""
    choice = override or os.environ.get(ENV)
    if choice:
        if not (choice in ("cpu", "cuda", "mps") or choice.startswith("cuda:")):
            raise ValueError(f"{ENV if not override else 'device'} must be cpu, cuda, cuda:<n> or mps, got {choice!r}")
        if choice.startswith("cuda"):
            import torch
            if not torch.cuda.is_available():
                raise ValueError(f"device {choice!r} was asked for ({ENV if not override else 'device'}), but torch "
                                 f"sees no GPU (torch {torch.__version__}, built for CUDA {torch.version.cuda}); "
                                 "install a CUDA build of torch (see README) or use cpu")
        return choice
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


def mixed_precision(dev: str | None = None):
    """The autocast dtype for training on ``dev`` (default :func:`device`): bfloat16 on a GPU that has it, float16 on
    an older one, None on the CPU (fp32)."""
    import torch
    dev = dev or device()
    if not dev.startswith("cuda"):
        return None
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


def autocast(dev: str | None = None):
    """``torch.autocast`` at :func:`mixed_precision`'s dtype on a GPU; a no-op context on the CPU."""
    import torch
    dev = dev or device()
    dtype = mixed_precision(dev)
    return torch.autocast("cuda", dtype=dtype) if dtype is not None else contextlib.nullcontext()


def describe() -> dict:
    """The device this process trains and encodes on, with the torch and CUDA versions (None without CUDA)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a requirement
        return {"device": "cpu", "torch": None, "cuda": None, "gpu": None}
    try:
        dev = device()
    except ValueError as e:
        dev = f"invalid ({e})"
    gpu = torch.cuda.get_device_name(0) if dev.startswith("cuda") else None
    return {"device": dev, "torch": torch.__version__, "cuda": torch.version.cuda, "gpu": gpu,
            "mixed_precision": str(mixed_precision(dev)).removeprefix("torch.") if dev.startswith("cuda") else None}
