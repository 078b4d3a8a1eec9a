"""The Cell Division teacher: AlphaZero self-play training, then the teacher data for the student.

``run(config, out_dir=...)`` repeats (self-play -> replay buffer -> Lightning fit). Self-play plays
``parallel_games`` games side by side through one batched PUCT search (``search.run_puct``: one
network call per simulation wave across all of them), from random starts on sizes 4-8. Targets:
the root visit distribution (policy) and the sign of the final margin from the mover's view
(value); moves are sampled from the visits for the first ``temperature_moves`` plies, argmax after;
Dirichlet noise at every root. Each iteration ends with an atomic checkpoint (model, optimizer,
iteration, buffer), so a killed run resumes where it stopped.

``generate_teacher_data(teacher_ckpt, config, out_path)`` lets the frozen teacher play with search
and records each position and its search distribution to one Parquet file, whose schema is
docs/celldiv-teacher-data.md; ``load_teacher_data`` reads it back and refuses anything else.

CLI: ``python -m ops.celldiv_teacher --profile small --out .arena/celldiv/teacher``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
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
    encode,
    offset,
)
from games.celldiv.match import game_seed as _seed
from games.celldiv.match import parse_sizes, play_match
from gpu.celldiv_lightning import PositionDataModule, TeacherModule, make_trainer
from gpu.celldiv_nets import CellDivNet, OnnxEvaluator, TorchEvaluator, count_params, policy_logits
from ops.tracking import NullTracker, Tracker
from search import run_puct

Progress = Callable[[str], None]
CHECKPOINT = "checkpoint.pt"  # resumable state, rewritten after every iteration
TEACHER = "teacher.pt"  # the finished teacher (model only)
TEACHER_KIND = "celldiv_teacher"
STATE_KIND = "celldiv_teacher_state"
CHECKPOINT_FORMAT = 1


@dataclass(frozen=True)
class TeacherConfig:
    """AlphaZero teacher training and teacher-data generation (profiles: ``PROFILES``)."""

    shape: str = "b6c64"  # network shape (gpu.celldiv_nets): b<blocks>c<channels>, policy + value heads
    iterations: int = 60  # rounds of self-play -> replay buffer -> fit
    games_per_iteration: int = 256  # self-play games per round
    parallel_games: int = 64  # games searched side by side; their leaves share one network call per wave
    simulations: int = 200  # PUCT simulations per self-play move (the seed: 100-400)
    leaves_per_tree: int = 1  # descents per tree per wave (virtual loss); >1 trades accuracy for batch size
    c_puct: float = 1.25  # PUCT exploration constant
    dirichlet_alpha: float = 0.3  # root noise concentration
    dirichlet_fraction: float = 0.25  # root noise weight in self-play
    temperature_moves: int = 8  # self-play plies sampled from the visit counts (temperature 1); argmax after
    sizes: str = "4-8"  # board sizes of the random starts, cycled game by game
    replay_capacity: int = 250_000  # positions kept in the replay buffer, newest first
    sample_reuse: float = 4.0  # training samples per new self-play position (steps = reuse * new / batch)
    batch_size: int = 256  # training batch
    learning_rate: float = 1e-3  # AdamW learning rate
    weight_decay: float = 1e-4  # AdamW weight decay
    value_weight: float = 1.0  # weight of the value MSE beside the policy cross-entropy
    augment: bool = True  # train on a random one of the board's 8 symmetries per sample
    holdout_fraction: float = 0.05  # games of the buffer held out for the validation losses
    eval_every: int = 5  # rounds between win-rate checks of the raw policy vs medium (0: last round only)
    eval_games: int = 100  # games per win-rate check
    data_games: int = 4000  # games the frozen teacher plays for the student's data
    data_simulations: int = 256  # PUCT simulations per move for the teacher data (the seed: 256)
    data_temperature_moves: int = 8  # teacher-data plies sampled from the visits, for varied positions
    data_dirichlet_fraction: float = 0.0  # root noise while generating data (0: the teacher's clean view)
    backend: str = "onnxruntime"  # runtime of self-play and data games: onnxruntime (~2x on CPU) or torch
    accelerator: str = "cpu"  # Lightning accelerator for training; the torch backend searches on it too
    threads: int = 1  # CPU threads for torch and onnxruntime; 1 is fastest when the cores are shared
    seed: int = 0  # every game, split and shuffle derives from it
    progress_bar: bool = False  # Lightning progress bars (CLI runs)


PROFILES: dict[str, TeacherConfig] = {
    # seconds: the end-to-end test
    "test": TeacherConfig(
        shape="b1c16", iterations=2, games_per_iteration=8, parallel_games=8, simulations=8,
        sample_reuse=2.0, batch_size=64, eval_every=0, eval_games=4, data_games=8, data_simulations=8,
        data_temperature_moves=4, sizes="4-5", holdout_fraction=0.2,
    ),
    # a shared 2-core CPU: teacher ~3-4 min, data ~1.5-2 min (measured 187 s and 107 s). The teacher is
    # b4c32, not b6c64: b6c64 runs ~700 evaluations/s against ~3000 for b4c32 (onnxruntime, 1 thread)
    "small": TeacherConfig(
        shape="b4c32", iterations=6, games_per_iteration=96, parallel_games=64, simulations=20,
        sample_reuse=3.0, learning_rate=2e-3, eval_every=0, eval_games=40, data_games=256,
        data_simulations=48,
    ),
    # the seed's scale, for a GPU box (not run here: this project's machine has no GPU)
    "full": TeacherConfig(backend="torch", accelerator="auto"),
}


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used; the message names the file (and the field, if one is wrong)."""


class TeacherDataError(ValueError):
    """A teacher-data file that is missing, unreadable or off-schema; the message names file and column."""


# ----------------------------------------------------------------------------- checkpoints
def save_checkpoint(path: Path, payload: dict) -> Path:
    """torch.save to a temporary file, then rename: a killed writer never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    torch.save({"format": CHECKPOINT_FORMAT, **payload}, tmp)
    os.replace(tmp, path)
    return path


def read_torch_file(path: Path):
    """``torch.load`` (weights only) that names the file when it is missing or damaged."""
    if not Path(path).is_file():
        raise CheckpointError(f"{path}: checkpoint not found")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises several types for a damaged zip/pickle
        raise CheckpointError(f"{path}: cannot read the checkpoint; the file is corrupted or truncated "
                              f"({type(e).__name__}: {e})") from None


def load_checkpoint(path: Path, *, kinds: Sequence[str], keys: Sequence[str] = ()) -> dict:
    """Read a checkpoint of one of ``kinds`` holding ``keys``; anything else raises CheckpointError."""
    path = Path(path)
    doc = read_torch_file(path)
    if not isinstance(doc, dict) or doc.get("format") != CHECKPOINT_FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise CheckpointError(f"{path}: field 'format' is {got!r}; this version reads format "
                              f"{CHECKPOINT_FORMAT}")
    if doc.get("kind") not in kinds:
        raise CheckpointError(f"{path}: field 'kind' is {doc.get('kind')!r}; expected one of {list(kinds)}")
    for key in keys:
        if key not in doc:
            raise CheckpointError(f"{path}: field {key!r} is missing")
    return doc


def model_version(net: torch.nn.Module, shape: str, step: int) -> str:
    """``<shape>-<step>-<8 hex of the weights' hash>``: names the exact weights."""
    h = hashlib.sha256()
    for k, v in sorted(net.state_dict().items()):
        h.update(k.encode())
        h.update(v.detach().cpu().numpy().tobytes())
    return f"{shape}-{step}-{h.hexdigest()[:8]}"


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
class SearchAdapter(CellDivisionAdapter):
    """``CellDivisionAdapter`` with the two calls the search makes per new node made cheaper: the legal
    mask without a full encode, and a step that does not re-validate the whole board (``State``
    checks every cell with ``np.isin``; here only the one cell that changes is checked). Same
    results as the reference adapter (a test compares them)."""

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


@dataclass
class _Slot:
    game_id: int
    state: State
    rows: list = field(default_factory=list)


COLUMNS = ("game_id", "ply", "size", "to_move", "obs", "policy", "legal", "root_value", "margin", "outcome")


def play_search_games(
    evaluator: Callable,
    starts: Sequence[tuple[int, State]],
    *,
    parallel: int,
    simulations: int,
    rng: np.random.Generator,
    temperature_moves: int,
    c_puct: float = 1.25,
    dirichlet_alpha: float = 0.3,
    dirichlet_fraction: float = 0.25,
    leaves_per_tree: int = 1,
    on_game: Callable[[int], None] | None = None,
) -> dict[str, np.ndarray]:
    """Play every ``(game_id, start)`` to the end, ``parallel`` at a time, each move by one batched
    PUCT search over all running games. Returns one row per position (see ``COLUMNS``):
    obs ``[P, 3, 8, 8]`` uint8, policy ``[P, 64]`` float32 (root visit distribution), legal
    ``[P, 64]``, root_value (mover's view), margin and outcome (final, mover's view)."""
    game = SearchAdapter()
    queue = list(starts)[::-1]
    running: list[_Slot] = []
    done: list[list[tuple]] = []
    while queue or running:
        while queue and len(running) < parallel:
            gid, start = queue.pop()
            running.append(_Slot(gid, start))
        out = run_puct(
            [s.state for s in running], game=game, evaluator=evaluator, num_simulations=simulations, rng=rng,
            c_puct=c_puct, dirichlet_alpha=dirichlet_alpha, dirichlet_fraction=dirichlet_fraction,
            leaves_per_tree=leaves_per_tree, num_actions=NUM_ACTIONS,
        )
        still = []
        for i, slot in enumerate(running):
            visits = out.visit_counts[i].astype(np.float64)
            pi = visits / visits.sum()
            ply = len(slot.rows)
            if ply < temperature_moves:
                action = int(rng.choice(NUM_ACTIONS, p=pi))
            else:
                action = int(np.argmax(visits))  # ties to the lowest index
            s = slot.state
            slot.rows.append((slot.game_id, ply, s.size, s.to_move, encode(s).astype(np.uint8),
                              pi.astype(np.float32), action_mask(s), float(out.root_value[i])))
            slot.state = game.step(s, action)
            if game.terminal_value(slot.state) is None:
                still.append(slot)
                continue
            final = slot.state
            done.append([(*r, margin(final, r[3])) for r in slot.rows])
            if on_game:
                on_game(len(done))
        running = still
    done.sort(key=lambda rows: rows[0][0])  # by game id: the output does not depend on finishing order
    return _columns([r for g in done for r in g])


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


def _starts(config: TeacherConfig, iteration: int, count: int, first_id: int) -> list[tuple[int, State]]:
    sizes = parse_sizes(config.sizes)
    rngs = (np.random.default_rng(_seed(config.seed, iteration, g)) for g in range(count))
    return [(first_id + g, random_start(sizes[g % len(sizes)], rng)) for g, rng in enumerate(rngs)]


def make_evaluator(net: torch.nn.Module, config: TeacherConfig) -> Callable:
    if config.backend == "onnxruntime":
        return OnnxEvaluator(net, threads=config.threads)
    if config.backend == "torch":
        gpu = config.accelerator in ("gpu", "cuda", "auto") and torch.cuda.is_available()
        return TorchEvaluator(net, device="cuda" if gpu else "cpu")
    raise ValueError(f"backend {config.backend!r}: expected 'onnxruntime' or 'torch'")


# ----------------------------------------------------------------------------- the replay buffer
class ReplayBuffer:
    """The newest ``capacity`` self-play positions: obs, policy, value (outcome), size, game id."""

    KEYS = ("obs", "policy", "value", "size", "game_id")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.data = {
            "obs": np.zeros((0, 3, 8, 8), np.uint8), "policy": np.zeros((0, NUM_ACTIONS), np.float32),
            "value": np.zeros(0, np.float32), "size": np.zeros(0, np.int64), "game_id": np.zeros(0, np.int64),
        }

    def __len__(self) -> int:
        return len(self.data["value"])

    def add(self, cols: dict[str, np.ndarray]) -> None:
        new = {"obs": cols["obs"], "policy": cols["policy"], "value": cols["outcome"],
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


def win_rate_vs(net: torch.nn.Module, opponent: str, *, games: int, seed: int, sizes: str = "4-8") -> dict:
    t = play_match(lambda s: NetPolicyPlayer(net), opponent, games=games, seed=seed, sizes=sizes)
    return {"win_rate": t.wins / t.games, "score_rate": t.score_rate}


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
    policy_win_rate_vs_medium: float | None  # raw policy (no search) at the last check, if one ran


def _say(progress: Progress | None, msg: str) -> None:
    if progress:
        progress(msg)


def run(
    config: TeacherConfig,
    *,
    out_dir: str | Path,
    tracker: Tracker | None = None,
    progress: Progress | None = None,
) -> TeacherResult:
    """Train the teacher by self-play in ``out_dir`` (resuming ``out_dir/checkpoint.pt`` if present);
    write ``out_dir/teacher.pt``. Logs params and per-round metrics to ``tracker``."""
    t_start = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tracker = tracker or NullTracker()
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)  # the initial weights
    module = TeacherModule(config.shape, config.learning_rate, config.weight_decay, config.value_weight,
                           config.augment, config.seed)
    module.configure_optimizers()
    buffer = ReplayBuffer(config.replay_capacity)
    first, history, games_total = 0, [], 0
    ckpt = out_dir / CHECKPOINT
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
        _say(progress, f"resuming {ckpt} at round {first}")
    resumed_from = first if first else None
    params = count_params(module.net)
    tracker.log_params({**asdict(config), "params": params, "resumed_from": resumed_from})
    for it in range(first, config.iterations):
        metrics = _round(config, module, buffer, it, games_total, progress)
        games_total += config.games_per_iteration
        history.append(metrics)
        tracker.log_metrics(metrics, step=it)
        save_checkpoint(ckpt, {
            "kind": STATE_KIND, "shape": config.shape, "model": module.net.state_dict(),
            "optimizer": module.optimizer.state_dict(), "iteration": it, "buffer": buffer.state_dict(),
            "history": history, "selfplay_games": games_total, "config": asdict(config),
            "version": model_version(module.net, config.shape, it + 1),
        })
        _say(progress, _line(metrics))
    done = max(first, config.iterations)
    version = model_version(module.net, config.shape, done)
    teacher = save_checkpoint(out_dir / TEACHER, {
        "kind": TEACHER_KIND, "shape": config.shape, "model": module.net.state_dict(), "version": version,
        "iterations": done, "config": asdict(config), "history": history,
    })
    checks = [h["policy_win_rate_vs_medium"] for h in history if "policy_win_rate_vs_medium" in h]
    return TeacherResult(teacher, ckpt, version, done, games_total, len(buffer), params, history,
                         time.perf_counter() - t_start, resumed_from, checks[-1] if checks else None)


def _round(
    config: TeacherConfig, module: TeacherModule, buffer: ReplayBuffer, it: int, games_before: int,
    progress: Progress | None,
) -> dict:
    t0 = time.perf_counter()
    evaluator = make_evaluator(module.net, config)
    starts = _starts(config, it, config.games_per_iteration, first_id=games_before)
    cols = play_search_games(
        evaluator, starts, parallel=config.parallel_games, simulations=config.simulations,
        rng=np.random.default_rng(_seed(config.seed, it, 1)), temperature_moves=config.temperature_moves,
        c_puct=config.c_puct, dirichlet_alpha=config.dirichlet_alpha,
        dirichlet_fraction=config.dirichlet_fraction, leaves_per_tree=config.leaves_per_tree,
    )
    buffer.add(cols)
    t1 = time.perf_counter()
    L.seed_everything(_seed(config.seed, it, 2) % 2**31, verbose=False)
    dm = PositionDataModule({k: buffer.data[k] for k in ("obs", "policy", "value", "size")},
                            batch_size=config.batch_size, holdout_fraction=config.holdout_fraction,
                            groups=buffer.data["game_id"], seed=config.seed)
    steps = max(1, int(np.ceil(config.sample_reuse * len(cols["ply"]) / config.batch_size)))
    # validation once, after the steps (trainer.validate), not at epoch ends inside fit
    trainer = make_trainer(max_steps=steps, progress_bar=config.progress_bar, val_every_n_epochs=10**6,
                           accelerator=config.accelerator)
    module.hparams.seed = _seed(config.seed, it, 5)  # each round draws its own symmetries
    module.train()
    trainer.fit(module, datamodule=dm)
    m = {k.replace("/", "_"): float(v) for k, v in trainer.callback_metrics.items()}
    if len(dm.val_rows):
        for k, v in trainer.validate(module, datamodule=dm, verbose=False)[0].items():
            m[k.replace("/", "_")] = float(v)
    module.net.cpu().eval()
    t2 = time.perf_counter()
    first_won = np.mean(cols["outcome"][cols["ply"] == 0] > 0)
    m.update({
        "round": it, "buffer_size": len(buffer), "train_steps": steps,
        "selfplay_games": games_before + config.games_per_iteration,
        "selfplay_positions": len(cols["ply"]), "selfplay_seconds": t1 - t0, "train_seconds": t2 - t1,
        "evaluations_per_second": evaluator.states / max(t1 - t0, 1e-9), "first_mover_win_rate": first_won,
        "mean_game_length": len(cols["ply"]) / config.games_per_iteration,
        "draw_rate": float(np.mean(cols["outcome"][cols["ply"] == 0] == 0)),
    })
    last = it == config.iterations - 1
    if config.eval_games and (last or (config.eval_every and (it + 1) % config.eval_every == 0)):
        t3 = time.perf_counter()
        r = win_rate_vs(module.net, "medium", games=config.eval_games, seed=_seed(config.seed, it, 4))
        m.update({"policy_win_rate_vs_medium": r["win_rate"], "policy_score_rate_vs_medium": r["score_rate"],
                  "eval_seconds": time.perf_counter() - t3})
    return {k: float(v) for k, v in m.items()}  # plain floats: the checkpoint loads weights-only


def _line(m: dict) -> str:
    keys = ("round", "train_loss", "train_policy_loss", "train_value_loss", "val_loss", "buffer_size",
            "selfplay_seconds", "train_seconds", "policy_win_rate_vs_medium")
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
    teacher_ckpt: str | Path, config: TeacherConfig, out_path: str | Path, *, progress: Progress | None = None
) -> Path:
    """The frozen teacher plays ``config.data_games`` games with ``config.data_simulations``-simulation
    PUCT; every position and its visit distribution goes to the Parquet file ``out_path``."""
    torch.set_num_threads(config.threads)
    net, doc = load_teacher(Path(teacher_ckpt))
    evaluator = make_evaluator(net, config)
    starts = _starts(config, 1_000_000, config.data_games, first_id=0)  # a round id self-play never uses
    every = max(1, config.data_games // 10)
    cols = play_search_games(
        evaluator, starts, parallel=config.parallel_games, simulations=config.data_simulations,
        rng=np.random.default_rng(_seed(config.seed, 1_000_000, 1)),
        temperature_moves=config.data_temperature_moves, c_puct=config.c_puct,
        dirichlet_alpha=config.dirichlet_alpha, dirichlet_fraction=config.data_dirichlet_fraction,
        leaves_per_tree=config.leaves_per_tree,
        on_game=(lambda n: _say(progress, f"teacher data: {n}/{config.data_games} games") if n % every == 0
                 else None),
    )
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
def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", choices=sorted(PROFILES), default="small")
    ap.add_argument("--out", type=Path, default=Path(".arena/celldiv/teacher"))
    ap.add_argument("--data", type=Path, help="teacher-data Parquet path (default: OUT/teacher_data.parquet)")
    ap.add_argument("--skip-data", action="store_true", help="train only; write no teacher data")
    ap.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="override config fields")
    a = ap.parse_args(argv)
    config = with_overrides(replace(PROFILES[a.profile], progress_bar=True), a.set)
    t0 = time.perf_counter()
    res = run(config, out_dir=a.out, progress=print)
    print(f"teacher {res.version}: {res.iterations} rounds, {res.selfplay_games} games, "
          f"{res.wall_seconds:.1f}s -> {res.teacher_ckpt}")
    if not a.skip_data:
        t1 = time.perf_counter()
        path = generate_teacher_data(res.teacher_ckpt, config, a.data or a.out / "teacher_data.parquet",
                                     progress=print)
        n = len(load_teacher_data(path))
        print(f"teacher data: {n} positions in {time.perf_counter() - t1:.1f}s -> {path}")
    print(f"total {time.perf_counter() - t0:.1f}s")


def with_overrides(config, pairs: Sequence[str]):
    """``FIELD=VALUE`` strings applied to a frozen config, each value parsed as its field's type."""
    types = {f.name: type(getattr(config, f.name)) for f in fields(config)}
    changes = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        if key not in types:
            raise SystemExit(f"unknown config field {key!r}; fields: {', '.join(types)}")
        t = types[key]
        changes[key] = (value.lower() in ("1", "true", "yes")) if t is bool else t(value)
    return replace(config, **changes)


if __name__ == "__main__":
    main()
