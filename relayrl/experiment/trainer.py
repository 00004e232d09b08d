"""The SUPER / DQN training loop (SPEC §1.1), one iteration at a time.

Per iteration: (1) collect a rollout fragment from every env copy and insert each agent's
own transitions into its replay; (2) each sender computes |td| of its new transitions with
its current online and target networks, selects, and the relay inserts the selection into
the other agents' replays; (3) every agent samples its replay and takes its gradient steps.
Training intensity is fixed whatever the number of env copies: one update of batch 32 per
agent per ``fragment_length`` env steps, counted over all copies.
"""

import math
import os
import platform
import shutil
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

import relayrl
from relayrl.algos.dqn import DQNLearner, DQNSettings
from relayrl.algos.nstep import STEP_FIELDS, NStepBuilder, Transitions
from relayrl.algos.schedules import linear_schedule
from relayrl.core.device import configure_threads, resolve_device
from relayrl.core.errors import CheckpointError
from relayrl.core.seeding import derive_seeds
from relayrl.envs.registry import EnvFactory, make_env_factory
from relayrl.envs.vector_env import make_vector_env
from relayrl.experiment.checkpoint import list_checkpoints, load_checkpoint, save_checkpoint
from relayrl.experiment.config import RunConfig
from relayrl.experiment.evaluation import evaluate
from relayrl.experiment.layout import AgentLayout
from relayrl.experiment.metrics import MetricsWriter
from relayrl.experiment.profiler import SectionTimer
from relayrl.replay import FieldSpec, ReplayBuffer
from relayrl.sharing.relay import Relay
from relayrl.sharing.selectors import make_selector

NetworkFactory = Callable[[int, tuple[int, ...], int], torch.nn.Module]


@dataclass
class Counters:
    env_steps: int = 0
    agent_steps: int = 0
    updates: int = 0  # gradient steps per agent
    iterations: int = 0
    updates_owed: float = 0.0
    last_target_sync: int = 0
    next_report: int = 0
    next_eval: int = 0
    next_checkpoint: int = 0
    wall_s: float = 0.0


@dataclass
class Window:
    """Accumulators between two metric reports."""

    env_steps: int = 0
    updates: int = 0
    loss_sum: float = 0.0
    grad_norm_sum: float = 0.0
    episode_returns: list[float] = field(default_factory=list)
    episode_lengths: list[int] = field(default_factory=list)
    seconds: float = 0.0


def run_dir_for(config: RunConfig, root: Path) -> Path:
    """``<root>/<preset>-<config hash>/<seed>/`` (DESIGN.md §5)."""
    return root / f"{config.preset}-{config.config_hash()}" / str(config.seed)


def _git_revision() -> str:
    try:
        here = Path(__file__).resolve().parent
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def provenance() -> dict[str, Any]:
    import pettingzoo

    return {
        "relayrl": relayrl.__version__,
        "git_revision": _git_revision(),
        "python": sys.version.split()[0],
        "torch": str(torch.__version__),
        "numpy": np.__version__,
        "pettingzoo": pettingzoo.__version__,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "command": " ".join(sys.argv),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


class Trainer:
    """Trains the agents of a config; a run directory makes it checkpointed and resumable."""

    def __init__(
        self,
        config: RunConfig,
        run_dir: Path | None = None,
        *,
        env_factory: EnvFactory | None = None,
        network_factory: NetworkFactory | None = None,
        verbose: bool = True,
    ) -> None:
        self.config = config
        self.run_dir = run_dir
        self.verbose = verbose
        configure_threads(config.torch_threads)
        self.device = resolve_device(config.device)
        self.factory = env_factory or make_env_factory(config.env.name, config.env.settings.model_dump())
        self.venv = make_vector_env(self.factory, config.env.num_envs, config.env.vector)
        if len(self.venv.groups) != 1:
            raise ValueError(
                f"this environment has {len(self.venv.groups)} agent groups "
                f"({[g.name for g in self.venv.groups]}); the DQN trainer trains one group"
            )
        self.group = self.venv.groups[0]
        dqn = config.dqn
        self.layout = AgentLayout(self.group.n_agents, dqn.param_sharing)
        seeds = derive_seeds(config.seed, 4, "trainer")
        settings = DQNSettings(dqn.lr, dqn.adam_eps, dqn.double_q, dqn.dueling, dqn.grad_clip, dqn.huber_delta)
        self.learner = DQNLearner(
            self.layout.n_sets,
            self.group.obs_shape,
            self.group.n_actions,
            settings,
            config.model.model_dump(),
            self.device,
            seeds[0],
            network_factory=network_factory,
        )
        self.action_dtype = np.dtype(np.uint8 if self.group.n_actions <= 256 else np.int64)
        fields = {
            "obs": FieldSpec(self.group.obs_shape, self.group.obs_dtype),
            "action": FieldSpec((), self.action_dtype),
            "reward": FieldSpec((), np.float32),
            "next_obs": FieldSpec(self.group.obs_shape, self.group.obs_dtype),
            "discount": FieldSpec((), np.float32),
        }
        self.bytes_per_transition = sum(
            int(np.prod(f.shape, dtype=np.int64)) * np.dtype(f.dtype).itemsize for f in fields.values()
        )
        self.replay = ReplayBuffer(
            self.layout.n_sets,
            dqn.buffer_size,
            fields,
            prioritized=dqn.prioritized,
            alpha=dqn.alpha,
            beta=dqn.beta,
            eps=dqn.priority_eps,
            seed=seeds[1],
        )
        self.batch_size = dqn.batch_size * (self.group.n_agents if dqn.param_sharing else 1)
        share = config.sharing
        self.sharing_on = share.select != "none"
        self.selector = make_selector(
            share.select,
            self.group.n_agents,
            bandwidth=share.bandwidth,
            window=share.window,
            gaussian_scale=share.gaussian_scale,
            running_moments=share.running_moments,
            stochastic_alpha=share.stochastic_alpha,
            stochastic_normaliser=share.stochastic_normaliser,
            seed=seeds[2],
        )
        self.relay = Relay(self.group.n_agents, share.team)
        self.nstep = NStepBuilder(dqn.n_step, dqn.gamma, dqn.time_limit_as_terminal)
        self.counters = Counters(
            next_report=config.report_interval,
            next_eval=config.eval.interval if config.eval.interval else math.inf,
            next_checkpoint=config.checkpoint_interval,
        )
        self.window = Window()
        self.timer = SectionTimer()  # enabled by relayrl bench's loop profile
        self.recent_returns: deque[float] = deque(maxlen=100)  # RLlib's episode_reward_mean window
        self.obs, self.alive = None, None
        self.metrics: MetricsWriter | None = None
        self.history: list[dict[str, float]] = []

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        return {
            "config": self.config.model_dump(mode="json"),
            "counters": self.counters,
            "window": self.window,
            "recent_returns": list(self.recent_returns),
            "learner": self.learner.state_dict(),
            "replay": self.replay.state_dict(),
            "selector": self.selector.state_dict(),
            "relay": self.relay.stats,
            "nstep": self.nstep.state_dict(),
            "env": self.venv.get_state(),
            "obs": self.obs,
            "alive": self.alive,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.counters = state["counters"]
        self.window = state["window"]
        self.recent_returns = deque(state["recent_returns"], maxlen=100)
        self.learner.load_state_dict(state["learner"])
        self.replay.load_state_dict(state["replay"])
        self.selector.load_state_dict(state["selector"])
        self.relay.stats = state["relay"]
        self.nstep.load_state_dict(state["nstep"])
        if state["env"] is not None:
            try:
                self.venv.set_state(state["env"])
                self.obs, self.alive = state["obs"], state["alive"]
                return
            except ValueError as error:  # e.g. saved by pursuit-pz's copies, resumed on the vectorised pursuit
                print(f"note: the saved env state does not fit this env ({error}); episodes restart", file=sys.stderr)
        # envs that cannot be copied restart their in-flight episodes on resume
        self.obs, self.alive = self.venv.reset(self.config.seed + self.counters.iterations)

    def resume_from_latest(self) -> int:
        """Loads the newest checkpoint of the run directory; returns its env step (0 if none)."""
        checkpoints = list_checkpoints(self._checkpoint_dir())
        if not checkpoints:
            return 0
        self.load_state_dict(load_checkpoint(checkpoints[-1]))
        return self.counters.env_steps

    def _checkpoint_dir(self) -> Path:
        assert self.run_dir is not None
        return self.run_dir / "checkpoints"

    def save(self) -> Path | None:
        if self.run_dir is None:
            return None
        return save_checkpoint(
            self._checkpoint_dir(), self.counters.env_steps, self.state_dict(), self.config.keep_checkpoints
        )

    # ------------------------------------------------------------------ loop
    def epsilon(self) -> float:
        dqn = self.config.dqn
        return linear_schedule(dqn.epsilon_start, dqn.epsilon_end, dqn.epsilon_steps, self.counters.env_steps)

    def _collect(self) -> dict[str, np.ndarray]:
        """Steps the vector env for one fragment; returns ``[T, E, N, ...]`` step arrays."""
        dqn = self.config.dqn
        num_envs = self.venv.num_envs
        n_steps = max(1, dqn.fragment_length // num_envs)
        epsilon = self.epsilon()
        steps: dict[str, list[np.ndarray]] = {f: [] for f in STEP_FIELDS}
        for _ in range(n_steps):
            obs, alive = self.obs[0], self.alive[0]
            with self.timer("act"):
                actions_sets = self.learner.act(self.layout.to_sets(obs, 1), epsilon)
                actions = self.layout.to_entities(actions_sets, (num_envs,))
            with self.timer("env"):
                result, _ = self.venv.step([actions])
            step = result[0]
            for name, value in (
                ("obs", obs),
                ("action", actions),
                ("reward", step.reward),
                ("next_obs", step.next_obs),
                ("terminated", step.terminated),
                ("truncated", step.truncated),
                ("valid", alive),
            ):
                steps[name].append(value)
            self.obs, self.alive = [step.obs], [step.alive]
        episodes = self.venv.drain_episodes()
        self.window.episode_returns += [float(r[0]) for r in episodes.returns]
        self.window.episode_lengths += episodes.lengths
        self.recent_returns.extend(float(r[0]) for r in episodes.returns)
        collected = n_steps * num_envs
        self.counters.env_steps += collected
        self.window.env_steps += collected
        return {k: np.stack(v) for k, v in steps.items()}

    def _to_replay_rows(self, t: Transitions) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """``[T, E, N, ...]`` transitions -> per-set rows ``[P, M, ...]`` and mask ``[P, M]``."""
        data = {
            "obs": t.obs,
            "action": t.action.astype(self.action_dtype),
            "reward": t.reward,
            "next_obs": t.next_obs,
            "discount": t.discount,
        }
        rows = {k: self.layout.to_sets(v.reshape(-1, *v.shape[2:]), 1) for k, v in data.items()}
        mask = self.layout.to_sets(t.valid.reshape(-1, t.valid.shape[2]), 1)
        return rows, mask

    def _relay(self, rows: dict[str, np.ndarray], mask: np.ndarray) -> None:
        """SUPER step 2: |td| of the new transitions with each sender's current networks,
        selection, and insertion into the other agents' replays."""
        td_abs = np.abs(self.learner.td_error(rows))
        selected = self.selector.select(td_abs, mask)
        receive = self.relay.route(selected, mask, self.bytes_per_transition)
        if not receive.any():
            return
        n, m = mask.shape
        shared = {k: v.reshape(n * m, *v.shape[2:]) for k, v in rows.items()}
        priorities = None
        if self.config.sharing.priority == "sender_td":
            priorities = np.broadcast_to(td_abs.reshape(1, n * m), receive.shape)
        self.replay.add(shared, mask=receive, priorities=priorities)

    def _train(self, collected: int) -> None:
        dqn = self.config.dqn
        if self.counters.env_steps < dqn.learning_starts:
            return
        self.counters.updates_owed += collected / dqn.fragment_length
        n_updates = int(self.counters.updates_owed)
        self.counters.updates_owed -= n_updates
        for _ in range(n_updates):
            with self.timer("sample"):
                batch = self.replay.sample(self.batch_size)
            with self.timer("update"):
                td, metrics = self.learner.update(batch.data, batch.weights)
            if dqn.prioritized:
                with self.timer("sample"):
                    self.replay.update_priorities(batch.indices, np.abs(td))
            self.counters.updates += 1
            self.window.updates += 1
            self.window.loss_sum += metrics["td_loss"]
            self.window.grad_norm_sum += metrics["grad_norm"]

    def iteration(self) -> None:
        steps = self._collect()
        with self.timer("replay add"):
            transitions = self.nstep.add(steps)
            rows, mask = self._to_replay_rows(transitions)
            self.counters.agent_steps += int(steps["valid"].sum())
            if mask.any():
                self.replay.add(rows, mask=mask)
        if self.sharing_on and mask.any():
            with self.timer("td + relay"):
                self._relay(rows, mask)
        self._train(steps["reward"].shape[0] * self.venv.num_envs)
        if self.counters.env_steps - self.counters.last_target_sync >= self.config.dqn.target_update_interval:
            self.learner.sync_target()
            self.counters.last_target_sync = self.counters.env_steps
        self.counters.iterations += 1

    def _report(self) -> dict[str, float]:
        c, w = self.counters, self.window
        relay = self.relay.drain()
        nan = math.nan
        row = {
            "env_steps": c.env_steps,
            "agent_steps": c.agent_steps,
            "updates": c.updates,
            "episodes": len(w.episode_returns),
            "episode_reward_mean": float(np.mean(w.episode_returns)) if w.episode_returns else nan,
            "episode_reward_mean_100": float(np.mean(self.recent_returns)) if self.recent_returns else nan,
            "eval_reward_mean": nan,
            "episode_len_mean": float(np.mean(w.episode_lengths)) if w.episode_lengths else nan,
            "bandwidth_actual": float(np.nanmean(relay.bandwidth())) if self.sharing_on and relay.offered.any() else nan,
            "transitions_relayed": int(relay.sent.sum()),
            "bytes_relayed": relay.bytes_sent,
            "td_loss": w.loss_sum / w.updates if w.updates else nan,
            "grad_norm": w.grad_norm_sum / w.updates if w.updates else nan,
            "epsilon": self.epsilon(),
            "sps": w.env_steps / w.seconds if w.seconds > 0 else nan,
            "updates_per_s": w.updates / w.seconds if w.seconds > 0 else nan,
            "wall_s": c.wall_s,
        }
        if c.env_steps >= c.next_eval:
            row["eval_reward_mean"] = float(np.mean(self.evaluate_greedy(self.config.eval.episodes)))
            while c.next_eval <= c.env_steps:
                c.next_eval += self.config.eval.interval
        self.window = Window()
        return row

    def evaluate_greedy(self, episodes: int) -> np.ndarray:
        def greedy(obs: np.ndarray) -> np.ndarray:
            actions = self.learner.act(self.layout.to_sets(obs, 1), 0.0)
            return self.layout.to_entities(actions, (obs.shape[0],))

        return evaluate(self.factory, greedy, episodes, self.config.seed + self.config.eval.seed_offset)

    def _print_progress(self, row: dict[str, float]) -> None:
        c, total = self.counters, self.config.total_steps
        sps = row["sps"]
        eta = (total - c.env_steps) / sps if sps and sps > 0 else math.nan
        parts = [
            f"[{self.config.preset} s{self.config.seed}]",
            f"steps {c.env_steps:,}/{total:,} ({100 * c.env_steps / total:.1f}%)",
            f"{sps:,.0f} sps",
            f"{row['updates_per_s']:,.0f} upd/s",
            f"reward {row['episode_reward_mean']:.2f}",
        ]
        if not math.isnan(row["eval_reward_mean"]):
            parts.append(f"eval {row['eval_reward_mean']:.2f}")
        if self.sharing_on:
            parts.append(f"bw {row['bandwidth_actual']:.3f}")
        parts.append(f"eta {eta / 60:.1f} min" if math.isfinite(eta) else "eta -")
        print(" | ".join(parts), flush=True)

    def _start(self) -> int:
        resumed_at = 0
        if self.run_dir is not None:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            for tmp in self._checkpoint_dir().glob(".tmp_*"):  # left by a crash during a save
                shutil.rmtree(tmp, ignore_errors=True)
            resumed_at = self.resume_from_latest()
            if resumed_at == 0:
                (self.run_dir / "config.yaml").write_text(yaml.safe_dump(self.config.model_dump(mode="json"), sort_keys=False))
            with (self.run_dir / "provenance.yaml").open("a") as handle:
                yaml.safe_dump([{**provenance(), "resumed_at": resumed_at}], handle, sort_keys=False)
            self.metrics = MetricsWriter(self.run_dir, resume_at=resumed_at)
        if self.obs is None:
            self.obs, self.alive = self.venv.reset(self.config.seed)
        return resumed_at

    def train(self) -> list[dict[str, float]]:
        """Runs until ``total_steps``; returns the metric rows written by this call.

        Ctrl-C stops at once: the metrics written so far and the last checkpoint are kept
        (checkpoints are atomic), and ``relayrl resume`` continues from that checkpoint.
        """
        self._start()
        c = self.counters
        try:
            tick = time.perf_counter()
            while c.env_steps < self.config.total_steps:
                self.iteration()
                now = time.perf_counter()
                self.window.seconds += now - tick
                c.wall_s += now - tick
                tick = now
                if c.env_steps >= c.next_report or c.env_steps >= self.config.total_steps:
                    with self.timer("logging"):
                        row = self._report()
                        while c.next_report <= c.env_steps:
                            c.next_report += self.config.report_interval
                        self.history.append(row)
                        if self.metrics is not None:
                            self.metrics.write(row)
                        if self.verbose:
                            self._print_progress(row)
                    tick = time.perf_counter()  # evaluation time is not training throughput
                if c.env_steps >= c.next_checkpoint or c.env_steps >= self.config.total_steps:
                    while c.next_checkpoint <= c.env_steps:
                        c.next_checkpoint += self.config.checkpoint_interval
                    self.save()
                    tick = time.perf_counter()
        except KeyboardInterrupt:
            if self.verbose:
                last = list_checkpoints(self._checkpoint_dir()) if self.run_dir else []
                where = f"; last checkpoint {last[-1].name}, continue with: relayrl resume {self.run_dir}" if last else ""
                print(f"\ninterrupted at env step {c.env_steps:,}{where}", file=sys.stderr)
            raise
        finally:
            if self.metrics is not None:
                self.metrics.close()
                self.metrics = None
        return self.history

    def close(self) -> None:
        self.venv.close()
