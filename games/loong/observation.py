"""What one dragon sees at the start of its turn, and its flat little-endian byte encoding.

The window is the 7 x 7 square centred on the head, torus-wrapped and never through portals; its
arrays are indexed ``[row, col]`` with ``row = dy + 3``, ``col = dx + 3`` (dy grows southwards).
Byte layout (version 1): docs/loong-observation.md.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, fields

import numpy as np

from games.loong.engine import Game
from games.loong.maps import NO_HEADING

OBS_MAGIC = b"LGOB"
OBS_VERSION = 1
WINDOW = 7
HALF = WINDOW // 2
POINTS_PER_TURN = 100_000_000
NONE8 = 255
NONE32 = 0xFFFFFFFF
HEADER = struct.Struct("<4sHHIIIBBBBHBBHH5IIQ")  # 64 bytes, see docs/loong-observation.md
CELL_DTYPE = np.dtype([("edges", "u1", (4,)), ("partner", "u1", (4, 3)), ("period", "u1"),
                       ("countdown", "u1"), ("pearl", "u1"), ("flags", "u1"), ("dragon", "<u4")])
WINDOW_OFFSET = HEADER.size
BODY_OFFSET = WINDOW_OFFSET + WINDOW * WINDOW * CELL_DTYPE.itemsize  # 1240
INBOX_ENTRY = 16
FLAG_SEGMENT, FLAG_HEAD, FLAG_TEAM1 = 1, 2, 4


class ObservationError(ValueError):
    """Bytes that are not a valid encoded observation."""


@dataclass(frozen=True, eq=False)
class Observation:
    """One dragon's view (rules: "What a dragon observes each turn"). Window arrays are [7, 7, ...].

    ``edges``, ``partners`` and ``spawn_period`` are read-only views shared by all observations of a
    map; copy them before writing."""

    round: int
    width: int
    height: int
    dragon_id: int
    team: int
    is_queen: bool
    team_living: int
    body: tuple[tuple[int, int], ...]  # absolute (x, y), head first
    heading: int  # 0..3, or NO_HEADING (-1) for a child that has not stepped
    edges: np.ndarray  # [7, 7, 4] uint8: OPEN / KELP / PORTAL per side N, E, S, W
    partners: np.ndarray  # [7, 7, 4, 3] uint8: a portal side's partner (x, y, side); 255 otherwise
    spawn_period: np.ndarray  # [7, 7] uint8, 0 = no spawn tile
    spawn_countdown: np.ndarray  # [7, 7] uint8, 0 = no spawn tile
    pearls: np.ndarray  # [7, 7] uint8 0/1
    dragon_ids: np.ndarray  # [7, 7] int32, -1 = no segment
    dragon_teams: np.ndarray  # [7, 7] int8, -1 = no segment
    dragon_heads: np.ndarray  # [7, 7] bool: the segment is that dragon's head
    inbox: tuple[tuple[int, int], ...]  # (value, direction the ray travelled on arrival), arrival order
    echoes: tuple[int, int, int, int, int]  # kelp, ally body, ally head, enemy body, enemy head
    points_left: int

    @property
    def head(self) -> tuple[int, int]:
        return self.body[0]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Observation):
            return NotImplemented
        return all(_same(getattr(self, f.name), getattr(other, f.name)) for f in fields(self))

    __hash__ = None  # mutable numpy fields


def _same(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and bool(np.array_equal(a, b))
    return a == b


def observe(game: Game, dragon_id: int, points_left: int = POINTS_PER_TURN) -> Observation:
    """Build dragon ``dragon_id``'s observation from the full state (it must be alive).

    The map-only parts of every window (edges, partners, spawn periods) are precomputed once per map
    and handed out as read-only views; the rest is gathered fresh."""
    d = game.dragons[dragon_id]
    if not d.alive:
        raise ValueError(f"dragon {dragon_id} is dead")
    m = game.map
    t = _window_tables(m)
    head = d.body[0]
    flat = t["cells"][head]
    cells = flat.tolist()
    occ = game.occ
    ids = [occ[c] for c in cells]
    teams = [-1] * (WINDOW * WINDOW)
    heads = [False] * (WINDOW * WINDOW)
    for j, i in enumerate(ids):
        if i >= 0:
            other = game.dragons[i]
            teams[j] = other.team
            heads[j] = other.body[0] == cells[j]
    shape = (WINDOW, WINDOW)
    countdowns = np.array(game.countdown + [0], np.uint8)  # spawn index -1 reads the trailing 0
    return Observation(
        round=game.round, width=m.width, height=m.height, dragon_id=d.id, team=d.team,
        is_queen=d.is_queen, team_living=game.living[d.team], body=tuple(m.xy(c) for c in d.body),
        heading=d.heading, edges=t["edges"][head], partners=t["partners"][head],
        spawn_period=t["periods"][head], spawn_countdown=countdowns[t["spawn"][head]],
        pearls=np.frombuffer(game.pearls, np.uint8)[flat].reshape(shape),
        dragon_ids=np.array(ids, np.int32).reshape(shape), dragon_teams=np.array(teams, np.int8).reshape(shape),
        dragon_heads=np.array(heads, bool).reshape(shape),
        inbox=tuple(d.inbox), echoes=tuple(d.echoes), points_left=points_left,
    )


def _window_tables(m) -> dict[str, np.ndarray]:
    """Per head cell: window cells [N, 49], edges [N, 7, 7, 4], partners [N, 7, 7, 4, 3], spawn
    periods [N, 7, 7] and spawn indices [N, 7, 7] (-1 none). Built once per map, read-only (shared)."""
    tables = m.__dict__.get("_obs_tables")
    if tables is None:
        cells = m.window_cells().reshape(m.n_cells, WINDOW * WINDOW)
        grid = (m.n_cells, WINDOW, WINDOW)
        tables = {
            "cells": cells,
            "edges": m.step_kind[cells].reshape(*grid, 4),
            "partners": m.partner_xys()[cells].reshape(*grid, 4, 3),
            "periods": m.spawn_periods()[cells].reshape(grid),
            "spawn": m.spawn_at[cells].reshape(grid),
        }
        for a in tables.values():
            a.setflags(write=False)
        m.__dict__["_obs_tables"] = tables
    return tables


def encoded_size(body_length: int, inbox_count: int) -> int:
    """Bytes of an encoded observation: fixed 1240 + body padded to 8 + 16 per inbox entry."""
    return BODY_OFFSET + _pad8(2 * body_length) + INBOX_ENTRY * inbox_count


def _pad8(n: int) -> int:
    return (n + 7) // 8 * 8


def encode(obs: Observation) -> bytes:
    """The observation as version-1 bytes (docs/loong-observation.md)."""
    size = encoded_size(len(obs.body), len(obs.inbox))
    heading = NONE8 if obs.heading == NO_HEADING else obs.heading
    header = HEADER.pack(OBS_MAGIC, OBS_VERSION, HEADER.size, size, obs.round, obs.dragon_id, obs.width,
                         obs.height, obs.team, int(obs.is_queen), obs.team_living, heading, WINDOW,
                         len(obs.body), len(obs.inbox), *obs.echoes, 0, obs.points_left)
    cells = np.zeros(WINDOW * WINDOW, CELL_DTYPE)
    cells["edges"] = obs.edges.reshape(-1, 4)
    cells["partner"] = obs.partners.reshape(-1, 4, 3)
    cells["period"] = obs.spawn_period.ravel()
    cells["countdown"] = obs.spawn_countdown.ravel()
    cells["pearl"] = obs.pearls.ravel()
    seg = obs.dragon_ids.ravel() >= 0
    cells["flags"] = (seg * FLAG_SEGMENT + obs.dragon_heads.ravel() * FLAG_HEAD
                      + (obs.dragon_teams.ravel() == 1) * FLAG_TEAM1)
    cells["dragon"] = np.where(seg, obs.dragon_ids.ravel(), NONE32)
    body = bytes(v for xy in obs.body for v in xy).ljust(_pad8(2 * len(obs.body)), b"\0")
    inbox = b"".join(struct.pack("<QB7x", v, a) for v, a in obs.inbox)
    return header + cells.tobytes() + body + inbox


def decode(data: bytes) -> Observation:
    """Inverse of encode; raises ObservationError on a wrong magic, version or size."""
    if len(data) < BODY_OFFSET:
        raise ObservationError(f"observation: {len(data)} bytes, need at least {BODY_OFFSET}")
    h = HEADER.unpack_from(data)
    magic, version, header_size, size, rnd, dragon_id, w, hgt, team, queen, living, heading = h[:12]
    window, body_len, inbox_len, echoes, points = h[12], h[13], h[14], h[15:20], h[21]
    if magic != OBS_MAGIC or version != OBS_VERSION or header_size != HEADER.size or window != WINDOW:
        raise ObservationError(f"observation: bad magic/version/header ({magic!r}, v{version})")
    if size != len(data) or size != encoded_size(body_len, inbox_len):
        raise ObservationError(f"observation: size field {size} but {len(data)} bytes")
    cells = np.frombuffer(data, CELL_DTYPE, WINDOW * WINDOW, WINDOW_OFFSET)
    shape = (WINDOW, WINDOW)
    seg = (cells["flags"] & FLAG_SEGMENT) > 0
    raw = data[BODY_OFFSET:BODY_OFFSET + 2 * body_len]
    start = BODY_OFFSET + _pad8(2 * body_len)
    inbox = tuple(struct.unpack_from("<QB", data, start + INBOX_ENTRY * i) for i in range(inbox_len))
    return Observation(
        round=rnd, width=w, height=hgt, dragon_id=dragon_id, team=team, is_queen=bool(queen),
        team_living=living, body=tuple((raw[i], raw[i + 1]) for i in range(0, len(raw), 2)),
        heading=NO_HEADING if heading == NONE8 else heading,
        edges=cells["edges"].reshape(WINDOW, WINDOW, 4).copy(),
        partners=cells["partner"].reshape(WINDOW, WINDOW, 4, 3).copy(),
        spawn_period=cells["period"].reshape(shape).copy(),
        spawn_countdown=cells["countdown"].reshape(shape).copy(),
        pearls=cells["pearl"].reshape(shape).copy(),
        dragon_ids=np.where(seg, cells["dragon"], -1).astype(np.int32).reshape(shape),
        dragon_teams=np.where(seg, (cells["flags"] & FLAG_TEAM1) > 0, -1).astype(np.int8).reshape(shape),
        dragon_heads=((cells["flags"] & FLAG_HEAD) > 0).reshape(shape),
        inbox=inbox, echoes=tuple(echoes), points_left=points,
    )
