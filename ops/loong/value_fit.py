"""The privileged value fit (issue 12 item 3; docs/loong-value-fit.md): recorded games -> whole-board samples ->
one TD(lambda) fit per horizon -> the calibrated fit with the lowest calibration-set log loss.

    cfg = profile_config("small")
    paths = record_games(cfg, out / "replays")                     # foil v foil, expert-h v foil (native)
    samples = extract(paths, cfg.sample_every)                     # re-simulated in the batched simulator
    result = run(cfg, out, tracker)                                # record (or --replays), extract, fit, save
    fit = load_value_fit(result.fit_path)                          # refuses a wrong or corrupt file in one line

``python -m ops.loong.value_fit --profile test|small|full --out DIR [--replays DIR]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from games.loong.replay import Replay, ReplayError, load_replay
from ops.profiles import Profiles

FORMAT, VERSION = "loong-value-fit", 1
ECE_BINS = 10
# Pass bar of the calibration check: the equal-count ECE on the calibration games at most 0.05, that is the
# predicted win rate off the realised one by five percentage points on average. A placeholder (neither derived
# nor measured): it is the accuracy a leaf value needs to rank a winning leaf above one of even chances, and the
# ECE noise floor of the small profile's few calibration games is about that size (docs/loong-value-fit.md).
MAX_ECE = 0.05
Z_ONE_SIDED_95 = 1.645  # the one-sided 95% normal quantile of the early-stopping test
PAIRINGS = (("foil", "foil"), ("expert-h", "foil"))
SPLITS = ("train", "heldout", "calibration")
SYMMETRIES = ("lr", "tb", "rot")


class ValueFitError(ValueError):
    """Bad input (config, replay folder, fit file): the message is one line naming the file or field."""


@dataclass(frozen=True)
class ValueFitConfig:
    games: int = 24  # recorded games (ignored with --replays), game_spec
    rounds: int = 200  # round limit of each recorded game
    bands: tuple[int, ...] = (20, 28, 36, 44, 52, 60)  # map sides cycled over the games
    pairings: tuple[tuple[str, str], ...] = PAIRINGS
    sample_every: int = 10  # K: samples in rounds 1, 1 + K, 1 + 2K, ...
    horizons: tuple[int, ...] = (20, 50, 200)  # H: lambda = 1 - K / H, one fit each
    shape: str = "v1c16l3"  # gpu.loong_value_net.SHAPES
    max_epochs: int = 20
    patience: int = 3  # epochs without a significant held-out improvement over the best before stopping (placeholder)
    batch_size: int = 64
    learning_rate: float = 2e-3
    share_weight: float = 1.0  # weight of the share head's MSE beside the value's log loss (placeholder)
    split: tuple[float, float, float] = (0.6, 0.2, 0.2)  # train / held-out / calibration, by game
    lanes: int = 32  # replays of one size re-simulated side by side
    device: str = "cpu"  # the fit's torch device: cpu, cuda or auto (extraction stays on the CPU)
    threads: int = 1  # torch threads (0: torch's default); small ops of a few lanes ran 11x slower on 2 threads
    seed: int = 0


PROFILES = {
    "test": dict(games=3, rounds=30, bands=(20,), horizons=(20, 50), shape="v1c8l2", max_epochs=3, patience=1,
                 batch_size=32),
    "small": dict(games=180, rounds=120, shape="v1c8l2", max_epochs=8, patience=2, batch_size=32, learning_rate=4e-3),
    "full": dict(games=3000, rounds=500, shape="v1c32l6", max_epochs=60, batch_size=256, lanes=256, threads=0,
                 device="auto"),
}


CONFIG_PROFILES = Profiles("value fit", ValueFitConfig, PROFILES, ValueFitError)


def profile_config(profile: str, **overrides) -> ValueFitConfig:
    """The profile's config with ``overrides``; an unknown profile or field is a ValueFitError naming it."""
    return CONFIG_PROFILES.resolve(profile, **overrides)


def check_config(cfg: ValueFitConfig) -> None:
    """A bad setting raises ValueFitError naming the field."""
    from games.loong.foil import registry
    from gpu.loong_value_net import SHAPES

    for name in ("games", "rounds", "sample_every", "max_epochs", "patience", "batch_size", "lanes"):
        if getattr(cfg, name) < 1:
            raise ValueFitError(f"{name}: must be at least 1, got {getattr(cfg, name)}")
    if cfg.games < 3:
        raise ValueFitError(f"games: need at least 3 (train, held-out and calibration games), got {cfg.games}")
    for size in cfg.bands:
        if not 10 <= size <= 64:
            raise ValueFitError(f"bands: map side {size} outside 10..64")
    known = {*registry(), "expert-h"}
    for pair in cfg.pairings:
        for bot in pair:
            if bot not in known:
                raise ValueFitError(f"pairings: unknown bot {bot!r} (known: {', '.join(sorted(known))})")
    if not cfg.horizons:
        raise ValueFitError("horizons: need at least one")
    for h in cfg.horizons:
        if h < cfg.sample_every:
            raise ValueFitError(f"horizons: {h} is below sample_every {cfg.sample_every} (lambda = 1 - K/H < 0)")
    if cfg.shape not in SHAPES:
        raise ValueFitError(f"shape: unknown value network shape {cfg.shape!r} (known: {', '.join(SHAPES)})")
    if len(cfg.split) != 3 or any(f <= 0 for f in cfg.split):
        raise ValueFitError(f"split: three positive fractions (train, held-out, calibration), got {cfg.split}")
    if cfg.device not in ("cpu", "cuda", "auto"):
        raise ValueFitError(f"device: {cfg.device!r} is not cpu, cuda or auto")
    if cfg.learning_rate <= 0:
        raise ValueFitError(f"learning_rate: must be positive, got {cfg.learning_rate}")


# -- 1. recorded games ---------------------------------------------------------------------------------------
def game_spec(cfg: ValueFitConfig, g: int) -> tuple[int, str, str, str, int]:
    """(size, symmetry, team 0 bot, team 1 bot, seed) of game ``g``: pairings in turn; a pairing's own count c
    takes the bands in turn and the symmetry (c // bands + c) mod 3 (every band meets every symmetry); sides swap
    after each P x bands games. (ops.loong.dataset.game_spec never gives 'rot' with two pairings.)"""
    P, nb = len(cfg.pairings), len(cfg.bands)
    a, b = cfg.pairings[g % P]
    c = g // P
    if (g // (P * nb)) % 2:
        a, b = b, a
    return cfg.bands[c % nb], SYMMETRIES[(c // nb + c) % 3], a, b, cfg.seed * 1_000_003 + g


def record_games(cfg: ValueFitConfig, out_dir: Path, progress: Callable[[str], None] | None = None) -> list[Path]:
    """Play the config's games in the reference engine (the native expert-h build where named, as the replay
    dataset does) and save each as a reference replay under ``out_dir``; returns the header paths."""
    from games.loong.bots import play_game
    from games.loong.mapgen import generate_map
    from games.loong.match import replay_stem
    from games.loong.replay import save_replay
    from ops.loong.dataset import _factory

    check_config(cfg)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for g in range(cfg.games):
        size, symmetry, a, b, seed = game_spec(cfg, g)
        m = generate_map(size, size, symmetry, seed=seed)
        r = play_game(m, _factory(a), _factory(b), seed, cfg.rounds)
        json_path, _ = save_replay(r, out_dir / replay_stem(g, a, b))
        paths.append(json_path)
        if progress:
            progress(f"game {g + 1}/{cfg.games}: {size}x{size} {symmetry} {a} v {b}: "
                     f"{'draw' if r.winner is None else f'team {r.winner} won'} ({r.reason}, round {r.rounds})")
    return paths


def find_replays(folder: str | Path) -> list[Path]:
    """The replay headers (``*.json``) in ``folder``, sorted; a missing or empty folder is one line."""
    d = Path(folder)
    if not d.exists():
        raise ValueFitError(f"--replays {folder}: no such folder")
    if not d.is_dir():
        raise ValueFitError(f"--replays {folder}: is a file, not a folder")
    paths = sorted(p for p in d.glob("*.json") if p.with_suffix(".parquet").exists())
    if not paths:
        raise ValueFitError(f"--replays {folder}: no replays (<stem>.json beside <stem>.parquet)")
    return paths


# -- 2. samples ----------------------------------------------------------------------------------------------
@dataclass
class GameSamples:
    """One game's samples: every living dragon at its turn in rounds 1, 1 + K, ... (``sample_every`` K).

    ``u8 [n, 24, H, W]`` / ``i8 [n, 8, H, W]``: the full planes as gpu.loong_value_net.quantize stores them;
    ``scalars [n, 2]``; ``outcome [n]`` of the dragon's team (1 won, 0.5 draw, 0 lost); ``shares [n, 9]``
    (SHARE_NAMES order); ``counts [n, 3, 6]``: per share horizon the state's (own units, other units, own total
    length, other total length, own longest, other longest); ``round_counts [R + 1, 6]``: (units, total length,
    longest) of team 0 then team 1 after each round 0..R (the extraction's own record, checked in the tests)."""

    replay: str
    game: int
    width: int
    height: int
    max_rounds: int
    u8: np.ndarray
    i8: np.ndarray
    scalars: np.ndarray
    dragon: np.ndarray
    team: np.ndarray
    round: np.ndarray
    outcome: np.ndarray
    shares: np.ndarray
    counts: np.ndarray
    round_counts: np.ndarray

    def __len__(self) -> int:
        return len(self.round)


def team_outcome(winner: int | None, team: int) -> float:
    return 0.5 if winner is None else (1.0 if winner == team else 0.0)


def shares_from_counts(counts: np.ndarray) -> np.ndarray:
    """``[..., 3, 6]`` counts (own, other pairs) -> ``[..., 9]`` shares own / (own + other), 0.5 where both are 0."""
    own, other = counts[..., 0::2].astype(np.float64), counts[..., 1::2].astype(np.float64)
    total = own + other
    s = np.where(total > 0, own / np.where(total > 0, total, 1), 0.5)
    return s.reshape(*s.shape[:-2], -1).astype(np.float32)


def target_counts(round_counts: np.ndarray, rnd: int, team: int, horizons: Sequence[int]) -> np.ndarray:
    """``[len(horizons), 6]``: the team's view of the counts after round min(rnd + h, last round)."""
    last = len(round_counts) - 1
    out = []
    for h in horizons:
        c = round_counts[min(rnd + h, last)]
        t0, t1 = c[:3], c[3:]
        own, other = (t0, t1) if team == 0 else (t1, t0)
        out.append(np.stack([own, other], 1).reshape(-1))  # own units, other units, own total, ...
    return np.array(out, np.int32)


def extract(paths: Sequence[Path], sample_every: int = 10, lanes: int = 32,
            progress: Callable[[str], None] | None = None) -> list[GameSamples]:
    """Load every replay, re-simulate it in the batched simulator (replays of one size and round limit side by
    side, ``lanes`` at a time) and take the samples; every replay's turn order, state hashes and result must
    come out of the simulator as recorded (else ValueFitError naming the file)."""
    replays = []
    for p in paths:
        try:
            replays.append(load_replay(p))
        except ReplayError as e:
            raise ValueFitError(str(e)) from None
    groups: dict[tuple[int, int, int], list[int]] = {}
    for i, r in enumerate(replays):
        groups.setdefault((r.map.width, r.map.height, int(r.header["max_rounds"])), []).append(i)
    out: list[GameSamples | None] = [None] * len(replays)
    done = 0
    for key in sorted(groups):
        idx = groups[key]
        for s in range(0, len(idx), lanes):
            part = idx[s: s + lanes]
            for i, gs in zip(part, _resimulate([replays[i] for i in part], part, sample_every)):
                out[i] = gs
            done += len(part)
            if progress:
                progress(f"samples: {done}/{len(replays)} games re-simulated "
                         f"({sum(len(g) for g in out if g is not None)} samples)")
    return [g for g in out if g is not None]


def _resimulate(replays: list[Replay], games: list[int], K: int) -> list[GameSamples]:
    import torch

    from games.loong.actions import Sprint
    from gpu.loong_obs import full_planes
    from gpu.loong_sim import FORFEIT, RUNNING, WON0, WON1, CapacityError, LoongSim, Turn, encode_action, encode_sonar
    from gpu.loong_tables import FIELDS, TEAM
    from gpu.loong_value_net import HORIZONS, quantize, value_scalars

    B = len(replays)
    maps, seeds = [r.map for r in replays], [r.seed for r in replays]
    max_rounds = int(replays[0].header["max_rounds"])
    cap = max([8] + [len(t.action.directions) for r in replays for t in r.turns if isinstance(t.action, Sprint)])
    counts: list[dict[int, list[int]]] = [{} for _ in range(B)]
    holder: list = []

    def on_round_end(idx: torch.Tensor) -> None:
        if not holder:
            return
        sim = holder[0]
        sc, living, rnd = sim.scores()[idx], sim.living[idx], sim.round[idx]
        for j, b in enumerate(idx.tolist()):
            s = sc[j].tolist()
            lv = living[j].tolist()
            counts[b][int(rnd[j])] = [lv[0], s[0][2], s[0][1], lv[1], s[1][2], s[1][1]]

    sim = LoongSim(maps, seeds=seeds, max_rounds=max_rounds, ring=maps[0].width * maps[0].height, sprint_cap=cap,
                   record_hashes=True, on_round_end=on_round_end)
    holder.append(sim)
    for b in range(B):  # round 0: the state as set up (beginning round 1 fires spawn tiles only)
        lv, s = sim.living[b].tolist(), sim.scores()[b].tolist()
        counts[b][0] = [lv[0], s[0][2], s[0][1], lv[1], s[1][2], s[1][1]]
    pos = [0] * B
    rows: list[list] = [[] for _ in range(B)]  # per lane: (dragon, team, round, u8, i8)
    width = 2 + cap
    while not sim.all_over():
        aid, rnd, running = sim.actor_ids().tolist(), sim.round.tolist(), (sim.result == RUNNING).tolist()
        act = torch.zeros(B, width, dtype=torch.int64)
        act[:, 0] = FORFEIT
        sonar = torch.zeros(B, 4, dtype=torch.int64)
        mask = torch.zeros(B, 4, dtype=torch.bool)
        take = []
        for b in range(B):
            if not running[b] or aid[b] < 0:
                continue
            r, i = replays[b], pos[b]
            t = r.turns[i] if i < len(r.turns) else None
            if t is None or (t.round, t.dragon_id) != (rnd[b], aid[b]):
                got = "end of rows" if t is None else f"round {t.round} dragon {t.dragon_id}"
                raise ValueFitError(f"{r.path}: row {i}: the simulator's next turn is round {rnd[b]} dragon "
                                    f"{aid[b]}, the turn file has {got}")
            act[b] = torch.tensor(encode_action(t.action, cap))
            v, m = encode_sonar(t.sonar)
            sonar[b], mask[b] = torch.tensor(v), torch.tensor(m)
            pos[b] += 1
            if (rnd[b] - 1) % K == 0:
                take.append(b)
        if take:
            lane = torch.tensor(take)
            slot = sim.actor.index_select(0, lane)
            try:
                u8, i8 = quantize(full_planes(sim, lane, slot))
            except ValueError as e:
                raise ValueFitError(f"{replays[take[0]].path} (or another replay of lanes {take}): {e}") from None
            team = sim.tab.view(-1).index_select(0, (slot * sim.B + lane) * FIELDS + TEAM).tolist()
            for j, b in enumerate(take):
                rows[b].append((aid[b], team[j], rnd[b], u8[j].numpy(), i8[j].numpy()))
        try:
            sim.step(Turn(act, sonar, mask))
        except CapacityError as e:
            raise ValueFitError(f"{', '.join(str(r.path) for r in replays)}: {e}") from None
    out = []
    for b, r in enumerate(replays):
        _check_same(r, sim, b, pos[b], WON0, WON1)
        winner = r.header["result"]["winner"]
        last = int(r.header["result"]["round"])
        rc = np.array([counts[b][k] for k in range(last + 1)], np.int32)
        n = len(rows[b])
        H, W = r.map.height, r.map.width
        dragon = np.array([x[0] for x in rows[b]], np.int32)
        team = np.array([x[1] for x in rows[b]], np.int8)
        rounds = np.array([x[2] for x in rows[b]], np.int32)
        cnt = np.array([target_counts(rc, int(x[2]), int(x[1]), HORIZONS) for x in rows[b]], np.int32) \
            .reshape(n, len(HORIZONS), 6)
        out.append(GameSamples(
            str(r.path), games[b], W, H, max_rounds,
            np.stack([x[3] for x in rows[b]]) if n else np.zeros((0, 24, H, W), np.uint8),
            np.stack([x[4] for x in rows[b]]) if n else np.zeros((0, 8, H, W), np.int8),
            value_scalars(torch.from_numpy(rounds), max_rounds).numpy(), dragon, team, rounds,
            np.array([team_outcome(winner, int(t)) for t in team], np.float32), shares_from_counts(cnt), cnt, rc))
    return out


def _check_same(r: Replay, sim, b: int, used: int, won0: int, won1: int) -> None:
    """The lane's game is the replay's: every row used, every round's hash and the result as the header says."""
    h = r.header
    if used != len(r.turns):
        raise ValueFitError(f"{r.path}: rows: the simulator's game ended after {used} of {len(r.turns)} rows")
    if sim.hashes[b] != h["hashes"]:
        k = next((i for i, (x, y) in enumerate(zip(sim.hashes[b], h["hashes"])) if x != y),
                 min(len(sim.hashes[b]), len(h["hashes"])))
        raise ValueFitError(f"{r.path}: hashes[{k}]: the simulator's state differs from the header's")
    code = int(sim.result[b])
    winner = 0 if code == won0 else 1 if code == won1 else None
    reason = "elimination" if int(sim.reason[b]) == 1 else "round limit"
    scores = [list(t) for t in sim.scores()[b].tolist()]
    got = {"winner": winner, "reason": reason, "round": int(sim.round[b]), "scores": scores}
    for key, v in got.items():
        if h["result"][key] != v:
            raise ValueFitError(f"{r.path}: result.{key}: header says {h['result'][key]}, the simulator gives {v}")


# -- 3. the fit ----------------------------------------------------------------------------------------------
def td_targets(game: np.ndarray, team: np.ndarray, rnd: np.ndarray, value: np.ndarray, outcome: np.ndarray,
               lam: float) -> np.ndarray:
    """TD(lambda) targets of every sample. Each (game, team) is one sequence of sample rounds; the team's value
    at a round is the mean of its samples' values there. G at the last sample round is the outcome; before it
    G_t = (1 - lam) V(t') + lam G(t'), t' the team's next sample round."""
    key = np.stack([game.astype(np.int64), team.astype(np.int64), rnd.astype(np.int64)], 1)
    uniq, inv = np.unique(key, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    v = np.bincount(inv, weights=value, minlength=len(uniq)) / np.bincount(inv, minlength=len(uniq))
    z = np.zeros(len(uniq))
    z[inv] = outcome
    g = np.empty(len(uniq))
    for k in range(len(uniq) - 1, -1, -1):  # np.unique sorts by (game, team, round): sequences are contiguous
        same = k + 1 < len(uniq) and (uniq[k + 1, :2] == uniq[k, :2]).all()
        g[k] = (1 - lam) * v[k + 1] + lam * g[k + 1] if same else z[k]
    return g[inv]


def log_loss(p: np.ndarray, y: np.ndarray, eps: float = 1e-7) -> np.ndarray:
    """Per-sample log loss of probabilities ``p`` against outcomes ``y`` in [0, 1] (draws 0.5)."""
    p = np.clip(p, eps, 1 - eps)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


def paired_test(best: np.ndarray, current: np.ndarray, games: np.ndarray) -> tuple[float, float, float]:
    """(mean improvement, its standard error clustered by game, z) of per-sample losses ``best - current`` on
    the same samples; z = 0 when fewer than two games (no clustered error) or no variation."""
    d = np.asarray(best, np.float64) - np.asarray(current, np.float64)
    n = len(d)
    if n == 0:
        return 0.0, 0.0, 0.0
    mean = float(d.mean())
    _, inv = np.unique(games, return_inverse=True)
    G = int(inv.max()) + 1
    if G < 2:
        return mean, 0.0, 0.0
    u = np.bincount(inv.reshape(-1), weights=d - mean, minlength=G)  # per game: sum of deviations
    se = math.sqrt(G / (G - 1) * float((u ** 2).sum())) / n
    return mean, se, (mean / se if se > 0 else 0.0)


def ece_equal_count(p: np.ndarray, y: np.ndarray, bins: int = ECE_BINS) -> tuple[float, list[dict]]:
    """Expected calibration error over ``bins`` equal-count bins (samples sorted by p; np.array_split sizes):
    sum over bins of n_b / n * |mean p - mean y|; and the bins (n, mean p, mean y) for the reliability plot."""
    order = np.argsort(p, kind="stable")
    parts = [part for part in np.array_split(order, min(bins, len(p))) if len(part)]
    rows = [{"n": len(part), "p": float(p[part].mean()), "y": float(y[part].mean())} for part in parts]
    n = len(p)
    return (float(sum(r["n"] / n * abs(r["p"] - r["y"]) for r in rows)) if n else 0.0), rows


def calibration(p: np.ndarray, y: np.ndarray, base_rate: float) -> dict:
    """The calibration check's figures: log loss, the constant predictor's (``base_rate``), ECE and the pass."""
    ece, rows = ece_equal_count(p, y)
    ll = float(log_loss(p, y).mean()) if len(p) else math.inf
    const = float(log_loss(np.full(len(y), base_rate), y).mean()) if len(y) else math.inf
    return {"log_loss": ll, "constant_log_loss": const, "base_rate": base_rate, "ece": ece, "bins": rows,
            "samples": len(p), "passed": bool(len(p) > 0 and ece <= MAX_ECE and ll < const)}


@dataclass
class Split:
    """The samples of one split, bucketed by map size (a batch holds one size)."""

    buckets: list[dict]  # u8, i8, scalars, shares (tensors), outcome, game, team, round (numpy)

    @property
    def n(self) -> int:
        return sum(len(b["outcome"]) for b in self.buckets)

    def cat(self, name: str) -> np.ndarray:
        return np.concatenate([b[name] for b in self.buckets]) if self.buckets else np.zeros(0)


def split_games(samples: Sequence[GameSamples], cfg: ValueFitConfig) -> dict[str, Split]:
    """Games shuffled by the config's seed, then cut by the split fractions (at least one game each)."""
    import torch

    if len(samples) < 3:
        raise ValueFitError(f"games: need at least 3 games with samples (train, held-out, calibration), "
                            f"got {len(samples)}")
    order = np.random.default_rng(cfg.seed).permutation(len(samples))
    f = np.array(cfg.split, np.float64) / sum(cfg.split)
    n_held = max(1, round(f[1] * len(samples)))
    n_cal = max(1, round(f[2] * len(samples)))
    n_train = len(samples) - n_held - n_cal
    if n_train < 1:
        n_train, n_held, n_cal = 1, 1, len(samples) - 2
    parts = {"train": order[:n_train], "heldout": order[n_train: n_train + n_held],
             "calibration": order[n_train + n_held:]}
    out = {}
    for name, idx in parts.items():
        by_size: dict[tuple[int, int], list[GameSamples]] = {}
        for i in sorted(idx.tolist()):
            if len(samples[i]):
                by_size.setdefault((samples[i].height, samples[i].width), []).append(samples[i])
        buckets = []
        for key in sorted(by_size):
            gs = by_size[key]
            buckets.append({
                "u8": torch.from_numpy(np.concatenate([g.u8 for g in gs])),
                "i8": torch.from_numpy(np.concatenate([g.i8 for g in gs])),
                "scalars": torch.from_numpy(np.concatenate([g.scalars for g in gs])),
                "shares": torch.from_numpy(np.concatenate([g.shares for g in gs])),
                "outcome": np.concatenate([g.outcome for g in gs]),
                "game": np.concatenate([np.full(len(g), g.game) for g in gs]),
                "team": np.concatenate([g.team for g in gs]),
                "round": np.concatenate([g.round for g in gs]),
            })
        out[name] = Split(buckets)
    return out


def predict(net, split: Split, batch: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """(win probabilities [n], share predictions [n, 9]) of every sample of the split, bucket order."""
    import torch

    from gpu.loong_value_net import dequantize

    net.eval()
    dev = next(net.parameters()).device
    ps, ss = [], []
    with torch.no_grad():
        for b in split.buckets:
            for s in range(0, len(b["outcome"]), batch):
                v, sh = net(dequantize(b["u8"][s: s + batch].to(dev), b["i8"][s: s + batch].to(dev)),
                            b["scalars"][s: s + batch].to(dev))
                ps.append(torch.sigmoid(v).double().cpu().numpy())
                ss.append(torch.sigmoid(sh).double().cpu().numpy())
    return (np.concatenate(ps) if ps else np.zeros(0)), (np.concatenate(ss) if ss else np.zeros((0, 9)))


@dataclass
class HorizonFit:
    """One horizon's fit: the best checkpoint's weights and figures."""

    horizon: int
    lam: float
    state_dict: dict
    best_epoch: int
    epochs: int
    heldout_log_loss: float
    calibration: dict
    share_mse: float
    history: list[dict] = field(default_factory=list)
    stop_reason: str = ""

    def metrics(self) -> dict:
        c = self.calibration
        return {"horizon": self.horizon, "lambda": self.lam, "best_epoch": self.best_epoch, "epochs": self.epochs,
                "heldout_log_loss": self.heldout_log_loss, "calibration_log_loss": c["log_loss"],
                "constant_log_loss": c["constant_log_loss"], "ece": c["ece"], "passed": c["passed"],
                "calibration_share_mse": self.share_mse, "stop_reason": self.stop_reason}


def fit_device(name: str):
    """The torch device of the fit: 'cpu', 'cuda' (refused in one line without one) or 'auto'."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueFitError("device: 'cuda' asked for, but torch sees no GPU")
    return torch.device(name)


def fit_horizon(splits: dict[str, Split], cfg: ValueFitConfig, horizon: int, tracker=None,
                progress: Callable[[str], None] | None = None) -> HorizonFit:
    """One TD(lambda) fit (lambda = 1 - K / H), early-stopped on the held-out games (the paired, game-clustered
    one-sided test at 95%), then the calibration check on the calibration games."""
    import torch
    import torch.nn.functional as F

    from gpu.loong_value_net import LoongValueNet, dequantize, shape

    lam = 1.0 - cfg.sample_every / horizon
    torch.manual_seed(cfg.seed)
    dev = fit_device(cfg.device)
    net = LoongValueNet(shape(cfg.shape)).to(dev)
    opt = torch.optim.AdamW(net.parameters(), lr=cfg.learning_rate, weight_decay=1e-4)
    train, held, cal = splits["train"], splits["heldout"], splits["calibration"]
    y_held, g_held = held.cat("outcome"), held.cat("game")
    rng = np.random.default_rng(cfg.seed + horizon)
    best = None  # (epoch, per-sample held-out losses, state dict)
    history: list[dict] = []
    stop = f"max_epochs {cfg.max_epochs} reached"
    for epoch in range(1, cfg.max_epochs + 1):
        p_train, _ = predict(net, train)
        g_all = td_targets(train.cat("game"), train.cat("team"), train.cat("round"), p_train, train.cat("outcome"),
                           lam)
        targets, start = [], 0
        for b in train.buckets:  # the targets in bucket order, as predict returned them
            targets.append(torch.from_numpy(g_all[start: start + len(b["outcome"])]).float())
            start += len(b["outcome"])
        batches = [(k, s) for k, b in enumerate(train.buckets) for s in range(0, len(b["outcome"]), cfg.batch_size)]
        net.train()
        total, seen = 0.0, 0
        for j in rng.permutation(len(batches)):
            k, s = batches[j]
            b = train.buckets[k]
            perm = slice(s, s + cfg.batch_size)
            v, sh = net(dequantize(b["u8"][perm].to(dev), b["i8"][perm].to(dev)), b["scalars"][perm].to(dev))
            loss = F.binary_cross_entropy_with_logits(v, targets[k][perm].to(dev)) \
                + cfg.share_weight * F.mse_loss(torch.sigmoid(sh), b["shares"][perm].to(dev))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(v)
            seen += len(v)
        p_held, _ = predict(net, held)
        losses = log_loss(p_held, y_held)
        row = {"epoch": epoch, "train_loss": total / max(seen, 1), "heldout_log_loss": float(losses.mean()),
               "td_target_mean": float(g_all.mean()) if len(g_all) else 0.0}
        if best is None:
            improve, se, z = 0.0, 0.0, math.inf
        else:
            improve, se, z = paired_test(best[1], losses, g_held)
        row.update({"improvement": improve, "improvement_se": se, "z": z if math.isfinite(z) else 0.0})
        history.append(row)
        if tracker is not None:
            tracker.log_metrics({k: v for k, v in row.items() if k != "epoch"}, step=epoch)
        if progress:
            progress(f"H={horizon} epoch {epoch}: train loss {row['train_loss']:.4f}, held-out log loss "
                     f"{row['heldout_log_loss']:.4f}" + ("" if best is None else f", z {z:.2f}"))
        if best is None or z > Z_ONE_SIDED_95:
            best = (epoch, losses, {k: v.detach().cpu().clone() for k, v in net.state_dict().items()})
        elif epoch - best[0] >= cfg.patience:
            stop = (f"epoch {epoch}: held-out improvement {improve:.4f} (se {se:.4f}, z {z:.2f}) over epoch "
                    f"{best[0]} not significant (z <= {Z_ONE_SIDED_95}) for {cfg.patience} epoch(s)")
            break
    net.load_state_dict(best[2])
    p_cal, s_cal = predict(net, cal)
    base = float(train.cat("outcome").mean()) if train.n else 0.5
    c = calibration(p_cal, cal.cat("outcome"), base)
    share_true = torch.cat([b["shares"] for b in cal.buckets]).double().numpy() if cal.buckets else np.zeros((0, 9))
    share_mse = float(((s_cal - share_true) ** 2).mean()) if len(s_cal) else 0.0
    return HorizonFit(horizon, lam, best[2], best[0], len(history), float(best[1].mean()), c, share_mse, history,
                      stop)


# -- 4. save, load, plot -------------------------------------------------------------------------------------
@dataclass
class ValueFit:
    """A loaded fit: the network (eval mode) and what the file says about it."""

    net: object
    shape: str
    horizon: int
    lam: float
    sample_every: int
    passed: bool
    metrics: dict


FIELDS = ("format", "version", "shape", "state_dict", "horizon", "lambda", "sample_every", "passed", "metrics")


def save_value_fit(path: Path, fit: HorizonFit, cfg: ValueFitConfig, passed: bool, extra: dict | None = None) -> Path:
    """The chosen fit as one torch file, written atomically (a temporary file beside it, then renamed)."""
    import torch

    doc = {"format": FORMAT, "version": VERSION, "shape": cfg.shape, "state_dict": fit.state_dict,
           "horizon": fit.horizon, "lambda": fit.lam, "sample_every": cfg.sample_every, "passed": passed,
           "metrics": json.loads(json.dumps({**fit.metrics(), **(extra or {})}))}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(doc, tmp)
    os.replace(tmp, path)
    return path


def load_value_fit(path: str | Path) -> ValueFit:
    """Load a saved fit; a missing, corrupt or wrong file raises ValueFitError naming the file and the field."""
    import torch

    from gpu.loong_value_net import SHAPES, LoongValueNet

    p = Path(path)
    if not p.is_file():
        raise ValueFitError(f"{p}: no such value fit file")
    try:
        doc = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises several types for a file that is not its own
        raise ValueFitError(f"{p}: not a readable torch file ({type(e).__name__}: {str(e).splitlines()[0][:120]})") \
            from None
    if not isinstance(doc, dict):
        raise ValueFitError(f"{p}: not a value fit (a {type(doc).__name__}, not a dict)")
    for key in FIELDS:
        if key not in doc:
            raise ValueFitError(f"{p}: {key}: missing")
    if doc["format"] != FORMAT:
        raise ValueFitError(f"{p}: format: {doc['format']!r}, expected {FORMAT!r}")
    if doc["version"] != VERSION:
        raise ValueFitError(f"{p}: version: {doc['version']!r}, this code reads {VERSION}")
    if doc["shape"] not in SHAPES:
        raise ValueFitError(f"{p}: shape: unknown value network shape {doc['shape']!r} (known: {', '.join(SHAPES)})")
    h, k, lam = doc["horizon"], doc["sample_every"], doc["lambda"]
    if not (isinstance(h, int) and isinstance(k, int) and 1 <= k <= h):
        raise ValueFitError(f"{p}: horizon: {h!r} with sample_every {k!r} is not a horizon >= K >= 1")
    if not isinstance(lam, float) or abs(lam - (1 - k / h)) > 1e-9:
        raise ValueFitError(f"{p}: lambda: {lam!r}, expected 1 - K/H = {1 - k / h}")
    net = LoongValueNet(SHAPES[doc["shape"]])
    sd = doc["state_dict"]
    if not isinstance(sd, dict):
        raise ValueFitError(f"{p}: state_dict: not a dict of tensors")
    try:
        net.load_state_dict(sd)
    except RuntimeError as e:
        raise ValueFitError(f"{p}: state_dict: does not fit shape {doc['shape']} "
                            f"({str(e).splitlines()[1].strip()[:120] if len(str(e).splitlines()) > 1 else e})") \
            from None
    net.eval()
    return ValueFit(net, doc["shape"], h, lam, k, bool(doc["passed"]), dict(doc["metrics"]))


def reliability_png(fits: Sequence[HorizonFit], chosen: int, path: Path) -> Path:
    """Reliability diagram of every horizon's fit on the calibration games (equal-count bins)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(5.5, 5))
    ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--", label="perfect")
    for i, f in enumerate(fits):
        rows = f.calibration["bins"]
        c = f.calibration
        ax.plot([r["p"] for r in rows], [r["y"] for r in rows], marker="o", lw=2.5 if i == chosen else 1,
                label=f"H={f.horizon} (lambda {f.lam:.2f}): ECE {c['ece']:.3f}, log loss {c['log_loss']:.3f}"
                      + (" (chosen)" if i == chosen else ""))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("predicted win probability (bin mean)")
    ax.set_ylabel("realised outcome (bin mean; draw 0.5)")
    ax.set_title(f"privileged value: calibration games, {ECE_BINS} equal-count bins")
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# -- the whole op --------------------------------------------------------------------------------------------
@dataclass
class ValueFitResult:
    fit_path: Path
    plot_path: Path
    chosen_horizon: int
    lam: float
    passed: bool
    verdict: str
    fits: list[dict]
    games: int
    samples: dict[str, int]
    replays: str
    wall_seconds: float

    def summary(self) -> dict:
        d = asdict(self)
        d["fit_path"], d["plot_path"] = str(self.fit_path), str(self.plot_path)
        return d


class _NullChild:
    """Child runs when the parent is not an MLflow run: in-memory trackers (tests read them)."""

    def __init__(self) -> None:
        self.runs: dict[str, object] = {}

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator:
        from ops.tracking import NullTracker

        t = NullTracker()
        self.runs[name] = t
        yield t


def mlflow_children(parent):
    """``name -> context manager of a child run`` under the open MLflow run ``parent`` (ops.tracking)."""
    @contextlib.contextmanager
    def child(name: str):
        import mlflow

        from ops.tracking import MlflowTracker, git_commit

        with mlflow.start_run(run_name=name, nested=True, parent_run_id=parent.run_id,
                              tags={"git_commit": git_commit()}) as run:
            yield MlflowTracker(run)

    return child


def run(cfg: ValueFitConfig, out_dir: Path, tracker=None, *, replays: str | Path | None = None, children=None,
        progress: Callable[[str], None] | None = None) -> ValueFitResult:
    """Record the games (or read ``replays``), take the samples, fit every horizon (a child run each), keep the
    calibrated fit with the lowest calibration-set log loss (the lowest overall, flagged, when none passes), save
    it as ``out_dir/value_fit.pt`` with its reliability plot."""
    check_config(cfg)
    t0 = time.perf_counter()
    say = progress or (lambda line: None)
    import torch

    threads = torch.get_num_threads()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    try:
        return _run(cfg, out_dir, tracker, replays, children, say, t0)
    finally:
        torch.set_num_threads(threads)


def _run(cfg, out_dir, tracker, replays, children, say, t0) -> ValueFitResult:
    if replays is not None:
        paths = find_replays(replays)
        source = str(replays)
    else:
        source = str(out_dir / "replays")
        paths = record_games(cfg, out_dir / "replays", progress=say)
    samples = extract(paths, cfg.sample_every, cfg.lanes, progress=say)
    splits = split_games(samples, cfg)
    counts = {name: s.n for name, s in splits.items()}
    say(f"samples: {sum(counts.values())} from {len(samples)} games "
        f"({', '.join(f'{k} {v}' for k, v in counts.items())})")
    if min(counts.values()) == 0:
        empty = [k for k, v in counts.items() if v == 0]
        raise ValueFitError(f"samples: the {' and '.join(empty)} games hold no samples (games too short for "
                            f"sample_every {cfg.sample_every}?)")
    if tracker is not None:
        tracker.log_params({**{k: v for k, v in asdict(cfg).items()}, "replays": source, "max_ece": MAX_ECE,
                            "z_one_sided_95": Z_ONE_SIDED_95})
        tracker.log_metrics({f"samples_{k}": v for k, v in counts.items()})
    children = children or (mlflow_children(tracker) if _is_mlflow(tracker) else _NullChild())
    fits = []
    for h in cfg.horizons:
        with children(f"H={h}") as child:
            f = fit_horizon(splits, cfg, h, child, say)
            child.log_params({"horizon": h, "lambda": f.lam, "shape": cfg.shape, "sample_every": cfg.sample_every})
            child.log_metrics({k: float(v) for k, v in f.metrics().items() if isinstance(v, int | float)})
            child.set_tags({"horizon": str(h), "calibration": "passed" if f.calibration["passed"] else "failed"})
        fits.append(f)
        c = f.calibration
        say(f"H={h} (lambda {f.lam:.3f}): best epoch {f.best_epoch}/{f.epochs}, calibration log loss "
            f"{c['log_loss']:.4f} (constant {c['constant_log_loss']:.4f}), ECE {c['ece']:.4f}: "
            f"{'passes' if c['passed'] else 'fails'} the calibration check")
    passing = [i for i, f in enumerate(fits) if f.calibration["passed"]]
    pool = passing or list(range(len(fits)))
    chosen = min(pool, key=lambda i: fits[i].calibration["log_loss"])
    best = fits[chosen]
    passed = bool(passing)
    verdict = (f"H={best.horizon} chosen: the lowest calibration log loss of the {len(passing)} passing fit(s)"
               if passed else f"no fit passes the calibration check (ECE <= {MAX_ECE} and log loss below the "
                              f"constant predictor's); H={best.horizon}, the lowest calibration log loss, saved "
                              f"but not calibrated")
    fit_path = save_value_fit(out_dir / "value_fit.pt", best, cfg, passed,
                              {"samples": counts, "games": len(samples), "replays": source})
    plot = reliability_png(fits, chosen, out_dir / "reliability.png")
    result = ValueFitResult(fit_path, plot, best.horizon, best.lam, passed, verdict, [f.metrics() for f in fits],
                            len(samples), counts, source, time.perf_counter() - t0)
    (out_dir / "result.json").write_text(json.dumps(result.summary(), indent=1))
    if tracker is not None:
        tracker.log_metrics({"chosen_horizon": best.horizon, "lambda": best.lam, "passed": float(passed),
                             "calibration_log_loss": best.calibration["log_loss"], "ece": best.calibration["ece"],
                             "constant_log_loss": best.calibration["constant_log_loss"],
                             "wall_seconds": result.wall_seconds})
        tracker.log_artifact(plot)
        tracker.log_artifact(fit_path)
        tracker.set_tags({"calibration": "passed" if passed else "failed"})
    say(verdict)
    return result


def _is_mlflow(tracker) -> bool:
    from ops.tracking import MlflowTracker

    return isinstance(tracker, MlflowTracker)


# -- 5. the CLI ----------------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ops.loong.value_fit", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="small", help="test (seconds), small (this CPU, a minute or two), full")
    ap.add_argument("--out", required=True, help="output folder: replays/, value_fit.pt, reliability.png, "
                                                 "result.json")
    ap.add_argument("--replays", default=None, help="fit these replays (a folder of <stem>.json + .parquet) "
                                                    "instead of recording games")
    ap.add_argument("--seed", type=int, default=0, help="games, split, weights and shuffle derive from it")
    ap.add_argument("--mlflow", action="store_true", help="log a parent run and one child run a horizon to the "
                                                          "project's MLflow store (experiment arena-loong)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    try:
        cfg = profile_config(args.profile, seed=args.seed)
        check_config(cfg)
        if out.exists() and not out.is_dir():
            raise ValueFitError(f"--out {out}: is a file, not a folder")
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ValueFitError(f"--out {out}: cannot create it ({e.strerror})") from None
        if args.replays is not None:
            find_replays(args.replays)
        progress = lambda line: print(f"loong_value_fit: {line}", flush=True)  # noqa: E731
        if args.mlflow:
            from ops.tracking import mlflow_run

            with mlflow_run("arena-loong", "loong_value_fit", tags={"profile": args.profile}) as tracker:
                r = run(cfg, out, tracker, replays=args.replays, progress=progress)
        else:
            r = run(cfg, out, replays=args.replays, progress=progress)
    except ValueFitError as e:
        print(f"loong_value_fit: {e}", file=sys.stderr)
        return 2
    print(json.dumps({k: v for k, v in r.summary().items() if k != "fits"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["CONFIG_PROFILES", "ECE_BINS", "MAX_ECE", "PROFILES",
           "GameSamples", "ValueFit", "ValueFitConfig", "ValueFitError",
           "ValueFitResult", "calibration", "check_config", "ece_equal_count", "extract", "find_replays",
           "fit_horizon", "load_value_fit", "log_loss", "paired_test", "profile_config", "record_games",
           "reliability_png", "run", "save_value_fit", "shares_from_counts", "split_games",
           "target_counts", "td_targets", "team_outcome"]
