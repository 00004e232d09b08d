"""Rounds and schemes from Python: two QMIX teams on the small Predator-Prey game, trained
with population-based training over a curriculum that raises the miscapture punishment
round by round. Runs in well under a minute; relayrl arena FILE.yaml takes the same keys."""

from relayrl.arena.schemes.curriculum import curriculum
from relayrl.experiment import build_config, preset_dict, train

config = preset_dict("predator-prey-small-qmix")
config.pop("total_steps")  # the rounds' steps add up to it
config.update(
    preset="arena-from-python",
    env={**config["env"], "num_envs": 2},
    policies={"a": {}, "b": {"qmix": {"lr": 3e-3}}},
    match=[{"predator": "a"}, {"predator": "b"}],
    rounds=curriculum(1500, {"miscapture": [0.0, -0.5, -1.0]}),
    pbt={"population": ["a", "b"], "fraction": 0.5},
    eval={"interval": 1500, "episodes": 4},
)
run = train(build_config(config), out="runs")
for row in run.rounds.schemes[0].rows:
    print(row)
