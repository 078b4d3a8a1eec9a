"""Per-map lookup tables for the batched Loong simulator, stacked over the distinct maps of a batch.

Every table is built on the host from the reference ``LoongMap`` (so wrap and portal gluing are the
reference engine's own) and moved to the simulator's device once. Lanes point at a map by index
``lane_map[b]``; flat keys are ``(map * N + cell) * 4 + side`` for side tables and ``map * N + cell``
for cell tables, with N = W * H.

Ray tables hold each ray's course on an empty board (``games.loong.engine.ray_path``): the cells it
enters, the heading on entry and whether it then stops at kelp, padded with the trash cell N (which
never holds a segment). Memory per 64 x 64 map: about 9 MB (rays) + 3 MB (templates).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from games.loong import rng
from games.loong.actions import MAX_TEAM, free_steps
from games.loong.engine import ECHO_COUNT, ray_path
from games.loong.maps import KELP, MAX_PERIOD, MAX_SIDE, PORTAL, LoongMap
from games.loong.observation import HALF, WINDOW

SLOTS = 2 * MAX_TEAM  # living dragons per lane can never exceed this (MAX_TEAM per team)
MAX_LENGTH = MAX_SIDE * MAX_SIDE  # no dragon outgrows the largest board

# Static per-cell features of the map, in the order of the first local/full plane channels.
STATIC_CHANNELS = 11  # kelp N E S W, portal N E S W, spawn tile, spawn period / MAX_PERIOD, (countdown later)
LOCAL_CHANNELS = 21


# The slot table ``LoongSim.tab [B, SLOTS + 1, FIELDS]`` int64: one row per dragon slot, so one gather
# fetches a dragon. (Dragon ids live apart, slot-major in ``LoongSim.sid_t [SLOTS + 1, B]``, because the acting
# order scans them every step.) Its fields:
TEAM = 0  # the dragon's team, 0 or 1
RING_HEAD = 1  # position of the head in the dragon's ring of body cells: segment i sits at (RING_HEAD - i) mod R
LENGTH = 2  # segments
HEADING = 3  # its heading, the arrival direction of its last step 0..3 (N, E, S, W); NO_HEADING (-1) none
HEAD_CELL = 4  # the cell of segment 0
TAIL_CELL = 5  # the cell of its last segment
TURNS = 6  # turns taken (how far its random stream has advanced)
INBOX_COUNT = 7  # sonar values waiting in its inbox
DRAGON_SEED = 8  # the seed of its SplitMix64 stream (rules decision 17)
ECHO = 9  # ECHO .. ECHO + 4: its five echo counts (kelp, allied body, allied head, enemy body, enemy head)
FIELDS = ECHO + ECHO_COUNT

GOLDEN = rng.GOLDEN - (1 << 64)  # splitmix64's increment as int64 bits
_FREE_STEPS: dict[torch.device, torch.Tensor] = {}


def free_steps_of(length: torch.Tensor) -> torch.Tensor:
    """``games.loong.actions.free_steps`` of every length in ``length`` (any shape): a lookup table built from it
    once per device. Lengths outside 0 .. MAX_LENGTH (rows that hold no dragon, such as a lane's trash slot) are
    clamped into it."""
    table = _FREE_STEPS.get(length.device)
    if table is None:
        table = torch.tensor([free_steps(n) for n in range(MAX_LENGTH + 1)], dtype=torch.int64, device=length.device)
        _FREE_STEPS[length.device] = table
    return table.index_select(0, length.reshape(-1).clamp(0, MAX_LENGTH)).view(length.shape)


def mix64(z: torch.Tensor) -> torch.Tensor:
    """splitmix64's finaliser on int64 bit patterns (wrapping multiplication, logical shifts)."""
    z = z ^ ((z >> 30) & ((1 << 34) - 1))
    z = z * (rng.MIX1 - (1 << 64))
    z = z ^ ((z >> 27) & ((1 << 37) - 1))
    z = z * (rng.MIX2 - (1 << 64))
    return z ^ ((z >> 31) & ((1 << 33) - 1))


def map_key(m: LoongMap) -> str:
    return m.dumps()


class MapBank:
    """Distinct maps of one size, with stacked tables on ``device``; ``index(map)`` adds maps on demand."""

    def __init__(self, width: int, height: int, device: torch.device, ring: int) -> None:
        self.width, self.height, self.n = width, height, width * height
        self.device, self.ring = device, ring
        self.maps: list[LoongMap] = []
        self._keys: dict[str, int] = {}
        self._by_id: dict[int, tuple[LoongMap, int]] = {}  # maps are not changed once built
        self._host: dict[str, list[np.ndarray]] = {}
        self.max_spawns = 0
        self.t: dict[str, torch.Tensor] = {}

    def index(self, m: LoongMap) -> int:
        if (m.width, m.height) != (self.width, self.height):
            raise ValueError(f"map {m!r} is {m.width}x{m.height}; this batch is {self.width}x{self.height}")
        seen = self._by_id.get(id(m))
        if seen is not None and seen[0] is m:  # the same object again: skip serialising it (7 ms on 32 x 32)
            return seen[1]
        key = map_key(m)
        if key not in self._keys:
            self._keys[key] = len(self.maps)
            self.maps.append(m)
            tables = _host_tables(m)
            tables.update({f"tmpl_{k}": v[None] for k, v in start_template(m, self.ring).items()})
            for name, arr in tables.items():
                self._host.setdefault(name, []).append(arr)
            self.max_spawns = max(self.max_spawns, len(m.spawns))
            self._stack()
        self._by_id[id(m)] = (m, self._keys[key])
        return self._keys[key]

    def indices(self, maps: Sequence[LoongMap]) -> list[int]:
        return [self.index(m) for m in maps]

    def _stack(self) -> None:
        dev = self.device
        t = {name: torch.from_numpy(np.concatenate(arrs)).to(dev) for name, arrs in self._host.items()
             if name not in ("spawn_cell", "spawn_period", "spawn_cd")}
        sp = max(self.max_spawns, 1)
        for name, pad in (("spawn_cell", self.n), ("spawn_period", 0), ("spawn_cd", 1 << 20)):
            rows = [np.pad(a, (0, sp - len(a)), constant_values=pad) for a in self._host[name]]
            t[name] = torch.from_numpy(np.stack(rows)).to(dev)
        self.t = t


def _host_tables(m: LoongMap) -> dict[str, np.ndarray]:
    n, lr = m.n_cells, max(m.width, m.height)
    step_cell = m.step_cell.reshape(-1).astype(np.int64)
    ray_cells = np.full((4 * n, lr), n, np.int64)
    ray_heads = np.zeros((4 * n, lr), np.int64)
    ray_kelp = np.zeros(4 * n, bool)
    for key in range(4 * n):
        cells, heads, kelp = ray_path(m, key // 4, key % 4)
        ray_cells[key, : len(cells)] = cells
        ray_heads[key, : len(heads)] = heads
        ray_kelp[key] = kelp
    window = m.window_cells().reshape(n, WINDOW * WINDOW).astype(np.int64)
    return {
        "step_packed": pack_step(step_cell, m.step_heading.reshape(-1), m.step_kind.reshape(-1), _visible(m),
                                 _step_flags(m)),
        "portal_off": _portal_offsets(m),
        "ray_cells": ray_cells,
        "ray_heads": ray_heads,
        "ray_kelp": ray_kelp,
        "window": window,
        "static": _static_features(m),
        "static_win": _static_windows(m, window),
        "spawn_of_cell": m.spawn_at.astype(np.int64),
        "spawn_cell": np.array([m.cell(s.x, s.y) for s in m.spawns], np.int64),
        "spawn_period": np.array([s.period for s in m.spawns], np.int64),
        "spawn_cd": np.array([s.countdown for s in m.spawns], np.int64),
    }


# One int64 per (map, cell, side): target cell | arrival heading << 16 | kind << 18 | visible << 20
# | flag << 22 (flag: what the mover can tell from its window, STEP_UNSEEN / STEP_KELP / STEP_SEEN).
STEP_HEADING_SHIFT, STEP_KIND_SHIFT, STEP_VISIBLE_SHIFT, STEP_FLAG_SHIFT = 16, 18, 20, 22


def pack_step(cell: np.ndarray, heading: np.ndarray, kind: np.ndarray, visible: np.ndarray,
              flag: np.ndarray) -> np.ndarray:
    """The crossing tables packed into one word per crossing (one gather per move instead of four)."""
    if cell.max(initial=0) >= 1 << 16:
        raise ValueError("maps of 65,536 cells or more do not fit the packed step table")
    return (cell.astype(np.int64) | (heading.astype(np.int64) & 3) << STEP_HEADING_SHIFT
            | (kind.astype(np.int64) & 3) << STEP_KIND_SHIFT | visible.astype(np.int64) << STEP_VISIBLE_SHIFT
            | flag.astype(np.int64) << STEP_FLAG_SHIFT)


STEP_UNSEEN, STEP_KELP, STEP_SEEN = 0, 1, 2  # step_flag: what a mover can tell of a crossing from its window


def _step_flags(m: LoongMap) -> np.ndarray:
    """``[N * 4]`` int8 per crossing: kelp (fatal), seen (the target is in the window) or unseen."""
    kind = m.step_kind.reshape(-1)
    return np.where(kind == KELP, STEP_KELP, np.where(_visible(m), STEP_SEEN, STEP_UNSEEN)).astype(np.int8)


def unpack_step(word):
    """(target cell, arrival heading, kind, visible) of packed crossings (torch tensors or Triton values)."""
    return (word & 0xFFFF, (word >> STEP_HEADING_SHIFT) & 3, (word >> STEP_KIND_SHIFT) & 3,
            (word >> STEP_VISIBLE_SHIFT) & 1)


def _static_features(m: LoongMap) -> np.ndarray:
    """``[N, STATIC_CHANNELS]`` float32: kelp sides, portal sides, spawn tile, spawn period / MAX_PERIOD, 0."""
    kind = m.step_kind.reshape(m.n_cells, 4)
    out = np.zeros((m.n_cells, STATIC_CHANNELS), np.float32)
    out[:, 0:4] = kind == KELP
    out[:, 4:8] = kind == PORTAL
    periods = m.spawn_periods().astype(np.float32)
    out[:, 8] = periods > 0
    out[:, 9] = periods / float(MAX_PERIOD)
    return out


def _static_windows(m: LoongMap, window: np.ndarray) -> np.ndarray:
    """``[N, STATIC_CHANNELS - 1, 49]`` float32: the constant local planes (channels 0..9, docs/loong-planes.md)
    of a window centred on each cell; the observation adds the countdown and the occupants."""
    return np.ascontiguousarray(_static_features(m)[window].transpose(0, 2, 1)[:, : STATIC_CHANNELS - 1])


def _visible(m: LoongMap) -> np.ndarray:
    """``[N * 4]``: whether each crossing's target lies inside the 7 x 7 window of the cell it leaves
    (always for plain crossings; a portal may lead out of sight)."""
    cells = np.arange(m.n_cells)
    xs, ys = cells % m.width, cells // m.width
    tc = m.step_cell
    dx = (tc % m.width - xs[:, None] + m.width // 2) % m.width - m.width // 2
    dy = (tc // m.width - ys[:, None] + m.height // 2) % m.height - m.height // 2
    return ((np.abs(dx) <= HALF) & (np.abs(dy) <= HALF)).reshape(-1)


def _portal_offsets(m: LoongMap) -> np.ndarray:
    """``[N * 4, 2]`` float32: for a portal side, the torus offset (dx / W, dy / H) from the cell to the
    crossing's target, each in [-0.5, 0.5); zero on other sides."""
    cells = np.arange(m.n_cells)
    xs, ys = cells % m.width, cells // m.width
    tc = m.step_cell
    dx = (tc % m.width - xs[:, None] + m.width // 2) % m.width - m.width // 2
    dy = (tc // m.width - ys[:, None] + m.height // 2) % m.height - m.height // 2
    portal = m.step_kind == PORTAL
    out = np.stack([np.where(portal, dx / m.width, 0.0), np.where(portal, dy / m.height, 0.0)], -1)
    return out.reshape(4 * m.n_cells, 2).astype(np.float32)


def start_template(m: LoongMap, ring: int) -> dict[str, np.ndarray]:
    """The lane state at round 0 for map ``m`` (host arrays; see LoongSim for the fields)."""
    n = m.n_cells
    occ = np.full(n + 1, -1, np.int64)
    sid = np.full(SLOTS + 1, -1, np.int64)
    team = np.zeros(SLOTS + 1, np.int64)
    ring_head = np.zeros(SLOTS + 1, np.int64)
    length = np.zeros(SLOTS + 1, np.int64)
    heading = np.full(SLOTS + 1, -1, np.int64)
    head_cell = np.zeros(SLOTS + 1, np.int64)
    tail_cell = np.zeros(SLOTS + 1, np.int64)
    ringbuf = np.zeros((SLOTS + 1, ring), np.int64)
    for slot, s in enumerate(m.dragons):
        cells = [m.cell(x, y) for x, y in s.body]
        sid[slot], team[slot], heading[slot] = s.id, s.team, s.heading
        length[slot], ring_head[slot] = len(cells), len(cells) - 1
        ringbuf[slot, : len(cells)] = cells[::-1]  # head at position L - 1, tail at 0
        occ[cells] = slot
        head_cell[slot], tail_cell[slot] = cells[0], cells[-1]
    for s in m.spawns:
        occ[m.cell(s.x, s.y)] = -2  # PEARL: the simulator keeps pearls in the occupancy grid (never under a body)
    id_team = np.full(SLOTS, -1, np.int64)  # ids 0..SLOTS-1 of a map's starting dragons
    for s in m.dragons:
        id_team[s.id] = s.team
    living = np.array([sum(s.team == t for s in m.dragons) for t in (0, 1)], np.int64)
    next_id = np.array(max((s.id for s in m.dragons), default=-1) + 1, np.int64)
    return {"occ": occ, "sid": sid, "team": team, "ring_head": ring_head, "length": length, "heading": heading,
            "head_cell": head_cell, "tail_cell": tail_cell, "ring": ringbuf.astype(np.int16), "id_team": id_team,
            "living": living, "next_id": next_id}
