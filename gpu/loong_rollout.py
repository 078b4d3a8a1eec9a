"""Rollout values on the batched simulator: fork a lane, play a candidate first action, play on, value the end.

``rollout_values(sim, lanes, actions, rounds=20, rollouts=4, seed=...)`` forks every (lane, candidate) pair
``rollouts`` times (``LoongSim.fork``), plays the candidate for the lane's current actor, then plays the rest
of that round and ``rounds`` more rounds with ``RolloutPolicy`` for every dragon of both teams, and values the
end state from the view of the actor's team (docs/loong-teacher.md):

- default, ``standing``: 1 / 0.5 / 0 for a game won / drawn / lost by the rules (elimination or the
  round-limit comparison); otherwise the mean of the team's shares ``x_T / (x_T + x_O)`` of the three things
  the round-limit comparison reads, in its order: queen length, longest living dragon, total living length
  (a share is 0.5 when both are 0). Equal weights: a placeholder.
- ``value(sim) -> [B]`` when given: a value in [0, 1] of each lane of the rolled-out simulator from the view
  of the team of that lane's current actor (what ``observe(sim, full=True)`` describes: the privileged value
  network's input); lanes whose game ended are valued by the rules' result instead.

Rollout draws. The dragons' own streams (``obs.rng``) are part of the forked state, so copies playing on them
would replay one game; the rollout policy draws from ``mix64(obs.rng ^ key)`` instead, ``key`` one per copy:
``key = mix64(mix64(seed ^ mix64(lane)) + rollout * GOLDEN)`` (``lane``: the lane's index in ``sim``;
``rollout``: 0 .. rollouts - 1 plus ``first_rollout``). So each dragon of each copy has a stream of its own,
advanced by its turns; the draws depend on (seed, lane, rollout), never on the candidate, the batch or the
number of candidates: candidates of one lane meet the same draws (common random numbers), and A candidates
batched equal the same candidates one at a time.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from gpu.loong_obs import LoongObs, observe
from gpu.loong_policy import pick
from gpu.loong_sim import DRAW, PEARL, RUNNING, WON0, LoongSim, Turn
from gpu.loong_tables import GOLDEN, mix64

DEFAULT_ROUNDS = 20  # the seed's 20-round rollouts (part 5, "The teacher's leaf value")
DEFAULT_ROLLOUTS = 4  # placeholder


class RolloutValues(NamedTuple):
    """``mean [L, A]`` and ``se [L, A]`` (standard error of the mean over rollouts; NaN with one rollout);
    both NaN where a candidate is masked off."""

    mean: torch.Tensor
    se: torch.Tensor


class RolloutPolicy:
    """Uniform among the moves that do not look fatal (any move when all do), like ``RandomPolicy``, but drawn
    from ``mix64(obs.rng ^ key[lane])``: per-copy draws (module docstring)."""

    name = "rollout"
    needs_planes = False

    def __init__(self, key: torch.Tensor, sim: LoongSim | None = None) -> None:
        self.key, self.sim = key, sim

    def __call__(self, obs: LoongObs) -> Turn:
        u = mix64(obs.rng ^ self.key.index_select(0, obs.lane))
        allowed = obs.safe
        if self.sim is not None:  # greedy: the safe moves onto a pearl when there are any
            food = obs.safe & pearl_ahead(self.sim, obs)
            allowed = torch.where(food.any(1, keepdim=True), food, obs.safe)
        d = pick(allowed, u)
        return Turn(torch.stack([torch.zeros_like(d), d], 1))


def pearl_ahead(sim: LoongSim, obs: LoongObs) -> torch.Tensor:
    """``[B, 4]`` bool: a pearl in the cell each MOVE of the lane's current actor enters (through a portal too; the
    rollout is privileged, so unseen cells count). Reads the occupancy ``observe`` gathered for this very state
    (``sim.turn_cache``); observes again when the cache is stale."""
    cache = sim.turn_cache
    if cache is None or cache[0] != sim.version:
        observe(sim, planes=False)
        cache = sim.turn_cache
    occ_t = cache[-1].view(4, -1)  # [4, B]: directions outermost
    return (occ_t == PEARL).T


def copy_keys(seed: int | torch.Tensor, lanes: torch.Tensor, rollouts: torch.Tensor) -> torch.Tensor:
    """The rollout policy's key of each copy: a function of (seed, lane, rollout) only (``[n]`` each)."""
    s = torch.as_tensor(int64_bits(seed) if isinstance(seed, int) else seed, dtype=torch.int64, device=lanes.device)
    return mix64(mix64(s ^ mix64(lanes)) + rollouts * GOLDEN)


def int64_bits(x: int) -> int:
    """A Python integer as int64 bits (mod 2^64, signed): any seed fits."""
    return (x + (1 << 63)) % (1 << 64) - (1 << 63)


def standing(sim: LoongSim, team: torch.Tensor) -> torch.Tensor:
    """``[B]`` float in [0, 1]: the standing of ``team [B]`` in each lane (module docstring)."""
    s = sim.scores().float()  # [B, 2, 3]: queen length, longest, total
    own = s.gather(1, team.view(-1, 1, 1).expand(-1, 1, 3))[:, 0]
    other = s.gather(1, (1 - team).view(-1, 1, 1).expand(-1, 1, 3))[:, 0]
    tot = own + other
    share = torch.where(tot > 0, own / tot.clamp(min=1), torch.full_like(tot, 0.5)).mean(1)
    return torch.where(sim.result == RUNNING, share, outcome(sim, team))


def outcome(sim: LoongSim, team: torch.Tensor) -> torch.Tensor:
    """``[B]`` 1 / 0.5 / 0: ``team`` won / drew / lost (meaningless where the game runs on)."""
    won = sim.result == WON0 + team
    return torch.where(won, 1.0, torch.where(sim.result == DRAW, 0.5, 0.0))


def actor_team(sim: LoongSim, lanes: torch.Tensor | None = None) -> torch.Tensor:
    """Team of each lane's current actor (lanes ``lanes``; garbage where the game is over)."""
    team = sim.steam.gather(1, sim.actor.view(-1, 1))[:, 0]
    return team if lanes is None else team.index_select(0, lanes)


def play_rounds(sim: LoongSim, rounds: int, policy) -> None:
    """Play the rest of each lane's round and ``rounds`` more rounds (or to the game's end)."""
    last = sim.round + rounds
    while True:
        go = (sim.result == RUNNING) & (sim.round <= last)
        if not bool(go.any()):
            return
        turn = policy(observe(sim, planes=False))
        sim.step(turn, lanes=None if bool(go.all()) else go)


@torch.no_grad()
def rollout_values(sim: LoongSim, lanes, actions: torch.Tensor, *, mask: torch.Tensor | None = None,
                   rounds: int = DEFAULT_ROUNDS, rollouts: int = DEFAULT_ROLLOUTS, seed: int | torch.Tensor,
                   value=None, first_rollout: int = 0, greedy: bool = False) -> RolloutValues:
    """Mean values ``[L, A]`` (and standard errors) of candidate first actions ``actions [L, A, width]``
    (the simulator's encoding) for the current actor of each of ``lanes``, from the view of its team.
    ``mask [L, A]`` bool marks the real candidates (default all). ``seed``: an int, or one per lane ``[L]``.
    ``first_rollout`` numbers the rollouts from there (a later batch of rollouts gets fresh draws). ``greedy``: the
    rollout policy takes a safe move onto a pearl when there is one (else uniform among the safe moves)."""
    dev = sim.device
    lanes = torch.as_tensor(lanes, dtype=torch.int64, device=dev).view(-1)
    if actions.dim() != 3 or actions.shape[0] != len(lanes):
        raise ValueError(f"rollout_values: actions must be [lanes={len(lanes)}, A, width], got "
                         f"{tuple(actions.shape)}")
    if rollouts < 1 or rounds < 0:
        raise ValueError(f"rollout_values: need rollouts >= 1 and rounds >= 0, got {rollouts}, {rounds}")
    L, A = actions.shape[:2]
    mask = torch.ones(L, A, dtype=torch.bool, device=dev) if mask is None else mask.to(dev, torch.bool)
    if bool((sim.actor.index_select(0, lanes) >= sim.S).any()):
        raise ValueError("rollout_values: every lane needs a current actor (its game running)")
    mean = torch.full((L, A), float("nan"), device=dev)
    se = torch.full((L, A), float("nan"), device=dev)
    pairs = mask.nonzero()  # [P, 2]: (lane row, candidate) of the real candidates
    if len(pairs) == 0:
        return RolloutValues(mean, se)
    j, a = pairs.unbind(1)
    fork = sim.fork(lanes.index_select(0, j), copies=rollouts, record_hashes=False, record_turns=False)
    row = torch.arange(len(pairs), device=dev).repeat_interleave(rollouts)
    r = torch.arange(rollouts, device=dev).repeat(len(pairs)) + first_rollout
    seeds = torch.as_tensor(int64_bits(seed) if isinstance(seed, int) else seed, dtype=torch.int64, device=dev)
    seeds = seeds.expand(L) if seeds.dim() == 0 else seeds
    lane_of = lanes.index_select(0, j).index_select(0, row)
    key = copy_keys(seeds.index_select(0, j).index_select(0, row), lane_of, r)
    team = actor_team(fork)
    act = actions.to(dev, torch.int64)[j, a].index_select(0, row)
    fork.step(Turn(act))
    play_rounds(fork, rounds, RolloutPolicy(key, fork if greedy else None))
    if value is None:
        v = standing(fork, team)
    else:
        vt = value(fork).float().to(dev).view(-1)
        vt = torch.where(actor_team(fork) == team, vt, 1 - vt)  # the hook speaks for the current actor's team
        v = torch.where(fork.result == RUNNING, vt, outcome(fork, team))
    v = v.view(len(pairs), rollouts)
    m = v.mean(1)
    s = v.std(1, unbiased=True) / rollouts ** 0.5 if rollouts > 1 else torch.full_like(m, float("nan"))
    mean[j, a], se[j, a] = m, s
    return RolloutValues(mean, se)
