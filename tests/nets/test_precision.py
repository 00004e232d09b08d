"""The run setting ``precision``: inner layers multiply in bfloat16 while learners update,
output layers and everything outside the updates stay float32."""

import threading

import numpy as np
import pytest
import torch

from relayrl.algos import ALGORITHMS
from relayrl.experiment import build_config, build_run
from relayrl.nets.pixels import InnerConv2d, NatureTorso
from relayrl.nets.precision import inner_products
from relayrl.nets.stacked import StackedConv2d, StackedLinear
from tiny_runs import small_sections


def _rounded(*tensors: torch.Tensor) -> list[torch.Tensor]:
    return [t.to(torch.bfloat16).double() for t in tensors]


def test_an_inner_layer_multiplies_bfloat16_roundings_and_an_output_layer_stays_float32():
    """Within the block an inner layer returns bfloat16 (the next inner layer reads it as is);
    a layer that is not inner computes in float32, from float32 or bfloat16 inputs."""
    torch.manual_seed(0)
    x = torch.randn(3, 64, 40)
    inner, output = StackedLinear(3, 40, 24, inner=True), StackedLinear(3, 40, 24)
    output.load_state_dict(inner.state_dict())
    exact = torch.baddbmm(inner.bias, x, inner.weight)
    bias, xs, weight = _rounded(inner.bias, x, inner.weight)
    reference = torch.baddbmm(bias, xs, weight)  # the rounded inputs' product, in float64
    with inner_products("bfloat16"):
        low, high, after = inner(x), output(x), output(x.to(torch.bfloat16))
    assert low.dtype == torch.bfloat16 and high.dtype == after.dtype == torch.float32
    assert torch.equal(high, exact) and torch.equal(inner(x), exact)  # outside the block: float32
    assert torch.equal(after, torch.baddbmm(inner.bias, x.to(torch.bfloat16).float(), inner.weight))
    assert not torch.equal(low.float(), exact)
    # the product of the rounded inputs, rounded once more to bfloat16 on its way out
    assert torch.allclose(low.double(), reference, rtol=2**-7, atol=1e-6)
    assert (low.double() - reference).abs().max() < (exact.double() - reference).abs().max() * 2 + 1e-2
    with inner_products("float32"):
        assert torch.equal(inner(x), exact)


def test_convolutions_of_both_torsos_multiply_in_bfloat16_within_the_block():
    torch.manual_seed(1)
    stacked = StackedConv2d(2, 3, 8, 2)
    x = torch.randn(5, 6, 9, 9).contiguous(memory_format=torch.channels_last)
    nature = InnerConv2d(6, 16, 3, 2, groups=2)
    for layer in (stacked, nature):
        exact = layer(x)
        with inner_products("bfloat16"):
            low = layer(x)
        assert low.dtype == torch.bfloat16 and low.shape == exact.shape
        assert not torch.equal(low.float(), exact)
        assert torch.allclose(low.float(), exact, rtol=0.05, atol=0.05)
        low.float().sum().backward()  # gradients reach the float32 weights
        assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in layer.parameters())


def test_the_screen_torso_hands_float32_features_to_what_reads_them():
    torch.manual_seed(2)
    torso = NatureTorso(2, (36, 36, 4), pixels=False)
    screens = torch.rand(2, 3, 36, 36, 4)
    exact = torso(screens)
    with inner_products("bfloat16"):
        low = torso(screens)
    assert exact.dtype == low.dtype == torch.float32 and low.shape == exact.shape == (2, 3, 512)
    assert not torch.equal(low, exact) and torch.allclose(low, exact, rtol=0.05, atol=0.05)


def test_the_setting_holds_in_the_thread_that_entered_it():
    layer = StackedLinear(1, 8, 8, inner=True)
    x = torch.randn(1, 4, 8)
    exact = layer(x)
    seen: list[torch.Tensor] = []
    with inner_products("bfloat16"):
        thread = threading.Thread(target=lambda: seen.append(layer(x)))
        thread.start()
        thread.join()
        assert layer(x).dtype == torch.bfloat16
    assert torch.equal(seen[0], exact)


def _corridor(precision: str | None) -> dict:
    config = {
        "preset": "corridor-masac", "total_steps": 3000, "report_interval": 500, "eval": {"interval": 3000, "episodes": 8},
        "env": {"name": "corridor", "settings": {"n_agents": 2, "length": 4, "max_steps": 12}, "num_envs": 4},
        "centralised": {"algo": "masac", "random_steps": 500, "hidden": [32, 32], "batch_size": 64, "buffer_size": 5000, "fragment_length": 4,
                        "updates_per_fragment": 1, "actor_lr": 3e-3, "critic_lr": 3e-3, "initial_alpha": 0.2, "target_entropy_scale": 0.5},
    }
    return config if precision is None else {**config, "precision": precision}


def test_a_bfloat16_run_learns_keeps_float32_weights_and_is_another_run():
    """MASAC in corridors of 4 cells (as tests/algos/test_centralised.py): with bfloat16
    products it still learns to reach the end greedily, its numbers differ from float32's,
    its weights stay float32, and its config hash differs only because it sets precision."""
    runs = {}
    for precision in ("float32", "bfloat16"):
        run = build_run(build_config(_corridor(precision)), None, verbose=False)
        run.train()
        run.close()
        runs[precision] = run
    assert runs["bfloat16"].reporter.history[-1]["eval_reward_mean"] == 2.0
    losses = {p: [row["td_loss"] for row in run.reporter.history if np.isfinite(row["td_loss"])] for p, run in runs.items()}
    assert losses["float32"] and losses["float32"] != losses["bfloat16"]
    learner = runs["bfloat16"].learners["runner"]
    assert all(p.dtype == torch.float32 for p in learner.algorithm.actor.parameters())
    assert build_config(_corridor("float32")).config_hash() == build_config(_corridor(None)).config_hash()
    assert build_config(_corridor("bfloat16")).config_hash() != build_config(_corridor(None)).config_hash()


def test_an_unknown_precision_is_refused_with_the_choices():
    with pytest.raises(Exception, match="float32.*bfloat16"):
        build_config(_corridor("float16"))


SWEEP = {  # every learner kind, with its recurrent or convolutional variants
    **{algo: {} for algo in ("dqn", "qmix", "sac", "td3", "ddpg", "ppo", "mappo", "a2c", "maddpg", "matd3", "masac")},
    "seac": {"sharing": {"select": "all"}, "on_policy": {"param_sharing": False}},
    "ppo-recurrent": {"on_policy": {"recurrent": True, "chunk_length": 4}},
}


@pytest.mark.parametrize("case", list(SWEEP))
def test_every_learner_kind_trains_with_bfloat16_products_and_its_numbers_change(case):
    """On 8-bit screens (convolutions for DQN), each learner updates with finite losses, and
    its metrics differ from the same run's in float32 (the setting reached its networks)."""
    algo = case.split("-")[0]
    extra = SWEEP[case]
    sections = small_sections(algo)
    for name, values in extra.items():
        if name in sections:
            sections[name] = {**sections[name], **values}
    actions = "discrete" if "discrete" in ALGORITHMS[algo].capabilities.actions else "box"
    env = {"name": "testenvs.screens", "settings": {"actions": actions}, "num_envs": 2}
    rows = {}
    for precision in ("float32", "bfloat16"):
        config = {"preset": f"bf16-{case}", "total_steps": 240, "report_interval": 80, "checkpoint_interval": 10**6, "eval": {"interval": 0},
                  "env": env, **sections, **({"sharing": extra["sharing"]} if "sharing" in extra else {}), "precision": precision}
        run = build_run(build_config(config), None, verbose=False)
        try:
            rows[precision] = run.train()
        finally:
            run.close()
    low, high = rows["bfloat16"][-1], rows["float32"][-1]
    assert low["updates"] == high["updates"] > 0
    losses = [k for k in ("td_loss", "policy_loss", "value_loss", "actor_loss") if k in low and np.isfinite(high[k])]
    assert losses and all(np.isfinite(low[k]) for k in losses)
    assert any(low[k] != high[k] for k in losses), {k: (low[k], high[k]) for k in losses}
