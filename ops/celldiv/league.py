"""Cell Division round robins: the tier league and, later, the trained contenders' league."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from games.celldiv.board import PositionError
from games.celldiv.match import parse_sizes, play_match
from games.celldiv.players import BUILTIN_TIERS, UnknownPlayer, make_player
from games.league import LeagueResult, round_robin
from ops.execution import Executor, InProcessExecutor, league_pairings


@dataclass(frozen=True)
class LeagueConfig:
    players: tuple[str, ...] = BUILTIN_TIERS
    """Registered player names; every pair plays."""
    games: int = 100
    """Games per pairing (pairs of games share a start with colours swapped)."""
    search_games: int | None = None
    """Games of a pairing where a searching player (``search_players``) takes part; None: ``games``. A searching
    move costs hundreds of network calls where the others cost one, so a league can give the cheap pairings the
    games that decide its checks (the Elite row) and the searching ones fewer."""
    search_players: tuple[str, ...] = ("teacher",)
    """The players that search at play time."""
    sizes: str = "4-8"
    """Board sizes, cycled through: '4-8', '6' or '4,6,8'."""
    seed: int = 0
    """Match seed: every start and every sampling player derives from it."""
    anchor: str | None = "random"
    """The player fixed at Elo 0 (if it took part)."""

    def games_of(self, a: str, b: str) -> int:
        """The games pairing (a, b) plays."""
        searching = a in self.search_players or b in self.search_players
        return self.search_games if searching and self.search_games is not None else self.games


@dataclass
class LeagueReport:
    config: LeagueConfig
    result: LeagueResult

    def as_dict(self) -> dict:
        return {
            "players": self.result.players,
            "ratings": [r.as_dict() for r in self.result.ratings],
            "pairings": self.result.table(),
            "failures": [{"a": a, "b": b, "error": e} for a, b, e in self.result.failures],
        }


class LeagueConfigError(ValueError):
    """A league config that cannot be played; the message names the field and the value."""


def check_config(config: LeagueConfig) -> None:
    """Refuse a config before any game (and before any run is tracked): unknown players, bad sizes,
    too few games or players."""
    if len(config.players) < 2:
        raise LeagueConfigError(f"players: a league needs at least two, got {list(config.players)}")
    twice = sorted({p for p in config.players if config.players.count(p) > 1})
    if twice:
        raise LeagueConfigError(f"players: listed twice: {', '.join(twice)}")
    for name in config.players:
        try:
            make_player(name, 0)
        except UnknownPlayer as e:
            raise LeagueConfigError(str(e)) from None
    try:
        parse_sizes(config.sizes)
    except PositionError as e:
        raise LeagueConfigError(str(e)) from None
    if config.games < 1:
        raise LeagueConfigError(f"games: must be at least 1, got {config.games}")
    if config.search_games is not None and config.search_games < 1:
        raise LeagueConfigError(f"search_games: must be at least 1, got {config.search_games}")


GAMES_PER_PART = 20
"""Games of a pairing one work item plays (``part_games``), so that a league of few pairings still keeps every
worker busy. Balance decides it, not overhead: a part costs 40 ms (tiers) to seconds (the teacher's search)
against the pool's 2.5 ms an item (docs/benchmarks.md, execution seam); a placeholder between those bounds."""


def parts_of(games: int) -> int:
    """Work items a pairing of ``games`` games is played as (never dependent on the number of workers)."""
    return max(1, -(-games // GAMES_PER_PART))


def part_games(games: int, part: tuple[int, int]) -> tuple[int, int]:
    """(first game, games) of ``part`` = (k, n) of a pairing: whole pairs of games (a start and its swap)."""
    k, n = part
    pairs = -(-games // 2)
    first, end = 2 * (k * pairs // n), min(games, 2 * ((k + 1) * pairs // n))
    return first, end - first


def play_pairing(a: str, b: str, games: int | LeagueConfig, sizes: str, trained: tuple[str, int] | None = None,
                 part: tuple[int, int] = (0, 1), *, seed: int):
    """One pairing, or its ``part`` (k, n), as a work item (picklable, runs in any worker): the parts' tallies
    merged in order are the whole pairing's. ``games``: the pairing's games, or the league's config that says
    them (``LeagueConfig.games_of``). ``trained`` (artifact root, teacher simulations) registers the store's
    trained players in this worker first (once per process and published versions)."""
    if trained is not None:
        register_trained(*trained)
    if isinstance(games, LeagueConfig):
        games = games.games_of(a, b)
    first, count = part_games(games, part)
    return play_match(a, b, games=count, sizes=sizes, seed=seed, first_game=first)


_REGISTERED: set[tuple] = set()


def register_trained(root: str, teacher_simulations: int) -> None:
    """Register the trained players published under the artifact root ``root``, once per process and set of
    published versions (a kept worker picks up a newer publication)."""
    from pathlib import Path

    from ops.celldiv.players import GROUP, register_store_players
    from ops.store import ArtifactStore

    store = ArtifactStore(Path(root))
    key = (root, teacher_simulations, *(str(store.latest(GROUP, name)) for name in TRAINED_ASSETS))
    if key in _REGISTERED:
        return
    register_store_players(store, teacher_simulations=teacher_simulations)
    _REGISTERED.add(key)


TRAINED_ASSETS = ("celldiv_hard_weights", "celldiv_switching_weights", "celldiv_elite_onnx", "celldiv_teacher")


def run(config: LeagueConfig, progress: Callable[[int, int], None] | None = None,
        executor: Executor | None = None, trained: tuple[str, int] | None = None) -> LeagueReport:
    """Play the round robin and fit Elo. A bad config (``check_config``) fails before any game.
    ``executor``: where the pairings are played (``ops.execution``; default: in this process);
    ``trained``: (artifact root, teacher simulations) when trained players take part, so that every worker
    registers them. The result is the same on every backend and worker count."""
    if trained is not None:
        register_trained(*trained)  # check_config below must know the trained players' names
    check_config(config)
    map_pairs = league_pairings(executor or InProcessExecutor(), play_pairing, config, config.sizes, trained,
                                parts=lambda a, b: parts_of(config.games_of(a, b)))
    result = round_robin(config.players, None, seed=config.seed, anchor=config.anchor, on_pair_done=progress,
                         map_pairs=map_pairs)
    return LeagueReport(config, result)
