"""Wall time per section of the training loop, for ``relayrl bench`` (off in normal runs)."""

import contextlib
import time
from collections.abc import Callable

LOOP_SECTIONS = ("env", "act", "replay add", "td + relay", "sample", "update", "logging")


class _Section:
    __slots__ = ("timer", "name", "start")

    def __init__(self, timer: "SectionTimer", name: str) -> None:
        self.timer, self.name = timer, name

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc) -> None:
        if self.timer.sync is not None:  # CUDA work is asynchronous: charge it to its section
            self.timer.sync()
        self.timer.seconds[self.name] = self.timer.seconds.get(self.name, 0.0) + time.perf_counter() - self.start


class SectionTimer:
    """``with timer("update"): ...`` adds the block's wall time to ``seconds["update"]``
    while ``enabled``; disabled, it costs one attribute check."""

    def __init__(self) -> None:
        self.enabled = False
        self.sync: Callable[[], None] | None = None
        self.seconds: dict[str, float] = {}

    def __call__(self, name: str) -> contextlib.AbstractContextManager:
        return _Section(self, name) if self.enabled else contextlib.nullcontext()

    def reset(self) -> None:
        self.seconds = {}
