"""The Loong board: a W x H torus whose edges are OPEN, KELP or PORTAL, with spawn tiles and starting dragons.

Cells are indexed ``c = y * W + x``. Directions are N=0 (y-1), E=1 (x+1), S=2 (y+1), W=3 (x-1); the
opposite of ``d`` is ``d ^ 2``. A side of a cell is ``(c, d)``, flat index ``4 * c + d``.

Every crossing is a lookup in three flat tables built once per map (``step_cell``, ``step_heading``,
``step_kind``, each ``[W * H, 4]``): leaving cell ``c`` through side ``d`` arrives in ``step_cell[c, d]``
heading ``step_heading[c, d]``; ``step_kind`` says whether the crossing is open, kelp (the mover dies,
a ray stops) or a portal. Wrap and portal gluing are therefore invisible to the engine.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

N, E, S, W = 0, 1, 2, 3
DIR_NAMES = "NESW"
DX = (0, 1, 0, -1)
DY = (-1, 0, 1, 0)
NO_HEADING = -1

OPEN, KELP, PORTAL = 0, 1, 2
EDGE_CHARS = ".KP"  # map JSON: one character per side, in N, E, S, W order
EDGE_NAMES = ("open", "kelp", "portal")

SYMMETRIES = ("lr", "tb", "rot")
MIN_SIDE, MAX_SIDE = 10, 64
MIN_PERIOD, MAX_PERIOD = 8, 40
QUEEN_LENGTH, WORKER_LENGTH = 4, 3
START_IDS = (0, 1, 2, 3, 4, 5)
MAP_FORMAT, MAP_VERSION = "loong-map", 1


class MapError(ValueError):
    """A malformed, inconsistent or asymmetric map; the message names the field and the cell."""


@dataclass(frozen=True)
class Spawn:
    """A spawn tile at (x, y): every ``period`` rounds it tries to place a pearl; ``countdown`` at round 0."""

    x: int
    y: int
    period: int
    countdown: int


@dataclass(frozen=True)
class StartDragon:
    """A dragon on the board at round 1: ``body`` is (x, y) cells head first, ``heading`` a direction."""

    id: int
    team: int
    body: tuple[tuple[int, int], ...]
    heading: int


PortalEdge = tuple[int, int, int]  # (x, y, side)
PortalPair = tuple[PortalEdge, PortalEdge]


def mirror_dir(symmetry: str, d: int) -> int:
    """Direction ``d`` seen in the mirror: 'lr' swaps E/W, 'tb' swaps N/S, 'rot' reverses both."""
    if symmetry == "lr":
        return d if d in (N, S) else d ^ 2
    if symmetry == "tb":
        return d if d in (E, W) else d ^ 2
    return d ^ 2


def mirror_xy(symmetry: str, width: int, height: int, x: int, y: int) -> tuple[int, int]:
    """Cell (x, y)'s partner under ``symmetry``."""
    if symmetry == "lr":
        return width - 1 - x, y
    if symmetry == "tb":
        return x, height - 1 - y
    return width - 1 - x, height - 1 - y


def plain_xy(width: int, height: int, x: int, y: int, d: int) -> tuple[int, int]:
    """The torus neighbour of (x, y) through side ``d``, ignoring what lies on the edge."""
    return (x + DX[d]) % width, (y + DY[d]) % height


def edges_from_lists(
    width: int, height: int, kelp: Iterable[PortalEdge] = (), portals: Iterable[PortalPair] = ()
) -> np.ndarray:
    """Edge kinds ``[H, W, 4]`` uint8 from kelp sides and portal pairs; marks both sides of every edge."""
    edges = np.zeros((height, width, 4), np.uint8)
    for x, y, d in kelp:
        nx, ny = plain_xy(width, height, x, y, d)
        edges[y, x, d] = edges[ny, nx, d ^ 2] = KELP
    for pair in portals:
        for x, y, d in pair:
            nx, ny = plain_xy(width, height, x, y, d)
            edges[y, x, d] = edges[ny, nx, d ^ 2] = PORTAL
    return edges


class LoongMap:
    """An immutable, validated Loong map with its precomputed crossing tables.

    ``edges`` is ``[H, W, 4]`` uint8 (OPEN/KELP/PORTAL per side, N, E, S, W); both sides of an edge
    agree. ``portals`` lists the glued pairs exactly as the rules state them. ``symmetry`` is 'lr',
    'tb' or 'rot'; ``None`` is accepted only for hand-made test boards (JSON maps must name one).
    Raises MapError naming the field and cell of the first problem.
    """

    def __init__(
        self,
        width: int,
        height: int,
        edges: np.ndarray,
        portals: Sequence[PortalPair] = (),
        spawns: Sequence[Spawn] = (),
        dragons: Sequence[StartDragon] = (),
        symmetry: str | None = None,
        name: str = "",
        require_starts: bool = True,
    ) -> None:
        _check_size(width, height)
        self.width, self.height = int(width), int(height)
        self.n_cells = self.width * self.height
        self.edges = np.array(edges, np.uint8, copy=True)
        self.portals: tuple[PortalPair, ...] = tuple(
            (tuple(int(v) for v in a), tuple(int(v) for v in b)) for a, b in portals
        )
        self.spawns: tuple[Spawn, ...] = tuple(spawns)
        self.dragons: tuple[StartDragon, ...] = tuple(sorted(dragons, key=lambda s: s.id))
        self.symmetry = symmetry
        self.name = name
        _check_edges(self)
        self._build_tables()
        _check_spawns(self)
        _check_dragons(self, require_starts)
        if symmetry is not None:
            _check_symmetry(self)
        self.edges.setflags(write=False)

    # -- cells -----------------------------------------------------------------------------------
    def cell(self, x: int, y: int) -> int:
        return y * self.width + x

    def xy(self, c: int) -> tuple[int, int]:
        return c % self.width, c // self.width

    def plain_neighbour(self, c: int, d: int) -> int:
        x, y = plain_xy(self.width, self.height, c % self.width, c // self.width, d)
        return y * self.width + x

    def step(self, c: int, d: int) -> tuple[int, int, int]:
        """(target cell, arrival heading, crossing kind) leaving cell ``c`` through side ``d``."""
        k = 4 * c + d
        return self.t_cell[k], self.t_head[k], self.t_kind[k]

    def mirror_cell(self, c: int) -> int:
        x, y = mirror_xy(self.symmetry, self.width, self.height, c % self.width, c // self.width)
        return y * self.width + x

    # -- tables ----------------------------------------------------------------------------------
    def _build_tables(self) -> None:
        """Fill ``partner`` [N, 4] (partner side 4*c+d or -1) and the step tables [N, 4]."""
        n = self.n_cells
        kind = self.edges.reshape(n, 4)
        self.partner = np.full((n, 4), -1, np.int32)
        for i, pair in enumerate(self.portals):
            _glue(self, i, pair)
        _check_portal_marks(self, kind)
        cells = np.arange(n)
        xs, ys = cells % self.width, cells // self.width
        step_cell = np.empty((n, 4), np.int32)
        step_head = np.empty((n, 4), np.int8)
        for d in range(4):
            step_cell[:, d] = ((ys + DY[d]) % self.height) * self.width + (xs + DX[d]) % self.width
            step_head[:, d] = d
        portal = self.partner >= 0
        pc, ps = self.partner[portal] // 4, self.partner[portal] % 4
        step_cell[portal] = [self.plain_neighbour(int(c), int(s)) for c, s in zip(pc, ps)]
        step_head[portal] = ps
        self.step_cell, self.step_heading, self.step_kind = step_cell, step_head, kind.copy()
        for arr in (self.partner, self.step_cell, self.step_heading, self.step_kind):
            arr.setflags(write=False)
        # Python lists: the engine's hot loop indexes these (list indexing beats numpy scalars).
        self.t_cell = step_cell.ravel().tolist()
        self.t_head = step_head.ravel().tolist()
        self.t_kind = kind.ravel().tolist()
        self.spawn_at = np.full(n, -1, np.int32)
        self._window: np.ndarray | None = None
        self._partner_xys: np.ndarray | None = None
        _check_no_return(self)

    def window_cells(self) -> np.ndarray:
        """``[N, 7, 7]`` int32: the torus-wrapped 7 x 7 window of cells centred on each cell (row = dy)."""
        if self._window is None:
            cells = np.arange(self.n_cells)
            xs, ys = cells % self.width, cells // self.width
            off = np.arange(-3, 4)
            wy = (ys[:, None, None] + off[None, :, None]) % self.height
            wx = (xs[:, None, None] + off[None, None, :]) % self.width
            self._window = (wy * self.width + wx).astype(np.int32)
            self._window.setflags(write=False)
        return self._window

    def partner_xys(self) -> np.ndarray:
        """``[N, 4, 3]`` uint8: each portal side's partner (x, y, side); 255 where the side is no portal."""
        if self._partner_xys is None:
            out = np.full((self.n_cells, 4, 3), 255, np.uint8)
            has = self.partner >= 0
            pc, ps = self.partner[has] // 4, self.partner[has] % 4
            out[has, 0], out[has, 1], out[has, 2] = pc % self.width, pc // self.width, ps
            out.setflags(write=False)
            self._partner_xys = out
        return self._partner_xys

    def spawn_periods(self) -> np.ndarray:
        """``[N]`` uint8: each cell's spawn period, 0 where there is no spawn tile."""
        out = np.zeros(self.n_cells, np.uint8)
        for s in self.spawns:
            out[self.cell(s.x, s.y)] = s.period
        return out

    # -- JSON ------------------------------------------------------------------------------------
    def to_json(self) -> dict:
        """The map as a JSON-ready dict (format in map.schema.json)."""
        rows = [["".join(EDGE_CHARS[k] for k in self.edges[y, x]) for x in range(self.width)]
                for y in range(self.height)]
        return {
            "format": MAP_FORMAT,
            "version": MAP_VERSION,
            "name": self.name,
            "width": self.width,
            "height": self.height,
            "symmetry": self.symmetry,
            "edges": rows,
            "portals": [[_edge_json(e) for e in pair] for pair in self.portals],
            "spawns": [{"x": s.x, "y": s.y, "period": s.period, "countdown": s.countdown}
                       for s in self.spawns],
            "dragons": [{"id": s.id, "team": s.team, "body": [list(c) for c in s.body],
                         "heading": DIR_NAMES[s.heading]} for s in self.dragons],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.dumps())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LoongMap) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash(self.dumps())

    def __repr__(self) -> str:
        return f"LoongMap({self.name or '?'} {self.width}x{self.height} {self.symmetry})"


def _edge_json(e: PortalEdge) -> dict:
    return {"x": e[0], "y": e[1], "side": DIR_NAMES[e[2]]}


def _side(x: int, y: int, d: int) -> str:
    return f"({x},{y}).{DIR_NAMES[d]}"


def _check_size(width: object, height: object) -> None:
    for field, v in (("width", width), ("height", height)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or not MIN_SIDE <= v <= MAX_SIDE:
            raise MapError(f"{field}: must be an integer in [{MIN_SIDE}, {MAX_SIDE}], got {v!r}")


def _check_edges(m: LoongMap) -> None:
    """Shape, values, and both sides of each edge agreeing."""
    if m.edges.shape != (m.height, m.width, 4):
        raise MapError(f"edges: shape must be [{m.height}][{m.width}][4], got {list(m.edges.shape)}")
    bad = np.argwhere(m.edges > PORTAL)
    if len(bad):
        y, x, d = bad[0]
        raise MapError(f"edges[{y}][{x}].{DIR_NAMES[d]}: unknown edge kind {int(m.edges[y, x, d])}")
    for y in range(m.height):
        for x in range(m.width):
            for d in (E, S):  # each physical edge once
                nx, ny = plain_xy(m.width, m.height, x, y, d)
                a, b = m.edges[y, x, d], m.edges[ny, nx, d ^ 2]
                if a != b:
                    raise MapError(
                        f"edges[{y}][{x}].{DIR_NAMES[d]}: {EDGE_NAMES[a]} at ({x},{y}) but "
                        f"edges[{ny}][{nx}].{DIR_NAMES[d ^ 2]} is {EDGE_NAMES[b]}: "
                        "both sides of an edge must agree"
                    )


def _glue(m: LoongMap, i: int, pair: PortalPair) -> None:
    """Record the four partner sides of portal pair ``i`` (rules: Board, PORTAL)."""
    for j, (x, y, d) in enumerate(pair):
        if not (0 <= x < m.width and 0 <= y < m.height and 0 <= d < 4):
            raise MapError(
                f"portals[{i}][{j}]: edge ({x},{y}) side {d} lies outside the {m.width}x{m.height} board"
            )
    (x1, y1, d1), (x2, y2, d2) = pair
    c1, c2 = m.cell(x1, y1), m.cell(x2, y2)
    n1, n2 = m.plain_neighbour(c1, d1), m.plain_neighbour(c2, d2)
    links = ((4 * c1 + d1, 4 * c2 + d2), (4 * n1 + (d1 ^ 2), 4 * n2 + (d2 ^ 2)))
    flat = m.partner.reshape(-1)
    for a, b in links:
        for s, t in ((a, b), (b, a)):
            if flat[s] != -1:
                sx, sy = m.xy(s // 4)
                raise MapError(f"portals[{i}]: edge {_side(sx, sy, s % 4)} is already in a portal pair")
            flat[s] = t


def _check_portal_marks(m: LoongMap, kind: np.ndarray) -> None:
    """Every side glued by a pair is marked 'P' in edges and every 'P' side is glued."""
    glued = m.partner >= 0
    marked = kind == PORTAL
    for c, d in np.argwhere(glued != marked):
        x, y = m.xy(int(c))
        where = f"edges[{y}][{x}].{DIR_NAMES[d]}"
        if marked[c, d]:
            raise MapError(f"{where}: marked portal at ({x},{y}) but in no portal pair")
        raise MapError(f"{where}: {EDGE_NAMES[kind[c, d]]} at ({x},{y}) but a portal pair glues it")


def _check_no_return(m: LoongMap) -> None:
    """No crossing may lead back into the cell it left (rules: PORTAL)."""
    cells = np.arange(m.n_cells)[:, None]
    back = np.argwhere((m.step_cell == cells) & (m.partner >= 0))
    if len(back):
        c, d = back[0]
        x, y = m.xy(int(c))
        raise MapError(f"portals: crossing {_side(x, y, int(d))} leads back into ({x},{y})")


def _check_spawns(m: LoongMap) -> None:
    seen: dict[int, int] = {}
    for i, s in enumerate(m.spawns):
        if not (0 <= s.x < m.width and 0 <= s.y < m.height):
            raise MapError(f"spawns[{i}]: cell ({s.x},{s.y}) lies outside the {m.width}x{m.height} board")
        if not MIN_PERIOD <= s.period <= MAX_PERIOD:
            raise MapError(
                f"spawns[{i}].period: {s.period} at ({s.x},{s.y}) not in [{MIN_PERIOD}, {MAX_PERIOD}]"
            )
        if not 1 <= s.countdown <= s.period:
            raise MapError(f"spawns[{i}].countdown: {s.countdown} at ({s.x},{s.y}) not in [1, {s.period}]")
        c = m.cell(s.x, s.y)
        if c in seen:
            raise MapError(f"spawns[{i}]: ({s.x},{s.y}) is already spawns[{seen[c]}]")
        seen[c] = i
        m.spawn_at[c] = i
    m.spawn_at.setflags(write=False)


def _check_dragons(m: LoongMap, require_starts: bool) -> None:
    """Ids 0..5, teams, lengths, cells on the board and distinct, bodies connected, no spawn beneath."""
    ids = [s.id for s in m.dragons]
    if require_starts and ids != list(START_IDS):
        raise MapError(f"dragons: ids must be 0..5 once each, got {ids}")
    owner: dict[int, int] = {}
    for i, s in enumerate(m.dragons):
        _check_one_dragon(m, i, s, require_starts, owner)


def _check_one_dragon(m: LoongMap, i: int, s: StartDragon, strict: bool, owner: dict[int, int]) -> None:
    if s.team != s.id % 2:
        raise MapError(f"dragons[{i}].team: dragon {s.id} must be on team {s.id % 2}")
    want = QUEEN_LENGTH if s.id < 2 else WORKER_LENGTH
    if strict and len(s.body) != want:
        raise MapError(f"dragons[{i}].body: dragon {s.id} must have length {want}, got {len(s.body)}")
    if not s.body:
        raise MapError(f"dragons[{i}].body: empty")
    if not (isinstance(s.heading, int) and (0 <= s.heading < 4 or (not strict and s.heading == NO_HEADING))):
        raise MapError(f"dragons[{i}].heading: must be one of N, E, S, W, got {s.heading!r}")
    prev = -1
    for j, (x, y) in enumerate(s.body):
        if not (0 <= x < m.width and 0 <= y < m.height):
            raise MapError(f"dragons[{i}].body[{j}]: cell ({x},{y}) lies outside the board")
        c = m.cell(x, y)
        if c in owner:
            raise MapError(f"dragons[{i}].body[{j}]: cell ({x},{y}) already holds dragon {owner[c]}")
        owner[c] = s.id
        if m.spawn_at[c] >= 0:
            raise MapError(f"spawns[{m.spawn_at[c]}]: spawn tile at ({x},{y}) lies under dragon {s.id}")
        joined = any(m.t_cell[4 * c + d] == prev and m.t_kind[4 * c + d] != KELP for d in range(4))
        if prev >= 0 and not joined:
            raise MapError(f"dragons[{i}].body[{j}]: ({x},{y}) is not joined to the segment before it")
        prev = c


def _check_symmetry(m: LoongMap) -> None:
    if m.symmetry not in SYMMETRIES:
        raise MapError(f"symmetry: must be one of {', '.join(SYMMETRIES)}, got {m.symmetry!r}")
    _check_edge_symmetry(m)
    _check_spawn_symmetry(m)
    _check_dragon_symmetry(m)


def _mirror_side(m: LoongMap, side: int) -> int:
    return 4 * m.mirror_cell(side // 4) + mirror_dir(m.symmetry, side % 4)


def _check_edge_symmetry(m: LoongMap) -> None:
    """Edge kinds and portal gluing are invariant under the mirror, side by side."""
    kind = m.step_kind.reshape(-1)
    partner = m.partner.reshape(-1)
    for side in range(4 * m.n_cells):
        ms = _mirror_side(m, side)
        x, y = m.xy(side // 4)
        mx, my = m.xy(ms // 4)
        d, md = DIR_NAMES[side % 4], DIR_NAMES[ms % 4]
        if kind[side] != kind[ms]:
            raise MapError(
                f"edges[{y}][{x}].{d}: {EDGE_NAMES[kind[side]]} at ({x},{y}) has no mirror at "
                f"({mx},{my}).{md} under symmetry '{m.symmetry}' (it is {EDGE_NAMES[kind[ms]]})"
            )
        if partner[side] >= 0 and partner[ms] != _mirror_side(m, int(partner[side])):
            px, py = m.xy(int(partner[side]) // 4)
            raise MapError(
                f"edges[{y}][{x}].{d}: portal at ({x},{y}) glued to {_side(px, py, int(partner[side]) % 4)} "
                f"has no mirror at ({mx},{my}).{md} under symmetry '{m.symmetry}'"
            )


def _check_spawn_symmetry(m: LoongMap) -> None:
    for i, s in enumerate(m.spawns):
        mx, my = mirror_xy(m.symmetry, m.width, m.height, s.x, s.y)
        j = int(m.spawn_at[m.cell(mx, my)])
        if j < 0 or (m.spawns[j].period, m.spawns[j].countdown) != (s.period, s.countdown):
            raise MapError(
                f"spawns[{i}]: spawn tile at ({s.x},{s.y}) (period {s.period}, countdown {s.countdown}) "
                f"has no mirror at ({mx},{my}) under symmetry '{m.symmetry}'"
            )


def _check_dragon_symmetry(m: LoongMap) -> None:
    by_id = {s.id: (i, s) for i, s in enumerate(m.dragons)}
    for s in m.dragons:
        if s.team != 0 or s.id + 1 not in by_id:
            continue
        j, t = by_id[s.id + 1]
        want = tuple(mirror_xy(m.symmetry, m.width, m.height, x, y) for x, y in s.body)
        if t.body != want or t.heading != mirror_dir(m.symmetry, s.heading):
            raise MapError(
                f"dragons[{j}]: dragon {t.id} must mirror dragon {s.id} under symmetry '{m.symmetry}': "
                f"body {[list(c) for c in want]} heading {DIR_NAMES[mirror_dir(m.symmetry, s.heading)]}"
            )


# -- loading -------------------------------------------------------------------------------------
def _int(v: object, field: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise MapError(f"{field}: must be an integer in [{lo}, {hi}], got {v!r}")
    return v


def _dir(v: object, field: str) -> int:
    if not isinstance(v, str) or v not in DIR_NAMES or len(v) != 1:
        raise MapError(f"{field}: must be one of N, E, S, W, got {v!r}")
    return DIR_NAMES.index(v)


def _obj(v: object, field: str, keys: tuple[str, ...]) -> dict:
    if not isinstance(v, dict):
        raise MapError(f"{field}: must be an object, got {type(v).__name__}")
    missing = [k for k in keys if k not in v]
    extra = [k for k in v if k not in keys]
    if missing or extra:
        raise MapError(f"{field}: missing {missing}, unexpected {extra}")
    return v


def _list(v: object, field: str, length: int | None = None) -> list:
    if not isinstance(v, list) or (length is not None and len(v) != length):
        want = f"a list of {length}" if length is not None else "a list"
        raise MapError(f"{field}: must be {want}, got {v!r:.60}")
    return v


def _parse_edges(v: object, width: int, height: int) -> np.ndarray:
    rows = _list(v, "edges", height)
    edges = np.zeros((height, width, 4), np.uint8)
    for y, row in enumerate(rows):
        for x, s in enumerate(_list(row, f"edges[{y}]", width)):
            if not isinstance(s, str) or len(s) != 4 or any(ch not in EDGE_CHARS for ch in s):
                raise MapError(f"edges[{y}][{x}]: must be 4 characters of '.KP' (N, E, S, W), got {s!r}")
            edges[y, x] = [EDGE_CHARS.index(ch) for ch in s]
    return edges


def _parse_portal_edge(v: object, field: str, width: int, height: int) -> PortalEdge:
    o = _obj(v, field, ("x", "y", "side"))
    return (_int(o["x"], f"{field}.x", 0, width - 1), _int(o["y"], f"{field}.y", 0, height - 1),
            _dir(o["side"], f"{field}.side"))


def _parse_spawn(v: object, field: str, width: int, height: int) -> Spawn:
    o = _obj(v, field, ("x", "y", "period", "countdown"))
    return Spawn(_int(o["x"], f"{field}.x", 0, width - 1), _int(o["y"], f"{field}.y", 0, height - 1),
                 _int(o["period"], f"{field}.period", MIN_PERIOD, MAX_PERIOD),
                 _int(o["countdown"], f"{field}.countdown", 1, MAX_PERIOD))


def _parse_dragon(v: object, field: str, width: int, height: int) -> StartDragon:
    o = _obj(v, field, ("id", "team", "body", "heading"))
    body = []
    for j, c in enumerate(_list(o["body"], f"{field}.body")):
        c = _list(c, f"{field}.body[{j}]", 2)
        body.append((_int(c[0], f"{field}.body[{j}][0]", 0, width - 1),
                     _int(c[1], f"{field}.body[{j}][1]", 0, height - 1)))
    return StartDragon(_int(o["id"], f"{field}.id", 0, 5), _int(o["team"], f"{field}.team", 0, 1),
                       tuple(body), _dir(o["heading"], f"{field}.heading"))


MAP_KEYS = (
    "format", "version", "name", "width", "height", "symmetry", "edges", "portals", "spawns", "dragons"
)


def map_from_json(obj: object) -> LoongMap:
    """Build and validate a map from parsed JSON (map.schema.json); raises MapError naming field and cell."""
    o = _obj(obj, "map", MAP_KEYS)
    if o["format"] != MAP_FORMAT:
        raise MapError(f"format: must be {MAP_FORMAT!r}, got {o['format']!r}")
    if o["version"] != MAP_VERSION:
        raise MapError(f"version: this engine reads version {MAP_VERSION}, got {o['version']!r}")
    if not isinstance(o["name"], str):
        raise MapError(f"name: must be a string, got {o['name']!r}")
    if o["symmetry"] not in SYMMETRIES:
        raise MapError(f"symmetry: must be one of {', '.join(SYMMETRIES)}, got {o['symmetry']!r}")
    w = _int(o["width"], "width", MIN_SIDE, MAX_SIDE)
    h = _int(o["height"], "height", MIN_SIDE, MAX_SIDE)
    edges = _parse_edges(o["edges"], w, h)
    portals = [tuple(_parse_portal_edge(e, f"portals[{i}][{j}]", w, h)
                     for j, e in enumerate(_list(p, f"portals[{i}]", 2)))
               for i, p in enumerate(_list(o["portals"], "portals"))]
    spawns = [_parse_spawn(s, f"spawns[{i}]", w, h) for i, s in enumerate(_list(o["spawns"], "spawns"))]
    dragons = [_parse_dragon(d, f"dragons[{i}]", w, h) for i, d in enumerate(_list(o["dragons"], "dragons"))]
    return LoongMap(w, h, edges, portals, spawns, dragons, symmetry=o["symmetry"], name=o["name"])


def loads_map(text: str) -> LoongMap:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise MapError(f"map: not valid JSON ({e})") from None
    return map_from_json(obj)


def load_map(path: str | Path) -> LoongMap:
    """Read a JSON map file; MapError messages are prefixed with the file name."""
    try:
        return loads_map(Path(path).read_text())
    except MapError as e:
        raise MapError(f"{path}: {e}") from None
