"""PettingZoo Parallel API -> arrays with an agent axis, per agent group."""

import traceback
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import AECEnv, ParallelEnv

from relayrl.core.errors import ConfigError, EnvError, RelayRLError, RelayRLWarning, SpaceError
from relayrl.core.specs import PIXEL_RANGE, GroupSpec, pixels_of
from relayrl.envs.flat_spaces import combinations, env_actions, flat_box, flatten_obs
from relayrl.envs.frames import checked_frame
from relayrl.envs.types import GroupObs, GroupStep


def _acting_space(agent: str, space: spaces.Space) -> tuple[spaces.Box, bool, spaces.Space | None]:
    """The observation Box of an agent, whether its observations carry an action mask
    (PettingZoo's ``Dict(observation=Box, action_mask=...)`` convention), and the space its
    observations are flattened from where they are not a Box (``relayrl.envs.flat_spaces``)."""
    masked = isinstance(space, spaces.Dict) and set(space.spaces) == {"observation", "action_mask"}
    if masked:
        space = space["observation"]
    if isinstance(space, spaces.Box):
        return space, masked, None
    return flat_box(space, f"agent {agent!r}: "), masked, space


def check_finite_bounds(space: spaces.Box, who: str = "") -> None:
    """Box actions need finite bounds: relayrl's learners act within them."""
    if not (np.isfinite(space.low).all() and np.isfinite(space.high).all()):
        raise SpaceError(f"{who}relayrl needs finite bounds on Box actions (its learners act within them), got {space}: "
                          "give the action space the range the env accepts")


def _groups_of(
    env: ParallelEnv, obs_dtypes: dict[str, Any] | None, named: dict[str, tuple[str, ...]] | None = None
) -> tuple[tuple[GroupSpec, ...], tuple[bool, ...]]:
    """Agents with the same name prefix (``red`` of ``red_0``: a team) and equal observation
    and action spaces form a group, in ``possible_agents`` order; ``named`` (``env.groups``)
    puts the agents it lists in the groups it names instead, which need equal spaces.
    Actions are Discrete choices or Box vectors with finite bounds. Also returns whether each
    group's observations carry action masks."""
    chosen_group = {agent: name for name, agents in (named or {}).items() for agent in agents}
    unknown = sorted(set(chosen_group) - set(env.possible_agents))
    if unknown:
        raise ConfigError(f"env.groups names agent(s) {unknown}, which the env does not have; its possible_agents: {list(env.possible_agents)}")
    members: dict[tuple, list[str]] = {}
    for agent in env.possible_agents:
        obs_space, masked, _ = _acting_space(agent, env.observation_space(agent))
        act_space = env.action_space(agent)
        if not isinstance(act_space, (spaces.Discrete, spaces.MultiDiscrete, spaces.Box)) or (masked and not isinstance(act_space, spaces.Discrete)):
            raise SpaceError(f"agent {agent!r}: relayrl needs Discrete, MultiDiscrete or Box actions (masks for Discrete ones), got {act_space}")
        if isinstance(act_space, spaces.Box):
            check_finite_bounds(act_space, f"agent {agent!r}: ")
        prefix = chosen_group.get(agent) or (agent.rsplit("_", 1)[0] if "_" in agent else agent)
        if isinstance(act_space, spaces.MultiDiscrete):
            actions: tuple = (combinations(act_space, f"agent {agent!r}: "),)
        elif isinstance(act_space, spaces.Discrete):
            actions = (int(act_space.n),)
        else:
            actions = (0, act_space.shape, tuple(act_space.low.reshape(-1).tolist()), tuple(act_space.high.reshape(-1).tolist()))
        key = (prefix, obs_space.shape, str(obs_space.dtype), pixels_of(obs_space), actions, masked)
        members.setdefault(key, []).append(agent)
    for name in named or {}:
        apart = [agents for key, agents in members.items() if key[0] == name]
        if len(apart) > 1:
            sets = " and ".join(str(agents) for agents in apart)
            raise ConfigError(f"env.groups.{name} lists agents of different spaces: {sets} differ in their observations, their dtype or their "
                              "actions; a group's agents share one network, so list only agents of equal spaces")
    groups, masks = [], []
    prefixes = {key[0] for key in members}
    for (name, shape, dtype, pixels, actions, masked), agents in members.items():
        if any(g.name == name for g in groups):  # a second group of one prefix: a name no other group has or will have
            taken = prefixes | {g.name for g in groups}
            name = next(f"{name}{k}" for k in range(len(groups), len(groups) + len(taken) + 1) if f"{name}{k}" not in taken)
        chosen = np.dtype((obs_dtypes or {}).get(name, dtype))
        flat = len(shape) not in (1, 3)  # the networks take images HxWxC or flat vectors
        kept = (int(np.prod(shape)),) if flat else tuple(shape)
        groups.append(GroupSpec(name, tuple(agents), kept, chosen, *actions, masked=masked, flattened=tuple(shape) if flat else (), pixels=pixels))
        masks.append(masked)
    return tuple(groups), tuple(masks)


# what an AEC (agent-by-agent) env needs before relayrl can train on it
AEC_HINT = (
    "relayrl steps Parallel envs, where every live agent acts at each step. A PettingZoo AEC env whose agents all move "
    "once per cycle converts with pettingzoo.utils.conversions.aec_to_parallel; turn-based games, where an agent waits "
    "while others move, are not supported"
)


class ParallelEnvAdapter:
    """Wraps one PettingZoo ParallelEnv; converts its dicts to per-group arrays once.

    Agent order within a group is fixed to ``possible_agents`` order. Observations are
    cast to the group's ``obs_dtype`` (choose an exact one: Pursuit's counts fit uint8).
    Observations that are not Boxes are flattened (a Discrete one-hot, a Dict's parts side
    by side: ``relayrl.envs.flat_spaces``). An env with a ``state_space`` gives its
    ``state()`` with every observation where ``with_state`` (a learner of the run reads
    it); Dict observations of ``observation`` and ``action_mask`` give action masks
    (entities that left the episode may take every action).
    """

    def __init__(
        self, env: ParallelEnv, obs_dtypes: dict[str, Any] | None = None, with_state: bool = True, named: dict[str, tuple[str, ...]] | None = None
    ) -> None:
        if isinstance(env, AECEnv):
            raise EnvError(f"{type(env).__name__} is a PettingZoo AEC env, not a Parallel one: {AEC_HINT}")
        self.env = env
        groups, self.masked = _groups_of(env, obs_dtypes, named)
        self.has_state = with_state and getattr(env, "state_space", None) is not None
        if self.has_state:  # handed up as float32 (below)
            groups = tuple(replace(g, state_shape=tuple(env.state_space.shape)) for g in groups)
        # a state of 8-bit intensities (a screen) reaches the critics and mixers divided by 255, as observations reach the networks
        self._pixel_state = self.has_state and pixels_of(env.state_space)
        self.groups = groups
        self._slot = {a: (g, i) for g, spec in enumerate(self.groups) for i, a in enumerate(spec.agent_ids)}
        self._flattened = {a: source for a in env.possible_agents if (source := _acting_space(a, env.observation_space(a))[2]) is not None}
        # a Discrete(n, start) agent's choices 0..n-1 are start..start+n-1 to the env
        self._start = {a: int(s.start) for a in env.possible_agents if isinstance(s := env.action_space(a), spaces.Discrete) and s.start != 0}
        # a MultiDiscrete agent's one choice k is the k-th combination of its choices (flat_spaces.env_actions)
        self._choices = {a: s for a in env.possible_agents if isinstance(s := env.action_space(a), spaces.MultiDiscrete)}
        self._finished: dict[str, int] = {}  # agents whose episode ended, and at which step
        self._warned_masks = False
        self._step = 0
        self._last_state: np.ndarray | None = None  # what the env's state() last gave

    def _name(self) -> str:
        return type(self.env.unwrapped if hasattr(self.env, "unwrapped") else self.env).__name__

    def _contract(self, message: str) -> EnvError:
        return EnvError(f"{self._name()} breaks the PettingZoo Parallel API at step {self._step} of its episode: {message}")

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``env.<method>(...)``; an exception the env raises becomes an EnvError naming the
        env, the step of its episode and the line of the env's code that raised."""
        try:
            return getattr(self.env, method)(*args, **kwargs)
        except RelayRLError:
            raise
        except Exception as error:
            frame = traceback.extract_tb(error.__traceback__)[-1]
            when = "at its reset" if method == "reset" else f"in step {self._step + 1} of its episode"
            raise EnvError(
                f"{self._name()}.{method}() raised {type(error).__name__}: {error}, {when} "
                f"({Path(frame.filename).name}:{frame.lineno}, in {frame.name})"
            ) from error

    def _state(self, terminated: bool = False) -> np.ndarray:
        """The env's global state, or the error that says whose ``state()`` failed and why
        the run asks for it. After a step that terminated every agent left (``terminated``)
        the state before it stands in where ``state()`` fails (multiwalker's does once its
        walkers fell): no learner bootstraps from a terminal state."""
        try:
            given = self.env.state()
        except Exception as error:
            if terminated and self._last_state is not None:
                return self._last_state
            raise EnvError(
                f"{self._name()}.state() raised {type(error).__name__}: {error}, at step {self._step} of its episode (agents left: "
                f"{list(self.env.agents)}). This run's learners read the env's global state (relayrl list: 'reads the global "
                f"state'): train a learner that does not (MAPPO's critic reads every agent's observation with on_policy.critic_input=joint_obs), "
                f"or fix the env's state() for that step"
            ) from None
        declared = tuple(self.env.state_space.shape)
        if given is None or np.size(given) != int(np.prod(declared)):
            got = "None" if given is None else f"shape {np.shape(given)}"
            raise self._contract(f"state() returned {got}, its state_space {declared}")
        state = np.asarray(given, np.float32).reshape(declared)
        self._last_state = state / np.float32(PIXEL_RANGE) if self._pixel_state else state
        return self._last_state

    def _check_known(self, *collections: Any) -> None:
        unknown = sorted({a for c in collections for a in c} - self._slot.keys())
        if unknown:
            raise self._contract(
                f"agent(s) {unknown} are not in possible_agents {list(self._slot)}; possible_agents must list every agent"
            )

    def _returned(self, method: str, result: Any, names: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
        """``result`` of ``env.<method>()`` as the tuple of dicts ``names`` the Parallel API asks for."""
        if not (isinstance(result, tuple) and len(result) == len(names) and all(isinstance(part, dict) for part in result)):
            got = f"a {len(result)}-tuple" if isinstance(result, tuple) else type(result).__name__
            old = " (the 4-tuple of Gym's old done API: split done into terminations and truncations)" if method == "step" and isinstance(result, tuple) and len(result) == 4 else ""
            raise self._contract(f"{method}() returned {got}{old}; it must return ({', '.join(names)}), each a dict keyed by agent")
        return result

    def _check_acted(self, before: list[str], **dicts: dict[str, Any]) -> None:
        """Every agent that acted has its observation, reward, termination and truncation."""
        for name, values in dicts.items():
            missing = [a for a in before if a not in values]
            if missing:
                raise self._contract(f"agent(s) {missing} acted but have no entry in step()'s {name}; each of its dicts holds every agent that acted, "
                                     "including those whose episode ends at this step")

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

    def _observed(self, obs: dict[str, Any], terminated: bool = False) -> list[GroupObs]:
        """Per group the arrays of ``obs``; ``terminated``: the step ended the episode with
        every agent that was left terminated (none truncated)."""
        arrays = self._empty_obs()
        alive = [np.zeros(g.n_agents, bool) for g in self.groups]
        masks = [np.ones((g.n_agents, g.n_actions), bool) if m else None for g, m in zip(self.groups, self.masked)]
        for agent, value in obs.items():
            g, i = self._slot[agent]
            if masks[g] is not None:
                masks[g][i] = np.asarray(value["action_mask"], bool)
                value = value["observation"]
            if agent in self._flattened:
                value = flatten_obs(self._flattened[agent], value)
            if np.size(value) != arrays[g][i].size:
                declared = self.groups[g].flattened or self.groups[g].obs_shape
                raise self._contract(f"agent {agent!r}'s observation has shape {np.shape(value)}, its observation_space {declared}")
            arrays[g][i] = np.reshape(value, arrays[g].shape[1:])  # a flattened group's too
        for agent in self.env.agents:
            g, i = self._slot[agent]
            alive[g][i] = True
        state = self._state(terminated) if self.has_state else None
        return [GroupObs(o, a, state, m) for o, a, m in zip(arrays, alive, masks)]

    def reset(self, seed: int | None = None) -> list[GroupObs]:
        """Per group what its entities act on first: ``obs [N, ...]``, ``alive [N]``, and the
        state and action masks where the env gives them."""
        self._finished, self._step = {}, 0
        obs, infos = self._returned("reset", self._call("reset", seed=seed), ("observations", "infos"))
        if not self._warned_masks:
            self._warn_unread_masks(infos)
        self._check_known(obs, self.env.agents)
        missing = [a for a in self.env.agents if a not in obs]
        if missing:
            raise self._contract(f"agent(s) {missing} are in env.agents after reset() but have no observation")
        return self._observed(obs)

    def _warn_unread_masks(self, infos: dict[str, Any]) -> None:
        """Once: an env that gives action masks in infos, where relayrl does not read them."""
        unread = [a for a, info in infos.items() if a in self._slot and isinstance(info, dict) and "action_mask" in info and not self.masked[self._slot[a][0]]]
        if unread:
            self._warned_masks = True
            warnings.warn(f"{self._name()} gives action_mask in infos (agents {unread[:3]}), which relayrl does not read: it reads masks from Dict "
                          "observations of 'observation' and 'action_mask' (PettingZoo's convention); its agents act on every action", RelayRLWarning, stacklevel=3)

    def step(self, actions: list[np.ndarray]) -> tuple[list[GroupStep], bool]:
        """Steps the agents present now with ``actions[g][i]``; returns per-group steps and
        whether the episode is over (no agent left). No auto-reset here."""
        before = list(self.env.agents)
        action_dict = {}
        for agent in before:
            g, i = self._slot[agent]
            action = actions[g][i]
            if agent in self._choices:
                action_dict[agent] = env_actions(self._choices[agent], np.asarray(action))
            else:
                action_dict[agent] = action.astype(np.float32) if self.groups[g].continuous else int(action) + self._start.get(agent, 0)
        result = self._call("step", action_dict)
        self._step += 1
        obs, rewards, terms, truncs, _ = self._returned("step", result, ("observations", "rewards", "terminations", "truncations", "infos"))
        self._check_known(obs, rewards, terms, truncs, self.env.agents)
        self._check_acted(before, observations=obs, rewards=rewards, terminations=terms, truncations=truncs)
        self._check_step(before, terms, truncs)
        steps = []
        terminated_all = not self.env.agents and not any(truncs.values())
        for g, (spec, seen) in enumerate(zip(self.groups, self._observed(obs, terminated_all))):
            reward = np.zeros(spec.n_agents, np.float32)
            terminated = np.zeros(spec.n_agents, bool)
            truncated = np.zeros(spec.n_agents, bool)
            steps.append(GroupStep(seen.obs, seen.obs, reward, terminated, truncated, seen.alive, seen.state, seen.action_mask, seen.state, seen.action_mask))
        for agent, r in rewards.items():
            g, i = self._slot[agent]
            steps[g].reward[i] = r
            steps[g].terminated[i] = terms[agent]
            steps[g].truncated[i] = truncs[agent]
        return steps, not self.env.agents

    def render(self) -> np.ndarray:
        """The env's frame (made with ``render_mode="rgb_array"``) as ``[H, W, 3] uint8``."""
        with warnings.catch_warnings():  # MAgent2's renderer asks pygame for a font that few machines have, and draws without it
            warnings.filterwarnings("ignore", message="The system font", category=UserWarning)
            return checked_frame(self._call("render"), self._name())

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
