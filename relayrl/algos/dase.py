"""DASE (paper 001, section 3.2; SPEC §1.2): K actor-critic agents learning from one
shared replay, other agents' transitions weighted by Deterministic Policy Similarity.

The replay is one buffer whose rows carry ``agent``, the index of the agent that collected
them. Each update, every agent draws its own uniform batch from it, splits it into
internal (its own) and external transitions, computes one DPS weight for the external
ones with its current actor (``relayrl.sharing.corrections``; action differences in units
of the action range's half-width, the unit of the exploration noise sigma, so tasks with
wider bounds are weighted alike; MuJoCo's bounds are [-1, 1]) and takes a weighted step
of its learner (TD3, DDPG or deterministic SAC); all K agents in one batched call.
"""

from dataclasses import dataclass

import numpy as np
import torch

from relayrl.algos.actor_critic import DeterministicActorLearner
from relayrl.replay import ReplayBuffer
from relayrl.sharing.corrections import Divergence, ReferenceCov, dps_weight, transition_weights


@dataclass(frozen=True)
class DPSSettings:
    """``divergence``: sym_kl (default, the reference code), jsd (the paper's text), kl
    (KL-DASE), none (ES-DASE). The reference Gaussian is N(0, sigma I) with sigma the
    exploration noise std, used literally as a covariance (eq. 7), or sigma^2 I."""

    divergence: Divergence = "sym_kl"
    reference_cov: ReferenceCov = "sigma"
    sigma: float = 0.1
    regulariser: float = 1e-6
    jsd_samples: int = 256


def dase_update(
    learner: DeterministicActorLearner, replay: ReplayBuffer, batch_size: int, dps: DPSSettings, generator: torch.Generator | None = None
) -> dict[str, float]:
    """One DASE step for all K agents of ``learner`` from the shared ``replay`` (1 buffer)."""
    k = learner.n_sets
    sampled = replay.sample(k * batch_size).data  # K independent uniform batches, drawn at once
    batch = {name: value.reshape(k, batch_size, *value.shape[2:]) for name, value in sampled.items()}
    external = torch.as_tensor(batch["agent"].astype(np.int64) != np.arange(k)[:, None], device=learner.device)
    # in units of the action range's half-width, like the exploration noise sigma
    actions = torch.as_tensor(batch["action"], device=learner.device).float() / learner.scale
    external_weights: list[torch.Tensor] = []

    def weights(own_actions: torch.Tensor) -> torch.Tensor:
        w_ext = dps_weight(
            actions, own_actions / learner.scale, external, dps.sigma, dps.divergence, dps.reference_cov,
            dps.regulariser, dps.jsd_samples, generator,
        )
        external_weights.append(w_ext)
        return transition_weights(external, w_ext)

    metrics = learner.update(batch, weights if dps.divergence != "none" else None)
    w_ext = external_weights[0] if external_weights else torch.ones(k)
    metrics["dps_weight"] = float(w_ext.mean())
    metrics.update({f"dps_weight/{i}": float(w) for i, w in enumerate(w_ext.tolist())})
    metrics["external_fraction"] = float(external.float().mean())
    return metrics
