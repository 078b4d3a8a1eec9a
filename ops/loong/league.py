"""Loong leagues: registered wasm builds and Python bots on generated maps of several sizes and symmetries,
rated by the shared Elo fit, with a Wilson 95% interval for every pairing (docs/loong-league.md).

A league pass is the round robin of its players plus, when it names a ``current`` player, that player's PFSP
games (``ops.loong.pfsp``: opponents drawn from the stored history, one generated map a draw). The pool comes
from the build store (``pool_players``): released experts, expert-0's earlier registrations as snapshots
(``build:expert-0@<id prefix>``) and the admitted mimics. Each pass appends one record to the history
(``history_path``: under the artifact store), which the Elo-over-passes plot reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from bot.core_teacher import TeacherError, parse_player
from games.league import LeagueResult, round_robin
from games.loong.bots import BotFactory
from games.loong.foil import registry
from games.loong.mapgen import load_map_spec
from games.loong.maps import MAX_SIDE, MIN_SIDE, SYMMETRIES, LoongMap, MapError
from games.loong.match import UnknownBot, play_series
from games.stats import MatchTally, fit_elo
from ops.execution import Executor, InProcessExecutor, WorkItem, league_pairings
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
    current: str = ""
    """The player PFSP serves (the current network's bot, e.g. 'build:expert-0'); empty: no PFSP games."""
    pfsp: tuple[tuple[str, str], ...] = ()
    """The current player's PFSP draws: (opponent, map spec) each, ``games_per_map`` games a draw."""
    batched: bool = False
    """Play on the batched simulator (ops.loong.batched): builds that carry their network run it batched, every
    other player through the judge or in Python; the same games and results as the reference runner."""
    device: str = "cpu"
    """The simulator's and the batched networks' torch device when ``batched``."""
    batch_networks: str = "auto"
    """When ``batched``, how network builds evaluate: 'torch' all waiting dragons in one integer forward
    (gpu.loong_int8_batch), 'native' each dragon's network in C inside its core, 'auto' torch on an accelerator and
    native on the CPU (where C is the faster: docs/benchmarks.md, "League throughput")."""

    def network_batch(self) -> bool:
        """Whether network builds run their networks batched in torch."""
        if self.batch_networks == "auto":
            import torch

            return torch.device(self.device).type != "cpu"
        return self.batch_networks == "torch"


def league_device(name: str) -> str:
    """'auto': 'cuda' when torch sees a GPU, else 'cpu'; any other name as it is (check_config refuses bad ones)."""
    if name != "auto":
        return name
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_players(config: LoongLeagueConfig) -> dict[str, BotFactory]:
    """Name -> factory for every player; unknown names and unverifiable builds fail before any game."""
    python_bots = registry()
    factories: dict[str, BotFactory] = {}
    root = Path(config.builds) if config.builds else builds_root()
    for name in config.players:
        if name.startswith("build:"):
            from bot.builds import factory

            factories[name] = factory(root, _build_ref(root, name), name=name)
        elif name in python_bots:
            factories[name] = python_bots[name]
        elif (teacher := _teacher(name)) is not None:
            factories[name] = teacher
        else:
            raise UnknownBot(f"unknown player {name!r} (known: {', '.join(sorted(python_bots))}, build:<name|id>, "
                             "teacher[:UNITS[:MODEL]])")
    return factories


def _teacher(name: str):
    """The native privileged teacher of a 'teacher[:UNITS[:MODEL]]' player (bot.core_teacher), None for any other
    name; a bad budget or model is an UnknownBot naming it."""
    try:
        return parse_player(name)
    except TeacherError as e:
        raise UnknownBot(str(e)) from None


def _build_ref(root: Path, player: str) -> str:
    """The build store reference of a 'build:' player; a snapshot 'build:<name>@<id prefix>' must be a
    registration under that name (BuildError otherwise)."""
    ref = player.removeprefix("build:")
    if "@" not in ref:
        return ref
    from bot.builds import BuildError, load

    name, prefix = ref.split("@", 1)
    b = load(root, prefix)
    if b.name != name:
        raise BuildError(f"build {prefix!r} is registered as {b.name!r}, not as a snapshot of {name!r}")
    return b.id


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
    if config.batched:
        import torch

        if not re.fullmatch(r"cpu|cuda(:[0-9]+)?", config.device):
            raise LeagueConfigError(f"device: want cpu or cuda[:N], got {config.device!r}")
        if config.device.startswith("cuda") and not torch.cuda.is_available():
            raise LeagueConfigError(f"device: {config.device!r} asked for, but torch sees no GPU")
    if config.batch_networks not in ("auto", "torch", "native"):
        raise LeagueConfigError(f"batch_networks: want auto, torch or native, got {config.batch_networks!r}")
    for name in ("games_per_map", "max_rounds"):
        if getattr(config, name) < 1:
            raise LeagueConfigError(f"{name}: must be at least 1, got {getattr(config, name)}")
    if config.current and config.current not in config.players:
        raise LeagueConfigError(f"current: {config.current!r} is not one of the players {list(config.players)}")
    if config.pfsp and not config.current:
        raise LeagueConfigError("pfsp: PFSP draws need a current player")
    for opponent, spec in config.pfsp:
        if opponent not in config.players or opponent == config.current:
            raise LeagueConfigError(f"pfsp: opponent {opponent!r} is not another player of the league")
        if not isinstance(spec, str):
            raise LeagueConfigError(f"pfsp: map spec {spec!r} is not a string")
    factories: dict[str, BotFactory] = {}
    for name in config.players:
        try:
            factories.update(resolve_players(replace(config, players=(name,))))
        except UnknownBot as e:
            raise LeagueConfigError(str(e)) from None
        except ValueError as e:  # a build that is missing, ambiguous or altered (bot.builds.BuildError)
            raise LeagueConfigError(f"player {name!r}: {e}") from None
    maps = load_maps(config)
    try:
        for spec in {spec for _, spec in config.pfsp}:
            load_map_spec(spec)
    except MapError as e:
        raise LeagueConfigError(f"pfsp: {e}") from None
    return factories, maps


_FACTORIES: dict[LoongLeagueConfig, dict[str, BotFactory]] = {}
_NETWORKS: dict[LoongLeagueConfig, dict] = {}


def resolve_networks(config: LoongLeagueConfig) -> dict:
    """Name -> ``ops.loong.batched.NetworkPlayer`` for every 'build:' player whose build carries its network
    (bot.expert0.network_player): its native twin and the batched network. Other players are not listed."""
    builds = [name for name in config.players if name.startswith("build:")]
    if not builds:
        return {}
    from bot.expert0 import network_player
    from gpu.loong_int8_batch import BatchedInt8Net
    from ops.loong.batched import NetworkPlayer

    root = Path(config.builds) if config.builds else builds_root()
    out = {}
    for name in builds:
        nb = network_player(root, _build_ref(root, name))
        if nb is not None:
            batch = BatchedInt8Net(nb.net, device=config.device) if config.network_batch() else None
            out[name] = NetworkPlayer(nb.factory(), batch)
    return out


def _play_batched(a: str, b: str, config: LoongLeagueConfig, maps: list[LoongMap], index: list[int],
                  factories: Mapping[str, BotFactory], seed: int) -> MatchTally:
    """``play_pairing``'s games on the batched simulator (ops.loong.batched): the same seeds, sides and tally."""
    from ops.loong import batched as lb

    networks = {n: p for n, p in _networks(config).items() if n in (a, b)}
    games = lb.series_games(a, b, maps, config.games_per_map, seed, index)
    stats = lb.BatchStats()
    results = lb.play_games(games, factories, networks, max_rounds=config.max_rounds, device=config.device,
                            stats=stats)
    return lb.tally(a, b, games, results, [stats.moves[g] for g in range(len(games))])


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
    if config.batched:
        index = [i for i in range(len(maps)) if i % n == k]
        return _play_batched(a, b, config, [maps[i] for i in index], index, factories, seed)
    return MatchTally.merged(a, b, [
        play_series(a, b, m, games=config.games_per_map, seed=seed * 7919 + i, max_rounds=config.max_rounds,
                    bots=factories).tally
        for i, m in enumerate(maps) if i % n == k
    ])


def _networks(config: LoongLeagueConfig) -> dict:
    if config not in _NETWORKS:
        _NETWORKS[config] = resolve_networks(config)
    return _NETWORKS[config]


def play_map(jobs: Sequence[tuple[str, str, int]], config: LoongLeagueConfig, maps: list[LoongMap], i: int,
             factories: Mapping[str, BotFactory] | None = None, *, seed: int = 0) -> list[MatchTally]:
    """Every pairing's games on map ``i`` in one batch on the simulator (``config.batched``): pairing (a, b, s)
    plays the games ``play_pairing`` plays there (series seed ``s * 7919 + i``, sides swapped in pairs); one tally a
    pairing, in ``jobs`` order. ``seed`` is unused (each pairing has its own)."""
    from ops.loong import batched as lb

    if factories is None:
        if config not in _FACTORIES:
            _FACTORIES[config] = resolve_players(config)
        factories = _FACTORIES[config]
    games: list = []
    spans = []
    for a, b, s in jobs:
        mine = lb.series_games(a, b, [maps[i]], config.games_per_map, s, [i])
        spans.append((len(games), len(games) + len(mine)))
        games += mine
    stats = lb.BatchStats()
    results = lb.play_games(games, factories, _networks(config), max_rounds=config.max_rounds, device=config.device,
                            stats=stats)
    return [lb.tally(a, b, games[x:y], results[x:y], [stats.moves[k] for k in range(x, y)])
            for (a, b, _), (x, y) in zip(jobs, spans, strict=True)]


def batched_map_pairs(executor: Executor, config: LoongLeagueConfig, maps: list[LoongMap],
                      factories: Mapping[str, BotFactory] | None,
                      on_map_done: Callable[[int, int], None] | None = None):
    """A ``map_pairs`` for ``games.league.round_robin`` that plays a map a work item, every pairing's games on it
    in one simulator batch (``play_map``); a pairing's tally merges its maps in map order, the same games and
    tallies as ``league_pairings`` with ``play_pairing``. A map whose item failed every attempt fails every
    pairing (each recorded with that error; the league goes on)."""

    def map_pairs(jobs: list[tuple[str, str, int]]):
        items = [WorkItem(f"map {i + 1}/{len(maps)} ({maps[i].width}x{maps[i].height}), {len(jobs)} pairings",
                          play_map, (jobs, config, maps, i, factories)) for i in range(len(maps))]
        done: dict[int, object] = {}
        for o in executor.run(items):
            done[o.index] = o.value if o.ok else o.error
            if on_map_done is not None:
                on_map_done(len(done), len(maps))
        errors = [done[i] for i in range(len(maps)) if isinstance(done[i], BaseException)]
        for k, (a, b, _) in enumerate(jobs):
            yield k, errors[0] if errors else MatchTally.merged(a, b, [done[i][k] for i in range(len(maps))])

    return map_pairs


@dataclass
class PassResult:
    league: LeagueResult  # every pairing's tally (round robin and PFSP games merged), Elo over all of them
    round_robin: list[MatchTally]  # the round robin's own tallies
    pfsp: list[MatchTally] = field(default_factory=list)  # the current player's PFSP games, one tally a draw


def run(config: LoongLeagueConfig, progress: Callable[[int, int], None] | None = None,
        factories: Mapping[str, BotFactory] | None = None, maps: list[LoongMap] | None = None,
        executor: Executor | None = None) -> LeagueResult:
    """Play the round robin on every map (and the PFSP draws) and fit Elo (anchored on ``random`` when it plays).
    ``factories`` and ``maps``: what ``check_config`` returned (resolved and loaded here if not given).
    ``executor``: where the pairings are played (``ops.execution``; default: in this process, with
    ``factories``); workers elsewhere resolve the players from the config. The same result on every backend."""
    return run_pass(config, progress, factories, maps, executor).league


def run_pass(config: LoongLeagueConfig, progress: Callable[[int, int], None] | None = None,
             factories: Mapping[str, BotFactory] | None = None, maps: list[LoongMap] | None = None,
             executor: Executor | None = None,
             on_map_done: Callable[[int, int], None] | None = None) -> PassResult:
    """``run`` with the round robin's and the PFSP draws' tallies kept apart as well. A PFSP draw that fails
    every attempt is a failure (current, opponent, error); the pass goes on. ``on_map_done(done, total)``: a
    batched pass's maps as they finish (its pairings finish with the last map)."""
    executor = executor or InProcessExecutor()
    factories = dict(factories) if factories is not None else resolve_players(config)
    maps = maps if maps is not None else load_maps(config)
    shipped = factories if executor.backend == "inprocess" else None  # factories hold compiled code: not sent
    if config.batched:  # a map an item, every pairing's games in one simulator batch
        map_pairs = batched_map_pairs(executor, config, maps, shipped, on_map_done)
    else:
        map_pairs = league_pairings(executor, play_pairing, config, maps, shipped, parts=len(maps))  # a map an item
    rr = round_robin(config.players, None, seed=config.seed, anchor="random", on_pair_done=progress,
                     map_pairs=map_pairs)
    if not config.pfsp:
        return PassResult(rr, list(rr.tallies))
    items = [WorkItem(f"{config.current} vs {opponent}, PFSP draw {k + 1}/{len(config.pfsp)}", play_pairing,
                      (config.current, opponent, config, [load_map_spec(spec)], shipped),
                      seed=config.seed * 1_000_003 + 500_009 + k)
             for k, (opponent, spec) in enumerate(config.pfsp)]
    drawn: dict[int, MatchTally] = {}
    failures = list(rr.failures)
    for o in executor.run(items):
        if o.ok:
            drawn[o.index] = o.value
        else:
            failures.append((config.current, config.pfsp[o.index][0], f"{type(o.error).__name__}: {o.error}"))
    pfsp = [drawn[k] for k in sorted(drawn)]
    tallies = merge_pairs([*rr.tallies, *pfsp])
    rated = "random" if any("random" in (t.a, t.b) for t in tallies) else None
    league = LeagueResult(list(config.players), tallies, fit_elo(tallies, anchor=rated), failures)
    return PassResult(league, list(rr.tallies), pfsp)


def merge_pairs(tallies: Iterable[MatchTally]) -> list[MatchTally]:
    """One tally a pair of players (the first orientation met), the others flipped into it, in first-met order."""
    out: dict[frozenset, MatchTally] = {}
    for t in tallies:
        key = frozenset((t.a, t.b))
        if key not in out:
            out[key] = MatchTally.merged(t.a, t.b, [t])
            continue
        m = out[key]
        if (t.a, t.b) != (m.a, m.b):
            t = MatchTally(m.a, m.b, t.losses, t.draws, t.wins, [-x for x in t.margins], t.latency_b, t.latency_a)
        out[key] = MatchTally.merged(m.a, m.b, [m, t])
    return list(out.values())


# ------------------------------------------------------------------------------------------------ maps
@dataclass(frozen=True)
class MapDistribution:
    """The generated maps' distribution: each side uniform in [min_side, max_side] (width and height drawn apart
    unless ``square``), the symmetry by ``symmetry_weights`` (empty: equal). The default is the rules' whole range
    (games/loong/maps.py MIN_SIDE..MAX_SIDE, every symmetry)."""

    min_side: int = MIN_SIDE
    max_side: int = MAX_SIDE
    symmetries: tuple[str, ...] = SYMMETRIES
    symmetry_weights: tuple[float, ...] = ()
    square: bool = False

    def check(self) -> None:
        if not MIN_SIDE <= self.min_side <= self.max_side <= MAX_SIDE:
            raise LeagueConfigError(f"map sides: want {MIN_SIDE} <= min_side <= max_side <= {MAX_SIDE}, got "
                                    f"{self.min_side}..{self.max_side}")
        bad = [s for s in self.symmetries if s not in SYMMETRIES]
        if not self.symmetries or bad:
            raise LeagueConfigError(f"map symmetries: want some of {', '.join(SYMMETRIES)}, got "
                                    f"{list(self.symmetries)}")
        w = self.symmetry_weights
        if w and (len(w) != len(self.symmetries) or min(w) < 0 or sum(w) <= 0):
            raise LeagueConfigError(f"map symmetry_weights: want {len(self.symmetries)} non-negative weights with "
                                    f"a positive sum, got {list(w)}")


def generate_map_specs(dist: MapDistribution, count: int, seed: int) -> tuple[str, ...]:
    """``count`` map specs drawn from ``dist`` by a Generator seeded with ``seed`` (a league pass's seed), each with
    its own generator seed: the same pass seed, the same maps."""
    dist.check()
    if count < 1:
        raise LeagueConfigError(f"maps: a pass needs at least one map, got {count}")
    rng = np.random.default_rng([seed, 0x10046])
    w = np.asarray(dist.symmetry_weights or [1.0] * len(dist.symmetries), dtype=float)
    specs = []
    for _ in range(count):
        width = int(rng.integers(dist.min_side, dist.max_side + 1))
        height = width if dist.square else int(rng.integers(dist.min_side, dist.max_side + 1))
        sym = dist.symmetries[int(rng.choice(len(w), p=w / w.sum()))]
        specs.append(f"gen:{width}x{height}:{sym}:seed={int(rng.integers(1, 2**31 - 1))}")
    return tuple(specs)


def pass_seed(league_seed: int, pass_index: int) -> int:
    """The seed of the league's ``pass_index``-th pass (0 first): its maps and PFSP draws derive from it."""
    return league_seed * 1_000_003 + pass_index


# ------------------------------------------------------------------------------------------------ the pool
SNAPSHOT_OF = "expert-0"
SNAPSHOTS_KEPT = 3
"""expert-0's earlier registrations a league rates beside the current one (the newest first): each night's
network is a snapshot the next; the store keeps every id, the league plays only the recent ones."""
RELEASED = re.compile(r"^expert-[1-9][0-9]*$")  # every released expert-N (expert-0 is the current network)
MIMIC_PREFIX = "mimic-"


def registered_names(root: Path) -> dict[str, str]:
    """The build store's names and the id each points at (the latest registration under that name)."""
    names = Path(root) / "names"
    if not names.is_dir():
        return {}
    return {p.name: p.read_text().strip() for p in sorted(names.iterdir()) if p.is_file()}


def snapshot_players(root: Path, name: str = SNAPSHOT_OF, keep: int = SNAPSHOTS_KEPT) -> list[str]:
    """'build:<name>@<8-digit id prefix>' for the ``keep`` newest registrations under ``name`` other than the one
    the name points at now (a build's name in its build.json is the one it was first registered with)."""
    from bot.builds import list_builds

    current = registered_names(root).get(name)
    earlier = [b for b in list_builds(root) if b.name == name and b.id != current]
    return [f"build:{name}@{b.id[:8]}" for b in reversed(earlier)][:keep]


def pool_players(root: Path, mimics: Sequence[str] = ()) -> list[str]:
    """The frozen pool the build store holds beyond the league's defaults: every released expert-N, expert-0's
    snapshots and the admitted ``mimics`` (build names, e.g. 'mimic-foil'; a name not registered is left out)."""
    names = registered_names(root)
    released = sorted((n for n in names if RELEASED.match(n)), key=lambda n: int(n.split("-")[1]))
    return ([f"build:{n}" for n in released] + snapshot_players(root)
            + [f"build:{m}" for m in mimics if m in names])


# ------------------------------------------------------------------------------------------------ history
HISTORY = "history.jsonl"


def history_path(store_root: Path) -> Path:
    """The league's history: one JSON record a pass, under the artifact store (``<root>/loong/loong_league``)."""
    return Path(store_root) / "loong" / "loong_league" / HISTORY


def load_history(path: Path) -> list[dict]:
    """Every pass record in order; a line that is not a pass record is refused naming the file and line."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise LeagueConfigError(f"{path}: line {n}: not JSON ({e.msg})") from None
        if not isinstance(record, dict) or not isinstance(record.get("ratings"), list):
            raise LeagueConfigError(f"{path}: line {n}: not a league pass record (no 'ratings' list)")
        out.append(record)
    return out


def append_history(path: Path, record: dict) -> None:
    """Append one pass record (one line, written whole)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(record, sort_keys=True) + "\n")


def pass_record(index: int, version: str, config: LoongLeagueConfig, result: PassResult,
                pfsp: Mapping | None = None) -> dict:
    """The history's record of one pass: its players, maps, Elo with intervals, every pairing's tally (PFSP games
    merged in), the PFSP draws and the failures."""
    league = result.league
    return {"pass": index, "version": version, "seed": config.seed, "players": list(config.players),
            "maps": list(config.maps), "current": config.current, "pfsp": dict(pfsp or {}),
            "ratings": [r.as_dict() for r in league.ratings], "pairings": league.table(),
            "pfsp_pairings": [t.summary() for t in result.pfsp],
            "failures": [list(f) for f in league.failures]}


def elo_against(record: Mapping, reference: str = "foil") -> dict[str, float]:
    """Each player's Elo minus ``reference``'s in one pass record (empty when the reference did not play)."""
    elo = {r["player"]: r["elo"] for r in record["ratings"]}
    if reference not in elo:
        return {}
    return {p: e - elo[reference] for p, e in elo.items() if p != reference}


def history_png(history: Sequence[Mapping], path: Path, title: str) -> Path:
    """Elo over the passes: a line a player, its 95% interval as a band (a player absent from a pass has a gap)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    players = sorted({r["player"] for rec in history for r in rec["ratings"]})
    fig, ax = plt.subplots(figsize=(10, 5.5))
    x = np.array([rec.get("pass", k) for k, rec in enumerate(history)], dtype=float)
    for p in players:
        by = [{r["player"]: r for r in rec["ratings"]}.get(p) for rec in history]
        elo = np.array([r["elo"] if r else np.nan for r in by])
        low = np.array([r["low"] if r else np.nan for r in by])
        high = np.array([r["high"] if r else np.nan for r in by])
        (line,) = ax.plot(x, elo, "o-", label=p, markersize=4)
        ax.fill_between(x, low, high, color=line.get_color(), alpha=0.15)
    ax.set_xlabel("league pass")
    ax.set_ylabel("Elo (95% interval)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
