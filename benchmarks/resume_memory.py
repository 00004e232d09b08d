"""Peak memory of a resume: the replays' rows streamed from the checkpoint into the buffers
(``relayrl.core.stored_array``, what ``relayrl resume`` does) against every array read
first and then copied in (what a resume did before), each side in a fresh process.

    python benchmarks/resume_memory.py RUN_DIR

Builds the run from its ``config.yaml`` and loads its newest checkpoint into it, as a
resume does, without training. Prints, per side, the process's high-water mark (VmHWM)
before and after the load and its growth, beside the bytes of the replays' stored rows.
"""

import argparse
import subprocess
import sys
from pathlib import Path

ONE_SIDE = """
import sys
from pathlib import Path
import numpy as np
import yaml
from relayrl.experiment import build_config, build_run
from relayrl.core.tree_files import read_tree
from relayrl.experiment.checkpoint import STATE, list_checkpoints, load_checkpoint
from relayrl.replay.buffer import ROWS

def status(key):
    return int(next(line for line in open("/proc/self/status") if line.startswith(key)).split()[1]) // 1024

def rows_bytes(node, below=False):  # bytes of the replays' stored rows: the arrays below their ROWS keys
    if isinstance(node, dict):
        return sum(rows_bytes(v, below or k == ROWS) for k, v in node.items())
    if isinstance(node, (list, tuple)):
        return sum(rows_bytes(v, below) for v in node)
    return int(np.prod(node.shape)) * node.dtype.itemsize if below and hasattr(node, "shape") else 0

run_dir, side = Path(sys.argv[1]), sys.argv[2]
config = build_config(yaml.safe_load((run_dir / "config.yaml").read_text()))
run = build_run(config, None, verbose=False, runs_root=run_dir.parent.parent)  # where frozen opponents' runs are
before = status("VmHWM")
checkpoint = list_checkpoints(run_dir / "checkpoints")[-1]
state = load_checkpoint(checkpoint) if side == "streamed" else read_tree(checkpoint / STATE)  # every array read at once
replay = rows_bytes(state)
run.load_state_dict(state, str(checkpoint))
print(checkpoint.name, before, status("VmHWM"), replay // 2**20)
run.close()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    args = parser.parse_args()
    for side in ("streamed", "read first"):
        out = subprocess.run([sys.executable, "-c", ONE_SIDE, str(args.run_dir), side], check=True, capture_output=True, text=True)
        name, before, after, replay = out.stdout.split()
        print(f"{side:>10}: {name}, high-water mark {before} -> {after} MB (+{int(after) - int(before):,} MB), stored replay rows {int(replay):,} MB")


if __name__ == "__main__":
    main()
