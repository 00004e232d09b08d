"""One process per run directory: an advisory lock held while a run trains.

Two processes appending to the same metrics and checkpoints would corrupt both; the lock
is released by the OS when its holder exits, also on a crash or kill.
"""

import fcntl
import os
from pathlib import Path
from typing import IO

from relayrl.core.errors import RelayRLError

LOCK_FILE = ".lock"


class RunLock:
    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK_FILE
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        handle = self._take()
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._handle = handle

    def check(self) -> None:
        """Refuses, naming the holder, where a live process trains the run directory now
        (before a command builds anything for it)."""
        if self.path.is_file():
            handle = self._take()
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()

    def _take(self) -> IO[str]:
        handle = self.path.open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise RelayRLError(f"{self.path.parent} is being trained by pid {holder}; wait for it or stop it first") from None
        return handle

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


def is_locked(run_dir: Path) -> bool:
    """Whether a live process is training this run directory now."""
    path = run_dir / LOCK_FILE
    if not path.is_file():
        return False
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False
