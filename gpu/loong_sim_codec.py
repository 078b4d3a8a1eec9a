"""The batched simulator's integer codes and its host-side codecs (``gpu.loong_sim``).

Actions ``act [B, 2 + sprint_cap]`` int64, one row per lane: ``[kind, arg, d1 .. d_cap]`` (columns left off
are 0: a policy that never sprints may send ``[B, 2]``):
    MOVE   (0): arg = direction 0..3 (N, E, S, W)
    SPRINT (1): arg = k steps, directions in columns 2 .. 2 + k - 1 (k <= sprint_cap)
    SPLIT  (2): arg = k segments
    FORFEIT(3): give up the turn (the dragon dies); any other row that the rules reject also kills.
Sonar: ``sonar [B, 4]`` int64 (the uint64 value's bits) and ``sonar_mask [B, 4]`` bool (N, E, S, W).

Also the codes of a lane's result and its reason, and of the cause of an actor's death; ``Turn`` (what a batched
policy returns); ``encode_action`` / ``decode_action`` / ``encode_sonar`` / ``decode_sonar`` between the reference
engine's actions and sonar and batched rows; ``death_cause`` in the reference engine's words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch

from games.loong.actions import Action, Forfeit, Move, Split, Sprint, check_action
from games.loong.rng import MASK64

MOVE, SPRINT, SPLIT, FORFEIT = 0, 1, 2, 3
RUNNING, WON0, WON1, DRAW = 0, 1, 2, 3
NO_REASON, ELIMINATION, ROUND_LIMIT = 0, 1, 2
# Causes of an actor's death, as recorded per step (strings as the reference engine words them).
ALIVE, C_KELP, C_HEADON, C_SELF, C_OTHER, C_INVALID = range(6)
DEFAULT_SPRINT_CAP = 8


class Turn(NamedTuple):
    """What a batched policy returns: ``act [n, 2 + cap]``; ``sonar`` / ``sonar_mask`` ``[n, 4]`` or None."""

    act: torch.Tensor
    sonar: torch.Tensor | None = None
    sonar_mask: torch.Tensor | None = None


def encode_action(action: Action, cap: int = DEFAULT_SPRINT_CAP) -> list[int]:
    """A reference action as one row of the batched action tensor (length 2 + cap)."""
    row = [FORFEIT, 0] + [0] * cap
    if isinstance(action, Move):
        row[0], row[1] = MOVE, int(action.direction)
    elif isinstance(action, Sprint):
        dirs = list(action.directions)
        if len(dirs) > cap:
            raise ValueError(f"sprint of {len(dirs)} steps exceeds the batched cap {cap}")
        row[0], row[1] = SPRINT, len(dirs)
        row[2: 2 + len(dirs)] = [int(x) for x in dirs]
    elif isinstance(action, Split):
        row[0], row[1] = SPLIT, int(action.k)
    return row


def encode_sonar(sonar) -> tuple[list[int], list[bool]]:
    """Reference sonar (None or 4 values of None / uint64) as (values as int64 bits, mask)."""
    if sonar is None:
        return [0, 0, 0, 0], [False] * 4
    vals = [0 if v is None else (int(v) - (1 << 64) if int(v) >= 1 << 63 else int(v)) for v in sonar]
    return vals, [v is not None for v in sonar]


def decode_action(row: Sequence[int], length: int, living: int, cap: int = DEFAULT_SPRINT_CAP) -> Action:
    """The reference action a batched row stands for; rows the rules reject become ``Forfeit(reason)``
    with the reference engine's own reason (``check_action``)."""
    kind, arg = int(row[0]), int(row[1])
    if kind == MOVE:
        action: Action = Move(arg)
    elif kind == SPRINT:
        if not 0 <= arg <= cap:
            return Forfeit(f"SPRINT of {arg} steps: the batched encoding holds at most {cap}")
        action = Sprint(tuple(int(x) for x in row[2: 2 + arg]))
    elif kind == SPLIT:
        action = Split(arg)
    elif kind == FORFEIT:
        return Forfeit("forfeit")
    else:
        return Forfeit(f"unknown batched action kind {kind}")
    reason = check_action(action, length, living)
    return Forfeit(reason) if reason is not None else action


def decode_sonar(values: Sequence[int], mask: Sequence[bool]):
    """(int64 bits, mask) -> reference sonar: None when nothing is sent, else a 4-tuple."""
    if not any(mask):
        return None
    return tuple(int(v) & MASK64 if s else None for v, s in zip(values, mask))


def death_cause(code: int, other: int) -> str | None:
    """The reference engine's wording of an actor's death (C_INVALID is worded by its Forfeit)."""
    return {ALIVE: None, C_KELP: "crossed kelp", C_HEADON: f"head-on with dragon {other}",
            C_SELF: "ran into itself", C_OTHER: f"ran into dragon {other}"}.get(code)
