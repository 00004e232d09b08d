"""Exchanges of experience between learners of one run (DESIGN.md §1), through the
``Learner`` methods only, so that they work the same on learners at home and on learner
actors' proxies (``relayrl.arena.ray``).

A learner pool connects them once, then per fragment calls ``before_learn`` once every
learner has observed its fragment and ``after_learn`` once all have learned on it. Each exchange reports its own
columns from the learners' reports (``columns``, ``report``) and keeps its counters in the
run's checkpoints.
"""

from collections.abc import Mapping
from typing import Any, Protocol

from relayrl.replay.shared import SharedReplay



class Sharer(Protocol):
    """What exchanges call on a learner (part of ``relayrl.algos.algorithm.Learner``)."""

    bytes_per_transition: int  # of a relayed transition (what ``outgoing`` counts are worth)

    def export_relay(self) -> None: ...

    def outgoing(self) -> tuple[Any, int]: ...

    def incoming(self, parts: list[Any]) -> None: ...

    def join_shared_replay(self, first_agent: int, source: Any) -> None: ...

    def shared_rows(self) -> Any: ...

    def shared_size(self, size: int) -> None: ...


Learners = Mapping[str, Sharer]


class Exchange(Protocol):
    between: list[str]

    def connect(self, learners: Learners) -> None: ...  # once, before the first fragment

    def before_learn(self, learners: Learners) -> None: ...

    def after_learn(self, learners: Learners) -> None: ...

    def columns(self) -> tuple[str, ...]: ...

    def report(self, reports: Mapping[str, dict[str, Any]]) -> dict[str, float]: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class RelayBetween:
    """The SUPER relay between learners (paper 000 section 4: agents trained apart): every
    learner of ``between`` sends the transitions its own selection rule picked in a fragment
    to every other one, after all have learned on it, one batch per sender; receivers store
    them before the next fragment."""

    def __init__(self, between: list[str]) -> None:
        self.between = between
        self.sent: dict[str, int] = {}  # transitions each learner sent since the last report
        self.bytes: dict[str, int] = {}  # of one transition each learner sends

    def connect(self, learners: Learners) -> None:
        for pid in self.between:
            learners[pid].export_relay()
            self.bytes[pid] = learners[pid].bytes_per_transition

    def before_learn(self, learners: Learners) -> None:
        return None

    def after_learn(self, learners: Learners) -> None:
        boxes = {pid: learners[pid].outgoing() for pid in self.between}
        for receiver in self.between:
            parts = [box for sender, (box, sent) in boxes.items() if sender != receiver and sent]
            if parts:
                learners[receiver].incoming(parts)
        for pid, (_, sent) in boxes.items():
            self.sent[pid] = self.sent.get(pid, 0) + sent

    def columns(self) -> tuple[str, ...]:
        """What each learner sent to every other one (each channel from a sender carries the
        same transitions), and the seconds the learners spent handing out, fetching and
        storing relayed batches (a timing)."""
        return (*(f"relayed_out/{pid}" for pid in self.between), *(f"relayed_out_bytes/{pid}" for pid in self.between), "relay_seconds")

    def report(self, reports: Mapping[str, dict[str, Any]]) -> dict[str, float]:
        row: dict[str, float] = {}
        for pid in self.between:
            sent = self.sent.get(pid, 0)
            row[f"relayed_out/{pid}"] = sent
            row[f"relayed_out_bytes/{pid}"] = sent * self.bytes[pid]
        row["relay_seconds"] = sum(reports[pid]["relay_s"] for pid in self.between)
        self.sent = {}
        return row

    def state_dict(self) -> dict[str, Any]:
        return {"sent": dict(self.sent)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.sent = dict(state["sent"])


class SharedReplayBetween:
    """DASE's one replay shared by learners (paper 001, section 3; Algorithm 1: the K agents
    store, then each samples from the shared buffer): each learner of ``between`` stores its
    agents' transitions in it, tagged after the agents of the learners before it
    (``first_agents``), and draws its batches from all of it with its own correction.
    ``replay`` is the one replay; ``host`` is where the rows go now: the replay itself, or
    the proxy of an actor that holds it (same ``add``)."""

    def __init__(self, between: list[str], first_agents: list[int], replay: SharedReplay) -> None:
        self.between = between
        self.first_agents = first_agents
        self.replay = replay
        self.host: Any = replay

    def connect(self, learners: Learners) -> None:
        for pid, first in zip(self.between, self.first_agents):
            learners[pid].join_shared_replay(first, self.replay)

    def before_learn(self, learners: Learners) -> None:
        """The fragment's rows of every learner into the one replay, in the list's order,
        before any of them draws."""
        size = self.host.add([learners[pid].shared_rows() for pid in self.between])
        for pid in self.between:
            learners[pid].shared_size(size)

    def after_learn(self, learners: Learners) -> None:
        return None

    def columns(self) -> tuple[str, ...]:
        """Each learner's mean DPS weight on the others' rows (1 without a correction), and the
        seconds the learners spent drawing from the shared replay (gathering the rows, from
        another actor where it lives in one: a timing)."""
        return (*(f"dps_weight/{pid}" for pid in self.between), "draw_seconds")

    def report(self, reports: Mapping[str, dict[str, Any]]) -> dict[str, float]:
        row = {f"dps_weight/{pid}": reports[pid]["dps_weight"] for pid in self.between}
        row["draw_seconds"] = sum(reports[pid]["draw_s"] for pid in self.between)
        return row

    def state_dict(self) -> dict[str, Any]:
        return self.replay.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.replay.load_state_dict(state)
