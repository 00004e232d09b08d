"""The AI Arena's schemes (paper 004, section 5): curriculum, population-based training,
tournament and self-play, each beside its baseline with the same env steps."""

from relayrl.arena.schemes.curriculum import curriculum
from relayrl.experiment.presets.common import Presets, merge
from relayrl.experiment.presets.predator_prey import PREDATOR_PREY_RUN, PREDATOR_PREY_SETTINGS, VALUE_DECOMPOSITION
from relayrl.experiment.presets.super import DDQN_OPPONENT, MAGENT_DQN, QUICKSTART


# Arena schemes (paper 004, section 5), each against a baseline with the same env steps.
# Curriculum (Fig. 8 in spirit): the small Predator-Prey game whose miscapture punishment
# rises round by round to the hard setting's -1.5, against 80k env steps at -1.5 from the
# start (docs/results/arena/README.md).
CURRICULUM_STEPS = 80_000
CURRICULUM_PUNISHMENTS = [0.0, -0.5, -1.0, -1.5]
# Population-based training (Fig. 13 in spirit): three QMIX teams on the small game, one env
# copy each, started at learning rates 3e-4, 1e-3 and 3e-3, exploit and explore every 10k
# env steps, against one QMIX team (learning rate 1e-3) on the same three copies.
PBT_STEPS = 80_000
PBT_ROUNDS = 8
PBT_LEARNING_RATES = {"p0": 3e-4, "p1": 1e-3, "p2": 3e-3}
# The same two schemes on Pursuit: the quickstart's small game (8 pursuers, 4 evaders, 8x8,
# 100-step episodes, the small Q-network) with SUPER-quantile teams. Curriculum: catches by
# n_catch pursuers on an evader's cell (no surround), n_catch 3, 4, 5, 6 over four rounds
# of 15k env steps, against 60k env steps at 6 from the start (from scratch, 30k steps
# reach a greedy ~43 at 3 and ~-36 at 6). PBT: three teams starting at bandwidths 0.03, 0.1
# and 0.3, learning rate, exploration and bandwidth perturbed, against one team at 0.1 on
# the same three copies.
PURSUIT_CURRICULUM_STEPS = 60_000
PURSUIT_CATCHES = [3, 4, 5, 6]
PURSUIT_PBT_BANDWIDTHS = {"p0": 0.03, "p1": 0.1, "p2": 0.3}
# Evolution over PPO on Atari Pong (paper 004, appendix A.1.1, Fig. 13): nine env copies;
# three PPO policies on three copies each, and every 250k env steps (a generation) the best
# member's networks and optimiser state are copied to the other two (no perturbation),
# against one PPO policy on all nine copies. The paper gives no PPO settings: these are
# PPO's Atari ones (Schulman et al. 2017, Table 5, as CleanRL's ppo_atari runs them): the
# Nature CNN torso shared by actor and critic, 128-step rollouts, 4 epochs of 4 minibatches,
# Adam 2.5e-4 annealed to 0, clip 0.1 (value clip 0.1), GAE(0.95), value coefficient 0.5,
# entropy 0.01, gradient norm 0.5, no value normalisation.
PONG_MEMBERS = ["p0", "p1", "p2"]
PONG_COPIES = 9
PONG_STEPS = 5_000_000
PONG_GENERATION = 250_000
PONG_PPO = {
    "algo": "ppo", "torso": "nature_cnn", "hidden": [], "agent_id": False, "rollout_length": 128, "epochs": 4, "minibatches": 4,
    "lr": 2.5e-4, "lr_anneal": True, "adam_eps": 1e-5, "gamma": 0.99, "gae_lambda": 0.95, "clip": 0.1, "value_clip": 0.1,
    "value_loss": "mse", "value_coef": 0.5, "entropy_coef": 0.01, "max_grad_norm": 0.5, "normalize_values": False,
}
# Round-robin tournament (Fig. 5): four independent-DDQN teams on MAgent2 battle 12x12 (2 v 2,
# 200-step games) and a uniformly random team as the fixed baseline every rating is read
# against; all 20 ordered pairings each round, 6 rounds of 20k env steps.
TOURNAMENT_POLICIES = ["p1", "p2", "p3", "p4"]
TOURNAMENT_ROUNDS = 6
TOURNAMENT_ROUND_STEPS = 20_000
# Self-play (section 5): blue (independent DDQN, 2 v 2 battle) trains against snapshots of
# itself, against training versus a frozen pretrained red (both teams co-trained, seed 0);
# both are evaluated against the same held-out red (the co-trained red of seed 1).
SELFPLAY_STEPS = 100_000
SELFPLAY_ROUNDS = 5


def arena_presets() -> Presets:
    small = PREDATOR_PREY_SETTINGS["-small"]
    _, env, learner, run = small
    base = merge(merge(PREDATOR_PREY_RUN, run), {"env": {"settings": env}, "qmix": {**learner, **VALUE_DECOMPOSITION["qmix"][1]}})
    base = merge(base, {"total_steps": CURRICULUM_STEPS, "checkpoint_interval": CURRICULUM_STEPS // len(CURRICULUM_PUNISHMENTS)})
    rounds = curriculum(CURRICULUM_STEPS // len(CURRICULUM_PUNISHMENTS), {"miscapture": CURRICULUM_PUNISHMENTS})
    hard = merge(base, {"env": {"settings": {"miscapture": -1.5}}})
    three = merge(base, {"env": {"num_envs": len(PBT_LEARNING_RATES)}, "total_steps": PBT_STEPS, "checkpoint_interval": PBT_STEPS // PBT_ROUNDS})
    population = {
        **three,
        "policies": {pid: {"qmix": {"lr": lr}} for pid, lr in PBT_LEARNING_RATES.items()},
        "match": [{"predator": pid} for pid in PBT_LEARNING_RATES],
        "rounds": [{"steps": PBT_STEPS // PBT_ROUNDS}] * PBT_ROUNDS,
        "pbt": {"population": list(PBT_LEARNING_RATES), "fraction": 0.34},
    }
    entrants = [*TOURNAMENT_POLICIES, "random"]
    tournament = {
        "env": {"name": "battle", "settings": {"map_size": 12, "max_cycles": 200}},
        "dqn": MAGENT_DQN,
        "policies": {**{pid: {} for pid in TOURNAMENT_POLICIES}, "random": {"kind": "random"}},
        "tournament": {"policies": entrants, "groups": ["red", "blue"]},
        "scale": 1,
        "rounds": [{"steps": TOURNAMENT_ROUND_STEPS}] * TOURNAMENT_ROUNDS,
        "report_group": "blue",
        "report_interval": 4000,
        "checkpoint_interval": TOURNAMENT_ROUND_STEPS,
        "eval": {"interval": 0},
    }
    small_battle = {
        "env": {"name": "battle", "num_envs": 4, "settings": {"map_size": 12, "max_cycles": 200}},
        "dqn": MAGENT_DQN,
        "total_steps": SELFPLAY_STEPS,
        "report_group": "blue",
        "report_interval": 4000,
        "checkpoint_interval": SELFPLAY_STEPS // SELFPLAY_ROUNDS,
    }
    held_out = {
        "interval": 10_000,
        "episodes": 32,
        "policies": {"held-out": {"kind": "frozen", "pretrained": "battle-2v2-pretrain", "pretrained_seed": 1, "pretrained_policy": "red", "dqn": DDQN_OPPONENT["dqn"]}},
        "match": [{"blue": "blue", "red": "held-out"}],
    }
    pretrain = {**small_battle, "policies": {"red": DDQN_OPPONENT}, "eval": {"interval": 0}}
    selfplay = {
        **small_battle,
        "policies": {"blue": {}, "red": {"kind": "snapshot", "of": "blue"}},
        "selfplay": {"learner": "blue", "opponent": "red", "groups": ["blue", "red"], "keep": 5},
        "rounds": [{"steps": SELFPLAY_STEPS // SELFPLAY_ROUNDS}] * SELFPLAY_ROUNDS,
        "eval": held_out,
    }
    frozen = {
        **small_battle,
        "policies": {"red": {"kind": "frozen", "pretrained": "battle-2v2-pretrain", "pretrained_seed": 0, "dqn": DDQN_OPPONENT["dqn"]}},
        "eval": held_out,
    }
    catching = merge(
        QUICKSTART,
        {
            "env": {"settings": {"surround": False, "n_catch": PURSUIT_CATCHES[-1]}},
            "total_steps": PURSUIT_CURRICULUM_STEPS,
            "eval": {"interval": 3_000, "episodes": 10},
            "checkpoint_interval": PURSUIT_CURRICULUM_STEPS // len(PURSUIT_CATCHES),
        },
    )
    catch_rounds = curriculum(PURSUIT_CURRICULUM_STEPS // len(PURSUIT_CATCHES), {"n_catch": PURSUIT_CATCHES})
    pursuit_three = merge(
        QUICKSTART,
        {
            "env": {"num_envs": len(PURSUIT_PBT_BANDWIDTHS)},
            "total_steps": PBT_STEPS,
            "eval": {"interval": 4_000, "episodes": 12},
            "checkpoint_interval": PBT_STEPS // PBT_ROUNDS,
        },
    )
    pursuit_population = {
        **pursuit_three,
        "policies": {pid: {"sharing": {"select": "quantile", "bandwidth": b}} for pid, b in PURSUIT_PBT_BANDWIDTHS.items()},
        "match": [{"pursuer": pid} for pid in PURSUIT_PBT_BANDWIDTHS],
        "rounds": [{"steps": PBT_STEPS // PBT_ROUNDS}] * PBT_ROUNDS,
        "pbt": {"population": list(PURSUIT_PBT_BANDWIDTHS), "fraction": 0.34, "perturb": ["lr", "exploration", "bandwidth"]},
    }
    pong = {
        "env": {"name": "atari", "num_envs": PONG_COPIES, "settings": {"game": "pong"}},
        "on_policy": PONG_PPO,
        "total_steps": PONG_STEPS,
        "report_interval": 50_000,
        "eval": {"interval": PONG_GENERATION, "episodes": 3},
        "checkpoint_interval": PONG_GENERATION,
    }
    pong_population = {
        **pong,
        "policies": {pid: {} for pid in PONG_MEMBERS},
        "match": [{"player": pid} for pid in PONG_MEMBERS],
        "rounds": [{"steps": PONG_GENERATION}] * (PONG_STEPS // PONG_GENERATION),
        "pbt": {"population": PONG_MEMBERS, "survivors": 1, "perturb": []},
    }
    return {
        "pursuit-small-curriculum-super": (
            "SUPER-quantile, small Pursuit, catches by 3, 4, 5, 6 pursuers over four rounds (curriculum)",
            {**catching, "rounds": catch_rounds},
        ),
        "pursuit-small-catch6-super": ("SUPER-quantile, small Pursuit, catches by 6 pursuers from the start (the curriculum's baseline)", catching),
        "pursuit-small-pbt-super": (
            "three SUPER teams (bandwidths 0.03, 0.1, 0.3), population-based training of lr, exploration and bandwidth every 10k env steps (small Pursuit)",
            pursuit_population,
        ),
        "pursuit-small-single-super": ("one SUPER team (bandwidth 0.1) on the three env copies of the population run (its baseline)", pursuit_three),
        "pong-pbt-ppo": (
            "three PPO policies on three Pong copies each; every 250k env steps the best one's networks replace the others' (paper 004, Fig. 13)",
            pong_population,
        ),
        "pong-ppo": ("one PPO policy on all nine Pong copies (the evolution's baseline, paper 004, Fig. 13)", pong),
        "battle-2v2-pretrain": ("both teams independent DDQN on battle 2 v 2: the frozen and held-out reds of the self-play example", pretrain),
        "battle-2v2-selfplay": ("blue DDQN against snapshots of itself, one drawn per 20k env steps (battle 2 v 2)", selfplay),
        "battle-2v2-vs-frozen": ("blue DDQN against a frozen co-trained red (battle 2 v 2): self-play's baseline", frozen),
        "battle-2v2-round-robin": ("four DDQN teams and a random one, every pairing each round, Elo ratings (MAgent2 battle 2 v 2)", tournament),
        "predator-prey-small-pbt-qmix": ("three QMIX teams, population-based training every 10k env steps (small Predator-Prey)", population),
        "predator-prey-small-single-qmix": ("one QMIX team on the three env copies of the population run (its baseline)", three),
        "predator-prey-small-hard-qmix": ("QMIX, small Predator-Prey, miscapture -1.5 from the start (the curriculum's baseline)", hard),
        "predator-prey-small-curriculum-qmix": (
            "QMIX, small Predator-Prey, miscapture 0, -0.5, -1.0, -1.5 over four rounds (curriculum)",
            {**base, "rounds": rounds},
        ),
    }
