"""A dragon's reference ``Observation`` (games/loong/observation.py) read straight from a LoongSim lane.

``observation(sim, lane)`` equals ``observe(game, actor)`` on the reference game in the same state (and so
do their ``encode()`` bytes), without any reference ``Game``: what registered wasm bots get when their games
live on the simulator. ``observations(sim, lanes)`` does several lanes with one device-to-host copy (the
rows it needs are gathered on the device, cast to int64 and concatenated first). The map-only window parts
(edges, partners, spawn periods) are the shared read-only views of ``_window_tables``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from games.loong.engine import ECHO_COUNT
from games.loong.observation import POINTS_PER_TURN, WINDOW, Observation, _window_tables
from games.loong.rng import MASK64
from gpu.loong_sim import PEARL, RUNNING, LoongSim
from gpu.loong_tables import ECHO, FIELDS, HEAD_CELL, HEADING, INBOX_COUNT, LENGTH, RING_HEAD, TEAM

_SHAPE = (WINDOW, WINDOW)


def observation(sim: LoongSim, lane: int, dragon_id: int | None = None,
                points_left: int = POINTS_PER_TURN) -> Observation:
    """The observation of lane ``lane``'s current actor, or of its living dragon ``dragon_id``.

    Raises ValueError naming the lane when its game is over or the dragon is not alive."""
    return _observe(sim, [lane], None if dragon_id is None else [dragon_id], points_left)[0]


def observations(sim: LoongSim, lanes: Sequence[int], *, points_left: int = POINTS_PER_TURN) -> list[Observation]:
    """The observations of the current actors of ``lanes`` (in that order), one device-to-host copy."""
    return _observe(sim, list(lanes), None, points_left)


def _observe(sim: LoongSim, lanes: list[int], ids: list[int] | None, points_left: int) -> list[Observation]:
    if not lanes:
        return []
    for b in lanes:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or not 0 <= b < sim.B:
            raise ValueError(f"lane {b!r}: not a lane of this simulator (0..{sim.B - 1})")
    host = _pull(sim, lanes, ids)
    maps = sim.bank.maps
    return [_build(sim, maps[int(host["lane_map"][j])], b, j, host, ids, points_left) for j, b in enumerate(lanes)]


def _pull(sim: LoongSim, lanes: list[int], ids: list[int] | None) -> dict[str, np.ndarray]:
    """Every tensor the observations need, for ``lanes`` only, gathered on the device and copied at once."""
    dev, B, S, hi = sim.device, sim.B, sim.S, sim.slot_hi  # living dragons sit in slots below slot_hi
    lane_t = torch.as_tensor(lanes, dtype=torch.int64, device=dev)
    sid = sim.sid_t[:hi].index_select(1, lane_t)  # [hi, n]
    if ids is None:
        slot = sim.actor.index_select(0, lane_t)  # S in a finished lane
    else:
        hit = sid == torch.as_tensor(ids, dtype=torch.int64, device=dev)[None]
        slot = torch.where(hit.any(0), hit.long().argmax(0), S)
    fs = slot * B + lane_t  # flat slot index; slot S is the lane's trash slot (id -1)
    parts = {
        "slot": slot,
        "result": sim.result.index_select(0, lane_t),
        "round": sim.round.index_select(0, lane_t),
        "lane_map": sim.lane_map.index_select(0, lane_t),
        "living": sim.living.index_select(0, lane_t),  # [n, 2]
        "row": sim.tab.view(-1, FIELDS).index_select(0, fs),  # [n, F] the observed dragon's slot row
        "aid": sim.sid_t.view(-1).index_select(0, fs),
        "ring": sim.ring_t.view(-1, sim.R).index_select(0, fs),  # [n, R]
        "inbox_v": sim.inbox_vt.view(-1, sim.IB).index_select(0, fs),  # [n, IB]
        "inbox_d": sim.inbox_dt.view(-1, sim.IB).index_select(0, fs),
        "occ": sim.occ.index_select(0, lane_t)[:, : sim.N],  # [n, N]
        "sid": sid.T,  # [n, hi]
        "team": sim.tab[:hi, :, TEAM].index_select(1, lane_t).T,  # [n, hi]
        "head_cell": sim.tab[:hi, :, HEAD_CELL].index_select(1, lane_t).T,
        "cd": (sim.fire_t.index_select(1, lane_t) - sim.round.index_select(0, lane_t)).T,  # [n, SP]
    }
    flat = torch.cat([p.to(torch.int64).reshape(-1) for p in parts.values()]).cpu().numpy()
    out, at = {}, 0
    for name, p in parts.items():
        out[name] = flat[at: at + p.numel()].reshape(p.shape)
        at += p.numel()
    return out


def _build(sim: LoongSim, m, b: int, j: int, h: dict[str, np.ndarray], ids: list[int] | None,
           points_left: int) -> Observation:
    """Lane ``b``'s observation from its host rows ``h[...][j]``."""
    if int(h["result"][j]) != RUNNING or (ids is None and int(h["slot"][j]) >= sim.S):
        raise ValueError(f"lane {b}: the game is over")
    if int(h["slot"][j]) >= sim.S:
        raise ValueError(f"lane {b}: dragon {ids[j]} is not alive")
    row = h["row"][j]
    length, hp, head = int(row[LENGTH]), int(row[RING_HEAD]), int(row[HEAD_CELL])
    cells_body = h["ring"][j][(hp - np.arange(length)) % sim.R]
    xs, ys = (cells_body % m.width).tolist(), (cells_body // m.width).tolist()
    t = _window_tables(m)
    cells = t["cells"][head]  # [49]
    o = h["occ"][j][cells]
    seg = o >= 0
    slots = np.where(seg, o, 0)
    dragon_ids = np.where(seg, h["sid"][j][slots], -1)
    teams = np.where(seg, h["team"][j][slots], -1)
    heads = seg & (h["head_cell"][j][slots] == cells)
    countdowns = np.array(h["cd"][j][: len(m.spawns)].tolist() + [0], np.uint8)  # spawn index -1 reads the 0
    n = int(row[INBOX_COUNT])
    inbox = tuple((v & MASK64, d) for v, d in zip(h["inbox_v"][j][:n].tolist(), h["inbox_d"][j][:n].tolist()))
    team = int(row[TEAM])
    dragon_id = int(h["aid"][j])
    return Observation(
        round=int(h["round"][j]), width=m.width, height=m.height, dragon_id=dragon_id, team=team,
        is_queen=dragon_id < 2, team_living=int(h["living"][j][team]), body=tuple(zip(xs, ys)),
        heading=int(row[HEADING]), edges=t["edges"][head], partners=t["partners"][head],
        spawn_period=t["periods"][head], spawn_countdown=countdowns[t["spawn"][head]],
        pearls=(o == PEARL).astype(np.uint8).reshape(_SHAPE),
        dragon_ids=dragon_ids.astype(np.int32).reshape(_SHAPE), dragon_teams=teams.astype(np.int8).reshape(_SHAPE),
        dragon_heads=heads.reshape(_SHAPE), inbox=inbox,
        echoes=tuple(int(e) for e in row[ECHO: ECHO + ECHO_COUNT]), points_left=points_left,
    )
