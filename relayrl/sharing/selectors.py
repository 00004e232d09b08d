"""SUPER experience selection (paper 000, section 4.1; SPEC §1.1), vectorised over senders.

A selector sees the |td| of each sender's new fragment, ``td [N, M]`` with a ``valid [N, M]``
mask, and returns which transitions each sender relays. Windowed rules keep the last
``window`` |td| per sender; the window is extended with the fragment before the threshold
is taken, and thresholds are recomputed once per fragment (as the reference code does).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from relayrl.core.errors import ConfigError
from relayrl.core.registry import Registry, of_type


class Selector(Protocol):
    """``bandwidth``: the target share b of transitions relayed, settable between two
    fragments (population-based training perturbs it); rules that ignore b (``all``,
    ``none``) have ``bandwidth = None``."""

    bandwidth: float | None

    def select(self, td_abs: np.ndarray, valid: np.ndarray) -> np.ndarray: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class TdWindow:
    """The last ``size`` |td| of each of N senders as a ring ``[N, size]`` (NaN = empty)."""

    def __init__(self, n_senders: int, size: int) -> None:
        self.values = np.full((n_senders, size), np.nan)
        self.next = np.zeros(n_senders, np.int64)

    def extend(self, td_abs: np.ndarray, valid: np.ndarray) -> None:
        """Appends each sender's valid values in order (senders append different counts)."""
        size = self.values.shape[1]
        offsets = np.cumsum(valid, axis=1) - 1
        rows, cols = np.nonzero(valid)
        slots = (self.next[rows] + offsets[rows, cols]) % size
        self.values[rows, slots] = td_abs[rows, cols]
        self.next = (self.next + valid.sum(axis=1)) % size

    def state_dict(self) -> dict[str, Any]:
        return {"values": self.values.copy(), "next": self.next.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.values, self.next = state["values"].copy(), state["next"].copy()


class QuantileSelector:
    """Relay |td| above the (1 - b) quantile of the sender's window (linear interpolation,
    as np.percentile). Strict ">" as the reference, so an all-equal window (e.g. all-zero td
    early on) relays nothing; b >= 1 relays everything."""

    def __init__(self, n_senders: int, bandwidth: float, window: int) -> None:
        self.bandwidth = bandwidth
        self.window = TdWindow(n_senders, window)

    def threshold(self) -> np.ndarray:
        return np.nanquantile(self.window.values, 1.0 - self.bandwidth, axis=1)

    def select(self, td_abs: np.ndarray, valid: np.ndarray) -> np.ndarray:
        self.window.extend(td_abs, valid)
        if self.bandwidth >= 1.0:
            return valid.copy()
        return valid & (td_abs > self.threshold()[:, None])

    def state_dict(self) -> dict[str, Any]:
        return {"bandwidth": self.bandwidth, "window": self.window.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.bandwidth = state["bandwidth"]
        self.window.load_state_dict(state["window"])


class GaussianSelector:
    """Relay |td| > mu + c * sigma with c = isf_N(0,1)(b) (paper 000, eq. 3).

    ``scale="std"`` uses the standard deviation; ``scale="variance"`` uses sigma^2, what the
    paper's eq. 3 writes and the reference code passes (a compatibility switch).
    ``running=True`` keeps exponentially weighted moments with span ``window`` instead of
    a window: constant memory, the paper's motivation for this rule.
    """

    def __init__(self, n_senders: int, bandwidth: float, window: int, scale: str = "std", running: bool = False) -> None:
        if scale not in ("std", "variance"):
            raise ValueError(f"gaussian scale must be 'std' or 'variance', got {scale!r}")
        self.bandwidth = bandwidth
        self.scale = scale
        self.running = running
        self.decay = 2.0 / (window + 1.0)
        self.window = None if running else TdWindow(n_senders, window)
        self.mean = np.zeros(n_senders)
        self.var = np.zeros(n_senders)
        self.seen = np.zeros(n_senders, bool)

    @property
    def bandwidth(self) -> float:
        return self._bandwidth

    @bandwidth.setter
    def bandwidth(self, value: float) -> None:
        """b and the threshold's factor c = isf(b) it fixes (b >= 1: c = -inf, relay all)."""
        from scipy.stats import norm  # here: scipy.stats takes a second to import, and only this rule needs it

        self._bandwidth = value
        self.c = float(norm.isf(value)) if value < 1.0 else -np.inf

    def _update_running(self, td_abs: np.ndarray, valid: np.ndarray) -> None:
        """Folds the fragment in as one block of k values: weight lambda = 1 - (1 - d)^k for
        the block, and the two-component mixture's mean and variance."""
        k = valid.sum(axis=1)
        has = k > 0
        safe_k = np.maximum(k, 1)
        block_mean = np.where(valid, td_abs, 0.0).sum(axis=1) / safe_k
        block_var = np.where(valid, (td_abs - block_mean[:, None]) ** 2, 0.0).sum(axis=1) / safe_k
        lam = np.where(self.seen, 1.0 - (1.0 - self.decay) ** k, 1.0)
        delta = block_mean - self.mean
        mean = self.mean + lam * delta
        var = (1.0 - lam) * (self.var + lam * delta * delta) + lam * block_var
        self.mean, self.var = np.where(has, mean, self.mean), np.where(has, var, self.var)
        self.seen |= has

    def threshold(self) -> np.ndarray:
        if self.running:
            mean, var = self.mean, self.var
        else:
            mean, var = np.nanmean(self.window.values, axis=1), np.nanvar(self.window.values, axis=1)
        spread = np.sqrt(var) if self.scale == "std" else var
        # an (almost) all-equal window has spread at rounding level: relay only values
        # clearly above its mean, so a constant td stream relays nothing
        degenerate = spread <= 1e-9 * np.abs(mean)
        return np.where(degenerate, mean + 1e-9 * np.abs(mean), mean + self.c * spread)

    def select(self, td_abs: np.ndarray, valid: np.ndarray) -> np.ndarray:
        if self.running:
            self._update_running(td_abs, valid)
        else:
            self.window.extend(td_abs, valid)
        if self.c == -np.inf:
            return valid.copy()
        if self.c == np.inf:
            return np.zeros_like(valid)
        return valid & (td_abs > self.threshold()[:, None])

    def state_dict(self) -> dict[str, Any]:
        state = {"bandwidth": self.bandwidth, "mean": self.mean.copy(), "var": self.var.copy(), "seen": self.seen.copy()}
        if self.window is not None:
            state["window"] = self.window.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.bandwidth = state["bandwidth"]
        self.mean, self.var, self.seen = state["mean"].copy(), state["var"].copy(), state["seen"].copy()
        if self.window is not None:
            self.window.load_state_dict(state["window"])


class StochasticSelector:
    """Relay each transition with probability min(1, b * n * |td_i|^alpha / sum_j |td_j|^alpha)
    (paper 000, section 4.1). ``normaliser="fragment"`` sums over the n transitions of the
    fragment (the reference code); ``"window"`` over the sender's window (the paper's text),
    n then being the window's filled size."""

    def __init__(self, n_senders: int, bandwidth: float, window: int, alpha: float, normaliser: str, seed: int) -> None:
        if normaliser not in ("fragment", "window"):
            raise ValueError(f"stochastic normaliser must be 'fragment' or 'window', got {normaliser!r}")
        self.bandwidth, self.alpha, self.normaliser = bandwidth, alpha, normaliser
        self.window = TdWindow(n_senders, window) if normaliser == "window" else None
        self.rng = np.random.default_rng(seed)

    def probabilities(self, td_abs: np.ndarray, valid: np.ndarray) -> np.ndarray:
        p = np.where(valid, td_abs**self.alpha, 0.0)
        if self.window is None:
            total, count = p.sum(axis=1), valid.sum(axis=1)
        else:
            self.window.extend(td_abs, valid)
            filled = np.isfinite(self.window.values)
            total = np.where(filled, self.window.values**self.alpha, 0.0).sum(axis=1)
            count = filled.sum(axis=1)
        scale = np.divide(self.bandwidth * count, total, out=np.zeros_like(total, dtype=float), where=total > 0)
        return np.where(valid, np.minimum(1.0, scale[:, None] * p), 0.0)

    def select(self, td_abs: np.ndarray, valid: np.ndarray) -> np.ndarray:
        return self.rng.random(td_abs.shape) < self.probabilities(td_abs, valid)

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"bandwidth": self.bandwidth, "rng": self.rng.bit_generator.state}
        if self.window is not None:
            state["window"] = self.window.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.bandwidth = state["bandwidth"]
        self.rng.bit_generator.state = state["rng"]
        if self.window is not None:
            self.window.load_state_dict(state["window"])


class UniformSelector:
    """Ablation: relay each transition with probability b, ignoring td."""

    def __init__(self, bandwidth: float, seed: int) -> None:
        self.bandwidth = bandwidth
        self.rng = np.random.default_rng(seed)

    def select(self, td_abs: np.ndarray, valid: np.ndarray) -> np.ndarray:
        return valid & (self.rng.random(td_abs.shape) < self.bandwidth)

    def state_dict(self) -> dict[str, Any]:
        return {"bandwidth": self.bandwidth, "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.bandwidth = state["bandwidth"]
        self.rng.bit_generator.state = state["rng"]


class FixedSelector:
    """``all`` (share-all ablation) or ``none`` (independent learners)."""

    bandwidth = None  # no share to target: all or nothing

    def __init__(self, share: bool) -> None:
        self.share = share

    def select(self, td_abs: np.ndarray, valid: np.ndarray) -> np.ndarray:
        return valid.copy() if self.share else np.zeros_like(valid)

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


@dataclass(frozen=True)
class SelectionParams:
    """What a selector is built from: the ``sharing`` section's selection keys."""

    n_senders: int
    bandwidth: float
    window: int
    gaussian_scale: str = "std"
    running_moments: bool = False
    stochastic_alpha: float = 1.0
    stochastic_normaliser: str = "fragment"
    seed: int = 0


@dataclass(frozen=True)
class SelectionRule:
    """A ``sharing.select`` mode: ``build`` makes its selector; ``by_bandwidth``: it relays a
    share b of the transitions (``sharing.bandwidth``, what population-based training perturbs)."""

    build: Callable[[SelectionParams], Selector]
    by_bandwidth: bool


# Selection rules by their ``sharing.select`` name; a new rule registers here.
SELECTORS: Registry[SelectionRule] = Registry("selection mode", of_type(SelectionRule))
SELECTORS.add("quantile", SelectionRule(lambda s: QuantileSelector(s.n_senders, s.bandwidth, s.window), True))
SELECTORS.add(
    "gaussian",
    SelectionRule(lambda s: GaussianSelector(s.n_senders, s.bandwidth, s.window, s.gaussian_scale, s.running_moments), True),
)
SELECTORS.add(
    "stochastic",
    SelectionRule(lambda s: StochasticSelector(s.n_senders, s.bandwidth, s.window, s.stochastic_alpha, s.stochastic_normaliser, s.seed), True),
)
SELECTORS.add("uniform", SelectionRule(lambda s: UniformSelector(s.bandwidth, s.seed), True))
SELECTORS.add("all", SelectionRule(lambda s: FixedSelector(True), False))
SELECTORS.add("none", SelectionRule(lambda s: FixedSelector(False), False))


def bandwidth_rules() -> list[str]:
    """The selection modes that relay a share b of the transitions."""
    return [mode for mode in SELECTORS if SELECTORS[mode].by_bandwidth]


def make_selector(mode: str, n_senders: int, *, bandwidth: float, window: int, **options: Any) -> Selector:
    """The selector registered as ``mode``; ``options``: the other ``SelectionParams``. One
    registered by a user must have the ``Selector`` protocol's methods."""
    if mode not in SELECTORS:
        raise ValueError(f"unknown selection mode {mode!r}; allowed: {', '.join(SELECTORS)}")
    selector = SELECTORS[mode].build(SelectionParams(n_senders, bandwidth, window, **options))
    missing = [name for name in ("select", "state_dict", "load_state_dict", "bandwidth") if not hasattr(selector, name)]
    if missing:
        raise ConfigError(f"the selector of sharing.select={mode} ({type(selector).__name__}) lacks {missing}: a selector has the methods and "
                          "the attribute of relayrl.sharing.selectors.Selector (its state is saved with every checkpoint)")
    return selector


def selection(selector: Selector, scores: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``selector.select``, with its answer checked: a boolean mask of the scores' shape
    ``[N, M]`` (a user's rule that returned indices relayed half the steps at random)."""
    chosen = selector.select(scores, valid)
    if not (isinstance(chosen, np.ndarray) and chosen.dtype == np.bool_ and chosen.shape == scores.shape):
        got = f"{type(chosen).__name__} {getattr(chosen, 'dtype', '')} of shape {getattr(chosen, 'shape', '?')}"
        raise ConfigError(f"{type(selector).__name__}.select returned a {got}; it must return a boolean mask of the scores' shape "
                          f"{scores.shape} (True: the step is relayed)")
    return chosen
