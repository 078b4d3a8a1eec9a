"""The whole Cell Division Elite chain on the tiny ``test`` profiles: teacher -> teacher data ->
student -> ONNX, with the figures that must hold (held-out cross-entropy goes down, ONNX parity,
legal moves) and the errors for damaged checkpoints and models."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from games.celldiv.match import play_game, play_match
from games.celldiv.players import make_player
from ops.celldiv import distill as celldiv_distill
from ops.celldiv import onnx as celldiv_onnx
from ops.celldiv import teacher as celldiv_teacher
from ops.celldiv.onnx import EliteOnnxPlayer, OnnxModelError, check_parity, export_onnx, sample_positions
from ops.checkpoints import CheckpointError
from ops.tracking import NullTracker

TEACHER = replace(celldiv_teacher.PROFILES["test"], iterations=1, data_games=64)
STUDENT = replace(celldiv_distill.PROFILES["test"], epochs=6)


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    out = tmp_path_factory.mktemp("chain")
    teacher = celldiv_teacher.run(TEACHER, out_dir=out / "teacher")
    data = celldiv_teacher.generate_teacher_data(teacher.teacher_ckpt, TEACHER, out / "data.parquet")
    tracker = NullTracker()
    student = celldiv_distill.run(STUDENT, data_path=data, out_dir=out / "student", tracker=tracker)
    onnx_path = export_onnx(student.student_ckpt, out / "elite_cnn.onnx")
    return {"out": out, "teacher": teacher, "data": data, "student": student, "onnx": onnx_path,
            "tracker": tracker}


def test_distillation_lowers_heldout_cross_entropy(chain):
    r = chain["student"]
    print(f"held-out cross-entropy {r.heldout_ce_before:.4f} -> {r.heldout_ce_after:.4f} "
          f"(floor {r.target_entropy:.4f}), top-1 {r.heldout_top1_before:.3f} -> {r.heldout_top1_after:.3f}")
    assert r.heldout_ce_after < r.heldout_ce_before
    assert r.heldout_ce_after >= r.target_entropy - 1e-4  # cross-entropy never beats the targets' entropy
    assert r.positions_heldout > 0 and r.positions_train > r.positions_heldout
    assert r.teacher_version == chain["teacher"].version
    params, metrics = chain["tracker"].params, chain["tracker"].metrics
    assert params["shape"] == "b3c32" and params["params"] == r.params
    assert any("val_cross_entropy" in m for _, m in metrics)


def test_onnx_matches_torch_on_every_position(chain):
    report = check_parity(chain["student"].student_ckpt, chain["onnx"], positions=256)
    print(report)
    assert report["passed"] and report["argmax_mismatches"] == 0 and report["single_mismatches"] == 0
    assert report["max_abs_logit_diff"] < 1e-3 and report["opset"] == celldiv_onnx.OPSET


def test_elite_always_plays_legal_moves(chain):
    elite = EliteOnnxPlayer(chain["onnx"])
    for s in sample_positions(64, seed=11):
        cell = elite.choose(s)
        assert s.board.ravel()[cell] == 0
    # play_match raises IllegalMoveError on an illegal move
    tally = play_match(lambda seed: EliteOnnxPlayer(chain["onnx"]), "random", games=10, seed=5)
    assert tally.games == 10


def test_registered_players_play_a_game(chain):
    names = celldiv_onnx.register_trained_players(
        elite_onnx=chain["onnx"], teacher_ckpt=chain["teacher"].teacher_ckpt, teacher_simulations=4
    )
    assert names == ["elite", "teacher"]
    start = sample_positions(1, seed=2, sizes=(4,))[0]
    rec = play_game((make_player("elite"), make_player("teacher", seed=1)), start)
    assert rec.final.board.min() >= 0 and len(rec.moves) > 0


def test_teacher_search_player_searches_as_asked(chain):
    ckpt = chain["teacher"].teacher_ckpt
    start = sample_positions(1, seed=3, sizes=(5,))[0]
    players = {s: celldiv_onnx.TeacherSearchPlayer(ckpt, 8, search=s) for s in ("puct", "gumbel", "trained")}
    assert celldiv_onnx.LEAGUE_SEARCH == "puct" and players["puct"].search == "puct"
    assert players["trained"].search == TEACHER.search  # the checkpoint's own search
    for p in players.values():
        cell = p.choose(start)
        assert start.board.reshape(-1)[cell] == 0  # an empty cell of the board
    with pytest.raises(ValueError, match="search: 'mcts'"):
        celldiv_onnx.TeacherSearchPlayer(ckpt, 8, search="mcts")


class Crash(RuntimeError):
    pass


class CrashingTracker(NullTracker):
    """Kills the run while epoch ``at`` ends, before that epoch's checkpoint is written."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def log_metrics(self, metrics, step=None):
        if step == self.at:
            raise Crash(f"killed at epoch {step}")
        super().log_metrics(metrics, step)


def test_killed_student_resumes_to_the_same_weights(chain, tmp_path):
    config = replace(STUDENT, epochs=3)
    with pytest.raises(Crash):
        celldiv_distill.run(config, data_path=chain["data"], out_dir=tmp_path, tracker=CrashingTracker(at=2))
    resumed = celldiv_distill.run(config, data_path=chain["data"], out_dir=tmp_path)
    assert resumed.resumed_from_epoch == 2 and resumed.epochs == 3
    straight = celldiv_distill.run(config, data_path=chain["data"], out_dir=tmp_path / "straight")
    assert straight.resumed_from_epoch is None
    assert straight.version == resumed.version  # same weights, bit for bit


def test_damaged_student_checkpoint_and_model_are_refused(chain, tmp_path):
    last = tmp_path / celldiv_distill.LAST
    last.write_bytes(b"\x00" * 100)
    with pytest.raises(CheckpointError, match=r"last\.ckpt: cannot read the checkpoint"):
        celldiv_distill.run(STUDENT, data_path=chain["data"], out_dir=tmp_path)
    with pytest.raises(CheckpointError, match="student.pt"):
        bad = tmp_path / "student.pt"
        bad.write_bytes(chain["student"].student_ckpt.read_bytes()[:-64])
        celldiv_distill.load_student(bad)
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(chain["onnx"].read_bytes()[: 2000])
    with pytest.raises(OnnxModelError, match=r"broken\.onnx"):
        EliteOnnxPlayer(broken)
    with pytest.raises(OnnxModelError, match="not found"):
        EliteOnnxPlayer(tmp_path / "missing.onnx")


def test_onnx_batch_is_dynamic(chain):
    x = np.stack([celldiv_onnx.encode(s) for s in sample_positions(7, seed=4)])
    assert celldiv_onnx.onnx_logits(chain["onnx"], x).shape == (7, 64)
    assert celldiv_onnx.onnx_logits(chain["onnx"], x[:1]).shape == (1, 64)
