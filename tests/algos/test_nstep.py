"""n-step transitions against a direct per-(env, agent) computation, across fragment boundaries."""

import numpy as np
import pytest

from relayrl.algos.nstep import NStepBuilder

GAMMA = 0.9


def _random_steps(rng, length, envs, agents):
    terminated = rng.random((length, envs, agents)) < 0.08
    truncated = ~terminated & (rng.random((length, envs, agents)) < 0.05)
    obs = rng.integers(0, 255, (length, envs, agents, 2)).astype(np.uint8)
    return {
        "obs": obs,
        "action": rng.integers(0, 4, (length, envs, agents)),
        "reward": rng.normal(size=(length, envs, agents)).astype(np.float32),
        "next_obs": rng.integers(0, 255, (length, envs, agents, 2)).astype(np.uint8),
        "terminated": terminated,
        "truncated": truncated,
        "valid": rng.random((length, envs, agents)) < 0.9,
    }


def _direct(steps, n, as_terminal):
    """Every valid start t: accumulate until n steps or the episode's end."""
    out = {}
    length, envs, agents = steps["reward"].shape
    for e in range(envs):
        for a in range(agents):
            for t in range(length):
                if not steps["valid"][t, e, a]:
                    continue
                ret, k, terminal = 0.0, 0, False
                for j in range(n):
                    if t + j >= length:
                        break
                    ret += GAMMA**j * steps["reward"][t + j, e, a]
                    k += 1
                    if steps["terminated"][t + j, e, a] or steps["truncated"][t + j, e, a]:
                        terminal = steps["terminated"][t + j, e, a] or (as_terminal and steps["truncated"][t + j, e, a])
                        break
                ended = steps["terminated"][t + k - 1, e, a] or steps["truncated"][t + k - 1, e, a]
                if k == n or ended:
                    out[(t, e, a)] = (ret, 0.0 if terminal else GAMMA**k, steps["next_obs"][t + k - 1, e, a])
    return out


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("as_terminal", [False, True])
def test_nstep_matches_direct_sum_across_fragments(n, as_terminal):
    rng = np.random.default_rng(n)
    steps = _random_steps(rng, 40, 3, 2)
    builder = NStepBuilder(n, GAMMA, as_terminal)
    got = {}
    for start in range(0, 40, 4):  # fragments of 4 steps
        chunk = {k: v[start : start + 4] for k, v in steps.items()}
        out = builder.add(chunk)
        base = start - (out.valid.shape[0] - 4)  # rows carried from the previous fragment come first
        for t, e, a in zip(*np.nonzero(out.valid)):
            key = (base + t, e, a)
            assert key not in got, f"transition {key} emitted twice"
            got[key] = (out.reward[t, e, a], out.discount[t, e, a], out.next_obs[t, e, a])
            np.testing.assert_array_equal(out.obs[t, e, a], steps["obs"][base + t, e, a])
    expected = _direct(steps, n, as_terminal)
    assert set(got) == set(expected)
    for key, (ret, discount, next_obs) in expected.items():
        assert got[key][0] == pytest.approx(ret, rel=1e-5, abs=1e-5)
        assert got[key][1] == pytest.approx(discount, rel=1e-6)
        np.testing.assert_array_equal(got[key][2], next_obs)



def _emitted(builder, chunk, start):
    """The transitions ``builder.add(chunk)`` emits, keyed by (step, env, agent); ``start``:
    the chunk's first step in the whole record."""
    out = builder.add(chunk)
    base = start - (out.valid.shape[0] - chunk["reward"].shape[0])
    return {(base + t, e, a): (out.reward[t, e, a], out.discount[t, e, a], out.next_obs[t, e, a].tobytes()) for t, e, a in zip(*np.nonzero(out.valid))}


def test_ending_workers_equals_truncating_them_at_the_last_step_added():
    rng = np.random.default_rng(5)
    first, second = _random_steps(rng, 6, 3, 2), _random_steps(rng, 6, 3, 2)
    cut = np.array([0, 2])
    marked = {k: v.copy() for k, v in first.items()}
    marked["truncated"][-1, cut] |= marked["valid"][-1, cut] & ~marked["terminated"][-1, cut]
    reference = NStepBuilder(3, GAMMA)
    expected = {**_emitted(reference, marked, 0), **_emitted(reference, second, 6)}

    builder = NStepBuilder(3, GAMMA)
    got = _emitted(builder, first, 0)
    builder.end_workers(cut)
    got.update(_emitted(builder, second, 6))
    assert got == expected
    # the cut windows bootstrap at the first fragment's end instead of reaching into the second
    assert any(e in cut and t in (4, 5) and discount == np.float32(GAMMA ** (6 - t)) for (t, e, _), (_, discount, _) in got.items())
