"""Python bots and the one match runner.

A bot is one object per dragon, made at the dragon's birth by ``factory(dragon_id, team, seed)`` and
asked ``bot.act(obs) -> (action, sonar)`` once per turn; it keeps its own memory. The runner turns
anything a bot does wrong (raises, returns garbage or an invalid action) into that dragon's death
with a recorded reason; the game goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from games.loong.actions import Action, Forfeit, Move, Sonar, canonical, check_action, check_sonar
from games.loong.engine import MAX_ROUNDS, Game, GameResult
from games.loong.maps import DX, DY, KELP, PORTAL, LoongMap
from games.loong.observation import HALF, Observation, observe
from games.loong.rng import SplitMix64, dragon_seed


class Bot(Protocol):
    def act(self, obs: Observation) -> tuple[Action, Sonar | None]: ...


BotFactory = Callable[[int, int, int], Bot]  # (dragon_id, team, seed) -> bot


def move_target(obs: Observation, direction: int) -> tuple[int, int] | None:
    """Window (row, col) a MOVE through ``direction`` reaches, or None when it is out of sight.

    Kelp is not checked here. A portal's exit is computed from its partner edge."""
    row = col = HALF
    kind = obs.edges[row, col, direction]
    if kind != PORTAL:
        return row + DY[direction], col + DX[direction]
    px, py, side = (int(v) for v in obs.partners[row, col, direction])
    tx, ty = (px + DX[side]) % obs.width, (py + DY[side]) % obs.height
    hx, hy = obs.head
    dx = (tx - hx + obs.width // 2) % obs.width - obs.width // 2
    dy = (ty - hy + obs.height // 2) % obs.height - obs.height // 2
    if abs(dx) > HALF or abs(dy) > HALF:
        return None
    return HALF + dy, HALF + dx


def looks_safe(obs: Observation, direction: int) -> bool:
    """Whether a MOVE through ``direction`` survives, judged from the window only (unseen = safe)."""
    if obs.edges[HALF, HALF, direction] == KELP:
        return False
    target = move_target(obs, direction)
    if target is None:
        return True
    r, c = target
    occupant = int(obs.dragon_ids[r, c])
    if occupant < 0:
        return True
    own_tail = occupant == obs.dragon_id and len(obs.body) >= 2 and _is_own_tail(obs, r, c)
    return own_tail and not obs.pearls[r, c]


def _is_own_tail(obs: Observation, r: int, c: int) -> bool:
    hx, hy = obs.head
    tx, ty = obs.body[-1]
    return ((hx + c - HALF) % obs.width, (hy + r - HALF) % obs.height) == (tx, ty)


class RandomBot:
    """Uniformly random among the moves that do not look fatal (any move when all do). No sonar."""

    name = "random"

    def __init__(self, dragon_id: int, team: int, seed: int) -> None:
        self.rng = SplitMix64(seed)

    def act(self, obs: Observation) -> tuple[Action, Sonar | None]:
        safe = [d for d in range(4) if looks_safe(obs, d)] or [0, 1, 2, 3]
        return Move(safe[self.rng.below(len(safe))]), None


def random_bot(dragon_id: int, team: int, seed: int) -> RandomBot:
    """The ``random`` bot's factory."""
    return RandomBot(dragon_id, team, seed)


random_bot.name = "random"  # type: ignore[attr-defined]

BOTS: dict[str, BotFactory] = {"random": random_bot}


def bot_name(factory: BotFactory) -> str:
    return str(getattr(factory, "name", getattr(factory, "__name__", type(factory).__name__)))


def bot_build(factory: BotFactory) -> str | None:
    """The content id of a wasm build's factory (``build_id``: the first 24 hex digits of its module's sha256,
    bot.builds.build_id), which replays record beside the name; None for Python bots."""
    bid = getattr(factory, "build_id", None)
    return bid if isinstance(bid, str) else None


# -- the match runner ----------------------------------------------------------------------------
@dataclass(frozen=True)
class TurnRecord:
    """One dragon turn as a replay stores it; ``death`` is the actor's cause of death this turn."""

    round: int
    dragon_id: int
    action: Action
    sonar: Sonar | None
    points_used: int = 0
    death: str | None = None

    @classmethod
    def of(cls, rnd: int, dragon_id: int, action: Action, sonar: Sonar | None, outcome, points: int = 0):
        """The record of a turn the engine played (``outcome``: its ``TurnOutcome``; the actor's death read there)."""
        death = next((c for j, c in outcome.deaths if j == dragon_id), None)
        return cls(rnd, dragon_id, action, sonar, int(points), death)


@dataclass
class MatchResult:
    """A finished game: the result, per-team standings, every turn and every round's state hash."""

    map: LoongMap
    seed: int
    bot_names: tuple[str, str]
    result: GameResult
    turns: list[TurnRecord]
    hashes: list[str]
    deaths: dict[int, tuple[int, str]]  # dragon id -> (round, cause)
    think_seconds: tuple[float, float]
    standings: dict = field(default_factory=dict)
    max_rounds: int = MAX_ROUNDS
    bot_builds: tuple[str | None, str | None] = (None, None)  # each side's build id (``bot_build``), None: Python

    @property
    def winner(self) -> int | None:
        return self.result.winner

    @property
    def reason(self) -> str:
        return self.result.reason

    @property
    def rounds(self) -> int:
        return self.result.round


class _Seat:
    """A dragon's bot, or the error its factory raised (the dragon then dies on its first turn)."""

    def __init__(self, factory: BotFactory, dragon_id: int, team: int, match_seed: int) -> None:
        self.bot, self.error = None, None
        try:
            self.bot = factory(dragon_id, team, dragon_seed(match_seed, dragon_id))
        except Exception as e:  # noqa: BLE001 - any bot failure is the bot's death, not ours
            self.error = f"bot factory raised {type(e).__name__}: {e}"


def ask_bot(seat: _Seat, obs: Observation, game: Game | None = None) -> tuple[Action, Sonar | None]:
    """The bot's turn, with any failure turned into a Forfeit naming the reason. A privileged bot (one with
    ``act_privileged(obs, game)``: the teacher, which searches the true state) is given ``game``; every other bot
    sees only its observation (which holds the dragon's length and its team's living count)."""
    if seat.error is not None:
        return Forfeit(seat.error), None
    try:
        privileged = getattr(seat.bot, "act_privileged", None) if game is not None else None
        reply = privileged(obs, game) if privileged is not None else seat.bot.act(obs)
    except Exception as e:  # noqa: BLE001
        return Forfeit(f"bot raised {type(e).__name__}: {e}"), None
    return checked_reply(reply, obs)


def checked_reply(reply: object, obs: Observation) -> tuple[Action, Sonar | None]:
    """A bot's reply to ``obs`` in its one spelling, or a Forfeit naming why the rules refuse it."""
    if not isinstance(reply, tuple) or len(reply) != 2:
        return Forfeit(f"bot returned {reply!r:.80}, not (action, sonar)"), None
    action, sonar = reply
    reason = check_action(action, len(obs.body), obs.team_living) or check_sonar(sonar)
    if reason is not None:
        return Forfeit(reason), None
    return canonical(action, sonar)  # replays store one spelling of each turn


def play_game(
    game_map: LoongMap,
    bots_team0: BotFactory,
    bots_team1: BotFactory,
    seed: int,
    max_rounds: int = MAX_ROUNDS,
    record: bool = True,
) -> MatchResult:
    """Play one game: team 0's dragons use ``bots_team0``, team 1's ``bots_team1``.

    A factory with ``for_match()`` (the wasm judge's: its memory bound a team is per match) plays through the view
    it returns for this game. A dragon's bot is dropped when the dragon dies, so what it holds (a wasm instance and
    its memory) is freed then, not at the end of the game: a team holds at most its living dragons' bots."""
    game = Game(game_map, seed, max_rounds)
    factories = tuple(f.for_match() if hasattr(f, "for_match") else f for f in (bots_team0, bots_team1))
    seats = {i: _Seat(factories[d.team], i, d.team, seed) for i, d in sorted(game.dragons.items())}
    turns: list[TurnRecord] = []
    think = [0.0, 0.0]
    while not game.over:
        game.begin_round()
        while (i := game.next_actor()) is not None:
            team = game.dragons[i].team
            t0 = time.perf_counter()
            action, sonar = ask_bot(seats[i], observe(game, i), game)
            think[team] += time.perf_counter() - t0
            # metered bots (the wasm judge) report the points their turn used; Python bots use none
            points = getattr(seats[i].bot, "last_points", 0) if seats[i].bot is not None else 0
            outcome = game.turn(i, action, sonar)
            for dead, _cause in outcome.deaths:
                seats[dead].bot = None  # a dead dragon never acts again: free its bot now
            if outcome.born is not None:
                seats[outcome.born] = _Seat(factories[team], outcome.born, team, seed)
            if record:
                turns.append(TurnRecord.of(game.round, i, action, sonar, outcome, points))
        game.end_round()
    return _result(game, (bot_name(bots_team0), bot_name(bots_team1)), turns, tuple(think),
                   (bot_build(bots_team0), bot_build(bots_team1)))


def standings(game: Game) -> dict:
    """Per team: living dragons, queen length, longest and total living length."""
    out = {}
    for team, (queen, longest, total) in enumerate(game.scores()):
        out[team] = {"living": game.living[team], "queen_length": queen, "longest": longest, "total": total}
    return out


def _result(game: Game, names: tuple[str, str], turns: list[TurnRecord], think: tuple,
            builds: tuple[str | None, str | None] = (None, None)) -> MatchResult:
    deaths = {i: (d.died, d.cause) for i, d in game.dragons.items() if not d.alive}
    return MatchResult(game.map, game.seed, names, game.result, turns, list(game.hashes), deaths, think,
                       standings(game), game.max_rounds, builds)
