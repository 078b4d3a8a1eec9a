"""The privileged teacher's targets on the student's own games (issue 12 item 4, issue 36 item 4,
``loong_teacher_targets``; docs/loong-teacher-targets.md).

The student, expert-0 (the int8 network compiled into the C core, its native build), plays its own games against
the configured opponents on generated maps, on the reference engine. At each of the student's decisions the native
privileged teacher (``bot.core_teacher.NativeTeacher``: the C core's root search on the true state) searches its
own root listing plus the student's candidate actions, and records its improved policy over the student's actions
(their scores the prior) and every candidate's value; the student still plays its own move, so the rows are the
student's state distribution (DAgger-like). Each game is a work item (``ops.execution``): the local pool uses both
cores, Ray a cluster, and the rows are the same whatever ran them.

    cfg = profile_config("small")
    result = run(cfg, "network.npz", out_dir, executor=PoolExecutor(2))   # out_dir/part-<first game>.parquet
    table = load_targets(out_dir)                   # checked: schema name, version, every column and type

One row a student decision: every column of the replay dataset (``ops.loong.dataset.SCHEMA``, filled as it
fills them) plus the teacher's (``TARGET_FIELDS``). Each game's replay and its review with the teacher's verdicts
(and with ``pages`` its viewer page) go to out_dir/replays (``write_game``), named in games.json.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bot.core_teacher import DEFAULT_LEAF, DEFAULT_MODEL, DEFAULT_UNITS, ROLLOUT_ROUNDS, WEIGHTS
from games.loong.actions import Forfeit
from games.loong.engine import Game
from games.loong.mapgen import SYMMETRIES, generate_map
from gpu.loong_sim import MOVE, SPLIT, SPRINT
from ops.loong.dataset import SCHEMA as DATASET_SCHEMA
from ops.loong.dataset import action_code, read_shards
from ops.profiles import Profiles

SCHEMA_NAME = b"loong_teacher_targets"
SCHEMA_VERSION = b"4"  # 4: the native teacher (teacher_choice -1: no record holds its action)
STUDENT = "expert-0-native"  # bot.expert0.NATIVE_NAME: the rows' ``bot``
SELF = "self"  # the student against itself: both teams recorded
NETWORK = "network"  # the student's network on the other side too, as a plain bot: one team recorded (the check)
PLAYS = ("student", "teacher")  # whose choice the recorded side plays
EXPERT_H = "expert-h-native"
SPRINT_CAP = 64  # CORE_SPRINT_MAX: the longest sprint a record holds, so ``record_rows``' action rows are 2 + 64 wide
INT32_MIN = int(np.iinfo(np.int32).min)  # a record's score without a trunk tap (bot/core/expert0.c)

TARGET_FIELDS = [
    ("prior", pa.binary()),  # float32 x candidate_count: the student's softmax over its records (0: no tap)
    ("teacher_q", pa.binary()),  # float32 x n: mean rollout value of the record's action (NaN: not searched)
    ("teacher_visits", pa.binary()),  # uint16 x n: the action's rollouts
    ("teacher_policy", pa.binary()),  # float32 x n: improved policy of the action, split by prior (sums to 1)
    ("teacher_choice", pa.int16()),  # the first record of the teacher's chosen action (-1: no record holds it)
    ("teacher_value", pa.float32()),  # q of the teacher's choice
    ("value_lost", pa.float32()),  # q(teacher's choice) - q(the student's action) where both searched, else NaN
    # The information test of a departure (``information_test``): q(teacher's action) - q(student's action) in a
    # search of those two actions only, on three states; NaN where not tested (no departure, or info_units 0)
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
    sizes: tuple[int, ...] = (20,)  # board sides, cycled over the maps
    max_rounds: int = 60  # each game's round limit (the rules' comparison there)
    opponents: tuple[str, ...] = ("foil", EXPERT_H, SELF)  # cycled over the maps; "self": the student on both sides
    units: int = DEFAULT_UNITS  # the native teacher's budget a decision (bot.core_teacher: dragon turns simulated)
    model: str = DEFAULT_MODEL  # its opponent model (bot.core_teacher.MODELS)
    leaf: str = DEFAULT_LEAF  # its leaf value (bot.core_teacher.LEAVES)
    weights: tuple[int, int, int] = WEIGHTS  # the standing's (queen, longest, total)
    rollout_rounds: int = ROLLOUT_ROUNDS
    gumbel: bool = True  # Gumbel draws at the root (exploration for data collection), seeded by the game
    info_units: int = 8_000  # budget of each of a departure's three information searches (0: no test; a placeholder)
    plays: str = "student"  # "student": its own move (its positions: the targets); "teacher": the search's choice
    seed: int = 0  # every map, game and search draw derives from it
    replays: bool = True  # every game's replay and review (the teacher's verdicts) in out/replays (``write_game``)
    pages: bool = False  # with replays, also each game's viewer page, out/replays/<stem>.html


PROFILES = {
    "test": dict(games=2, sizes=(12,), max_rounds=12, opponents=("foil",), units=1_500, rollout_rounds=4,
                 info_units=400),
    # issue 37's volume: at least 50,000 searched decisions a cycle; 34 games of the rules' 500 rounds on three sizes
    # give about 51,000 (the first 32 of docs/loong-cycle.md's run: 48,037), about 18 minutes on 2 cores here
    "small": dict(games=34, sizes=(20, 28, 36), max_rounds=500, pages=True),
    # no replays for 384 games of 500 rounds: a review holds every candidate of every decision, about 44 KB a
    # decision, some 20 GB at this size (docs/loong-teacher-targets.md); the report then links nothing
    "full": dict(games=384, sizes=(20, 28, 36, 44, 52, 60), max_rounds=500, replays=False),
}
CONFIG_PROFILES = Profiles("targets", TargetsConfig, PROFILES, TargetsError)
SHARD_GAMES = 64  # games a Parquet shard holds at most (a shard is written when its games are in)
ROW_GROUP = 1_024  # decisions a row group holds at most: the unit a reader streams (about 60 MB of a
# 500-round game's decisions, 700 candidate records each)


def profile_config(profile: str, **overrides) -> TargetsConfig:
    """The named profile's config with ``overrides`` (fields of ``TargetsConfig``), checked."""
    cfg = CONFIG_PROFILES.resolve(profile, **overrides)
    check_config(cfg)
    return cfg


def known_opponents() -> list[str]:
    from games.loong.foil import registry

    return sorted({*registry(), EXPERT_H, SELF, NETWORK})


def check_config(cfg: TargetsConfig) -> None:
    """A bad setting raises TargetsError naming the field and its value."""
    from bot.core_teacher import LEAVES, MODELS, ROLLOUT_MAX

    for name in ("games", "max_rounds", "units"):
        v = getattr(cfg, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise TargetsError(f"{name}: must be an integer >= 1, got {v!r}")
    if cfg.games % 2:
        raise TargetsError(f"games: must be even (each map twice, sides swapped), got {cfg.games}")
    if not isinstance(cfg.info_units, int) or isinstance(cfg.info_units, bool) or cfg.info_units < 0:
        raise TargetsError(f"info_units: must be an integer >= 0, got {cfg.info_units!r}")
    if not isinstance(cfg.rollout_rounds, int) or not 0 <= cfg.rollout_rounds <= ROLLOUT_MAX:
        raise TargetsError(f"rollout_rounds: must be an integer in 0..{ROLLOUT_MAX}, got {cfg.rollout_rounds!r}")
    if cfg.model not in MODELS:
        raise TargetsError(f"model: {cfg.model!r} is not one of {', '.join(MODELS)}")
    if cfg.leaf not in LEAVES:
        raise TargetsError(f"leaf: {cfg.leaf!r} is not one of {', '.join(LEAVES)}")
    w = tuple(cfg.weights)
    if len(w) != 3 or not all(isinstance(x, int) and 0 <= x <= 64 for x in w) or not any(w):
        raise TargetsError(f"weights: want three integers of 0..64, not all 0, got {cfg.weights!r}")
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
    symmetry = SYMMETRIES[(p + p // no) % len(SYMMETRIES)]
    base = cfg.seed * 1_000_003
    if opponent == SELF:
        return GameSpec(g, size, symmetry, base + p + (g % 2) * 250_000, base + 500_000 + g, opponent, (0, 1))
    return GameSpec(g, size, symmetry, base + p, base + 500_000 + g, opponent, (g % 2,))


def game_map(spec: GameSpec):
    """The generated map of a game (``ops.loong.teacher.teacher_maps``'s generator settings)."""
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

    def summary(self) -> dict:
        from collections import Counter

        tally = Counter((r["opponent"], r["result"]) for r in self.results)
        return {"decisions": self.decisions, "games": self.games, "departures": self.departures,
                "departure_rate": self.departures / self.decisions if self.decisions else 0.0,
                "mean_value_lost": None if math.isnan(self.mean_value_lost) else self.mean_value_lost,
                "seconds": round(self.seconds, 2),
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
    """A student decision waiting for the teacher's search: its candidate records grouped into actions."""

    dragon: int
    round: int
    inputs: object  # bot.core_inputs.TurnInputs
    records: np.ndarray
    actions: list  # [A] the distinct actions of the records (engine actions), in the order of their first record
    group: np.ndarray  # [n] each record's action
    logits: np.ndarray  # [n] the student's (-inf: no tap)
    legal: np.ndarray  # [A] searched: prior mass or a primitive (``action_legal``)
    action_logits: np.ndarray  # [A]
    action: object  # what the student played
    played: int  # its action index (-1: none of the records)


def record_actions(records: np.ndarray) -> tuple[list, np.ndarray]:
    """``(actions [A], group [n])``: the records' distinct actions as the engine's (``Move``, ``Sprint``, ``Split``)
    in the order of their first record (``record_rows``' grouping), and each record's action index."""
    from games.loong.actions import Move, Split, Sprint

    rows, group = record_rows(records)
    out = []
    for r in rows.tolist():
        kind, arg = r[0], r[1]
        out.append(Move(arg) if kind == MOVE else Split(arg) if kind == SPLIT else Sprint(tuple(r[2: 2 + arg])))
    return out, group


def _decision(dragon: int, rnd: int, bot, action, score_exp: int) -> _Decision:
    from bot.core_candidates import parse_records

    t = bot.inputs()
    _, _, scores = bot.decision()
    recs = parse_records(t.records)
    if len(recs) != len(scores) or len(recs) == 0:
        raise RuntimeError(f"dragon {dragon} round {rnd}: {len(recs)} candidate records, {len(scores)} scores")
    actions, group = record_actions(recs)
    logits = record_logits(scores, score_exp)
    legal = action_legal(recs, logits, group, len(actions))
    alog = action_logits(logits, group, len(actions))
    if not np.isfinite(alog[legal]).any():
        alog = np.where(legal, 0.0, -np.inf)  # no record has a tap: uniform over the searched actions
    played = actions.index(action) if action in actions else -1
    return _Decision(dragon, rnd, t, recs, actions, group, logits, legal, alog, action, played)


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


def without(game: Game, ids: Sequence[int]) -> Game:
    """A copy of ``game`` with the living dragons ``ids`` taken out without the rules' death: their cells left empty
    (no pearls), their team's count down, mid-round included (the round's queue skips them). Not a rule: the
    information test's determinisation edit; a team's last dragon is never taken (ValueError)."""
    g = game.clone()
    for i in ids:
        d = g.dragons[i]
        if not d.alive:
            raise ValueError(f"without: dragon {i} is not living")
        if g.living[d.team] <= 1:
            raise ValueError(f"without: dragon {i} is its team's last")
        for c in d.body:
            g.occ[c] = -1
        d.body.clear()
        d.alive, d.died, d.cause = False, g.round, "removed"
        g.living[d.team] -= 1
    return g


def information_test(info, game: Game, d: _Decision, teacher_action, student_action) -> np.ndarray:
    """``[3]`` float32: q(teacher's action) - q(student's action) from a search of those two actions only
    (``info``: a NativeTeacher, its units the test's budget), on the true state, the dragon's sight state and its
    team's (``hidden_enemies`` taken out by ``without``). A certain death is searched too."""
    out = np.empty(3, np.float32)
    for view in range(3):
        g = game if view == 0 else without(game, hidden_enemies(game, d.dragon, team_view=view == 2))
        r = info.decide(g, d.dragon, [teacher_action, student_action], only=True)
        out[view] = r.q[r.index(teacher_action)] - r.q[r.index(student_action)]
    return out


def search_row(cfg: TargetsConfig, teacher, info, game: Game, d: _Decision, spec: GameSpec) -> tuple[dict, object]:
    """The teacher's search of decision ``d`` on ``game`` (its actor's turn; ``teacher``: a NativeTeacher): the root
    is the teacher's own listing (moves, splits, sprints by end cell) plus the student's scored actions (those the
    network's prior reaches, best first, at most ``GIVEN`` with the one it played); the row (after_head,
    after_heading and outcome filled in later) and the teacher's chosen action (played when ``cfg.plays`` is
    "teacher"). The improved policy is over the student's actions (their logits the prior); ``teacher_choice`` is
    the first record of the teacher's action, -1 when no record holds it (a candidate gap: ``value_lost`` still
    measures it); ``info`` (None: no test) tests a departure's information (``information_test``)."""
    from bot.core_candidates import GEN_PRIMITIVE
    from bot.core_teacher import GIVEN, improved_policy

    scored = np.flatnonzero(np.isfinite(d.action_logits) & d.legal)
    scored = scored[np.argsort(-d.action_logits[scored], kind="stable")][: GIVEN - 1]
    given = [d.actions[i] for i in sorted({*scored.tolist(), *([d.played] if d.played >= 0 else [])})]
    dec = teacher.decide(game, d.dragon, given)
    idx = np.array([dec.index(a) for a in d.actions], np.int64)
    there = idx >= 0
    at = np.where(there, idx, 0)
    visits = np.where(there, dec.visits[at], 0)
    q = np.where(visits > 0, dec.q[at], np.nan)
    usable = d.legal & there & dec.considered[at]
    if not usable.any():
        usable = d.legal & there
    prior_ok = usable & np.isfinite(d.action_logits)
    if prior_ok.any():
        usable = prior_ok
    pol = improved_policy(np.where(visits > 0, q, 0.0), visits, usable,
                          np.where(np.isfinite(d.action_logits), d.action_logits, 0.0))
    chosen = dec.action
    tc_action = d.actions.index(chosen) if chosen in d.actions else -1
    played_root = dec.index(d.action)
    lost = float("nan")
    if played_root >= 0 and dec.visits[dec.chosen] > 0 and dec.visits[played_root] > 0:
        lost = 0.0 if played_root == dec.chosen else float(dec.q[dec.chosen] - dec.q[played_root])
    margins = np.full(3, np.nan, np.float32)
    if info is not None and played_root >= 0 and played_root != dec.chosen and np.isfinite(lost):
        margins = information_test(info, game, d, chosen, d.action)
    prior = softmax(d.logits)
    group = d.group
    mine = group == d.played
    t = d.inputs
    row = {"game": spec.game, "dragon": d.dragon, "team": game.dragons[d.dragon].team, "round": d.round,
           "bot": STUDENT, "played_by": STUDENT, "width": spec.size, "height": spec.size, "symmetry": spec.symmetry,
           "action": action_code(d.action), "played_action": action_code(d.action), "after_head": -1,
           "after_heading": -1, "crop": t.crop, "overview": t.overview, "scalars": t.scalars,
           "candidates": t.records, "features": t.features, "taps": t.taps, "candidate_count": t.count,
           "chosen": int(np.flatnonzero(mine)[0]) if d.played >= 0 else -1,
           "generator_match": bool(np.any(mine & (d.records["generator"] != GEN_PRIMITIVE))), "outcome": 0,
           "prior": prior.astype(np.float32).tobytes(),
           "teacher_q": q[group].astype(np.float32).tobytes(),
           "teacher_visits": np.minimum(visits[group], 65535).astype(np.uint16).tobytes(),
           "teacher_policy": split_policy(pol, prior, group).astype(np.float32).tobytes(),
           "teacher_choice": int(np.flatnonzero(group == tc_action)[0]) if tc_action >= 0 else -1,
           "teacher_value": float(dec.q[dec.chosen]), "value_lost": lost,
           **dict(zip(("margin_full", "margin_sight", "margin_team"), map(float, margins), strict=True))}
    return row, chosen


class _RecordingGame(Game):
    """A reference game that keeps each turn as a replay stores it (``TurnRecord``). Its clones are plain games."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.records: list = []

    def turn(self, dragon_id, action, sonar=None):
        from games.loong.bots import TurnRecord

        out = super().turn(dragon_id, action, sonar)
        self.records.append(TurnRecord.of(self.round, dragon_id, action, sonar, out))
        return out

    def clone(self) -> Game:
        g = super().clone()
        g.__class__ = Game
        del g.records
        return g


@dataclass
class GameRecord:
    """What a game's replay and review are written from: the finished reference game (its turns in ``records``)
    and, per student decision (dragon, round), the raw value, the record logits and the student's own pick
    (``decision()``'s index)."""

    game: Game
    notes: dict[tuple[int, int], tuple[int, np.ndarray, int]]


def teachers(cfg: TargetsConfig, spec: GameSpec):
    """``(teacher, info)``: the game's NativeTeachers, seeded by its match seed (the search's and the information
    test's; info None when ``cfg.info_units`` is 0)."""
    from bot.core_teacher import NativeTeacher

    kw = dict(rollout_rounds=cfg.rollout_rounds, seed=spec.seed, weights=cfg.weights, leaf=cfg.leaf)
    teacher = NativeTeacher(cfg.units, cfg.model, gumbel=cfg.gumbel, **kw)
    info = NativeTeacher(cfg.info_units, cfg.model, **kw) if cfg.info_units else None
    return teacher, info


def play_game(cfg: TargetsConfig, spec: GameSpec, student, score_exp: int, *, factories: dict | None = None,
              record: bool = False) -> tuple[list[dict], dict, GameRecord | None]:
    """Game ``spec`` on the reference engine: ``(rows, result, record)``. Every student decision (a dragon of
    ``spec.student_teams`` whose turn the core accepted) is searched by the teacher (``search_row``); the student's
    move is played, or the teacher's with ``cfg.plays`` "teacher". ``record``: the game's ``GameRecord`` too (for
    its replay and review)."""
    from games.loong.bots import _Seat, ask_bot, standings
    from games.loong.observation import observe as observe_reference

    factories = {} if factories is None else factories
    g = _RecordingGame(game_map(spec), spec.seed, cfg.max_rounds)
    opp = _opponent_factory(spec.opponent, student, factories)
    teacher, info = teachers(cfg, spec)
    seats: dict[int, _Seat] = {}
    rows: list[dict] = []
    notes: dict = {}
    while not g.over:
        g.begin_round()
        while (a := g.next_actor()) is not None:
            team = g.dragons[a].team
            mine = team in spec.student_teams
            if a not in seats:
                seats[a] = _Seat(student if mine else opp, a, team, spec.seed)
            st = seats[a]
            action, sonar = ask_bot(st, observe_reference(g, a), g)
            row = None
            if mine and st.bot is not None and not isinstance(action, Forfeit) and st.bot.last_code == 0:
                d = _decision(a, g.round, st.bot, action, score_exp)
                row, chosen = search_row(cfg, teacher, info, g, d, spec)
                rows.append(row)
                if record:  # the student's own pick and the value it saw, for its review
                    own, raw_value, _ = st.bot.decision()
                    notes[(a, g.round)] = (int(raw_value), d.logits, int(own))
                if cfg.plays == "teacher":
                    action = chosen
            g.turn(a, action, sonar)
            if row is not None:
                me = g.dragons[a]
                row["after_head"], row["after_heading"] = (me.body[0], me.heading) if me.alive else (-1, -1)
        g.end_round()
    winner = g.result.winner
    for row in rows:
        row["outcome"] = 0 if winner is None else (1 if winner == row["team"] else -1)
    rows.sort(key=lambda r: (r["dragon"], r["round"]))
    if spec.opponent == SELF:
        verdict = "self"
    else:
        verdict = "draw" if winner is None else ("win" if winner == spec.student_teams[0] else "loss")
    result = {"game": spec.game, "size": spec.size, "symmetry": spec.symmetry, "opponent": spec.opponent,
              "student_teams": list(spec.student_teams), "result": verdict, "winner": winner, "rounds": g.round,
              "reason": g.result.reason, "standings": {str(k): v for k, v in standings(g).items()},
              "decisions": len(rows)}
    return rows, result, GameRecord(g, notes) if record else None


def encode_rows(rows: Sequence[dict]) -> pa.Table:
    return pa.table({f.name: pa.array([r[f.name] for r in rows], f.type) for f in SCHEMA}, schema=SCHEMA)


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
    """A game's rows as review decisions (``ops.loong.review.Decision``) in the game's turn order: every candidate
    (the record with the student's score and prior, the teacher's rollouts and Q), the value the student saw, the
    candidate played (``chosen``: the student's own pick, a record of the row's ``chosen`` action; the teacher's
    choice when it plays) and the teacher review: the played, network (the student's top prior) and teacher
    choices, each with its candidate, option, Q and value lost."""
    from bot.core_candidates import parse_records
    from ops.loong.review import Decision, TeacherReview, played_json, record_candidate, sigmoid

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
        tv = float(row["teacher_value"])
        review = TeacherReview(*(_choice(cands, q, tc, tv, i) for i in (played, top, tc)))
        out.append((turns[key][0], Decision(
            row["round"], row["dragon"], row["team"], row["bot"], sigmoid(logit), logit,
            None if played < 0 else played, played_json(turns[key][1].action), cands,
            int(visits[np.unique(record_rows(recs)[1], return_index=True)[1]].sum()), review)))
    return [d for _, d in sorted(out, key=lambda kd: kd[0])]


def _choice(cands: list, q: np.ndarray, tc: int, tv: float, i: int):
    """Candidate ``i``'s side of a teacher review: its option, Q and value lost (the teacher's value ``tv`` - q[i],
    float32 as the row's value_lost; 0 for the teacher's own choice); no candidate when ``i`` < 0 (the teacher's
    action held by no record: a candidate gap)."""
    from ops.loong.review import Choice

    if i < 0:
        return Choice(None, "wander")
    return Choice(i, cands[i].option, _none_if_nan(q[i]), 0.0 if i == tc else _none_if_nan(np.float32(tv) - q[i]))


def write_game(cfg: TargetsConfig, spec: GameSpec, rows: Sequence[dict], rec: GameRecord, folder: Path, net) -> dict:
    """Game ``spec``'s replay (``games.loong.replay.save_replay``: ``<stem>.json`` + ``.parquet``), its review
    (``<stem>.review.jsonl``, ``review_decisions``) and, with ``cfg.pages``, its viewer page (``<stem>.html``,
    verified by ``games.loong.viewer.write_viewer``) in ``folder``; returns their paths relative to the targets
    folder (games.json's ``replay``, ``review``, ``page``)."""
    from bot.int8_expert import digest
    from games.loong.bots import MatchResult, standings
    from games.loong.replay import save_replay
    from ops.loong.review import save_review

    g = rec.game
    deaths = {i: (d.died, d.cause) for i, d in g.dragons.items() if not d.alive}
    match = MatchResult(g.map, g.seed, side_names(cfg, spec), g.result, list(g.records), list(g.hashes), deaths,
                        (0.0, 0.0), standings(g), g.max_rounds)
    stem = replay_stem_of(cfg, spec)
    json_path, _ = save_replay(match, folder / stem)
    who = {"bot": STUDENT, "network": digest(net), "shape": net.shape.name, "plays": cfg.plays,
           "teacher": {"units": cfg.units, "model": cfg.model, "leaf": cfg.leaf, "weights": list(cfg.weights),
                       "gumbel": cfg.gumbel, "rollout_rounds": cfg.rollout_rounds}}
    decisions = review_decisions(cfg, rows, rec, net.value_exp)
    review = save_review(decisions, json_path, reviewers={t: who for t in spec.student_teams})
    page = None
    if cfg.pages:  # only with replays (run calls this only then)
        from games.loong.viewer import write_viewer

        with review.open() as f:  # the review's plain data (ops.loong.review.viewer_review) without reading it back
            data = {"header": json.loads(f.readline()), "decisions": [d.to_json() for d in decisions]}
        page = write_viewer(json_path, folder / f"{stem}.html", data, partial=True)  # the teacher is not rebuilt
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


def _game_item(cfg: TargetsConfig, spec: GameSpec, network_path: str, network_digest: str, folder: str | None,
               student_wrap=None, *, seed: int) -> tuple[list[dict], dict]:
    """One game as a work item (``ops.execution``): the network loaded once a worker (``cached`` by its digest),
    the game played (``play_game``), its replay and review written to ``folder`` (None: none); ``(rows, result)``."""
    from bot.expert0 import expert0_factory
    from bot.int8_expert import load as load_network
    from ops.execution import cached

    net = cached(f"int8-network:{network_digest}", lambda: load_network(network_path))
    native = expert0_factory(net)
    student = native if student_wrap is None else student_wrap(native)
    rows, result, rec = play_game(cfg, spec, student, net.score_exp, record=folder is not None)
    result.update(write_game(cfg, spec, rows, rec, Path(folder), net) if rec is not None
                  else {"replay": None, "review": None, "page": None})
    return rows, result


WORK = "games"  # out_dir/games: each finished game's rows and result while a run is under way (``run`` resumes)


def _game_files(work: Path, game: int) -> tuple[Path, Path]:
    return work / f"game-{game:06d}.parquet", work / f"game-{game:06d}.json"


def _keep_game(work: Path, game: int, rows: list[dict], result: dict) -> None:
    """A finished game's rows and result, each written whole (a temporary file renamed); the result last, so a game
    counts as finished only once both are there."""
    table, doc = _game_files(work, game)
    tmp = table.with_suffix(".tmp")
    pq.write_table(encode_rows(rows), tmp, compression="zstd")
    tmp.replace(table)
    tmp = doc.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, sort_keys=True))
    tmp.replace(doc)


def run(cfg: TargetsConfig, network_path, out_dir, *, executor=None, progress: Callable[[str], None] | None = None,
        student=None) -> TargetsResult:
    """Play every game (``game_spec``), each a work item on ``executor`` (default: in this process); keep each
    finished game in ``out_dir/games`` (``WORK``); then write one shard a ``SHARD_GAMES`` games as
    ``out_dir/part-<first game, 6 digits>.parquet`` plus ``config.json`` and ``games.json``, read the shards back
    (``load_targets``) and sum them up. A run stopped part way (killed, or a game that failed every attempt: the
    ``WorkFailed`` names it) leaves its finished games there; the next run with the same config and network plays
    only the others and writes the same bytes as a run that never stopped (another config or network starts over).
    With ``cfg.replays``, each game's replay and review (and with ``cfg.pages`` its page) go to ``out_dir/replays``
    (``write_game``; games.json names them).
    ``network_path``: the student's int8 network (``bot.int8_expert.load``: ValueError naming the file);
    ``student``: a factory wrapping the network's native expert-0 (``student(expert0_factory(net))``; its bots must
    expose ``inputs``, ``decision`` and ``last_code``; in-process only), default the native build itself."""
    from bot.int8_expert import digest
    from bot.int8_expert import load as load_network
    from ops.execution import InProcessExecutor, WorkItem, gather

    check_config(cfg)
    executor = InProcessExecutor() if executor is None else executor
    if student is not None and executor.backend != "inprocess":
        raise TargetsError("student: a wrapped student plays in this process only (executor 'inprocess')")
    net = load_network(network_path)
    net_digest = digest(net)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("part-*.parquet"):
        old.unlink()
    folder, work = out / REPLAYS, out / WORK
    key = json.dumps({**asdict(cfg), "network_digest": net_digest}, sort_keys=True)
    if not (work / "run.json").is_file() or (work / "run.json").read_text() != key:  # a fresh run
        if work.is_dir():
            shutil.rmtree(work)
        _clear_replays(folder)
        work.mkdir()
        (work / "run.json").write_text(key)
    if cfg.replays:
        folder.mkdir(exist_ok=True)
    specs = [game_spec(cfg, g) for g in range(cfg.games)]
    kept = {s.game for s in specs if _game_files(work, s.game)[1].is_file()}
    items = [WorkItem(f"targets game {s.game}", _game_item,
                      (cfg, s, str(network_path), net_digest, str(folder) if cfg.replays else None, student),
                      seed=s.seed) for s in specs if s.game not in kept]
    t0 = time.perf_counter()
    decisions = [0]
    if kept and progress:
        progress(f"resuming: {len(kept)} of {len(specs)} games kept from the last run")

    def done(o, k: int, n: int) -> None:
        if o.ok:
            rows, result = o.value
            _keep_game(work, result["game"], rows, result)
            decisions[0] += len(rows)
        if progress:
            progress(f"game {k}/{n} ({o.name}{'' if o.ok else ' FAILED'}): {decisions[0]} decisions, "
                     f"{time.perf_counter() - t0:.1f} s")

    gather(executor, items, done)  # WorkFailed after the others finished: they stay kept for the next run
    seconds = time.perf_counter() - t0
    paths, results = [], []
    for i in range(0, len(specs), SHARD_GAMES):
        chunk = [_game_files(work, s.game) for s in specs[i: i + SHARD_GAMES]]
        path = out / f"part-{specs[i].game:06d}.parquet"
        with pq.ParquetWriter(path, SCHEMA, compression="zstd") as writer:  # a game in memory at a time
            for t, _ in chunk:
                writer.write_table(pq.read_table(t).cast(SCHEMA), row_group_size=ROW_GROUP)
        paths.append(path)
        results += [json.loads(doc.read_text()) for _, doc in chunk]
    results.sort(key=lambda r: r["game"])
    shutil.rmtree(work)
    doc = {**asdict(cfg), "network": str(network_path), "network_digest": net_digest}
    (out / "config.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
    (out / "games.json").write_text(json.dumps(results, indent=1, sort_keys=True))
    table = load_targets(out, columns=["chosen", "teacher_choice", "value_lost"])
    chosen, tc = table["chosen"].to_numpy(), table["teacher_choice"].to_numpy()
    departures = int(np.sum(chosen != tc))  # both name the first record of their action (-1: none holds it)
    lost = table["value_lost"].to_numpy(zero_copy_only=False).astype(np.float64)
    lost = lost[~np.isnan(lost)]
    return TargetsResult(out, paths, table.num_rows, cfg.games, results, departures,
                         float(lost.mean()) if len(lost) else float("nan"), seconds, asdict(cfg))


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
    ap = _Parser(prog="python -m ops.loong.teacher_targets", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="small", help="test (seconds), small (this CPU, minutes), full")
    ap.add_argument("--network", required=True, help="the student's int8 network (.npz, bot.int8_expert.save)")
    ap.add_argument("--out", required=True, help="output folder: part-*.parquet, config.json, games.json, "
                                                 "replays/")
    ap.add_argument("--seed", type=int, default=None, help="override the profile's seed")
    ap.add_argument("--games", type=int, default=None, help="override the profile's number of games (even)")
    ap.add_argument("--workers", type=int, default=1, help="games played at once on a local process pool "
                                                           "(default 1: in this process)")
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
        if args.workers < 1:
            raise TargetsError(f"--workers: must be >= 1, got {args.workers}")
        if out.exists() and not out.is_dir():
            raise TargetsError(f"--out {out}: is a file, not a folder")
        from bot.int8_expert import load as load_network

        try:
            load_network(args.network)
        except ValueError as e:  # one line naming the file and the field
            raise TargetsError(f"--network {e}") from None
        from ops.execution import make_executor

        executor = make_executor("inprocess" if args.workers == 1 else "local", args.workers)
        r = run(cfg, args.network, out, executor=executor,
                progress=lambda line: print(f"loong_teacher_targets: {line}", flush=True))
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


__all__ = ["CONFIG_PROFILES", "PROFILES",
           "SCHEMA", "SCHEMA_NAME", "SCHEMA_VERSION", "TARGET_FIELDS", "GameSpec", "TargetsConfig",
           "TargetsError", "TargetsResult", "action_legal", "action_logits", "check_config", "game_spec",
           "hidden_enemies", "information_test", "load_targets", "main", "play_game", "profile_config",
           "record_actions", "record_logits", "record_rows", "replay_stem_of", "review_decisions", "run",
           "search_row", "side_names", "softmax", "split_policy", "vectors", "without", "write_game"]
