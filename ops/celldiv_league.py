"""Cell Division round robins: the tier league and, later, the trained contenders' league."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from games.celldiv.board import PositionError
from games.celldiv.match import parse_sizes, play_match
from games.celldiv.players import BUILTIN_TIERS, UnknownPlayer, make_player
from games.league import LeagueResult, round_robin


@dataclass(frozen=True)
class LeagueConfig:
    players: tuple[str, ...] = BUILTIN_TIERS
    """Registered player names; every pair plays."""
    games: int = 100
    """Games per pairing (pairs of games share a start with colours swapped)."""
    sizes: str = "4-8"
    """Board sizes, cycled through: '4-8', '6' or '4,6,8'."""
    seed: int = 0
    """Match seed: every start and every sampling player derives from it."""
    anchor: str | None = "random"
    """The player fixed at Elo 0 (if it took part)."""


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


def run(config: LeagueConfig, progress: Callable[[int, int], None] | None = None) -> LeagueReport:
    """Play the round robin and fit Elo. A bad config (``check_config``) fails before any game."""
    check_config(config)

    def play_pair(a: str, b: str, pair_seed: int):
        return play_match(a, b, games=config.games, sizes=config.sizes, seed=pair_seed)

    result = round_robin(config.players, play_pair, seed=config.seed, anchor=config.anchor,
                         on_pair_done=progress)
    return LeagueReport(config, result)
