"""The privileged teacher's root search on the batched simulator (issue 12 item 2; docs/loong-teacher.md).

For each lane's current actor the candidates are the legal primitive actions: the four MOVEs (fatal ones
included) and SPLIT k = L // 2 where the rules allow a split (L >= 2, fewer than 64 living on the team);
sprints are left out. They are narrowed by sequential halving (Danihelka et al. 2022) with zero Gumbel
draws (play and evaluation) and uniform priors, so each phase keeps the better half by mean rollout value
(``gpu.loong_rollout``); ``simulations`` rollouts a decision at most.

``teacher_turn(sim, lanes, ...)`` reads the simulator itself (the full state: no parallel-turn scheduler);
``play_teacher_games(...)`` plays the teacher team against a batched policy on generated maps of one size,
sides alternating, and returns wins-draws-losses with a Wilson interval.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch

from games.loong.actions import MAX_TEAM
from games.loong.mapgen import generate_map
from games.stats import wilson_interval
from gpu.loong_obs import observe
from gpu.loong_play import Policy, needs_planes
from gpu.loong_policy import RandomPolicy
from gpu.loong_rollout import (
    DEFAULT_ROUNDS,
    ROLLOUT_POLICIES,
    STANDING_WEIGHTS,
    actor_team,
    checked_weights,
    fatal_moves,
    int64_bits,
    rollout_values,
    standing_value,
)
from gpu.loong_sim import DRAW, MOVE, RUNNING, SPLIT, WON0, LoongSim, Turn
from gpu.loong_tables import GOLDEN, SLEN, TEAM, mix64

CANDIDATES = 5  # four MOVEs and one SPLIT
DEFAULT_SIMULATIONS = 16  # placeholder
C_VISIT, C_SCALE = 50.0, 1.0  # Gumbel MuZero's sigma constants (Danihelka et al. 2022)
SYMS = ("lr", "tb", "rot")


@dataclass
class TeacherDecision:
    """One decision per lane: ``act [L, 2]`` the chosen action, ``candidates [L, A, 2]`` and ``mask [L, A]``
    (legal), ``values [L, A]`` each candidate's mean rollout value over all its rollouts (NaN where masked),
    ``visits [L, A]`` its rollouts, ``choice [L]`` the chosen candidate's index, ``fatal [L, A]`` the moves that
    kill the actor at once by the rules (``gpu.loong_rollout.fatal_moves``), ``policy [L, A]`` the improved
    policy (``improved_policy``)."""

    act: torch.Tensor
    candidates: torch.Tensor
    mask: torch.Tensor
    values: torch.Tensor
    visits: torch.Tensor
    choice: torch.Tensor
    fatal: torch.Tensor
    policy: torch.Tensor


def candidates(sim: LoongSim, lanes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``[L, 5, 2]`` the primitive candidates of each lane's actor (MOVE N, E, S, W, SPLIT L // 2) and their
    ``[L, 5]`` legality mask (moves always; the split where the rules allow one)."""
    fa = sim.actor.index_select(0, lanes) * sim.B + lanes
    rows = sim.rows(fa)
    L, team = rows[:, SLEN], rows[:, TEAM]
    living = sim.living.view(-1).index_select(0, lanes * 2 + team)
    n = len(lanes)
    cand = torch.zeros(n, CANDIDATES, 2, dtype=torch.int64, device=sim.device)
    cand[:, :4, 0] = MOVE
    cand[:, :4, 1] = torch.arange(4, device=sim.device)
    cand[:, 4, 0], cand[:, 4, 1] = SPLIT, L // 2
    mask = torch.ones(n, CANDIDATES, dtype=torch.bool, device=sim.device)
    mask[:, 4] = (L >= 2) & (living < MAX_TEAM)
    return cand, mask


def sigma(q: torch.Tensor, visits: torch.Tensor) -> torch.Tensor:
    """Gumbel MuZero's monotone transform of values in [0, 1]: ``(C_VISIT + max visits of the lane) * C_SCALE
    * q`` (Danihelka et al. 2022, their constants)."""
    return (C_VISIT + visits.max(1, keepdim=True).values.float()) * C_SCALE * q


def halving_schedule(simulations: int, width: int = CANDIDATES) -> list[int]:
    """Rollouts per remaining candidate in each phase: ceil(log2 width) phases, phase k with nominally
    ceil(width / 2^k) candidates left gets max(1, simulations // (phases * left)) each (Gumbel MuZero's
    budget split; the total stays within ``simulations`` where that allows one rollout a candidate)."""
    phases = max(1, math.ceil(math.log2(width)))
    return [max(1, simulations // (phases * math.ceil(width / 2 ** k))) for k in range(phases)]


def decision_seeds(sim: LoongSim, lanes: torch.Tensor, seed: int) -> torch.Tensor:
    """``[L]`` a seed per decision: (seed, the game's seed, round, actor id), so a game's draws do not depend
    on the other games of the batch."""
    aid = sim.actor_ids().index_select(0, lanes)
    s = torch.as_tensor(int64_bits(seed), dtype=torch.int64, device=sim.device)
    base = mix64(s ^ mix64(sim.seed.index_select(0, lanes)))
    return mix64(base + (sim.round.index_select(0, lanes) * 4096 + aid) * GOLDEN)


@torch.no_grad()
def teacher_turn(sim: LoongSim, lanes, *, simulations: int = DEFAULT_SIMULATIONS, rounds: int = DEFAULT_ROUNDS,
                 seed: int = 0, value=None, gumbel: torch.Tensor | None = None,
                 policy: str = "uniform") -> TeacherDecision:
    """Root search for the current actor of each of ``lanes`` (running games) over its primitive candidates
    (``candidates``) with uniform priors: ``search`` (its docstring has the rules). ``gumbel [L, 5]``: Gumbel draws
    added to every ranking (self-play data collection); None, the default, is zero draws (play and evaluation)."""
    lanes = torch.as_tensor(lanes, dtype=torch.int64, device=sim.device).view(-1)
    cand, legal = candidates(sim, lanes)
    return search(sim, lanes, cand, legal, simulations=simulations, rounds=rounds, seed=seed, value=value,
                  gumbel=gumbel, policy=policy)


@torch.no_grad()
def search(sim: LoongSim, lanes, cand: torch.Tensor, legal: torch.Tensor, *, logits: torch.Tensor | None = None,
           simulations: int = DEFAULT_SIMULATIONS, considered: int | None = None, rounds: int = DEFAULT_ROUNDS,
           seed: int = 0, value=None, gumbel: torch.Tensor | None = None, policy: str = "uniform") -> TeacherDecision:
    """Gumbel MuZero's root (Danihelka et al. 2022) for the current actor of each of ``lanes`` over candidate
    actions ``cand [L, A, width]`` (the simulator's encoding; ``legal [L, A]`` the real ones) with prior
    ``logits [L, A]`` (None: uniform), leaves valued by rollouts (``gpu.loong_rollout.rollout_values``, rule
    ``policy``, leaf value ``value``):

    1. the ``considered`` candidates (default all) with the highest ``gumbel + logits`` enter;
    2. sequential halving: ceil(log2 considered) phases, phase k giving each candidate still in
       max(1, simulations // (phases * ceil(considered / 2^k))) rollouts (``halving_schedule``), then keeping the
       better half by ``gumbel + logits + sigma(q)``, q a candidate's mean over all its rollouts so far,
       ``sigma(q) = (C_VISIT + max visits) * C_SCALE * q``; each phase continues the rollout numbering (fresh
       draws, common to the candidates still in);
    3. the choice: the survivor (the first of equals); ``policy``: the improved policy
       ``softmax(logits + sigma(completed q))``, an unvisited candidate's q completed by the prior-weighted mean of
       the visited ones' (Gumbel MuZero's completion without a value estimate).

    A MOVE that kills the actor at once by the rules (``fatal_moves``) is valued with the first phase's rollouts,
    then dropped while another candidate is not certainly fatal: a certain death is never the choice when there is
    another (nor takes an entry slot from one). ``gumbel``: None, the default, is zero draws (play and every
    evaluation)."""
    if policy not in ROLLOUT_POLICIES:
        raise ValueError(f"teacher search: unknown rollout policy {policy!r} (known: {', '.join(ROLLOUT_POLICIES)})")
    if simulations < 1:
        raise ValueError(f"teacher search: simulations must be >= 1, got {simulations}")
    dev = sim.device
    lanes = torch.as_tensor(lanes, dtype=torch.int64, device=dev).view(-1)
    n, A = legal.shape
    if cand.dim() != 3 or tuple(cand.shape[:2]) != (n, A):
        raise ValueError(f"teacher search: candidates must be [{n}, {A}, width], got {tuple(cand.shape)}")
    m = A if considered is None else max(1, min(int(considered), A))
    if gumbel is not None and tuple(gumbel.shape) != (n, A):
        raise ValueError(f"teacher search: gumbel must be [{n}, {A}], got {tuple(gumbel.shape)}")
    g = torch.zeros(n, A, device=dev) if gumbel is None else gumbel.to(dev, torch.float32)
    prior = torch.zeros(n, A, device=dev) if logits is None else logits.to(dev, torch.float32)
    prior = torch.where(legal, prior, -1e9)
    legal = legal.to(dev, torch.bool)
    cand = cand.to(dev, torch.int64)
    first = cand[..., 1].clamp(0, 3)
    fatal = legal & (cand[..., 0] == MOVE) & fatal_moves(sim, lanes).gather(1, first)
    has_other = (legal & ~fatal).any(1, keepdim=True)
    seeds = decision_seeds(sim, lanes, seed)
    total = torch.zeros(n, A, device=dev)
    visits = torch.zeros(n, A, dtype=torch.int64, device=dev)
    arange = torch.arange(A, device=dev).expand(n, A)

    def ranked(score: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:  # the top `keep` of each row of score
        order = torch.sort(-score, dim=1, stable=True).indices
        rank = torch.empty_like(order).scatter_(1, order, arange.clone())
        return rank < keep[:, None]

    entry = legal & ~(fatal & has_other)
    left = entry & ranked(torch.where(entry, g + prior, -math.inf), torch.full((n,), m, device=dev))
    left |= fatal & legal & (left.sum(1, keepdim=True) > 1)  # certain deaths get their first-phase value
    done = 0
    for r in halving_schedule(simulations, m):
        live = left & (left.sum(1, keepdim=True) > 1)  # a lane down to one candidate has decided
        if not bool(live.any()):
            break
        v = rollout_values(sim, lanes, cand, mask=live, rounds=rounds, rollouts=r, seed=seeds, value=value,
                           first_rollout=done, policy=policy)
        done += r
        total += torch.where(live, v.mean.nan_to_num(0.0) * r, 0.0)
        visits += live.long() * r
        left = left & ~(fatal & has_other)  # a certain death, valued once, goes no further while another is not
        score = torch.where(left, g + prior + sigma(total / visits.clamp(min=1), visits), -math.inf)
        left = left & ranked(score, (left.sum(1) + 1) // 2)  # of the candidates still in
    q = torch.where(legal & (visits > 0), total / visits.clamp(min=1), float("nan"))
    score = torch.where(left & ~(fatal & has_other), g + prior + sigma(q.nan_to_num(0.0), visits), -math.inf)
    choice = score.argmax(1)  # the first of equals
    act = cand[torch.arange(n, device=dev), choice]
    return TeacherDecision(act, cand, legal, q, visits, choice, fatal, improved_policy(prior, q, visits, legal))


def improved_policy(logits: torch.Tensor, q: torch.Tensor, visits: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """``[L, A]`` Gumbel MuZero's improved policy ``softmax(logits + sigma(completed q))`` over the legal
    candidates; an unvisited candidate's q is the prior-weighted mean of the visited ones' (0.5 when none is)."""
    p = torch.softmax(torch.where(legal, logits, -math.inf), 1).nan_to_num(0.0)
    seen = legal & (visits > 0)
    w = torch.where(seen, p, 0.0)
    mix = torch.where(w.sum(1) > 0, (w * q.nan_to_num(0.0)).sum(1) / w.sum(1).clamp(min=1e-12), 0.5)
    completed = torch.where(seen, q.nan_to_num(0.0), mix[:, None])
    return torch.softmax(torch.where(legal, logits + sigma(completed, visits), -math.inf), 1).nan_to_num(0.0)


@dataclass
class TeacherMatch:
    """The teacher's wins-draws-losses against ``opponent`` with a Wilson 95% interval of its score rate."""

    opponent: str
    wins: int = 0
    draws: int = 0
    losses: int = 0
    decisions: int = 0
    seconds: float = 0.0
    games: list[dict] = field(default_factory=list)

    @property
    def played(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / max(self.played, 1)

    @property
    def wilson(self) -> tuple[float, float]:
        return wilson_interval(self.wins + 0.5 * self.draws, self.played)


def teacher_maps(size: int, n_maps: int, seed: int):
    """Generated maps of one size for the teacher's games (symmetries in turn; the generator refuses bad sizes)."""
    return [generate_map(size, size, SYMS[i % 3], seed + i, kelp_density=0.1, portal_pairs=2) for i in range(n_maps)]


@torch.no_grad()
def play_teacher_games(size: int, games: int, opponent: Policy | None = None, *, seed: int = 0,
                       simulations: int = DEFAULT_SIMULATIONS, rounds: int = DEFAULT_ROUNDS, max_rounds: int = 500,
                       value=None, device: str = "cpu", policy: str = "uniform") -> TeacherMatch:
    """``games`` games on generated ``size`` x ``size`` maps (each map twice, the teacher on team 0 then on
    team 1; so ``games`` must be even), all in one batch, strict id order; the teacher plays every dragon of
    its team, ``opponent`` (default ``RandomPolicy``) the other team's."""
    if games < 2 or games % 2:
        raise ValueError(f"teacher games: need an even number of games >= 2 (sides alternate), got {games}")
    if max_rounds < 1 or simulations < 1 or rounds < 0:
        raise ValueError(f"teacher games: need max_rounds >= 1, simulations >= 1 and rounds >= 0, got {max_rounds}, "
                         f"{simulations}, {rounds}")
    opponent = opponent or RandomPolicy()
    maps = [m for m in teacher_maps(size, games // 2, seed) for _ in range(2)]
    sim = LoongSim(maps, seeds=[seed * 1000 + g for g in range(games)], max_rounds=max_rounds, device=device)
    tteam = torch.arange(games, device=sim.device) % 2
    out = TeacherMatch(str(getattr(opponent, "name", type(opponent).__name__)))
    planes = needs_planes((opponent, opponent))
    t0 = time.perf_counter()
    while not sim.all_over():
        obs = observe(sim, planes=planes)
        turn = opponent(obs)
        act = torch.zeros(sim.B, 2 + sim.cap, dtype=torch.int64, device=sim.device)
        act[:, : turn.act.shape[1]] = turn.act
        sonar = turn.sonar if turn.sonar is not None else torch.zeros(sim.B, 4, dtype=torch.int64, device=sim.device)
        smask = (turn.sonar_mask.clone() if turn.sonar_mask is not None
                 else torch.zeros(sim.B, 4, dtype=torch.bool, device=sim.device))
        mine = (sim.result == RUNNING) & (actor_team(sim) == tteam)
        if bool(mine.any()):
            idx = mine.nonzero()[:, 0]
            dec = teacher_turn(sim, idx, simulations=simulations, rounds=rounds, seed=seed, value=value, policy=policy)
            act[idx] = 0
            act[idx, :2] = dec.act
            smask[idx] = False
            out.decisions += len(idx)
        sim.step(Turn(act, sonar, smask))
    out.seconds = time.perf_counter() - t0
    for g in range(games):
        code, team = int(sim.result[g]), int(tteam[g])
        verdict = "draw" if code == DRAW else ("win" if code == WON0 + team else "loss")
        out.wins += verdict == "win"
        out.draws += verdict == "draw"
        out.losses += verdict == "loss"
        out.games.append({"game": g, "teacher_team": team, "result": verdict, "rounds": int(sim.round[g]),
                          "reason": int(sim.reason[g]), "scores": sim.scores()[g].tolist()})
    return out


@torch.no_grad()
def deaths_by_team(game) -> list[dict[str, int]]:
    """``[team 0, team 1]``: how many of each team's dragons died of each cause (the engine's ``Dragon.cause``, the
    other dragon named only as an ally or an enemy)."""
    import re

    out: list[dict[str, int]] = [{}, {}]
    for d in game.dragons.values():
        if d.alive:
            continue
        cause = d.cause
        m = re.fullmatch(r"(head-on with|ran into) dragon (\d+)", cause)
        if m:  # the other dragon's id says only whose it was
            other = game.dragons.get(int(m.group(2)))
            cause = f"{m.group(1)} {'an ally' if other is not None and other.team == d.team else 'an enemy'}"
        out[d.team][cause] = out[d.team].get(cause, 0) + 1
    return out


def play_teacher_vs_bot(size: int, games: int, bot: str = "foil", *, seed: int = 0,
                        simulations: int = DEFAULT_SIMULATIONS, rounds: int = DEFAULT_ROUNDS, max_rounds: int = 500,
                        value=None, device: str = "cpu", bots=None, policy: str = "uniform") -> TeacherMatch:
    """The teacher against a reference bot (``games.loong.match.bot_factory``: foil, random, the native and judged
    builds), on the same generated maps as ``play_teacher_games`` (each map twice, sides swapped). Each game is a
    reference ``Game``, played as a match plays it (the bot decides on its own observation; a bot's failure is its
    dragon's forfeit), kept in lockstep with one simulator lane (``gpu.loong_diff.lockstep``: hashes compared after
    every round, ``Mismatch`` if they ever differ), on which the teacher searches its own dragons' turns."""
    from games.loong.bots import _Seat, ask_bot, standings
    from games.loong.engine import Game
    from games.loong.match import bot_factory
    from games.loong.observation import observe as observe_reference
    from gpu.loong_diff import lockstep
    from gpu.loong_sim import decode_action

    if games < 2 or games % 2:
        raise ValueError(f"teacher games: need an even number of games >= 2 (sides alternate), got {games}")
    factory = bot_factory(bot, bots)
    maps = [m for m in teacher_maps(size, games // 2, seed) for _ in range(2)]
    seeds = [seed * 1000 + g for g in range(games)]
    ref = [Game(m, s, max_rounds) for m, s in zip(maps, seeds, strict=True)]
    lane = {id(g): b for b, g in enumerate(ref)}
    tteam = [g % 2 for g in range(games)]
    seats: list[dict[int, _Seat]] = [{} for _ in ref]  # the bot's dragons, seated at their first turn
    out = TeacherMatch(bot)

    def teacher(sim, games_, actors):
        mine = [b for b, a in enumerate(actors) if a is not None and games_[b].dragons[a].team == tteam[b]]
        if not mine:
            return {}
        dec = teacher_turn(sim, mine, simulations=simulations, rounds=rounds, seed=seed, value=value, policy=policy)
        out.decisions += len(mine)
        picks = {}
        for j, b in enumerate(mine):
            d = games_[b].dragons[actors[b]]
            picks[b] = (decode_action(dec.act[j].tolist(), len(d.body), games_[b].living[d.team], sim.cap), None)
        return picks

    def the_bot(g, a, rng):
        b = lane[id(g)]
        if a not in seats[b]:
            seats[b][a] = _Seat(factory, a, g.dragons[a].team, seeds[b])
        return ask_bot(seats[b][a], observe_reference(g, a), g)

    t0 = time.perf_counter()
    lockstep(ref, the_bot, seed, decide=teacher, device=device)
    out.seconds = time.perf_counter() - t0
    for b, g in enumerate(ref):
        winner = g.result.winner
        verdict = "draw" if winner is None else ("win" if winner == tteam[b] else "loss")
        out.wins += verdict == "win"
        out.draws += verdict == "draw"
        out.losses += verdict == "loss"
        out.games.append({"game": b, "teacher_team": tteam[b], "result": verdict, "rounds": g.round,
                          "reason": g.result.reason, "standings": standings(g), "deaths": deaths_by_team(g)})
    return out


# -- the teacher's configuration and its check (the `loong_teacher` asset; issue 12 item 6) ---------------------------
CHECK_PASS_LOWER = 0.5  # the teacher check passes when the Wilson 95% lower bound of its score rate is above this


class TeacherConfigError(ValueError):
    """A bad teacher configuration: one line naming the field and its value."""


@dataclass(frozen=True)
class TeacherConfig:
    """The privileged teacher (``search``'s settings) and the match of its check against the plain network: the
    check's size and pass bar are these fields and ``CHECK_PASS_LOWER``, fixed before the games run."""

    simulations: int = DEFAULT_SIMULATIONS
    considered: int = 16  # Gumbel top-m over the student's candidates (the primitive search considers all 5)
    rollout_rounds: int = DEFAULT_ROUNDS
    rollout_policy: str = "seek"
    standing_weights: tuple[float, float, float] = STANDING_WEIGHTS  # the leaf standing's shares: queen, longest, total
    check_games: int = 16  # each generated map twice, sides swapped
    check_size: int = 20
    check_rounds: int = 100  # games end by elimination or the rules' comparison at this round
    seed: int = 0


TEACHER_PROFILES = {
    "test": dict(simulations=4, considered=4, rollout_rounds=2, check_games=2, check_size=12, check_rounds=6),
    # measured against the plain network (docs/loong-teacher.md, "The teacher check"): uniform rollouts beat strike
    # and seek, the queen-weighted standing beat the equal one, 64 simulations beat 32 (128 gained 0.015 for 1.5x).
    # check_games by power: this teacher scored 0.63 to 0.65 over 6 blocks of 32 games, where 32 games give a
    # Wilson lower bound near 0.47 (no pass expected) and 96 near 0.53 (a pass expected)
    "small": dict(simulations=64, rollout_policy="uniform", standing_weights=(8.0, 1.0, 1.0), check_games=96,
                  check_rounds=60),
    "full": dict(simulations=64, considered=32, check_games=200, check_size=32, check_rounds=500),
}


def teacher_config(profile: str, **overrides) -> TeacherConfig:
    if profile not in TEACHER_PROFILES:
        raise TeacherConfigError(f"teacher profile: {profile!r} is not one of {', '.join(TEACHER_PROFILES)}")
    cfg = TeacherConfig(**{**TEACHER_PROFILES[profile], **overrides})
    check_teacher_config(cfg)
    return cfg


def check_teacher_config(cfg: TeacherConfig) -> None:
    for name in ("simulations", "considered", "check_size", "check_rounds"):
        if getattr(cfg, name) < 1:
            raise TeacherConfigError(f"teacher config: {name} must be >= 1, got {getattr(cfg, name)}")
    if cfg.rollout_rounds < 0:
        raise TeacherConfigError(f"teacher config: rollout_rounds must be >= 0, got {cfg.rollout_rounds}")
    if cfg.rollout_policy not in ROLLOUT_POLICIES:
        raise TeacherConfigError(f"teacher config: rollout_policy {cfg.rollout_policy!r} is not one of "
                                 f"{', '.join(ROLLOUT_POLICIES)}")
    try:
        checked_weights(cfg.standing_weights)
    except ValueError as e:
        raise TeacherConfigError(f"teacher config: {e}") from None
    if cfg.check_games < 2 or cfg.check_games % 2:
        raise TeacherConfigError(f"teacher config: check_games must be even and >= 2, got {cfg.check_games}")
    if not 10 <= cfg.check_size <= 64:
        raise TeacherConfigError(f"teacher config: check_size must be a board side of 10..64, got {cfg.check_size}")


def leaf_value(cfg: TeacherConfig):
    """The rollouts' leaf value of this teacher: None (the default standing) or the standing with its weights."""
    return None if tuple(cfg.standing_weights) == STANDING_WEIGHTS else standing_value(tuple(cfg.standing_weights))


def teacher_check(cfg: TeacherConfig, network_path, out_dir, *, value=None, progress=None) -> TeacherMatch:
    """The seed's teacher check: the teacher against the plain network it is to improve, expert-0 with the int8
    network at ``network_path`` on its native build. The teacher's side is that same network's dragons (their
    beliefs, candidates and priors) playing the privileged search's choice over their candidates with zero Gumbel
    draws (``ops.loong_teacher_targets`` with ``plays="teacher"``; its rows, the teacher's own decisions, are
    written to ``out_dir``); the other side plays the network's top candidate. ``cfg.check_games`` games, each map
    twice with sides swapped; passed when the Wilson 95% lower bound of the teacher's score rate is above
    ``CHECK_PASS_LOWER``. A bad network file is a ValueError naming it."""
    from ops import loong_teacher_targets as targets

    tcfg = targets.TargetsConfig(
        games=cfg.check_games, sizes=(cfg.check_size,), max_rounds=cfg.check_rounds, opponents=(targets.NETWORK,),
        simulations=cfg.simulations, considered=cfg.considered, rollout_rounds=cfg.rollout_rounds,
        rollout_policy=cfg.rollout_policy, gumbel=False, plays="teacher", info_simulations=0, replays=False,
        seed=cfg.seed)
    if progress:
        progress(f"teacher check: {cfg.check_games} games against the plain network on {cfg.check_size}x"
                 f"{cfg.check_size}, {cfg.check_rounds} rounds; bar: Wilson 95% lower bound > {CHECK_PASS_LOWER}")
    r = targets.run(tcfg, network_path, out_dir, value=leaf_value(cfg) if value is None else value,
                    progress=progress)
    m = TeacherMatch("expert-0-native (plain network)", decisions=r.decisions, seconds=r.seconds)
    for g in r.results:
        m.wins += g["result"] == "win"
        m.draws += g["result"] == "draw"
        m.losses += g["result"] == "loss"
        m.games.append({"game": g["game"], "teacher_team": g["student_teams"][0], "result": g["result"],
                        "rounds": g["rounds"], "reason": g["reason"], "standings": g["standings"]})
    return m
