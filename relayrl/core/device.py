"""Torch device and thread settings."""

import torch


def resolve_device(name: str) -> torch.device:
    """``auto`` picks CUDA when present, else CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def configure_threads(num_threads: int) -> None:
    """On small CPUs one intra-op thread is much faster for the learner's small ops."""
    if num_threads > 0 and torch.get_num_threads() != num_threads:
        torch.set_num_threads(num_threads)
