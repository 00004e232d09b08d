"""The ``sharing`` section of a config (DESIGN.md §1: selection at the sender x correction
at the receiver)."""

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from relayrl.core.registry import Lazy, Registry, of_type, registered
from relayrl.core.strict import Strict
from relayrl.sharing.selectors import SELECTORS

# ``sharing.correction`` -> builder(sharing, exploration noise sigma, device, seed) of the
# receiver's correction on a shared tagged replay (``relayrl.sharing.corrections``): ``dps``
# with ``sharing.divergence`` (DASE), ``none`` for plain sharing (ES-DASE: every transition
# weighted 1).
CORRECTIONS: Registry[Callable[..., Any]] = Registry("correction", of_type("callable"))
CORRECTIONS.add("dps", Lazy("relayrl.sharing.corrections:dps_correction"))
CORRECTIONS.add("none", Lazy("relayrl.sharing.corrections:plain_sharing"))


class SharingConfig(Strict):
    """What is shared and how the receiver corrects it (DESIGN.md §1: selection x correction).

    Selection at the sender: ``select`` x ``bandwidth`` (SUPER, paper 000 section 4.1).
    ``replay: shared`` keeps one replay for the team, each row tagged with the agent that
    collected it, instead of one replay per agent (DASE, paper 001; needs ``select: all``).
    ``correction: dps`` weights other agents' transitions by Deterministic Policy Similarity
    (paper 001 eq. 7, SPEC §1.2) with ``divergence`` sym_kl (the reference code's), jsd (the
    paper's text; Monte-Carlo, bounded by ln 2 so weights stay >= 0.5) or kl (KL-DASE);
    ``correction: none`` with a shared replay is ES-DASE.
    """

    select: Annotated[str, registered(SELECTORS)] = "none"
    bandwidth: float = Field(0.1, gt=0, le=1)
    window: int = Field(1500, ge=1)
    running_moments: bool = Field(False, description="gaussian: constant-memory moments instead of a window")
    gaussian_scale: Literal["std", "variance"] = "std"
    stochastic_alpha: float = Field(1.0, ge=0)
    stochastic_normaliser: Literal["fragment", "window"] = "fragment"
    team: list[int] | None = Field(None, description="agent indices that send and receive; None = all")
    priority: Literal["max", "sender_td"] = "max"
    replay: Literal["own", "shared"] = "own"
    correction: Annotated[str, registered(CORRECTIONS)] = "none"
    divergence: Literal["sym_kl", "jsd", "kl"] = "sym_kl"
    reference_cov: Literal["sigma", "std_squared"] = Field(
        "sigma", description="DPS reference N(0, s I): s = exploration std (paper eq. 7) or its square"
    )
    cov_regulariser: float = Field(1e-6, gt=0, description="added to the action-difference covariance's diagonal")
    jsd_samples: int = Field(256, ge=1, description="Monte-Carlo samples per distribution for divergence=jsd")

    @property
    def relays_by_bandwidth(self) -> bool:
        return SELECTORS[self.select].by_bandwidth

    def selection(self, group: str, n_agents: int, seed: int) -> tuple[Any, Any]:
        """The selector of ``select`` for a group's ``n_agents`` senders and the relay between
        the members of ``team`` (``relayrl.sharing.selectors``, ``relayrl.sharing.relay``)."""
        from relayrl.core.errors import ConfigError
        from relayrl.sharing.relay import Relay
        from relayrl.sharing.selectors import make_selector

        if self.team is not None and any(not 0 <= i < n_agents for i in self.team):
            raise ConfigError(f"sharing.team indices must be in [0, {n_agents}) for group {group!r}, got {self.team}")
        selector = make_selector(
            self.select, n_agents, bandwidth=self.bandwidth, window=self.window, gaussian_scale=self.gaussian_scale,
            running_moments=self.running_moments, stochastic_alpha=self.stochastic_alpha,
            stochastic_normaliser=self.stochastic_normaliser, seed=seed,
        )
        return selector, Relay(n_agents, self.team)

    @model_validator(mode="after")
    def _shared_replay(self) -> "SharingConfig":
        if self.replay == "shared" and self.select != "all":
            raise ValueError("a shared replay holds every agent's transitions: set sharing.select=all with sharing.replay=shared")
        if self.correction != "none" and self.replay != "shared":
            raise ValueError(f"correction={self.correction} weights other agents' rows of a shared replay: set sharing.replay=shared")
        return self
