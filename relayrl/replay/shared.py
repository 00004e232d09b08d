"""One replay that the agents of several learners fill and draw from: DASE's shared replay
(paper 001, section 3; SPEC §1.2) between learners that may learn in different processes.

``SharedReplay`` holds the rows, each tagged with the agent that collected it (``agent``:
the agents of the first learner of the list, then the second's, ...). Per fragment its
host adds every learner's new rows in the list's order, so the ring's contents do not
depend on which learner finished first, and tells each learner the size after the adds.
Each learner then draws its fragment's batches with its own generator (uniform over the
filled rows, as DASE samples; ``SharedDraws``) and gathers them in one call: the same
draws whether the replay lives in the learner's process or in a Ray actor of its own.
"""

from typing import Any, Protocol

import numpy as np

from relayrl.replay.buffer import ReplayPlan


class RowSource(Protocol):
    def gather(self, slots: np.ndarray) -> dict[str, np.ndarray]: ...


class SharedReplay:
    """The rows of one shared replay (``plan``: one buffer with an ``agent`` field)."""

    def __init__(self, plan: ReplayPlan, seed: int) -> None:
        if plan.n_buffers != 1 or "agent" not in plan.fields:
            raise ValueError("a shared replay is one buffer whose rows name their agent")
        self.plan = plan
        self.buffer = plan.build(seed=seed)

    def add(self, parts: list[dict[str, np.ndarray] | None]) -> int:
        """Stores each learner's rows ``[M, ...]`` in order (None: it had none); returns the
        number of rows held."""
        given = [rows for rows in parts if rows is not None and len(rows["agent"])]
        if given:  # one add, in order
            self.buffer.add({name: np.concatenate([rows[name] for rows in given])[None] for name in given[0]})
        return self.size

    @property
    def size(self) -> int:
        """The number of rows held."""
        return int(self.buffer.size[0])

    def gather(self, slots: np.ndarray) -> dict[str, np.ndarray]:
        """The rows at ``slots`` (any shape) as arrays ``[*slots.shape, ...]``."""
        return {name: view[0].take(slots, axis=0) for name, view in self.buffer.storage().items()}

    def state_dict(self) -> dict[str, Any]:
        return self.buffer.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.buffer.load_state_dict(state)


class SharedDraws:
    """A learner's side of a shared replay: the rows its agents collected, tagged from
    ``first_agent`` on, wait in ``outbox`` for the host; ``draw`` takes a fragment's
    batches uniformly from the ``size`` rows the host last reported."""

    def __init__(self, first_agent: int, seed: int) -> None:
        self.first_agent = first_agent
        self.rng = np.random.default_rng(seed)
        self.outbox: list[dict[str, np.ndarray]] = []
        self.size = 0
        self.source: RowSource | None = None  # where the rows live: set by the run, not saved

    def put(self, rows: dict[str, np.ndarray]) -> None:
        self.outbox.append(rows)

    def take(self) -> dict[str, np.ndarray] | None:
        """The rows collected since the last call, for the host to add (None if none)."""
        box, self.outbox = self.outbox, []
        return {name: np.concatenate([rows[name] for rows in box]) for name in box[0]} if box else None

    def draw(self, n_batches: int, batch_size: int) -> dict[str, np.ndarray]:
        """``n_batches`` uniform draws of ``batch_size`` rows ``[n_batches, batch_size, ...]``
        with replacement, in one gather."""
        if self.size == 0 or self.source is None:
            raise ValueError("the shared replay is empty or not connected: its host adds the learners' rows before they learn")
        before = self.rng.bit_generator.state
        slots = (self.rng.random((n_batches, batch_size)) * self.size).astype(np.int64)
        try:
            rows = self.source.gather(slots)
        except BaseException:
            self.rng.bit_generator.state = before  # nothing drawn: the same call again draws the same slots
            raise
        return {name: np.array(value) for name, value in rows.items()}  # writable: Ray's arrays are not

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "size": self.size, "outbox": self.outbox}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.size = state["size"]
        self.outbox = list(state["outbox"])
