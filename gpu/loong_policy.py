"""Batched policies for the Loong simulator: ``policy(obs: LoongObs) -> Turn``.

Every policy here is a pure function of the observation, including its randomness: draws come from the
dragon's own SplitMix64 stream (``obs.rng``, seeded by rules decision 17 and advanced once per turn of
that dragon), so results do not depend on the batch, the lane order or the parallel-turn scheduler.

- ``RandomPolicy``: exactly ``games.loong.bots.RandomBot`` (same draws, same choices), batched.
- ``ChaosPolicy``: random legal-looking play that also sprints, splits, forfeits and sends sonar
  (for rule coverage in tests and benchmarks).
- ``NetworkPolicy``: the hook for a network: ``fn(local [n, C, 7, 7], vector [n, V]) -> logits [n, 4]``
  over MOVE directions; greedy or sampled with the dragon's stream (Gumbel-max), on the device.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from gpu.loong_obs import LoongObs
from gpu.loong_sim import DEFAULT_SPRINT_CAP, FORFEIT, MOVE, SPLIT, SPRINT, Turn
from gpu.loong_tables import GOLDEN, free_steps_of, mix64


def draws(rng: torch.Tensor, k: int) -> list[torch.Tensor]:
    """The next k SplitMix64 outputs of each stream (int64 bit patterns)."""
    return [mix64(rng + _wrap((j + 1) * GOLDEN)) for j in range(k)]


def _wrap(x: int) -> int:
    """A Python integer as int64 bits (mod 2^64, signed)."""
    return (x + (1 << 63)) % (1 << 64) - (1 << 63)


def below(u: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """Lemire's reduction of uint64 ``u`` into [0, n) for 1 <= n < 2^31: floor(u * n / 2^64)."""
    hi = (u >> 32) & 0xFFFFFFFF
    lo = u & 0xFFFFFFFF
    return (hi * n + ((lo * n) >> 32)) >> 32


def unit(u: torch.Tensor) -> torch.Tensor:
    """A float in [0, 1) from the top 24 bits of ``u``."""
    return ((u >> 40) & 0xFFFFFF).float() / float(1 << 24)


def pick(mask: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Uniform choice among the True entries of ``mask [n, 4]`` (all four when none), as RandomBot: the
    r-th allowed direction in N, E, S, W order, r = below(u, count): the number of directions with at most
    r allowed ones up to and including them. Works on the [4, n] transpose (the observation's own layout),
    so every op runs over n."""
    bits, count, nth = _pick_tables(mask.device)
    code = (mask.T.to(torch.uint8) * bits).sum(0).long()  # N = 1, E = 2, S = 4, W = 8
    return nth.index_select(0, code * 4 + below(u, count.index_select(0, code)))


_PICK_TABLES: dict = {}


def _pick_tables(device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Tables over the 16 masks of allowed directions (mask 0, none allowed, stands for all four): the bit
    of each direction, how many are allowed, and the r-th allowed direction (at code * 4 + r)."""
    if device not in _PICK_TABLES:
        nth = [([d for d in range(4) if (c or 15) >> d & 1] + [0] * 4)[r] for c in range(16) for r in range(4)]
        _PICK_TABLES[device] = (torch.tensor([[1], [2], [4], [8]], dtype=torch.uint8, device=device),
                                torch.tensor([4] + [bin(c).count("1") for c in range(1, 16)], device=device),
                                torch.tensor(nth, device=device))
    return _PICK_TABLES[device]


def _act(n: int, cap: int, device) -> torch.Tensor:
    return torch.zeros(n, 2 + cap, dtype=torch.int64, device=device)


class RandomPolicy:
    """``RandomBot``: uniform among the moves that do not look fatal, any move when all do; no sonar."""

    name = "random"
    needs_planes = False  # reads obs.safe and obs.rng only

    def __init__(self, sprint_cap: int = DEFAULT_SPRINT_CAP) -> None:
        self.cap = sprint_cap

    def __call__(self, obs: LoongObs) -> Turn:
        (u,) = draws(obs.rng, 1)
        d = pick(obs.safe, u)
        return Turn(torch.stack([torch.zeros_like(d), d]).T)  # [MOVE, d]; the sprint columns may be left off


class ChaosPolicy:
    """Mostly safe moves; sometimes a sprint (mostly straight, k up to ceil(L/4) + L: one too many is
    invalid), a split, a forfeit; random sonar values (some directions silent)."""

    name = "chaos"
    needs_planes = False  # reads obs.safe, obs.length and obs.rng only

    def __init__(self, p_sprint: float = 0.08, p_split: float = 0.08, p_forfeit: float = 0.003,
                 p_sonar: float = 0.5, sprint_cap: int = DEFAULT_SPRINT_CAP) -> None:
        self.p = (p_sprint, p_split, p_forfeit, p_sonar)
        self.cap = sprint_cap

    def __call__(self, obs: LoongObs) -> Turn:
        p_sprint, p_split, p_forfeit, p_sonar = self.p
        u = draws(obs.rng, 8)
        n, dev, cap = len(obs.rng), obs.rng.device, self.cap
        r = unit(u[0])
        L = obs.length.clamp(min=1)
        act = _act(n, cap, dev)
        first = pick(obs.safe, u[1])
        act[:, 0], act[:, 1] = MOVE, first
        sprint = r < p_sprint
        hi = torch.minimum(free_steps_of(L) + L, torch.full_like(L, cap))  # inclusive; F + L is invalid
        k = 2 + below(u[2], (hi - 1).clamp(min=1))
        steps = torch.stack([torch.where(unit(v) < 0.8, first, below(v, torch.full_like(L, 4)))
                             for v in draws(u[3], cap)], 1)
        steps[:, 0] = first
        act[:, 2:] = torch.where(sprint[:, None], steps, 0)
        act[:, 0] = torch.where(sprint, SPRINT, act[:, 0])
        act[:, 1] = torch.where(sprint, k, act[:, 1])
        split = ~sprint & (r < p_sprint + p_split) & (L >= 2)
        act[:, 0] = torch.where(split, SPLIT, act[:, 0])
        act[:, 1] = torch.where(split, 1 + below(u[4], (L - 1).clamp(min=1)), act[:, 1])
        forfeit = (r >= p_sprint + p_split) & (r < p_sprint + p_split + p_forfeit)
        act[:, 0] = torch.where(forfeit, FORFEIT, act[:, 0])
        send = unit(u[5]) < p_sonar
        values = torch.stack(draws(u[6], 4), 1) & ((1 << 63) - 1)
        mask = send[:, None] & (values % 3 != 0)
        return Turn(act, torch.where(mask, values, 0), mask)


class NetworkPolicy:
    """The network hook: ``fn(local, vector) -> logits [n, 4]`` over MOVE directions; ``greedy`` takes the
    arg max, otherwise a Gumbel-max sample drawn from the dragon's stream (deterministic per input)."""

    name = "network"
    needs_planes = True

    def __init__(self, fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], greedy: bool = False,
                 sprint_cap: int = DEFAULT_SPRINT_CAP) -> None:
        self.fn, self.greedy, self.cap = fn, greedy, sprint_cap

    @torch.no_grad()
    def __call__(self, obs: LoongObs) -> Turn:
        logits = self.fn(obs.local, obs.vector).float()
        if not self.greedy:
            uni = torch.stack([unit(v) for v in draws(obs.rng, 4)], 1).clamp(1e-7, 1 - 1e-7)
            logits = logits - torch.log(-torch.log(uni))
        act = _act(len(obs.rng), self.cap, obs.rng.device)
        act[:, 0] = MOVE
        act[:, 1] = logits.argmax(1)
        return Turn(act)
