"""backend ray on a local cluster of several nodes (``ray.cluster_utils.Cluster``): an env
runner killed mid-run, or the node it ran on removed, is replaced and the run goes on with
nothing lost but what the runner held (its copies' episodes in flight end as truncations);
a learner actor killed mid-run restarts from its last checkpoint (a learner of a shared
replay keeps its rows there); a driver killed mid-run
resumes from its last checkpoint and ends as an uninterrupted run."""

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import yaml

from relayrl.experiment import Run, build_run, build_config
from relayrl.experiment.checkpoint import checkpoint_steps, list_checkpoints
from round_runs import rows, shared_replay_config

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")
TIMING = ("sps", "updates_per_s", "wall_s")
STORE = 80 * 1024**2  # each node's object store: fragments are small


@pytest.fixture(scope="module")
def cluster():
    """A head node without CPUs (the driver's) and three worker nodes of 2 CPUs."""
    address = os.environ.get("RAY_ADDRESS")  # the cluster sets it; later tests start their own Ray
    made = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": STORE})
    nodes = [made.add_node(num_cpus=2, object_store_memory=STORE) for _ in range(3)]
    made.wait_for_nodes()
    ray.init(address=made.address, log_to_driver=False)
    yield made, nodes
    ray.shutdown()
    made.shutdown()
    if address is None:
        os.environ.pop("RAY_ADDRESS", None)
    else:
        os.environ["RAY_ADDRESS"] = address


def _config(total_steps: int, **extra) -> dict:
    """SUPER-quantile on the corridor, 3 copies over 2 runners of 2 CPUs (one node each)."""
    return {
        "preset": "ray-faults",
        "env": {"name": "corridor", "num_envs": 3, "settings": {"n_agents": 3, "length": 4, "max_steps": 12}},
        "total_steps": total_steps,
        "sharing": {"select": "quantile"},
        "report_interval": 300,
        "checkpoint_interval": 600,
        "eval": {"interval": 0},
        "model": {"hiddens": [16], "head_hidden": 16},
        "dqn": {"learning_starts": 100, "buffer_size": 5000, "batch_size": 8},
        "backend": {"kind": "ray", "runners": 2, "runner_cpus": 2},
        **extra,
    }


def _kill_when(run: Run, env_steps: int, kill) -> threading.Thread:
    """Calls ``kill(runners)`` from another thread once the run passed ``env_steps``."""

    def watch() -> None:
        while run.collector.runners is None or run.counters.env_steps < env_steps:
            time.sleep(0.005)
        kill(run.collector.runners)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def _stored_and_pending(run: Run) -> int:
    """The agent steps the learner holds: replay rows and n-step windows still waiting."""
    learner = run.learners["runner"]
    pending = learner.nstep.pending
    return int(learner.replay.size.sum()) + (0 if pending is None else int(pending["valid"].sum()))


def _train_with_a_kill(config: dict, run_dir, kill, capsys) -> tuple[Run, str]:
    run = build_run(build_config(config), run_dir, verbose=False)
    watcher = _kill_when(run, 900, kill)
    run.train()
    watcher.join(timeout=5)
    held = _stored_and_pending(run)
    assert held == run.counters.agent_steps, "every delivered step is in the replay or waiting for its window"
    run.close()
    return run, capsys.readouterr().err


def test_a_killed_runner_is_replaced_and_the_run_goes_on(cluster, tmp_path, capsys):
    config = _config(1800, sharing={"select": "none"})  # no relay: each agent's replay holds its own steps only
    run, err = _train_with_a_kill(config, tmp_path / "run", lambda runners: ray.kill(runners.actors[1]), capsys)
    assert "env runner 1 (copies 2-2) died" in err and err.count("died") == 1
    table = rows(tmp_path / "run" / "metrics.csv", TIMING)
    assert [int(r["env_steps"]) for r in table] == [300 * k for k in range(1, 7)]  # every env step was delivered
    assert all(int(r["episodes"]) > 0 for r in table[3:])  # and episodes go on finishing after the kill
    assert run.counters.env_steps == 1800


@pytest.mark.slow  # a runner replaced after its node is gone; a killed runner is replaced the same way in the default run
def test_a_lost_node_takes_its_runner_with_it_and_a_free_node_runs_the_new_one(cluster, tmp_path, capsys):
    made, nodes = cluster

    def remove_node_of_runner_0(runners) -> None:
        node_id = ray.get(runners.actors[0].node.remote())
        (node,) = [n for n in nodes if n.node_id == node_id]
        made.remove_node(node)
        nodes.remove(node)

    config = _config(3000, sharing={"select": "none"})
    _, err = _train_with_a_kill(config, tmp_path / "run", remove_node_of_runner_0, capsys)
    assert "env runner 0 (copies 0-1) died" in err
    alive = {n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0}
    assert len(alive) == 2


@pytest.mark.slow  # about 100 s; a killed learner actor of a shared replay (below) restarts the same way in the default run
def test_a_killed_learner_actor_restarts_from_its_last_checkpoint(cluster, tmp_path, capsys):
    config = _config(
        3000,
        env={"name": "corridor", "num_envs": 2, "settings": {"n_agents": 3, "length": 4, "max_steps": 12}},
        policies={"a": {}, "b": {}},
        match=[{"runner": "a"}, {"runner": "b"}],
        backend={"kind": "ray", "runners": 2, "runner_cpus": 1, "learners": "actors", "learner_cpus": 1},
    )
    run = build_run(build_config(config), tmp_path / "run", verbose=False)
    watcher = _kill_when(run, 900, lambda _: ray.kill(run.learners.remote["a"].actor))
    run.train()
    watcher.join(timeout=5)
    run.close()
    assert "the learner actor of policy 'a' died" in capsys.readouterr().err
    assert [int(r["env_steps"]) for r in rows(tmp_path / "run" / "metrics.csv", TIMING)] == [300 * k for k in range(1, 11)]
    a, b = run.learners["a"], run.learners["b"]  # the same schedule, but a went back to its state at 600
    lost = (b.updates - a.updates) / b.updates  # 300 of the 2,900 env steps that earn updates: about 0.1 (from scratch: 0.28)
    assert 0.05 < lost < 0.15 and a.replay.size.sum() < b.replay.size.sum()


def _shared_replay_config() -> dict:
    """Two TD3 learner actors on Pendulum, one replay in an actor of its own."""
    return shared_replay_config(
        total_steps=1200, report_interval=300, checkpoint_interval=400,
        actor_critic={"random_steps": 100, "buffer_size": 5000, "batch_size": 16, "hidden": [16]},
        backend={"kind": "ray", "runners": 1, "runner_cpus": 1, "learners": "actors", "learner_cpus": 1, "fragment_steps": 10},
    )


def _agents_held(run: Run) -> np.ndarray:
    """How many rows of each agent the shared replay holds at the run's end."""
    held = run.learners.exchanges[0].replay.gather(np.arange(run.learners.exchanges[0].replay.size))
    return np.bincount(held["agent"], minlength=2)


def test_a_killed_learner_of_a_shared_replay_restarts_from_its_last_checkpoint_and_the_replay_keeps_its_rows(cluster, tmp_path, capsys):
    run = build_run(build_config(_shared_replay_config()), tmp_path / "run", verbose=False)
    watcher = _kill_when(run, 600, lambda _: ray.kill(run.learners.remote["a"].actor))
    run.train()
    watcher.join(timeout=5)
    run.close()
    assert "the learner actor of policy 'a' died" in capsys.readouterr().err
    a, b = run.learners["a"], run.learners["b"]  # a went back to its state at 400 (or 800)
    assert a.updates < b.updates == 1110  # one per env step from the fragment that reached step 100
    counts = _agents_held(run)
    # the rows live in the replay's actor: a loses at most the fragment it was observing when it died
    assert counts[1] == 1200 and 1200 - 10 <= counts[0] <= 1200


def _kill(actor) -> None:
    ray.kill(actor)
    with pytest.raises(ray.exceptions.RayActorError):
        for _ in range(200):  # until the kill has landed
            ray.get(actor.ready.remote())
            time.sleep(0.05)


# the kill between fragments is the easier case of the two (slow: run on demand)
@pytest.mark.parametrize(("when", "held"), [pytest.param("between fragments", 1000, marks=pytest.mark.slow), ("while the learners draw", 990)])
def test_a_killed_shared_replay_actor_restarts_from_its_last_checkpoint(cluster, tmp_path, capsys, when, held):
    run = build_run(build_config(_shared_replay_config()), tmp_path / "run", verbose=False)
    iteration = run.iteration

    def kill_at_600() -> None:
        shared = run.learners.shared_replay
        if when == "between fragments" and run.counters.env_steps == 600:
            _kill(shared.actor)
        elif when == "while the learners draw" and not hasattr(shared, "killed"):
            add = shared.add

            def add_then_kill(boxes):  # the rows of the fragment from 600 go in, then the actor dies before any draw
                size = add(boxes)
                if run.counters.env_steps == 610:
                    _kill(shared.actor)
                return size

            shared.add, shared.killed = add_then_kill, True
        iteration()

    run.iteration = kill_at_600
    run.train()
    run.close()
    assert "the shared replay's actor died" in capsys.readouterr().err
    a, b = run.learners["a"], run.learners["b"]
    assert a.updates == b.updates == 1110  # the learners go on drawing from the restarted replay
    # it went back to its rows at the checkpoint of env step 400: the steps after it until the kill are lost
    np.testing.assert_array_equal(_agents_held(run), [held, held])


def test_a_killed_driver_resumes_from_its_last_checkpoint_and_ends_as_an_uninterrupted_run(cluster, tmp_path):
    made, _ = cluster
    config = _config(900, checkpoint_interval=300, backend={"kind": "ray", "runners": 2, "runner_cpus": 1, "address": made.address})
    straight = build_run(build_config(config), tmp_path / "straight", verbose=False)
    straight.train()
    straight.close()
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    cmd = [sys.executable, "-m", "relayrl.cli", "train", str(path), "--out", str(tmp_path / "crashed")]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while time.time() < deadline and not list((tmp_path / "crashed").glob("*/0/checkpoints/step_*")):
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before its first checkpoint: nothing to kill"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    (run_dir,) = list((tmp_path / "crashed").glob("*/0"))
    (checkpoint,) = list_checkpoints(run_dir / "checkpoints")
    assert checkpoint_steps(checkpoint) == 300  # killed between its first checkpoint and its last
    resumed = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert rows(run_dir / "metrics.csv", TIMING) == rows(tmp_path / "straight" / "metrics.csv", TIMING)


def _ray_processes_in_group(group: int) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            name = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[0].decode(errors="replace")
            if os.getpgid(int(pid)) == group and name.startswith("ray::"):
                found.append(f"{pid} {name}")
        except OSError:
            pass
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="the reaper reads /proc (Linux)")
def test_a_driver_killed_by_sigkill_leaves_no_ray_processes_behind():
    """A local Ray instance's agents (DashboardAgent, RuntimeEnvAgent) outlive a SIGKILLed
    driver unless something ends them: relayrl's reaper does, within seconds."""
    script = ("import os\nfrom relayrl.arena.ray.runners import start_ray\nray, _ = start_ray(None, 1)\n"
              "print(ray.get(ray.remote(lambda: 1).remote()), flush=True)\nos.kill(os.getpid(), 9)\n")
    driver = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    assert driver.stdout.readline().strip() == "1"  # Ray ran a task, its agents are up
    driver.wait(timeout=60)
    deadline = time.monotonic() + 30
    while _ray_processes_in_group(driver.pid) and time.monotonic() < deadline:
        time.sleep(1)
    assert _ray_processes_in_group(driver.pid) == []
