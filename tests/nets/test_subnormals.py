"""Optimiser steps treat subnormal floats as zero (``relayrl.nets.subnormals``), which makes
Adam's step on moments that decayed into the subnormal range about ten times faster; the
weights it gives are the same to the bit. Everything else keeps IEEE arithmetic."""

from collections.abc import Callable

import torch

from relayrl.experiment import build_config, build_run
from relayrl.nets.stacked import StackedLinear
from relayrl.nets.subnormals import flushed_subnormals, optimizer_step
from tiny_runs import small_sections

SUBNORMAL = 1e-39  # float32's smallest normal number is 1.18e-38


def _train(step: Callable[[torch.optim.Optimizer], None]) -> tuple[list[torch.Tensor], int]:
    """100 fused-Adam steps of a stacked two-layer net (4 sets) whose inputs' second half is
    always zero, as Battle's never-lit image features are: those weights get zero
    gradients, and their moments start subnormal. Returns the weights and how many of the
    first layer's first moments are subnormal at the end."""
    generator = torch.Generator().manual_seed(0)
    layers = [StackedLinear(4, 16, 32, inner=True), StackedLinear(4, 32, 1)]
    with torch.no_grad():
        for layer in layers:
            for p in layer.parameters():
                p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
    params = [p for layer in layers for p in layer.parameters()]
    optimizer = torch.optim.Adam(params, lr=1e-3, fused=True)
    first = layers[0].weight
    moment = torch.zeros_like(first)
    moment[:, 8:] = SUBNORMAL
    optimizer.state[first] = {"step": torch.tensor(1000.0), "exp_avg": moment, "exp_avg_sq": moment / 10}
    for _ in range(100):
        x = torch.randn(4, 64, 16, generator=generator)
        x[..., 8:] = 0
        loss = (layers[1](layers[0](x).relu()) - x[..., :1]).square().mean()
        optimizer.zero_grad()
        loss.backward()
        step(optimizer)
    # counted here: under the flush a subnormal compares as zero
    tiny = torch.finfo(torch.float32).tiny
    moment = optimizer.state[first]["exp_avg"]
    return [p.detach().clone() for p in params], int(((moment != 0) & (moment.abs() < tiny)).sum())


def test_adam_on_subnormal_moments_gives_the_same_weights_with_the_flush():
    kept, subnormal = _train(lambda optimizer: optimizer.step())
    flushed, left = _train(optimizer_step)
    assert subnormal == 4 * 8 * 32  # the case is exercised: the dead weights' moments stay subnormal
    assert left == 0  # and the flushed steps zeroed them
    for a, b in zip(kept, flushed):
        assert torch.equal(a, b)


def _is_zero(value: float) -> bool:
    return (torch.tensor([value]) * 1.0).item() == 0


def test_the_flush_holds_inside_the_block_only_and_a_run_leaves_it_off():
    assert not _is_zero(SUBNORMAL)
    with flushed_subnormals():
        assert _is_zero(SUBNORMAL)
    assert not _is_zero(SUBNORMAL)
    config = build_config({"preset": "subnormals", "env": {"name": "corridor"}, "total_steps": 300, "eval": {"interval": 0}, **small_sections("dqn")})
    run = build_run(config, None, verbose=False)
    run.train()
    assert run.updates > 0 and not _is_zero(SUBNORMAL)  # it learned, and acting and the env after it keep IEEE
    run.close()
