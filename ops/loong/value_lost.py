"""The value-lost report of a cycle's targets (issue 12 item 5; docs/loong-value-lost.md): every departure of the
student from the teacher, the value it lost, and its cause, so the next cycle's work goes where the value is.

    table = load_targets(targets_dir, columns=COLUMNS)   # ops.loong.teacher_targets (schema version 4)
    causes = classify(table)                              # one CAUSES code a row
    doc = report(table, points=generator_points(20, 30, 1, 0))
    top = top_departures(table, 20)                       # the review's entry points
    write_pages(top, targets_dir, out_dir)                # each one's ``page``: its game's viewer page in out/pages
    write_report(table, out_dir, targets=targets_dir)     # report.json, report.md, value_lost.png, top_departures.json

A **departure** is a searched row (``value_lost`` finite) whose teacher action is not the student's (the two
records' actions differ as ``record_rows`` groups them). Exactly one cause a departure, in this order:

1. **candidate**: the network never scored the teacher's action: no record holds it (``teacher_choice`` -1: the
   native teacher's own listing found it) or none of its records has a trunk tap (``taps`` 255);
2. **information**: searched on the sight state (enemies out of the acting dragon's window taken out) the teacher
   no longer prefers its action (``margin_sight <= 0``); split by ``margin_team`` (a teammate's view supports it);
3. **ranking**: a candidate the network scored, still preferred on the dragon's own information, scored lower;

and **untested** where ``margin_sight`` is NaN (the test was off): neither 2 nor 3 can be told. Which generator
proposes the teacher's action (harvest, escape, or only the primitive list) is reported apart (``generators``,
``candidate_gaps.by_generator``): the network scores every primitive record, so coverage by a generator is not a
candidate gap.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from bot.core_candidates import (
    GEN_ESCAPE,
    GEN_HARVEST,
    GEN_PRIMITIVE,
    KIND_MOVE,
    KIND_SPLIT,
    KIND_SPRINT,
    RECORD,
    parse_records,
    sprint_directions,
)
from bot.core_inputs import NO_TAP
from gpu.loong_kickstart import Ragged
from ops.loong.teacher_targets import TargetsError, load_targets

CAUSES = ("none", "candidate", "information", "ranking", "untested")
NONE, CANDIDATE, INFORMATION, RANKING, UNTESTED = range(len(CAUSES))
GENERATORS = {GEN_HARVEST: "harvest", GEN_ESCAPE: "escape", GEN_PRIMITIVE: "primitive"}  # the report's order
KINDS = {KIND_MOVE: "move", KIND_SPRINT: "sprint", KIND_SPLIT: "split"}
DIRS = "NESW"
# the columns the report reads (load_targets(path, columns=COLUMNS) keeps the rest on disk)
COLUMNS = ["game", "dragon", "team", "round", "width", "action", "crop", "scalars", "candidates", "taps", "chosen",
           "teacher_choice", "value_lost", "margin_full", "margin_sight", "margin_team"]
# the crop (docs/expert-core-planes.md): 17 x 17 x 56 HWC, the head at (8, 8); the 7 x 7 window is rows and
# columns 5..11 (the crop turns with the heading, and the window is square around the head, so it is the same cells)
CROP, CROP_CH, WINDOW = 17, 56, slice(5, 12)
CH_PEARL_SEEN, CH_ENEMY_SEG = 19, 25  # pearl as last seen (127 / 0), an enemy's segment as last seen (seg)
SCALAR_QUEEN = 1  # is queen: 127 / 0
FILES = ("report.json", "report.md", "value_lost.png", "top_departures.json")
PAGES = "pages"  # the report folder's viewer pages of the games its top departures are in (``write_pages``)
POINTS_PAIRING = ("foil", "foil")  # the recorded games of generator_points


class ReportError(ValueError):
    """Bad input to the report; one line naming the file, field or value."""


# -- per row ---------------------------------------------------------------------------------------------------------
def window_situation(crop: bytes) -> tuple[bool, bool]:
    """(an enemy segment in the dragon's 7 x 7 window, a pearl in it) from a row's crop: the window is the dragon's
    own sight this turn, so "as last seen" there is now (tested against the engine's observation)."""
    c = np.frombuffer(crop, np.uint8).reshape(CROP, CROP, CROP_CH)[WINDOW, WINDOW]
    return bool((c[..., CH_ENEMY_SEG] > 0).any()), bool((c[..., CH_PEARL_SEEN] > 0).any())


def is_queen(scalars: bytes) -> bool:
    return scalars[SCALAR_QUEEN] == 127


def record_text(record) -> str:
    """``move E``, ``sprint E,E,S``, ``split 3`` (the positions library's move syntax)."""
    kind, arg = int(record["kind"]), int(record["arg"])
    if kind == KIND_MOVE:
        return f"move {DIRS[arg]}"
    if kind == KIND_SPRINT:
        return "sprint " + ",".join(DIRS[d] for d in sprint_directions(record))
    return f"split {arg}"


def generator_names(mask: int) -> list[str]:
    """The generators of a bit mask (bit ``1 << generator``), in the report's order."""
    return [name for g, name in GENERATORS.items() if mask >> g & 1]


def option_label(mask: int) -> str:
    """The non-primitive generators of an action (``harvest+escape``), ``primitive`` when none."""
    names = [n for n in generator_names(mask) if n != "primitive"]
    return "+".join(names) if names else "primitive"


@dataclass
class Facts:
    """What the report reads of every row: its cause, and each side's action."""

    cause: np.ndarray  # int8 [rows], CAUSES
    searched: np.ndarray  # bool: value_lost finite
    departure: np.ndarray  # bool
    value_lost: np.ndarray  # float64 (NaN: unsearched)
    margins: dict[str, np.ndarray]  # margin_full, margin_sight, margin_team (float64, NaN: not tested)
    student_gens: np.ndarray  # int [rows]: bit 1 << g for every generator g with a record of the student's action
    teacher_gens: np.ndarray  # the same for the teacher's action
    teacher_kind: np.ndarray  # int: the teacher's action's kind (-1: no record)
    teacher_scored: np.ndarray  # bool: a record of the teacher's action has a trunk tap (the network scored it)
    student_text: list[str]
    teacher_text: list[str]


def _column(table: pa.Table, name: str) -> pa.ChunkedArray:
    if name not in table.column_names:
        raise ReportError(f"targets table: column {name!r} missing")
    return table[name]


def _floats(table: pa.Table, name: str) -> np.ndarray:
    return _column(table, name).to_numpy(zero_copy_only=False).astype(np.float64)


def action_keys(records: np.ndarray) -> np.ndarray:
    """``[k, 4]`` uint64: one key per 48-byte record (``records`` uint8 [k, 48]), equal exactly when two records
    are the same action as ``record_rows`` groups them: kind and arg, and a sprint's first ``arg`` directions."""
    kind = records[:, 0].astype(np.uint64)
    arg = records[:, 2].astype(np.uint64) | records[:, 3].astype(np.uint64) << np.uint64(8)
    dirs = np.ascontiguousarray(records[:, 20:36]).view("<u8")  # [k, 2]: steps 0-31, 32-63
    bits = np.where(kind == KIND_SPRINT, np.minimum(2 * arg, 128), 0).astype(np.int64)
    lo, hi = np.minimum(bits, 64), np.clip(bits - 64, 0, 64)

    def mask(b: np.ndarray) -> np.ndarray:
        full = b >= 64
        return np.where(full, np.uint64(0xFFFFFFFFFFFFFFFF),
                        (np.uint64(1) << np.where(full, 0, b).astype(np.uint64)) - np.uint64(1))

    return np.stack([kind, arg, dirs[:, 0] & mask(lo), dirs[:, 1] & mask(hi)], axis=1)


def analyse(table: pa.Table) -> Facts:
    """Every row's facts (``Facts``); a row whose choice is no record raises ReportError naming it."""
    n = table.num_rows
    chosen = _column(table, "chosen").to_numpy(zero_copy_only=False).astype(np.int64)
    teacher = _column(table, "teacher_choice").to_numpy(zero_copy_only=False).astype(np.int64)
    lost = _floats(table, "value_lost")
    margins = {k: _floats(table, k) for k in ("margin_full", "margin_sight", "margin_team")}
    try:  # every row's bytes end to end, no Python object a row
        cands, taps = Ragged.of(_column(table, "candidates")), Ragged.of(_column(table, "taps"))
    except ValueError as e:
        raise ReportError(f"targets table: {e}") from None
    cands, cand_at, taps, tap_at = cands.values, cands.offsets, taps.values, taps.offsets
    searched = np.isfinite(lost)
    departure = np.zeros(n, bool)
    student_gens, teacher_gens = np.zeros(n, np.int64), np.zeros(n, np.int64)
    teacher_kind = np.full(n, -1, np.int64)
    teacher_scored = np.zeros(n, bool)
    student_text, teacher_text = [""] * n, [""] * n
    for i in range(n):
        size = int(cand_at[i + 1] - cand_at[i])
        if size % RECORD:
            raise ReportError(f"targets row {i}: candidate records: {size} bytes, not a multiple of {RECORD}")
        k = size // RECORD
        if not k:
            continue
        raw = cands[cand_at[i]:cand_at[i + 1]].reshape(k, RECORD)
        keys = action_keys(raw)
        bits = np.left_shift(1, raw[:, 1].astype(np.int64))
        same = {}
        for who, gens, text, at in (("chosen", student_gens, student_text, chosen[i]),
                                    ("teacher_choice", teacher_gens, teacher_text, teacher[i])):
            if at < 0:
                continue
            if at >= k:
                raise ReportError(f"targets row {i}: {who} {at} is past its {k} candidate records")
            same[who] = (keys == keys[at]).all(axis=1)
            gens[i] = np.bitwise_or.reduce(bits[same[who]])
            text[i] = record_text(parse_records(raw[at].tobytes())[0])
        if teacher[i] >= 0:
            teacher_kind[i] = int(raw[teacher[i], 0])
            tapped = taps[tap_at[i]:tap_at[i + 1]]
            if len(tapped) != k:
                raise ReportError(f"targets row {i}: taps holds {len(tapped)} bytes for {k} records")
            teacher_scored[i] = bool((tapped[same["teacher_choice"]] != NO_TAP).any())
        departure[i] = searched[i] and chosen[i] >= 0 and (teacher[i] < 0 or not same["chosen"][teacher[i]])
        if teacher[i] < 0:
            teacher_text[i] = "(no candidate)"
    cause = np.full(n, NONE, np.int8)
    sight = margins["margin_sight"]
    cause[departure & ~teacher_scored] = CANDIDATE
    rest = departure & teacher_scored
    cause[rest & np.isnan(sight)] = UNTESTED
    with np.errstate(invalid="ignore"):
        cause[rest & (sight <= 0)] = INFORMATION
        cause[rest & (sight > 0)] = RANKING
    return Facts(cause, searched, departure, lost, margins, student_gens, teacher_gens, teacher_kind, teacher_scored,
                 student_text, teacher_text)


def classify(table: pa.Table) -> np.ndarray:
    """One ``CAUSES`` code a row (int8): none (no departure, or unsearched), candidate, information, ranking,
    untested."""
    return analyse(table).cause


# -- the report ------------------------------------------------------------------------------------------------------
def _num(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _share(a: float, b: float) -> float | None:
    return _num(a / b) if b else None


def _tally(mask: np.ndarray, lost: np.ndarray, total: float, out_of: int) -> dict:
    v = float(lost[mask].sum()) if mask.any() else 0.0
    k = int(mask.sum())
    return {"count": k, "share": _share(k, out_of), "value_lost": v, "mean": _share(v, k),
            "share_of_value_lost": _share(v, total)}


def report(table: pa.Table, points: dict | None = None, facts: Facts | None = None) -> dict:
    """The cycle's value-lost report (JSON-able; docs/loong-value-lost.md): decisions, departures, value lost by
    cause, the information split and the test's noise, candidate gaps by situation and by generator, each
    generator's choice rates, variant loss and (``points``: ``generator_points``) its cost in judge points."""
    f = analyse(table) if facts is None else facts
    n, dep = table.num_rows, f.departure
    lost = np.where(f.searched, f.value_lost, 0.0)
    total = float(lost[dep].sum())
    full, sight, team = (f.margins[k] for k in ("margin_full", "margin_sight", "margin_team"))
    nd = int(dep.sum())
    doc: dict = {
        "decisions": n, "searched": int(f.searched.sum()), "departures": nd, "departure_rate": _share(nd, n),
        "value_lost": {"total": total, "mean_per_departure": _share(total, nd), "mean_per_decision": _share(total, n),
                       "negative_departures": int((dep & (lost < 0)).sum())},
        "causes": {c: _tally(f.cause == code, lost, total, nd) for code, c in enumerate(CAUSES) if code != NONE},
    }
    info = f.cause == INFORMATION
    with np.errstate(invalid="ignore"):
        doc["information"] = {
            "teammate_knew": _tally(info & (team > 0), lost, total, int(info.sum())),
            "beyond_any_teammate": _tally(info & (team <= 0), lost, total, int(info.sum())),
            "team_untested": _tally(info & np.isnan(team), lost, total, int(info.sum())),
            "full_disagrees": int((info & (full <= 0)).sum()),
        }
        tested = dep & np.isfinite(full)
        doc["noise"] = {"tested": int(tested.sum()), "full_disagrees": int((tested & (full <= 0)).sum()),
                        "share": _share(int((tested & (full <= 0)).sum()), int(tested.sum()))}
    doc["candidate_gaps"] = {"by_situation": _situations(table, f, lost),
                             "by_generator": _by_generator(f, lost)}
    gens = {}
    only = ~(1 << GEN_PRIMITIVE)
    for g, name in GENERATORS.items():
        if g == GEN_PRIMITIVE:  # every action has a primitive record: "primitive" is an action no generator proposes
            s, t = (f.student_gens & only) == 0, (f.teacher_gens & only) == 0
        else:
            s, t = (f.student_gens >> g & 1) == 1, (f.teacher_gens >> g & 1) == 1
        variants = dep & s & t
        gens[name] = {"student_rate": _share(int(s.sum()), n), "teacher_rate": _share(int(t.sum()), n),
                      "student_choices": int(s.sum()), "teacher_choices": int(t.sum()),
                      "variants": {"count": int(variants.sum()), "value_lost": float(lost[variants].sum())},
                      "points": (points or {}).get(name)}
    doc["generators"] = gens
    if points is not None:
        doc["points"] = points
    return doc


SITUATIONS = ("teacher_kind", "role", "enemy_in_window", "pearl_in_window")


def situations(table: pa.Table, rows: Sequence[int], facts: Facts) -> dict[str, list[str]]:
    """Each situation's value for the given rows: the teacher's action kind, queen or worker (scalar 1), an enemy
    segment in the dragon's window, a pearl in it (the crop's window, ``window_situation``)."""
    crop, scalars = _column(table, "crop"), _column(table, "scalars")
    out: dict[str, list[str]] = {s: [] for s in SITUATIONS}
    for i in rows:
        enemy, pearl = window_situation(crop[i].as_py())
        out["teacher_kind"].append(KINDS.get(int(facts.teacher_kind[i]), "none"))
        out["role"].append("queen" if is_queen(scalars[i].as_py()) else "worker")
        out["enemy_in_window"].append("yes" if enemy else "no")
        out["pearl_in_window"].append("yes" if pearl else "no")
    return out


def _situations(table: pa.Table, f: Facts, lost: np.ndarray) -> dict:
    """Per situation and value: the candidate gaps (count, value lost), and the departures there (the rate)."""
    rows = np.flatnonzero(f.departure)
    sit = situations(table, rows.tolist(), f)
    gap = f.cause[rows] == CANDIDATE
    out = {}
    for s, values in sit.items():
        v = np.array(values, dtype=object)
        out[s] = {}
        for value in sorted(set(values)):
            here = v == value
            g = here & gap
            out[s][value] = {"candidate_gaps": int(g.sum()), "value_lost": float(lost[rows[g]].sum()),
                             "share_of_gap_value": _share(float(lost[rows[g]].sum()),
                                                          float(lost[rows[gap]].sum())),
                             "departures": int(here.sum()), "gap_rate": _share(int(g.sum()), int(here.sum()))}
    return out


def _by_generator(f: Facts, lost: np.ndarray) -> dict:
    """Candidate gaps by the generator(s) of the student's chosen action (``primitive`` when none)."""
    gap = f.cause == CANDIDATE
    labels = np.array([option_label(int(m)) for m in f.student_gens], dtype=object)
    out = {}
    for label in sorted(set(labels[gap].tolist())):
        m = gap & (labels == label)
        out[label] = {"count": int(m.sum()), "value_lost": float(lost[m].sum()),
                      "share_of_gap_value": _share(float(lost[m].sum()), float(lost[gap].sum()))}
    return out


def top_departures(table: pa.Table, k: int, facts: Facts | None = None) -> list[dict]:
    """The ``k`` departures losing the most value (ties: table order): where (game, dragon, team, round), the
    cause, the value lost, the margins and both actions as text with their generators."""
    f = analyse(table) if facts is None else facts
    rows = np.flatnonzero(f.departure)
    rows = rows[np.argsort(-f.value_lost[rows], kind="stable")][:max(int(k), 0)]
    cols = {c: _column(table, c).to_pylist() for c in ("game", "dragon", "team", "round")}
    return [{**{c: cols[c][i] for c in cols}, "cause": CAUSES[f.cause[i]], "value_lost": float(f.value_lost[i]),
             "student": f.student_text[i], "student_generators": generator_names(int(f.student_gens[i])),
             "teacher": f.teacher_text[i], "teacher_generators": generator_names(int(f.teacher_gens[i])),
             **{m: _num(v[i]) for m, v in f.margins.items()}} for i in rows.tolist()]


# -- the top departures' viewer pages -----------------------------------------------------------------------------
def game_replays(targets) -> dict[int, Path]:
    """Each game's replay header in a targets folder (or the folder of one of its shards), as its ``games.json``
    names them (``replay``, written by ``ops.loong.teacher_targets.run`` with ``replays`` on); {} when there is no
    games.json or it names no replay."""
    folder = Path(targets)
    folder = folder if folder.is_dir() else folder.parent
    path = folder / "games.json"
    if not path.is_file():
        return {}
    try:
        games = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: not JSON ({e})") from None
    if not isinstance(games, list):
        raise ReportError(f"{path}: expected a list of games, got {type(games).__name__}")
    out = {}
    for i, g in enumerate(games):
        number = g.get("game") if isinstance(g, dict) else None
        if not isinstance(number, int) or isinstance(number, bool):
            raise ReportError(f"{path}: entry {i}: game: expected a game number")
        rel = g.get("replay")
        if rel is None:
            continue
        if not isinstance(rel, str) or not rel.endswith(".json"):
            raise ReportError(f"{path}: entry {i}: replay: expected a replay header's path, got {json.dumps(rel)[:60]}")
        out[number] = folder / rel
    return out


def _page(replay_json: Path, pages: Path, decisions: Sequence[tuple[int, int]]) -> Path:
    """The page of the game at ``replay_json`` in ``pages``: the targets' own page copied when it wrote one, else
    written from the replay and its review (verified, the review checked against it; every decision in
    ``decisions``, (round, dragon), must be in the review)."""
    from games.loong.replay import load_replay
    from games.loong.viewer import write_viewer
    from ops.loong.review import check_against_replay, load_review, review_path, viewer_review

    dest = pages / replay_json.with_suffix(".html").name
    own = replay_json.with_suffix(".html")
    if own.is_file():
        shutil.copyfile(own, dest)
        return dest
    if not replay_json.is_file():
        raise ReportError(f"{replay_json}: the replay games.json names is missing")
    try:
        review = load_review(review_path(replay_json))
        replay = load_replay(replay_json)
        check_against_replay(review, replay)
        for r, d in decisions:
            if review.at(r, d) is None:
                raise ReportError(f"{review.path}: no decision of dragon {d} at round {r} (a top departure's)")
        write_viewer(replay_json, dest, viewer_review(review), partial=True)  # its players are not rebuilt by name
    except ValueError as e:  # ReplayError, ReviewError: one line naming the file
        raise ReportError(str(e)) from None
    return dest


def write_pages(top: Sequence[dict], targets, out) -> list[Path]:
    """Give each top departure its ``page``: ``pages/<stem>.html?round=R&dragon=D``, relative to the report folder
    ``out``, where ``out/pages/<stem>.html`` is its game's viewer page (one a game, ``_page``); None where the
    targets hold no replay of the game. Returns the pages written."""
    replays = game_replays(targets)
    pages = Path(out) / PAGES
    if pages.is_dir():
        for old in pages.glob("*.html"):
            old.unlink()
    games: dict[int, list[tuple[int, int]]] = {}
    for t in top:
        if t["game"] in replays:
            games.setdefault(t["game"], []).append((t["round"], t["dragon"]))
    if games:
        pages.mkdir(parents=True, exist_ok=True)
    written = {g: _page(replays[g], pages, at) for g, at in games.items()}
    for t in top:
        p = written.get(t["game"])
        t["page"] = None if p is None else f"{PAGES}/{p.name}?round={t['round']}&dragon={t['dragon']}"
    return list(written.values())


# -- generators' cost in judge points --------------------------------------------------------------------------------
def generator_points(size: int = 20, rounds: int = 30, games: int = 1, seed: int = 0, *,
                     cache: Path | None = None) -> dict:
    """Each generator's marginal judge points a turn: on every dragon-turn of ``games`` recorded foil-against-foil
    games (``ops.loong.dataset.play_recorded``, size x size, ``rounds`` rounds, symmetries lr, tb, rot in turn,
    seeds ``seed + g``), points of ``core_candidates`` asked for every generator less points asked for all but G,
    on the candidates' metered wasm32 build (bot/core/candidates_wasm.c) in a Store of the judge's engine
    (``bot.judge.make_engine``, 1 point an operator). Median, p99, mean and max over the turns for harvest, escape,
    primitive, and harvest+escape together (the shared breadth-first search from the head is in that pair's
    figure, in neither one alone)."""
    import wasmtime

    from bot.core_candidates import (
        REQ_ALL,
        REQ_ESCAPE,
        REQ_HARVEST,
        REQ_PRIMITIVE,
        SURVIVAL_UNITS,
        build_candidates_wasm,
    )
    from bot.judge import make_engine
    from ops.loong.dataset import play_recorded

    for name, v, lo in (("size", size, 10), ("rounds", rounds, 1), ("games", games, 1), ("seed", seed, 0)):
        if not isinstance(v, int) or isinstance(v, bool) or v < lo or (name == "size" and v > 64):
            bound = "10..64" if name == "size" else f">= {lo}"
            raise ReportError(f"generator_points: {name} must be an integer {bound}, got {v!r}")
    wasm = build_candidates_wasm(cache=cache)
    engine = make_engine()
    module = wasmtime.Module.from_file(engine, str(wasm))
    without = {"harvest": REQ_ALL & ~REQ_HARVEST, "escape": REQ_ALL & ~REQ_ESCAPE,
               "primitive": REQ_ALL & ~REQ_PRIMITIVE, "harvest+escape": REQ_PRIMITIVE}
    marginal: dict[str, list[int]] = {k: [] for k in without}
    full: list[int] = []
    for g in range(games):
        turns, _, _ = play_recorded(size, ("lr", "tb", "rot")[g % 3], *POINTS_PAIRING, seed + g, rounds)
        for track in turns.values():
            store = wasmtime.Store(engine)
            store.set_fuel(10**13)  # far past any call: the meter counts, it never stops
            ex = wasmtime.Instance(store, module, []).exports(store)
            mem, buf = ex["memory"], ex["ccore_obs_buffer"](store)

            def points(request: int, n: int, ex=ex, store=store) -> int:
                before = store.get_fuel()
                ex["ccore_candidates"](store, n, request, SURVIVAL_UNITS)
                return before - store.get_fuel()

            ex["ccore_reset"](store)
            for turn in track:
                mem.write(store, turn.obs, buf)
                if ex["ccore_update"](store, len(turn.obs)) != 0:
                    continue  # an observation the core refuses: no candidates
                p = points(REQ_ALL, len(turn.obs))
                full.append(p)
                for k, req in without.items():
                    marginal[k].append(p - points(req, len(turn.obs)))
    if not full:
        raise ReportError("generator_points: the recorded games gave no dragon-turn")

    def stats(v: list[int]) -> dict:
        a = np.asarray(v, np.float64)
        return {"median": float(np.median(a)), "p99": float(np.percentile(a, 99)), "mean": float(a.mean()),
                "max": float(a.max())}

    return {"turns": len(full), "size": size, "rounds": rounds, "games": games, "seed": seed,
            "pairing": "-".join(POINTS_PAIRING), "all": stats(full), **{k: stats(v) for k, v in marginal.items()}}


# -- writing ---------------------------------------------------------------------------------------------------------
def _f(x, fmt: str = "{:.3f}") -> str:
    return "-" if x is None else fmt.format(x)


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def render_markdown(doc: dict, top: Sequence[dict] = ()) -> str:
    """The report as Markdown tables (and the top departures when given)."""
    v = doc["value_lost"]
    lines = ["# Value lost", "",
             f"{doc['decisions']} decisions, {doc['searched']} searched, **{doc['departures']} departures** "
             f"({_pct(doc['departure_rate'])}); value lost over departures **{_f(v['total'])}** (mean "
             f"{_f(v['mean_per_departure'])} a departure, {_f(v['mean_per_decision'])} a decision; "
             f"{v['negative_departures']} departures with a negative value lost count against their cause).", "",
             "## By cause", "", "| cause | departures | share | value lost | mean | share of value lost |",
             "|---|---:|---:|---:|---:|---:|"]
    for c, t in doc["causes"].items():
        lines.append(f"| {c} | {t['count']} | {_pct(t['share'])} | {_f(t['value_lost'])} | {_f(t['mean'])} | "
                     f"{_pct(t['share_of_value_lost'])} |")
    info, noise = doc["information"], doc["noise"]
    lines += ["", "## Information gaps", "", "| split | departures | value lost |", "|---|---:|---:|"]
    for k in ("teammate_knew", "beyond_any_teammate", "team_untested"):
        lines.append(f"| {k.replace('_', ' ')} | {info[k]['count']} | {_f(info[k]['value_lost'])} |")
    lines += ["", f"Noise of the test: {noise['full_disagrees']} of {noise['tested']} tested departures "
                  f"({_pct(noise['share'])}) have margin_full <= 0 (the two-action search on the true state "
                  f"disagrees with the main one); {info['full_disagrees']} of the information gaps are among them.",
              "", "## Candidate gaps by situation", "",
              "| situation | value | candidate gaps | value lost | share of gap value | departures there | gap rate |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for s, values in doc["candidate_gaps"]["by_situation"].items():
        for value, t in values.items():
            lines.append(f"| {s.replace('_', ' ')} | {value} | {t['candidate_gaps']} | {_f(t['value_lost'])} | "
                         f"{_pct(t['share_of_gap_value'])} | {t['departures']} | {_pct(t['gap_rate'])} |")
    lines += ["", "## Candidate gaps by the student's generator", "",
              "| student's action from | candidate gaps | value lost | share of gap value |", "|---|---:|---:|---:|"]
    for label, t in doc["candidate_gaps"]["by_generator"].items():
        lines.append(f"| {label} | {t['count']} | {_f(t['value_lost'])} | {_pct(t['share_of_gap_value'])} |")
    lines += ["", "## Generators", "",
              "| generator | student's choice | teacher's choice | variant departures | variant value lost | "
              "points a turn, median | p99 |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, g in doc["generators"].items():
        p = g["points"] or {}
        label = "primitive only (no generator)" if name == "primitive" else name
        lines.append(f"| {label} | {_pct(g['student_rate'])} | {_pct(g['teacher_rate'])} | {g['variants']['count']} "
                     f"| {_f(g['variants']['value_lost'])} | {_f(p.get('median'), '{:,.0f}')} | "
                     f"{_f(p.get('p99'), '{:,.0f}')} |")
    if doc.get("points"):
        p = doc["points"]
        lines += ["", f"Points: marginal judge points of `core_candidates` a turn over {p['turns']} dragon-turns of "
                      f"{p['games']} {p['pairing']} game(s) on {p['size']}x{p['size']}, {p['rounds']} rounds; every "
                      f"generator together: median {p['all']['median']:,.0f}, p99 {p['all']['p99']:,.0f}; harvest and "
                      f"escape together (their shared search from the head): median "
                      f"{p['harvest+escape']['median']:,.0f}, p99 {p['harvest+escape']['p99']:,.0f}."]
    if top:
        linked = any(t.get("page") for t in top)
        lines += ["", "## The departures that cost the most", ""]
        if linked:
            lines += ["Each decision links to its game's viewer page (`pages/`, self-contained) opened at that round "
                      "and dragon: the decision panel shows the candidates, the teacher's Q and the value lost.", ""]
        lines += ["| game | dragon | round | cause | value lost | student | teacher |" + (" decision |" if linked
                                                                                        else ""),
                  "|---:|---:|---:|---|---:|---|---|" + ("---|" if linked else "")]
        for t in top:
            cell = ""
            if linked:
                cell = f" [round {t['round']}, dragon {t['dragon']}]({t['page']}) |" if t.get("page") else " - |"
            lines.append(f"| {t['game']} | {t['dragon']} | {t['round']} | {t['cause']} | {t['value_lost']:.3f} | "
                         f"{t['student']} ({option_label(_mask(t['student_generators']))}) | {t['teacher']} "
                         f"({option_label(_mask(t['teacher_generators']))}) |" + cell)
    return "\n".join(lines) + "\n"


def _mask(names: Sequence[str]) -> int:
    return sum(1 << g for g, n in GENERATORS.items() if n in names)


def value_lost_png(doc: dict, path) -> Path:
    """Two panels: value lost by cause (information split by what a teammate knew) and departures by cause."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    causes = [c for c in CAUSES if c != "none"]
    info = doc["information"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    x = np.arange(len(causes))
    base = np.zeros(len(causes))
    parts = [("teammate knew", "tab:orange", {"information": info["teammate_knew"]["value_lost"]}),
             ("beyond any teammate", "tab:red", {"information": info["beyond_any_teammate"]["value_lost"]}),
             ("team untested", "tab:pink", {"information": info["team_untested"]["value_lost"]})]
    other = {c: doc["causes"][c]["value_lost"] for c in causes if c != "information"}
    ax1.bar(x, [other.get(c, 0.0) for c in causes], color="tab:blue", label="candidate, ranking, untested")
    for label, color, vals in parts:
        h = np.array([vals.get(c, 0.0) for c in causes])
        ax1.bar(x, h, bottom=base, color=color, label=f"information: {label}")
        base += h
    ax1.set_xticks(x, causes)
    ax1.set_ylabel("value lost (sum over departures)")
    ax1.set_title(f"value lost by cause (total {doc['value_lost']['total']:.2f})")
    ax1.axhline(0, color="black", lw=0.5)
    ax1.legend(fontsize=8)
    counts = [doc["causes"][c]["count"] for c in causes]
    ax2.bar(x, counts, color="tab:gray")
    for xi, c in zip(x, counts, strict=True):
        ax2.text(xi, c, str(c), ha="center", va="bottom", fontsize=8)
    ax2.set_xticks(x, causes)
    ax2.set_ylabel("departures")
    ax2.set_title(f"{doc['departures']} departures of {doc['decisions']} decisions")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(table: pa.Table, out, *, top: int = 20, points: dict | None = None, targets=None) -> dict:
    """``report`` and ``top_departures`` written to ``out`` (``FILES``); returns the report. ``targets``: the targets
    folder the table was read from; when it holds the games' replays, the top departures link their pages
    (``write_pages``: ``out/pages``)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    facts = analyse(table)
    doc = report(table, points=points, facts=facts)
    best = top_departures(table, top, facts=facts)
    if targets is not None:
        write_pages(best, targets, out)
    (out / "report.json").write_text(json.dumps(doc, indent=1))
    (out / "top_departures.json").write_text(json.dumps(best, indent=1))
    (out / "report.md").write_text(render_markdown(doc, best))
    value_lost_png(doc, out / "value_lost.png")
    return doc


# -- the command line ------------------------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        print(f"loong_value_lost: {message}", file=sys.stderr)
        sys.exit(2)


def main(argv: Sequence[str] | None = None) -> int:
    ap = _Parser(prog="python -m ops.loong.value_lost", description=__doc__.splitlines()[0])
    ap.add_argument("--targets", required=True, help="the targets folder (ops.loong.teacher_targets) or one shard")
    ap.add_argument("--out", required=True, help="output folder: report.json, report.md, value_lost.png, "
                                                 "top_departures.json, pages/")
    ap.add_argument("--top", type=int, default=20, help="departures in top_departures.json (default 20)")
    ap.add_argument("--points-games", type=int, default=1, help="recorded games of the generators' points (0: skip)")
    ap.add_argument("--points-size", type=int, default=20, help="their board side (default 20)")
    ap.add_argument("--points-rounds", type=int, default=30, help="their rounds (default 30)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    try:
        if args.top < 1:
            raise ReportError(f"--top: must be >= 1, got {args.top}")
        if args.points_games < 0:
            raise ReportError(f"--points-games: must be >= 0, got {args.points_games}")
        if out.exists() and not out.is_dir():
            raise ReportError(f"--out {out}: is a file, not a folder")
        if not Path(args.targets).exists():
            raise ReportError(f"--targets {args.targets}: no such folder or file")
        table = load_targets(args.targets, columns=COLUMNS)
        points = (generator_points(args.points_size, args.points_rounds, args.points_games)
                  if args.points_games else None)
        doc = write_report(table, out, top=args.top, points=points, targets=args.targets)
    except (ReportError, TargetsError) as e:
        print(f"loong_value_lost: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"loong_value_lost: {e.filename or out}: {e.strerror}", file=sys.stderr)
        return 2
    summary = {"decisions": doc["decisions"], "departures": doc["departures"],
               "value_lost": doc["value_lost"]["total"],
               **{f"value_lost/{c}": t["value_lost"] for c, t in doc["causes"].items()},
               "files": [str(out / f) for f in FILES],
               "pages": sorted(str(p) for p in (out / PAGES).glob("*.html"))}
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["CAUSES", "COLUMNS", "FILES", "GENERATORS", "PAGES", "SITUATIONS", "Facts", "ReportError", "analyse",
           "classify", "game_replays", "generator_points", "main", "record_text", "render_markdown", "report",
           "situations", "top_departures", "value_lost_png", "window_situation", "write_pages", "write_report"]
