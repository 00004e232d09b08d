"""Predator-Prey: the stag-hunt grid of Boehmer et al. (2020, "Deep Coordination Graphs",
``envs/stag_hunt.py``) in the setting of MAC-PO and AccMER (paper 002; SPEC §1.3),
batched over E games in NumPy.

A bounded grid holds predators (the agents), stags and hares on distinct cells. Each step
the predators move first, one after the other in a random order (a move into an occupied
cell or the wall leaves a predator where it is); then every living prey, in a random
order, is caught or moves: a prey is captured when at least ``catch_stag`` (stags) or
``catch_hare`` (hares) unfrozen predators next to it choose ``catch``; the capture reward
goes to the team, the catching predators freeze (and leave the grid where
``remove_frozen``); a catch by too few predators costs ``miscapture`` once per prey. A prey
that is not captured moves to a random free neighbour cell (or rests with probability
``p_stag_rest`` / ``p_hare_rest``, or when none is free). The episode terminates when every
prey is caught or every predator is frozen and is truncated after ``max_cycles`` steps.

Each predator observes the ``(2 view + 1)^2`` cells around it in 3 planes (predators,
stags, hares; cells outside the grid marked -1 in the predator plane where
``observe_walls``); a removed predator observes zeros. The global state is the whole
grid. Action masks: moves that stay inside the grid, ``stay`` always, ``catch`` next to a
prey; a frozen predator may only stay. The team reward is split evenly over the
predators, so a group's summed reward is the team's.

The random draws of a step (predator order, prey order, rests, prey moves) are drawn per
game and can be given (``step_with_draws``): tests replay them through a separate
per-game implementation.
"""

from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from relayrl.core.strict import Strict
from relayrl.core.specs import GroupSpec
from relayrl.envs.array_games import ArrayGames
from relayrl.envs.episodes import EpisodeTally
from relayrl.envs.frames import BACKGROUND, GROUP_COLOURS, grid_image
from relayrl.envs.types import GroupObs, GroupStep

# right, down, left, up, stay, catch (the reference's action order; rows are (x, y) offsets)
MOVES = np.array([[0, 1], [1, 0], [0, -1], [-1, 0], [0, 0], [0, 0]], np.int64)
STAY, CATCH = 4, 5
FREE_BITS = np.array([1, 2, 4, 8])
AGENT, STAG, HARE = 0, 1, 2
CELL = np.dtype((np.void, 3))  # a cell's 3 planes as one item: a view is one gather


class PredatorPreySettings(Strict):
    """Defaults: SPEC §1.3 (10x10, 8 predators, 8 stags, no hares, 5x5 view, 2 predators
    to catch a stag, capture reward 1 as paper 002 says; its reference config uses 10 and a
    miscapture punishment of -2; the hard setting is ``miscapture=-1.5``)."""

    x_size: int = Field(10, ge=2)
    y_size: int = Field(10, ge=2)
    n_predators: int = Field(8, ge=1)
    n_stags: int = Field(8, ge=0)
    n_hares: int = Field(0, ge=0)
    view: int = Field(2, ge=0, description="a predator sees the (2 view + 1)^2 cells around it")
    catch_stag: int = Field(2, ge=1, description="predators choosing catch next to a stag that capture it")
    catch_hare: int = Field(1, ge=1)
    reward_stag: float = 1.0
    reward_hare: float = 1.0
    miscapture: float = Field(0.0, le=0, description="per prey that too few predators tried to catch")
    reward_time: float = 0.0
    freeze_on_capture: bool = True
    remove_frozen: bool = True
    observe_walls: bool = True
    p_stag_rest: float = Field(0.0, ge=0, le=1)
    p_hare_rest: float = Field(0.0, ge=0, le=1)
    max_cycles: int = Field(200, ge=1)

    @model_validator(mode="after")
    def _fits(self) -> "PredatorPreySettings":
        cells = self.x_size * self.y_size
        if self.n_stags + self.n_hares < 1:
            raise ValueError("predator-prey needs prey: n_stags + n_hares >= 1")
        if self.n_predators + self.n_stags + self.n_hares > cells:
            raise ValueError(f"{self.n_predators + self.n_stags + self.n_hares} predators and prey do not fit on {cells} cells")
        return self


@dataclass
class Draws:
    """One step's random draws per game, uniform in [0, 1): the predators' and the prey's
    order (argsort), each prey's rest test and its choice among its free neighbours."""

    predator_order: np.ndarray  # [E, N]
    prey_order: np.ndarray  # [E, M]
    rest: np.ndarray  # [E, M]
    move: np.ndarray  # [E, M]

    @classmethod
    def sample(cls, rng: np.random.Generator, e: int, n: int, m: int) -> "Draws":
        return cls(rng.random((e, n)), rng.random((e, m)), rng.random((e, m)), rng.random((e, m)))


class PredatorPreyVectorEnv(ArrayGames):
    """E games stepped as arrays. Cells are flat indices ``x * y_size + y``: predators
    ``[E, N]``, prey ``[E, M]`` (stags first), and an occupancy grid ``[E, cells padded by
    the view, 3]`` rebuilt from them after every step. Moves, neighbours, adjacency and
    observed views are tables over cells, built once."""

    independent_episodes = False
    kind = "predator-prey-vector"
    label = "the vectorised predator-prey"

    def __init__(self, num_envs: int, **settings: Any) -> None:
        self.s = s = PredatorPreySettings(**settings)
        self.settings = s.model_dump()
        self.num_envs = num_envs
        self.N, self.M = s.n_predators, s.n_stags + s.n_hares
        self.prey_type = np.array([STAG] * s.n_stags + [HARE] * s.n_hares)
        self.catch_needed = np.where(self.prey_type == STAG, s.catch_stag, s.catch_hare)
        self.capture_reward = np.where(self.prey_type == STAG, s.reward_stag, s.reward_hare)
        self.p_rest = np.where(self.prey_type == STAG, s.p_stag_rest, s.p_hare_rest)
        self.side = side = 2 * s.view + 1
        self.cells = c = s.x_size * s.y_size
        self.state_size = c * 3
        self.groups = (
            GroupSpec(
                "predator", tuple(f"predator_{i}" for i in range(self.N)), (side, side, 3), np.dtype(np.int8), 6,
                masked=True, state_shape=(self.state_size,), state_dtype=np.dtype(np.int8),
            ),
        )
        self._build_tables()
        self.rng = np.random.default_rng()
        e = num_envs
        self.cell_base = np.arange(e) * (c + 1)  # flat offsets of each game's cells, and one more (a bin)
        self.view_base = (np.arange(e) * self.padded_cells)[:, None, None]
        self.prey_row = np.arange(e * self.M).reshape(e, self.M)
        self.predator_row = np.arange(e * self.N).reshape(e, self.N)
        self.predators = np.zeros((e, self.N), np.int64)
        self.prey = np.zeros((e, self.M), np.int64)
        self.prey_alive = np.zeros((e, self.M), bool)
        self.frozen = np.zeros((e, self.N), bool)
        self.grid = np.zeros((e, self.padded_cells, 3), np.int8)  # padded by view: views are one gather
        self.prey_cells = np.zeros((e, c + 1), bool)  # a living prey there (the last: the bin of _prey_turns)
        self.frames = np.zeros(e, np.int64)
        self.tally = EpisodeTally(e, 1)

    def _build_tables(self) -> None:
        """``target[cell, action]``: where a move leads (clipped at the walls);
        ``inside[cell, action]``: the move stays on the grid; ``adjacent[cell, cell]``: the
        cells are neighbours; ``view_cells[cell]``: the cells of the view around it in the grid
        padded by ``view`` (its flat index there)."""
        s, r = self.s, self.s.view
        x, y = np.divmod(np.arange(self.cells), s.y_size)
        tx, ty = x[:, None] + MOVES[None, :, 0], y[:, None] + MOVES[None, :, 1]
        self.inside = (tx >= 0) & (tx < s.x_size) & (ty >= 0) & (ty < s.y_size)
        self.target = np.clip(tx, 0, s.x_size - 1) * s.y_size + np.clip(ty, 0, s.y_size - 1)
        self.adjacent = (np.abs(x[:, None] - x[None]) + np.abs(y[:, None] - y[None])) == 1
        offsets = np.arange(self.side)
        rows = x[:, None, None] + offsets[None, :, None]
        cols = y[:, None, None] + offsets[None, None, :]
        self.padded_y = s.y_size + 2 * r
        self.view_cells = (rows * self.padded_y + cols).reshape(self.cells, -1)
        self.padded_cells = (s.x_size + 2 * r) * self.padded_y
        px, py = np.divmod(np.arange(self.padded_cells), self.padded_y)
        on_grid = (px >= r) & (px < r + s.x_size) & (py >= r) & (py < r + s.y_size)
        self.padded_index = np.flatnonzero(on_grid)  # cell -> its index in the padded grid
        self.empty_grid = np.zeros((self.padded_cells, 3), np.int8)  # the walls alone
        if s.observe_walls:
            self.empty_grid[~on_grid, AGENT] = -1
        self.empty_grid = self.empty_grid.reshape(-1)
        # free neighbours as a 4-bit pattern: how many, and the direction of the c-th one
        patterns = (np.arange(16)[:, None] >> np.arange(4)) & 1
        self.n_free = patterns.sum(axis=1)
        self.pattern_row = np.arange(16) * 4
        self.nth_free = np.zeros((16, 4), np.int64)
        for pattern in range(16):
            free = np.flatnonzero(patterns[pattern])
            self.nth_free[pattern, : len(free)] = free

    def render(self, game: int) -> np.ndarray:
        """Game ``game``'s grid: predators blue (darker once frozen), stags red, hares gold."""
        s = self.s
        grid = np.broadcast_to(BACKGROUND, (s.x_size * s.y_size, 3)).copy()
        alive = self.prey_alive[game]
        grid[self.prey[game][alive]] = np.where((self.prey_type[alive] == STAG)[:, None], GROUP_COLOURS[1], GROUP_COLOURS[3])
        grid[self.predators[game]] = np.where(self.frozen[game][:, None], GROUP_COLOURS[0] // 2, GROUP_COLOURS[0])
        return grid_image(grid.reshape(s.x_size, s.y_size, 3))

    # ----- games --------------------------------------------------------------------
    def _spawn(self, games: np.ndarray, cells: np.ndarray) -> None:
        """Places the games' predators and prey on distinct cells: ``cells [len(games), N + M]``
        are flat cell indices (predators first, then stags, then hares)."""
        self.predators[games] = cells[:, : self.N]
        self.prey[games] = cells[:, self.N :]
        self.prey_alive[games] = True
        self.frozen[games] = False
        self.frames[games] = 0
        self._rebuild_grid()

    def spawn_cells(self, n_games: int) -> np.ndarray:
        """Random distinct cells for each game's predators and prey, ``[n_games, N + M]``."""
        return np.argsort(self.rng.random((n_games, self.cells)), axis=1)[:, : self.N + self.M]

    def _advance(self, actions: np.ndarray, draws: Draws) -> tuple[np.ndarray, np.ndarray]:
        """One step of every game: returns the team reward ``[E]`` and ``terminated [E]``.
        The rules are sequential, each entity acting on the cells as the ones before it in
        the random order (the argsort of its order draws) left them; both phases go turn by
        turn with every game at once, a turn being a few operations on ``[E]`` arrays."""
        reward = np.full(self.num_envs, self.s.reward_time, np.float64)
        self._move_predators(actions, draws)
        self._prey_turns(actions, draws, reward)
        self._rebuild_grid()
        terminated = ~self.prey_alive.any(axis=1) | self.frozen.all(axis=1)
        return reward, terminated

    def _move_predators(self, actions: np.ndarray, draws: Draws) -> None:
        """Predator by predator in its turn, every game at once: it moves to its target
        cell when nothing stands there (a prey, or a predator that has not moved away);
        frozen predators stay."""
        base = self.cell_base[:, None]  # the cell `cells` of a game is a bin for the absent
        on_grid = ~self.frozen if self.s.remove_frozen else np.ones_like(self.frozen)
        here = base + np.where(on_grid, self.predators, self.cells)
        there = np.where(self.frozen, here, base + self.target.take(self.predators * 6 + actions))  # a wall or stay: its own cell
        vacant = ~self.prey_cells.reshape(-1)
        vacant[here] = False
        order = np.argsort(draws.predator_order, axis=1) + self.predator_row[:, :1]  # flat predator index, turn by turn
        here, there = here.reshape(-1)[order], there.reshape(-1)[order]
        final = np.empty_like(order)
        for k in range(self.N):
            goes = vacant.take(there[:, k])
            vacant[here[:, k]] = True
            final[:, k] = np.where(goes, there[:, k], here[:, k])
            vacant[final[:, k]] = False
        moved_to = np.empty_like(final)
        moved_to.reshape(-1)[order] = final
        self.predators = np.where(on_grid, moved_to - base, self.predators)

    def _prey_turns(self, actions: np.ndarray, draws: Draws, reward: np.ndarray) -> None:
        """Each living prey in its turn: captured (``_capture``), or it moves to the
        ``move``-th free neighbour cell as the cells are at its turn: earlier prey moved,
        later ones not yet, predators removed by earlier captures gone. Turn by turn, every
        game at once: a prey's destination for each pattern of free neighbours is looked up
        in a table made before the turns, so a turn is a handful of array operations."""
        pos, alive, turn = self.prey, self.prey_alive, draws.prey_order
        on_grid = ~self.frozen if self.s.remove_frozen else np.ones_like(self.frozen)  # before this step's captures
        captured, froze = self._capture(actions, turn, reward)
        base = self.cell_base[:, None]  # the cell `cells` of a game is a bin for the absent
        vacant = np.ones(self.cell_base.size * (self.cells + 1), bool)
        vacant[base + np.where(on_grid, self.predators, self.cells)] = False
        home = base + np.where(alive, pos, self.cells)
        vacant[home] = False
        around = self.target[pos, :4]  # [E, M, 4]; a wall gives the prey's own cell: never free
        moving = alive & ~captured & (draws.rest >= self.p_rest)
        # each prey's destination for each of the 16 patterns of free neighbours
        pick = self.nth_free.take(self.pattern_row + (draws.move[:, :, None] * self.n_free).astype(np.int64))  # [E, M, 16]
        destination = base[:, :, None] + around.take(self.prey_row[:, :, None] * 4 + pick)
        destination[~moving] = home[~moving, None]  # resting (dead: the bin)
        destination[:, :, 0] = home  # no free neighbour
        destination[captured] = self.cell_base[np.nonzero(captured)[0], None] + self.cells  # caught in its turn: leaves
        order = np.argsort(turn, axis=1) + self.prey_row[:, :1]  # flat prey index, turn by turn
        look, rows, homes = (base[:, :, None] + around).reshape(-1, 4)[order], order * 16, home.reshape(-1)[order]
        leave = self.s.remove_frozen and froze.any()  # the catchers leave the grid with their capture
        catcher_cells = base + self.predators
        final = np.empty_like(order)
        for k in range(self.M):
            final[:, k] = destination.reshape(-1).take(rows[:, k] + vacant.take(look[:, k]) @ FREE_BITS)
            vacant[homes[:, k]] = True
            vacant[final[:, k]] = False
            if leave:
                vacant[catcher_cells[froze.reshape(-1, self.N)[order[:, k]]]] = True
        moved_to = np.empty_like(final)
        moved_to.reshape(-1)[order] = final
        self.prey = np.where(moving, moved_to - base, pos)
        self.prey_alive = alive & ~captured

    def _capture(self, actions: np.ndarray, turn: np.ndarray, reward: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A living prey is captured in its turn when at least ``catch_needed`` unfrozen
        predators next to it choose catch; its catchers freeze, so they do not count for a
        later prey. Adds the capture rewards and miscapture punishments to ``reward`` and
        freezes the catchers. Returns which prey are captured ``[E, M]`` and the predators
        each capture freezes ``[E, M, N]``. A predator next to two prey catches for the one
        whose turn comes first: the capture of the other may then fall short; this is settled
        by repeating the count until nothing changes (the k-th prey in turn order is right
        from the k-th count on)."""
        s, pos = self.s, self.prey
        catching = (actions == CATCH) & ~self.frozen
        # catchers are unfrozen, so on the grid next to the prey: no separate next-to-a-predator test
        near = self.adjacent.take(pos[:, :, None] * self.cells + self.predators[:, None, :]) & catching[:, None, :]
        near &= self.prey_alive[:, :, None]  # [E, M, N]
        if not near.any():
            return np.zeros_like(self.prey_alive), near
        catchers = near
        if s.freeze_on_capture and (near.sum(axis=1) > 1).any():
            before = turn[:, :, None] < turn[:, None, :]  # [E, j, k]: j's turn comes before k's
            for _ in range(self.M):
                captured = catchers.sum(axis=2) >= self.catch_needed
                earlier = (before & captured[:, :, None]).transpose(0, 2, 1).astype(np.float32)  # [E, k, j]
                again = near & ~((earlier @ catchers.astype(np.float32)) > 0)
                if np.array_equal(again, catchers):
                    break
                catchers = again
        count = catchers.sum(axis=2)
        captured = count >= self.catch_needed
        reward += ((count > 0) & ~captured) @ np.full(self.M, s.miscapture) + captured @ self.capture_reward
        if not s.freeze_on_capture:
            return captured, np.zeros_like(near)
        froze = catchers & captured[:, :, None]
        self.frozen |= froze.any(axis=1)
        return captured, froze

    def _rebuild_grid(self) -> None:
        """The occupancy grid from the positions: walls, predators on the grid, living prey."""
        self.grid.reshape(len(self.grid), -1)[:] = self.empty_grid
        on_grid = ~self.frozen if self.s.remove_frozen else np.ones_like(self.frozen)
        ge, gi = np.nonzero(on_grid)
        self.grid[ge, self.padded_index[self.predators[ge, gi]], AGENT] = 1
        ge, gj = np.nonzero(self.prey_alive)
        self.grid[ge, self.padded_index[self.prey[ge, gj]], self.prey_type[gj]] = 1
        self.prey_cells[:] = False
        self.prey_cells[ge, self.prey[ge, gj]] = True

    # ----- what the predators see -----------------------------------------------------
    def observe(self) -> np.ndarray:
        """Every predator's view ``[E, N, 2 view + 1, 2 view + 1, 3]`` (int8)."""
        grid = self.grid
        if not self.s.remove_frozen and self.frozen.any():  # frozen predators stay on the grid but are not seen
            grid = grid.copy()
            ge, ga = np.nonzero(self.frozen)
            grid[ge, self.padded_index[self.predators[ge, ga]], AGENT] -= 1
        rows = self.view_base + self.view_cells[self.predators]
        obs = grid.reshape(-1).view(CELL).take(rows).view(np.int8)
        if self.s.remove_frozen:
            obs[self.frozen] = 0
        return obs.reshape(self.num_envs, self.N, self.side, self.side, 3)

    def state(self) -> np.ndarray:
        """The whole grid of every game, ``[E, X * Y * 3]`` (int8: 0 or 1)."""
        return np.take(self.grid, self.padded_index, axis=1).reshape(self.num_envs, -1)

    def action_mask(self) -> np.ndarray:
        """``[E, N, 6]``: moves inside the grid, stay, catch next to a living prey; a frozen
        predator may only stay."""
        mask = self.inside[self.predators].copy()  # [E, N, 6]: stay and catch are "inside"
        around = self.target[self.predators, :4]  # [E, N, 4]
        prey_near = self.prey_cells.take(self.cell_base[:, None, None] + around) & mask[..., :4]
        mask[..., CATCH] = prey_near.any(axis=-1)
        mask[self.frozen] = False
        mask[..., STAY] |= self.frozen
        return mask

    def _observed(self) -> GroupObs:
        return GroupObs(self.observe(), np.ones((self.num_envs, self.N), bool), self.state(), self.action_mask())

    # ----- VectorEnv --------------------------------------------------------------------
    def reset(self, seed: int) -> list[GroupObs]:
        self.rng = np.random.default_rng(np.random.SeedSequence([seed, 0x57A6]))
        self._spawn(np.arange(self.num_envs), self.spawn_cells(self.num_envs))
        self.tally.clear()
        return [self._observed()]

    def step(self, actions: list[np.ndarray]) -> tuple[list[GroupStep], np.ndarray]:
        """``actions[0]`` is ``[E, N]``; games that end are reset (``next_obs`` keeps the final view)."""
        return self.step_with_draws(actions[0], Draws.sample(self.rng, self.num_envs, self.N, self.M))

    def step_with_draws(self, actions: np.ndarray, draws: Draws, respawn: np.ndarray | None = None) -> tuple[list[GroupStep], np.ndarray]:
        """``step`` with the random draws given (and, for games that end, their new cells
        ``respawn [E, N + M]``; by default drawn)."""
        actions = np.asarray(actions, np.int64)
        if actions.shape != (self.num_envs, self.N) or actions.min() < 0 or actions.max() >= 6:
            raise ValueError(f"predator-prey actions must be integers in [0, 6) of shape {(self.num_envs, self.N)}")
        team, terminated = self._advance(actions, draws)
        self.frames += 1
        truncated = (self.frames >= self.s.max_cycles) & ~terminated
        over = terminated | truncated
        final = self._observed()
        self.tally.add(team[:, None], over)
        observed = final
        if over.any():
            ended = np.flatnonzero(over)
            cells = self.spawn_cells(self.num_envs) if respawn is None else respawn
            self._spawn(ended, cells[ended])
            observed = self._observed()
        shape = (self.num_envs, self.N)
        reward = np.broadcast_to((team / self.N).astype(np.float32)[:, None], shape).copy()
        step = GroupStep(
            obs=observed.obs,
            next_obs=final.obs,
            reward=reward,
            terminated=np.broadcast_to(terminated[:, None], shape).copy(),
            truncated=np.broadcast_to(truncated[:, None], shape).copy(),
            alive=observed.alive,
            state=observed.state,
            action_mask=observed.action_mask,
            next_state=final.state,
            next_action_mask=final.action_mask,
        )
        return [step], over

    def game_arrays(self) -> tuple[np.ndarray, ...]:
        return (self.predators, self.prey, self.prey_alive, self.frozen, self.frames)

    def load_game_arrays(self, arrays: list[np.ndarray]) -> None:
        self.predators, self.prey, self.prey_alive, self.frozen, self.frames = arrays
        self._rebuild_grid()

    def check_state(self, state: dict[str, Any]) -> None:
        if len(state.get("arrays", ())) != 7:
            raise ValueError("this predator-prey state holds an occupancy grid (saved before relayrl rebuilt it from the positions): resume it with the relayrl that saved it")
