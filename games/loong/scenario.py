"""Tiny hand-made boards and positions for scenario tests (here and in other implementations' tests).

    m = board(10, 10, kelp=[(3, 3, E)], portals=[((0, 0, N), (5, 5, E))])
    g = position(m, [(0, 0, [(2, 2), (1, 2)], E), (1, 1, [(7, 7)], W)], pearls=[(3, 2)])

Boards built here carry no symmetry and need no starting dragons; positions place any dragons.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from games.loong.engine import Game
from games.loong.maps import LoongMap, PortalEdge, PortalPair, Spawn, edges_from_lists

DragonSpec = tuple[int, int, Sequence[tuple[int, int]], int]  # (id, team, cells head first, heading)


def board(
    width: int = 10,
    height: int = 10,
    kelp: Iterable[PortalEdge] = (),
    portals: Sequence[PortalPair] = (),
    spawns: Sequence[tuple[int, int, int, int]] = (),
) -> LoongMap:
    """A board without symmetry or starts: kelp sides (x, y, d), portal pairs, spawns (x, y, P, cd)."""
    edges = edges_from_lists(width, height, kelp, portals)
    return LoongMap(width, height, edges, portals, [Spawn(*s) for s in spawns], require_starts=False)


def position(
    game_map: LoongMap,
    dragons: Sequence[DragonSpec],
    pearls: Iterable[tuple[int, int]] = (),
    seed: int = 0,
    max_rounds: int = 500,
    countdowns: Sequence[int] | None = None,
) -> Game:
    """A game at round 0 with exactly these dragons and pearls (spawn tiles get no free pearl)."""
    return Game.from_position(game_map, dragons, pearls, countdowns, seed, max_rounds)


def cells(game: Game, dragon_id: int) -> list[tuple[int, int]]:
    """A dragon's body as (x, y), head first ([] when dead)."""
    return [game.map.xy(c) for c in game.dragons[dragon_id].body]


def pearl_cells(game: Game) -> set[tuple[int, int]]:
    return {game.map.xy(c) for c, p in enumerate(game.pearls) if p}


def run_turns(game: Game, turns: dict, default=None) -> None:
    """Play one round: ``turns[id] = action`` or ``(action, sonar)``; others play ``default``."""
    game.begin_round()
    while (i := game.next_actor()) is not None:
        if i not in turns and default is None:
            raise KeyError(f"no action for dragon {i}")
        t = turns.get(i, default)
        action, sonar = t if isinstance(t, tuple) else (t, None)
        game.turn(i, action, sonar)
    game.end_round()
