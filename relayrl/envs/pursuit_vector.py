"""Pursuit batched over E games in NumPy, with exactly pettingzoo.sisl pursuit_v5's dynamics.

The reference is PettingZoo 1.27's ``pursuit_base.Pursuit`` seen through its parallel
wrapper (what ``pursuit_v5.parallel_env`` returns). The details that decide the numbers:

- the map is ``two_d_maps.rectangle_map``: a building fills the cells with
  0.3 < x/X < 0.7 and 0.2 < y/Y < 0.8; moves into it or off the grid leave an agent in place;
- the wrapper steps the pursuers one after another and, after each sub-step, adds every
  pursuer's current reward, so the tag reward (divided by N) is collected N times: pursuer k
  sits at its old cell for the first k sub-steps and at its new cell for the others;
- a tag counts the evaders on the four neighbour cells *clipped* to the grid (at an edge a
  pursuer's own cell is counted in place of the missing neighbour);
- catches use the pursuers' new cells and the evaders' old cells; the survivors then move;
- with ``surround`` an evader is caught when every free neighbour inside the grid holds a
  pursuer, where a building cell on row or column 0 is not discounted (the reference's
  strict ``0 < xn`` bound); otherwise when ``n_catch`` pursuers share its cell;
- the catch reward goes once to each pursuer next to (surround) or on (n_catch) a caught
  evader, then every pursuer gets the urgency reward, then ``shared_reward`` mixes;
- reaching ``max_cycles`` truncates, and a truncation hides a termination of the same step.

Differential tests (tests/envs/test_pursuit_vector.py) check every output against the
installed PettingZoo from the same states with the same pursuer actions and evader moves.
"""

from typing import Any

import numpy as np

from relayrl.core.specs import GroupSpec
from relayrl.envs.array_games import ArrayGames
from relayrl.envs.episodes import EpisodeTally
from relayrl.envs.frames import BACKGROUND, GROUP_COLOURS, LANDMARK, grid_image
from relayrl.envs.types import GroupObs, GroupStep
from relayrl.envs.pursuit import PAPER_SETTINGS

# DiscreteAgent.motion_range: left, right, up, down, stay
MOTIONS = np.array([[-1, 0], [1, 0], [0, 1], [0, -1], [0, 0]], np.int64)
STAY = 4
# Pursuit.surround_mask: the four neighbours, in the reference's order
NEIGHBOURS = np.array([[-1, 0], [1, 0], [0, 1], [0, -1]], np.int64)
MAX_PLACEMENT_ROUNDS = 10_000


def rectangle_map(x_size: int, y_size: int, x_margin: float = 0.3, y_margin: float = 0.2) -> np.ndarray:
    """Building cells (True) of pursuit's map: the same float comparisons as the reference."""
    fx = np.arange(x_size, dtype=np.float64) / x_size
    fy = np.arange(y_size, dtype=np.float64) / y_size
    inside_x = (fx > x_margin) & (fx < 1.0 - x_margin)
    inside_y = (fy > y_margin) & (fy < 1.0 - y_margin)
    return inside_x[:, None] & inside_y[None, :]


def validate_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """Merges ``settings`` over PAPER_SETTINGS and rejects what the reference cannot run."""
    unknown = set(settings) - set(PAPER_SETTINGS)
    if unknown:
        raise ValueError(f"unknown pursuit settings {sorted(unknown)}; allowed: {sorted(PAPER_SETTINGS)}")
    s = {**PAPER_SETTINGS, **settings}
    if max(s["n_pursuers"], s["n_evaders"]) > 255:
        raise ValueError("pursuit observations are stored as uint8 counts: use at most 255 pursuers and evaders")
    if s["constraint_window"] * min(s["x_size"], s["y_size"]) < 1:
        raise ValueError(
            f"constraint_window={s['constraint_window']} spans less than one cell of the "
            f"{s['x_size']}x{s['y_size']} grid, so the spawn window can be empty (PettingZoo fails at "
            "reset there too); use constraint_window >= 1/min(x_size, y_size)"
        )
    return s


class PursuitVectorEnv(ArrayGames):
    """E Pursuit games stepped together; a VectorEnv with one group, ``pursuer``.

    Observations are ``[E, N, R, R, 3]`` uint8, laid out as PettingZoo's: ``obs[..., a, b, c]``
    is channel c (walls and buildings, pursuer count, evader count) at x = px - off + b,
    y = py - off + a. Rewards are computed in float64 in the reference's order, then
    stored as float32 like the PettingZoo adapter. One NumPy generator drives all copies.
    """

    independent_episodes = False
    kind = "pursuit-vector"
    label = "the vectorised pursuit (was the run made with pursuit-pz?)"

    def __init__(self, num_envs: int, **settings: Any) -> None:
        s = validate_settings(settings)
        self.settings = s
        self.num_envs = E = num_envs
        self.X, self.Y = s["x_size"], s["y_size"]
        self.N, self.M = s["n_pursuers"], s["n_evaders"]
        self.R = s["obs_range"]
        self.off = (self.R - 1) // 2
        self.building = rectangle_map(self.X, self.Y)
        self.local_ratio = 1.0 - float(s["shared_reward"])
        self.groups = (
            GroupSpec("pursuer", tuple(f"pursuer_{i}" for i in range(self.N)), (self.R, self.R, 3), np.dtype(np.uint8), 5),
        )
        self.rng = np.random.default_rng(0)
        self.pursuers = np.zeros((E, self.N, 2), np.int64)
        self.evaders = np.zeros((E, self.M, 2), np.int64)
        self.evader_alive = np.ones((E, self.M), bool)
        self.frames = np.zeros(E, np.int64)
        self.tally = EpisodeTally(E, 1)
        self._build_observation_tables()

    # ----- observations -------------------------------------------------------------
    def _build_observation_tables(self) -> None:
        R, off = self.R, self.off
        self._pad_hi = R - 1 - off  # the view reaches px - off .. px + R - 1 - off
        self.Xp, self.Yp = self.X + off + self._pad_hi, self.Y + off + self._pad_hi
        grid = np.zeros((self.num_envs, self.Xp, self.Yp, 3), np.uint8)
        grid[..., 0] = 1  # outside the grid reads as wall
        grid[:, off : off + self.X, off : off + self.Y, 0] = self.building
        self._grid = grid
        a, b, c = np.meshgrid(np.arange(R), np.arange(R), np.arange(3), indexing="ij")
        self._view = ((b * self.Yp + a) * 3 + c).astype(np.int64)  # [R(y), R(x), 3]
        self._env_base = (np.arange(self.num_envs) * self.Xp * self.Yp * 3).astype(np.int64)

    def _counts(self, positions: np.ndarray, present: np.ndarray | None) -> np.ndarray:
        """Agents per cell, ``[E, X, Y]``."""
        E = positions.shape[0]
        flat = (np.arange(E)[:, None] * self.X + positions[..., 0]) * self.Y + positions[..., 1]
        if present is not None:
            flat = flat[present]
        return np.bincount(flat.ravel(), minlength=E * self.X * self.Y).reshape(E, self.X, self.Y)

    def observe(self) -> np.ndarray:
        """Every pursuer's view of the current state, ``[E, N, R, R, 3]``."""
        off = self.off
        interior = self._grid[:, off : off + self.X, off : off + self.Y]
        interior[..., 1] = self._counts(self.pursuers, None)
        interior[..., 2] = self._counts(self.evaders, self.evader_alive)
        corner = (self.pursuers[..., 0] * self.Yp + self.pursuers[..., 1]) * 3 + self._env_base[:, None]
        obs = np.take(self._grid.reshape(-1), corner[:, :, None, None, None] + self._view)
        if self.R > 2 * off + 1:  # even obs_range: the reference leaves the last row and column as wall
            obs[:, :, -1, :, :] = (1, 0, 0)
            obs[:, :, :, -1, :] = (1, 0, 0)
        return obs

    # ----- dynamics -----------------------------------------------------------------
    def _move(self, positions: np.ndarray, actions: np.ndarray) -> np.ndarray:
        target = positions + MOTIONS[actions]
        x, y = target[..., 0], target[..., 1]
        inside = (x >= 0) & (x < self.X) & (y >= 0) & (y < self.Y)
        free = inside & ~self.building[np.clip(x, 0, self.X - 1), np.clip(y, 0, self.Y - 1)]
        return np.where(free[..., None], target, positions)

    def _tag_counts(self, positions: np.ndarray, evader_grid: np.ndarray) -> np.ndarray:
        """Evaders on the four clipped neighbour cells of each pursuer, ``[E, N]``."""
        nx = np.clip(positions[..., 0, None] + NEIGHBOURS[:, 0], 0, self.X - 1)
        ny = np.clip(positions[..., 1, None] + NEIGHBOURS[:, 1], 0, self.Y - 1)
        rows = np.arange(positions.shape[0])[:, None, None]
        return evader_grid[rows, nx, ny].sum(axis=-1)

    def _catches(self, pursuer_grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Caught evaders ``[E, M]`` and the pursuers credited with a catch ``[E, N]``."""
        E = self.num_envs
        rows = np.arange(E)[:, None]
        ex, ey = self.evaders[..., 0], self.evaders[..., 1]
        credit = np.zeros((E, self.X, self.Y), bool)
        if self.settings["surround"]:
            nx = ex[..., None] + NEIGHBOURS[:, 0]
            ny = ey[..., None] + NEIGHBOURS[:, 1]
            inside = (nx >= 0) & (nx < self.X) & (ny >= 0) & (ny < self.Y)
            cx, cy = np.clip(nx, 0, self.X - 1), np.clip(ny, 0, self.Y - 1)
            occupied = inside & (pursuer_grid[rows[..., None], cx, cy] > 0)
            need = 4 - ((ex == 0) | (ex == self.X - 1)) - ((ey == 0) | (ey == self.Y - 1))
            strictly_inside = (nx > 0) & (nx < self.X) & (ny > 0) & (ny < self.Y)
            need = need - (strictly_inside & self.building[cx, cy]).sum(axis=-1)
            caught = self.evader_alive & (occupied.sum(axis=-1) == need)
            mark = caught[..., None] & occupied
            credit[np.broadcast_to(rows[..., None], mark.shape)[mark], cx[mark], cy[mark]] = True
        else:
            caught = self.evader_alive & (pursuer_grid[rows, ex, ey] >= self.settings["n_catch"])
            credit[np.broadcast_to(rows, caught.shape)[caught], ex[caught], ey[caught]] = True
        credited = credit[rows, self.pursuers[..., 0], self.pursuers[..., 1]]
        return caught, credited

    def _mix(self, reward: np.ndarray) -> np.ndarray:
        if self.local_ratio == 1.0:  # 1.0 * r + 0.0 * mean == r exactly
            return reward
        return self.local_ratio * reward + (1.0 - self.local_ratio) * reward.mean(axis=1, keepdims=True)

    def _advance(self, actions: np.ndarray, evader_moves: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One cycle of all games; returns float64 rewards ``[E, N]``, terminal ``[E]``, truncated ``[E]``."""
        s = self.settings
        old = self.pursuers
        new = self._move(old, actions)
        evader_grid = self._counts(self.evaders, self.evader_alive)
        tag_old = s["tag_reward"] * self._tag_counts(old, evader_grid).astype(np.float64) / self.N
        tag_new = s["tag_reward"] * self._tag_counts(new, evader_grid).astype(np.float64) / self.N
        self.pursuers = new
        caught, credited = self._catches(self._counts(new, None))

        # The wrapper's running sum over the N sub-steps, in its order (float addition is not associative).
        moved = np.arange(self.N)
        total = np.zeros((self.num_envs, self.N), np.float64)
        for sub_step in range(self.N - 1):
            total += self._mix(np.where(moved <= sub_step, tag_new, tag_old))
        last = tag_new + s["catch_reward"] * credited
        last += s["urgency_reward"]
        total += self._mix(last)

        self.evader_alive &= ~caught
        if not s["freeze_evaders"]:
            moving = self.evader_alive[..., None]
            self.evaders = np.where(moving, self._move(self.evaders, evader_moves), self.evaders)
        self.frames += 1
        terminal = ~self.evader_alive.any(axis=1)
        truncated = self.frames >= s["max_cycles"]
        return total, terminal, truncated

    def _draw_evader_moves(self) -> np.ndarray:
        # RandomPolicy draws one of 5 actions per surviving evader; frozen evaders stay.
        if self.settings["freeze_evaders"]:
            return np.full((self.num_envs, self.M), STAY, np.int64)
        return self.rng.integers(0, 5, (self.num_envs, self.M))

    # ----- spawning -----------------------------------------------------------------
    def _place(self, count: int, bounds: np.ndarray) -> np.ndarray:
        """``count`` agents per game, each uniform in the game's window on a free cell that is
        neither taken nor next to an earlier agent of the same kind (agent_utils.create_agents)."""
        n = bounds.shape[0]
        taken = np.zeros((n, self.X + 2, self.Y + 2), bool)
        positions = np.zeros((n, count, 2), np.int64)
        for k in range(count):
            todo = np.arange(n)
            for _ in range(MAX_PLACEMENT_ROUNDS):
                x = self.rng.integers(bounds[todo, 0], bounds[todo, 1])
                y = self.rng.integers(bounds[todo, 2], bounds[todo, 3])
                ok = ~self.building[x, y] & ~taken[todo, x + 1, y + 1]
                positions[todo[ok], k] = np.stack([x[ok], y[ok]], axis=-1)
                todo = todo[~ok]
                if todo.size == 0:
                    break
            else:
                raise RuntimeError(
                    f"could not place {count} agents apart in the spawn window of a "
                    f"{self.X}x{self.Y} pursuit grid; use fewer agents or a larger constraint_window"
                )
            px, py = positions[:, k, 0] + 1, positions[:, k, 1] + 1
            rows = np.arange(n)
            taken[rows, px, py] = True
            for dx, dy in NEIGHBOURS:
                taken[rows, px + dx, py + dy] = True
        return positions

    def _spawn(self, envs: np.ndarray) -> None:
        cw = self.settings["constraint_window"]
        x_start = self.rng.uniform(0.0, 1.0 - cw, envs.size)
        y_start = self.rng.uniform(0.0, 1.0 - cw, envs.size)
        bounds = np.stack(
            [
                (self.X * x_start).astype(np.int64),
                (self.X * (x_start + cw)).astype(np.int64),
                (self.Y * y_start).astype(np.int64),
                (self.Y * (y_start + cw)).astype(np.int64),
            ],
            axis=-1,
        )
        self.pursuers[envs] = self._place(self.N, bounds)
        self.evaders[envs] = self._place(self.M, bounds)
        self.evader_alive[envs] = True
        self.frames[envs] = 0

    # ----- VectorEnv ----------------------------------------------------------------
    def reset(self, seed: int) -> list[GroupObs]:
        self.rng = np.random.default_rng(np.random.SeedSequence([seed, 0x50755]))
        self._spawn(np.arange(self.num_envs))
        self.tally.clear()
        return [GroupObs(self.observe(), np.ones((self.num_envs, self.N), bool))]

    def step(self, actions: list[np.ndarray]) -> tuple[list[GroupStep], np.ndarray]:
        """``actions[0]`` is ``[E, N]``; games that end are reset (``next_obs`` keeps the final view)."""
        return self.step_with_evader_moves(actions[0], self._draw_evader_moves())

    def step_with_evader_moves(self, actions: np.ndarray, evader_moves: np.ndarray) -> tuple[list[GroupStep], np.ndarray]:
        """``step`` with the evaders' actions given, ``[E, M]`` by evader slot (used by tests)."""
        actions = np.asarray(actions, np.int64)
        if actions.shape != (self.num_envs, self.N) or actions.min() < 0 or actions.max() >= 5:
            raise ValueError(f"pursuit actions must be integers in [0, 5) of shape {(self.num_envs, self.N)}")
        reward64, terminal, truncated = self._advance(actions, np.asarray(evader_moves, np.int64))
        reward = reward64.astype(np.float32)
        over = terminal | truncated
        next_obs = self.observe()
        obs = next_obs
        self.tally.add(reward.sum(axis=1)[:, None], over)
        if over.any():
            ended = np.flatnonzero(over)
            self._spawn(ended)
            obs = self.observe()
        shape = (self.num_envs, self.N)
        step = GroupStep(
            obs=obs,
            next_obs=next_obs,
            reward=reward,
            terminated=np.broadcast_to((terminal & ~truncated)[:, None], shape).copy(),
            truncated=np.broadcast_to(truncated[:, None], shape).copy(),
            alive=np.ones(shape, bool),
        )
        return [step], over

    def set_game(self, env_index: int, pursuers: np.ndarray, evaders: np.ndarray, evader_alive: np.ndarray, frames: int) -> None:
        """Puts game ``env_index`` into a given state (positions ``[N, 2]``/``[M, 2]`` as (x, y))."""
        self.pursuers[env_index] = pursuers
        self.evaders[env_index] = evaders
        self.evader_alive[env_index] = evader_alive
        self.frames[env_index] = frames

    def render(self, game: int) -> np.ndarray:
        """Game ``game``'s grid: buildings dark, pursuers blue, evaders red (a cell holding
        both shows the evader)."""
        grid = np.broadcast_to(BACKGROUND, (self.X, self.Y, 3)).copy()
        grid[self.building] = LANDMARK
        px, py = self.pursuers[game].T
        grid[px, py] = GROUP_COLOURS[0]
        ex, ey = self.evaders[game][self.evader_alive[game]].T
        grid[ex, ey] = GROUP_COLOURS[1]
        return grid_image(grid)

    def game_arrays(self) -> tuple[np.ndarray, ...]:
        return (self.pursuers, self.evaders, self.evader_alive, self.frames)

    def load_game_arrays(self, arrays: list[np.ndarray]) -> None:
        self.pursuers, self.evaders, self.evader_alive, self.frames = arrays
