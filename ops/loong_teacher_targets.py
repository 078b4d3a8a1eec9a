"""The privileged teacher's targets on the student's own games (issue 12 item 4, ``loong_teacher_targets``;
docs/loong-teacher-targets.md).

The student, expert-0 (the int8 network compiled into the C core, its native build), plays its own games against
the configured opponents on generated maps; every game is a reference ``Game`` kept in lockstep with one lane of
the batched simulator (``gpu.loong_diff.lockstep``). At each of the student's decisions the teacher
(``ops.loong_teacher.search``) searches the student's own candidate list on the simulator's true state, the
student's scores as prior logits, and records its improved policy and every candidate's value; the student still
plays its own move, so the rows are the student's state distribution (DAgger-like).

    cfg = profile_config("small")
    result = run(cfg, "network.npz", out_dir)       # Parquet shards out_dir/part-<first game>.parquet
    table = load_targets(out_dir)                   # checked: schema name, version, every column and type

One row a student decision: every column of the replay dataset (``ops.loong_dataset.SCHEMA``, filled as it
fills them) plus the teacher's (``TARGET_FIELDS``). Each game's replay and its review with the teacher's verdicts
(and with ``pages`` its viewer page) go to out_dir/replays (``write_game``), named in games.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from games.loong.actions import Forfeit
from games.loong.engine import Game
from games.loong.mapgen import generate_map
from gpu.loong_rollout import DEFAULT_ROUNDS, ROLLOUT_POLICIES, rollout_values
from gpu.loong_sim import MOVE, SPLIT, SPRINT
from ops.loong_dataset import SCHEMA as DATASET_SCHEMA
from ops.loong_dataset import action_code, read_shards
from ops.loong_teacher import SYMS, decision_seeds, search

SCHEMA_NAME = b"loong_teacher_targets"
SCHEMA_VERSION = b"3"  # 3: the dataset's played_by column
STUDENT = "expert-0-native"  # bot.expert0.NATIVE_NAME: the rows' ``bot``
SELF = "self"  # the student against itself: both teams recorded
NETWORK = "network"  # the student's network on the other side too, as a plain bot: one team recorded (the check)
PLAYS = ("student", "teacher")  # whose choice the recorded side plays
EXPERT_H = "expert-h-native"
SPRINT_CAP = 64  # CORE_SPRINT_MAX: the longest sprint a record holds, so the lockstep's action rows are 2 + 64 wide
INBOX = 128  # the lockstep simulator's inbox capacity (sonar of two teams of relaying bots; a capacity, not a rule)
INT32_MIN = int(np.iinfo(np.int32).min)  # a record's score without a trunk tap (bot/core/expert0.c)

TARGET_FIELDS = [
    ("prior", pa.binary()),  # float32 x candidate_count: the student's softmax over its records (0: no tap)
    ("teacher_q", pa.binary()),  # float32 x n: mean rollout value of the record's action (NaN: not searched)
    ("teacher_visits", pa.binary()),  # uint16 x n: the action's rollouts
    ("teacher_policy", pa.binary()),  # float32 x n: improved policy of the action, split by prior (sums to 1)
    ("teacher_choice", pa.int16()),  # the first record of the teacher's chosen action
    ("teacher_value", pa.float32()),  # q of the teacher's choice
    ("value_lost", pa.float32()),  # teacher_q[teacher_choice] - teacher_q[chosen] where both searched, else NaN
    # The information test of a departure (``information_test``): q(teacher's action) - q(student's action) in a
    # search of those two actions only, on three states; NaN where not tested (no departure, or info_simulations 0)
    ("margin_full", pa.float32()),  # on the true state (the test's own noise: <= 0 where the search disagrees)
    ("margin_sight", pa.float32()),  # enemies outside the acting dragon's 7 x 7 window taken out (queens kept)
    ("margin_team", pa.float32()),  # enemies outside every living teammate's window taken out (queens kept)
]
SCHEMA = pa.schema([*DATASET_SCHEMA, *(pa.field(n, t) for n, t in TARGET_FIELDS)],
                   metadata={b"schema": SCHEMA_NAME, b"version": SCHEMA_VERSION})
VECTORS = {"prior": np.float32, "teacher_q": np.float32, "teacher_visits": np.uint16, "teacher_policy": np.float32}


class TargetsError(ValueError):
    """A bad config or targets file; one line naming the field (or the file and column) and the value."""


@dataclass(frozen=True)
class TargetsConfig:
    games: int = 8  # even: each generated map twice, the student on team 0 then team 1 (``game_spec``)
    sizes: tuple[int, ...] = (20,)  # board sides, cycled over the maps; games of one side share a lockstep batch
    max_rounds: int = 60  # each game's round limit (the rules' comparison there)
    opponents: tuple[str, ...] = ("foil", EXPERT_H, SELF)  # cycled over the maps; "self": the student on both sides
    simulations: int = 32  # rollouts a decision (``search``'s budget)
    considered: int = 16  # Gumbel top-m: the actions that enter the halving
    rollout_rounds: int = DEFAULT_ROUNDS
    rollout_policy: str = "seek"  # gpu.loong_rollout.ROLLOUT_POLICIES
    gumbel: bool = True  # Gumbel draws in the search (exploration for data collection), one generator a decision
    info_simulations: int = 32  # rollouts of a departure's information test on each of its 3 states (0: no test)
    plays: str = "student"  # "student": its own move (its positions: the targets); "teacher": the search's choice
    batch_games: int = 64  # games of one side played in one lockstep batch at most (one Parquet shard each)
    seed: int = 0  # every map, game, Gumbel draw and rollout derives from it
    replays: bool = True  # every game's replay and review (the teacher's verdicts) in out/replays (``write_game``)
    pages: bool = False  # with replays, also each game's viewer page, out/replays/<stem>.html


PROFILES = {
    "test": dict(games=2, sizes=(12,), max_rounds=12, opponents=("foil",), simulations=4, considered=4,
                 rollout_rounds=4, info_simulations=4),
    "small": dict(games=8, sizes=(20,), max_rounds=60, pages=True),
    # no replays for 384 games of 500 rounds: a review holds every candidate of every decision, about 44 KB a
    # decision, some 20 GB at this size (docs/loong-teacher-targets.md); the report then links nothing
    "full": dict(games=384, sizes=(20, 28, 36, 44, 52, 60), max_rounds=500, simulations=64, considered=16,
                 replays=False),
}


def profile_config(profile: str, **overrides) -> TargetsConfig:
    """The named profile's config with ``overrides`` (fields of ``TargetsConfig``), checked."""
    if profile not in PROFILES:
        raise TargetsError(f"profile: {profile!r} is not one of {', '.join(PROFILES)}")
    try:
        cfg = TargetsConfig(**{**PROFILES[profile], **overrides})
    except TypeError as e:
        raise TargetsError(f"profile {profile}: {e}") from None
    check_config(cfg)
    return cfg


def known_opponents() -> list[str]:
    from games.loong.foil import registry

    return sorted({*registry(), EXPERT_H, SELF, NETWORK})


def check_config(cfg: TargetsConfig) -> None:
    """A bad setting raises TargetsError naming the field and its value."""
    for name in ("games", "max_rounds", "simulations", "considered", "batch_games"):
        v = getattr(cfg, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise TargetsError(f"{name}: must be an integer >= 1, got {v!r}")
    if cfg.games % 2:
        raise TargetsError(f"games: must be even (each map twice, sides swapped), got {cfg.games}")
    if cfg.batch_games % 2:
        raise TargetsError(f"batch_games: must be even (a map's two games share a batch), got {cfg.batch_games}")
    if not isinstance(cfg.info_simulations, int) or isinstance(cfg.info_simulations, bool) or cfg.info_simulations < 0:
        raise TargetsError(f"info_simulations: must be an integer >= 0, got {cfg.info_simulations!r}")
    if cfg.info_simulations == 1:
        raise TargetsError("info_simulations: 1 rollout cannot value two actions; use 0 (no test) or >= 2")
    if not isinstance(cfg.rollout_rounds, int) or cfg.rollout_rounds < 0:
        raise TargetsError(f"rollout_rounds: must be an integer >= 0, got {cfg.rollout_rounds!r}")
    if cfg.rollout_policy not in ROLLOUT_POLICIES:
        raise TargetsError(f"rollout_policy: {cfg.rollout_policy!r} is not one of {', '.join(ROLLOUT_POLICIES)}")
    if cfg.plays not in PLAYS:
        raise TargetsError(f"plays: {cfg.plays!r} is not one of {', '.join(PLAYS)}")
    for name in ("gumbel", "replays", "pages"):
        if not isinstance(getattr(cfg, name), bool):
            raise TargetsError(f"{name}: must be true or false, got {getattr(cfg, name)!r}")
    if not isinstance(cfg.seed, int) or cfg.seed < 0:
        raise TargetsError(f"seed: must be an integer >= 0, got {cfg.seed!r}")
    if not cfg.sizes:
        raise TargetsError("sizes: need at least one board side")
    for s in cfg.sizes:
        if not isinstance(s, int) or not 10 <= s <= 64:
            raise TargetsError(f"sizes: board side {s!r} outside 10..64")
    if not cfg.opponents:
        raise TargetsError("opponents: need at least one bot name")
    known = known_opponents()
    for o in cfg.opponents:
        if o not in known:
            raise TargetsError(f"opponents: unknown bot {o!r} (known: {', '.join(known)})")


@dataclass(frozen=True)
class GameSpec:
    game: int
    size: int
    symmetry: str
    map_seed: int
    seed: int  # the match seed
    opponent: str
    student_teams: tuple[int, ...]


def game_spec(cfg: TargetsConfig, g: int) -> GameSpec:
    """Game ``g`` of pair ``p = g // 2``: the opponent cycled over the pairs, then the board side; the symmetry
    shifted each opponent cycle so every opponent meets every symmetry. Against a bot, both games of a pair are on
    one map, the student on team ``g % 2``; in self-play the student is both teams and the pair's second game is on
    a map of its own (the same map twice would be the same game: the engine and expert-0 draw nothing from the
    match seed but the dragons' streams)."""
    p = g // 2
    no, ns = len(cfg.opponents), len(cfg.sizes)
    opponent = cfg.opponents[p % no]
    size = cfg.sizes[(p // no) % ns]
    symmetry = SYMS[(p + p // no) % len(SYMS)]
    base = cfg.seed * 1_000_003
    if opponent == SELF:
        return GameSpec(g, size, symmetry, base + p + (g % 2) * 250_000, base + 500_000 + g, opponent, (0, 1))
    return GameSpec(g, size, symmetry, base + p, base + 500_000 + g, opponent, (g % 2,))


def game_map(spec: GameSpec):
    """The generated map of a game (``ops.loong_teacher.teacher_maps``'s generator settings)."""
    return generate_map(spec.size, spec.size, spec.symmetry, spec.map_seed, kelp_density=0.1, portal_pairs=2)


# -- records -> the simulator's actions ------------------------------------------------------------------------------
def record_rows(records: np.ndarray, cap: int = SPRINT_CAP) -> tuple[np.ndarray, np.ndarray]:
    """``(rows [A, 2 + cap] int64, group [n])``: the distinct actions of the candidate records (parsed,
    ``bot.core_candidates.RECORD_DTYPE``) as the simulator's action rows (MOVE d, SPRINT k d1..dk, SPLIT k) in
    the order of their first record, and each record's action index (records of one action share it)."""
    from bot.core_candidates import KIND_MOVE, KIND_SPLIT, KIND_SPRINT, sprint_directions

    index: dict[tuple, int] = {}
    rows: list[list[int]] = []
    group = np.empty(len(records), np.int64)
    for i, r in enumerate(records):
        kind, arg = int(r["kind"]), int(r["arg"])
        if kind == KIND_MOVE:
            key = (MOVE, arg)
        elif kind == KIND_SPLIT:
            key = (SPLIT, arg)
        elif kind == KIND_SPRINT:
            dirs = sprint_directions(r)
            if len(dirs) > cap:
                raise ValueError(f"candidate record {i}: a sprint of {len(dirs)} steps, more than the cap {cap}")
            key = (SPRINT, arg, *dirs)
        else:
            raise ValueError(f"candidate record {i}: unknown kind {kind}")
        if key not in index:
            index[key] = len(rows)
            rows.append(list(key) + [0] * (2 + cap - len(key)))
        group[i] = index[key]
    return np.array(rows, np.int64).reshape(-1, 2 + cap), group


def record_logits(scores: np.ndarray, score_exp: int) -> np.ndarray:
    """The student's logits: ``score * 2**-score_exp`` (float64), -inf for a record without a tap (INT32_MIN)."""
    s = np.asarray(scores, np.int64)
    return np.where(s == INT32_MIN, -np.inf, s.astype(np.float64) * 2.0 ** -score_exp)


def softmax(logits: np.ndarray) -> np.ndarray:
    """Softmax over the finite logits (-inf: 0); all zeros when none is finite."""
    x = np.asarray(logits, np.float64)
    ok = np.isfinite(x)
    if not ok.any():
        return np.zeros_like(x)
    e = np.where(ok, np.exp(x - x[ok].max()), 0.0)
    return e / e.sum()


def action_logits(logits: np.ndarray, group: np.ndarray, actions: int) -> np.ndarray:
    """``[A]`` logsumexp of the logits of each action's records (-inf when none of them has a tap)."""
    ok = np.isfinite(logits)
    top = np.full(actions, -np.inf)
    np.maximum.at(top, group[ok], logits[ok])
    mass = np.bincount(group[ok], weights=np.exp(logits[ok] - top[group[ok]]), minlength=actions)
    with np.errstate(divide="ignore"):
        return np.where(np.isfinite(top), top + np.log(np.where(mass > 0, mass, 1.0)), -np.inf)


def action_legal(records: np.ndarray, logits: np.ndarray, group: np.ndarray, actions: int) -> np.ndarray:
    """``[A]``: an action is searched when one of its records has prior mass or is a primitive (a generator's
    record without a tap adds nothing)."""
    from bot.core_candidates import GEN_PRIMITIVE

    ok = np.isfinite(logits) | (records["generator"] == GEN_PRIMITIVE)
    return np.bincount(group, weights=ok.astype(np.float64), minlength=actions) > 0


def split_policy(policy: np.ndarray, prior: np.ndarray, group: np.ndarray) -> np.ndarray:
    """``[n]``: each action's improved policy split among its records in proportion to their prior (evenly when
    the action's records have no prior mass)."""
    mass = np.bincount(group, weights=prior, minlength=len(policy))
    count = np.bincount(group, minlength=len(policy))
    share = np.where(mass[group] > 0, prior / np.where(mass[group] > 0, mass[group], 1.0), 1.0 / count[group])
    return policy[group] * share


# -- the games -------------------------------------------------------------------------------------------------------
@dataclass
class TargetsResult:
    out: Path
    paths: list[Path]
    decisions: int
    games: int
    results: list[dict]  # per game: spec, result from the student's view, rounds, reason, standings
    departures: int  # decisions where the teacher's chosen action is not the student's
    mean_value_lost: float  # over the decisions with a value lost (both actions searched); NaN when none
    seconds: float
    config: dict = field(default_factory=dict)
    replay_seconds: float = 0.0  # of ``seconds``: writing the replays, reviews and pages

    def summary(self) -> dict:
        from collections import Counter

        tally = Counter((r["opponent"], r["result"]) for r in self.results)
        return {"decisions": self.decisions, "games": self.games, "departures": self.departures,
                "departure_rate": self.departures / self.decisions if self.decisions else 0.0,
                "mean_value_lost": None if math.isnan(self.mean_value_lost) else self.mean_value_lost,
                "seconds": round(self.seconds, 2), "replay_seconds": round(self.replay_seconds, 2),
                "decisions_per_second": self.decisions / self.seconds if self.seconds > 0 else 0.0,
                "results": {f"{o} {r}": n for (o, r), n in sorted(tally.items())},
                "shards": [str(p) for p in self.paths]}


def _opponent_factory(name: str, student, cache: dict):
    if name in (SELF, NETWORK):
        return student
    if name not in cache:
        if name == EXPERT_H:
            from bot.expert_h import expert_h_factory

            cache[name] = expert_h_factory()
        else:
            from games.loong.foil import registry

            cache[name] = registry()[name]
    return cache[name]


class _Decision(NamedTuple):
    """A student decision waiting for the teacher's search."""

    lane: int
    dragon: int
    round: int
    inputs: object  # bot.core_inputs.TurnInputs
    records: np.ndarray
    cand: np.ndarray  # [A, 2 + cap] the distinct actions
    group: np.ndarray  # [n] each record's action
    logits: np.ndarray  # [n] the student's (-inf: no tap)
    legal: np.ndarray  # [A]
    action_logits: np.ndarray  # [A]
    action: object  # what the student played
    played: int  # its action index (-1: none of the records)


def _decision(lane: int, dragon: int, rnd: int, bot, action, cap: int, score_exp: int, encode_action) -> _Decision:
    from bot.core_candidates import parse_records

    t = bot.inputs()
    _, _, scores = bot.decision()
    recs = parse_records(t.records)
    if len(recs) != len(scores) or len(recs) == 0:
        raise RuntimeError(f"dragon {dragon} round {rnd}: {len(recs)} candidate records, {len(scores)} scores")
    cand, group = record_rows(recs, cap)
    logits = record_logits(scores, score_exp)
    legal = action_legal(recs, logits, group, len(cand))
    alog = action_logits(logits, group, len(cand))
    if not np.isfinite(alog[legal]).any():
        alog = np.where(legal, 0.0, -np.inf)  # no record has a tap: uniform over the searched actions
    played = tuple(encode_action(action, cap))
    hit = [i for i, r in enumerate(cand.tolist()) if tuple(r) == played]
    return _Decision(lane, dragon, rnd, t, recs, cand, group, logits, legal, alog, action, hit[0] if hit else -1)


def hidden_enemies(game: Game, dragon: int, team_view: bool = False) -> list[int]:
    """The living enemies of ``dragon`` that no cell of its 7 x 7 window shows (``team_view``: no living
    teammate's window either), less the queens (the standing's first term, and a team is never left empty):
    what the information test's sight state takes out. When every living enemy is hidden and none is a queen, the
    one farthest from the dragon's head (torus distance) stays: a game without a team's last dragon is over."""
    m, me = game.map, game.dragons[dragon]
    win = m.window_cells().reshape(m.n_cells, -1)
    viewers = game.living_ids(me.team) if team_view else [dragon]
    seen = np.zeros(m.n_cells, bool)
    for i in viewers:
        seen[win[game.dragons[i].body[0]]] = True
    enemies = game.living_ids(1 - me.team)
    hidden = [i for i in enemies if not game.dragons[i].is_queen and not seen[list(game.dragons[i].body)].any()]
    if hidden and len(hidden) == len(enemies):
        hx, hy = m.xy(me.body[0])

        def dist(i: int) -> int:
            x, y = m.xy(game.dragons[i].body[0])
            dx, dy = abs(x - hx), abs(y - hy)
            return min(dx, m.width - dx) + min(dy, m.height - dy)

        hidden.remove(max(hidden, key=lambda i: (dist(i), -i)))
    return hidden


def information_test(cfg: TargetsConfig, sim, games: Sequence[Game], todo: Sequence[_Decision],
                     pairs: Sequence[tuple[int, int, int]], value) -> np.ndarray:
    """``[len(pairs), 3]`` float32: for each departure ``(j, teacher's action, student's action)`` of decision
    ``todo[j]``, q(teacher's) - q(student's) from ``cfg.info_simulations / 2`` rollouts of each of the two actions
    (``rollout_values``: the search's rollout rule, rounds, leaf value and decision seeds, so the two actions and
    the three states share their draws), on the true state, the dragon's sight state and its team's
    (``hidden_enemies`` taken out by ``LoongSim.remove``). A certain death gets its rollouts too. One batch."""
    n = len(pairs)
    lanes = [todo[j].lane for j, _, _ in pairs]
    fork = sim.fork(lanes * 3)
    out_lanes, out_ids = [], []
    for view in (1, 2):
        for k, (j, _, _) in enumerate(pairs):
            d = todo[j]
            for i in hidden_enemies(games[d.lane], d.dragon, team_view=view == 2):
                out_lanes.append(view * n + k)
                out_ids.append(i)
    fork.remove(out_lanes, out_ids)
    W = 2 + sim.cap
    cand = torch.zeros(3 * n, 2, W, dtype=torch.int64)
    for k, (j, a, b) in enumerate(pairs):
        for view in range(3):
            cand[view * n + k, 0] = torch.from_numpy(todo[j].cand[a])
            cand[view * n + k, 1] = torch.from_numpy(todo[j].cand[b])
    lanes3 = torch.arange(3 * n, device=sim.device)
    v = rollout_values(fork, lanes3, cand.to(sim.device), rounds=cfg.rollout_rounds,
                       rollouts=cfg.info_simulations // 2, seed=decision_seeds(fork, lanes3, cfg.seed), value=value,
                       policy=cfg.rollout_policy)
    q = v.mean.cpu().numpy().astype(np.float32)
    return (q[:, 0] - q[:, 1]).reshape(3, n).T.copy()


def _search_rows(cfg: TargetsConfig, sim, specs: Sequence[GameSpec], todo: Sequence[_Decision], value,
                 games: Sequence[Game]) -> list[dict]:
    """One ``search`` over every waiting decision's lane (the actions padded to the widest, legal=False), then the
    information test of its departures, then the rows (after_head, after_heading and outcome filled in later)."""
    from bot.core_candidates import GEN_PRIMITIVE

    n, A, W = len(todo), max(len(d.cand) for d in todo), 2 + sim.cap
    cand = torch.zeros(n, A, W, dtype=torch.int64)
    legal = torch.zeros(n, A, dtype=torch.bool)
    logits = torch.zeros(n, A, dtype=torch.float32)
    gumbel = torch.zeros(n, A, dtype=torch.float32) if cfg.gumbel else None
    for j, d in enumerate(todo):
        k = len(d.cand)
        cand[j, :k] = torch.from_numpy(d.cand)
        legal[j, :k] = torch.from_numpy(d.legal)
        logits[j, :k] = torch.from_numpy(d.action_logits.astype(np.float32))
        if gumbel is not None:  # one generator a decision: (seed, game, round, dragon)
            rng = np.random.default_rng([cfg.seed, specs[d.lane].game, d.round, d.dragon])
            gumbel[j, :k] = torch.from_numpy(rng.gumbel(size=k).astype(np.float32))
    dev = sim.device
    dec = search(sim, [d.lane for d in todo], cand.to(dev), legal.to(dev), logits=logits.to(dev),
                 simulations=cfg.simulations, considered=cfg.considered, rounds=cfg.rollout_rounds, seed=cfg.seed,
                 value=value, gumbel=None if gumbel is None else gumbel.to(dev), policy=cfg.rollout_policy)
    q_all, v_all = dec.values.cpu().numpy(), dec.visits.cpu().numpy()
    p_all, c_all = dec.policy.cpu().numpy().astype(np.float64), dec.choice.cpu().numpy()
    pairs = [(j, int(c_all[j]), d.played) for j, d in enumerate(todo)
             if d.played >= 0 and int(c_all[j]) != d.played and v_all[j, int(c_all[j])] > 0 and v_all[j, d.played] > 0]
    margins = {}
    if pairs and cfg.info_simulations:
        m_all = information_test(cfg, sim, games, todo, pairs, value)
        margins = {j: m_all[k] for k, (j, _, _) in enumerate(pairs)}
    nan3 = np.full(3, np.nan, np.float32)
    out = []
    for j, d in enumerate(todo):
        k, spec, group = len(d.cand), specs[d.lane], d.group
        q, visits, pol, choice = q_all[j, :k], v_all[j, :k], p_all[j, :k], int(c_all[j])
        pol = pol / pol.sum() if pol.sum() > 0 else np.where(d.legal, 1.0 / d.legal.sum(), 0.0)
        prior = softmax(d.logits)
        mine = group == d.played
        lost = (float(q[choice] - q[d.played]) if d.played >= 0 and visits[choice] > 0 and visits[d.played] > 0
                else float("nan"))
        t = d.inputs
        out.append({"game": spec.game, "dragon": d.dragon, "team": None, "round": d.round, "bot": STUDENT,
                    "played_by": STUDENT,
                    "width": spec.size, "height": spec.size, "symmetry": spec.symmetry,
                    "action": action_code(d.action),
                    "played_action": action_code(d.action), "after_head": -1, "after_heading": -1, "crop": t.crop,
                    "overview": t.overview, "scalars": t.scalars, "candidates": t.records, "features": t.features,
                    "taps": t.taps, "candidate_count": t.count,
                    "chosen": int(np.flatnonzero(mine)[0]) if d.played >= 0 else -1,
                    "generator_match": bool(np.any(mine & (d.records["generator"] != GEN_PRIMITIVE))), "outcome": 0,
                    "prior": prior.astype(np.float32).tobytes(),
                    "teacher_q": q[group].astype(np.float32).tobytes(),
                    "teacher_visits": np.minimum(visits[group], 65535).astype(np.uint16).tobytes(),
                    "teacher_policy": split_policy(pol, prior, group).astype(np.float32).tobytes(),
                    "teacher_choice": int(np.flatnonzero(group == choice)[0]), "teacher_value": float(q[choice]),
                    "value_lost": lost, **dict(zip(("margin_full", "margin_sight", "margin_team"),
                                                      map(float, margins.get(j, nan3)), strict=True))})
    return out


class _RecordingGame(Game):
    """A reference game that keeps each turn as a replay stores it (``TurnRecord``; lockstep plays it through
    ``turn``). Its clones are plain games."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.records: list = []

    def turn(self, dragon_id, action, sonar=None):
        from games.loong.bots import TurnRecord

        out = super().turn(dragon_id, action, sonar)
        self.records.append(TurnRecord.of(self.round, dragon_id, action, sonar, out))
        return out


@dataclass
class GameRecord:
    """What a game's replay and review are written from (``play_batch(record=...)``): the finished reference game
    (its turns in ``records``) and, per student decision (dragon, round), the raw value, the record logits and the
    student's own pick (``decision()``'s index)."""

    game: Game
    notes: dict[tuple[int, int], tuple[int, np.ndarray, int]]


def play_batch(cfg: TargetsConfig, specs: Sequence[GameSpec], student, score_exp: int, *, value=None,
               device: str = "cpu", factories: dict | None = None,
               record: dict[int, GameRecord] | None = None) -> tuple[dict[int, list[dict]], list[dict]]:
    """The games ``specs`` (one board side) in one lockstep batch; returns (rows by game, one result a game).
    ``record``: filled with each game's ``GameRecord`` (for its replay and review)."""
    from games.loong.bots import _Seat, ask_bot, standings
    from games.loong.observation import observe as observe_reference
    from gpu.loong_diff import lockstep
    from gpu.loong_sim import decode_action, encode_action

    factories = {} if factories is None else factories
    ref = [_RecordingGame(game_map(s), s.seed, cfg.max_rounds) for s in specs]
    notes: dict[int, dict] = {s.game: {} for s in specs}
    lane_of = {id(g): b for b, g in enumerate(ref)}
    opp = [_opponent_factory(s.opponent, student, factories) for s in specs]
    seats: list[dict[int, _Seat]] = [{} for _ in ref]  # every dragon's bot, seated at its first turn
    rows: dict[int, list[dict]] = {s.game: [] for s in specs}
    pending: dict[int, dict] = {}  # lane -> the row whose head after the turn is read at the next step

    def seat(b: int, g: Game, a: int) -> _Seat:
        if a not in seats[b]:
            team = g.dragons[a].team
            factory = student if team in specs[b].student_teams else opp[b]
            seats[b][a] = _Seat(factory, a, team, specs[b].seed)
        return seats[b][a]

    def settle() -> None:  # the engine's head and heading after each pending decision (-1: it died)
        for b, row in pending.items():
            d = ref[b].dragons[row["dragon"]]
            row["after_head"], row["after_heading"] = (d.body[0], d.heading) if d.alive else (-1, -1)
        pending.clear()

    def decide(sim, games_, actors):
        settle()
        picks: dict[int, tuple] = {}
        todo: list[_Decision] = []
        for b, a in enumerate(actors):
            if a is None or games_[b].dragons[a].team not in specs[b].student_teams:
                continue
            g = games_[b]
            st = seat(b, g, a)
            action, sonar = ask_bot(st, observe_reference(g, a), g)
            picks[b] = (action, sonar)
            if st.bot is None or isinstance(action, Forfeit) or st.bot.last_code != 0:
                continue  # a failed student turn (or an observation the core refused): nothing recorded
            todo.append(_decision(b, a, g.round, st.bot, action, sim.cap, score_exp, encode_action))
            if record is not None:  # the student's own pick and the value it saw, for its review
                own, raw_value, _ = st.bot.decision()
                notes[specs[b].game][(a, g.round)] = (int(raw_value), todo[-1].logits, int(own))
        if todo:
            for d, row in zip(todo, _search_rows(cfg, sim, specs, todo, value, games_), strict=True):
                row["team"] = games_[d.lane].dragons[d.dragon].team
                rows[specs[d.lane].game].append(row)
                pending[d.lane] = row
                if cfg.plays == "teacher":  # the search's choice, with the student's sonar
                    g, dragon = games_[d.lane], games_[d.lane].dragons[d.dragon]
                    act = d.cand[d.group[row["teacher_choice"]]].tolist()
                    picks[d.lane] = (decode_action(act, len(dragon.body), g.living[dragon.team], sim.cap),
                                     picks[d.lane][1])
        return picks

    def the_bot(g, a, rng):
        b = lane_of[id(g)]
        return ask_bot(seat(b, g, a), observe_reference(g, a), g)

    lockstep(ref, the_bot, cfg.seed, decide=decide, device=device, sprint_cap=SPRINT_CAP, inbox=INBOX)
    settle()
    results = []
    for spec, g in zip(specs, ref, strict=True):
        winner = g.result.winner
        for row in rows[spec.game]:
            row["outcome"] = 0 if winner is None else (1 if winner == row["team"] else -1)
        rows[spec.game].sort(key=lambda r: (r["dragon"], r["round"]))
        if spec.opponent == SELF:
            verdict = "self"
        else:
            verdict = "draw" if winner is None else ("win" if winner == spec.student_teams[0] else "loss")
        results.append({"game": spec.game, "size": spec.size, "symmetry": spec.symmetry, "opponent": spec.opponent,
                        "student_teams": list(spec.student_teams), "result": verdict,
                        "winner": winner, "rounds": g.round, "reason": g.result.reason,
                        "standings": {str(k): v for k, v in standings(g).items()},
                        "decisions": len(rows[spec.game])})
        if record is not None:
            record[spec.game] = GameRecord(g, notes[spec.game])
    return rows, results


def encode_rows(rows: Sequence[dict]) -> pa.Table:
    return pa.table({f.name: pa.array([r[f.name] for r in rows], f.type) for f in SCHEMA}, schema=SCHEMA)


def batches(cfg: TargetsConfig) -> list[list[GameSpec]]:
    """The lockstep batches: the games grouped by board side (in game order), at most ``batch_games`` each."""
    by_size: dict[int, list[GameSpec]] = {}
    for g in range(cfg.games):
        s = game_spec(cfg, g)
        by_size.setdefault(s.size, []).append(s)
    out = []
    for size in sorted(by_size):
        specs = by_size[size]
        out += [specs[i: i + cfg.batch_games] for i in range(0, len(specs), cfg.batch_games)]
    return out


# -- each game's replay, review and page ----------------------------------------------------------------------------
REPLAYS = "replays"  # the folder of the games' replays, reviews and pages inside the targets folder


def side_names(cfg: TargetsConfig, spec: GameSpec) -> tuple[str, str]:
    """The replay's bot names, team 0 then team 1: the recorded side is ``expert-0-native`` (``teacher`` when it
    plays the search's choice); a bot opponent its name, ``self`` and ``network`` expert-0-native."""
    mine = STUDENT if cfg.plays == "student" else "teacher"
    other = STUDENT if spec.opponent in (SELF, NETWORK) else spec.opponent
    return tuple(mine if t in spec.student_teams else other for t in (0, 1))  # type: ignore[return-value]


def replay_stem_of(cfg: TargetsConfig, spec: GameSpec) -> str:
    """``game0003_expert-0-native_vs_foil``: the game number, the recorded side and the opponent
    (``games.loong.match.replay_stem``)."""
    from games.loong.match import replay_stem

    names = side_names(cfg, spec)
    mine = names[spec.student_teams[0]]
    return replay_stem(spec.game, mine, names[1 - spec.student_teams[0]] if len(spec.student_teams) == 1 else mine)


def _none_if_nan(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def review_decisions(cfg: TargetsConfig, rows: Sequence[dict], rec: GameRecord, value_exp: int) -> list:
    """A game's rows as review decisions (``ops.loong_review.Decision``) in the game's turn order: every candidate
    (the record with the student's score and prior, the teacher's rollouts and Q), the value the student saw, the
    candidate played (``chosen``: the student's own pick, a record of the row's ``chosen`` action; the teacher's
    choice when it plays) and the teacher review: the played, network (the student's top prior) and teacher
    choices, each with its candidate, option, Q and value lost."""
    from bot.core_candidates import parse_records
    from ops.loong_review import Decision, TeacherReview, played_json, record_candidate, sigmoid

    turns = {(t.round, t.dragon_id): (k, t) for k, t in enumerate(rec.game.records)}
    out = []
    for row in rows:
        key = (row["round"], row["dragon"])
        raw, logits, own = rec.notes[(row["dragon"], row["round"])]
        recs = parse_records(row["candidates"])
        prior = np.frombuffer(row["prior"], np.float32).astype(np.float64)
        q = np.frombuffer(row["teacher_q"], np.float32)
        visits = np.frombuffer(row["teacher_visits"], np.uint16)
        cands = []
        for i, r in enumerate(recs):
            c = record_candidate(r, row["width"], None if not np.isfinite(logits[i]) else float(logits[i]),
                                 float(prior[i]))
            c.visits, c.q = int(visits[i]), _none_if_nan(q[i])
            cands.append(c)
        tc, chosen = int(row["teacher_choice"]), int(row["chosen"])
        if cfg.plays == "teacher":
            played = tc
        else:  # the record the student picked (a harvest move, say), else the first of the action it played
            _, group = record_rows(recs)
            played = own if chosen >= 0 and 0 <= own < len(recs) and group[own] == group[chosen] else chosen
        top = int(np.argmax(prior)) if prior.sum() > 0 else -1
        logit = raw * 2.0 ** -value_exp
        review = TeacherReview(*(_choice(cands, q, tc, i) for i in (played, top, tc)))
        out.append((turns[key][0], Decision(
            row["round"], row["dragon"], row["team"], row["bot"], sigmoid(logit), logit,
            None if played < 0 else played, played_json(turns[key][1].action), cands, cfg.simulations, review)))
    return [d for _, d in sorted(out, key=lambda kd: kd[0])]


def _choice(cands: list, q: np.ndarray, tc: int, i: int):
    """Candidate ``i``'s side of a teacher review: its option, Q and value lost (q[tc] - q[i], float32 as the row's
    value_lost; 0 for the teacher's own choice); no candidate when ``i`` < 0."""
    from ops.loong_review import Choice

    if i < 0:
        return Choice(None, "wander")
    return Choice(i, cands[i].option, _none_if_nan(q[i]), 0.0 if i == tc else _none_if_nan(q[tc] - q[i]))


def write_game(cfg: TargetsConfig, spec: GameSpec, rows: Sequence[dict], rec: GameRecord, folder: Path, net) -> dict:
    """Game ``spec``'s replay (``games.loong.replay.save_replay``: ``<stem>.json`` + ``.parquet``), its review
    (``<stem>.review.jsonl``, ``review_decisions``) and, with ``cfg.pages``, its viewer page (``<stem>.html``,
    verified by ``games.loong.viewer.write_viewer``) in ``folder``; returns their paths relative to the targets
    folder (games.json's ``replay``, ``review``, ``page``)."""
    from bot.int8_expert import digest
    from games.loong.bots import MatchResult, standings
    from games.loong.replay import save_replay
    from ops.loong_review import save_review

    g = rec.game
    deaths = {i: (d.died, d.cause) for i, d in g.dragons.items() if not d.alive}
    match = MatchResult(g.map, g.seed, side_names(cfg, spec), g.result, list(g.records), list(g.hashes), deaths,
                        (0.0, 0.0), standings(g), g.max_rounds)
    stem = replay_stem_of(cfg, spec)
    json_path, _ = save_replay(match, folder / stem)
    who = {"bot": STUDENT, "network": digest(net), "shape": net.shape.name, "plays": cfg.plays,
           "teacher": {"simulations": cfg.simulations, "considered": cfg.considered, "gumbel": cfg.gumbel,
                       "rollout_rounds": cfg.rollout_rounds, "rollout_policy": cfg.rollout_policy}}
    decisions = review_decisions(cfg, rows, rec, net.value_exp)
    review = save_review(decisions, json_path, reviewers={t: who for t in spec.student_teams})
    page = None
    if cfg.pages:  # only with replays (run calls this only then)
        from games.loong.viewer import write_viewer

        with review.open() as f:  # the review's plain data (ops.loong_review.viewer_review) without reading it back
            data = {"header": json.loads(f.readline()), "decisions": [d.to_json() for d in decisions]}
        page = write_viewer(json_path, folder / f"{stem}.html", data)
    rel = folder.name
    return {"replay": f"{rel}/{json_path.name}", "review": f"{rel}/{review.name}",
            "page": None if page is None else f"{rel}/{page.name}"}


def _clear_replays(folder: Path) -> None:
    """A previous run's replays, reviews and pages (only the files this module writes)."""
    if not folder.is_dir():
        return
    for pattern in ("game*.json", "game*.parquet", "game*.review.jsonl", "game*.html"):
        for old in folder.glob(pattern):
            old.unlink()
    if not any(folder.iterdir()):
        folder.rmdir()


def run(cfg: TargetsConfig, network_path, out_dir, *, value=None, progress: Callable[[str], None] | None = None,
        device: str = "cpu", student=None) -> TargetsResult:
    """Play every batch (``batches``), write one shard a batch as ``out_dir/part-<first game, 6 digits>.parquet``
    plus ``config.json`` and ``games.json``, read the shards back (``load_targets``) and sum them up. With
    ``cfg.replays``, each game's replay and review (and with ``cfg.pages`` its page) go to ``out_dir/replays``
    (``write_game``; games.json names them).
    ``network_path``: the student's int8 network (``bot.int8_expert.load``: ValueError naming the file); ``value``:
    the rollouts' leaf value hook (``gpu.loong_rollout.rollout_values``); ``student``: a factory wrapping the
    network's native expert-0 (``student(expert0_factory(net))``; its bots must expose ``inputs``, ``decision``
    and ``last_code``), default the native build itself."""
    from bot.expert0 import expert0_factory
    from bot.int8_expert import digest
    from bot.int8_expert import load as load_network

    check_config(cfg)
    net = load_network(network_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("part-*.parquet"):
        old.unlink()
    folder = out / REPLAYS
    _clear_replays(folder)
    if cfg.replays:
        folder.mkdir(exist_ok=True)
    native = expert0_factory(net)
    student = native if student is None else student(native)
    factories: dict = {}
    t0 = time.perf_counter()
    paths, results = [], []
    plan = batches(cfg)
    replay_seconds = 0.0
    for i, specs in enumerate(plan):
        record: dict[int, GameRecord] | None = {} if cfg.replays else None
        rows, res = play_batch(cfg, specs, student, net.score_exp, value=value, device=device, factories=factories,
                               record=record)
        table = encode_rows([r for s in specs for r in rows[s.game]])
        path = out / f"part-{specs[0].game:06d}.parquet"
        pq.write_table(table, path, compression="zstd")
        paths.append(path)
        t1 = time.perf_counter()
        for spec, r in zip(specs, res, strict=True):
            r.update(write_game(cfg, spec, rows[spec.game], record[spec.game], folder, net) if record is not None
                     else {"replay": None, "review": None, "page": None})
        replay_seconds += time.perf_counter() - t1
        results += res
        if progress:
            progress(f"batch {i + 1}/{len(plan)}: {len(specs)} games of {specs[0].size}x{specs[0].size}, "
                     f"{table.num_rows} decisions, {time.perf_counter() - t0:.1f} s")
    seconds = time.perf_counter() - t0
    results.sort(key=lambda r: r["game"])
    doc = {**asdict(cfg), "network": str(network_path), "network_digest": digest(net)}
    (out / "config.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
    (out / "games.json").write_text(json.dumps(results, indent=1, sort_keys=True))
    table = load_targets(out, columns=["chosen", "teacher_choice", "value_lost"])
    chosen, tc = table["chosen"].to_numpy(), table["teacher_choice"].to_numpy()
    departures = int(np.sum(chosen != tc))  # both name the first record of their action
    lost = table["value_lost"].to_numpy(zero_copy_only=False).astype(np.float64)
    lost = lost[~np.isnan(lost)]
    return TargetsResult(out, paths, table.num_rows, cfg.games, results, departures,
                         float(lost.mean()) if len(lost) else float("nan"), seconds, asdict(cfg), replay_seconds)


def load_targets(path, columns: Sequence[str] | None = None) -> pa.Table:
    """Every shard under ``path`` (a folder of part-*.parquet, or one file), checked: the schema's name and
    version, every column and its type; a bad file raises TargetsError naming it (and the column)."""
    return read_shards(path, SCHEMA, TargetsError, columns, "targets ")


def vectors(table: pa.Table, i: int) -> dict[str, np.ndarray]:
    """Row ``i``'s per-candidate columns as numpy arrays (``VECTORS``: prior, teacher_q, teacher_visits,
    teacher_policy), each of ``candidate_count`` entries."""
    return {k: np.frombuffer(table[k][i].as_py(), dt) for k, dt in VECTORS.items()}


# -- the command line ------------------------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        print(f"loong_teacher_targets: {message}", file=sys.stderr)
        sys.exit(2)


def main(argv: Sequence[str] | None = None) -> int:
    ap = _Parser(prog="python -m ops.loong_teacher_targets", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="small", help="test (seconds), small (this CPU, minutes), full")
    ap.add_argument("--network", required=True, help="the student's int8 network (.npz, bot.int8_expert.save)")
    ap.add_argument("--out", required=True, help="output folder: part-*.parquet, config.json, games.json, "
                                                 "replays/")
    ap.add_argument("--seed", type=int, default=None, help="override the profile's seed")
    ap.add_argument("--games", type=int, default=None, help="override the profile's number of games (even)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--replays", action=argparse.BooleanOptionalAction, default=None,
                    help="write each game's replay and review to OUT/replays (default: the profile's: test and small "
                         "on, full off)")
    ap.add_argument("--pages", action=argparse.BooleanOptionalAction, default=None,
                    help="with replays, also each game's viewer page (default: the profile's: small on, test and "
                         "full off)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    try:
        overrides = {k: v for k, v in (("seed", args.seed), ("games", args.games), ("replays", args.replays),
                                       ("pages", args.pages)) if v is not None}
        cfg = profile_config(args.profile, **overrides)
        if args.threads < 1:
            raise TargetsError(f"--threads: must be >= 1, got {args.threads}")
        if out.exists() and not out.is_dir():
            raise TargetsError(f"--out {out}: is a file, not a folder")
        from bot.int8_expert import load as load_network

        try:
            load_network(args.network)
        except ValueError as e:  # one line naming the file and the field
            raise TargetsError(f"--network {e}") from None
        torch.set_num_threads(args.threads)
        r = run(cfg, args.network, out, progress=lambda line: print(f"loong_teacher_targets: {line}", flush=True))
    except TargetsError as e:
        print(f"loong_teacher_targets: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"loong_teacher_targets: {e.filename or out}: {e.strerror}", file=sys.stderr)
        return 2
    print(json.dumps(r.summary(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["PROFILES", "SCHEMA", "SCHEMA_NAME", "SCHEMA_VERSION", "TARGET_FIELDS", "GameSpec", "TargetsConfig",
           "TargetsError", "TargetsResult", "action_legal", "action_logits", "batches", "check_config", "game_spec",
           "load_targets", "main", "play_batch", "profile_config", "record_logits", "record_rows", "replay_stem_of",
           "review_decisions", "run", "side_names", "softmax", "split_policy", "vectors", "write_game"]
