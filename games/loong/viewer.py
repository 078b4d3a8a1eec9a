"""A replay as one self-contained HTML page: canvas board, round slider, play/pause/step, turn table.

``write_viewer(replay_path, out_html, builds=store)`` first verifies the replay (``verify_replay``: re-simulated
in the reference engine, every header field compared, each side's bots rebuilt (built-in bots by name, builds by
id from the build store) and re-played from the seed, a changed winner, hash, name, seed or turn refused with the
field named; a replay some of whose checks cannot run is refused naming them unless ``partial=True``), then
embeds per-round deltas as JSON in the page (template: ``viewer_assets/viewer.html``; inline JS and CSS, no
network fetches).

Embedded data (``viewer_data``)::

    map      {w, h, name, edges: 4*W*H chars '.KP' (cell-major, sides N E S W),
              portals: [[x1, y1, side1, x2, y2, side2]], spawns: [[x, y, period, countdown at round 0]]}
    teams    {dragon id: team}; bots [team 0 name, team 1 name]; builds [team 0 build id or null, team 1 ...];
             seed; result {winner, reason, round}; unchecked: the checks that could not run (a partial
             verification, shown under the title; empty when every check ran)
    causes   the distinct death texts of the game (turns refer to them by index)
    bodies0  [[id, cells]] at round 0; pearls0 cells
    frames   one per round r = 1..R, the change from round r-1 to r:
             b   [[id, new cells, keep]]: body_r = new cells + body_{r-1}[:keep] (empty body: dead)
             pa / pr  pearls added / removed
             t   the round's turns, ``;``-joined ``id,action,points,sonar,death`` (``_turn_text``)
             rays [[sender, direction, head cell, cells entered, end]]: the page retraces the ray
                  through the map (``ray_cells``); end 0 ran out or came back, 1 stopped at kelp,
                  2 received by the dragon in the last cell

    review   (only with a review, ``write_viewer(..., review=...)``; docs/loong-review.md) {reviewers, top,
             decisions: {round: [decision, ...]}}, a decision {d: dragon, team, bot, v: win probability,
             vl: value logit, chosen: candidate index or null, n: candidates, rest: the prior of those not
             embedded, sim: simulations, played: action text, c: the ``top`` most likely candidates (and the
             chosen and the teacher's ones) as [index, action text, generator, option, prior, score, end cell,
             target cell, first move, depth, room, flags, visits, Q] (cells -1 unknown), teacher: null or
             {played, network, teacher: [candidate, option, Q, value lost]}}

Cells are strings of 2 characters per cell (base 64, ``cell = 64 * hi + lo``, ``cell = y * W + x``).
The page exposes ``window.viewer`` (round, setRound, play, stateChecksum, canvasChecksum; with a review
also selected, selectDragon, marks), honours ``?round=N`` (and ``?play=1``, ``?dragon=D``, and
``?keys=K,K*3``: key presses dispatched in order once the page is up, the browser test's keyboard) and
writes ``round=N state=... canvas=...`` (with a review ``dragon=D marks=M``) into ``#state``;
``state_checksum`` computes the same state checksum in Python. Keys: left/right arrows step rounds,
Home the first, space plays; with a review up/down arrows pick the previous/next reviewed dragon of the
round and ``c`` shows or hides the candidates on the board.
"""

from __future__ import annotations

import json
from pathlib import Path

from games.loong.actions import action_record
from games.loong.engine import Game
from games.loong.maps import EDGE_CHARS, KELP, LoongMap
from games.loong.replay import (
    Replay,
    ReplayBuilds,
    ReplayError,
    ReplayUnchecked,
    VerifiedReplay,
    load_replay,
    unchecked_message,
    verify_replay,
)

TEMPLATE = Path(__file__).with_name("viewer_assets") / "viewer.html"
PLACEHOLDER = "/*__REPLAY_DATA__*/"
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
RAY_NONE, RAY_KELP, RAY_RECEIVED = 0, 1, 2


def pack_cells(cells) -> str:
    """Cells (< 4096) as 2 base-64 characters each."""
    return "".join(B64[c >> 6] + B64[c & 63] for c in cells)


def unpack_cells(text: str) -> list[int]:
    return [B64.index(text[i]) * 64 + B64.index(text[i + 1]) for i in range(0, len(text), 2)]


def _fnv1a(text: str) -> str:
    h = 0x811C9DC5
    for ch in text.encode("ascii"):
        h = ((h ^ ch) * 16777619) & 0xFFFFFFFF
    return f"{h:08x}"


def state_text(bodies: dict[int, list[int]], pearls) -> str:
    """The canonical text the page hashes: ``id:c,c,...;`` per living dragon by id, ``|``, pearl cells."""
    parts = [f"{i}:{','.join(map(str, bodies[i]))};" for i in sorted(bodies) if bodies[i]]
    return "".join(parts) + "|" + ",".join(map(str, sorted(pearls)))


def state_checksum(game: Game) -> str:
    """FNV-1a (32 bit, hex) of the state text, identical to the page's ``viewer.stateChecksum``."""
    bodies = {i: list(d.body) for i, d in game.dragons.items() if d.alive}
    return _fnv1a(state_text(bodies, [c for c, p in enumerate(game.pearls) if p]))


def _map_json(m: LoongMap) -> dict:
    edges = "".join(EDGE_CHARS[k] for k in m.edges.reshape(-1).tolist())
    portals = [[*a, *b] for a, b in m.portals]
    spawns = [[s.x, s.y, s.period, s.countdown] for s in m.spawns]
    return {"w": m.width, "h": m.height, "name": m.name, "edges": edges, "portals": portals, "spawns": spawns}


def ray_cells(m: LoongMap, start: int, direction: int, count: int) -> list[int]:
    """The first ``count`` cells a ray from ``start`` enters (the page retraces rays the same way)."""
    cells, cell, heading = [], start, direction
    for _ in range(count):
        t, h, _kind = m.step(cell, heading)
        cell, heading = int(t), int(h)
        cells.append(cell)
    return cells


def _ray(game: Game, sender: int, direction: int) -> list:
    """One ray just sent, traced as the engine's sonar does: [sender, dir, start cell, cells, end]."""
    m = game.map
    head = game.dragons[sender].body[0]
    count, end = 0, RAY_NONE
    cell, heading = head, direction
    for _ in range(max(m.width, m.height)):
        t, h, kind = m.step(cell, heading)
        if kind == KELP:
            end = RAY_KELP
            break
        cell, heading = int(t), int(h)
        if cell == head:
            break
        count += 1
        if game.occ[cell] != -1:
            end = RAY_RECEIVED
            break
    return [sender, direction, pack_cells([head]), count, end]


def pack_u64(v: int) -> str:
    """An unsigned 64-bit value as 11 base-64 characters, most significant first."""
    return "".join(B64[(v >> (6 * i)) & 63] for i in range(10, -1, -1))


def _turn_text(actor: int, action, sonar, points: int, death: int) -> str:
    """``id,action,points,sonar,death`` with action ``m<d>``, ``s<d..d>``, ``p<k>`` (split) or ``f``
    (forfeit), sonar ``""`` or four ``.``-joined values (``pack_u64``, empty = none sent), death an
    index into ``causes`` or ``""``."""
    kind, args = action_record(action)
    code = {"move": "m", "sprint": "s", "split": "p", "forfeit": "f"}[kind] + "".join(map(str, args))
    if kind == "split":
        code = f"p{args[0]}"
    son = "" if sonar is None else ".".join("" if v is None else pack_u64(v) for v in sonar)
    return f"{actor},{code},{points},{son},{'' if death < 0 else death}"


def _body_delta(old: list[int], new: list[int]) -> tuple[str, int] | None:
    """(new head cells, segments of the old body kept), or None when unchanged."""
    if old == new:
        return None
    if old and new and old[0] in new:
        p = new.index(old[0])
        keep = len(new) - p
        if new[p:] == old[:keep]:
            return pack_cells(new[:p]), keep
    return pack_cells(new), 0


DIRS = "NESW"
REVIEW_TOP = 12  # candidates of a decision embedded in the page, by prior (the chosen and the teacher's as well)


def _action_text(kind: str, args) -> str:
    if kind == "move":
        return f"move {DIRS[args[0]]}"
    if kind == "sprint":
        return "sprint " + "".join(DIRS[a] for a in args)
    if kind == "split":
        return f"split {args[0]}"
    return "forfeit"


def _cell(c) -> int:
    return -1 if c is None else int(c)


def _review_decision(d: dict, top: int) -> dict:
    """One decision of a review (plain dict, ops.loong.review's format) as the page embeds it."""
    cands = d["candidates"]
    order = sorted(range(len(cands)), key=lambda i: (-cands[i]["prior"], i))
    keep = set(order[:top])
    teacher = d.get("teacher")
    wanted = [d.get("chosen")] + ([teacher[k]["candidate"] for k in ("played", "network", "teacher")] if teacher
                                  else [])
    keep |= {i for i in wanted if i is not None}
    shown = [i for i in order if i in keep]
    rows = []
    for i in shown:
        c = cands[i]
        rows.append([i, _action_text(c["kind"], c["args"]), c["generator"], c["option"], c["prior"], c["score"],
                     _cell(c["end"]), _cell(c["target"]), -1 if c["first"] is None else c["first"], c["depth"],
                     c["room"], " ".join(c["flags"]), c.get("visits"), c.get("q")])
    out = {"d": d["dragon"], "team": d["team"], "bot": d["bot"], "v": d["value"], "vl": d["value_logit"],
           "chosen": d["chosen"], "n": len(cands), "rest": sum(cands[i]["prior"] for i in range(len(cands))
                                                              if i not in keep),
           "sim": d.get("simulations"), "played": _action_text(d["played"]["kind"], d["played"]["args"]), "c": rows,
           "teacher": None}
    if teacher:
        out["teacher"] = {k: [teacher[k]["candidate"], teacher[k]["option"], teacher[k].get("q"),
                              teacher[k].get("value_lost")] for k in ("played", "network", "teacher")}
    return out


def review_data(review: dict, turns: set[tuple[int, int]], where: str, top: int = REVIEW_TOP) -> dict:
    """The page's ``review`` entry from a review's plain data ({header, decisions}); a decision that is not a turn
    of the replay (``turns``: (round, dragon)) is refused (ReplayError naming the review)."""
    rounds: dict[str, list] = {}
    for d in review["decisions"]:
        if (d["round"], d["dragon"]) not in turns:
            raise ReplayError(f"{where}: round {d['round']} dragon {d['dragon']}: the review's decision is not a "
                              "turn of this replay")
        rounds.setdefault(str(d["round"]), []).append(_review_decision(d, top))
    for rows in rounds.values():
        rows.sort(key=lambda r: r["d"])
    return {"reviewers": review["header"].get("reviewers", {}), "top": top, "decisions": rounds}


def viewer_data(replay: Replay, review: dict | None = None, review_name: str = "review") -> dict:
    """Re-simulate ``replay`` and build the page's data (format in the module docstring); ``review``: the plain
    data of a checked review (ops.loong.review.viewer_review), embedded for the decision panel."""
    h = replay.header
    game = Game(replay.map, replay.seed, int(h["max_rounds"]))
    hashes = h["hashes"]
    if not hashes or game.state_hash() != hashes[0]:
        raise ReplayError(f"{replay.path}: the starting state hash differs")
    teams = {i: d.team for i, d in game.dragons.items()}
    bodies = {i: list(d.body) for i, d in game.dragons.items()}
    pearls = {c for c, p in enumerate(game.pearls) if p}
    data = {
        "version": 1, "map": _map_json(replay.map), "bots": list(h["bots"]), "builds": list(h["builds"]),
        "seed": str(replay.seed), "unchecked": [],
        "result": {k: h["result"][k] for k in ("winner", "reason", "round")},
        "bodies0": [[i, pack_cells(b)] for i, b in sorted(bodies.items())],
        "pearls0": pack_cells(sorted(pearls)), "frames": [],
    }
    causes: dict[str, int] = {}
    turns = iter(replay.turns)
    while not game.over:
        game.begin_round()
        rows, rays = [], []
        while (actor := game.next_actor()) is not None:
            t = next(turns, None)
            if t is None or (t.round, t.dragon_id) != (game.round, actor):
                raise ReplayError(f"{replay.path}: turns do not follow the game at round {game.round}")
            outcome = game.turn(actor, t.action, t.sonar)
            if outcome.born is not None:
                teams[outcome.born] = game.dragons[outcome.born].team
            deaths = "; ".join(f"{i}: {cause}" for i, cause in outcome.deaths)
            if deaths and deaths not in causes:
                causes[deaths] = len(causes)
            rows.append(_turn_text(actor, t.action, t.sonar, t.points_used, causes.get(deaths, -1)))
            if t.sonar is not None and game.dragons[actor].alive:
                rays += [_ray(game, actor, d) for d, v in enumerate(t.sonar) if v is not None]
        game.end_round()
        if game.round >= len(hashes) or game.state_hash() != hashes[game.round]:
            raise ReplayError(f"{replay.path}: round {game.round}: state hash differs from the header")
        frame = {"b": [], "pa": "", "pr": "", "t": ";".join(rows), "rays": rays}
        now = {i: list(d.body) for i, d in game.dragons.items() if d.alive}
        for i in sorted(set(bodies) | set(now)):
            delta = _body_delta(bodies.get(i, []), now.get(i, []))
            if delta is not None:
                frame["b"].append([i, *delta])
        new_pearls = {c for c, p in enumerate(game.pearls) if p}
        frame["pa"] = pack_cells(sorted(new_pearls - pearls))
        frame["pr"] = pack_cells(sorted(pearls - new_pearls))
        bodies, pearls = now, new_pearls
        data["frames"].append(frame)
    data["teams"] = {str(i): t for i, t in sorted(teams.items())}
    data["causes"] = list(causes)
    if review is not None:
        data["review"] = review_data(review, {(t.round, t.dragon_id) for t in replay.turns}, review_name)
    return data


def render_html(data: dict) -> str:
    """The page with ``data`` embedded (``</`` escaped so the JSON cannot close its script tag)."""
    text = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return TEMPLATE.read_text().replace(PLACEHOLDER, text)


def write_viewer(replay_path: str | Path, out_html: str | Path, review: dict | None = None,
                 review_name: str = "review", *, builds: ReplayBuilds | None = None, partial: bool = False) -> Path:
    """Verify the replay at ``replay_path`` (ReplayError naming the field that differs; builds loaded by id from
    ``builds``), then write its self-contained viewer page, with ``review``'s decision panel when given (plain
    data, checked by the caller: ops.loong.review.load_review); returns the page's path. A replay some of whose
    checks could not run (a side neither built-in nor in ``builds``) is refused naming them, unless ``partial``:
    then the page says what was not checked."""
    return write_verified_viewer(replay_path, out_html, review, review_name, builds=builds, partial=partial)[0]


def write_verified_viewer(replay_path: str | Path, out_html: str | Path, review: dict | None = None,
                          review_name: str = "review", *, builds: ReplayBuilds | None = None,
                          partial: bool = False) -> tuple[Path, VerifiedReplay]:
    """``write_viewer``, also returning the verification (what was and was not checked)."""
    replay = load_replay(replay_path)
    verified = verify_replay(replay, builds=builds)
    if verified.unchecked and not partial:
        raise ReplayUnchecked(unchecked_message(verified))
    data = viewer_data(replay, review, review_name)
    data["unchecked"] = list(verified.unchecked)
    out = Path(out_html)
    out.write_text(render_html(data))
    return out, verified


__all__ = ["REVIEW_TOP", "pack_cells", "ray_cells", "render_html", "review_data", "state_checksum", "unpack_cells",
           "viewer_data", "write_verified_viewer", "write_viewer"]
