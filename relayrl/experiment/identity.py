"""What names a run and what a resume may change: the config hash in a run directory's name
(everything that changes the experiment) and the check of a resumed run's config against the
one it was trained with."""

import functools
import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relayrl.core.errors import ConfigError
from relayrl.envs.registry import ENVS

if TYPE_CHECKING:
    from relayrl.experiment.config import RunConfig

def run_dir_for(config: "RunConfig", root: Path, made: str = "") -> Path:
    """``<root>/<preset>-<config hash>/<seed>/`` (DESIGN.md §5); ``made`` names the Python
    API's factories (``factory_identity``), which the hash then covers too."""
    key = config.config_hash() if not made else hashlib.sha256(f"{config.config_hash()} {made}".encode()).hexdigest()[:8]
    return root / f"{config.preset}-{key}" / str(config.seed)


def _named(thing: Any) -> str:
    """A function's or class's import path (a partial's with its arguments)."""
    if thing is None:
        return "-"
    if isinstance(thing, functools.partial):
        return f"{_named(thing.func)}(*{thing.args!r}, **{thing.keywords!r})"
    return f"{getattr(thing, '__module__', '?')}.{getattr(thing, '__qualname__', type(thing).__qualname__)}"


def factory_identity(env_factory: Any, network_factory: Any) -> str:
    """What the Python API's factories build, by name: the env's maker with its settings and
    the network factory, so that a run of other factories is another experiment (another
    run directory) and never resumes this one's. Two lambdas of one module share a name."""
    parts = []
    if env_factory is not None:
        settings = json.dumps(env_factory.settings, sort_keys=True, default=repr)
        parts.append(f"env {_named(env_factory.maker)} {settings} {_named(env_factory.vectorised)} {sorted(env_factory.obs_dtypes.items())}")
    if network_factory is not None:
        parts.append(f"network {_named(network_factory)}")
    return re.sub(r" at 0x[0-9a-fA-F]+", "", "; ".join(parts))  # an object's address in a repr changes with every process


# Keys that do not change what is learned (up to float rounding across devices/threads); plugins
# say where the code of the names the config gives is, not what it is.
RUNTIME_KEYS = {"seed", "total_steps", "torch_threads", "keep_freed_memory", "device", "checkpoint_interval", "keep_checkpoints", "plugins"}
# What a resume may change: the budget and how the run executes (a seed names another run),
# and how often it reports (the rows' cadence; the learners' metrics are tallies they restart).
# The report interval is still hashed: a run directory keeps the name it was started under.
RESUMABLE_KEYS = tuple(sorted((RUNTIME_KEYS - {"seed"}) | {"report_interval"}))
# What a branch (``relayrl branch``) may change besides those: settings the learners read from
# the config whenever they use them, which no checkpoint holds. Settings the state holds (an
# optimiser's learning rate, a replay's alpha and beta) or that shape what is stored are not
# here: a branch would keep their old values or fail to load. A key joins with a test that a
# branch trains with its new value (tests/experiment/test_branch.py).
BRANCH_KEYS = ("dqn.new_priority", "dqn.time_limit_as_terminal")


def branchable(key: str) -> bool:
    """Whether a branch may change the dotted ``key``: a resumable key, or one of
    ``BRANCH_KEYS`` at the top level or in one policy's section (``policies.<id>.``)."""
    return key in RESUMABLE_KEYS or any(key == k or re.fullmatch(rf"policies\.[^.]+\.{re.escape(k)}", key) for k in BRANCH_KEYS)


# Sections added after runs existed: hashed only when set, so older run directories keep their hashes.
HASHED_WHEN_SET: dict[str, Any] = {
    "policies": {},
    "match": [],
    "scale": None,
    "report_group": None,
    "actor_critic": None,
    "dqn.algo": "dqn",
    "dqn.new_priority": "max",
    "qmix": None,
    "sharing.replay": "own",
    "sharing.correction": "none",
    "sharing.divergence": "sym_kl",
    "sharing.reference_cov": "sigma",
    "sharing.cov_regulariser": 1e-6,
    "sharing.jsd_samples": 256,
    "actor_critic.normalize_obs": False,
    "eval.policies": {},
    "eval.match": [],
    "eval.max_episode_steps": 27_000,
    "env.settings.walls": False,
    "env.groups": {},
    "env.settings.observe_occupied": False,
    "env.settings.release": "mpe2",
    "qmix.storage": "episodes",
    "qmix.bootstrap": "own",
    "relay": None,
    "shared_replay": None,
    "backend.learners": "driver",
    "backend.learner_cpus": 1.0,
    "policies.*.qmix.storage": "episodes",
    "policies.*.qmix.bootstrap": "own",
    "policies.*.of": None,
    "policies.*.qmix": {},
    "policies.*.agents": None,
    "policies.*.model": {},
    "eval.policies.*.model": {},
    "on_policy": None,
    "policies.*.on_policy": {},
    "eval.policies.*.on_policy": {},
    "centralised": None,
    "policies.*.centralised": {},
    "eval.policies.*.centralised": {},
    "eval.policies.*.agents": None,
    "policies.*.explore_from": None,
    "policies.*.explore_steps": 0,
    "eval.policies.*.explore_from": None,
    "eval.policies.*.explore_steps": 0,
    "rounds": [],
    "hooks": {"on_round_start": [], "on_round_end": []},
    "pbt": None,
    "pbt.perturb": ["lr"],
    "pbt.survivors": None,
    "on_policy.torso": "flat",
    "on_policy.minibatch_unit": "agent",
    "policies.*.on_policy.minibatch_unit": "agent",
    "eval.policies.*.on_policy.minibatch_unit": "agent",
    "tournament": None,
    "selfplay": None,
    "precision": "float32",
    "backend": {"kind": "local", "runners": 1, "address": None, "runner_cpus": 1.0, "fragment_steps": None},
}


def _drop_default(section: Any, parts: list[str], default: Any) -> None:
    """Removes the key at ``parts`` (``*`` matches every key at its level) where it holds
    ``default``."""
    if not isinstance(section, dict) or not parts:
        return
    head, rest = parts[0], parts[1:]
    for key in list(section) if head == "*" else [head]:
        if not rest:
            if key in section and section[key] == default:
                del section[key]
        else:
            _drop_default(section.get(key), rest, default)


def config_hash(config: "RunConfig") -> str:
    """Short hash of everything that changes the experiment: not the seed, the budget, or
    how it is executed (threads, device, checkpointing), so those may change on resume."""
    payload = config.model_dump(mode="json", exclude=RUNTIME_KEYS)
    for key, default in HASHED_WHEN_SET.items():
        _drop_default(payload, key.split("."), default)
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:8]


def config_changes(before: dict[str, Any], after: dict[str, Any], prefix: str = "") -> dict[str, tuple[Any, Any]]:
    """Dotted keys whose values differ between two config dumps, with (before, after). Keys
    present in one dump only (sections added in a later relayrl) are not changes."""
    changes: dict[str, tuple[Any, Any]] = {}
    for key in before.keys() & after.keys():
        old, new = before[key], after[key]
        if isinstance(old, dict) and isinstance(new, dict):
            changes.update(config_changes(old, new, f"{prefix}{key}."))
        elif old != new:
            changes[f"{prefix}{key}"] = (old, new)
    return changes


def _same_env(a: str, b: str) -> bool:
    """Names of one env section are implementations of the same dynamics (``pursuit`` and
    ``pursuit-pz``): a run may continue on the other one."""
    return a in ENVS and b in ENVS and ENVS[a].section is ENVS[b].section


def check_resumable(saved: dict[str, Any], config: "RunConfig", source: str) -> dict[str, tuple[Any, Any]]:
    """The changes from ``saved`` (a run's recorded config) to ``config`` if a resume may make
    them; else ConfigError listing the changes and the keys a resume may change."""
    changes = config_changes(saved, config.model_dump(mode="json"))
    refused = {k: v for k, v in changes.items() if k not in RESUMABLE_KEYS and not (k == "env.name" and _same_env(*v)) and not (k == "rounds" and _appended(*v))}
    if refused:
        from relayrl.experiment.presets import PRESETS  # the presets import the config, which imports this module

        shown = ", ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in sorted(refused.items()))
        # a run of a YAML file or a dict is named after it, not after a preset
        named = config.preset if config.preset in PRESETS else "<the YAML file or preset you trained from>"
        raise ConfigError(
            f"{source} was trained with other settings ({shown}). A resume may change only "
            f"{', '.join(RESUMABLE_KEYS)}, and add rounds after the run's; to train with new settings start a new run "
            f"(relayrl train {named} KEY=VALUE ... makes its own run directory)"
        )
    return changes


def _appended(before: Any, after: Any) -> bool:
    """Rounds added after a run's rounds, which stay as they were: a resume trains them on
    (the run directory keeps its name)."""
    return isinstance(before, list) and isinstance(after, list) and len(after) > len(before) > 0 and after[: len(before)] == before
