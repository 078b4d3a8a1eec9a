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

from games.loong.maps import KELP
from gpu.loong_obs import LoongObs, observe
from gpu.loong_policy import pick
from gpu.loong_sim import DRAW, PEARL, RUNNING, WON0, LoongSim, Turn, gat
from gpu.loong_tables import GOLDEN, HEAD_CELL, LENGTH, TAIL_CELL, TEAM, mix64, unpack_step

DEFAULT_ROUNDS = 20  # the seed's 20-round rollouts (part 5, "The teacher's leaf value")
DEFAULT_ROLLOUTS = 4  # placeholder


class RolloutValues(NamedTuple):
    """``mean [L, A]`` and ``se [L, A]`` (standard error of the mean over rollouts; NaN with one rollout);
    both NaN where a candidate is masked off."""

    mean: torch.Tensor
    se: torch.Tensor


ROLLOUT_POLICIES = ("uniform", "greedy", "strike", "seek")
SEEK_RADIUS = 24  # how far (torus distance) seek looks for a pearl; beyond it a dragon moves at random (placeholder)


class RolloutPolicy:
    """Every dragon's move in a rollout, one batched rule for both teams, drawn from ``mix64(obs.rng ^
    key[lane])``: per-copy draws (module docstring). ``rule``:

    - ``uniform``: uniform among the moves that do not look fatal (any move when all do), ``RandomPolicy``'s rule;
    - ``greedy``: the same, but among the safe moves onto a pearl when there are any (privileged: a portal's far
      cell counts);
    - ``strike``: ``greedy`` with the threat of head-ons, the foil's own habit (games/loong/foil.py, steps 4-5): a
      worker next to the head of an enemy queen, or of an enemy worker at least as long as itself, moves into it
      (the head-on kills both); otherwise the safe moves whose cell no enemy head next to it could strike next
      (for a queen every enemy worker's head, for a worker those at least as long) come first, pearls first among
      them. Moves only, no sprints: a sprint's reach is wider, so the threat is understated;
    - ``seek``: ``strike``, but towards the nearest pearl: among the safe (and calm) moves, those whose cell is
      nearest a pearl by torus distance (``pearl_distance``: kelp, portals and bodies ignored; the pearls as the
      round began) within ``SEEK_RADIUS``.

    Placeholder rules, kept while they gain strength at equal cost.

    ``sim`` is the simulator the observations come from (``greedy`` and ``strike`` read its full state)."""

    name = "rollout"
    needs_planes = False

    def __init__(self, key: torch.Tensor, sim: LoongSim | None = None, rule: str = "uniform") -> None:
        if rule not in ROLLOUT_POLICIES:
            raise ValueError(f"rollout policy: unknown rule {rule!r} (known: {', '.join(ROLLOUT_POLICIES)})")
        if rule != "uniform" and sim is None:
            raise ValueError(f"rollout policy {rule!r} reads the simulator's state: pass sim")
        self.key, self.sim, self.rule = key, sim, rule
        self._pearls = None  # (round, pearl_cells): seek's pearls, listed once a round

    def __call__(self, obs: LoongObs) -> Turn:
        u = mix64(obs.rng ^ self.key.index_select(0, obs.lane))
        allowed = obs.safe
        if self.rule in ("strike", "seek"):
            strike, threat, target = head_on_moves(self.sim, obs)
            calm = allowed & ~threat
            allowed = torch.where(calm.any(1, keepdim=True), calm, allowed)
        if self.rule == "seek":  # the allowed moves nearest a pearl
            rnd = int(self.sim.round.max())
            if self._pearls is None or self._pearls[0] != rnd:  # the pearls as the round began: a guide
                self._pearls = (rnd, pearl_cells(self.sim))
            lanes_pearls = tuple(x.index_select(0, obs.lane) for x in self._pearls[1])
            dist = torch.where(allowed, pearl_distance(self.sim, target, lanes_pearls), SEEK_RADIUS + 2)
            allowed = allowed & (dist == dist.min(1, keepdim=True).values)
        elif self.rule != "uniform":  # the safe (and calm) moves onto a pearl when there are any
            food = allowed & pearl_ahead(self.sim, obs)
            allowed = torch.where(food.any(1, keepdim=True), food, allowed)
        if self.rule in ("strike", "seek"):
            allowed = torch.where(strike.any(1, keepdim=True), strike, allowed)
        d = pick(allowed, u)
        return Turn(torch.stack([torch.zeros_like(d), d], 1))


def head_on_moves(sim: LoongSim, obs: LoongObs) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(strike [B, 4], threat [B, 4], target [B, 4])`` for each lane's current actor (the rows of
    ``observe(sim)``); ``target``: each move's cell (N, the trash cell, across kelp);
    ``strike``: the move's cell holds the head of an enemy queen or of an enemy worker at least as long as the
    actor, and the actor is a worker; ``threat``: a head next to the move's cell (one more crossing, portals
    included) belongs to an enemy worker that would strike the actor there (any, for a queen; one at least as
    long, for a worker). Full state (a rollout is privileged)."""
    B, N = obs.lane.shape[0], sim.N
    lane, own_len, team = obs.lane, obs.length, obs.team
    queen = obs.dragon_id < 2
    mi = gat(sim.lane_map, lane)
    fa = sim.actor.index_select(0, lane) * sim.B + lane
    head = sim.rows(fa)[:, HEAD_CELL]
    packed = sim.bank.t["step_packed"]
    dirs = torch.arange(4, device=sim.device)

    def step(cells: torch.Tensor) -> torch.Tensor:  # [B, k] cells -> [B, k, 4] the cells one crossing on
        key = (mi.view(B, 1, 1) * N + cells.clamp(max=N - 1)[..., None]) * 4 + dirs
        t, _, kind, _ = unpack_step(packed.index_select(0, key.view(-1)).view(key.shape))
        return torch.where((kind == KELP) | (cells[..., None] == N), N, t)  # N: the lane's trash cell, no head

    def enemy_head(cells: torch.Tensor):  # [B, ...] -> (is an enemy head, its length, is a queen)
        shape = cells.shape
        c = cells.reshape(B, -1)
        occ = sim.occ_f.index_select(0, (lane[:, None] * (N + 1) + c).view(-1)).view(c.shape)
        slot = occ.clamp(min=0)
        rows = sim.rows((slot * sim.B + lane[:, None]).view(-1)).view(*c.shape, -1)
        sid = sim.sid_t.view(-1).index_select(0, (slot * sim.B + lane[:, None]).view(-1)).view(c.shape)
        hit = (occ >= 0) & (rows[..., HEAD_CELL] == c) & (rows[..., TEAM] != team[:, None]) & (sid >= 0)
        return hit.view(shape), rows[..., LENGTH].view(shape), (sid < 2).view(shape)

    target = step(head[:, None])[:, 0]  # [B, 4]
    hit, length, their_queen = enemy_head(target)
    strike = ~queen[:, None] & hit & (their_queen | (length >= own_len[:, None]))
    hit2, length2, queen2 = enemy_head(step(target))  # [B, 4, 4]
    striker = hit2 & ~queen2 & (queen[:, None, None] | (length2 >= own_len[:, None, None]))
    return strike, striker.any(2), target


def pearl_cells(sim: LoongSim) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cells [B, P], real [B, P])``: every lane's pearl cells, padded to the most any lane holds (P >= 1)."""
    pearl = sim.occ[:, :sim.N] == PEARL
    P = max(int(pearl.sum(1).max()), 1)
    real, cells = torch.topk(pearl.to(torch.int8), P, dim=1)  # the pearls first (topk: any order among equals)
    return cells, real.bool()


def pearl_distance(sim: LoongSim, target: torch.Tensor, pearls: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """``[B, k]`` int64: the torus distance (|dx| + |dy|, the short way round each axis) from each of the cells
    ``target [B, k]`` of the lanes of ``pearls`` (``pearl_cells``, rows as ``target``'s) to the nearest pearl,
    ``SEEK_RADIUS + 1`` where there is none or beyond it (the trash cell N too). Kelp, portals and bodies are
    ignored: a cheap guide, the safety rules come first."""
    W, H, N = sim.W, sim.H, sim.N
    cells, real = pearls
    t = target.clamp(max=N - 1)[..., None]  # [B, k, 1]
    p = cells[:, None, :]  # [B, 1, P]
    dx = (t % W - p % W).abs()
    dy = (t // W - p // W).abs()
    d = torch.minimum(dx, W - dx) + torch.minimum(dy, H - dy)
    far = SEEK_RADIUS + 1
    d = torch.where(real[:, None, :], d, far).min(2).values.clamp(max=far)
    return torch.where(target >= N, far, d)


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


def fatal_moves(sim: LoongSim, lanes: torch.Tensor | None = None) -> torch.Tensor:
    """``[L, 4]`` bool: MOVE N, E, S, W of each lane's current actor kills it at once by the rules, judged on the
    full state (the teacher's privilege; ``Game.safe_moves``'s rule): crossing kelp, or entering a cell that holds
    a segment other than the actor's own tail (which moves away: a move onto it eats no pearl). Through a portal
    the far cell counts, seen or not."""
    lanes = sim.lanes if lanes is None else torch.as_tensor(lanes, dtype=torch.int64, device=sim.device).view(-1)
    n = lanes.shape[0]
    fa = sim.actor.index_select(0, lanes) * sim.B + lanes
    cols = sim.rows(fa).unbind(1)
    L, head, tail = cols[LENGTH], cols[HEAD_CELL], cols[TAIL_CELL]
    mi = gat(sim.lane_map, lanes)
    key = ((mi * sim.N + head) * 4)[:, None] + torch.arange(4, device=sim.device)  # [n, 4]
    word = sim.bank.t["step_packed"].index_select(0, key.view(-1)).view(n, 4)
    target, _, kind, _ = unpack_step(word)
    occ = sim.occ_f.index_select(0, (lanes[:, None] * (sim.N + 1) + target).view(-1)).view(n, 4)
    own_tail = (target == torch.where(L >= 2, tail, -1)[:, None]) & (occ != PEARL)
    return (kind == KELP) | ((occ >= 0) & ~own_tail)


def copy_keys(seed: int | torch.Tensor, lanes: torch.Tensor, rollouts: torch.Tensor) -> torch.Tensor:
    """The rollout policy's key of each copy: a function of (seed, lane, rollout) only (``[n]`` each)."""
    s = torch.as_tensor(int64_bits(seed) if isinstance(seed, int) else seed, dtype=torch.int64, device=lanes.device)
    return mix64(mix64(s ^ mix64(lanes)) + rollouts * GOLDEN)


def int64_bits(x: int) -> int:
    """A Python integer as int64 bits (mod 2^64, signed): any seed fits."""
    return (x + (1 << 63)) % (1 << 64) - (1 << 63)


STANDING_WEIGHTS = (1.0, 1.0, 1.0)  # queen length, longest, total: equal (placeholder)


def checked_weights(weights) -> tuple[float, float, float]:
    """The standing's share weights as three floats; ValueError unless they are three non-negative numbers, not
    all 0."""
    try:
        w = tuple(float(x) for x in weights)
    except (TypeError, ValueError):
        w = ()
    if len(w) != 3 or min(w) < 0 or sum(w) <= 0:
        raise ValueError(f"standing weights must be three non-negative numbers, not all 0; got {weights!r}")
    return w


def standing(sim: LoongSim, team: torch.Tensor, weights=STANDING_WEIGHTS) -> torch.Tensor:
    """``[B]`` float in [0, 1]: the standing of ``team [B]`` in each lane (module docstring); ``weights``: of the
    three shares (queen length, longest, total), normalised to sum 1."""
    s = sim.scores().float()  # [B, 2, 3]: queen length, longest, total
    own = s.gather(1, team.view(-1, 1, 1).expand(-1, 1, 3))[:, 0]
    other = s.gather(1, (1 - team).view(-1, 1, 1).expand(-1, 1, 3))[:, 0]
    tot = own + other
    w = torch.as_tensor(checked_weights(weights), dtype=torch.float32, device=sim.device)
    share = (torch.where(tot > 0, own / tot.clamp(min=1), torch.full_like(tot, 0.5)) * (w / w.sum())).sum(1)
    return torch.where(sim.result == RUNNING, share, outcome(sim, team))


def standing_value(weights=STANDING_WEIGHTS):
    """A value hook (``rollout_values``'s ``value``): the standing of each lane's current actor's team with these
    share weights (checked here: ValueError)."""
    weights = checked_weights(weights)

    def value(sim: LoongSim) -> torch.Tensor:
        return standing(sim, actor_team(sim), weights)
    return value


def outcome(sim: LoongSim, team: torch.Tensor) -> torch.Tensor:
    """``[B]`` 1 / 0.5 / 0: ``team`` won / drew / lost (meaningless where the game runs on)."""
    won = sim.result == WON0 + team
    return torch.where(won, 1.0, torch.where(sim.result == DRAW, 0.5, 0.0))


def actor_team(sim: LoongSim, lanes: torch.Tensor | None = None) -> torch.Tensor:
    """Team of each lane's current actor (lanes ``lanes``; garbage where the game is over)."""
    team = sim.team.gather(1, sim.actor.view(-1, 1))[:, 0]
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
                   value=None, first_rollout: int = 0, policy: str = "uniform") -> RolloutValues:
    """Mean values ``[L, A]`` (and standard errors) of candidate first actions ``actions [L, A, width]``
    (the simulator's encoding) for the current actor of each of ``lanes``, from the view of its team.
    ``mask [L, A]`` bool marks the real candidates (default all). ``seed``: an int, or one per lane ``[L]``.
    ``first_rollout`` numbers the rollouts from there (a later batch of rollouts gets fresh draws). ``policy``: the
    rollout policy's rule (``RolloutPolicy``: uniform, greedy, strike)."""
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
    play_rounds(fork, rounds, RolloutPolicy(key, fork, policy))
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
