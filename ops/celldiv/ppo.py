"""PPO self-play for Cell Division's linear tiers: Hard's 13 weights and the switching 26.

The seed's loop ("Training the linear tiers: PPO self-play"), one iteration at a time:

- self-play: ``games_per_iteration`` games on sizes cycled through ``sizes``, each from a seeded
  ``random_start`` (blocked cells, pre-placed stones). Opponents per ``opponent``: the learner
  itself (both sides are learning samples, each from its own perspective) or a slightly older
  snapshot of itself (only the learner's moves are samples).
- behaviour policy: softmax(score / T) for the first ``sample_fraction`` of each game's moves, then
  greedy. T falls linearly from ``temperature_start`` at the first move to ``temperature_min``
  (0.05) at the end of the sampled part: T(x) = t0 + (t_min - t0) * x / sample_fraction, where x is
  the share of the game's moves already played. Greedy tail moves are not learning samples: their
  behaviour probability is 1, so PPO has no likelihood ratio for them.
- reward: every sampled move of a player gets tanh(margin / reward_scale), margin from its side.
- advantage: reward minus a running baseline (an exponential average over iterations of the mean
  reward, so first-mover luck in snapshot games does not read as skill), divided by the batch's
  standard deviation. There is no critic: the seed's model has none.
- update: PPO with a clipped ratio, entropy bonus, Adam, ``epochs`` passes of ``minibatches``
  minibatches, stopping early once the batch's approximate KL passes ``target_kl``.

Resumable: after each finished iteration the whole training state (weights, Adam, baseline,
snapshot pool, metrics, RNG state) goes to ``out_dir/checkpoint.pt`` atomically. Every random draw
of iteration i comes from generators seeded by (seed, i), so a resumed run retraces an
uninterrupted one exactly. The result's weights go to ``out_dir/weights.json`` in the versioned
format of ``games.celldiv.players.save_weights``.

CLI: ``python -m ops.celldiv.ppo --model linear --iterations 30 --out DIR [--profile small]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from games.celldiv.board import State, is_over, legal_moves, margin, play, random_start
from games.celldiv.features import features
from games.celldiv.match import game_seed, parse_sizes, play_match
from games.celldiv.players import LinearPlayer, SwitchingPlayer, hard_player, save_weights
from gpu.linear import INITS, MODELS, make_net, scores_np
from ops.profiles import Profiles
from ops.tracking import NullTracker, Tracker

CHECKPOINT_FORMAT = 1
OPPONENTS = ("self", "snapshot", "mixed")
EVAL_FORMS = ("shipped", "raw")
# seed-sequence keys that keep the streams of one run apart
_KEY_SELFPLAY, _KEY_SHUFFLE, _KEY_EVAL, _KEY_FINAL = 1, 2, 3, 4


@dataclass(frozen=True)
class PPOConfig:
    """Everything one PPO run depends on; the defaults are the seed's settings."""

    model: str = "linear"
    """'linear' (Hard's 13 weights, LinearNet) or 'switching' (the legacy Elite's 26, SwitchingLinearNet)."""
    iterations: int = 30
    """Iterations (one self-play batch + one PPO update each) the run ends at, counting resumed ones."""
    games_per_iteration: int = 64
    """Self-play games per iteration."""
    sizes: tuple[int, ...] = (4, 5, 6, 7, 8)
    """Board sizes, cycled game by game."""
    blocked: tuple[float, float] = (0.0, 0.12)
    """Range of the blocked fraction of cells in a random start."""
    stones: tuple[int, int] = (0, 2)
    """Range of pre-placed stones per player in a random start."""
    init: str = "random"
    """Starting weights: 'random' (N(0, init_scale^2) from the seed), 'medium', or 'hard' (the seed's)."""
    init_scale: float = 0.5
    """Standard deviation of the random init."""
    temperature_start: float = 1.0
    """Softmax temperature at a game's first move."""
    temperature_min: float = 0.05
    """Temperature reached at the end of the sampled part (falls linearly from temperature_start)."""
    sample_fraction: float = 0.75
    """Share of a game's moves sampled from the softmax; the rest are greedy and not learning samples."""
    reward_scale: float = 10.0
    """reward = tanh(margin / reward_scale) for every sampled move of a player."""
    baseline_decay: float = 0.9
    """Running baseline: b <- decay * b + (1 - decay) * mean reward, after each iteration; 1.0 keeps 0."""
    normalize_advantage: bool = True
    """Divide advantages (reward - baseline) by their batch standard deviation."""
    lr: float = 0.01
    """Adam learning rate."""
    clip: float = 0.2
    """PPO clip coefficient on the likelihood ratio."""
    epochs: int = 4
    """Passes over each batch (fewer when the KL stop fires)."""
    minibatches: int = 16
    """Minibatches per pass (16: ~75 samples each; more Adam steps per batch, the KL stop guards them)."""
    entropy_coef: float = 0.05
    """Entropy bonus weight."""
    target_kl: float | None = 0.03
    """Stop a batch's passes once the approximate KL to the behaviour policy exceeds this; None: never."""
    max_grad_norm: float = 0.5
    """Gradient norm clip per Adam step."""
    opponent: str = "mixed"
    """'self' (pure self-play), 'snapshot' (always an older snapshot once one exists) or 'mixed'."""
    snapshot_fraction: float = 0.5
    """With opponent='mixed': share of games against a snapshot (drawn uniformly from the pool)."""
    snapshot_every: int = 5
    """Iterations between snapshots of the learner added to the pool."""
    snapshot_pool: int = 4
    """Snapshots kept; the oldest leaves first, so opponents stay 'slightly older'."""
    eval_every: int = 5
    """Evaluate at iteration 0, every this many iterations and at the last one."""
    eval_games: int = 64
    """Games per evaluation (pairs from one start, colours swapped; a fixed seed, so evals are paired)."""
    eval_opponent: str = "medium"
    """Registered player the periodic evaluation plays."""
    eval_form: str = "shipped"
    """'shipped': linear plays as Hard (0.75 Medium + 0.25 trained), switching raw; 'raw': weights alone."""
    final_eval_games: int = 200
    """Games per pairing in the final evaluation."""
    final_eval_opponents: tuple[str, ...] = ("medium", "hard")
    """Opponents of the final evaluation (each form of the trained player plays each)."""
    converge_tol: float = 0.03
    """Converged = the first evaluation within this score rate of the run's best."""
    seed: int = 0
    """Seeds the init, every self-play game, every minibatch shuffle and the evaluations."""
    torch_threads: int = 1
    """Torch intra-op threads during the run (the model is tiny: more threads only add overhead)."""

    def __post_init__(self) -> None:
        checks = (
            (self.model in MODELS, f"model {self.model!r} is not one of {tuple(MODELS)}"),
            (self.init in INITS, f"init {self.init!r} is not one of {INITS}"),
            (self.opponent in OPPONENTS, f"opponent {self.opponent!r} is not one of {OPPONENTS}"),
            (self.eval_form in EVAL_FORMS, f"eval_form {self.eval_form!r} is not one of {EVAL_FORMS}"),
            (self.iterations >= 0, f"iterations must be >= 0, got {self.iterations}"),
            (self.games_per_iteration >= 1, f"games_per_iteration must be >= 1: {self.games_per_iteration}"),
            (0 < self.sample_fraction <= 1, f"sample_fraction must be in (0, 1], got {self.sample_fraction}"),
            (0 < self.temperature_min <= self.temperature_start, "need 0 < temperature_min <= start"),
            (self.epochs >= 1 and self.minibatches >= 1, "epochs and minibatches must be >= 1"),
            (self.eval_every >= 1 and self.snapshot_every >= 1, "eval_every and snapshot_every must be >= 1"),
        )
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        parse_sizes(self.sizes)


PROFILES: dict[str, dict] = {
    # seconds: the tests' smoke runs
    "test": dict(iterations=3, games_per_iteration=8, sizes=(4, 5), eval_every=2, eval_games=8,
                 final_eval_games=8, final_eval_opponents=("medium",)),
    # ~1.5 minutes per model on a busy 2-core CPU (60 x ~1.2 s + evals); beats Medium from a random init
    "small": dict(iterations=60, eval_every=5, eval_games=64, final_eval_games=200),
    # the seed's scale: 64 games per iteration, run well past convergence, tighter evaluations
    "full": dict(iterations=400, eval_every=10, eval_games=200, final_eval_games=1000),
}


CONFIG_PROFILES = Profiles("ppo", PPOConfig, PROFILES)


def config_for(profile: str, **overrides) -> PPOConfig:
    """A profile's config with ``overrides`` on top (e.g. ``model='switching'``); a bad profile, field or value is
    a ValueError (``ops.profiles.ProfileError``) naming it."""
    return CONFIG_PROFILES.resolve(profile, **overrides)


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be read or belongs to another run; the message names the file."""


@dataclass(frozen=True)
class PPOResult:
    """What ``run`` made: files, final figures and convergence."""

    weights_path: Path
    checkpoint_path: Path
    model: str
    iterations: int  # finished iterations in the checkpoint
    iterations_run: int  # of which this call ran
    resumed_from: int | None  # the checkpoint's iteration this call started from, if any
    weights: dict[str, list[float]]
    final_metrics: dict[str, float]  # the last iteration's training metrics + final eval score rates
    final_eval: dict[str, dict]  # "<form>_vs_<opponent>" -> MatchTally.summary() (Wilson interval inside)
    evals: list[dict]  # periodic evaluations: iteration, score_rate, wilson_low/high, train_seconds
    history: list[dict]  # per-iteration training metrics
    wall_time_s: float  # this call, final evaluation included
    train_seconds: float  # training time over all calls (resumes add up), evaluations included
    seconds_per_iteration: float
    best_eval_score: float
    converged_iteration: int | None  # first evaluation within converge_tol of the best
    converged_train_seconds: float | None
    still_improving: bool  # the best evaluation was the last one: more iterations may help

    def as_dict(self) -> dict:
        d = asdict(self)
        d["weights_path"], d["checkpoint_path"] = str(self.weights_path), str(self.checkpoint_path)
        return d


# ----------------------------------------------------------------------------------------- self-play


@dataclass
class Batch:
    """Learning samples of one iteration, padded: ``feats [S, K, 14]``, ``mask [S, K]``, ``action [S]``,
    ``temperature [S]``, ``reward [S]``; plus per-game figures for the metrics."""

    feats: torch.Tensor
    mask: torch.Tensor
    action: torch.Tensor
    temperature: torch.Tensor
    reward: torch.Tensor
    snapshot_rewards: list[float] = field(default_factory=list)  # the learner's, in games vs snapshots
    margins: list[int] = field(default_factory=list)  # |margin| of every game

    @property
    def size(self) -> int:
        return int(self.action.shape[0])


def temperature(x: float, config: PPOConfig) -> float | None:
    """Behaviour temperature after a share ``x`` of the game's moves; None: play greedily."""
    if x >= config.sample_fraction:
        return None
    t0, t1 = config.temperature_start, config.temperature_min
    return max(t1, t0 + (t1 - t0) * x / config.sample_fraction)


def _choose(scores: np.ndarray, temp: float | None, rng: np.random.Generator) -> int:
    if temp is None:
        return int(np.flatnonzero(scores == scores.max())[0])  # ties to the lowest index, as the players
    z = (scores - scores.max()) / temp
    c = np.cumsum(np.exp(z))
    return min(int(np.searchsorted(c, rng.random() * c[-1], side="right")), len(c) - 1)


def play_selfplay_game(
    start: State, weights: tuple[np.ndarray, np.ndarray], learners: tuple[bool, bool],
    config: PPOConfig, rng: np.random.Generator,
) -> tuple[list[tuple[np.ndarray, int, float, int]], int]:
    """One game, side p scored by ``weights[p]``; returns the learners' samples (feats [K, 14]
    float32, chosen index, temperature, side) and player 0's final margin."""
    state, total = start, int(legal_moves(start).size)
    samples = []
    for t in range(total):
        cells, f = features(state)
        side = state.to_move
        temp = temperature(t / total, config)
        k = _choose(scores_np(weights[side], f), temp, rng)
        if temp is not None and learners[side]:
            samples.append((f.astype(np.float32), k, temp, side))
        state = play(state, int(cells[k]))
    assert is_over(state)
    return samples, margin(state, 0)


def self_play(learner: np.ndarray, pool: list[np.ndarray], config: PPOConfig, iteration: int) -> Batch:
    """``games_per_iteration`` games of iteration ``iteration``; all draws from (seed, iteration)."""
    rng = np.random.default_rng([config.seed, _KEY_SELFPLAY, iteration])
    sizes = parse_sizes(config.sizes)
    feats, actions, temps, rewards = [], [], [], []
    batch_extra: dict[str, list] = {"snapshot_rewards": [], "margins": []}
    for g in range(config.games_per_iteration):
        start = random_start(sizes[g % len(sizes)], rng, blocked=config.blocked, stones=config.stones)
        vs_snapshot = bool(pool) and (
            config.opponent == "snapshot"
            or (config.opponent == "mixed" and rng.random() < config.snapshot_fraction)
        )
        if vs_snapshot:
            other = pool[int(rng.integers(len(pool)))]
            me = g % 2
            weights = (learner, other) if me == 0 else (other, learner)
            learners = (me == 0, me == 1)
        else:
            weights, learners = (learner, learner), (True, True)
        samples, m0 = play_selfplay_game(start, weights, learners, config, rng)
        batch_extra["margins"].append(abs(m0))
        for f, k, temp, side in samples:
            feats.append(f)
            actions.append(k)
            temps.append(temp)
            rewards.append(math.tanh((m0 if side == 0 else -m0) / config.reward_scale))
        if vs_snapshot:
            batch_extra["snapshot_rewards"].append(math.tanh((m0 if me == 0 else -m0) / config.reward_scale))
    kmax = max((len(f) for f in feats), default=1)
    padded = np.zeros((len(feats), kmax, feats[0].shape[1] if feats else 14), dtype=np.float32)
    mask = np.zeros((len(feats), kmax), dtype=bool)
    for i, f in enumerate(feats):
        padded[i, : len(f)] = f
        mask[i, : len(f)] = True
    return Batch(
        feats=torch.from_numpy(padded),
        mask=torch.from_numpy(mask),
        action=torch.tensor(actions, dtype=torch.int64),
        temperature=torch.tensor(temps, dtype=torch.float32),
        reward=torch.tensor(rewards, dtype=torch.float32),
        **batch_extra,
    )


# ----------------------------------------------------------------------------------------- PPO update


def _logp_entropy(net, batch: Batch, idx: torch.Tensor | slice) -> tuple[torch.Tensor, torch.Tensor]:
    logits = net(batch.feats[idx], batch.mask[idx], batch.temperature[idx])
    logp_all = torch.log_softmax(logits, dim=-1)
    logp = logp_all.gather(1, batch.action[idx, None]).squeeze(1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logp, entropy


def ppo_update(net, opt: torch.optim.Optimizer, batch: Batch, advantage: torch.Tensor,
               config: PPOConfig, iteration: int) -> dict[str, float]:
    """Clipped-ratio PPO on one batch; returns the metrics of the last pass run."""
    gen = torch.Generator().manual_seed(game_seed(config.seed, _KEY_SHUFFLE, iteration))
    with torch.no_grad():
        old_logp, _ = _logp_entropy(net, batch, slice(None))  # the weights that played the batch
    n = batch.size
    mb = max(1, math.ceil(n / config.minibatches))
    epochs_used, pg_losses, entropies = 0, [], []
    approx_kl = clip_frac = 0.0
    for _ in range(config.epochs):
        pg_losses, entropies = [], []
        perm = torch.randperm(n, generator=gen)
        for s in range(0, n, mb):
            idx = perm[s : s + mb]
            logp, entropy = _logp_entropy(net, batch, idx)
            ratio = (logp - old_logp[idx]).exp()
            adv = advantage[idx]
            pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - config.clip, 1 + config.clip)).mean()
            loss = pg_loss - config.entropy_coef * entropy.mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), config.max_grad_norm)
            opt.step()
            pg_losses.append(pg_loss.item())
            entropies.append(entropy.mean().item())
        epochs_used += 1
        with torch.no_grad():
            logp, _ = _logp_entropy(net, batch, slice(None))
            log_ratio = logp - old_logp
            approx_kl = float(((log_ratio.exp() - 1) - log_ratio).mean())  # the k3 estimator
            clip_frac = float(((log_ratio.exp() - 1).abs() > config.clip).float().mean())
        if config.target_kl is not None and approx_kl > config.target_kl:
            break
    return {
        "policy_loss": float(np.mean(pg_losses)),
        "entropy": float(np.mean(entropies)),
        "approx_kl": approx_kl,
        "clip_frac": clip_frac,
        "epochs_used": float(epochs_used),
    }


_NO_UPDATE = {"policy_loss": 0.0, "entropy": 0.0, "approx_kl": 0.0, "clip_frac": 0.0, "epochs_used": 0.0}

# ----------------------------------------------------------------------------------------- evaluation


def trained_player(model: str, weights: np.ndarray, form: str, name: str) -> LinearPlayer | SwitchingPlayer:
    """``form`` 'shipped': linear as Hard plays it (0.75 Medium + 0.25 trained); 'raw': the weights alone."""
    if model == "switching":
        return SwitchingPlayer(weights[0], weights[1], name=name)
    return hard_player(weights, name=name) if form == "shipped" else LinearPlayer(weights, name=name)


def evaluate(model: str, weights: np.ndarray, form: str, opponent: str, *, games: int, sizes, seed: int):
    """``play_match`` of the trained player against a registered one -> MatchTally."""
    name = "hard-trained" if form == "shipped" else "linear-raw"
    name = "switching-trained" if model == "switching" else name
    return play_match(lambda s: trained_player(model, weights, form, name), opponent,
                      games=games, sizes=sizes, seed=seed)


def _eval_forms(model: str) -> tuple[str, ...]:
    return ("shipped", "raw") if model == "linear" else ("shipped",)


# ----------------------------------------------------------------------------------------- checkpoints


def _atomic_save(obj: dict, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)  # a run killed mid-write leaves the previous checkpoint intact


# fields a resumed run may change; anything else means another run's checkpoint
RESUMABLE_FIELDS = {"iterations", "final_eval_games", "final_eval_opponents", "torch_threads"}


def load_checkpoint(path: Path, config: PPOConfig) -> dict:
    """Read and check a checkpoint; a damaged file or one from another config raises CheckpointError."""
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises several types for truncated or foreign files
        raise CheckpointError(
            f"{path}: checkpoint is corrupted or unreadable ({type(e).__name__}: {e}). "
            "Delete it to start over, or give another out_dir."
        ) from e
    need = {"format", "iteration", "config", "model", "optimizer", "baseline", "pool", "history", "evals",
            "train_seconds", "torch_rng"}
    if not isinstance(ckpt, dict) or not need <= set(ckpt):
        missing = sorted(need - set(ckpt)) if isinstance(ckpt, dict) else sorted(need)
        raise CheckpointError(f"{path}: not a PPO checkpoint (missing {', '.join(missing)})")
    if ckpt["format"] != CHECKPOINT_FORMAT:
        raise CheckpointError(
            f"{path}: checkpoint format {ckpt['format']!r}; this version reads {CHECKPOINT_FORMAT}"
        )
    mine = _jsonable(asdict(config))
    differ = sorted(k for k in mine if k not in RESUMABLE_FIELDS and ckpt["config"].get(k) != mine[k])
    if differ:
        detail = ", ".join(f"{k}: {ckpt['config'].get(k)!r} -> {mine[k]!r}" for k in differ)
        raise CheckpointError(
            f"{path}: checkpoint was written by a run with other settings ({detail}); "
            "resume with the same config or give another out_dir."
        )
    return ckpt


def _jsonable(d: dict) -> dict:
    return json.loads(json.dumps(d))  # tuples -> lists, so saved and current configs compare equal


@contextmanager
def _torch_threads(n: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# ----------------------------------------------------------------------------------------- the run


def run(
    config: PPOConfig,
    *,
    out_dir: Path,
    tracker: Tracker | None = None,
    progress: Callable[[int, int, dict], None] | None = None,
) -> PPOResult:
    """Train (resuming from ``out_dir/checkpoint.pt`` if there is one), export ``out_dir/weights.json``,
    evaluate. ``progress(iteration, total, metrics)`` is called after each finished iteration."""
    with _torch_threads(config.torch_threads):
        return _run(config, Path(out_dir), tracker or NullTracker(), progress)


def _run(config: PPOConfig, out_dir: Path, tracker: Tracker, progress) -> PPOResult:
    t_call = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    ckpt_path = out_dir / "checkpoint.pt"
    net = make_net(config.model, init=config.init, seed=config.seed, init_scale=config.init_scale)
    opt = torch.optim.Adam(net.parameters(), lr=config.lr)
    sizes = parse_sizes(config.sizes)
    eval_seed = game_seed(config.seed, _KEY_EVAL)

    start_iter, resumed_from, baseline, train_seconds = 0, None, 0.0, 0.0
    pool: list[np.ndarray] = []
    history: list[dict] = []
    evals: list[dict] = []
    if ckpt_path.exists():
        ckpt = load_checkpoint(ckpt_path, config)
        net.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        torch.set_rng_state(ckpt["torch_rng"])
        start_iter = resumed_from = int(ckpt["iteration"])
        baseline, train_seconds = float(ckpt["baseline"]), float(ckpt["train_seconds"])
        pool = [p.double().numpy() for p in ckpt["pool"]]
        history, evals = list(ckpt["history"]), list(ckpt["evals"])
    # logged only once the checkpoint (if any) has been read: a refused resume leaves the run clean
    tracker.log_params({k: str(v) if isinstance(v, tuple) else v for k, v in asdict(config).items()})
    tracker.set_tags({"game": "celldiv", "model": config.model, "resumed_from": str(resumed_from)})

    def periodic_eval(iteration: int) -> dict:
        tally = evaluate(config.model, net.flat(), config.eval_form, config.eval_opponent,
                         games=config.eval_games, sizes=sizes, seed=eval_seed)
        s = tally.summary()
        row = {"iteration": iteration, "train_seconds": train_seconds,
               **{k: s[k] for k in ("score_rate", "wilson_low", "wilson_high", "mean_margin")}}
        evals.append(row)
        tracker.log_metrics({f"eval_score_vs_{config.eval_opponent}": s["score_rate"],
                             "eval_wilson_low": s["wilson_low"], "eval_wilson_high": s["wilson_high"],
                             "eval_mean_margin": s["mean_margin"]}, step=iteration)
        return row

    if start_iter == 0:
        t0 = time.perf_counter()
        periodic_eval(0)
        train_seconds += time.perf_counter() - t0
        evals[-1]["train_seconds"] = train_seconds

    for it in range(start_iter + 1, config.iterations + 1):
        t0 = time.perf_counter()
        batch = self_play(net.flat(), pool, config, it)
        t_play = time.perf_counter() - t0
        advantage = batch.reward - baseline
        if config.normalize_advantage and batch.size > 1:
            advantage = advantage / (advantage.std() + 1e-8)
        metrics = ppo_update(net, opt, batch, advantage, config, it) if batch.size else _NO_UPDATE.copy()
        mean_reward = float(batch.reward.mean()) if batch.size else 0.0
        baseline = config.baseline_decay * baseline + (1 - config.baseline_decay) * mean_reward
        if it % config.snapshot_every == 0:
            pool = (pool + [net.flat()])[-config.snapshot_pool :]
        metrics.update(
            mean_reward=mean_reward,
            reward_vs_snapshot=float(np.mean(batch.snapshot_rewards)) if batch.snapshot_rewards else math.nan,
            mean_abs_margin=float(np.mean(batch.margins)),
            samples=float(batch.size),
            selfplay_seconds=t_play,
            update_seconds=time.perf_counter() - t0 - t_play,
            weight_norm=float(np.linalg.norm(net.flat())),
        )
        train_seconds += time.perf_counter() - t0
        if it % config.eval_every == 0 or it == config.iterations:
            t1 = time.perf_counter()
            metrics["eval_score"] = periodic_eval(it)["score_rate"]
            train_seconds += time.perf_counter() - t1
            evals[-1]["train_seconds"] = train_seconds
        metrics["train_seconds"] = train_seconds
        history.append({"iteration": it, **metrics})
        # the eval went out under its own name; reward_vs_snapshot is NaN until a snapshot exists
        tracker.log_metrics({k: v for k, v in metrics.items() if k != "eval_score" and math.isfinite(v)},
                            step=it)
        _atomic_save({
            "format": CHECKPOINT_FORMAT, "iteration": it, "config": _jsonable(asdict(config)),
            "model": net.state_dict(), "optimizer": opt.state_dict(), "baseline": baseline,
            "pool": [torch.from_numpy(p) for p in pool], "history": history, "evals": evals,
            "train_seconds": train_seconds, "torch_rng": torch.get_rng_state(),
        }, ckpt_path)
        if progress:
            progress(it, config.iterations, metrics)

    done = max(config.iterations, start_iter)
    weights_path = save_weights(
        out_dir / "weights.json", net.kind, version=f"ppo-{config.model}-seed{config.seed}-it{done}",
        source=f"ops.celldiv.ppo: PPO self-play, {done} iterations x {config.games_per_iteration} games, "
               f"init {config.init}, opponent {config.opponent}, seed {config.seed}",
        **net.vectors(),
    )
    tracker.log_artifact(weights_path)

    final_eval: dict[str, dict] = {}
    final_seed = game_seed(config.seed, _KEY_FINAL)
    if config.final_eval_games > 0:
        for form in _eval_forms(config.model):
            for opp in config.final_eval_opponents:
                tally = evaluate(config.model, net.flat(), form, opp, games=config.final_eval_games,
                                 sizes=sizes, seed=final_seed)
                final_eval[f"{form}_vs_{opp}"] = tally.summary()
    final_metrics = {k: v for k, v in (history[-1] if history else {}).items()
                     if k not in ("iteration", "eval_score")}
    for key, summary in final_eval.items():
        final_metrics.update({f"final_{key}_score": summary["score_rate"],
                              f"final_{key}_wilson_low": summary["wilson_low"],
                              f"final_{key}_wilson_high": summary["wilson_high"]})
    tracker.log_metrics(final_metrics, step=done)

    conv = convergence(evals, config.converge_tol)
    trained = [h for h in history if h["iteration"] > 0]
    per_iter = float(np.mean([h["selfplay_seconds"] + h["update_seconds"] for h in trained] or [0.0]))
    return PPOResult(
        weights_path=weights_path, checkpoint_path=ckpt_path, model=config.model, iterations=done,
        iterations_run=max(0, config.iterations - start_iter), resumed_from=resumed_from,
        weights={k: [float(x) for x in v] for k, v in net.vectors().items()},
        final_metrics=final_metrics, final_eval=final_eval, evals=evals, history=history,
        wall_time_s=time.perf_counter() - t_call, train_seconds=train_seconds, seconds_per_iteration=per_iter,
        **conv,
    )


def convergence(evals: list[dict], tol: float) -> dict:
    """The first evaluation within ``tol`` of the best score: iteration and training seconds to reach it."""
    if not evals:
        return {"best_eval_score": math.nan, "converged_iteration": None,
                "converged_train_seconds": None, "still_improving": False}
    best = max(e["score_rate"] for e in evals)
    first = next(e for e in evals if e["score_rate"] >= best - tol)
    return {"best_eval_score": best, "converged_iteration": first["iteration"],
            "converged_train_seconds": first["train_seconds"],
            "still_improving": first is evals[-1] and len(evals) > 1}


# ----------------------------------------------------------------------------------------- CLI


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ops.celldiv.ppo", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=tuple(MODELS), default="linear")
    p.add_argument("--profile", choices=tuple(PROFILES), default=None, help="config overrides to start from")
    p.add_argument("--iterations", type=int, default=None)
    p.add_argument("--games-per-iteration", type=int, default=None)
    p.add_argument("--sizes", default=None, help="'4-8', '6' or '4,6,8'")
    p.add_argument("--init", choices=INITS, default=None)
    p.add_argument("--opponent", choices=OPPONENTS, default=None)
    p.add_argument("--eval-every", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--out", type=Path, required=True, help="folder for checkpoint.pt and weights.json")
    p.add_argument("--mlflow", metavar="EXPERIMENT", default=None, help="log to this MLflow experiment")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    overrides = {k: v for k, v in {
        "model": args.model, "iterations": args.iterations, "games_per_iteration": args.games_per_iteration,
        "sizes": parse_sizes(args.sizes) if args.sizes else None, "init": args.init,
        "opponent": args.opponent, "eval_every": args.eval_every, "seed": args.seed,
    }.items() if v is not None}
    config = config_for(args.profile, **overrides) if args.profile else PPOConfig(**overrides)
    from tqdm import tqdm

    bar = tqdm(total=config.iterations, desc=f"ppo {config.model}", unit="it", file=sys.stderr)

    def progress(it: int, total: int, m: dict) -> None:
        bar.n = it
        post = {"kl": f"{m['approx_kl']:.3f}", "ent": f"{m['entropy']:.2f}",
                "r_snap": f"{m['reward_vs_snapshot']:.2f}"}
        if "eval_score" in m:
            post["eval"] = f"{m['eval_score']:.2f}"
        bar.set_postfix(post, refresh=False)
        bar.refresh()

    try:
        if args.mlflow:
            from ops.tracking import mlflow_run

            with mlflow_run(args.mlflow, f"ppo-{config.model}") as tracker:
                result = run(config, out_dir=args.out, tracker=tracker, progress=progress)
        else:
            result = run(config, out_dir=args.out, progress=progress)
    except CheckpointError as e:
        bar.close()
        print(f"error: {e}", file=sys.stderr)
        return 2
    bar.close()
    summary = {k: v for k, v in result.as_dict().items() if k not in ("history",)}
    print(json.dumps(summary, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
