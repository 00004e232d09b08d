"""The C++ loops of ``GRUSequence`` (``relayrl.nets.native``) give the Python loops' values
to the last bit; ``FusedOrderGRU`` gives torch's own GRU's values and gradients to the last
bit, and QMIX trains to the same metrics on it; a machine that cannot build them runs the
Python loops (and torch's GRU)."""

import shutil

import pytest
import torch

from relayrl.core.errors import RelayRLWarning
from relayrl.experiment.build import build_run
from relayrl.experiment.config import build_config
from relayrl.experiment.overrides import apply_overrides
from relayrl.experiment.presets import preset_dict
from relayrl.nets import native
from relayrl.nets.gru import GRUSequence, StackedGRUCell, fused_unroll

needs_compiler = pytest.mark.skipif(shutil.which("c++") is None and shutil.which("g++") is None, reason="no C++ compiler")


def _forward_backward(steps: int, n_sets: int, rows: int, hidden: int, reset: float) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(steps * 1000 + hidden)
    projected = torch.randn(steps, n_sets, rows, 3 * hidden, generator=generator, requires_grad=True)
    h = torch.randn(n_sets, rows, hidden, generator=generator, requires_grad=True)
    weight = (0.3 * torch.randn(n_sets, hidden, 3 * hidden, generator=generator)).requires_grad_()
    bias = torch.randn(n_sets, 1, 3 * hidden, generator=generator, requires_grad=True)
    keep = torch.rand(steps, n_sets, rows, 1, generator=generator) > reset if reset else None
    inputs = [t.detach().clone() for t in (projected, h, weight, bias)]
    states = GRUSequence.apply(projected, h, weight, bias, keep)
    (states * torch.randn(states.shape, generator=generator)).sum().backward()
    assert all(torch.equal(before, after) for before, after in zip(inputs, (projected, h, weight, bias))), "the inputs are read, never written"
    return [states.detach(), projected.grad, h.grad, weight.grad, bias.grad]


@needs_compiler
@pytest.mark.parametrize("shape", [(64, 1, 12, 128, 0.05), (26, 1, 96, 64, 0.0), (7, 3, 5, 50, 0.3), (1, 2, 1, 3, 0.0)])
def test_the_cpp_loops_give_the_python_loops_values_to_the_last_bit(shape, monkeypatch):
    assert native.gru_ops() is not None, "a compiler is present, so the C++ loops must build"
    cpp = _forward_backward(*shape)
    monkeypatch.setenv("RELAYRL_NATIVE", "0")
    python = _forward_backward(*shape)
    for ours, theirs in zip(cpp, python):
        assert torch.equal(ours, theirs)


@needs_compiler
def test_recurrent_mappo_trains_to_the_same_metrics_with_either_loops(monkeypatch):
    config = build_config({
        "preset": "spread-mappo-loops", "total_steps": 1024, "report_interval": 256, "eval": {"interval": 0},
        "env": {"name": "simple-spread", "num_envs": 4},
        "on_policy": {"algo": "mappo", "rollout_length": 64, "epochs": 2, "minibatches": 2, "hidden": [32], "activation": "tanh",
                      "recurrent": True, "chunk_length": 32, "critic_input": "state"},
    })

    def metrics() -> list[dict[str, float]]:
        run = build_run(config, None, verbose=False)
        run.train()
        run.close()
        return [{k: v for k, v in row.items() if k not in ("sps", "updates_per_s", "wall_s")} for row in run.reporter.history]

    cpp = metrics()
    monkeypatch.setenv("RELAYRL_NATIVE", "0")
    assert metrics() == cpp
    assert cpp[-1]["updates"] > 0


def _torch_gru_and_node(steps: int, rows: int, inputs: int, hidden: int, h_grad: bool, monkeypatch) -> list[list[torch.Tensor]]:
    """The outputs and every gradient (input, the cell's parameters, h0 where it needs one) of
    ``fused_unroll`` by torch's GRU (the C++ loops off) and by ``FusedOrderGRU``."""
    torch.manual_seed(steps * 1000 + rows)
    cell = StackedGRUCell(1, inputs, hidden)
    with torch.no_grad():
        for parameter in cell.parameters():
            parameter.normal_(0.0, 0.3)
    x = torch.randn(steps, rows, inputs, requires_grad=True)
    h = torch.randn(rows, hidden, requires_grad=True) if h_grad else torch.zeros(rows, hidden)
    weights = torch.randn(steps, rows, hidden)
    found = []
    for setting in ("0", "1"):
        monkeypatch.setenv("RELAYRL_NATIVE", setting)
        for t in (x, h, *cell.parameters()):
            t.grad = None
        out = fused_unroll(cell, x, h)
        assert (type(out.grad_fn).__name__ == "FusedOrderGRUBackward") == (setting == "1")
        (out * weights).sum().backward()
        found.append([out.detach(), x.grad, *(p.grad for p in cell.parameters()), *([h.grad] if h_grad else [])])
    return found


@needs_compiler
@pytest.mark.parametrize("shape", [(26, 96, 64, 64, False), (5, 3, 7, 5, True), (1, 1, 4, 3, True), (40, 17, 33, 128, False), (12, 8, 16, 16, True)])
def test_the_fused_order_node_gives_torchs_gru_values_and_gradients_to_the_last_bit(shape, monkeypatch):
    assert native.gru_ops() is not None, "a compiler is present, so the C++ loops must build"
    torchs, ours = _torch_gru_and_node(*shape, monkeypatch)
    for theirs, mine in zip(torchs, ours):
        assert torch.equal(theirs, mine)


@needs_compiler
def test_qmix_trains_to_the_same_metrics_on_torchs_gru_and_on_the_fused_order_node(monkeypatch):
    config = build_config(apply_overrides(preset_dict("spread-qmix-jaxmarl"), ["total_steps=1200", "report_interval=400", "eval.interval=0", "qmix.batch_size=8"]))

    def metrics() -> list[dict[str, float]]:
        run = build_run(config, None, verbose=False)
        run.train()
        run.close()
        # timings left out; NaN (no evaluation) written as text, so that equal rows compare equal
        return [{k: str(v) for k, v in row.items() if k not in ("sps", "updates_per_s", "wall_s", "sample_share")} for row in run.reporter.history]

    ours = metrics()
    monkeypatch.setenv("RELAYRL_NATIVE", "0")
    assert metrics() == ours
    assert int(ours[-1]["updates"]) > 0


def test_a_failed_build_warns_once_and_runs_the_python_loops(monkeypatch, tmp_path):
    monkeypatch.setattr(native, "_state", {})
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    monkeypatch.setenv("RELAYRL_CACHE", str(tmp_path))
    with pytest.warns(RelayRLWarning, match="could not be built"):
        assert native.gru_ops() is None
    assert native.gru_ops() is None  # decided once: no second attempt, no second warning
    states = _forward_backward(5, 1, 2, 4, 0.2)[0]
    assert states.shape == (5, 1, 2, 4)
