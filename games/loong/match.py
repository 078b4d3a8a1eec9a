"""Series of Loong games between two bots: the one match runner behind the CLI and the league.

Games come in pairs on the same map and seed with sides swapped, so neither bot gains from a side.
Wasm builds take part through their judge factories exactly like Python bots.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from games.loong.bots import BotFactory, MatchResult, play_game
from games.loong.foil import registry
from games.loong.maps import LoongMap
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
    """A series of games between bots ``a`` and ``b``, a's view: the tally, reasons, replay paths."""

    tally: MatchTally
    map: LoongMap
    seed: int
    max_rounds: int
    reasons: dict[str, int] = field(default_factory=dict)
    rounds: list[int] = field(default_factory=list)
    turns: list[tuple[int, int]] = field(default_factory=list)  # per game: (a's turns, b's turns)
    replays: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        s = self.tally.summary()
        a_turns = sum(t[0] for t in self.turns)
        b_turns = sum(t[1] for t in self.turns)
        s.update({
            "map": self.map.name, "width": self.map.width, "height": self.map.height,
            "symmetry": self.map.symmetry, "seed": self.seed, "max_rounds": self.max_rounds,
            "reasons": dict(sorted(self.reasons.items())),
            "mean_rounds": sum(self.rounds) / len(self.rounds) if self.rounds else 0.0,
            "ms_per_turn_a": 1000 * sum(self.tally.latency_a) / max(a_turns, 1),
            "ms_per_turn_b": 1000 * sum(self.tally.latency_b) / max(b_turns, 1),
            "replays": self.replays,
        })
        return s


def play_series(
    a: str,
    b: str,
    game_map: LoongMap,
    *,
    games: int,
    seed: int,
    max_rounds: int = 500,
    replay_dir: str | Path | None = None,
    progress: Callable[[int], None] | None = None,
    bots: Mapping[str, BotFactory] | None = None,
) -> SeriesResult:
    """Bot ``a`` against bot ``b`` on one map, ``games`` games in pairs that swap sides on the same
    seed (even games: a is team 0). The tally's margin is a's queen length minus b's at the end, its
    latencies each game's think seconds for a and b (see ``turns`` for per-turn rates). ``bots`` maps
    names to factories (Python bots and registered wasm builds alike); default the built-in bots."""
    fa, fb = bot_factory(a, bots), bot_factory(b, bots)
    if games < 1:
        raise UnknownBot(f"--games must be at least 1, got {games}")
    if max_rounds < 1:
        raise UnknownBot(f"--max-rounds must be at least 1, got {max_rounds}")
    out = SeriesResult(MatchTally(a, b), game_map, seed, max_rounds)
    if replay_dir is not None:
        Path(replay_dir).mkdir(parents=True, exist_ok=True)
    for g in range(games):
        side = g % 2  # the team bot a plays
        match_seed = pair_seed(seed, g // 2)
        r = play_game(game_map, fa, fb, match_seed, max_rounds) if side == 0 else \
            play_game(game_map, fb, fa, match_seed, max_rounds)
        _record(out, r, side)
        if replay_dir is not None:
            from games.loong.replay import save_replay

            json_path, _ = save_replay(r, Path(replay_dir) / f"game{g:04d}_{a}_vs_{b}")
            out.replays.append(str(json_path))
        if progress is not None:
            progress(g + 1)
    return out


def _record(out: SeriesResult, r: MatchResult, side: int) -> None:
    winner = r.winner
    outcome = 0 if winner is None else (1 if winner == side else -1)
    scores = r.result.scores
    out.tally.record(outcome, scores[side][0] - scores[1 - side][0])
    out.tally.latency_a.append(r.think_seconds[side])
    out.tally.latency_b.append(r.think_seconds[1 - side])
    team_of = _teams(r)
    turns = [0, 0]
    for t in r.turns:
        turns[team_of.get(t.dragon_id, t.dragon_id % 2)] += 1
    out.turns.append((turns[side], turns[1 - side]))
    key = r.reason if winner is not None else f"draw ({r.reason})"
    out.reasons[key] = out.reasons.get(key, 0) + 1
    out.rounds.append(r.rounds)


def _teams(r: MatchResult) -> dict[int, int]:
    """Each dragon's team, replayed from the turns (children inherit their parent's team)."""
    from games.loong.actions import Split

    teams = {s.id: s.team for s in r.map.dragons}
    next_id = max(teams) + 1
    for t in r.turns:
        if isinstance(t.action, Split) and t.death is None:
            teams[next_id] = teams.get(t.dragon_id, t.dragon_id % 2)
            next_id += 1
    return teams
