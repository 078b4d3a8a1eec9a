"""A dragon's turn: one action (Move, Sprint, Split) and up to four sonar values.

``Forfeit(reason)`` is the judge's stand-in for a turn that produced no usable action (a bot that
raised, returned garbage, ran out of points): applying it kills the dragon with that reason.

Sonar is ``None`` or a 4-tuple ``(north, east, south, west)`` whose entries are ``None`` (send
nothing that way) or an unsigned 64-bit integer.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from games.loong.rng import MASK64

MAX_TEAM = 64  # living dragons per team


@dataclass(frozen=True)
class Move:
    """One step through side ``direction`` (0=N, 1=E, 2=S, 3=W) of the head's cell."""

    direction: int


@dataclass(frozen=True)
class Sprint:
    """Steps ``directions[0..k-1]`` (k >= 2), each an absolute side of the head's cell at that step."""

    directions: tuple[int, ...]


@dataclass(frozen=True)
class Split:
    """Hand the rear ``k`` segments to a new dragon (1 <= k <= L - 1)."""

    k: int


@dataclass(frozen=True)
class Forfeit:
    """No usable action this turn: the dragon dies with ``reason``."""

    reason: str


Action = Move | Sprint | Split | Forfeit
Sonar = tuple[int | None, int | None, int | None, int | None]


def _is_int(v: object) -> bool:
    """Python or numpy integers; not booleans (True is no direction)."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)  # numpy bools are not Integral


def free_steps(length: int) -> int:
    """F = ceil(L / 4): sprint steps that cost no tail segment."""
    return math.ceil(length / 4)


def check_sonar(sonar: object) -> str | None:
    """Why ``sonar`` is malformed, or None when it is fine."""
    if sonar is None:
        return None
    if not isinstance(sonar, tuple | list) or len(sonar) != 4:
        return f"sonar must be None or 4 values (N, E, S, W), got {sonar!r:.80}"
    for d, v in enumerate(sonar):
        if v is not None and not (_is_int(v) and 0 <= v <= MASK64):
            return f"sonar[{'NESW'[d]}] must be None or an integer in [0, 2^64), got {v!r:.40}"
    return None


def check_action(action: object, length: int, team_living: int) -> str | None:
    """Why ``action`` is malformed or invalid for a dragon of ``length`` on a team of ``team_living``."""
    if isinstance(action, Move):
        d = action.direction
        return None if _is_int(d) and 0 <= d < 4 else f"MOVE direction must be 0..3, got {d!r:.40}"
    if isinstance(action, Sprint):
        return _check_sprint(action.directions, length)
    if isinstance(action, Split):
        k = action.k
        if not (_is_int(k) and 1 <= k <= length - 1):
            return f"SPLIT k must be in [1, L-1] = [1, {length - 1}], got {k!r:.40}"
        if team_living >= MAX_TEAM:
            return f"SPLIT with {team_living} living dragons on the team (limit {MAX_TEAM})"
        return None
    if isinstance(action, Forfeit):
        return str(action.reason)
    return f"not an action: {action!r:.80}"


def _check_sprint(dirs: object, length: int) -> str | None:
    if not isinstance(dirs, tuple | list) or not all(_is_int(d) and 0 <= d < 4 for d in dirs):
        return f"SPRINT directions must be a sequence of 0..3, got {dirs!r:.80}"
    limit = free_steps(length) + length - 1
    if not 2 <= len(dirs) <= limit:
        return f"SPRINT of {len(dirs)} steps: need 2 <= k <= ceil(L/4) + L - 1 = {limit} (L = {length})"
    return None


def canonical(action: Action, sonar: object) -> tuple[Action, Sonar | None]:
    """A checked turn in one spelling: plain ints, tuples, and None for "no sonar"."""
    if isinstance(action, Move):
        action = Move(int(action.direction))
    elif isinstance(action, Sprint):
        action = Sprint(tuple(int(d) for d in action.directions))
    elif isinstance(action, Split):
        action = Split(int(action.k))
    if sonar is None or all(v is None for v in sonar):
        return action, None
    return action, tuple(None if v is None else int(v) for v in sonar)


def action_record(action: Action) -> tuple[str, tuple[int, ...]]:
    """(kind, args) for replays: ('move', (d,)), ('sprint', (d1..dk)), ('split', (k,)), ('forfeit', ())."""
    if isinstance(action, Move):
        return "move", (action.direction,)
    if isinstance(action, Sprint):
        return "sprint", tuple(action.directions)
    if isinstance(action, Split):
        return "split", (action.k,)
    return "forfeit", ()


def action_from_record(kind: str, args: tuple[int, ...], reason: str | None = None) -> Action:
    """Inverse of action_record; ``reason`` restores a Forfeit's cause. Raises ValueError on unknown kinds."""
    if kind == "move" and len(args) == 1:
        return Move(int(args[0]))
    if kind == "sprint":
        return Sprint(tuple(int(a) for a in args))
    if kind == "split" and len(args) == 1:
        return Split(int(args[0]))
    if kind == "forfeit" and not args:
        return Forfeit(reason or "forfeit")
    raise ValueError(f"unknown action record {kind!r} {list(args)}")
