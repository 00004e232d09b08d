"""PettingZoo Parallel API -> arrays with an agent axis, per agent group."""

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv

from relayrl.core.errors import EnvError
from relayrl.core.specs import GroupSpec


@dataclass
class GroupStep:
    """One step of one agent group; leading axes ``[N]`` (one env) or ``[E, N]`` (vector env).

    ``next_obs`` is the successor of the step (the final observation where an episode
    ended, kept for bootstrapping); ``obs`` is what to act on next (after auto-reset it
    is the first observation of the new episode). ``alive`` marks agents present in
    ``obs``; an agent that left the episode has zeros there and ``alive=False``.
    """

    obs: np.ndarray
    next_obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    alive: np.ndarray

    def non_finite(self) -> tuple[str, tuple[int, ...], float] | None:
        """The first NaN or inf in the rewards or (float) observations: (field, entity index
        ``(e, i)`` or ``(i,)``, value), or None. One vectorised check per field."""
        batch = self.reward.shape
        for name in ("reward", "next_obs", "obs"):
            values = getattr(self, name)
            if not np.issubdtype(values.dtype, np.floating):
                continue  # integer observations cannot be NaN
            bad = ~np.isfinite(values.reshape(*batch, -1)).all(axis=-1)
            if bad.any():
                where = tuple(int(i) for i in np.argwhere(bad)[0])
                flat = values[where].reshape(-1)
                return name, where, float(flat[~np.isfinite(flat)][0])
        return None


def _groups_of(env: ParallelEnv, obs_dtypes: dict[str, Any] | None) -> tuple[GroupSpec, ...]:
    """Agents with the same name prefix (``red`` of ``red_0``: a team) and equal observation
    and action spaces form a group, in ``possible_agents`` order. Actions are Discrete
    choices or Box vectors."""
    members: dict[tuple, list[str]] = {}
    for agent in env.possible_agents:
        obs_space, act_space = env.observation_space(agent), env.action_space(agent)
        if not isinstance(obs_space, spaces.Box) or not isinstance(act_space, (spaces.Discrete, spaces.Box)):
            raise TypeError(f"agent {agent!r}: relayrl needs Box observations and Discrete or Box actions, got {obs_space} and {act_space}")
        prefix = agent.rsplit("_", 1)[0] if "_" in agent else agent
        if isinstance(act_space, spaces.Discrete):
            actions: tuple = (int(act_space.n),)
        else:
            actions = (0, act_space.shape, tuple(act_space.low.reshape(-1).tolist()), tuple(act_space.high.reshape(-1).tolist()))
        key = (prefix, obs_space.shape, str(obs_space.dtype), actions)
        members.setdefault(key, []).append(agent)
    groups = []
    for (name, shape, dtype, actions), agents in members.items():
        if any(g.name == name for g in groups):
            name = f"{name}{len(groups)}"
        chosen = np.dtype((obs_dtypes or {}).get(name, dtype))
        groups.append(GroupSpec(name, tuple(agents), tuple(shape), chosen, *actions))
    return tuple(groups)


class ParallelEnvAdapter:
    """Wraps one PettingZoo ParallelEnv; converts its dicts to per-group arrays once.

    Agent order within a group is fixed to ``possible_agents`` order. Observations are
    cast to the group's ``obs_dtype`` (choose an exact one: Pursuit's counts fit uint8).
    """

    def __init__(self, env: ParallelEnv, obs_dtypes: dict[str, Any] | None = None) -> None:
        self.env = env
        self.groups = _groups_of(env, obs_dtypes)
        self._slot = {a: (g, i) for g, spec in enumerate(self.groups) for i, a in enumerate(spec.agent_ids)}
        self._finished: dict[str, int] = {}  # agents whose episode ended, and at which step
        self._step = 0

    def _contract(self, message: str) -> EnvError:
        name = type(self.env.unwrapped if hasattr(self.env, "unwrapped") else self.env).__name__
        return EnvError(f"{name} breaks the PettingZoo Parallel API at step {self._step} of its episode: {message}")

    def _check_known(self, *collections: Any) -> None:
        unknown = sorted({a for c in collections for a in c} - self._slot.keys())
        if unknown:
            raise self._contract(
                f"agent(s) {unknown} are not in possible_agents {list(self._slot)}; possible_agents must list every agent"
            )

    def _check_step(self, before: list[str], terms: dict[str, bool], truncs: dict[str, bool]) -> None:
        """Agents leave an episode only by terminating or truncating, and never return to it."""
        now = set(self.env.agents)
        vanished = [a for a in before if a not in now and not (terms.get(a) or truncs.get(a))]
        if vanished:
            raise self._contract(f"agent(s) {vanished} left env.agents without terminating or truncating")
        back = sorted(a for a in self._finished if a in now)
        if back:
            steps = ", ".join(f"{a} at step {self._finished[a]}" for a in back)
            raise self._contract(f"agent(s) {back} are in env.agents again after their episode ended ({steps})")
        for agent in before:
            if terms.get(agent) or truncs.get(agent):
                self._finished.setdefault(agent, self._step)

    def _empty_obs(self) -> list[np.ndarray]:
        return [np.zeros((g.n_agents, *g.obs_shape), g.obs_dtype) for g in self.groups]

    def _obs_arrays(self, obs: dict[str, np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        arrays = self._empty_obs()
        alive = [np.zeros(g.n_agents, bool) for g in self.groups]
        for agent, value in obs.items():
            g, i = self._slot[agent]
            arrays[g][i] = value
        for agent in self.env.agents:
            g, i = self._slot[agent]
            alive[g][i] = True
        return arrays, alive

    def reset(self, seed: int | None = None) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Returns per-group ``obs [N, ...]`` and ``alive [N]``."""
        obs, _ = self.env.reset(seed=seed)
        self._finished, self._step = {}, 0
        self._check_known(obs, self.env.agents)
        return self._obs_arrays(obs)

    def step(self, actions: list[np.ndarray]) -> tuple[list[GroupStep], bool]:
        """Steps the agents present now with ``actions[g][i]``; returns per-group steps and
        whether the episode is over (no agent left). No auto-reset here."""
        before = list(self.env.agents)
        action_dict = {}
        for agent in before:
            g, i = self._slot[agent]
            action = actions[g][i]
            action_dict[agent] = action.astype(np.float32) if self.groups[g].continuous else int(action)
        obs, rewards, terms, truncs, _ = self.env.step(action_dict)
        self._step += 1
        self._check_known(obs, rewards, terms, truncs, self.env.agents)
        self._check_step(before, terms, truncs)
        next_obs, alive = self._obs_arrays(obs)
        steps = []
        for g, spec in enumerate(self.groups):
            reward = np.zeros(spec.n_agents, np.float32)
            terminated = np.zeros(spec.n_agents, bool)
            truncated = np.zeros(spec.n_agents, bool)
            steps.append(GroupStep(next_obs[g], next_obs[g], reward, terminated, truncated, alive[g]))
        for agent, r in rewards.items():
            g, i = self._slot[agent]
            steps[g].reward[i] = r
            steps[g].terminated[i] = terms[agent]
            steps[g].truncated[i] = truncs[agent]
        return steps, not self.env.agents

    def get_state(self) -> dict[str, Any] | None:
        """The episode in flight as data, where the env offers ``state_dict`` and
        ``load_state_dict`` (as relayrl's own envs do); None for the others, whose episodes
        in flight restart on a resume (a checkpoint never pickles an env)."""
        if not (hasattr(self.env, "state_dict") and hasattr(self.env, "load_state_dict")):
            return None
        return {"env": self.env.state_dict(), "finished": dict(self._finished), "step": self._step}

    def set_state(self, state: dict[str, Any]) -> None:
        self.env.load_state_dict(state["env"])
        self._finished, self._step = dict(state["finished"]), state["step"]

    def to_dicts(self, arrays: list[np.ndarray], alive: list[np.ndarray]) -> dict[str, np.ndarray]:
        """Inverse of the conversion (for tests and user code): arrays -> agent-keyed dict."""
        return {
            agent: arrays[g][i]
            for g, spec in enumerate(self.groups)
            for i, agent in enumerate(spec.agent_ids)
            if alive[g][i]
        }

    def close(self) -> None:
        self.env.close()
