"""Red's alive share in Battle: the share of red's entity-steps in which its agents act (each of
the reference's frozen red agents counts its epsilon schedule in these). Blue acts as training
does at env step 50,000 (epsilon 0.05), with fresh networks or a run's last checkpoint.

    python alive_share.py RUNS_ROOT [BLUE_RUN_DIR] [ENV_STEPS]

RUNS_ROOT holds the complete battle-pretrain run (red's networks); the measurement builds a
throwaway run directory under it (``alive-share/0``).
"""

import sys
from pathlib import Path

import numpy as np

from relayrl.experiment import apply_overrides, build_config, build_run, load_policies, preset_dict
from relayrl.experiment.checkpoint import list_checkpoints

root = Path(sys.argv[1])
blue = sys.argv[2] if len(sys.argv) > 2 else ""
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
config = build_config(apply_overrides(preset_dict("battle-ddqn"), ["dqn.buffer_size=2000", "torch_threads=1", "preset=alive-share"]))
run = build_run(config, root / "alive-share" / "0", verbose=False, runs_root=root)
if blue:
    source = list_checkpoints(Path(blue) / "checkpoints")[-1]
    run.policies["blue"].load_policy_state(load_policies(source)["blue"], str(source))
run.start()
valid, over = [], []
for _ in range(steps):
    seen, _, _, ended = run.collector.rollout.step(50_000)
    valid.append(seen["red"]["valid"])
    over.append(ended)
print(f"red alive share {np.concatenate(valid).mean():.3f} over {steps} env steps, {int(np.concatenate(over).sum())} episodes ended")
