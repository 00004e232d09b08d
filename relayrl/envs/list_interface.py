"""The AI Arena's list interface, adapted both ways to PettingZoo's Parallel API.

Paper 004, section 3 and Fig. 1: an environment of N entities is a Gym environment whose
data are lists, one entry per entity: ``reset() -> [obs_i]`` and
``step([a_i]) -> ([obs_i], [reward_i], done, [info_i])``, with one shared ``done`` for
the episode; an entity that has left the episode sends and receives ``None``. Its spaces
are the lists ``observation_space`` and ``action_space``. So that the step an entity
leaves on keeps its last observation, that step's info for it says ``entity_done``
(an entity whose observation is ``None`` has left too).

``ParallelFace`` makes such an environment a PettingZoo Parallel env (so relayrl, and
PettingZoo's API tests, run it); ``ListFace`` gives any Parallel env the list face.
"""

import inspect
from typing import Any

from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv


class ListFace:
    """A PettingZoo Parallel env behind the list interface, entities in ``possible_agents``
    order; ``done`` is true once no agent is left; an agent that terminated or truncated
    gets its last observation with ``entity_done`` (and ``truncated``) in its info."""

    def __init__(self, env: ParallelEnv) -> None:
        self.env = env
        self.entities = list(env.possible_agents)
        self.observation_space = [env.observation_space(a) for a in self.entities]
        self.action_space = [env.action_space(a) for a in self.entities]

    def reset(self, seed: int | None = None) -> list[Any]:
        obs, _ = self.env.reset(seed=seed)
        return [obs.get(a) for a in self.entities]

    def step(self, actions: list[Any]) -> tuple[list[Any], list[float], bool, list[dict]]:
        present = set(self.env.agents)
        obs, rewards, terms, truncs, infos = self.env.step({a: act for a, act in zip(self.entities, actions) if a in present})
        info = [dict(infos.get(a, {})) for a in self.entities]
        for a, entity_info in zip(self.entities, info):
            if terms.get(a) or truncs.get(a):
                entity_info.update(entity_done=True, truncated=bool(truncs.get(a)) and not terms.get(a))
        return [obs.get(a) for a in self.entities], [float(rewards.get(a, 0.0)) for a in self.entities], not self.env.agents, info

    def close(self) -> None:
        self.env.close()


class ParallelFace(ParallelEnv):
    """A list-interface environment as a PettingZoo Parallel env with agents
    ``{prefix}_{i}``. An entity leaves when its info says ``entity_done`` or its observation
    comes back ``None``: it terminates, or truncates where its info says ``truncated``; the
    shared ``done`` ends the episode for everyone left, as a truncation where an info says
    ``TimeLimit.truncated`` (the Gym convention), else as a termination."""

    metadata = {"name": "arena_list_env", "render_modes": [], "is_parallelizable": True}

    def __init__(self, env: Any, prefix: str = "entity") -> None:
        self.env = env
        self.possible_agents = [f"{prefix}_{i}" for i in range(len(env.observation_space))]
        self._obs_spaces = dict(zip(self.possible_agents, env.observation_space))
        self._act_spaces = dict(zip(self.possible_agents, env.action_space))
        self._seeds = "seed" in inspect.signature(env.reset).parameters
        self.agents: list[str] = []

    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self._act_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None):
        obs = self.env.reset(seed=seed) if self._seeds else self.env.reset()
        self.agents = [a for a, o in zip(self.possible_agents, obs) if o is not None]
        return {a: o for a, o in zip(self.possible_agents, obs) if o is not None}, {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]):
        obs, rewards, done, infos = self.env.step([actions.get(a) for a in self.possible_agents])
        before = self.agents
        info = dict(zip(self.possible_agents, infos))
        gone = {a for a, o in zip(self.possible_agents, obs) if o is None or (info[a] or {}).get("entity_done")}
        cut = {a for a in gone if (info[a] or {}).get("truncated")}
        truncated_all = done and any((info[a] or {}).get("TimeLimit.truncated", False) for a in before)
        terms = {a: (a in gone and a not in cut) or (done and a not in gone and not truncated_all) for a in before}
        truncs = {a: (a in cut) or (done and a not in gone and truncated_all) for a in before}
        self.agents = [] if done else [a for a in before if a not in gone]
        observations = {a: o for a, o in zip(self.possible_agents, obs) if a in before and o is not None}
        return (
            observations,
            {a: float(r) for a, r in zip(self.possible_agents, rewards) if a in before},
            terms,
            truncs,
            {a: info[a] or {} for a in before},
        )

    def render(self) -> None:
        return None

    def close(self) -> None:
        if hasattr(self.env, "close"):
            self.env.close()
