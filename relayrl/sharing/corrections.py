"""Receiver-side corrections of shared experience: Deterministic Policy Similarity (DPS).

Paper 001, section 3.1 and Algorithm 1; SPEC §1.2. For one receiving agent and the
external transitions of its batch (collected by other agents):

    D = a_ext - pi_self(s_ext)                       (no gradient)
    mu = mean(D),  Sigma = cov(D) (1/(B_E - 1), Algorithm 1) + reg * I
    rho = divergence(N(mu, Sigma), N(0, C))          C = sigma I (eq. 7 and the reference
                                                     code, literally) or sigma^2 I
    w_ext = exp(-rho) (eq. 8),  w_int = 1

Divergences between Gaussians: ``sym_kl`` = (KL(P||Q) + KL(Q||P)) / 2 in closed form (what
the reference code computes, the default); ``kl`` = KL(P||Q) (KL-DASE); ``jsd`` =
Jensen-Shannon, what the paper names: no closed form for Gaussians, so a Monte-Carlo
estimate with a fixed number of samples. JSD is bounded by ln 2, so its weights never fall
below 0.5 (the paper's claim that distinct policies get weight 0 holds only for the
unbounded KL forms). ``none`` is ES-DASE: plain sharing, w = 1.

Everything is batched over a leading agent axis ``[K, ...]``.
"""

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch

if TYPE_CHECKING:  # the sharing section registers these as its corrections
    from relayrl.sharing.config import SharingConfig

Divergence = Literal["sym_kl", "kl", "jsd", "none"]
ReferenceCov = Literal["sigma", "std_squared"]


def _chol(cov: torch.Tensor) -> torch.Tensor:
    return torch.linalg.cholesky(cov)


def gaussian_kl(mu_p: torch.Tensor, cov_p: torch.Tensor, mu_q: torch.Tensor, cov_q: torch.Tensor) -> torch.Tensor:
    """KL(N(mu_p, cov_p) || N(mu_q, cov_q)) for batches ``mu [..., n]``, ``cov [..., n, n]``:
    (tr(cov_q^-1 cov_p) + d^T cov_q^-1 d - n + ln det cov_q - ln det cov_p) / 2, d = mu_q - mu_p."""
    n = mu_p.shape[-1]
    chol_q, chol_p = _chol(cov_q), _chol(cov_p)
    solved = torch.cholesky_solve(cov_p, chol_q)  # cov_q^-1 cov_p
    trace = solved.diagonal(dim1=-2, dim2=-1).sum(-1)
    d = (mu_q - mu_p).unsqueeze(-1)
    mahalanobis = (d * torch.cholesky_solve(d, chol_q)).sum((-2, -1))
    logdet_q = 2 * chol_q.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    logdet_p = 2 * chol_p.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    return 0.5 * (trace + mahalanobis - n + logdet_q - logdet_p)


def gaussian_sym_kl(mu_p: torch.Tensor, cov_p: torch.Tensor, mu_q: torch.Tensor, cov_q: torch.Tensor) -> torch.Tensor:
    """(KL(P||Q) + KL(Q||P)) / 2."""
    return 0.5 * (gaussian_kl(mu_p, cov_p, mu_q, cov_q) + gaussian_kl(mu_q, cov_q, mu_p, cov_p))


def gaussian_jsd(
    mu_p: torch.Tensor,
    cov_p: torch.Tensor,
    mu_q: torch.Tensor,
    cov_q: torch.Tensor,
    samples: int = 256,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Monte-Carlo Jensen-Shannon divergence: (E_P[ln p - ln m] + E_Q[ln q - ln m]) / 2 with
    m = (p + q) / 2, ``samples`` draws from each of P and Q. In [0, ln 2] up to MC error."""
    p = torch.distributions.MultivariateNormal(mu_p, scale_tril=_chol(cov_p))
    q = torch.distributions.MultivariateNormal(mu_q, scale_tril=_chol(cov_q))

    def half(dist: torch.distributions.MultivariateNormal) -> torch.Tensor:
        noise = torch.randn((samples, *dist.loc.shape), generator=generator, dtype=dist.loc.dtype, device=dist.loc.device)
        x = dist.loc + (dist.scale_tril @ noise.unsqueeze(-1)).squeeze(-1)
        log_p, log_q = p.log_prob(x), q.log_prob(x)
        log_m = torch.logaddexp(log_p, log_q) - math.log(2.0)
        return (dist.log_prob(x) - log_m).mean(0)

    return 0.5 * (half(p) + half(q))


def dps_weight(
    external_actions: torch.Tensor,
    policy_actions: torch.Tensor,
    mask: torch.Tensor,
    sigma: float,
    divergence: Divergence = "sym_kl",
    reference_cov: ReferenceCov = "sigma",
    regulariser: float = 1e-6,
    jsd_samples: int = 256,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """One DPS weight per receiving agent, ``[K]``.

    ``external_actions``, ``policy_actions``: ``[K, B, n]`` actions stored with each batch
    transition and the receiver's own deterministic actions on the same states;
    ``mask [K, B]`` marks the external transitions (collected by another agent). An agent
    with fewer than two external transitions has no covariance estimate: its Sigma is the
    regulariser alone.
    """
    k, _, n = external_actions.shape
    if divergence == "none":
        return torch.ones(k, dtype=external_actions.dtype, device=external_actions.device)
    with torch.no_grad():
        m = mask.to(external_actions.dtype).unsqueeze(-1)  # [K, B, 1]
        count = m.sum(1)  # [K, 1]
        d = (external_actions - policy_actions) * m
        mu = d.sum(1) / count.clamp(min=1.0)  # [K, n]
        centred = (d - mu.unsqueeze(1)) * m
        cov = centred.transpose(1, 2) @ centred / (count - 1.0).clamp(min=1.0).unsqueeze(-1)  # Algorithm 1: 1/(B_E - 1)
        eye = torch.eye(n, dtype=d.dtype, device=d.device).expand(k, n, n)
        cov = cov + regulariser * eye  # never singular
        scale = sigma if reference_cov == "sigma" else sigma * sigma
        mu_ref, cov_ref = torch.zeros_like(mu), scale * eye
        if divergence == "sym_kl":
            rho = gaussian_sym_kl(mu, cov, mu_ref, cov_ref)
        elif divergence == "kl":
            rho = gaussian_kl(mu, cov, mu_ref, cov_ref)
        elif divergence == "jsd":
            rho = gaussian_jsd(mu, cov, mu_ref, cov_ref, jsd_samples, generator)
        else:
            raise ValueError(f"unknown divergence {divergence!r}; use sym_kl, kl, jsd or none")
        return torch.exp(-rho.clamp(min=0.0))


def transition_weights(mask: torch.Tensor, external_weight: torch.Tensor) -> torch.Tensor:
    """Per-transition weights ``[K, B]``: the agent's DPS weight on external transitions,
    1 on its own (internal) ones."""
    return torch.where(mask, external_weight.unsqueeze(-1), torch.ones((), dtype=external_weight.dtype))


def weighted_mean(values: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """sum_i w_i v_i / sum_i w_i over the last axis (SPEC §1.2's critic and actor losses)."""
    return (weights * values).sum(-1) / weights.sum(-1)


@dataclass(frozen=True)
class DPSParams:
    """``divergence``: sym_kl (default, the reference code), jsd (the paper's text), kl
    (KL-DASE), none (ES-DASE). The reference Gaussian is N(0, sigma I) with sigma the
    exploration noise std, used literally as a covariance (eq. 7), or sigma^2 I."""

    divergence: Divergence = "sym_kl"
    reference_cov: ReferenceCov = "sigma"
    sigma: float = 0.1
    regulariser: float = 1e-6
    jsd_samples: int = 256


class ExternalWeights:
    """The weights of one DASE step (paper 001, section 3.2): K agents' draws ``[K, B]``
    from the shared replay, split into each agent's own rows and the others' (``agent``
    tags; ``own [K]``: the drawing agents' tags). Called with the agents' own actions on the batch's states, it returns the
    per-transition weights; ``metrics`` reports the external weight and share."""

    def __init__(
        self, batch: dict[str, np.ndarray], scale: torch.Tensor, params: DPSParams, generator: torch.Generator, own: np.ndarray
    ) -> None:
        self.params, self.generator, self.scale = params, generator, scale
        self.external = torch.as_tensor(batch["agent"].astype(np.int64) != own[:, None], device=scale.device)
        # in units of the action range's half-width, like the exploration noise sigma
        self.actions = torch.as_tensor(batch["action"], device=scale.device).float() / scale
        self.external_weight = torch.ones(len(own))

    def __call__(self, own_actions: torch.Tensor) -> torch.Tensor:
        s = self.params
        self.external_weight = dps_weight(
            self.actions, own_actions / self.scale, self.external, s.sigma, s.divergence, s.reference_cov,
            s.regulariser, s.jsd_samples, self.generator,
        )
        return transition_weights(self.external, self.external_weight)

    def for_update(self) -> "ExternalWeights | None":
        """What the update takes: these weights, or none for plain sharing (ES-DASE)."""
        return self if self.params.divergence != "none" else None

    def metrics(self) -> dict[str, float]:
        w = self.external_weight
        metrics = {"dps_weight": float(w.mean())}
        metrics.update({f"dps_weight/{i}": float(v) for i, v in enumerate(w.tolist())})
        metrics["external_fraction"] = float(self.external.float().mean())
        return metrics


class DPSCorrection:
    """DASE's receiver side on a shared tagged replay: each draw's external transitions
    weighted by DPS with the receiving agent's current actor (``ExternalWeights``)."""

    def __init__(self, params: DPSParams, device: torch.device, seed: int) -> None:
        self.params = params
        self.generator = torch.Generator(device=device).manual_seed(seed)

    def weights(self, batch: dict[str, np.ndarray], scale: torch.Tensor, own: np.ndarray) -> ExternalWeights:
        """The weights of the K agents' draws ``batch [K, B]``; ``own [K]``: their ``agent`` tags."""
        return ExternalWeights(batch, scale, self.params, self.generator, own)

    def state_dict(self) -> dict[str, Any]:
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generator.set_state(state["generator"])


def dps_correction(sharing: "SharingConfig", sigma: float, device: torch.device, seed: int) -> DPSCorrection:
    """DPS weights with ``sharing.divergence`` (DASE); ``sigma``: the exploration noise's std."""
    params = DPSParams(sharing.divergence, sharing.reference_cov, sigma, sharing.cov_regulariser, sharing.jsd_samples)
    return DPSCorrection(params, device, seed)


def plain_sharing(sharing: "SharingConfig", sigma: float, device: torch.device, seed: int) -> DPSCorrection:
    """Every transition weighted 1 (ES-DASE)."""
    params = DPSParams("none", sharing.reference_cov, sigma, sharing.cov_regulariser, sharing.jsd_samples)
    return DPSCorrection(params, device, seed)
