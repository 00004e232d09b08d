"""Runs treat subnormal floats as zero (``flush_subnormals``), which makes Adam's step on
moments that decayed into the subnormal range about ten times faster; the weights it
gives are the same to the bit."""

import torch

from relayrl.experiment import build_config, build_run
from relayrl.nets.stacked import StackedLinear

SUBNORMAL = 1e-39  # float32's smallest normal number is 1.18e-38


def _train(flush: bool) -> tuple[list[torch.Tensor], int]:
    """100 fused-Adam steps of a stacked two-layer net (4 sets) whose inputs' second half is
    always zero, as Battle's never-lit image features are: those weights get zero
    gradients, and their moments start subnormal. Returns the weights and how many of the
    first layer's first moments are subnormal at the end."""
    torch.set_flush_denormal(flush)
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
        optimizer.step()
    # counted here: under the flush a subnormal compares as zero
    tiny = torch.finfo(torch.float32).tiny
    moment = optimizer.state[first]["exp_avg"]
    return [p.detach().clone() for p in params], int(((moment != 0) & (moment.abs() < tiny)).sum())


def test_adam_on_subnormal_moments_gives_the_same_weights_with_the_flush():
    try:
        kept, subnormal = _train(flush=False)
        flushed, _ = _train(flush=True)
    finally:
        torch.set_flush_denormal(True)
    assert subnormal == 4 * 8 * 32  # the case is exercised: the dead weights' moments stay subnormal
    for a, b in zip(kept, flushed):
        assert torch.equal(a, b)


def test_a_run_flushes_subnormals():
    torch.set_flush_denormal(False)
    assert (torch.tensor([SUBNORMAL]) * 1.0).item() != 0
    config = build_config({"preset": "subnormals", "env": {"name": "corridor"}, "total_steps": 100, "eval": {"interval": 0}})
    build_run(config, None, verbose=False).close()
    assert (torch.tensor([SUBNORMAL]) * 1.0).item() == 0
