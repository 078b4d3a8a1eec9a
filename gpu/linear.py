"""The linear Cell Division policies PPO trains: LinearNet (Hard, 13 weights) and SwitchingLinearNet
(the legacy Elite, 26 weights), as in the seed's ``ai/src/ai/linear_torch.py``.

Both score every candidate cell of a position from its 14 features (games/celldiv/features.py) and
return logits over the position's candidates. Batches are padded: ``feats [B, K, 14]`` with
``mask [B, K]`` True on real candidates; padded candidates get a large negative logit, never -inf,
so softmax and entropy stay finite.

The same scoring is available in numpy (``scores_np``) for self-play, where one position at a time
is scored and a torch call would cost more than the arithmetic.

Initialisation (``init``): ``"random"`` draws every weight from N(0, init_scale^2) with a torch
generator seeded by ``seed`` (the PPO tests start here), ``"medium"`` copies Medium's vector
(1, 1, 0.3, 0, ...), ``"hard"`` the seed's shipped Hard vector; the switching net puts the same
vector in both its early and late halves.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from games.celldiv.players import HARD_WEIGHTS, MEDIUM_WEIGHTS, LinearPlayer, SwitchingPlayer, linear_scores

NUM_WEIGHTS = 13  # features 0..12; feature 13 (game_progress) only drives the switch
PROGRESS = 13
MASKED_LOGIT = -1e9
INITS = ("random", "medium", "hard")


def _init_vector(init: str, seed: int, scale: float) -> torch.Tensor:
    """``[13]`` float32 starting weights (see the module docstring)."""
    if init == "random":
        g = torch.Generator().manual_seed(int(seed))
        return torch.randn(NUM_WEIGHTS, generator=g) * scale
    if init == "medium":
        return torch.tensor(MEDIUM_WEIGHTS, dtype=torch.float32)
    if init == "hard":
        return torch.tensor(HARD_WEIGHTS, dtype=torch.float32)
    raise ValueError(f"init {init!r} is not one of {INITS}")


def masked_logits(scores: torch.Tensor, mask: torch.Tensor, temperature: torch.Tensor | None) -> torch.Tensor:
    """``scores [B, K]`` / ``temperature [B]`` with padded candidates pushed to MASKED_LOGIT."""
    if temperature is not None:
        scores = scores / temperature[:, None]
    return scores.masked_fill(~mask, MASKED_LOGIT)


class LinearNet(nn.Module):
    """score = feats[:, :13] @ w; 13 weights. ``kind`` names the weight-file kind it exports to."""

    kind = "linear"

    def __init__(self, *, init: str = "random", seed: int = 0, init_scale: float = 0.5) -> None:
        super().__init__()
        self.w = nn.Parameter(_init_vector(init, seed, init_scale))

    def scores(self, feats: torch.Tensor) -> torch.Tensor:
        """``feats [B, K, 14]`` -> ``[B, K]``."""
        return feats[..., :NUM_WEIGHTS] @ self.w

    def forward(
        self, feats: torch.Tensor, mask: torch.Tensor, temperature: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits ``[B, K]`` of the behaviour policy softmax(score / temperature) over candidates."""
        return masked_logits(self.scores(feats), mask, temperature)

    def vectors(self) -> dict[str, np.ndarray]:
        """The weights as ``save_weights`` takes them: ``{"weights": [13]}`` float64."""
        return {"weights": self.w.detach().double().numpy().copy()}

    def flat(self) -> np.ndarray:
        """``[13]`` float64, the form ``scores_np`` takes."""
        return self.vectors()["weights"]

    def player(self, name: str = "linear") -> LinearPlayer:
        """The raw trained policy, greedy (not Hard's 0.75 Medium blend: see players.hard_player)."""
        return LinearPlayer(self.flat(), name=name)


class SwitchingLinearNet(nn.Module):
    """score = sum_j f_j (w_early_j (1 - gp) + w_late_j gp), gp = game_progress = feats[:, 13]."""

    kind = "switching_linear"

    def __init__(self, *, init: str = "random", seed: int = 0, init_scale: float = 0.5) -> None:
        super().__init__()
        self.w_early = nn.Parameter(_init_vector(init, seed, init_scale))
        # a different draw for the late half, so a random init does not start on the diagonal
        self.w_late = nn.Parameter(_init_vector(init, seed + 1, init_scale))

    def scores(self, feats: torch.Tensor) -> torch.Tensor:
        """``feats [B, K, 14]`` -> ``[B, K]``."""
        gp = feats[..., PROGRESS : PROGRESS + 1]  # [B, K, 1]
        w = self.w_early * (1 - gp) + self.w_late * gp  # [B, K, 13]
        return (feats[..., :NUM_WEIGHTS] * w).sum(-1)

    def forward(
        self, feats: torch.Tensor, mask: torch.Tensor, temperature: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits ``[B, K]`` of the behaviour policy softmax(score / temperature) over candidates."""
        return masked_logits(self.scores(feats), mask, temperature)

    def vectors(self) -> dict[str, np.ndarray]:
        """``{"w_early": [13], "w_late": [13]}`` float64, as ``save_weights`` takes them."""
        return {
            "w_early": self.w_early.detach().double().numpy().copy(),
            "w_late": self.w_late.detach().double().numpy().copy(),
        }

    def flat(self) -> np.ndarray:
        """``[2, 13]`` float64 (early, late), the form ``scores_np`` takes."""
        v = self.vectors()
        return np.stack([v["w_early"], v["w_late"]])

    def player(self, name: str = "switching") -> SwitchingPlayer:
        v = self.vectors()
        return SwitchingPlayer(v["w_early"], v["w_late"], name=name)


MODELS: dict[str, type[LinearNet] | type[SwitchingLinearNet]] = {
    "linear": LinearNet,
    "switching": SwitchingLinearNet,
}


def make_net(model: str, *, init: str = "random", seed: int = 0, init_scale: float = 0.5) -> nn.Module:
    """``"linear"`` -> LinearNet, ``"switching"`` -> SwitchingLinearNet."""
    if model not in MODELS:
        raise ValueError(f"model {model!r} is not one of {tuple(MODELS)}")
    return MODELS[model](init=init, seed=seed, init_scale=init_scale)


def scores_np(weights: np.ndarray, feats: np.ndarray) -> np.ndarray:
    """Numpy twin of ``.scores`` for one position: ``weights [13]`` (linear) or ``[2, 13]``
    (switching: early, late), ``feats [K, 14]`` -> ``[K]``. The players' own arithmetic (players.linear_scores):
    identical feature rows score identically, so a greedy choice breaks exact ties to the lowest index."""
    if weights.ndim == 1:
        return linear_scores(feats, weights)
    gp = feats[0, PROGRESS] if len(feats) else 0.0
    return linear_scores(feats, weights[0] * (1 - gp) + weights[1] * gp)
