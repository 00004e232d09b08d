"""A corridor that breaks on purpose, for the tests of what relayrl does with a faulty
environment (importable by subprocess env workers)."""

from typing import Any

import numpy as np

from relayrl.envs import EnvFactory
from relayrl.envs.corridor import CorridorEnv

FAULTS = ("raise", "nan_reward", "inf_obs", "unknown_agent", "vanish", "comes_back", "no_reward", "no_obs", "done_api", "reset_obs_only")


class FaultyCorridor(CorridorEnv):
    """``fault`` hits ``runner_1`` once this env has taken ``at_step`` steps (over all its
    episodes)."""

    def __init__(self, fault: str, at_step: int = 3, **settings: Any) -> None:
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; one of {FAULTS}")
        super().__init__(**settings)
        self.fault, self.at_step = fault, at_step
        self.taken = 0

    def reset(self, seed: int | None = None, options: dict | None = None):
        obs, infos = super().reset(seed=seed, options=options)
        return obs if self.fault == "reset_obs_only" else (obs, infos)

    def step(self, actions: dict[str, Any]):
        victim = "runner_1"
        obs, rewards, terms, truncs, infos = super().step(actions)
        self.taken += 1
        if self.fault == "comes_back" and self.taken == self.at_step + 1:
            self.agents.append(victim)  # it terminated at the step before
        if self.taken == self.at_step and victim in obs:
            if self.fault == "raise":
                raise RuntimeError("the simulator lost its physics engine")
            if self.fault == "nan_reward":
                rewards[victim] = float("nan")
            if self.fault == "inf_obs":
                obs[victim] = np.full_like(obs[victim], np.inf)
            if self.fault == "unknown_agent":
                obs["intruder_0"] = obs[victim]
            if self.fault == "vanish":
                self.agents.remove(victim)
            if self.fault == "comes_back":
                terms[victim] = True
                self.agents.remove(victim)
            if self.fault == "no_reward":
                del rewards[victim]
            if self.fault == "no_obs":
                del obs[victim]
            if self.fault == "done_api":
                return obs, rewards, {a: terms[a] or truncs[a] for a in terms}, infos
        return obs, rewards, terms, truncs, infos


def faulty_factory(fault: str, at_step: int = 3, n_agents: int = 3, length: int = 5, max_steps: int = 12) -> EnvFactory:
    settings = {"fault": fault, "at_step": at_step, "n_agents": n_agents, "length": length, "max_steps": max_steps}
    return EnvFactory(FaultyCorridor, settings)  # float32 observations, so inf_obs stays inf
