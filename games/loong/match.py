"""Series of Loong games between two bots: the one match runner behind the CLI and the league.

Games come in pairs on the same map and seed with sides swapped, so neither bot gains from a side.
Wasm builds take part through their judge factories exactly like Python bots.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from games.league import Interrupted, claim_interrupts, hold_interrupts, match_summary
from games.loong.bots import BotFactory, MatchResult, bot_build, bot_name, play_game
from games.loong.foil import registry
from games.loong.maps import LoongMap
from games.loong.observation import Observation
from games.loong.rng import MASK64, mix64
from games.stats import MatchTally


class UnknownBot(ValueError):
    """An unknown bot name or a bad series parameter; the message names it."""


def bot_factory(name: str, bots: Mapping[str, BotFactory] | None = None) -> BotFactory:
    """The factory registered as ``name`` (in ``bots``, default the built-in Python bots)."""
    bots = registry() if bots is None else bots
    if name not in bots:
        raise UnknownBot(f"unknown bot {name!r} (known: {', '.join(sorted(bots))})")
    return bots[name]


def pair_seed(seed: int, pair: int) -> int:
    """The match seed shared by both games of pair ``pair`` (sides swapped)."""
    return mix64((seed & MASK64) ^ mix64(pair + 1))


@dataclass
class SeriesResult:
    """A series of games between bots ``a`` and ``b``, a's view: the tally (latencies per move, that is
    per dragon turn), reasons, rounds, replay paths; ``interrupted`` when Ctrl-C stopped it early."""

    tally: MatchTally
    map: LoongMap
    seed: int
    max_rounds: int
    reasons: dict[str, int] = field(default_factory=dict)
    rounds: list[int] = field(default_factory=list)
    replays: list[str] = field(default_factory=list)
    interrupted: bool = False

    def summary(self) -> dict:
        """The JSON of ``arena loong match`` (keys documented in ``ops/cli.py``)."""
        return {
            **match_summary(self.tally),
            "map": self.map.name, "width": self.map.width, "height": self.map.height,
            "symmetry": self.map.symmetry, "seed": self.seed, "max_rounds": self.max_rounds,
            "reasons": dict(sorted(self.reasons.items())),
            "mean_rounds": sum(self.rounds) / len(self.rounds) if self.rounds else 0.0,
            "replays": self.replays, "interrupted": self.interrupted,
        }


class _Timed:
    """A bot factory whose bots add each move's think seconds to ``sink``."""

    def __init__(self, factory: BotFactory, sink: list[float]) -> None:
        self.factory, self.sink, self.name = factory, sink, bot_name(factory)
        self.build_id = bot_build(factory)

    def __call__(self, dragon_id: int, team: int, seed: int) -> _TimedBot:
        return _TimedBot(self.factory(dragon_id, team, seed), self.sink)

    def for_match(self) -> _Timed:
        """The wrapped factory's view for one game (``play_game``), timed into the same sink."""
        inner = self.factory.for_match() if hasattr(self.factory, "for_match") else self.factory
        return _Timed(inner, self.sink)


class _TimedBot:
    def __init__(self, bot, sink: list[float]) -> None:
        self._bot, self._sink = bot, sink

    def act(self, obs: Observation):
        t0 = time.perf_counter()
        try:
            return self._bot.act(obs)
        finally:
            self._sink.append(time.perf_counter() - t0)

    def __getattr__(self, name: str):  # last_points (metered bots) and anything else the runner reads
        if name.startswith("_"):
            raise AttributeError(name)
        got = getattr(self._bot, name)
        if name != "act_privileged":
            return got

        def timed(obs: Observation, game):  # a privileged bot's turn (ask_bot), timed as act is
            t0 = time.perf_counter()
            try:
                return got(obs, game)
            finally:
                self._sink.append(time.perf_counter() - t0)
        return timed


_UNSAFE = re.compile(r"[^A-Za-z0-9_.+-]+")


def replay_stem(g: int, a: str, b: str) -> str:
    """The file stem of game ``g``'s replay: ``game0003_foil_vs_build-foil-c`` (names made file-safe)."""
    return f"game{g:04d}_{_UNSAFE.sub('-', a)}_vs_{_UNSAFE.sub('-', b)}"


def check_replay_dir(replay_dir: str | Path) -> Path:
    """The replay folder, created if missing; a path that exists and is not a folder is refused."""
    d = Path(replay_dir)
    if d.exists() and not d.is_dir():
        raise UnknownBot(f"--replay-dir {replay_dir}: is a file, not a folder")
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UnknownBot(f"--replay-dir {replay_dir}: cannot create it ({e.strerror})") from None
    return d


def play_series(
    a: str,
    b: str,
    game_map: LoongMap,
    *,
    games: int,
    seed: int,
    max_rounds: int = 500,
    replay_dir: str | Path | None = None,
    progress: Callable[[int, MatchTally], None] | None = None,
    bots: Mapping[str, BotFactory] | None = None,
) -> SeriesResult:
    """Bot ``a`` against bot ``b`` on one map, ``games`` games in pairs that swap sides on the same
    seed (even games: a is team 0). The tally's margin is a's queen length minus b's at the end, its
    latencies the think seconds of each of a's and b's moves (dragon turns). ``bots`` maps names to
    factories (Python bots and registered wasm builds alike); default the built-in bots. Ctrl-C raises
    ``games.league.Interrupted`` with the series of the games that finished (``interrupted`` set)."""
    fa, fb = bot_factory(a, bots), bot_factory(b, bots)
    if games < 1:
        raise UnknownBot(f"--games must be at least 1, got {games}")
    if max_rounds < 1:
        raise UnknownBot(f"--max-rounds must be at least 1, got {max_rounds}")
    out = SeriesResult(MatchTally(a, b), game_map, seed, max_rounds)
    folder = check_replay_dir(replay_dir) if replay_dir is not None else None
    claim_interrupts()
    try:
        for g in range(games):
            side = g % 2  # the team bot a plays
            match_seed = pair_seed(seed, g // 2)
            lat_a: list[float] = []
            lat_b: list[float] = []
            ta, tb = _Timed(fa, lat_a), _Timed(fb, lat_b)
            r = play_game(game_map, ta, tb, match_seed, max_rounds) if side == 0 else \
                play_game(game_map, tb, ta, match_seed, max_rounds)
            with hold_interrupts():  # a finished game is recorded whole, its replay included
                if folder is not None:
                    from games.loong.replay import save_replay

                    json_path, _ = save_replay(r, folder / replay_stem(g, a, b))
                    out.replays.append(str(json_path))
                _record(out, r, side, lat_a, lat_b)
            if progress is not None:
                progress(g + 1, out.tally)
    except KeyboardInterrupt:
        out.interrupted = True
        raise Interrupted(out, out.tally) from None
    return out


def _record(out: SeriesResult, r: MatchResult, side: int, lat_a: list[float], lat_b: list[float]) -> None:
    winner = r.winner
    outcome = 0 if winner is None else (1 if winner == side else -1)
    scores = r.result.scores
    out.tally.record(outcome, scores[side][0] - scores[1 - side][0])
    out.tally.latency_a.extend(lat_a)
    out.tally.latency_b.extend(lat_b)
    key = r.reason if winner is not None else f"draw ({r.reason})"
    out.reasons[key] = out.reasons.get(key, 0) + 1
    out.rounds.append(r.rounds)
