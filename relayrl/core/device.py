"""Torch device and thread settings."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a config's device is checked without importing torch where it names no GPU
    import torch


def check_device(name: str) -> None:
    """Fails with the fix unless ``name`` is ``auto`` or a device this torch can use."""
    if name in ("auto", "cpu"):
        return
    import torch

    try:
        device = torch.device(name)
    except RuntimeError:
        raise ValueError(f"{name!r} is not a torch device: use auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            build = f"torch {torch.__version__}" + ("" if torch.version.cuda else ", a build without CUDA")
            raise ValueError(f"no CUDA device is available ({build}): use device=auto or device=cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"{name}: this machine has {torch.cuda.device_count()} CUDA device(s), numbered from 0")
    elif device.type != "cpu":
        raise ValueError(f"device {name!r} is not supported: use auto, cpu, cuda or cuda:N")


def resolve_device(name: str) -> "torch.device":
    """``auto`` picks CUDA when present, else CPU."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def configure_threads(num_threads: int) -> None:
    """On small CPUs one intra-op thread is much faster for the learner's small ops."""
    import torch

    if num_threads > 0 and torch.get_num_threads() != num_threads:
        torch.set_num_threads(num_threads)


def bfloat16_native(device: "torch.device") -> bool | None:
    """Whether ``device`` multiplies bfloat16 in hardware: a GPU of compute capability 8.0
    or more, a CPU with AVX512-BF16 or AMX (Linux's ``/proc/cpuinfo`` flags); None where
    this cannot be read."""
    import torch

    if device.type == "cuda":
        return torch.cuda.is_bf16_supported(including_emulation=False)
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            flags = next((line.split(":", 1)[1].split() for line in cpuinfo if line.startswith("flags")), None)
    except OSError:
        return None
    return None if flags is None else bool({"avx512_bf16", "amx_bf16"} & set(flags))
