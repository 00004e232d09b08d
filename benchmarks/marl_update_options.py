"""Options for the QMIX and MAPPO updates at JaxMARL's MPE configs, each against the
alternative in one process, interleaved (this VM's speed drifts by +-20% between processes, so separate runs
cannot resolve a 10-20% change): CPU time per call, the median of 15 rounds of 10 calls.

- ``compile``: the agent network's unroll (encoder, the GRU stepped in Python, head) under
  ``torch.compile(fullgraph=True)``, forward and backward, against the eager unroll that
  runs the recurrence in torch's fused GRU (relayrl's default); the compile time apart.
- ``mixer``: QMIX's mixer with its two per-row products as multiply-and-sum instead of
  batched matmuls of 1-row matrices (rounding differs in the last bits).
- ``threads``: one update of the whole learner with torch's 1 and 2 intra-op threads.
- ``native``: MAPPO's whole loop (rollouts and updates) with the sequence node's loops over
  time in C++ (``relayrl.nets.native``, the default where a compiler is present) and in
  Python (``RELAYRL_NATIVE=0``): the same values, two runs of one seed in alternation.
- ``fused``: QMIX's whole update with its agents' recurrence in ``FusedOrderGRU`` (the C++
  loops in the order torch's GRU computes and sums: relayrl's default where a compiler is
  present) and in torch's GRU (``RELAYRL_NATIVE=0``); the parameters after 5 updates each
  way are compared bit for bit.
- ``gru``: the recurrence forward + backward in one autograd node with its
  backpropagation written out (``GRUSequence``, what the policy-gradient nets use; its
  loops in Python and in C++) against torch's fused GRU in pieces between episode starts
  (what QMIX's agents use), at MAPPO's chunks (12 and 4 rows of 128 steps, GRU 128,
  episodes of 25 steps) and at QMIX's batch (96 rows of 26 steps, GRU 64).
- ``update``: QMIX's whole loss (``ValueDecomposition.losses``) under ``torch.compile``
  in the learner's update, against the eager update; the compile time apart. Also with
  inductor's C++ wrapper (``cpp_wrapper``: the compiled graph's kernel calls made from C++
  instead of Python).
- ``act``: QMIX's acting network step (inputs, agent network, greedy actions: the tensor
  part of ``ValueDecomposition.act`` for 8 games) compiled, plain and with the C++
  wrapper, against eager.
- ``pair``: MAPPO's actor and critic recurrences in one sequence node of two parameter
  sets, against a node each (at 12 and 48 rows).
- ``step``: one GRU step's gate arithmetic compiled on its own against eager: the cost of a
  compiled call at this size.

    python benchmarks/marl_update_options.py [--only native,fused,compile,mixer,threads,gru,update,act,pair,step]
"""

import argparse
import copy
import os
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from relayrl.nets.gru import RecurrentQNetwork
from relayrl.nets.mixers import QMixer

# JaxMARL's ql_rnn_mpe on simple_spread: 32 sequences of 26 steps, 3 agents, GRU 64; the
# agent sees 18 observation features, its one-hot index (3) and its last action (5)
EPISODES, STEPS, AGENTS, OBS, HIDDEN, ACTIONS, STATE = 32, 26, 3, 18 + 3 + 5, 64, 5, 54


def interleaved(calls: dict[str, Callable[[], object]], rounds: int = 15, per_round: int = 10) -> dict[str, float]:
    """Median CPU milliseconds per call of each callable, timed in alternation."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.process_time()
            for _ in range(per_round):
                call()
            times[name].append((time.process_time() - start) / per_round * 1000)
    return {name: sorted(t)[len(t) // 2] for name, t in times.items()}


def compile_case() -> str:
    torch.manual_seed(0)
    rows = EPISODES * AGENTS
    net = RecurrentQNetwork(1, OBS, ACTIONS, HIDDEN)
    x, w = torch.randn(1, STEPS, rows, OBS), torch.randn(1, STEPS, rows, ACTIONS)

    def stepped(x: torch.Tensor) -> torch.Tensor:
        p, t, b, _ = x.shape
        projected = net.cell.inputs(torch.relu(net.encoder(x.reshape(p, t * b, -1)))).reshape(p, t, b, -1)
        h, states = net.initial(p, b), []
        for k in range(t):
            h = net.cell.step(projected[:, k], h)
            states.append(h)
        return (net.head(torch.stack(states, 1).reshape(p, t * b, -1)).reshape(p, t, b, -1) * w).sum()

    start = time.perf_counter()
    compiled = torch.compile(stepped, fullgraph=True, dynamic=False)
    compiled(x).backward()
    seconds = time.perf_counter() - start
    ms = interleaved({"eager": lambda: (net.unroll(x, net.initial(1, rows)) * w).sum().backward(), "compiled": lambda: compiled(x).backward()})
    return (f"agent unroll forward+backward ({EPISODES} x {AGENTS} rows, {STEPS} steps, GRU {HIDDEN}): eager (fused GRU) {ms['eager']:.2f} ms, "
            f"torch.compile {ms['compiled']:.2f} ms ({ms['eager'] / ms['compiled']:.2f}x), compiled in {seconds:.0f} s")


def mixer_case() -> str:
    torch.manual_seed(0)
    mixer = QMixer(AGENTS, STATE, 32, 128)
    q, state = torch.randn(EPISODES, STEPS, AGENTS, requires_grad=True), torch.randn(EPISODES, STEPS, STATE)

    def multiply_and_sum() -> torch.Tensor:
        s = state.reshape(-1, STATE)
        w1 = mixer.w1(s).abs().view(-1, AGENTS, mixer.embed)
        hidden = F.elu((q.reshape(-1, AGENTS, 1) * w1).sum(1) + mixer.b1(s))
        return ((hidden * mixer.w2(s).abs()).sum(-1) + mixer.v(s).view(-1)).view(q.shape[:-1])

    gap = (mixer(q, state) - multiply_and_sum()).abs().max().item()
    ms = interleaved({"bmm": lambda: mixer(q, state).sum().backward(), "mul": lambda: multiply_and_sum().sum().backward()})
    return f"QMIX mixer forward+backward: batched matmuls {ms['bmm']:.2f} ms, multiply-and-sum {ms['mul']:.2f} ms ({ms['bmm'] / ms['mul']:.2f}x; largest difference {gap:.1e})"


def qmix_learner() -> tuple[Any, Any, dict[str, Any]]:
    """A run of QMIX at JaxMARL's config trained 4,000 env steps, its learner and one span
    of its replay (32 episodes)."""
    from relayrl.experiment import build_config, build_run
    from relayrl.experiment.presets import preset_dict

    config = preset_dict("spread-qmix-jaxmarl")
    config.update({"preset": "options", "total_steps": 4000, "report_interval": 4000, "eval": {"interval": 0}, "checkpoint_interval": 10**9})
    run = build_run(build_config(config), None, verbose=False)
    run.train()
    (learner,) = [run.learners[name] for name in run.learners]
    slots, _, reused = learner._draw()
    return run, learner, learner.storage.spans(learner.storage.gather(slots, reused), learner.rng)



def fused_case() -> str:
    run, learner, span = qmix_learner()

    def native(on: bool, call: Callable[[], object]) -> Callable[[], None]:
        def switched() -> None:
            os.environ["RELAYRL_NATIVE"] = "1" if on else "0"
            try:
                call()
            finally:
                os.environ.pop("RELAYRL_NATIVE", None)

        return switched

    try:
        torchs, ours = copy.deepcopy(learner.algorithm), copy.deepcopy(learner.algorithm)
        for _ in range(5):
            native(False, lambda: torchs.update(span))()
            native(True, lambda: ours.update(span))()
        same = all(torch.equal(a, b) for a, b in zip(torchs.agent.parameters(), ours.agent.parameters()))
        update = learner.algorithm.update
        ms = interleaved({"torch": native(False, lambda: update(span)), "fused": native(True, lambda: update(span))}, rounds=15, per_round=5)
    finally:
        run.close()
    return (f"QMIX update (32 episodes): torch's GRU {ms['torch']:.1f} ms, FusedOrderGRU {ms['fused']:.1f} ms "
            f"({ms['torch'] / ms['fused']:.2f}x); parameters after 5 updates identical: {same}")


def threads_case() -> str:
    run, learner, span = qmix_learner()
    try:

        def update(threads: int) -> None:
            torch.set_num_threads(threads)
            learner.algorithm.update(span)

        times: dict[str, list[float]] = {"1": [], "2": []}
        for _ in range(15):  # wall time: CPU time counts both threads
            for threads in (1, 2):
                start = time.perf_counter()
                for _ in range(10):
                    update(threads)
                times[str(threads)].append((time.perf_counter() - start) / 10 * 1000)
        one, two = (sorted(times[k])[7] for k in ("1", "2"))
    finally:
        run.close()
        torch.set_num_threads(1)
    return f"one QMIX update (learner, 32 episodes): 1 thread {one:.1f} ms, 2 threads {two:.1f} ms ({one / two:.2f}x; wall clock)"


def update_case() -> str:
    """The learner's whole loss (``ValueDecomposition.losses``: both agent unrolls, both
    mixers, the targets) under ``torch.compile``, plain and with inductor's C++ wrapper,
    backward and Adam as they are, against the eager update, on copies of the same learner."""
    import torch._inductor.config as inductor

    run, learner, span = qmix_learner()
    try:
        eager = learner.algorithm
        learners, seconds = {"eager": eager}, {}
        for name, options in (("compiled", {}), ("cpp wrapper", {"cpp_wrapper": True})):
            compiled = copy.deepcopy(eager)  # its optimizer and clipped list follow onto the copy's parameters
            with inductor.patch(options):
                compiled.losses = torch.compile(compiled.losses, fullgraph=True, dynamic=False)
                start = time.perf_counter()
                compiled.update(span)
                seconds[name] = time.perf_counter() - start
            learners[name] = compiled
        ms = interleaved({name: (lambda a=algorithm: a.update(span)) for name, algorithm in learners.items()})
    finally:
        run.close()
    return (f"one QMIX update (learner, 32 episodes): eager {ms['eager']:.1f} ms, loss compiled {ms['compiled']:.1f} ms "
            f"({ms['eager'] / ms['compiled']:.2f}x, compiled in {seconds['compiled']:.0f} s), with the C++ wrapper "
            f"{ms['cpp wrapper']:.1f} ms ({ms['eager'] / ms['cpp wrapper']:.2f}x, compiled in {seconds['cpp wrapper']:.0f} s)")


def act_case() -> str:
    """QMIX's acting step for JaxMARL's 8 games (inputs, agent network, greedy actions: the
    tensor part of ``ValueDecomposition.act``) compiled, plain and with the C++ wrapper,
    against eager."""
    import torch._inductor.config as inductor

    run, learner, _ = qmix_learner()
    try:
        algorithm, games = learner.algorithm, 8
        obs, last, h = torch.randn(games, AGENTS, 18), torch.zeros(games, AGENTS, ACTIONS), torch.randn(games, AGENTS, HIDDEN)

        def greedy(obs: torch.Tensor, last: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            q, h = algorithm.agent(algorithm._to_sets(algorithm._inputs(obs, last)), algorithm._to_sets(h))
            return algorithm._from_sets(q, (games,)).argmax(dim=-1), algorithm._from_sets(h, (games,))

        steps = {"eager": greedy}
        with torch.no_grad():
            for name, options in (("compiled", {}), ("cpp wrapper", {"cpp_wrapper": True})):
                with inductor.patch(options):
                    steps[name] = torch.compile(lambda *a: greedy(*a), fullgraph=True, dynamic=False)  # a new function: its own cache entry
                    steps[name](obs, last, h)
            us = {k: v * 1000 for k, v in interleaved({name: (lambda f=f: f(obs, last, h)) for name, f in steps.items()}, per_round=200).items()}
    finally:
        run.close()
    return (f"QMIX's acting network step (8 games): eager {us['eager']:.0f} us, compiled {us['compiled']:.0f} us "
            f"({us['eager'] / us['compiled']:.2f}x), with the C++ wrapper {us['cpp wrapper']:.0f} us ({us['eager'] / us['cpp wrapper']:.2f}x)")


def gru_case() -> str:
    from relayrl.nets.gru import StackedGRUCell, fused_unroll

    lines = []
    for rows, steps, hidden, episode in ((12, 128, 128, 25), (4, 128, 128, 25), (EPISODES * AGENTS, STEPS, HIDDEN, STEPS)):
        torch.manual_seed(0)
        cell = StackedGRUCell(1, hidden, hidden)
        x = torch.randn(steps, rows, hidden)  # the cell's input, before its projection
        h, w = torch.zeros(1, rows, hidden), torch.randn(1, steps, rows, hidden)
        begins = torch.zeros(1, steps, rows, dtype=torch.bool)
        begins[:, ::episode] = True

        def fused() -> None:  # relayrl's fused_unroll between episode starts, every row starting together
            states = torch.cat([fused_unroll(cell, x[lo : lo + episode], h[0]) for lo in range(0, steps, episode)])
            (states.unsqueeze(0) * w).sum().backward()

        def sequence(loops: str) -> Callable[[], None]:
            def call() -> None:
                os.environ["RELAYRL_NATIVE"] = loops
                projected = cell.inputs(x.reshape(1, steps * rows, -1)).reshape(1, steps, rows, -1)
                (cell.unroll(projected, h, keep=~begins) * w).sum().backward()

            return call

        ms = interleaved({"fused": fused, "python": sequence("0"), "cpp": sequence("1")}, per_round=5)
        lines.append(
            f"{rows} rows x {steps} steps, GRU {hidden}: fused {ms['fused']:.1f} ms, sequence node with Python loops {ms['python']:.1f} ms "
            f"({ms['fused'] / ms['python']:.2f}x), with C++ loops {ms['cpp']:.1f} ms ({ms['fused'] / ms['cpp']:.2f}x; {ms['python'] / ms['cpp']:.2f}x the Python loops)"
        )
    os.environ.pop("RELAYRL_NATIVE")
    return "GRU forward+backward: " + "; ".join(lines)


def native_case() -> str:
    """MAPPO at JaxMARL's config, whole rollouts (128 steps of 16 copies, then the update of
    4 epochs x 4 minibatches), with the sequence node's C++ loops and with its Python loops:
    two runs of the same seed trained in alternation, a rollout each per turn."""
    from relayrl.experiment import build_config, build_run
    from relayrl.experiment.presets import preset_dict

    config = preset_dict("spread-mappo-jaxmarl")
    config.update({"preset": "options", "report_interval": 10**9, "eval": {"interval": 0}, "checkpoint_interval": 10**9})
    runs = {loops: build_run(build_config(config), None, verbose=False) for loops in ("0", "1")}
    try:
        for run in runs.values():
            run.start()

        def rollout(loops: str) -> Callable[[], None]:
            def call() -> None:
                os.environ["RELAYRL_NATIVE"] = loops
                run, before = runs[loops], runs[loops].updates
                while runs[loops].updates == before:
                    run.iteration()

            return call

        for loops in runs:
            rollout(loops)()  # the first update: buffers and the optimiser's state
        ms = interleaved({"python": rollout("0"), "cpp": rollout("1")}, rounds=7, per_round=1)
    finally:
        os.environ.pop("RELAYRL_NATIVE", None)
        for run in runs.values():
            run.close()
    steps = 16 * 128
    return (f"MAPPO at JaxMARL's config, one rollout and its update: Python loops {ms['python']:.0f} ms ({steps / ms['python'] * 1000:.0f} env steps/s), "
            f"C++ loops {ms['cpp']:.0f} ms ({steps / ms['cpp'] * 1000:.0f} env steps/s): {ms['python'] / ms['cpp']:.2f}x")


def pair_case() -> str:
    """MAPPO's actor and critic recurrences (GRU 128 over 128 steps) as one sequence node
    of two parameter sets side by side, against one node each (relayrl's default)."""
    from relayrl.nets.gru import GRUSequence, StackedGRUCell

    lines = []
    for rows in (12, 48):
        torch.manual_seed(0)
        cells = [StackedGRUCell(1, 128, 128) for _ in range(2)]
        x = [torch.randn(128, 1, rows, 384, requires_grad=True) for _ in range(2)]  # time-major input projections
        h, w = torch.zeros(1, rows, 128), torch.randn(128, 1, rows, 128)
        keep = torch.ones(128, 1, rows, 1, dtype=torch.bool)
        keep[::25] = False

        def apart() -> None:
            sum((GRUSequence.apply(xi, h, c.hidden.weight, c.hidden.bias, keep) * w).sum() for xi, c in zip(x, cells)).backward()

        def together() -> None:
            weight, bias = (torch.cat([getattr(c.hidden, k) for c in cells]) for k in ("weight", "bias"))
            states = GRUSequence.apply(torch.cat(x, dim=1), torch.cat([h, h]), weight, bias, torch.cat([keep, keep], dim=1))
            (states * torch.cat([w, w], dim=1)).sum().backward()

        ms = interleaved({"apart": apart, "together": together}, rounds=11, per_round=5)
        lines.append(f"{rows} rows: one node each {ms['apart']:.1f} ms, one node for both {ms['together']:.1f} ms ({ms['apart'] / ms['together']:.2f}x)")
    return "actor and critic GRU forward+backward: " + "; ".join(lines)


def step_case() -> str:
    """One GRU step's gate arithmetic (2 sigmoids, a tanh, the blend; MAPPO's 12 rows, GRU
    128) compiled on its own, against eager: what a compiled call costs at this size."""
    hidden = 128

    def gates(hp: torch.Tensor, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        r = torch.sigmoid(x[..., :hidden] + hp[..., :hidden])
        z = torch.sigmoid(x[..., hidden : 2 * hidden] + hp[..., hidden : 2 * hidden])
        n = torch.tanh(x[..., 2 * hidden :] + r * hp[..., 2 * hidden :])
        return (h - n) * z + n

    hp, x, h = torch.randn(1, 12, 3 * hidden), torch.randn(1, 12, 3 * hidden), torch.randn(1, 12, hidden)
    compiled = torch.compile(gates, fullgraph=True, dynamic=False)
    compiled(hp, x, h)
    us = {k: v * 1000 for k, v in interleaved({"eager": lambda: gates(hp, x, h), "compiled": lambda: compiled(hp, x, h)}, per_round=1000).items()}
    return f"one GRU step's gates (12 rows, GRU 128): eager {us['eager']:.0f} us, compiled {us['compiled']:.0f} us ({us['eager'] / us['compiled']:.2f}x)"


CASES = {"native": native_case, "fused": fused_case, "compile": compile_case, "mixer": mixer_case, "threads": threads_case, "gru": gru_case, "update": update_case, "act": act_case, "pair": pair_case, "step": step_case}

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(CASES))
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name in args.only.split(","):
        print(CASES[name](), flush=True)
