"""The Cell Division teacher: AlphaZero self-play training, then the teacher data for the student.

``run(config, out_dir=..., kickstart=..., executor=...)`` first imitates the kickstart player (the
PPO-trained switching linear model, ``kickstart_games`` of its games: its move as the policy target,
the final margin through tanh as the value target), then repeats (self-play -> replay buffer ->
Lightning fit). Self-play plays ``games_per_iteration`` games from random starts on sizes 4-8, split
into batches of ``batch_games`` games; each batch is one work item (``ops.execution``: in this
process, on a local pool or on Ray), searched side by side with one network call per simulation
wave, with its own seed (config seed, round, batch), so the buffer is the same bytes on every
backend and worker count. The search is the Gumbel root with sequential halving (policy target:
the completed-Q improved policy; Danihelka et al. 2022) or PUCT (target: the visit distribution).
Value target: tanh(final margin / ``margin_scale``) from the mover's view (0: the sign, win/draw/
loss). Playout cap randomisation: only a ``full_search_fraction`` share of moves is searched in
full and recorded; the others get ``fast_simulations`` and are not. Each round ends with an atomic
checkpoint (model, optimizer, round, buffer), so a killed run resumes where it stopped.

``generate_teacher_data(teacher_ckpt, config, out_path, executor=...)`` lets the frozen teacher play
with search, in batches the same way, and records each position and its search distribution to one
Parquet file, whose schema is docs/celldiv-teacher-data.md; ``load_teacher_data`` reads it back and
refuses anything else.

CLI: ``arena celldiv teacher --profile small --out DIR [--backend local --workers 2]`` (or
``python -m ops.celldiv.teacher``).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import lightning as L
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from games.celldiv.board import EMPTY, PositionError, State, margin, random_start
from games.celldiv.encoding import (
    GRID,
    NUM_ACTIONS,
    CellDivisionAdapter,
    action_mask,
    action_to_cell,
    cell_to_action,
    encode,
    offset,
)
from games.celldiv.match import game_seed as _seed
from games.celldiv.match import parse_sizes, play_match
from games.celldiv.players import DEFAULT_SWITCHING, SwitchingPlayer, load_weights
from gpu.celldiv_lightning import PositionDataModule, TeacherModule
from gpu.celldiv_nets import CellDivNet, OnnxEvaluator, TorchEvaluator, count_params, policy_logits
from gpu.training import make_trainer
from ops.celldiv.teacher_args import add_teacher_arguments
from ops.checkpoints import CheckpointError, load_checkpoint, model_version, save_checkpoint
from ops.cli_common import executor_from
from ops.execution import Executor, InProcessExecutor, WorkItem, cached, gather
from ops.profiles import ProfileError, Profiles
from ops.tracking import NullTracker, Tracker
from search import run_gumbel, run_puct

Progress = Callable[[str], None]
CHECKPOINT = "checkpoint.pt"  # resumable state, rewritten after every iteration
TEACHER = "teacher.pt"  # the finished teacher (model only)
TEACHER_KIND = "celldiv_teacher"
STATE_KIND = "celldiv_teacher_state"
KICKSTART_ROUND = 2_000_000  # the round id of the kickstart games' seeds (self-play rounds count from 0)
DATA_ROUND = 1_000_000  # the round id of the teacher-data games' seeds


@dataclass(frozen=True)
class TeacherConfig:
    """AlphaZero teacher training and teacher-data generation (profiles: ``PROFILES``)."""

    shape: str = "b6c64"  # network shape (gpu.celldiv_nets): b<blocks>c<channels>, policy + value heads
    iterations: int = 60  # rounds of self-play -> replay buffer -> fit
    games_per_iteration: int = 256  # self-play games per round
    parallel_games: int = 64  # games of a batch searched side by side; their leaves share one network call per wave
    batch_games: int = 64  # games per work item (its own seed); the batches never depend on the worker count
    search: str = "gumbel"  # 'gumbel' (sequential halving, completed-Q policy target) or 'puct' (visit counts)
    simulations: int = 200  # simulations per self-play move searched in full (the seed: 100-400)
    considered: int = 16  # Gumbel: root actions drawn for sequential halving (the paper's m)
    gumbel_scale: float = 1.0  # Gumbel: scale of the root noise in self-play and data (0: deterministic)
    # Gumbel: sigma(q) = (50 + max visits) * c_scale * q, q min-max rescaled. 0.1: Gumbel MuZero's and mctx's value;
    # at 1 the improved policy is all but one-hot on a few-visit Q, and a teacher trained on it distilled into an
    # Elite at 0.34 to 0.65 against switching from one machine to the next (docs/benchmarks.md, "Fourth pass")
    c_scale: float = 0.1
    full_search_fraction: float = 1.0  # playout cap randomisation: share of moves searched in full and recorded
    fast_simulations: int = 0  # simulations of the other moves (not recorded); 0: the network's prior alone
    leaves_per_tree: int = 1  # descents per tree per wave (virtual loss); >1 trades accuracy for batch size
    c_puct: float = 1.25  # PUCT exploration constant (PUCT search, and below a Gumbel root)
    dirichlet_alpha: float = 0.3  # PUCT root noise concentration
    dirichlet_fraction: float = 0.25  # PUCT root noise weight in self-play
    temperature_moves: int = 8  # plies chosen at random (visits, or the noisy Gumbel pick); the best move after
    margin_scale: float = 10.0  # value target tanh(margin / scale), the PPO tiers' reward; 0: sign (win/draw/loss)
    sizes: str = "4-8"  # board sizes of the random starts, cycled game by game
    kickstart_games: int = 0  # games of the kickstart player imitated before self-play; 0: start from random weights
    kickstart_epochs: int = 2  # passes over the kickstart positions
    kickstart_noise: float = 0.15  # share of kickstart moves played at random instead (the target stays its move)
    replay_capacity: int = 250_000  # positions kept in the replay buffer, newest first
    sample_reuse: float = 4.0  # training samples per new self-play position (steps = reuse * new / batch)
    batch_size: int = 256  # training batch
    learning_rate: float = 1e-3  # AdamW learning rate
    weight_decay: float = 1e-4  # AdamW weight decay
    value_weight: float = 1.0  # weight of the value MSE beside the policy cross-entropy
    augment: bool = True  # train on a random one of the board's 8 symmetries per sample
    holdout_fraction: float = 0.05  # games of the buffer held out for the validation losses
    eval_every: int = 5  # rounds between win-rate checks of the raw policy (0: last round only)
    eval_games: int = 100  # games per win-rate check
    eval_opponent: str = "medium"  # the fixed tier the raw policy is checked against
    data_games: int = 4000  # games the frozen teacher plays for the student's data
    data_simulations: int = 256  # simulations per move for the teacher data (the seed: 256)
    data_temperature_moves: int = 8  # teacher-data plies chosen at random, for varied positions
    data_dirichlet_fraction: float = 0.0  # PUCT root noise while generating data (0: the teacher's clean view)
    backend: str = "onnxruntime"  # runtime of self-play and data games: onnxruntime (~2x on CPU) or torch
    accelerator: str = "cpu"  # Lightning accelerator for training; the torch backend searches on it too
    threads: int = 1  # CPU threads for torch and onnxruntime; 1 is fastest when the cores are shared
    seed: int = 0  # every game, split and shuffle derives from it
    progress_bar: bool = False  # Lightning progress bars (CLI runs)


TABLE: dict[str, dict] = {  # profile -> TeacherConfig fields off its defaults
    # seconds: the end-to-end test
    "test": dict(
        shape="b1c16", iterations=2, games_per_iteration=8, parallel_games=8, batch_games=4, simulations=8,
        considered=4, full_search_fraction=0.75, fast_simulations=2, kickstart_games=8, kickstart_epochs=1,
        sample_reuse=2.0, batch_size=64, eval_every=0, eval_games=4, data_games=8, data_simulations=8,
        data_temperature_moves=4, sizes="4-5", holdout_fraction=0.2,
    ),
    # this 2-core CPU, in the main job beside Loong (figures: docs/benchmarks.md, "Elite, the strongest
    # tier"). b4c32, not b6c64: b6c64 runs ~3,400 evaluations/s against ~15,000 for b4c32 (onnxruntime,
    # 1 thread, quiet machine).
    "small": dict(
        shape="b4c32", iterations=4, games_per_iteration=256, parallel_games=32, batch_games=32, simulations=16,
        considered=8, kickstart_games=2000, kickstart_epochs=2, sample_reuse=2.0, learning_rate=2e-3,
        eval_every=2, eval_games=100, eval_opponent="switching", data_games=768, data_simulations=32,
    ),
    # the seed's scale, for a GPU box (not run here: this project's machine has no GPU)
    "full": dict(backend="torch", accelerator="auto", kickstart_games=20_000, kickstart_epochs=2,
                 eval_opponent="switching"),
}
CONFIG_PROFILES = Profiles("teacher", TeacherConfig, TABLE)
PROFILES: dict[str, TeacherConfig] = CONFIG_PROFILES.configs()  # every profile's config, by name


class TeacherDataError(ValueError):
    """A teacher-data file that is missing, unreadable or off-schema; the message names file and column."""


def load_teacher(path: Path) -> tuple[CellDivNet, dict]:
    """The teacher network (eval mode) and its checkpoint fields, from teacher.pt or checkpoint.pt."""
    doc = load_checkpoint(path, kinds=(TEACHER_KIND, STATE_KIND), keys=("shape", "model", "version"))
    net = CellDivNet(doc["shape"])
    try:
        net.load_state_dict(doc["model"])
    except RuntimeError as e:
        raise CheckpointError(f"{path}: field 'model' does not fit shape {doc['shape']!r} ({e})") from None
    return net.eval(), doc


# ----------------------------------------------------------------------------- playing with search
def value_target(final_margin: np.ndarray | float, margin_scale: float) -> np.ndarray:
    """The value a network learns for a final margin (mover's view): tanh(margin / scale), or the sign
    (win/draw/loss) when ``margin_scale`` is 0."""
    m = np.asarray(final_margin, np.float64)
    return (np.tanh(m / margin_scale) if margin_scale > 0 else np.sign(m)).astype(np.float32)


class SearchAdapter(CellDivisionAdapter):
    """``CellDivisionAdapter`` with the two calls the search makes per new node made cheaper: the legal
    mask without a full encode, and a step that does not re-validate the whole board (``State``
    checks every cell with ``np.isin``; here only the one cell that changes is checked). Same
    results as the reference adapter (a test compares them). ``margin_scale``: terminal values on the
    network's value scale (``value_target``); 0, the reference's sign of the margin."""

    def __init__(self, margin_scale: float = 0.0) -> None:
        self.margin_scale = margin_scale

    @staticmethod
    def legal_mask(state: State) -> np.ndarray:
        n, o = state.size, offset(state.size)
        mask = np.zeros((GRID, GRID), bool)
        mask[o : o + n, o : o + n] = state.board == EMPTY
        return mask.reshape(-1)

    @staticmethod
    def step(state: State, action: int) -> State:
        n, o = state.size, offset(state.size)
        r, c = divmod(int(action), GRID)
        r, c = r - o, c - o
        if not (0 <= r < n and 0 <= c < n) or state.board[r, c] != EMPTY:
            raise PositionError(f"action {action} is not a legal move of\n{state}")
        board = state.board.copy()
        board[r, c] = state.to_move + 1
        child = object.__new__(State)  # the board is valid by construction: skip __post_init__
        board.setflags(write=False)
        object.__setattr__(child, "board", board)
        object.__setattr__(child, "to_move", 1 - state.to_move)
        return child

    def terminal_value(self, state: State) -> float | None:
        if (state.board == EMPTY).any():
            return None
        return float(value_target(margin(state, state.to_move), self.margin_scale))


@dataclass
class _Slot:
    game_id: int
    state: State
    ply: int = 0
    rows: list = field(default_factory=list)


COLUMNS = ("game_id", "ply", "size", "to_move", "obs", "policy", "legal", "root_value", "margin", "outcome")


@dataclass(frozen=True)
class SearchSettings:
    """How a batch of games is searched and recorded (picklable: it travels with the work item)."""

    search: str = "gumbel"  # 'gumbel' or 'puct'
    simulations: int = 16  # per move searched in full (recorded)
    temperature_moves: int = 8  # plies chosen at random: from the visits (PUCT) or the noisy Gumbel pick
    considered: int = 16  # Gumbel: root actions in sequential halving
    gumbel_scale: float = 1.0
    c_scale: float = 0.1  # Gumbel: the weight of the rescaled completed Q in sigma (and the improved policy)
    c_puct: float = 1.25
    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.25  # PUCT root noise
    leaves_per_tree: int = 1
    margin_scale: float = 0.0  # terminal values (see SearchAdapter)
    full_search_fraction: float = 1.0  # playout cap randomisation: share of moves searched in full
    fast_simulations: int = 0  # simulations of the others (0: the prior's best, no search)

    def __post_init__(self) -> None:
        if self.search not in ("gumbel", "puct"):
            raise ValueError(f"search: {self.search!r}; expected 'gumbel' or 'puct'")
        if not 0.0 < self.full_search_fraction <= 1.0:
            raise ValueError(f"full_search_fraction: must be in (0, 1], got {self.full_search_fraction}")
        if not self.c_scale > 0:
            raise ValueError(f"c_scale: must be above 0, got {self.c_scale}")
        if self.simulations < 1 or self.fast_simulations < 0:
            raise ValueError(f"simulations: must be >= 1 (fast_simulations >= 0), got {self.simulations} "
                             f"and {self.fast_simulations}")


def _search(game: SearchAdapter, evaluator: Callable, states: list[State], simulations: int,
            settings: SearchSettings, rng: np.random.Generator, plies: list[int]) -> list[tuple]:
    """(target policy, chosen action, root value) for each state, by one batched search."""
    if not states:
        return []
    s = settings
    if simulations == 0:  # the prior alone: its best legal action, no search
        priors, values = evaluator(states)
        legal = np.stack([game.legal_mask(x) for x in states])
        p = np.where(legal, priors, 0.0)
        p /= p.sum(axis=1, keepdims=True)
        return [(p[i], int(np.argmax(p[i])), float(values[i])) for i in range(len(states))]
    if s.search == "gumbel":
        out = run_gumbel(states, game=game, evaluator=evaluator, num_simulations=simulations, rng=rng,
                         max_num_considered_actions=s.considered, gumbel_scale=s.gumbel_scale, c_puct=s.c_puct,
                         c_scale=s.c_scale,
                         leaves_per_tree=s.leaves_per_tree, num_actions=NUM_ACTIONS)
        res = []
        for i, ply in enumerate(plies):
            pi = out.improved_policy[i]
            action = int(out.action[i]) if ply < s.temperature_moves else int(np.argmax(pi))
            res.append((pi, action, float(out.root_value[i])))
        return res
    out = run_puct(states, game=game, evaluator=evaluator, num_simulations=simulations, rng=rng, c_puct=s.c_puct,
                   dirichlet_alpha=s.dirichlet_alpha, dirichlet_fraction=s.dirichlet_fraction,
                   leaves_per_tree=s.leaves_per_tree, num_actions=NUM_ACTIONS)
    res = []
    for i, ply in enumerate(plies):
        visits = out.visit_counts[i].astype(np.float64)
        pi = visits / visits.sum()
        action = int(rng.choice(NUM_ACTIONS, p=pi)) if ply < s.temperature_moves else int(np.argmax(visits))
        res.append((pi, action, float(out.root_value[i])))
    return res


def play_search_games(
    evaluator: Callable,
    starts: Sequence[tuple[int, State]],
    *,
    parallel: int,
    settings: SearchSettings,
    rng: np.random.Generator,
    on_game: Callable[[int], None] | None = None,
) -> dict[str, np.ndarray]:
    """Play every ``(game_id, start)`` to the end, ``parallel`` at a time, each move by one batched
    search over all running games (``settings``). Returns one row per recorded position (see
    ``COLUMNS``): obs ``[P, 3, 8, 8]`` uint8, policy ``[P, 64]`` float32 (the search's target: the
    improved policy of a Gumbel root, the visit distribution of PUCT), legal ``[P, 64]``, root_value
    (mover's view), margin and outcome (final, mover's view). With playout cap randomisation only the
    moves searched in full are recorded; ``ply`` counts every move."""
    game = SearchAdapter(settings.margin_scale)
    queue = list(starts)[::-1]
    running: list[_Slot] = []
    done: list[tuple[int, list[tuple]]] = []
    while queue or running:
        while queue and len(running) < parallel:
            gid, start = queue.pop()
            running.append(_Slot(gid, start))
        if settings.full_search_fraction < 1.0:
            full = rng.random(len(running)) < settings.full_search_fraction
        else:
            full = np.ones(len(running), bool)
        picks: dict[int, tuple] = {}
        for group, sims in ((np.flatnonzero(full), settings.simulations),
                            (np.flatnonzero(~full), settings.fast_simulations)):
            found = _search(game, evaluator, [running[i].state for i in group], sims, settings, rng,
                            [running[i].ply for i in group])
            picks.update(zip(group.tolist(), found))
        still = []
        for i, slot in enumerate(running):
            pi, action, root_value = picks[i]
            s = slot.state
            if full[i]:
                slot.rows.append((slot.game_id, slot.ply, s.size, s.to_move, encode(s).astype(np.uint8),
                                  pi.astype(np.float32), action_mask(s), root_value))
            slot.state = game.step(s, action)
            slot.ply += 1
            if game.terminal_value(slot.state) is None:
                still.append(slot)
                continue
            final = slot.state
            done.append((slot.game_id, [(*r, margin(final, r[3])) for r in slot.rows]))
            if on_game:
                on_game(len(done))
        running = still
    done.sort(key=lambda g: g[0])  # by game id: the output does not depend on finishing order
    return _columns([r for _, rows in done for r in rows])


def _columns(rows: list[tuple]) -> dict[str, np.ndarray]:
    if not rows:
        raise ValueError("no positions were played")
    gid, ply, size, to_move, obs, pi, legal, rv, m = zip(*rows)
    m = np.array(m, np.int16)
    return {
        "game_id": np.array(gid, np.int64), "ply": np.array(ply, np.int16), "size": np.array(size, np.int8),
        "to_move": np.array(to_move, np.int8), "obs": np.stack(obs), "policy": np.stack(pi),
        "legal": np.stack(legal), "root_value": np.array(rv, np.float32), "margin": m,
        "outcome": np.sign(m).astype(np.float32),
    }


def concat_columns(parts: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Batches' columns one after the other (item order)."""
    return {k: np.concatenate([p[k] for p in parts]) for k in COLUMNS}


def _starts(config: TeacherConfig, iteration: int, count: int, first_id: int) -> list[tuple[int, State]]:
    sizes = parse_sizes(config.sizes)
    rngs = (np.random.default_rng(_seed(config.seed, iteration, g)) for g in range(count))
    return [(first_id + g, random_start(sizes[g % len(sizes)], rng)) for g, rng in enumerate(rngs)]


def make_evaluator(net: torch.nn.Module, config: TeacherConfig) -> Callable:
    return _evaluator(net, config.backend, config.accelerator, config.threads)


def _evaluator(net: torch.nn.Module, backend: str, accelerator: str, threads: int) -> Callable:
    if backend == "onnxruntime":
        return OnnxEvaluator(net, threads=threads)
    if backend == "torch":
        gpu = accelerator in ("gpu", "cuda", "auto") and torch.cuda.is_available()
        return TorchEvaluator(net, device="cuda" if gpu else "cpu")
    raise ValueError(f"backend {backend!r}: expected 'onnxruntime' or 'torch'")


# ----------------------------------------------------------------------------- work items
@dataclass(frozen=True)
class NetBlob:
    """A network as a work item carries it: shape, weights (numpy, CPU) and the version naming them."""

    shape: str
    weights: dict
    version: str

    @classmethod
    def of(cls, net: torch.nn.Module, shape: str, version: str) -> NetBlob:
        return cls(shape, {k: v.detach().cpu().numpy() for k, v in net.state_dict().items()}, version)

    def build(self) -> CellDivNet:
        net = CellDivNet(self.shape)
        net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in self.weights.items()})
        return net.eval()


@dataclass(frozen=True)
class Runtime:
    """Where a worker evaluates: backend, accelerator, threads (1 in a pool worker)."""

    backend: str = "onnxruntime"
    accelerator: str = "cpu"
    threads: int = 1


def play_batch(blob: NetBlob, starts: list[tuple[int, State]], settings: SearchSettings, runtime: Runtime,
               parallel: int, *, seed: int) -> tuple[dict[str, np.ndarray], int]:
    """Work item: one batch of games searched side by side by the network ``blob``; returns its columns
    and the positions evaluated. The worker keeps the evaluator between items of the same weights."""
    torch.set_num_threads(runtime.threads)
    key = f"celldiv-teacher:{blob.version}:{runtime.backend}:{runtime.accelerator}:{runtime.threads}"
    evaluator = cached(key, lambda: _evaluator(blob.build(), runtime.backend, runtime.accelerator,
                                               runtime.threads))
    before = evaluator.states
    cols = play_search_games(evaluator, starts, parallel=parallel, settings=settings,
                             rng=np.random.default_rng(seed))
    return cols, evaluator.states - before


def kickstart_batch(w_early: tuple[float, ...], w_late: tuple[float, ...], starts: list[tuple[int, State]],
                    noise: float, *, seed: int) -> dict[str, np.ndarray]:
    """Work item: the switching linear player plays ``starts`` against itself; each position is recorded
    with its move as a one-hot policy. A ``noise`` share of moves is then replaced by a random one (for
    varied positions; the target stays the player's move)."""
    player = SwitchingPlayer(np.array(w_early), np.array(w_late))
    rng = np.random.default_rng(seed)
    game = SearchAdapter()
    rows = []
    for gid, start in starts:
        s, ply, mine = start, 0, []
        while (s.board == EMPTY).any():
            cell = player.choose(s)
            pi = np.zeros(NUM_ACTIONS, np.float32)
            action = cell_to_action(s, cell)
            pi[action] = 1.0
            legal = action_mask(s)
            mine.append((gid, ply, s.size, s.to_move, encode(s).astype(np.uint8), pi, legal, 0.0))
            if rng.random() < noise:
                action = int(rng.choice(np.flatnonzero(legal)))
            s = game.step(s, action)
            ply += 1
        rows += [(*r, margin(s, r[3])) for r in mine]
    return _columns(rows)


def _batches(starts: list[tuple[int, State]], size: int) -> list[list[tuple[int, State]]]:
    return [starts[i : i + size] for i in range(0, len(starts), max(1, size))]


def _play(executor: Executor, name: str, blob: NetBlob, starts: list[tuple[int, State]], settings: SearchSettings,
          config: TeacherConfig, round_id: int, on_batch: Callable[[int, int], None] | None = None,
          ) -> tuple[dict[str, np.ndarray], int]:
    """Every batch of ``starts`` as a work item; columns in batch (= game) order, and evaluations."""
    runtime = Runtime(config.backend, config.accelerator, config.threads)
    items = [WorkItem(f"{name} batch {b}", play_batch, (blob, batch, settings, runtime, config.parallel_games),
                      seed=_seed(config.seed, round_id, 1, b))
             for b, batch in enumerate(_batches(starts, config.batch_games))]
    done = (lambda o, k, n: on_batch(k, n)) if on_batch else None
    results = gather(executor, items, done)
    return concat_columns([c for c, _ in results]), sum(e for _, e in results)


def selfplay_settings(config: TeacherConfig) -> SearchSettings:
    return SearchSettings(
        search=config.search, simulations=config.simulations, temperature_moves=config.temperature_moves,
        considered=config.considered, gumbel_scale=config.gumbel_scale, c_scale=config.c_scale,
        c_puct=config.c_puct,
        dirichlet_alpha=config.dirichlet_alpha, dirichlet_fraction=config.dirichlet_fraction,
        leaves_per_tree=config.leaves_per_tree, margin_scale=config.margin_scale,
        full_search_fraction=config.full_search_fraction, fast_simulations=config.fast_simulations,
    )


def data_settings(config: TeacherConfig) -> SearchSettings:
    """Teacher data: every move searched in full with ``data_simulations``, PUCT noise as configured."""
    return replace(selfplay_settings(config), simulations=config.data_simulations,
                   temperature_moves=config.data_temperature_moves,
                   dirichlet_fraction=config.data_dirichlet_fraction, full_search_fraction=1.0)


# ----------------------------------------------------------------------------- the replay buffer
class ReplayBuffer:
    """The newest ``capacity`` self-play positions: obs, policy, value (``value_target``), size, game id."""

    KEYS = ("obs", "policy", "value", "size", "game_id")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.data = {
            "obs": np.zeros((0, 3, 8, 8), np.uint8), "policy": np.zeros((0, NUM_ACTIONS), np.float32),
            "value": np.zeros(0, np.float32), "size": np.zeros(0, np.int64), "game_id": np.zeros(0, np.int64),
        }

    def __len__(self) -> int:
        return len(self.data["value"])

    def add(self, cols: dict[str, np.ndarray], margin_scale: float = 0.0) -> None:
        new = {"obs": cols["obs"], "policy": cols["policy"], "value": value_target(cols["margin"], margin_scale),
               "size": cols["size"].astype(np.int64), "game_id": cols["game_id"]}
        self.data = {k: np.concatenate([self.data[k], new[k]])[-self.capacity :] for k in self.KEYS}

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in self.data.items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.data = {k: state[k].numpy() for k in self.KEYS}


# ----------------------------------------------------------------------------- evaluation
class NetPolicyPlayer:
    """The raw policy of a network (no search): argmax of the masked logits."""

    def __init__(self, net: torch.nn.Module, name: str = "teacher-policy") -> None:
        self.net, self.name = net.eval(), name

    def choose(self, state: State) -> int:
        logits = policy_logits(self.net, encode(state)[None])[0]
        return action_to_cell(state, int(np.argmax(np.where(action_mask(state), logits, -np.inf))))


def win_rate_vs(net: torch.nn.Module, opponent: str | Callable, *, games: int, seed: int, sizes: str = "4-8") -> dict:
    """The raw policy's win and score rates against ``opponent`` (a registered name or a player factory)."""
    t = play_match(lambda s: NetPolicyPlayer(net), opponent, games=games, seed=seed, sizes=sizes)
    return {"win_rate": t.wins / t.games, "score_rate": t.score_rate}


def elo_gap(score_rate: float, games: int) -> float:
    """The Elo difference a score rate means, with half a game added to each side (finite at 0 and 1)."""
    s = (score_rate * games + 0.5) / (games + 1.0)
    return float(400.0 * np.log10(s / (1.0 - s)))


# ----------------------------------------------------------------------------- training
@dataclass
class TeacherResult:
    teacher_ckpt: Path  # the finished teacher (model only)
    checkpoint: Path  # the resumable state
    version: str  # <shape>-<iteration>-<weights hash>
    iterations: int  # rounds completed in total
    selfplay_games: int
    buffer_size: int
    params: int  # network parameters
    history: list[dict]  # per-round metrics, as logged
    wall_seconds: float  # this call only
    resumed_from: int | None  # the first round this call ran, when it resumed a checkpoint
    policy_score_rate: float | None  # raw policy (no search) vs ``eval_opponent`` at the last check, if one ran


def _say(progress: Progress | None, msg: str) -> None:
    if progress:
        progress(msg)


def kickstart_weights(path: str | Path | None) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(w_early, w_late) of a switching-linear weight file (the bundled one when ``path`` is None)."""
    doc = load_weights(path or DEFAULT_SWITCHING)
    if doc["kind"] != "switching_linear":
        raise CheckpointError(f"{path}: field 'kind' is {doc['kind']!r}; the kickstart needs 'switching_linear'")
    return tuple(doc["w_early"]), tuple(doc["w_late"])


def run(
    config: TeacherConfig,
    *,
    out_dir: str | Path,
    tracker: Tracker | None = None,
    progress: Progress | None = None,
    kickstart: str | Path | None = None,
    executor: Executor | None = None,
) -> TeacherResult:
    """Train the teacher in ``out_dir`` (resuming ``out_dir/checkpoint.pt`` if present): imitation of the
    switching player whose weights are ``kickstart`` (a weight JSON; None: the bundled one) when
    ``config.kickstart_games``, then self-play rounds; write ``out_dir/teacher.pt``. Games run as work
    items on ``executor`` (default: this process); training stays here. Logs to ``tracker``."""
    t_start = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tracker = tracker or NullTracker()
    executor = executor or InProcessExecutor()
    torch.set_num_threads(config.threads)
    selfplay_settings(config)  # a bad search setting fails before any work
    torch.manual_seed(config.seed)  # the initial weights
    module = TeacherModule(config.shape, config.learning_rate, config.weight_decay, config.value_weight,
                           config.augment, config.seed)
    module.configure_optimizers()
    buffer = ReplayBuffer(config.replay_capacity)
    first, history, games_total = 0, [], 0
    ckpt = out_dir / CHECKPOINT
    kicked = False
    if ckpt.exists():
        state = load_checkpoint(ckpt, kinds=(STATE_KIND,),
                                keys=("shape", "model", "optimizer", "iteration", "buffer", "history"))
        if state["shape"] != config.shape:
            raise CheckpointError(f"{ckpt}: field 'shape' is {state['shape']!r} but the config asks for "
                                  f"{config.shape!r}; use a fresh out_dir")
        module.net.load_state_dict(state["model"])
        module.optimizer.load_state_dict(state["optimizer"])
        buffer.load_state_dict(state["buffer"])
        first, history = int(state["iteration"]) + 1, list(state["history"])
        games_total = int(state.get("selfplay_games", 0))
        kicked = True
        _say(progress, f"resuming {ckpt} at round {first}")
    resumed_from = first if kicked else None
    params = count_params(module.net)
    tracker.log_params({**asdict(config), "params": params, "resumed_from": resumed_from,
                        "kickstart": str(kickstart or DEFAULT_SWITCHING) if config.kickstart_games else ""})
    clock = float(history[-1]["train_clock_seconds"]) if history else 0.0
    weights = kickstart_weights(kickstart) if config.kickstart_games or config.eval_opponent == "switching" else None
    # 'switching' is the player the teacher imitated (the trained weights when given), not the registry's
    opponent = ((lambda seed: SwitchingPlayer(np.array(weights[0]), np.array(weights[1])))
                if config.eval_opponent == "switching" else config.eval_opponent)
    if not kicked and config.kickstart_games:
        metrics = _kickstart(config, module, weights, executor, opponent, progress)
        clock += metrics["kickstart_seconds"]
        metrics["train_clock_seconds"] = clock
        history.append(metrics)
        tracker.log_metrics(metrics, step=0)
        _log_strength(tracker, metrics, config)
        _save_state(ckpt, config, module, buffer, -1, history, games_total)
        _say(progress, _line(metrics))
    for it in range(first, config.iterations):
        metrics = _round(config, module, buffer, it, games_total, executor, opponent, progress)
        games_total += config.games_per_iteration
        clock += metrics["selfplay_seconds"] + metrics["train_seconds"]
        metrics["train_clock_seconds"] = clock  # training time so far, evaluations left out: Elo per minute
        history.append(metrics)
        tracker.log_metrics(metrics, step=it + 1)
        _log_strength(tracker, metrics, config)
        _save_state(ckpt, config, module, buffer, it, history, games_total)
        _say(progress, _line(metrics))
    done = max(first, config.iterations)
    version = model_version(module.net, config.shape, done)
    teacher = save_checkpoint(out_dir / TEACHER, {
        "kind": TEACHER_KIND, "shape": config.shape, "model": module.net.state_dict(), "version": version,
        "iterations": done, "config": asdict(config), "history": history,
    })
    checks = [h["policy_score_rate"] for h in history if "policy_score_rate" in h]
    return TeacherResult(teacher, ckpt, version, done, games_total, len(buffer), params, history,
                         time.perf_counter() - t_start, resumed_from, checks[-1] if checks else None)


def _log_strength(tracker: Tracker, metrics: dict, config: TeacherConfig) -> None:
    """The raw policy's Elo against the fixed opponent, stepped by seconds of training: MLflow plots
    strength per minute of training, comparable between methods."""
    if "policy_elo" in metrics:
        tracker.log_metrics({f"policy_elo_vs_{config.eval_opponent}_by_train_second": metrics["policy_elo"]},
                            step=int(metrics["train_clock_seconds"]))


def _save_state(ckpt: Path, config: TeacherConfig, module: TeacherModule, buffer: ReplayBuffer, it: int,
                history: list[dict], games_total: int) -> None:
    save_checkpoint(ckpt, {
        "kind": STATE_KIND, "shape": config.shape, "model": module.net.state_dict(),
        "optimizer": module.optimizer.state_dict(), "iteration": it, "buffer": buffer.state_dict(),
        "history": history, "selfplay_games": games_total, "config": asdict(config),
        "version": model_version(module.net, config.shape, it + 1),
    })


def _fit(config: TeacherConfig, module: TeacherModule, arrays: dict, groups: np.ndarray, steps: int,
         seed_keys: tuple[int, ...]) -> dict:
    """``steps`` optimizer steps on ``arrays`` (this process), then the held-out losses."""
    L.seed_everything(_seed(config.seed, *seed_keys, 2) % 2**31, verbose=False)
    dm = PositionDataModule(arrays, batch_size=config.batch_size, holdout_fraction=config.holdout_fraction,
                            groups=groups, seed=config.seed)
    # validation once, after the steps (trainer.validate), not at epoch ends inside fit
    trainer = make_trainer(max_steps=steps, progress_bar=config.progress_bar, val_every_n_epochs=10**6,
                           accelerator=config.accelerator)
    module.hparams.seed = _seed(config.seed, *seed_keys, 5)  # each fit draws its own symmetries
    module.train()
    trainer.fit(module, datamodule=dm)
    m = {k.replace("/", "_"): float(v) for k, v in trainer.callback_metrics.items()}
    if len(dm.val_rows):
        for k, v in trainer.validate(module, datamodule=dm, verbose=False)[0].items():
            m[k.replace("/", "_")] = float(v)
    module.net.cpu().eval()
    return m


def _kickstart(config: TeacherConfig, module: TeacherModule, weights: tuple, executor: Executor, opponent,
               progress: Progress | None) -> dict:
    """Imitation of the switching player: its games (work items), then ``kickstart_epochs`` of fit."""
    t0 = time.perf_counter()
    starts = _starts(config, KICKSTART_ROUND, config.kickstart_games, first_id=0)
    items = [WorkItem(f"kickstart batch {b}", kickstart_batch, (*weights, batch, config.kickstart_noise),
                      seed=_seed(config.seed, KICKSTART_ROUND, 1, b))
             for b, batch in enumerate(_batches(starts, max(config.batch_games, 64)))]
    cols = concat_columns(gather(executor, items))
    t1 = time.perf_counter()
    _say(progress, f"kickstart: {config.kickstart_games} games of the switching player, {len(cols['ply'])} "
                   f"positions in {t1 - t0:.1f}s")
    arrays = {"obs": cols["obs"], "policy": cols["policy"], "value": value_target(cols["margin"], config.margin_scale),
              "size": cols["size"].astype(np.int64)}
    steps = max(1, int(np.ceil(config.kickstart_epochs * len(cols["ply"]) / config.batch_size)))
    m = _fit(config, module, arrays, cols["game_id"], steps, (KICKSTART_ROUND,))
    t2 = time.perf_counter()
    m.update({"round": -1, "kickstart_positions": len(cols["ply"]), "train_steps": steps,
              "kickstart_games_seconds": t1 - t0, "train_seconds": t2 - t1, "kickstart_seconds": t2 - t0})
    m.update(_evaluate(config, module.net, opponent, KICKSTART_ROUND, last=True))
    return {k: float(v) for k, v in m.items()}


def _evaluate(config: TeacherConfig, net: torch.nn.Module, opponent, it: int, *, last: bool) -> dict:
    """The raw policy against ``eval_opponent`` (every ``eval_every`` rounds, the kickstart and the last)."""
    if not config.eval_games or not (last or (config.eval_every and (it + 1) % config.eval_every == 0)):
        return {}
    t3 = time.perf_counter()
    r = win_rate_vs(net, opponent, games=config.eval_games, seed=_seed(config.seed, it, 4))
    return {"policy_win_rate": r["win_rate"], "policy_score_rate": r["score_rate"],
            "policy_elo": elo_gap(r["score_rate"], config.eval_games), "eval_seconds": time.perf_counter() - t3}


def _round(
    config: TeacherConfig, module: TeacherModule, buffer: ReplayBuffer, it: int, games_before: int,
    executor: Executor, opponent, progress: Progress | None,
) -> dict:
    t0 = time.perf_counter()
    blob = NetBlob.of(module.net, config.shape, model_version(module.net, config.shape, it))
    starts = _starts(config, it, config.games_per_iteration, first_id=games_before)
    cols, evaluations = _play(executor, f"self-play round {it}", blob, starts, selfplay_settings(config), config, it)
    buffer.add(cols, config.margin_scale)
    t1 = time.perf_counter()
    steps = max(1, int(np.ceil(config.sample_reuse * len(cols["ply"]) / config.batch_size)))
    m = _fit(config, module, {k: buffer.data[k] for k in ("obs", "policy", "value", "size")}, buffer.data["game_id"],
             steps, (it,))
    t2 = time.perf_counter()
    first_won = np.mean(cols["outcome"][cols["ply"] == 0] > 0) if (cols["ply"] == 0).any() else float("nan")
    m.update({
        "round": it, "buffer_size": len(buffer), "train_steps": steps,
        "selfplay_games": games_before + config.games_per_iteration,
        "selfplay_positions": len(cols["ply"]), "selfplay_seconds": t1 - t0, "train_seconds": t2 - t1,
        "evaluations_per_second": evaluations / max(t1 - t0, 1e-9), "first_mover_win_rate": first_won,
        "draw_rate": float(np.mean(cols["outcome"] == 0)),
    })
    m.update(_evaluate(config, module.net, opponent, it, last=it == config.iterations - 1))
    return {k: float(v) for k, v in m.items()}  # plain floats: the checkpoint loads weights-only


def _line(m: dict) -> str:
    keys = ("round", "train_loss", "train_policy_loss", "train_value_loss", "val_loss", "buffer_size",
            "selfplay_seconds", "train_seconds", "policy_score_rate")
    return "teacher " + " ".join(f"{k}={m[k]:.4g}" for k in keys if k in m)


# ----------------------------------------------------------------------------- teacher data
DATA_SCHEMA_NAME = b"celldiv_teacher_data"
DATA_SCHEMA_VERSION = b"1"
DATA_SCHEMA = pa.schema([
    ("game_id", pa.int64()),
    ("ply", pa.int16()),
    ("size", pa.int8()),
    ("to_move", pa.int8()),
    ("obs", pa.list_(pa.uint8(), 192)),
    ("policy", pa.list_(pa.float32(), NUM_ACTIONS)),
    ("legal", pa.list_(pa.bool_(), NUM_ACTIONS)),
    ("root_value", pa.float32()),
    ("margin", pa.int16()),
    ("outcome", pa.float32()),
    ("simulations", pa.int32()),
    ("teacher_version", pa.string()),
])


@dataclass(frozen=True)
class TeacherData:
    """The teacher-data file as arrays (``P`` positions); see docs/celldiv-teacher-data.md."""

    path: Path
    game_id: np.ndarray  # [P] int64
    ply: np.ndarray  # [P] int16
    size: np.ndarray  # [P] int8
    to_move: np.ndarray  # [P] int8
    obs: np.ndarray  # [P, 3, 8, 8] uint8
    policy: np.ndarray  # [P, 64] float32
    legal: np.ndarray  # [P, 64] bool
    root_value: np.ndarray  # [P] float32
    margin: np.ndarray  # [P] int16
    outcome: np.ndarray  # [P] float32
    simulations: np.ndarray  # [P] int32
    teacher_version: str

    def __len__(self) -> int:
        return len(self.ply)


def write_teacher_data(
    cols: dict[str, np.ndarray], out_path: Path, *, simulations: int, version: str
) -> Path:
    """Write the columns to ``out_path`` (atomically) under ``DATA_SCHEMA``."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    p = len(cols["ply"])

    def fixed(a: np.ndarray, width: int, typ: pa.DataType) -> pa.Array:
        return pa.FixedSizeListArray.from_arrays(pa.array(a.reshape(-1), type=typ), width)

    arrays = [
        pa.array(cols["game_id"], pa.int64()), pa.array(cols["ply"], pa.int16()),
        pa.array(cols["size"], pa.int8()), pa.array(cols["to_move"], pa.int8()),
        fixed(cols["obs"].astype(np.uint8), 192, pa.uint8()),
        fixed(cols["policy"].astype(np.float32), NUM_ACTIONS, pa.float32()),
        fixed(cols["legal"].astype(bool), NUM_ACTIONS, pa.bool_()),
        pa.array(cols["root_value"], pa.float32()), pa.array(cols["margin"], pa.int16()),
        pa.array(cols["outcome"], pa.float32()), pa.array(np.full(p, simulations), pa.int32()),
        pa.array([version] * p, pa.string()),
    ]
    schema = DATA_SCHEMA.with_metadata({DATA_SCHEMA_NAME: DATA_SCHEMA_VERSION})
    table = pa.Table.from_arrays(arrays, schema=schema)
    tmp = out_path.with_name(f"{out_path.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, out_path)
    return out_path


def generate_teacher_data(
    teacher_ckpt: str | Path, config: TeacherConfig, out_path: str | Path, *, progress: Progress | None = None,
    executor: Executor | None = None,
) -> Path:
    """The frozen teacher plays ``config.data_games`` games with ``config.data_simulations``-simulation
    search, in batches of ``batch_games`` (work items on ``executor``, default this process); every
    position and its search distribution goes to the Parquet file ``out_path``, the same bytes on
    every backend and worker count."""
    torch.set_num_threads(config.threads)
    net, doc = load_teacher(Path(teacher_ckpt))
    settings = data_settings(config)
    blob = NetBlob.of(net, doc["shape"], doc["version"])
    starts = _starts(config, DATA_ROUND, config.data_games, first_id=0)  # a round id self-play never uses
    batches = -(-config.data_games // max(1, config.batch_games))
    every = max(1, batches // 10)
    cols, _ = _play(executor or InProcessExecutor(), "teacher data", blob, starts, settings, config, DATA_ROUND,
                    on_batch=lambda k, n: _say(progress, f"teacher data: {k}/{n} batches") if k % every == 0
                    or k == n else None)
    path = write_teacher_data(cols, Path(out_path), simulations=config.data_simulations,
                              version=doc["version"])
    load_teacher_data(path)  # never hand on a file the reader refuses
    return path


def load_teacher_data(path: str | Path) -> TeacherData:
    """Read and validate a teacher-data file; raises TeacherDataError naming the file and column."""
    path = Path(path)
    if not path.is_file():
        raise TeacherDataError(f"{path}: teacher-data file not found")
    try:
        table = pq.read_table(path)
    except Exception as e:  # pyarrow raises ArrowInvalid/OSError for damaged files
        raise TeacherDataError(
            f"{path}: not a readable Parquet file; it is corrupted or truncated ({type(e).__name__}: {e})"
        ) from None
    meta = table.schema.metadata or {}
    if meta.get(DATA_SCHEMA_NAME) != DATA_SCHEMA_VERSION:
        raise TeacherDataError(f"{path}: schema metadata {DATA_SCHEMA_NAME.decode()!r} is "
                               f"{meta.get(DATA_SCHEMA_NAME)!r}; expected {DATA_SCHEMA_VERSION!r}")
    for f in DATA_SCHEMA:
        if f.name not in table.column_names:
            raise TeacherDataError(f"{path}: column {f.name!r} is missing")
        got = table.schema.field(f.name).type
        if got != f.type:
            raise TeacherDataError(f"{path}: column {f.name!r} has type {got}, expected {f.type}")
        if table.column(f.name).null_count:
            raise TeacherDataError(f"{path}: column {f.name!r} holds nulls")
    if table.num_rows == 0:
        raise TeacherDataError(f"{path}: holds no positions")

    def col(name: str, width: int | None = None) -> np.ndarray:
        c = table.column(name).combine_chunks()
        if width is None:
            return c.to_numpy(zero_copy_only=False)
        return c.flatten().to_numpy(zero_copy_only=False).reshape(-1, width)

    versions = set(table.column("teacher_version").unique().to_pylist())
    data = TeacherData(
        path=path, game_id=col("game_id"), ply=col("ply"), size=col("size"), to_move=col("to_move"),
        obs=col("obs", 192).astype(np.uint8).reshape(-1, 3, 8, 8), policy=col("policy", NUM_ACTIONS),
        legal=col("legal", NUM_ACTIONS).astype(bool), root_value=col("root_value"), margin=col("margin"),
        outcome=col("outcome"), simulations=col("simulations"), teacher_version=",".join(sorted(versions)),
    )
    _validate(data)
    return data


def _validate(d: TeacherData) -> None:
    def bad(column: str, rows: np.ndarray, why: str) -> None:
        if rows.any():
            raise TeacherDataError(f"{d.path}: column {column!r} row {int(np.flatnonzero(rows)[0])}: {why}")

    bad("size", (d.size < 4) | (d.size > 8), "board size must be 4..8")
    bad("to_move", (d.to_move != 0) & (d.to_move != 1), "must be 0 or 1")
    bad("obs", (d.obs > 1).reshape(len(d), -1).any(axis=1), "planes hold only 0 and 1")
    bad("legal", (d.legal != (d.obs[:, 2].reshape(len(d), -1) > 0)).any(axis=1), "differs from obs plane 2")
    bad("legal", ~d.legal.any(axis=1), "a recorded position has no legal move")
    p = d.policy
    bad("policy", ~np.isfinite(p).all(axis=1) | (p < 0).any(axis=1), "must be finite and >= 0")
    bad("policy", np.abs(p.sum(axis=1) - 1.0) > 1e-3, "must sum to 1")
    bad("policy", ((p > 0) & ~d.legal).any(axis=1), "puts mass on an illegal action")
    bad("outcome", ~np.isin(d.outcome, (-1.0, 0.0, 1.0)), "must be -1, 0 or 1")
    bad("outcome", d.outcome != np.sign(d.margin), "must be the sign of margin")
    bad("root_value", ~np.isfinite(d.root_value) | (np.abs(d.root_value) > 1.0 + 1e-5), "must lie in [-1, 1]")


# ----------------------------------------------------------------------------- CLI
def run_command(a: argparse.Namespace, say: Progress = print) -> None:
    """Train (and, unless ``--skip-data``, write the teacher data) as the parsed options ask."""
    config = CONFIG_PROFILES.parse(a.profile, a.set, progress_bar=False)  # a bad profile or field: ProfileError
    executor = executor_from(a)
    t0 = time.perf_counter()
    res = run(config, out_dir=a.out, progress=say, kickstart=a.kickstart, executor=executor)
    say(f"teacher {res.version}: {res.iterations} rounds, {res.selfplay_games} games, "
        f"{res.wall_seconds:.1f}s -> {res.teacher_ckpt}")
    if not a.skip_data:
        t1 = time.perf_counter()
        path = generate_teacher_data(res.teacher_ckpt, config, a.data or a.out / "teacher_data.parquet",
                                     progress=say, executor=executor)
        n = len(load_teacher_data(path))
        say(f"teacher data: {n} positions in {time.perf_counter() - t1:.1f}s -> {path}")
    say(f"total {time.perf_counter() - t0:.1f}s ({executor.backend} x{executor.workers})")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_teacher_arguments(ap)
    try:
        run_command(ap.parse_args(argv))
    except ProfileError as e:  # a bad profile or --set, refused before any work: one line, exit 2
        ap.exit(2, f"{ap.prog}: error: {e}\n")


if __name__ == "__main__":
    main()
