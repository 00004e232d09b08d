"""One Predator-Prey game written plainly from SPEC §1.3, entity by entity, to check the
vectorised env against: it takes the same random draws (orders, rests, moves) and the same
spawn cells, and produces observations, state, masks and rewards of its own."""

import numpy as np

STEPS = {0: (0, 1), 1: (1, 0), 2: (0, -1), 3: (-1, 0), 4: (0, 0), 5: (0, 0)}  # right, down, left, up, stay, catch


class ReferenceGame:
    def __init__(self, s) -> None:
        self.s = s
        self.kinds = ["stag"] * s.n_stags + ["hare"] * s.n_hares

    def spawn(self, cells) -> None:
        s = self.s
        spots = [(int(c) // s.y_size, int(c) % s.y_size) for c in cells]
        self.predators = spots[: s.n_predators]
        self.prey = spots[s.n_predators :]
        self.alive = [True] * len(self.prey)
        self.frozen = [False] * s.n_predators
        self.t = 0

    def on_grid(self, x, y) -> bool:
        return 0 <= x < self.s.x_size and 0 <= y < self.s.y_size

    def occupied(self, cell) -> bool:
        """Anything at ``cell``: a predator still on the grid or a living prey."""
        on_grid = [p for i, p in enumerate(self.predators) if not (self.frozen[i] and self.s.remove_frozen)]
        living = [q for j, q in enumerate(self.prey) if self.alive[j]]
        return cell in on_grid or cell in living

    def clamp(self, x, y):
        return min(max(x, 0), self.s.x_size - 1), min(max(y, 0), self.s.y_size - 1)

    def step(self, actions, predator_order, prey_order, rest, move):
        s = self.s
        reward = s.reward_time
        for i in np.argsort(predator_order):
            if self.frozen[i]:
                continue
            dx, dy = STEPS[int(actions[i])]
            x, y = self.predators[i]
            target = self.clamp(x + dx, y + dy)
            if not self.occupied(target):
                self.predators[i] = target
        for j in np.argsort(prey_order):
            if not self.alive[j]:
                continue
            x, y = self.prey[j]
            neighbours = [self.clamp(x + dx, y + dy) for dx, dy in (STEPS[u] for u in range(4))]
            free = [c for c in neighbours if not self.occupied(c)]
            predator_cells = [p for i, p in enumerate(self.predators) if not (self.frozen[i] and s.remove_frozen)]
            beside = any(c in predator_cells for c in neighbours)
            catchers = [
                i for i, (px, py) in enumerate(self.predators)
                if not self.frozen[i] and actions[i] == 5 and abs(px - x) + abs(py - y) == 1
            ]
            needed = s.catch_stag if self.kinds[j] == "stag" else s.catch_hare
            caught = len(catchers) >= needed
            if catchers and not caught:
                reward += s.miscapture
            if caught and beside:
                self.alive[j] = False
                reward += s.reward_stag if self.kinds[j] == "stag" else s.reward_hare
                if s.freeze_on_capture:
                    for i in catchers:
                        self.frozen[i] = True
                continue
            p_rest = s.p_stag_rest if self.kinds[j] == "stag" else s.p_hare_rest
            if rest[j] < p_rest or not free:
                continue
            self.prey[j] = free[min(int(move[j] * len(free)), len(free) - 1)]
        self.t += 1
        terminated = not any(self.alive) or all(self.frozen)
        truncated = self.t >= s.max_cycles and not terminated
        return reward, terminated, truncated

    def observation(self, i):
        s, r = self.s, self.s.view
        side = 2 * r + 1
        out = np.zeros((side, side, 3), np.int8)
        if self.frozen[i] and s.remove_frozen:
            return out
        px, py = self.predators[i]
        for a in range(side):
            for b in range(side):
                x, y = px - r + a, py - r + b
                if not self.on_grid(x, y):
                    out[a, b, 0] = -1 if s.observe_walls else 0
                    continue
                out[a, b, 0] = sum(1 for k, p in enumerate(self.predators) if p == (x, y) and not self.frozen[k])
                for j, q in enumerate(self.prey):
                    if self.alive[j] and q == (x, y):
                        out[a, b, 1 if self.kinds[j] == "stag" else 2] = 1
        return out

    def state(self):
        s = self.s
        grid = np.zeros((s.x_size, s.y_size, 3), np.float32)
        for i, (x, y) in enumerate(self.predators):
            if not (self.frozen[i] and s.remove_frozen):
                grid[x, y, 0] += 1
        for j, (x, y) in enumerate(self.prey):
            if self.alive[j]:
                grid[x, y, 1 if self.kinds[j] == "stag" else 2] = 1
        return grid.reshape(-1)

    def mask(self, i):
        allowed = np.zeros(6, bool)
        if self.frozen[i]:
            allowed[4] = True
            return allowed
        x, y = self.predators[i]
        for u in range(4):
            dx, dy = STEPS[u]
            allowed[u] = self.on_grid(x + dx, y + dy)
        allowed[4] = True
        living = [q for j, q in enumerate(self.prey) if self.alive[j]]
        allowed[5] = any((x + dx, y + dy) in living for dx, dy in (STEPS[u] for u in range(4)))
        return allowed
