"""The Loong belief report: games recorded with the reference engine (every dragon's observation beside the true
state), run through the native core (filters, spawns and pearls, symmetry) and the sonar's acceptance test, and
measured against the truth: impossible states, coverage, calibration, symmetry errors and settle rounds.

``record_game`` is the one recorder: the core's tests (tests/bot/core/conftest.py) use it too."""

from __future__ import annotations

import ctypes
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from games.loong.bots import _Seat, ask_bot
from games.loong.engine import Game
from games.loong.foil import registry
from games.loong.mapgen import generate_map
from games.loong.observation import encode, observe
from ops.profiles import Profiles

SYMMETRIES = ("lr", "tb", "rot")
SIZE_RANGE = (20, 64)  # the size bands the report covers (every side in it)
AGE_BUCKETS = ((0, 0), (1, 1), (2, 3), (4, 7), (8, 15), (16, 31), (32, 10**9))  # rounds since last seen
PEARL_BUCKETS = ((1, 1), (2, 3), (4, 7), (8, 15), (16, 31), (32, 10**9), (None, None))  # None: never seen
BINS = 10  # calibration bins of the probabilities
SONAR_FOREIGN, SONAR_NOISE = 1, 2  # sonar_test_accepted modes: the other team's key, random frames


@dataclass
class Track:
    """One dragon's turns: its observation bytes and the true state at the moment it observed."""

    obs: list[bytes] = field(default_factory=list)
    pearls: list[np.ndarray] = field(default_factory=list)  # [N] 0/1
    occ: list[np.ndarray] = field(default_factory=list)  # [N] dragon id or -1
    heads: list[np.ndarray] = field(default_factory=list)  # [N] a living dragon's head is there
    countdown: list[np.ndarray] = field(default_factory=list)  # [N] spawn countdown, 0 where no tile
    window: list[np.ndarray] = field(default_factory=list)  # [49] cells of its window
    teams: dict[int, int] = field(default_factory=dict)  # dragon id -> team (all dragons of the game)
    rounds: list[int] = field(default_factory=list)  # the round of each observation
    dragons: list[dict] = field(default_factory=list)  # dragon id -> (body cells head first, heading) of the living


def record_game(width: int, height: int, symmetry: str, a: str, b: str, seed: int = 7, rounds: int = 60,
                map_seed: int | None = None):
    """Play a game with the reference engine (team 0 bot ``a``, team 1 ``b``), keeping every dragon's observation
    and the truth: (map, {dragon id: Track}). The map seed defaults to ``width * 100 + height``."""
    m = generate_map(width, height, symmetry, seed=width * 100 + height if map_seed is None else map_seed)
    reg = registry()
    factories = (reg[a], reg[b])
    game = Game(m, seed, rounds)
    seats = {i: _Seat(factories[d.team], i, d.team, seed) for i, d in sorted(game.dragons.items())}
    tracks: dict[int, Track] = {}
    countdown_of = np.asarray(m.spawn_at)
    while not game.over:
        game.begin_round()
        while (i := game.next_actor()) is not None:
            obs = observe(game, i)
            t = tracks.setdefault(i, Track())
            t.obs.append(encode(obs))
            t.pearls.append(np.frombuffer(bytes(game.pearls), np.uint8))
            t.occ.append(np.array(game.occ, np.int64))
            heads = np.zeros(m.n_cells, bool)
            heads[[d.body[0] for d in game.dragons.values() if d.alive]] = True
            t.heads.append(heads)
            t.countdown.append(np.array([*game.countdown, 0], np.int64)[countdown_of])
            t.window.append(m.window_cells()[game.dragons[i].body[0]].ravel())
            t.rounds.append(game.round)
            t.dragons.append({j: (tuple(d.body), d.heading) for j, d in game.dragons.items() if d.alive})
            action, sonar = ask_bot(seats[i], obs, game)
            team = game.dragons[i].team
            born = game.turn(i, action, sonar).born
            if born is not None:
                seats[born] = _Seat(factories[team], born, team, seed)
        game.end_round()
    teams = {i: d.team for i, d in game.dragons.items()}
    for t in tracks.values():
        t.teams = teams
    return m, tracks


# -- configuration -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BeliefConfig:
    sizes: tuple[int, ...]  # square map sides; every symmetry on each
    games_per_map: int  # games on each (size, symmetry), the bots' sides alternating
    rounds: int  # round limit of each game
    bots: tuple[str, str] = ("foil", "random")
    sonar_frames: int = 1_000_000  # frames of each kind (other team's key, noise) through the acceptance test
    seed: int = 0


PROFILES = {  # profile -> BeliefConfig fields
    "test": dict(sizes=(20, 40, 64), games_per_map=1, rounds=8, sonar_frames=100_000),
    "small": dict(sizes=(20, 32, 48, 64), games_per_map=2, rounds=60, sonar_frames=1_000_000),
    "full": dict(sizes=(20, 28, 36, 48, 56, 64), games_per_map=4, rounds=200, sonar_frames=10_000_000),
}
CONFIG_PROFILES = Profiles("belief", BeliefConfig, PROFILES)


def check_config(cfg: BeliefConfig) -> None:
    """A ValueError naming the field for a config that cannot run."""
    if not cfg.sizes:
        raise ValueError("sizes: empty; give at least one map side")
    bad = [s for s in cfg.sizes if not SIZE_RANGE[0] <= s <= SIZE_RANGE[1]]
    if bad:
        raise ValueError(f"sizes: map side must be in [{SIZE_RANGE[0]}, {SIZE_RANGE[1]}], got {bad[0]}")
    if cfg.games_per_map < 1:
        raise ValueError(f"games_per_map: must be at least 1, got {cfg.games_per_map}")
    if cfg.rounds < 1:
        raise ValueError(f"rounds: must be at least 1, got {cfg.rounds}")
    if cfg.sonar_frames < 1 or cfg.sonar_frames >= 2**32:
        raise ValueError(f"sonar_frames: must be in [1, 2^32), got {cfg.sonar_frames}")
    known = registry()
    if len(cfg.bots) != 2:
        raise ValueError(f"bots: two bots (team 0, team 1), got {len(cfg.bots)}")
    for b in cfg.bots:
        if b not in known:
            raise ValueError(f"bots: unknown bot {b!r} (known: {', '.join(sorted(known))})")


def games_of(cfg: BeliefConfig) -> list[tuple[int, int, str, str, str, int]]:
    """(width, height, symmetry, team 0 bot, team 1 bot, seed) of every game: each size and symmetry, sides
    alternating."""
    out = []
    for s in cfg.sizes:
        for sym in SYMMETRIES:
            for g in range(cfg.games_per_map):
                a, b = cfg.bots if g % 2 == 0 else cfg.bots[::-1]
                out.append((s, s, sym, a, b, cfg.seed * 1000 + g + 1))
    return out


# -- measures ------------------------------------------------------------------------------------------------------
def _age_label(lo: int, hi: int) -> str:
    return f"{lo}" if lo == hi else (f"{lo}+" if hi >= 10**9 else f"{lo}-{hi}")


def _bucket(age: int | None) -> str:
    if age is None:
        return "never"
    for lo, hi in AGE_BUCKETS:
        if lo <= age <= hi:
            return _age_label(lo, hi)
    raise AssertionError(age)


class Calibration:
    """Running sums for calibration in fixed memory: per probability bin the count, the chances' and outcomes'
    sums; the log loss as a sum over predictions."""

    def __init__(self) -> None:
        self.n, self.sp, self.sy = np.zeros(BINS), np.zeros(BINS), np.zeros(BINS)
        self.loss, self.losses = 0.0, 0

    def add(self, p: np.ndarray, y: np.ndarray) -> None:
        b = np.minimum((p * BINS).astype(int), BINS - 1)
        self.n += np.bincount(b, minlength=BINS)
        self.sp += np.bincount(b, p, minlength=BINS)
        self.sy += np.bincount(b, y, minlength=BINS)

    def add_loss(self, total: float, count: int) -> None:
        self.loss, self.losses = self.loss + total, self.losses + count

    def merge(self, other: Calibration) -> None:
        self.n, self.sp, self.sy = self.n + other.n, self.sp + other.sp, self.sy + other.sy
        self.add_loss(other.loss, other.losses)

    def ece(self) -> float:
        return float(np.abs(self.sp - self.sy).sum() / self.n.sum()) if self.n.sum() else 0.0

    def log_loss(self) -> float:
        return self.loss / self.losses if self.losses else 0.0

    def reliability(self) -> list[dict]:
        return [{"bin": i, "n": int(self.n[i]), "mean_p": float(self.sp[i] / self.n[i]),
                 "rate": float(self.sy[i] / self.n[i])} for i in range(BINS) if self.n[i]]

    def summary(self) -> dict:
        return {"predictions": self.losses, "ece": self.ece(), "log_loss": self.log_loss()}


@dataclass
class _Tally:
    impossible: dict[str, int] = field(default_factory=dict)
    heads: dict[str, Calibration] = field(default_factory=dict)  # rounds-since-seen bucket -> head filters
    pearls: dict[str, Calibration] = field(default_factory=dict)  # rounds-since-seen bucket -> pearl model
    pearl_rate: dict[str, list[float]] = field(default_factory=dict)  # bucket -> [pearls, cells]
    covered: int = 0
    total: int = 0
    cap_excluded: int = 0
    sym_errors: int = 0
    settled: dict[str, list[int]] = field(default_factory=dict)
    unsettled: dict[str, int] = field(default_factory=dict)
    dragon_turns: int = 0

    def bad(self, what: str, n: int = 1) -> None:
        self.impossible[what] = self.impossible.get(what, 0) + int(n)


def _filters(m, i: int, t: Track, dumps: list, tally: _Tally) -> None:
    from bot.core_filters import FF_CAP_DROP, FF_HEAD_SEEN, FF_QUEEN, FF_SEEN, MASS, Q16

    for k, (head, tracks) in enumerate(dumps):
        window = set(t.window[k].tolist())
        by_id = {tr["id"]: tr for tr in tracks}
        if head["round"] != t.rounds[k] or head["self_id"] != i:
            tally.bad("filters header")
        if {0, 1} - {i} - set(by_id):
            tally.bad("queen filter missing")
        for tr in tracks:
            s = tr["states"]
            if tr["id"] == i or not 0 <= tr["alive"] <= Q16 or len(s) == 0:
                tally.bad("filter state")
                continue
            if not ((s["weight"] > 0).all() and (s["cell"] < m.n_cells).all() and (s["heading"] <= 4).all()):
                tally.bad("filter state")
            cells = set(s["cell"].tolist())
            if tr["flags"] & FF_HEAD_SEEN and len(cells) != 1:
                tally.bad("seen head not pinned")
            if not tr["flags"] & FF_HEAD_SEEN and cells & window:
                tally.bad("head in view but not seen")
            if tr["flags"] & FF_QUEEN and tr["alive"] != Q16:
                tally.bad("queen's chance lowered")
        # certainty where the rules determine it: every other dragon in view alive for sure, a head in view pinned
        for j, (body, _) in t.dragons[k].items():
            if j == i or not window & set(body):
                continue
            tr = by_id.get(j)
            if tr is None or not tr["flags"] & FF_SEEN or tr["alive"] != Q16:
                tally.bad("seen dragon not certain")
            elif body[0] in window and (not tr["flags"] & FF_HEAD_SEEN
                                        or set(tr["states"]["cell"].tolist()) != {body[0]}):
                tally.bad("head in view not pinned")
        # coverage and calibration over enemies alive now
        for tr in tracks:
            j = tr["id"]
            if t.teams.get(j) == t.teams[i] or j not in t.dragons[k]:
                continue
            if tr["flags"] & FF_CAP_DROP:
                tally.cap_excluded += 1
                continue
            s = tr["states"]
            truth = t.dragons[k][j][0][0]
            cells, inv = np.unique(s["cell"], return_inverse=True)
            p = np.bincount(inv, s["weight"].astype(np.float64)) / float(s["weight"].sum())
            hit = cells == truth
            tally.total += 1
            tally.covered += bool(hit.any())
            age = None if tr["head_round"] == 0 else t.rounds[k] - tr["head_round"]
            c = tally.heads.setdefault(_bucket(age), Calibration())
            c.add(p, hit.astype(np.float64))
            c.add_loss(-math.log(max(float(p[hit].sum()), 1 / MASS)), 1)


def _spawns(m, i: int, t: Track, dumps: list, tally: _Tally) -> None:
    from bot.core_spawns import Q16

    last = np.full(m.n_cells, -1)
    for k, (head, pearl, _) in enumerate(dumps):
        p = pearl.reshape(-1).astype(np.int64)
        truth = t.pearls[k].astype(np.int64)
        window, body = t.window[k], np.array(t.dragons[k][i][0])
        if head["round"] != t.rounds[k]:
            tally.bad("spawns header")
        tally.bad("pearl in view not the truth", (p[window] != truth[window] * Q16).sum())
        tally.bad("pearl under own body", (p[body] != 0).sum())
        open_ = np.ones(m.n_cells, bool)
        open_[window] = open_[body] = False
        tally.bad("pearl certainty the rules do not give", (~((p[open_] >= 1) & (p[open_] < Q16))).sum())
        tally.bad("true pearl state at zero", (np.where(truth == 1, p, Q16 - p) <= 0).sum())
        since = np.where(last < 0, -1, t.rounds[k] - last)[open_]
        q, y = p[open_] / Q16, truth[open_].astype(np.float64)
        for lo, hi in PEARL_BUCKETS:
            sel = since < 0 if lo is None else (since >= lo) & (since <= hi)
            if sel.any():
                label = "never" if lo is None else _age_label(lo, hi)
                c = tally.pearls.setdefault(label, Calibration())
                c.add(q[sel], y[sel])
                c.add_loss(_log_loss(q[sel], y[sel]) * int(sel.sum()), int(sel.sum()))
                r = tally.pearl_rate.setdefault(label, [0.0, 0.0])
                r[0], r[1] = r[0] + float(y[sel].sum()), r[1] + float(sel.sum())
        last[window] = t.rounds[k]


def _symmetry(m, t: Track, codes: list[int], views: list[bytes], tally: _Tally) -> None:
    from bot.core_symmetry import SYMMETRIES as CORE_SYMMETRIES
    from bot.core_symmetry import parse_view

    true_h = CORE_SYMMETRIES.index(m.symmetry)
    head = None
    for code, view in zip(codes, views, strict=True):
        if code != 0:
            tally.bad("observation refused by the world")
        head, _ = parse_view(view)
        if not head["alive"] & (1 << true_h) or head["settled"] not in (None, true_h):
            tally.sym_errors += 1
    if head is not None and head["settled"] is not None:
        tally.settled.setdefault(m.symmetry, []).append(int(head["settled_round"]))
    else:
        tally.unsettled[m.symmetry] = tally.unsettled.get(m.symmetry, 0) + 1


def sonar_acceptance(frames: int, seed: int = 2) -> dict:
    """Frames accepted out of ``frames`` under the other team's key and of random noise (the native sonar's test
    entry, 64x64 board, the shipped check bits), per million frames, with the documented bound."""
    from bot.native import CORE_DIR, load_native
    from bot.team_keys import DEV_SECRET

    lib = load_native([CORE_DIR / "sonar.c"], "sonar")
    u32, u64 = ctypes.c_uint32, ctypes.c_uint64
    fn = lib.sonar_test_accepted
    fn.restype, fn.argtypes = u32, [u64, u64, u32, u32, u32, u64, u32, u32]
    secret = int(DEV_SECRET, 16)
    words = (secret >> 64, secret & ((1 << 64) - 1))
    check_bits = 7  # SONAR_CHECK_BITS in bot/core/sonar.h (docs/loong-sonar.md)
    foreign = fn(*words, 64, 64, check_bits, seed, frames, SONAR_FOREIGN)
    noise = fn(*words, 64, 64, check_bits, seed + 1, frames, SONAR_NOISE)
    per = 1e6 / frames
    return {"frames": frames, "check_bits": check_bits, "foreign_accepted": int(foreign), "noise_accepted": int(noise),
            "foreign_per_million": foreign * per, "noise_per_million": noise * per,
            "documented_per_million": 1e6 / 2**check_bits / 40}


# -- the report ----------------------------------------------------------------------------------------------------
@dataclass
class BeliefReport:
    doc: dict  # everything, JSON-ready
    metrics: dict[str, float]  # flat numbers for MLflow and Dagster
    plot: Path


def run(cfg: BeliefConfig, out: Path, progress=None) -> BeliefReport:
    """Record the games, run the native core over every dragon's turns, measure against the truth, write
    ``belief.json`` and ``reliability.png`` under ``out``."""
    from bot.core_filters import NativeFilters, filters_library, parse_filters_dump
    from bot.core_spawns import parse_spawns_dump, spawns_batch, spawns_library
    from bot.core_symmetry import symmetry_batch, symmetry_library

    check_config(cfg)
    out.mkdir(parents=True, exist_ok=True)
    flib, slib, ylib = filters_library(), spawns_library(), symmetry_library()
    tally = _Tally()
    games = games_of(cfg)
    for n, (w, h, sym, a, b, seed) in enumerate(games):
        m, tracks = record_game(w, h, sym, a, b, seed=seed, rounds=cfg.rounds, map_seed=cfg.seed * 7919 + w * 100 + h)
        for i, t in tracks.items():
            tally.dragon_turns += len(t.obs)
            f = NativeFilters(flib)
            dumps = []
            for obs in t.obs:
                if f.step(obs) != 0:
                    tally.bad("observation refused by the filters")
                dumps.append(parse_filters_dump(f.dump()))
            _filters(m, i, t, dumps, tally)
            codes, sdumps = spawns_batch(slib, t.obs)
            tally.bad("observation refused by the spawns model", sum(c != 0 for c in codes))
            _spawns(m, i, t, [parse_spawns_dump(d) for d in sdumps], tally)
            _symmetry(m, t, *symmetry_batch(ylib, t.obs), tally)
        if progress is not None:
            progress(n + 1, len(games), f"{w}x{h} {sym} {a}-{b}")
    sonar = sonar_acceptance(cfg.sonar_frames, seed=cfg.seed * 2 + 2)

    head_all, pearl_all = Calibration(), Calibration()
    heads, pearls = {}, {}
    for label in [*(_age_label(lo, hi) for lo, hi in AGE_BUCKETS), "never"]:
        if label in tally.heads:
            heads[label] = tally.heads[label].summary()
            head_all.merge(tally.heads[label])
    for label in [*(_age_label(lo, hi) for lo, hi in PEARL_BUCKETS if lo is not None), "never"]:
        if label in tally.pearls:
            pearls[label] = {**tally.pearls[label].summary(),
                             "rate": tally.pearl_rate[label][0] / tally.pearl_rate[label][1]}
            pearl_all.merge(tally.pearls[label])
    symmetry = {s: {"dragons_settled": len(tally.settled.get(s, [])), "dragons_unsettled": tally.unsettled.get(s, 0),
                    "median_settle_round": float(statistics.median(tally.settled[s])) if tally.settled.get(s)
                    else -1.0} for s in SYMMETRIES}
    impossible = sum(tally.impossible.values())
    coverage = tally.covered / tally.total if tally.total else 1.0
    doc = {
        "config": {"sizes": list(cfg.sizes), "games_per_map": cfg.games_per_map, "rounds": cfg.rounds,
                   "bots": list(cfg.bots), "sonar_frames": cfg.sonar_frames, "seed": cfg.seed},
        "games": [list(g) for g in games], "dragon_turns": tally.dragon_turns,
        "impossible": {"total": impossible, "by_kind": tally.impossible},
        "coverage": {"rate": coverage, "covered": tally.covered, "enemy_track_turns": tally.total,
                     "cap_drops_excluded": tally.cap_excluded},
        "heads_by_rounds_since_seen": heads,
        "heads": {**head_all.summary(), "reliability": head_all.reliability()},
        "pearls_by_rounds_since_seen": pearls,
        "pearls": {**pearl_all.summary(), "reliability": pearl_all.reliability()},
        "symmetry": {"errors": tally.sym_errors, "by_symmetry": symmetry},
        "sonar": sonar,
    }
    metrics = {"impossible_states": float(impossible), "coverage": coverage,
               "cap_drops_excluded": float(tally.cap_excluded), "dragon_turns": float(tally.dragon_turns),
               "head_ece": doc["heads"]["ece"], "head_log_loss": doc["heads"]["log_loss"],
               "pearl_ece": doc["pearls"]["ece"],
               "pearl_log_loss": doc["pearls"]["log_loss"], "symmetry_errors": float(tally.sym_errors),
               "sonar_foreign_per_million": sonar["foreign_per_million"],
               "sonar_noise_per_million": sonar["noise_per_million"]}
    for label, r in heads.items():
        metrics[f"head_ece_since_{label}"], metrics[f"head_log_loss_since_{label}"] = r["ece"], r["log_loss"]
    for label, r in pearls.items():
        metrics[f"pearl_ece_since_{label}"], metrics[f"pearl_log_loss_since_{label}"] = r["ece"], r["log_loss"]
    for s, r in symmetry.items():
        metrics[f"settle_round_median_{s}"] = r["median_settle_round"]
    plot = reliability_png(doc, out / "reliability.png")
    return BeliefReport(doc=doc, metrics={k.replace("+", "plus"): float(v) for k, v in metrics.items()}, plot=plot)


def _log_loss(p: np.ndarray, y: np.ndarray) -> float:
    if len(p) == 0:
        return 0.0
    q = np.clip(p, 1e-9, 1 - 1e-9)
    return float(-np.mean(y * np.log(q) + (1 - y) * np.log(1 - q)))


def reliability_png(doc: dict, path: Path) -> Path:
    """Reliability diagrams of the head filters (cell chances) and the pearl model: mean chance against the rate."""
    from ops.plots import plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    for ax, key, title in ((axes[0], "heads", "head filters (cells in support)"), (axes[1], "pearls", "pearl model")):
        rows = doc[key]["reliability"]
        ax.plot([0, 1], [0, 1], "--", color="grey", lw=1)
        if rows:
            x, y, n = (np.array([r[c] for r in rows]) for c in ("mean_p", "rate", "n"))
            ax.scatter(x, y, s=20 + 80 * np.sqrt(n / n.max()), color="tab:blue", zorder=3)
            ax.plot(x, y, color="tab:blue", lw=1)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("predicted chance (bin mean)")
        ax.set_ylabel("observed rate")
        ax.set_title(f"{title}: ECE {doc[key]['ece']:.4f}")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
