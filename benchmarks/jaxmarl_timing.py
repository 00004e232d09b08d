"""Times JaxMARL's own published training scripts on MPE simple_spread: QMIX
(``baselines/QLearning/qmix_rnn.py``, configs ``config.yaml`` + ``alg/ql_rnn_mpe.yaml``) and
MAPPO (``baselines/MAPPO/mappo_rnn_mpe.py``, config ``mappo_homogenous_rnn_mpe.yaml``).

JaxMARL is not a dependency of relayrl: its source is given by path and its scripts are
loaded from there; nothing of it is copied here. The script's ``make_train`` is built from
the published config (composed by hydra as the script's command line would), compiled
ahead of time, and the compiled call is timed apart from the compile:

    python benchmarks/jaxmarl_timing.py --jaxmarl-src PATH --algo qmix --steps 1e5
    python benchmarks/jaxmarl_timing.py --jaxmarl-src PATH --algo mappo --steps 1e6

``--set KEY=VALUE`` changes a config key and ``--curve FILE`` writes the learning curve
(what ``docs/results/mpe_spread`` compares with relayrl's run at the same settings).

One JSON object goes to stdout (everything else, JaxMARL's prints included, to stderr).

Stand-ins, inside this process only: the scripts import ``wandb`` at top level, so an
empty ``wandb`` (init/log/finish do nothing) is put in front of the import path unless
``--real-wandb`` is given; MAPPO still makes its per-update host callback to
``wandb.log``, as published. ``matplotlib``/``seaborn`` (imported at module level by
gymnax and by JaxMARL's visualisers, never used in training) are stood in for only when
they are not installed.
"""

import argparse
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import time
import types
from typing import Any

SCRIPTS = {
    "qmix": "baselines/QLearning/qmix_rnn.py",
    "mappo": "baselines/MAPPO/mappo_rnn_mpe.py",
}
RENDER_ONLY = ("matplotlib", "seaborn", "mpl_toolkits")


class _Anything:
    """Any attribute, call, index or iteration of it gives another (or nothing)."""

    def __getattr__(self, name: str) -> "_Anything":
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything()

    def __call__(self, *args: Any, **kwargs: Any) -> "_Anything":
        return _Anything()

    def __getitem__(self, key: Any) -> "_Anything":
        return _Anything()

    def __iter__(self):
        return iter(())


class _StandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finder of empty modules for the top-level names it is given."""

    def __init__(self, names: tuple[str, ...]):
        self.names = names
        self.used: set[str] = set()

    def find_spec(self, name, path, target=None):
        if name.split(".")[0] not in self.names:
            return None
        self.used.add(name)
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        return types.ModuleType(spec.name)

    def exec_module(self, module):
        module.__path__ = []
        if module.__name__ == "wandb":
            module.init = module.log = module.finish = lambda *a, **k: None
            module.config = {}
        else:
            module.__getattr__ = lambda name: _Anything()


def load_script(src: str, algo: str) -> types.ModuleType:
    path = os.path.join(src, SCRIPTS[algo])
    spec = importlib.util.spec_from_file_location(f"jaxmarl_baseline_{algo}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def published_config(src: str, algo: str) -> dict[str, Any]:
    """The config as the script's hydra entry point sees it (after OmegaConf.to_container)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    if algo == "qmix":
        config_dir, name = "baselines/QLearning/config", "config"
        overrides = ["+alg=ql_rnn_mpe", "alg.ENV_NAME=MPE_simple_spread_v3"]
    else:
        config_dir, name = "baselines/MAPPO/config", "mappo_homogenous_rnn_mpe"
        overrides = []
    with initialize_config_dir(config_dir=os.path.join(os.path.abspath(src), config_dir), version_base=None):
        config = OmegaConf.to_container(compose(config_name=name, overrides=overrides))
    if algo == "qmix":
        config = {**config, **config["alg"]}  # as qmix_rnn.single_run merges them
    return config


def timed(args: argparse.Namespace) -> dict[str, Any]:
    import jax

    module = load_script(args.jaxmarl_src, args.algo)
    config = published_config(args.jaxmarl_src, args.algo)
    config["TOTAL_TIMESTEPS"] = int(args.steps)
    config["NUM_SEEDS"] = 1
    if args.seed is not None:
        config["SEED"] = args.seed
    if args.num_envs is not None:
        config["NUM_ENVS"] = args.num_envs
    if args.algo == "qmix":
        config["TEST_DURING_TRAINING"] = bool(args.test_during_training)
    for item in args.set:  # KEY=VALUE, the value read as YAML (numbers, booleans)
        import yaml

        key, _, value = item.partition("=")
        config[key] = yaml.safe_load(value)

    start = time.perf_counter()
    rng = jax.random.PRNGKey(config["SEED"])
    if args.algo == "qmix":
        # qmix_rnn.single_run: jax.jit(jax.vmap(make_train(config, env)))(rngs)
        import copy

        env, _ = module.env_from_config(copy.deepcopy(config))
        fn = jax.jit(jax.vmap(module.make_train(config, env)))
        arg = jax.random.split(rng, config["NUM_SEEDS"])
    else:
        # mappo_rnn_mpe.main: jax.jit(make_train(config))(rng)
        fn = jax.jit(module.make_train(config))
        arg = rng
    setup_s = time.perf_counter() - start

    start = time.perf_counter()
    lowered = fn.lower(arg)
    lower_s = time.perf_counter() - start
    start = time.perf_counter()
    compiled = lowered.compile()
    xla_compile_s = time.perf_counter() - start

    run_times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        out = jax.block_until_ready(compiled(arg))
        run_times.append(time.perf_counter() - start)
    run_s = run_times[0]

    steps_per_update = config["NUM_ENVS"] * config["NUM_STEPS"]
    env_steps = steps_per_update * config["NUM_UPDATES"]
    n_agents = 3  # simple_spread_v3 default N=3
    if args.algo == "qmix":
        state = out["runner_state"][0]
        updates = int(state.grad_steps[0])
        # each gradient step: BUFFER_BATCH_SIZE stored episodes of NUM_STEPS joint steps
        samples_per_update = config["BUFFER_BATCH_SIZE"] * config["NUM_STEPS"] * config["NUM_EPOCHS"]
        samples_per_env_step = samples_per_update / steps_per_update
        effective = updates / config["NUM_EPOCHS"] * samples_per_update / env_steps
        env_steps_counted = int(state.timesteps[0])
    else:
        # each iteration: UPDATE_EPOCHS passes over the rollout in NUM_MINIBATCHES steps
        # (actor and critic each take one optimiser step per minibatch)
        updates = config["NUM_UPDATES"] * config["UPDATE_EPOCHS"] * config["NUM_MINIBATCHES"]
        samples_per_env_step = float(config["UPDATE_EPOCHS"])
        effective = samples_per_env_step
        env_steps_counted = env_steps
    return {
        "algo": args.algo,
        "env": config["ENV_NAME"],
        "env_steps": env_steps,
        "env_steps_counted_by_script": env_steps_counted,
        "setup_s": round(setup_s, 3),
        "compile_s": round(lower_s + xla_compile_s, 3),
        "trace_lower_s": round(lower_s, 3),
        "xla_compile_s": round(xla_compile_s, 3),
        "run_s": round(run_s, 3),
        "run_s_all": [round(t, 3) for t in run_times],
        "sps": round(env_steps / run_s, 1),
        "iterations": config["NUM_UPDATES"],
        "updates": updates,
        "updates_per_s": round(updates / run_s, 2),
        "samples_per_env_step": samples_per_env_step,
        "samples_per_env_step_effective": round(effective, 4),
        "agent_samples_per_env_step": samples_per_env_step * n_agents,
        "test_during_training": bool(config.get("TEST_DURING_TRAINING", False)) if args.algo == "qmix" else None,
        "config": {k: config[k] for k in sorted(config) if k.isupper() and not isinstance(config[k], dict)},
        "jax_version": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


class Recorder(types.ModuleType):
    """A ``wandb`` stand-in that keeps what the script logs: QMIX's published script reports
    its metrics only through ``wandb.log`` (a host callback per update, when WANDB_MODE is
    not ``disabled``), so ``--curve`` sets WANDB_MODE=online with this in its place."""

    def __init__(self) -> None:
        super().__init__("wandb")
        self.rows: list[dict[str, float]] = []

    def log(self, metrics: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        self.rows.append({k: float(v) for k, v in metrics.items() if getattr(v, "size", 1) == 1})

    def init(self, *args: Any, **kwargs: Any) -> None:
        return None

    def finish(self, *args: Any, **kwargs: Any) -> None:
        return None


def write_curve(path: str, rows: list[dict[str, float]]) -> None:
    """Every scalar the script logged, one row per training iteration, ``env_step`` first.
    QMIX: ``returned_episode_returns`` and the greedy test's ``test_returned_episode_returns``
    (refreshed every TEST_INTERVAL of the training); MAPPO: ``returns``, the mean return of
    each env's last finished episode. JaxMARL's MPE log multiplies each agent's return by
    the number of agents and averages them: the team's sum."""
    columns = list(dict.fromkeys(["env_step", *(name for row in rows for name in row)]))
    with open(path, "w") as handle:
        handle.write(",".join(columns) + "\n")
        for row in rows:
            handle.write(",".join(f"{row.get(name, float('nan')):.6g}" for name in columns) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jaxmarl-src", default=os.environ.get("JAXMARL_SRC", ".jaxmarl"), help="root of a JaxMARL source tree (holds jaxmarl/ and baselines/)")
    parser.add_argument("--algo", choices=sorted(SCRIPTS), required=True)
    parser.add_argument("--steps", type=float, required=True, help="TOTAL_TIMESTEPS")
    parser.add_argument("--num-envs", type=int, default=None, help="override NUM_ENVS")
    parser.add_argument("--seed", type=int, default=None, help="override SEED (default: the config's)")
    parser.add_argument("--repeat", type=int, default=1, help="timed calls of the compiled function (run_s is the first)")
    parser.add_argument("--test-during-training", action="store_true", help="qmix: keep the greedy test rollouts (published default True; off unless given)")
    parser.add_argument("--real-wandb", action="store_true", help="import the installed wandb instead of the stand-in")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config key (e.g. EPS_DECAY=1.0)")
    parser.add_argument("--curve", help="write the learning curve (env steps, training and greedy test returns) as CSV here")
    args = parser.parse_args()

    recorder = Recorder() if args.curve else None
    if recorder is not None:
        sys.modules["wandb"] = recorder
        args.set.append("WANDB_MODE=online")
    elif not args.real_wandb:
        sys.meta_path.insert(0, _StandIn(("wandb",)))
    render = _StandIn(RENDER_ONLY)
    sys.meta_path.append(render)  # last: only when the real package is not installed
    sys.path.insert(0, os.path.abspath(args.jaxmarl_src))

    # JSON alone on stdout: fd 1 goes to stderr while JaxMARL runs (it prints at import,
    # and its mabrax module resets sys.stdout to sys.__stdout__, so no redirect_stdout)
    sys.stdout.flush()
    report = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    if args.real_wandb:
        import wandb

        wandb.init(mode="disabled")
    result = timed(args)
    if recorder is not None:
        write_curve(args.curve, recorder.rows)
    result["stand_ins"] = sorted({n.split(".")[0] for n in render.used} | (set() if args.real_wandb else {"wandb"}))
    sys.stdout.flush()
    report.write(json.dumps(result) + "\n")
    report.flush()


if __name__ == "__main__":
    main()
