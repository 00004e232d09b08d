"""Typed, validated run configuration (pydantic). A wrong key or value fails before training
starts with the key path, the bad value and what is allowed."""

import hashlib
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from relayrl.core.errors import ConfigError


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class PursuitSettings(Strict):
    """pettingzoo.sisl pursuit_v5 settings; defaults are the SUPER paper's (Table 2)."""

    x_size: int = Field(16, ge=2)
    y_size: int = Field(16, ge=2)
    n_evaders: int = Field(30, ge=1)
    n_pursuers: int = Field(8, ge=1)
    obs_range: int = Field(7, ge=1)
    n_catch: int = Field(2, ge=1)
    freeze_evaders: bool = False
    tag_reward: float = 0.01
    catch_reward: float = 5.0
    urgency_reward: float = -0.1
    surround: bool = True
    max_cycles: int = Field(500, ge=1)
    shared_reward: bool = False
    constraint_window: float = Field(1.0, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _runnable(self) -> "PursuitSettings":
        from relayrl.envs.pursuit_vector import validate_settings

        validate_settings(self.model_dump())
        return self


class CorridorSettings(Strict):
    n_agents: int = Field(4, ge=1)
    length: int = Field(8, ge=2)
    max_steps: int = Field(20, ge=1)


class PursuitEnv(Strict):
    """``pursuit`` is relayrl's vectorised implementation, ``pursuit-pz`` PettingZoo's own;
    both have the same dynamics (tests/envs/test_pursuit_vector.py)."""

    name: Literal["pursuit", "pursuit-pz"] = "pursuit"
    settings: PursuitSettings = PursuitSettings()
    num_envs: int = Field(1, ge=1, description="env copies stepped together (E)")
    vector: Literal["sync", "subproc"] = Field("sync", description="pursuit-pz only: copies in this process or in workers")

    @model_validator(mode="after")
    def _vector_kind(self) -> "PursuitEnv":
        if self.name == "pursuit" and self.vector != "sync":
            raise ValueError("the vectorised pursuit runs in-process; vector=subproc needs env.name=pursuit-pz")
        return self


class CorridorEnv(Strict):
    name: Literal["corridor"] = "corridor"
    settings: CorridorSettings = CorridorSettings()
    num_envs: int = Field(1, ge=1)
    vector: Literal["sync", "subproc"] = "sync"


class ModelConfig(Strict):
    """Q-network shape (SPEC §1.1): convolutions for HxWxC observations, then ``hiddens``."""

    conv_channels: list[int] = [32, 64, 64]
    kernel_size: int = Field(2, ge=1)
    hiddens: list[int] = [64, 256]
    head_hidden: int = Field(256, ge=1)


class DQNConfig(Strict):
    """DQN-family hyperparameters; defaults are the SUPER paper's Pursuit column (Table 2,
    SPEC §1.1). Step counts are env steps summed over env copies."""

    lr: float = Field(1.6e-4, gt=0)
    adam_eps: float = Field(1e-8, gt=0)
    batch_size: int = Field(32, ge=1, description="per agent; parameter sharing uses N x this")
    buffer_size: int = Field(120_000, ge=1, description="per agent")
    gamma: float = Field(0.99, ge=0, le=1)
    double_q: bool = True
    dueling: bool = True
    prioritized: bool = True
    alpha: float = Field(0.6, ge=0)
    beta: float = Field(0.4, ge=0)
    priority_eps: float = Field(1e-6, gt=0)
    n_step: int = Field(1, ge=1)
    target_update_interval: int = Field(1000, ge=1)
    fragment_length: int = Field(4, ge=1, description="env steps per update per agent")
    learning_starts: int = Field(1000, ge=0)
    epsilon_start: float = Field(0.1, ge=0, le=1)
    epsilon_end: float = Field(0.001, ge=0, le=1)
    epsilon_steps: int = Field(100_000, ge=0)
    grad_clip: float = Field(40.0, gt=0)
    huber_delta: float = Field(1.0, gt=0)
    param_sharing: bool = False
    time_limit_as_terminal: bool = False


class SharingConfig(Strict):
    """``select`` x ``bandwidth`` at the sender (SUPER, paper 000 section 4.1)."""

    select: Literal["quantile", "gaussian", "stochastic", "uniform", "all", "none"] = "none"
    bandwidth: float = Field(0.1, gt=0, le=1)
    window: int = Field(1500, ge=1)
    running_moments: bool = Field(False, description="gaussian: constant-memory moments instead of a window")
    gaussian_scale: Literal["std", "variance"] = "std"
    stochastic_alpha: float = Field(1.0, ge=0)
    stochastic_normaliser: Literal["fragment", "window"] = "fragment"
    team: list[int] | None = Field(None, description="agent indices that send and receive; None = all")
    priority: Literal["max", "sender_td"] = "max"


class EvalConfig(Strict):
    interval: int = Field(50_000, ge=0, description="env steps between greedy evaluations; 0 = off")
    episodes: int = Field(5, ge=1)
    seed_offset: int = 10_000


# Settings that do not change what is learned (up to float rounding across devices/threads).
RUNTIME_KEYS = {"seed", "total_steps", "torch_threads", "device", "checkpoint_interval", "keep_checkpoints"}


class RunConfig(Strict):
    preset: str = "custom"
    total_steps: int = Field(800_000, ge=1)
    seed: int = 0
    env: Annotated[PursuitEnv | CorridorEnv, Field(discriminator="name")] = PursuitEnv()
    model: ModelConfig = ModelConfig()
    dqn: DQNConfig = DQNConfig()
    sharing: SharingConfig = SharingConfig()
    eval: EvalConfig = EvalConfig()
    report_interval: int = Field(8000, ge=1, description="env steps between metrics rows (the paper's bin)")
    checkpoint_interval: int = Field(50_000, ge=1)
    keep_checkpoints: int = Field(2, ge=1)
    device: str = "auto"
    torch_threads: int = Field(1, ge=0, description="0 = torch's default")

    @model_validator(mode="after")
    def _consistent(self) -> "RunConfig":
        if self.dqn.param_sharing and self.sharing.select != "none":
            raise ValueError("parameter sharing has one replay: set sharing.select=none")
        n_agents = self.n_agents()
        if self.sharing.team is not None and any(not 0 <= i < n_agents for i in self.sharing.team):
            raise ValueError(f"sharing.team indices must be in [0, {n_agents}), got {self.sharing.team}")
        return self

    def n_agents(self) -> int:
        settings = self.env.settings
        return settings.n_pursuers if isinstance(settings, PursuitSettings) else settings.n_agents

    def config_hash(self) -> str:
        """Short hash of everything that changes the experiment: not the seed, the budget, or
        how it is executed (threads, device, checkpointing), so those may change on resume."""
        payload = self.model_dump(mode="json", exclude=RUNTIME_KEYS)
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:8]


def _allowed_keys(parts: list[str]) -> list[str]:
    """Field names of the config section at ``parts`` (for unknown-key messages)."""
    model: Any = RunConfig
    for part in parts:
        field = model.model_fields.get(part) if hasattr(model, "model_fields") else None
        if field is None:
            return []
        annotation = field.annotation
        options = [a for a in getattr(annotation, "__args__", (annotation,)) if hasattr(a, "model_fields")]
        if not options:
            return []
        model = options[0]
    return sorted(model.model_fields)


def _format_error(error: ValidationError) -> str:
    lines = ["invalid configuration:"]
    for item in error.errors():
        parts = [str(p) for p in item["loc"] if not str(p).startswith("function-after")]
        # discriminated unions insert the tag ("pursuit") into the location: drop it
        parts = [p for i, p in enumerate(parts) if not (i > 0 and parts[i - 1] == "env" and p in ("pursuit", "pursuit-pz", "corridor"))]
        path = ".".join(parts) or "(root)"
        value = item.get("input")
        shown = "" if isinstance(value, dict) else f" (got {value!r})"
        hint = ""
        if item["type"] == "extra_forbidden":
            allowed = _allowed_keys(parts[:-1])
            hint = f" -- unknown key; allowed here: {', '.join(allowed)}" if allowed else " -- unknown key"
        lines.append(f"  {path}: {item['msg']}{shown}{hint}")
    return "\n".join(lines)


def build_config(data: dict[str, Any]) -> RunConfig:
    """Validates a nested dict into a RunConfig, raising ConfigError with readable paths."""
    try:
        return RunConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_format_error(error)) from None


def _parse_value(text: str) -> Any:
    """Command-line values are numbers or YAML values: 1e-4, 250000, true, [0, 1], null."""
    import yaml

    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return yaml.safe_load(text)


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Applies ``dotted.key=value`` overrides to a nested dict (a copy); ``total_steps=N``
    sets the budget. Unknown keys are caught by validation afterwards."""
    result = json.loads(json.dumps(data))
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not key=value (e.g. dqn.lr=1e-4)")
        key, text = item.split("=", 1)
        node = result
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"override {key!r}: {part!r} is a value, not a section")
            node = child
        node[parts[-1]] = _parse_value(text)
    return result
