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


def play_pairing(a: str, b: str, games: int, sizes: str, trained: tuple[str, int] | None = None, *, seed: int):
    """One pairing as a work item (picklable, runs in any worker): ``trained`` (artifact root, teacher
    simulations) registers the store's trained players in this worker first (once per process)."""
    if trained is not None:
        register_trained(*trained)
    return play_match(a, b, games=games, sizes=sizes, seed=seed)


_REGISTERED: set[tuple[str, int]] = set()


def register_trained(root: str, teacher_simulations: int) -> None:
    """Register the trained players published under the artifact root ``root``, once per process."""
    if (root, teacher_simulations) in _REGISTERED:
        return
    from pathlib import Path

    from ops.celldiv_players import register_store_players
    from ops.store import ArtifactStore

    register_store_players(ArtifactStore(Path(root)), teacher_simulations=teacher_simulations)
    _REGISTERED.add((root, teacher_simulations))


def run(config: LeagueConfig, progress: Callable[[int, int], None] | None = None,
        executor: Executor | None = None, trained: tuple[str, int] | None = None) -> LeagueReport:
    """Play the round robin and fit Elo. A bad config (``check_config``) fails before any game.
    ``executor``: where the pairings are played (``ops.execution``; default: in this process);
    ``trained``: (artifact root, teacher simulations) when trained players take part, so that every worker
    registers them. The result is the same on every backend and worker count."""
    if trained is not None:
        register_trained(*trained)  # check_config below must know the trained players' names
    check_config(config)
    map_pairs = league_pairings(executor or InProcessExecutor(), play_pairing, config.games, config.sizes, trained)
    result = round_robin(config.players, None, seed=config.seed, anchor=config.anchor, on_pair_done=progress,
                         map_pairs=map_pairs)
    return LeagueReport(config, result)
