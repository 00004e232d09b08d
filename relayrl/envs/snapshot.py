"""Exact snapshots of environment objects, for checkpoints.

Many Farama envs are ``EzPickle``: pickling them records only the constructor arguments,
so an unpickled env is a fresh one. A snapshot pickles such objects by their full
``__dict__`` instead, which captures the state mid-episode (positions, RNGs, counters).
"""

import io
import pickle
from typing import Any

from gymnasium.utils import EzPickle


def _restore(obj: Any, state: dict) -> None:
    obj.__dict__.update(state)


class _StatePickler(pickle.Pickler):
    def reducer_override(self, obj: Any):
        if isinstance(obj, EzPickle) and not isinstance(obj, type):
            return object.__new__, (type(obj),), obj.__dict__, None, None, _restore
        return NotImplemented


def snapshot(obj: Any) -> bytes:
    buffer = io.BytesIO()
    _StatePickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


def restore(data: bytes) -> Any:
    return pickle.loads(data)
