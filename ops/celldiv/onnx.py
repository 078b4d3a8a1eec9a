"""The Elite student as ONNX, its parity check, and the trained Cell Division players.

``export_onnx`` writes the student (input ``board`` ``[B, 3, 8, 8]`` float32 with a dynamic batch,
output ``logits`` ``[B, 64]``, illegal cells already masked) and ``check_parity`` compares
onnxruntime with torch on sampled positions, returning a report dict (the lead's asset check).
``EliteOnnxPlayer`` is the shipping tier: encode, one cached onnxruntime session, mask, argmax, no
search. ``TeacherSearchPlayer`` plays the teacher with the search it was trained with (Gumbel root,
deterministic, or PUCT without noise): the league's "teacher with search".
``register_trained_players`` makes both known to ``games.celldiv.players.make_player``.

CLI: ``python -m ops.celldiv.onnx --student student.pt --out elite_cnn.onnx [--versus medium hard]``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch

from games.celldiv.board import State, legal_moves, play, random_start
from games.celldiv.encoding import NUM_ACTIONS, action_mask, action_to_cell, encode, encode_batch
from games.celldiv.match import play_match
from games.celldiv.players import register_player
from gpu.celldiv_nets import OnnxEvaluator, policy_logits
from ops.celldiv.distill import load_student
from ops.celldiv.teacher import SearchAdapter, load_teacher
from search import run_gumbel, run_puct

OPSET = 17
INPUT, OUTPUT = "board", "logits"
PARITY_TOLERANCE = 1e-3  # max abs difference of legal logits between torch and onnxruntime


class OnnxModelError(RuntimeError):
    """An ONNX file that is missing or not the Elite model; the message names the file."""


def export_onnx(student_ckpt: str | Path, out_path: str | Path, *, opset: int = OPSET) -> Path:
    """Export the student to ``out_path`` (atomically) and check the graph with ``onnx.checker``."""
    net, doc = load_student(student_ckpt)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(f"{out_path.name}.tmp-{os.getpid()}")
    example = torch.from_numpy(encode_batch([random_start(n, np.random.default_rng(n)) for n in (6, 8)]))
    with warnings.catch_warnings():  # the TorchScript exporter is deprecated; the dynamo one needs onnxscript
        warnings.simplefilter("ignore")
        torch.onnx.export(
            net, (example,), str(tmp), input_names=[INPUT], output_names=[OUTPUT], opset_version=opset,
            dynamic_axes={INPUT: {0: "batch"}, OUTPUT: {0: "batch"}}, dynamo=False,
        )
    model = onnx.load(str(tmp))
    onnx.checker.check_model(model)
    meta = {"student_version": doc["version"], "teacher_version": str(doc.get("teacher_version", "")),
            "shape": doc["shape"], "input": "board [B,3,8,8]: mover, opponent, legal",
            "output": "logits [B,64]"}
    for k, v in meta.items():
        model.metadata_props.add(key=k, value=v)
    onnx.save(model, str(tmp))
    os.replace(tmp, out_path)
    return out_path


@lru_cache(maxsize=16)
def _session(path: str, mtime_ns: int) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1  # one board at a time: threads cost more than they save
    opts.inter_op_num_threads = 1
    try:
        return ort.InferenceSession(path, sess_options=opts, providers=["CPUExecutionProvider"])
    except Exception as e:
        raise OnnxModelError(f"{path}: onnxruntime cannot load the model ({type(e).__name__}: {e})") from None


def onnx_session(path: str | Path) -> ort.InferenceSession:
    """The cached onnxruntime session of ``path`` (reloaded only if the file changes)."""
    p = Path(path).resolve()
    if not p.is_file():
        raise OnnxModelError(f"{p}: ONNX model not found")
    return _session(str(p), p.stat().st_mtime_ns)


def onnx_logits(path: str | Path, x: np.ndarray) -> np.ndarray:
    """``[B, 64]`` logits of the ONNX model for boards ``x [B, 3, 8, 8]``."""
    return onnx_session(path).run([OUTPUT], {INPUT: np.ascontiguousarray(x, dtype=np.float32)})[0]


def sample_positions(count: int, seed: int = 0, sizes: Sequence[int] = (4, 5, 6, 7, 8)) -> list[State]:
    """Positions from random starts followed by a random number of random moves (never finished)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        s = random_start(int(sizes[len(out) % len(sizes)]), rng)
        for _ in range(int(rng.integers(0, len(legal_moves(s))))):
            s = play(s, int(rng.choice(legal_moves(s))))
        out.append(s)
    return out


def _masked_argmax(logits: np.ndarray, legal: np.ndarray) -> np.ndarray:
    return np.argmax(np.where(legal, logits, -np.inf), axis=1)


def check_parity(
    student_ckpt: str | Path, onnx_path: str | Path, *, positions: int = 512, seed: int = 0
) -> dict:
    """onnxruntime vs torch on ``positions`` sampled positions, batched and one at a time.

    Report: positions, argmax_mismatches (masked argmax, must be 0), max_abs_logit_diff (over
    legal actions), single_mismatches (batch-1 runs of the first 32 positions), passed, opset,
    onnxruntime version, student version.
    """
    net, doc = load_student(student_ckpt)
    states = sample_positions(positions, seed)
    x = encode_batch(states)
    legal = np.stack([action_mask(s) for s in states])
    ref = policy_logits(net, x)
    got = onnx_logits(onnx_path, x)
    diff = float(np.abs(np.where(legal, ref - got, 0.0)).max())
    mismatches = int((_masked_argmax(ref, legal) != _masked_argmax(got, legal)).sum())
    single = sum(
        int(_masked_argmax(onnx_logits(onnx_path, x[i : i + 1]), legal[i : i + 1])[0]
            != _masked_argmax(ref[i : i + 1], legal[i : i + 1])[0])
        for i in range(min(32, positions))
    )
    model = onnx.load(str(onnx_path))
    return {
        "positions": positions,
        "argmax_mismatches": mismatches,
        "argmax_agreement": 1.0 - mismatches / positions,
        "single_mismatches": single,
        "max_abs_logit_diff": diff,
        "tolerance": PARITY_TOLERANCE,
        "passed": mismatches == 0 and single == 0 and diff <= PARITY_TOLERANCE,
        "opset": int(model.opset_import[0].version),
        "onnxruntime": ort.__version__,
        "student_version": doc["version"],
    }


class EliteOnnxPlayer:
    """Elite: the distilled CNN through onnxruntime; encode, mask illegal cells, argmax. No search."""

    def __init__(self, onnx_path: str | Path, name: str = "elite") -> None:
        self.path = Path(onnx_path)
        self.name = name
        self.session = onnx_session(self.path)

    def choose(self, state: State) -> int:
        logits = self.session.run([OUTPUT], {INPUT: encode(state)[None]})[0][0]
        action = int(np.argmax(np.where(action_mask(state), logits, -np.inf)))
        return action_to_cell(state, action)


@lru_cache(maxsize=4)
def _teacher(path: str, mtime_ns: int):
    net, doc = load_teacher(Path(path))
    cfg = doc.get("config") or {}
    search = (cfg.get("search", "puct"), int(cfg.get("considered", 16)), float(cfg.get("margin_scale", 0.0)))
    return OnnxEvaluator(net, threads=1), search


LEAGUE_SEARCH = "puct"  # the teacher's search at play time; see TeacherSearchPlayer


class TeacherSearchPlayer:
    """The teacher with search and no noise, after ``simulations`` simulations: ``search`` 'puct'
    (the most visited action; the default), 'gumbel' (a deterministic Gumbel root: sequential halving
    over the top ``considered`` actions by prior) or 'trained' (the one it self-played with).
    PUCT is the default because it measured stronger at play time with the same net and simulations
    (docs/benchmarks.md, Cell Division: 0.665 against 0.565 vs switching at 64). Evaluations through
    onnxruntime."""

    def __init__(self, teacher_ckpt: str | Path, simulations: int = 64, name: str = "teacher",
                 seed: int = 0, search: str = LEAGUE_SEARCH) -> None:
        if search not in ("puct", "gumbel", "trained"):
            raise ValueError(f"search: {search!r}; expected 'puct', 'gumbel' or 'trained'")
        p = Path(teacher_ckpt).resolve()
        self.evaluator, (trained, self.considered, scale) = _teacher(
            str(p), p.stat().st_mtime_ns if p.exists() else 0)
        self.search = trained if search == "trained" else search
        self.game = SearchAdapter(scale)
        self.simulations, self.name = simulations, name
        self.rng = np.random.default_rng(seed)

    def choose(self, state: State) -> int:
        if self.search == "gumbel":
            out = run_gumbel([state], game=self.game, evaluator=self.evaluator, num_simulations=self.simulations,
                             rng=self.rng, max_num_considered_actions=self.considered, gumbel_scale=0.0,
                             num_actions=NUM_ACTIONS)
            return action_to_cell(state, int(out.action[0]))
        out = run_puct([state], game=self.game, evaluator=self.evaluator,
                       num_simulations=self.simulations, rng=self.rng, dirichlet_fraction=0.0,
                       num_actions=NUM_ACTIONS)
        return action_to_cell(state, int(np.argmax(out.visit_counts[0])))


def register_trained_players(
    elite_onnx: str | Path | None = None,
    teacher_ckpt: str | Path | None = None,
    *,
    teacher_simulations: int = 64,
    teacher_search: str | None = None,
) -> list[str]:
    """Register ``elite`` (the ONNX student) and ``teacher`` (teacher + search) for ``make_player``.
    Files are opened now, so a bad path fails here rather than in the middle of a league."""
    names = []
    if elite_onnx is not None:
        EliteOnnxPlayer(elite_onnx)
        register_player("elite", lambda seed, p=Path(elite_onnx): EliteOnnxPlayer(p))
        names.append("elite")
    if teacher_ckpt is not None:
        search = teacher_search or LEAGUE_SEARCH
        TeacherSearchPlayer(teacher_ckpt, teacher_simulations, search=search)
        register_player("teacher", lambda seed, p=Path(teacher_ckpt): TeacherSearchPlayer(
            p, teacher_simulations, seed=seed, search=search))
        names.append("teacher")
    return names


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--student", type=Path, required=True, help="student.pt from ops.celldiv.distill")
    ap.add_argument("--out", type=Path, default=Path(".arena/celldiv/elite/elite_cnn.onnx"))
    ap.add_argument("--versus", nargs="*", default=[], help="opponents for Elite, e.g. medium hard")
    ap.add_argument("--games", type=int, default=200)
    ap.add_argument("--seed", type=int, default=12345)
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    path = export_onnx(a.student, a.out)
    report = check_parity(a.student, path)
    print(f"exported {path} in {time.perf_counter() - t0:.1f}s; parity: {report}")
    for opp in a.versus:
        t = play_match(lambda s: EliteOnnxPlayer(path), opp, games=a.games, seed=a.seed)
        s = t.summary()
        print(f"elite vs {opp}: {s['wins']}W {s['draws']}D {s['losses']}L of {s['games']} "
              f"(win rate {s['wins'] / s['games']:.3f}, score {s['score_rate']:.3f}, Wilson 95% "
              f"[{s['wilson_low']:.3f}, {s['wilson_high']:.3f}], mean margin {s['mean_margin']:+.2f}, "
              f"Elite move median {s['latency_a_us_median']:.0f} us)")


if __name__ == "__main__":
    main()
