"""Loong round robins: registered wasm builds and Python bots on generated maps of several sizes and
symmetries, rated by the shared Elo fit, with a Wilson 95% interval for every pairing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from games.league import LeagueResult, round_robin
from games.loong.bots import BotFactory
from games.loong.foil import registry
from games.loong.mapgen import load_map_spec
from games.loong.maps import LoongMap, MapError
from games.loong.match import UnknownBot, play_series
from games.stats import MatchTally
from ops.execution import Executor, InProcessExecutor, league_pairings
from ops.store import arena_home

DEFAULT_MAPS = ("gen:24x24:lr:seed=1", "gen:32x32:tb:seed=2", "gen:40x40:rot:seed=3")


def builds_root() -> Path:
    """Where registered builds live by default: ARENA_HOME/artifacts/loong/builds."""
    return arena_home() / "artifacts" / "loong" / "builds"


@dataclass(frozen=True)
class LoongLeagueConfig:
    players: tuple[str, ...] = ("foil", "random")
    """Python bot names, or registered builds as 'build:<name, id or id prefix>'."""
    maps: tuple[str, ...] = DEFAULT_MAPS
    """Map specs ('gen:WxH:sym:seed=N[,kelp=..]' or a JSON file); every pairing plays on each."""
    games_per_map: int = 2
    """Games per pairing on each map (pairs swap sides on one seed)."""
    max_rounds: int = 500
    """Round limit (the rules: 500)."""
    seed: int = 0
    """League seed; every game's seed derives from it."""
    builds: str = ""
    """Registered builds root; empty: ARENA_HOME/artifacts/loong/builds."""


def resolve_players(config: LoongLeagueConfig) -> dict[str, BotFactory]:
    """Name -> factory for every player; unknown names and unverifiable builds fail before any game."""
    python_bots = registry()
    factories: dict[str, BotFactory] = {}
    root = Path(config.builds) if config.builds else builds_root()
    for name in config.players:
        if name.startswith("build:"):
            from bot.builds import factory

            factories[name] = factory(root, name.removeprefix("build:"), name=name)
        elif name in python_bots:
            factories[name] = python_bots[name]
        else:
            raise UnknownBot(f"unknown player {name!r} (known: {', '.join(sorted(python_bots))}, build:<name|id>)")
    return factories


class LeagueConfigError(ValueError):
    """A league config that cannot be played; the message names the field and the value."""


def load_maps(config: LoongLeagueConfig) -> list[LoongMap]:
    """Every map of the league, loaded; a bad spec is refused with the map loader's reason."""
    if not config.maps:
        raise LeagueConfigError("maps: a league needs at least one map")
    try:
        return [load_map_spec(spec) for spec in config.maps]
    except MapError as e:
        raise LeagueConfigError(str(e)) from None


def check_config(config: LoongLeagueConfig) -> tuple[dict[str, BotFactory], list[LoongMap]]:
    """Refuse a config before any game (and before any run is tracked); returns the players' factories
    and the loaded maps for ``run``."""
    if len(config.players) < 2:
        raise LeagueConfigError(f"players: a league needs at least two, got {list(config.players)}")
    twice = sorted({p for p in config.players if config.players.count(p) > 1})
    if twice:
        raise LeagueConfigError(f"players: listed twice: {', '.join(twice)}")
    for field in ("games_per_map", "max_rounds"):
        if getattr(config, field) < 1:
            raise LeagueConfigError(f"{field}: must be at least 1, got {getattr(config, field)}")
    factories: dict[str, BotFactory] = {}
    for name in config.players:
        try:
            factories.update(resolve_players(replace(config, players=(name,))))
        except UnknownBot as e:
            raise LeagueConfigError(str(e)) from None
        except ValueError as e:  # a build that is missing, ambiguous or altered (bot.builds.BuildError)
            raise LeagueConfigError(f"player {name!r}: {e}") from None
    return factories, load_maps(config)


_FACTORIES: dict[LoongLeagueConfig, dict[str, BotFactory]] = {}


def play_pairing(a: str, b: str, config: LoongLeagueConfig, maps: list[LoongMap],
                 factories: Mapping[str, BotFactory] | None = None, part: tuple[int, int] = (0, 1), *,
                 seed: int) -> MatchTally:
    """One pairing, or its ``part`` = (k, n): the k-th of n slices of its maps, as a work item (the games and
    their seeds are the same however it is split). A worker given no ``factories`` resolves the players (and
    loads the builds) itself, once per process and config."""
    if factories is None:
        if config not in _FACTORIES:
            _FACTORIES[config] = resolve_players(config)
        factories = _FACTORIES[config]
    k, n = part
    return MatchTally.merged(a, b, [
        play_series(a, b, m, games=config.games_per_map, seed=seed * 7919 + i, max_rounds=config.max_rounds,
                    bots=factories).tally
        for i, m in enumerate(maps) if i % n == k
    ])


def run(config: LoongLeagueConfig, progress: Callable[[int, int], None] | None = None,
        factories: Mapping[str, BotFactory] | None = None, maps: list[LoongMap] | None = None,
        executor: Executor | None = None) -> LeagueResult:
    """Play the round robin on every map and fit Elo (anchored on ``random`` when it plays).
    ``factories`` and ``maps``: what ``check_config`` returned (resolved and loaded here if not given).
    ``executor``: where the pairings are played (``ops.execution``; default: in this process, with
    ``factories``); workers elsewhere resolve the players from the config. The same result on every backend."""
    executor = executor or InProcessExecutor()
    factories = dict(factories) if factories is not None else resolve_players(config)
    maps = maps if maps is not None else load_maps(config)
    shipped = factories if executor.backend == "inprocess" else None  # factories hold compiled code: not sent
    map_pairs = league_pairings(executor, play_pairing, config, maps, shipped, parts=len(maps))  # a map an item
    return round_robin(config.players, None, seed=config.seed, anchor="random", on_pair_done=progress,
                       map_pairs=map_pairs)
