"""Seeded map generation and the map specs the CLI accepts (``gen:48x48:lr:seed=3,kelp=0.08``).

Generated maps are symmetric, connected (every cell reachable through non-kelp crossings) and have
safe starts (see ``start_problems``). The generator's output is defined by this implementation and
numpy's PCG64 stream; other implementations read the JSON it writes instead of regenerating.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

import numpy as np

from games.loong.maps import (
    DX,
    DY,
    KELP,
    MAX_PERIOD,
    MAX_SIDE,
    MIN_PERIOD,
    MIN_SIDE,
    OPEN,
    PORTAL,
    QUEEN_LENGTH,
    SYMMETRIES,
    WORKER_LENGTH,
    LoongMap,
    MapError,
    Spawn,
    StartDragon,
    load_map,
    mirror_dir,
    mirror_xy,
)

AHEAD = 2  # cells ahead of each starting head that are kept free and kelp-free
DEFAULT_KELP = 0.06
DEFAULT_PORTALS = 2


def default_spawns(width: int, height: int) -> int:
    """Spawn tiles placed before mirroring when none are asked for: one per 256 cells, at least 3."""
    return max(3, width * height // 256)


class _Board:
    """Scratch edge kinds ``[H, W, 4]`` kept symmetric: every write also writes the mirror side."""

    def __init__(self, width: int, height: int, symmetry: str) -> None:
        self.w, self.h, self.sym = width, height, symmetry
        self.edges = np.zeros((height, width, 4), np.uint8)
        self.protected = np.zeros((height, width, 4), bool)

    def twin(self, x: int, y: int, d: int) -> tuple[int, int, int]:
        return (x + DX[d]) % self.w, (y + DY[d]) % self.h, d ^ 2

    def mirror(self, x: int, y: int, d: int) -> tuple[int, int, int]:
        mx, my = mirror_xy(self.sym, self.w, self.h, x, y)
        return mx, my, mirror_dir(self.sym, d)

    def orbit(self, x: int, y: int, d: int) -> set[tuple[int, int, int]]:
        """The sides of this edge and of its mirror edge."""
        sides = {(x, y, d), self.twin(x, y, d)}
        return sides | {self.mirror(*s) for s in sides}

    def free(self, side: tuple[int, int, int]) -> bool:
        sides = self.orbit(*side)
        return all(self.edges[y, x, d] == OPEN and not self.protected[y, x, d] for x, y, d in sides)

    def set(self, side: tuple[int, int, int], kind: int) -> None:
        for x, y, d in self.orbit(*side):
            self.edges[y, x, d] = kind

    def protect_cell(self, x: int, y: int) -> None:
        for d in range(4):
            for sx, sy, sd in self.orbit(x, y, d):
                self.protected[sy, sx, sd] = True


def generate_map(
    width: int,
    height: int,
    symmetry: str,
    seed: int,
    kelp_density: float = DEFAULT_KELP,
    portal_pairs: int = DEFAULT_PORTALS,
    spawn_tiles: int | None = None,
    name: str | None = None,
) -> LoongMap:
    """A random symmetric map. ``portal_pairs`` and ``spawn_tiles`` count before mirroring (each adds
    its mirror image too); ``kelp_density`` is the chance that an edge (with its mirror) is kelp."""
    _check_args(width, height, symmetry, kelp_density, portal_pairs, spawn_tiles)
    rng = np.random.Generator(np.random.PCG64(seed))
    board = _Board(width, height, symmetry)
    dragons = _place_dragons(board, rng)
    keep = _start_cells(board, dragons)
    for x, y in keep:
        board.protect_cell(x, y)
    _place_kelp(board, rng, kelp_density)
    portals = _place_portals(board, rng, portal_pairs)
    _connect(board, rng, portals)
    n_spawns = default_spawns(width, height) if spawn_tiles is None else spawn_tiles
    spawns = _place_spawns(board, rng, n_spawns, keep)
    label = name or f"gen:{width}x{height}:{symmetry}:seed={seed}"
    return LoongMap(width, height, board.edges, portals, spawns, dragons, symmetry=symmetry, name=label)


def _check_args(width, height, symmetry, kelp_density, portal_pairs, spawn_tiles) -> None:
    if not (isinstance(width, int) and isinstance(height, int)
            and MIN_SIDE <= width <= MAX_SIDE and MIN_SIDE <= height <= MAX_SIDE):
        raise MapError(f"size: width and height must be in [{MIN_SIDE}, {MAX_SIDE}], got {width}x{height}")
    if symmetry not in SYMMETRIES:
        raise MapError(f"symmetry: must be one of {', '.join(SYMMETRIES)}, got {symmetry!r}")
    if not 0.0 <= kelp_density <= 0.5:
        raise MapError(f"kelp: density must be in [0, 0.5], got {kelp_density}")
    if portal_pairs < 0 or (spawn_tiles is not None and spawn_tiles < 0):
        raise MapError("portals/spawns: counts must be >= 0")


def _team0_region(board: _Board) -> tuple[range, range]:
    """Team 0 starts in its own half, far enough from the mirror axis and the wrap seam."""
    if board.sym == "tb":
        return range(board.w), range(1, board.h // 2 - 2)
    return range(1, board.w // 2 - 2), range(board.h)


def _place_dragons(board: _Board, rng: np.random.Generator) -> list[StartDragon]:
    xs, ys = _team0_region(board)
    for _ in range(10_000):
        team0 = [_random_line(board, rng, xs, ys, dragon_id) for dragon_id in (0, 2, 4)]
        if any(t is None for t in team0):
            continue
        dragons = []
        for s in team0:
            body = tuple(mirror_xy(board.sym, board.w, board.h, x, y) for x, y in s.body)
            dragons += [s, StartDragon(s.id + 1, 1, body, mirror_dir(board.sym, s.heading))]
        if _starts_ok(board, dragons):
            return sorted(dragons, key=lambda s: s.id)
    raise MapError(f"size: could not place the starting dragons on {board.w}x{board.h} ({board.sym})")


def _random_line(board: _Board, rng: np.random.Generator, xs: range, ys: range, dragon_id: int):
    """A straight dragon inside the region, head first, heading away from its body."""
    length = QUEEN_LENGTH if dragon_id < 2 else WORKER_LENGTH
    heading = int(rng.integers(4))
    hx, hy = int(rng.choice(xs)), int(rng.choice(ys))
    body = tuple(((hx - DX[heading] * j) % board.w, (hy - DY[heading] * j) % board.h) for j in range(length))
    if not all(x in xs and y in ys for x, y in body):
        return None
    return StartDragon(dragon_id, 0, body, heading)


def _ahead(board: _Board, s: StartDragon) -> list[tuple[int, int]]:
    hx, hy = s.body[0]
    dx, dy = DX[s.heading], DY[s.heading]
    return [((hx + dx * j) % board.w, (hy + dy * j) % board.h) for j in range(1, AHEAD + 1)]


def _start_cells(board: _Board, dragons: list[StartDragon]) -> set[tuple[int, int]]:
    cells = {c for s in dragons for c in s.body}
    return cells | {c for s in dragons for c in _ahead(board, s)}


def _torus_gap(board: _Board, a: tuple[int, int], b: tuple[int, int]) -> int:
    dx = abs(a[0] - b[0]) % board.w
    dy = abs(a[1] - b[1]) % board.h
    return max(min(dx, board.w - dx), min(dy, board.h - dy))


def _starts_ok(board: _Board, dragons: list[StartDragon]) -> bool:
    """Distinct cells, free cells ahead of every head, no team-0 cell touching a team-1 cell."""
    body = [c for s in dragons for c in s.body]
    if len(set(body)) != len(body):
        return False
    if any(c in set(body) for s in dragons for c in _ahead(board, s)):
        return False
    t0 = [c for s in dragons if s.team == 0 for c in s.body + tuple(_ahead(board, s))]
    t1 = [c for s in dragons if s.team == 1 for c in s.body + tuple(_ahead(board, s))]
    return all(_torus_gap(board, a, b) >= 2 for a in t0 for b in t1)


def _place_kelp(board: _Board, rng: np.random.Generator, density: float) -> None:
    """One draw per physical edge (its E or S side), in a fixed order; only an edge that is the first
    of its mirror pair decides, so ``density`` is the share of edges that are kelp (before repairs)."""
    draws = rng.random((board.h, board.w, 2))
    for y in range(board.h):
        for x in range(board.w):
            for j, d in enumerate((1, 2)):
                side = (x, y, d)
                first = min(board.orbit(*side), key=lambda t: (t[1], t[0], t[2]))
                if first not in ((x, y, d), board.twin(x, y, d)):
                    continue
                if draws[y, x, j] < density and board.free(side):
                    board.set(side, KELP)


def _place_portals(board: _Board, rng: np.random.Generator, pairs: int) -> list:
    portals: list = []
    for _ in range(pairs):
        for _attempt in range(200):
            pair = _random_portal_pair(board, rng)
            if pair is not None:
                portals += pair
                break
    return portals


def _random_portal_pair(board: _Board, rng: np.random.Generator):
    """Two free edges and their mirror images, all four distinct, glued as (e1, e2) and mirror."""
    e1 = (int(rng.integers(board.w)), int(rng.integers(board.h)), int(rng.integers(4)))
    e2 = (int(rng.integers(board.w)), int(rng.integers(board.h)), int(rng.integers(4)))
    physical = [frozenset({e, board.twin(*e)}) for e in (e1, e2, board.mirror(*e1), board.mirror(*e2))]
    if len(set(physical)) != 4 or not (board.free(e1) and board.free(e2)):
        return None
    n1, n2 = board.twin(*e1)[:2], board.twin(*e2)[:2]
    if n2 == e1[:2] or n1 == e2[:2]:
        return None  # a crossing would lead back into the cell it left
    board.set(e1, PORTAL)
    board.set(e2, PORTAL)
    return [(e1, e2), (board.mirror(*e1), board.mirror(*e2))]


def _reachable(m: LoongMap) -> np.ndarray:
    """``[N]`` bool: cells reachable from cell 0 through non-kelp crossings."""
    seen = np.zeros(m.n_cells, bool)
    seen[0] = True
    todo = deque([0])
    while todo:
        c = todo.popleft()
        for d in range(4):
            k = 4 * c + d
            t = m.t_cell[k]
            if m.t_kind[k] != KELP and not seen[t]:
                seen[t] = True
                todo.append(t)
    return seen


def _connect(board: _Board, rng: np.random.Generator, portals: list) -> None:
    """Open kelp edges (with their mirrors) on the frontier until every cell is reachable."""
    while True:
        m = LoongMap(board.w, board.h, board.edges, portals, require_starts=False)
        seen = _reachable(m)
        if seen.all():
            return
        frontier = [(c, d) for c in np.flatnonzero(seen) for d in range(4)
                    if m.t_kind[4 * c + d] == KELP and not seen[m.t_cell[4 * c + d]]]
        c, d = frontier[int(rng.integers(len(frontier)))]
        board.set((int(c) % board.w, int(c) // board.w, d), OPEN)


def _place_spawns(board: _Board, rng: np.random.Generator, count: int, keep: set) -> list[Spawn]:
    spawns: dict[tuple[int, int], Spawn] = {}
    for _ in range(count):
        for _attempt in range(200):
            x, y = int(rng.integers(board.w)), int(rng.integers(board.h))
            mx, my = mirror_xy(board.sym, board.w, board.h, x, y)
            if {(x, y), (mx, my)} & (keep | set(spawns)):
                continue
            period = int(rng.integers(MIN_PERIOD, MAX_PERIOD + 1))
            countdown = int(rng.integers(1, period + 1))
            spawns[(x, y)] = Spawn(x, y, period, countdown)
            spawns[(mx, my)] = Spawn(mx, my, period, countdown)
            break
    return sorted(spawns.values(), key=lambda s: (s.y, s.x))


def start_problems(m: LoongMap) -> list[str]:
    """What makes the starts unsafe: kelp beside a head, a blocked cell ahead, teams touching."""
    problems = []
    occupied = {c for s in m.dragons for c in s.body}
    for s in m.dragons:
        head = m.cell(*s.body[0])
        if any(m.t_kind[4 * head + d] == KELP for d in range(4)):
            problems.append(f"dragon {s.id}: kelp beside its head")
        c = head
        for _ in range(AHEAD):
            k = 4 * c + s.heading
            c = m.t_cell[k]
            if m.t_kind[k] == KELP or m.xy(c) in occupied:
                problems.append(f"dragon {s.id}: no free space ahead")
                break
    board = _Board(m.width, m.height, m.symmetry or "rot")
    t0 = [c for s in m.dragons if s.team == 0 for c in s.body]
    t1 = [c for s in m.dragons if s.team == 1 for c in s.body]
    if any(_torus_gap(board, a, b) < 2 for a in t0 for b in t1):
        problems.append("teams start adjacent")
    return problems


# -- map specs -----------------------------------------------------------------------------------
SPEC_KEYS = {"seed": int, "kelp": float, "portals": int, "spawns": int}


def parse_map_spec(spec: str) -> dict:
    """``gen:WxH:SYM:seed=S[,kelp=F][,portals=N][,spawns=N]`` -> generate_map keyword arguments."""
    parts = spec.split(":")
    if len(parts) != 4 or parts[0] != "gen":
        raise MapError(f"map spec {spec!r}: expected gen:WxH:SYM:seed=S[,kelp=F,portals=N,spawns=N]")
    try:
        width, height = (int(v) for v in parts[1].lower().split("x"))
    except ValueError:
        raise MapError(f"map spec {spec!r}: size {parts[1]!r} is not WxH") from None
    params = {}
    for item in parts[3].split(","):
        key, _, value = item.partition("=")
        if key not in SPEC_KEYS or key in params:
            raise MapError(f"map spec {spec!r}: unknown or repeated parameter {key!r}")
        try:
            params[key] = SPEC_KEYS[key](value)
        except ValueError:
            raise MapError(f"map spec {spec!r}: {key}={value!r} is not a number") from None
    if "seed" not in params:
        raise MapError(f"map spec {spec!r}: seed=S is required")
    return {"width": width, "height": height, "symmetry": parts[2], "seed": params["seed"],
            "kelp_density": params.get("kelp", DEFAULT_KELP),
            "portal_pairs": params.get("portals", DEFAULT_PORTALS),
            "spawn_tiles": params.get("spawns"), "name": spec}


def load_map_spec(spec: str) -> LoongMap:
    """A generated map (``gen:...``) or a JSON map file (``file:PATH`` or a path ending in .json)."""
    if spec.startswith("gen:"):
        return generate_map(**parse_map_spec(spec))
    path = spec[len("file:"):] if spec.startswith("file:") else spec
    if not path.endswith(".json") and not spec.startswith("file:"):
        raise MapError(f"map spec {spec!r}: expected gen:WxH:SYM:seed=S or a .json map file")
    if not Path(path).exists():
        raise MapError(f"map spec {spec!r}: no such file")
    return load_map(path)
