"""League games on the batched simulator (issue 13 item 2; docs/loong-league.md, "Games on the simulator"): the
games live in ``gpu.loong_sim.LoongSim`` lanes; judged players (registered wasm builds through the judge, Python and
native bots) are asked on the CPU with their reference observation read from the lane; network players (expert-0
builds that carry their network: ``bot.expert0.network_player``) prepare each dragon's inputs in the native core, and
all the dragons of one network waiting at a step are evaluated in one batched integer forward, then finish their
turns in the core. The results are reference ``MatchResult``s, so replays keep their format and re-simulate.

    games = [BatchedGame(m, seed, ("build:expert-0", "foil")), ...]
    results = play_games(games, judged={"foil": foil_factory}, networks={"build:expert-0": player})

Every game equals the one ``games.loong.bots.play_game`` plays with the same bots (a network player plays as its
wasm build does: the same core and network, natively); tested. A lane that outgrows the simulator's capacities
(``CapacityError``) is played again on the reference engine, so no game is lost to a capacity.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from games.loong.actions import Forfeit, free_steps
from games.loong.bots import BotFactory, MatchResult, _Seat, ask_bot, checked_reply, play_game
from games.loong.maps import LoongMap
from games.loong.observation import Observation
from games.stats import MatchTally
from gpu.loong_play import play_batched_games
from gpu.loong_sim import FORFEIT, CapacityError, Turn, encode_action, encode_sonar

INBOX = 256  # the simulator's inbox capacity a dragon a round (relaying teams; a capacity, not a rule)
RING = 256  # LoongSim's default ring: a body longer than this raises CapacityError (then the reference replays it)

Evaluate = Callable[[Sequence[object]], list[tuple[int, np.ndarray]]]
"""A batched network: the turns' inputs (bot.core_inputs.TurnInputs) -> (value, scores int32 [n]) each."""


@dataclass(frozen=True)
class NetworkPlayer:
    """A player whose dragons' networks run batched: ``factory`` makes the native bots (``begin`` / ``finish``:
    bot.expert0.Expert0), ``evaluate`` runs the network on many dragons' inputs at once; None: each dragon's whole
    turn in the native core, its network in C (on this CPU the faster: docs/benchmarks.md, "League throughput")."""

    factory: BotFactory
    evaluate: Evaluate | None = None


@dataclass(frozen=True)
class BatchedGame:
    map: LoongMap
    seed: int
    names: tuple[str, str]  # the players of team 0 and team 1


@dataclass
class BatchStats:
    games: int = 0
    turns: int = 0
    steps: int = 0
    network_turns: int = 0  # dragon turns whose network ran in a batch
    batches: int = 0  # batched network evaluations
    replayed: int = 0  # games played again on the reference engine (a simulator capacity was outgrown)
    seconds: float = 0.0
    moves: dict[int, tuple[list[float], list[float]]] = dataclasses.field(default_factory=dict)
    """game index -> each move's seconds, team 0's and team 1's (the tally's latencies)"""

    @property
    def mean_batch(self) -> float:
        return self.network_turns / self.batches if self.batches else 0.0


def sprint_cap(ring: int = RING) -> int:
    """The longest valid sprint of a dragon the simulator's ring can hold: ceil(L/4) + L - 1 at L = ``ring``."""
    return free_steps(ring) + ring - 1


class _Host:
    """The policy that plays every lane's actor (gpu.loong_play: ``reads_sim``): one seat a (game, dragon)."""

    reads_sim = True

    def __init__(self, games: Sequence[BatchedGame], judged: Mapping[str, BotFactory],
                 networks: Mapping[str, NetworkPlayer], cap: int, stats: BatchStats) -> None:
        from gpu.loong_sim_observe import observations

        self.observations = observations
        self.games, self.judged, self.networks, self.cap, self.stats = games, judged, networks, cap, stats
        self.seats: dict[tuple[int, int], _Seat] = {}
        self.sent: dict[tuple[int, int, int], tuple[object, int]] = {}  # (game, round, dragon) -> (action, points)
        self.think = np.zeros((len(games), 2))
        self.moves: list[tuple[list[float], list[float]]] = [([], []) for _ in games]  # seconds a move, by team

    def _seat(self, g: int, obs: Observation, name: str) -> _Seat:
        key = (g, obs.dragon_id)
        if key not in self.seats:
            factory = self.networks[name].factory if name in self.networks else self.judged[name]
            self.seats[key] = _Seat(factory, obs.dragon_id, obs.team, self.games[g].seed)
        return self.seats[key]

    def _took(self, g: int, team: int, seconds: float) -> None:
        self.think[g, team] += seconds
        self.moves[g][team].append(seconds)

    def __call__(self, sim, lane_game: torch.Tensor) -> Turn:
        B, cap = sim.B, self.cap
        ids = sim.actor_ids().tolist()
        lanes = [b for b, a in enumerate(ids) if a >= 0]
        games = lane_game.tolist()
        replies: dict[int, tuple] = {}
        waiting: dict[str, list[tuple[int, _Seat, Observation, object, float]]] = {}
        for b, obs in zip(lanes, self.observations(sim, lanes), strict=True):
            g = games[b]
            name = self.games[g].names[obs.team]
            seat = self._seat(g, obs, name)
            t0 = time.perf_counter()
            if name in self.networks and self.networks[name].evaluate is not None and seat.bot is not None:
                try:
                    inputs = seat.bot.begin(obs)
                    if inputs is None:  # the core refused the observation: its fallback reply stands
                        replies[b] = checked_reply(seat.bot.finish(), obs)
                    else:
                        waiting.setdefault(name, []).append((b, seat, obs, inputs, time.perf_counter() - t0))
                        continue
                except Exception as e:  # noqa: BLE001 - a failing bot is its dragon's death, never the batch's
                    replies[b] = Forfeit(f"bot raised {type(e).__name__}: {e}"), None
            else:
                replies[b] = ask_bot(seat, obs)
            self._took(g, obs.team, time.perf_counter() - t0)
        for name, items in waiting.items():
            t0 = time.perf_counter()
            outs = self.networks[name].evaluate([x[3] for x in items])
            share = (time.perf_counter() - t0) / len(items)
            self.stats.network_turns += len(items)
            self.stats.batches += 1
            for (b, seat, obs, _, before), (value, scores) in zip(items, outs, strict=True):
                t1 = time.perf_counter()
                try:
                    replies[b] = checked_reply(seat.bot.finish(value, scores), obs)
                except Exception as e:  # noqa: BLE001
                    replies[b] = Forfeit(f"bot raised {type(e).__name__}: {e}"), None
                self._took(games[b], obs.team, before + share + time.perf_counter() - t1)
        rows = [[FORFEIT, 0] + [0] * cap for _ in range(B)]
        vals, masks = [[0] * 4 for _ in range(B)], [[False] * 4 for _ in range(B)]
        for b, (action, sonar) in replies.items():
            g, seat = games[b], self.seats[(games[b], ids[b])]
            points = getattr(seat.bot, "last_points", 0) if seat.bot is not None else 0
            self.sent[(g, int(sim.round[b]), ids[b])] = (action, int(points))
            rows[b] = encode_action(action, cap)
            vals[b], masks[b] = encode_sonar(sonar)
        self.stats.turns += len(replies)
        self.stats.steps += 1
        return Turn(torch.tensor(rows), torch.tensor(vals), torch.tensor(masks))


def _restore(r: MatchResult, g: int, game: BatchedGame, host: _Host) -> MatchResult:
    """The simulator's record with what only the host knows: the players' names, each turn's points, a forfeit's
    own reason (the batched row holds only FORFEIT) and the think seconds."""
    turns, deaths = [], dict(r.deaths)
    for t in r.turns:
        action, points = host.sent[(g, t.round, t.dragon_id)]
        if isinstance(action, Forfeit):
            t = dataclasses.replace(t, action=action, death=action.reason)
            deaths[t.dragon_id] = (t.round, action.reason)
        turns.append(dataclasses.replace(t, points_used=points))
    return dataclasses.replace(r, bot_names=game.names, turns=turns, deaths=deaths,
                               think_seconds=(float(host.think[g, 0]), float(host.think[g, 1])))


def play_games(games: Sequence[BatchedGame], judged: Mapping[str, BotFactory],
               networks: Mapping[str, NetworkPlayer] | None = None, *, max_rounds: int = 500,
               device: str = "cpu", batch_size: int | None = None, stats: BatchStats | None = None,
               progress: Callable[[int, int], None] | None = None) -> list[MatchResult]:
    """Play ``games`` on the simulator, one batch a board size (``batch_size`` lanes at most); returns one
    ``MatchResult`` a game, in order. Every player a game names must be in ``judged`` or ``networks``."""
    networks = dict(networks or {})
    stats = stats if stats is not None else BatchStats()
    for game in games:
        unknown = [n for n in game.names if n not in judged and n not in networks]
        if unknown:
            raise KeyError(f"player {unknown[0]!r} is neither judged nor a network player")
    by_size: dict[tuple[int, int], list[int]] = {}
    for g, game in enumerate(games):
        by_size.setdefault((game.map.width, game.map.height), []).append(g)
    out: dict[int, MatchResult] = {}
    t0 = time.perf_counter()
    threads = torch.get_num_threads()
    if torch.device(device).type == "cpu":  # docs/benchmarks.md, "League throughput": small ops, one thread
        torch.set_num_threads(1)
    try:
        _play_groups(games, by_size, judged, networks, max_rounds, device, batch_size, stats, progress, out)
    finally:
        torch.set_num_threads(threads)
    stats.seconds += time.perf_counter() - t0
    return [out[g] for g in range(len(games))]


def _play_groups(games, by_size, judged, networks, max_rounds, device, batch_size, stats, progress, out) -> None:
    for idx in by_size.values():
        group = [games[g] for g in idx]
        cap = sprint_cap(min(group[0].map.width * group[0].map.height, RING))
        host = _Host(group, judged, networks, cap, stats)
        try:
            results = play_batched_games([x.map for x in group], host, [x.seed for x in group],
                                         max_rounds=max_rounds, batch_size=batch_size, device=device,
                                         inbox=INBOX, sprint_cap=cap)
            restored = [_restore(r, k, x, host) for k, (r, x) in enumerate(zip(results, group, strict=True))]
        except CapacityError:  # a lane outgrew the simulator: the same games on the reference engine
            factories = {**judged, **{n: p.factory for n, p in networks.items()}}
            restored = [_reference(x, factories, max_rounds) for x in group]
            stats.replayed += len(group)
            host.moves = [([], []) for _ in group]  # the abandoned batch's move times are not these games'
        for k, (g, r) in enumerate(zip(idx, restored, strict=True)):
            out[g] = r
            stats.moves[g] = host.moves[k]
        stats.games += len(group)
        if progress is not None:
            progress(stats.games, len(games))


def series_games(a: str, b: str, maps: Sequence[LoongMap], games_per_map: int, seed: int,
                 map_index: Sequence[int] | None = None) -> list[BatchedGame]:
    """The games ``games.loong.match.play_series`` plays for ``a`` against ``b`` on each map (the league's map
    ``i`` on series seed ``seed * 7919 + i``: ops.loong.league.play_pairing), with the same seeds and sides."""
    from games.loong.match import pair_seed

    out = []
    for i, m in zip(map_index if map_index is not None else range(len(maps)), maps, strict=True):
        for g in range(games_per_map):
            names = (a, b) if g % 2 == 0 else (b, a)
            out.append(BatchedGame(m, pair_seed(seed * 7919 + i, g // 2), names))
    return out


def tally(a: str, b: str, games: Sequence[BatchedGame], results: Sequence[MatchResult],
          moves: Sequence[tuple[list[float], list[float]]] | None = None) -> MatchTally:
    """``a``'s tally against ``b`` over the games (``games.loong.match``'s: margin = a's queen length minus b's),
    with each move's seconds when ``moves`` (by game, by team) is given."""
    out = MatchTally(a, b)
    for k, (game, r) in enumerate(zip(games, results, strict=True)):
        side = game.names.index(a)
        outcome = 0 if r.winner is None else (1 if r.winner == side else -1)
        out.record(outcome, r.result.scores[side][0] - r.result.scores[1 - side][0])
        if moves is not None:
            out.latency_a.extend(moves[k][side])
            out.latency_b.extend(moves[k][1 - side])
    return out


def _reference(game: BatchedGame, factories: Mapping[str, BotFactory], max_rounds: int) -> MatchResult:
    r = play_game(game.map, factories[game.names[0]], factories[game.names[1]], game.seed, max_rounds)
    return dataclasses.replace(r, bot_names=game.names)
