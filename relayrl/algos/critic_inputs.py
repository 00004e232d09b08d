"""What a policy-gradient critic reads (``on_policy.critic_input``): each agent's own
observation (with its index under parameter sharing), the env's global state, all agents'
observations side by side, or the state with the agent's own observation and index (the
agent-specific state of Yu et al. 2022)."""

from collections.abc import Callable

import numpy as np

from relayrl.core.errors import ConfigError
from relayrl.core.specs import STATE_SOURCE, GroupSpec
from relayrl.nets.observations import network_input_array


def flat_obs(obs: np.ndarray, spec: GroupSpec) -> np.ndarray:
    """``[..., N, *obs_shape]`` -> float32 ``[..., N, F]`` as the networks read them."""
    return network_input_array(obs.reshape(*obs.shape[: obs.ndim - len(spec.obs_shape)], -1), spec.pixels)


def _flat_state(state: np.ndarray | None, spec: GroupSpec, n: int) -> np.ndarray:
    """The env's state ``[..., *state_shape]`` as float32 ``[..., N, S]``, the same row for each agent."""
    if state is None:
        raise ConfigError(f"group {spec.name!r}: the env gives no global state for the critic ({STATE_SOURCE}): declare the env's state_space, or set on_policy.critic_input=joint_obs")
    flat = state.reshape(*state.shape[: state.ndim - len(spec.state_shape)], -1).astype(np.float32, copy=False)
    return np.broadcast_to(flat[..., None, :], (*flat.shape[:-1], n, flat.shape[-1]))


def _index(lead: tuple[int, ...], n: int) -> np.ndarray:
    """Each agent's one-hot index ``[..., N, N]``."""
    return np.broadcast_to(np.eye(n, dtype=np.float32), (*lead, n, n))


def _joint(own: np.ndarray, n: int) -> np.ndarray:
    """Every agent's observation side by side, the same row for each agent ``[..., N, N * F]``."""
    joint = own.reshape(*own.shape[:-2], 1, n * own.shape[-1])
    return np.broadcast_to(joint, (*own.shape[:-2], n, joint.shape[-1]))


# ``on_policy.critic_input`` -> the critic's features ``[..., N, F_c]`` from the group's
# flat observations ``[..., N, F]``, the env's state ``[..., *state_shape]`` (None where the
# env gives none) and whether the agents share one parameter set (they then see their index)
CRITIC_INPUTS: dict[str, Callable[[np.ndarray, np.ndarray | None, GroupSpec, bool], np.ndarray]] = {
    "obs": lambda own, state, spec, shared: np.concatenate([own, _index(own.shape[:-2], own.shape[-2])], -1) if shared else own,
    "state": lambda own, state, spec, shared: _flat_state(state, spec, own.shape[-2]),
    "joint_obs": lambda own, state, spec, shared: _joint(own, own.shape[-2]),
    "agent_state": lambda own, state, spec, shared: np.concatenate(
        [_flat_state(state, spec, own.shape[-2]), own, _index(own.shape[:-2], own.shape[-2])], -1
    ),
}
