import os

import torch

# Tests run on CPU with one intra-op thread (what the learner uses on small machines).
torch.set_num_threads(1)
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
