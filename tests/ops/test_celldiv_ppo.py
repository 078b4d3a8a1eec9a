"""PPO self-play for the linear tiers: it learns, it resumes, it refuses damaged checkpoints, its
exports play, and its torch scoring is the players' scoring."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from games.celldiv.board import is_over, legal_moves, play, random_start
from games.celldiv.features import features
from games.celldiv.match import play_match
from games.celldiv.players import (
    LinearPlayer,
    SwitchingPlayer,
    linear_player_from_file,
    load_weights,
    make_player,
    register_player,
    switching_player,
)
from gpu.linear import LinearNet, SwitchingLinearNet, scores_np
from ops.celldiv import ppo as celldiv_ppo
from ops.celldiv.ppo import CheckpointError, PPOConfig, config_for, run, temperature
from ops.tracking import NullTracker


def _positions(count: int, seed: int = 0):
    """Random mid-game positions of every size, from random starts and random moves."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        s = random_start(int(rng.integers(4, 9)), rng)
        for _ in range(int(rng.integers(0, 40))):
            if is_over(s):
                break
            s = play(s, int(rng.choice(legal_moves(s))))
        if not is_over(s):
            out.append(s)
    return out


def _net_choice(net, state) -> int:
    cells, f = features(state)
    with torch.no_grad():
        scores = net.double().scores(torch.from_numpy(f)[None])[0].numpy()
    return int(cells[int(np.flatnonzero(scores == scores.max())[0])])


def test_switching_net_scores_as_the_switching_player():
    positions = _positions(60)
    for seed in range(3):
        net = SwitchingLinearNet(init="random", seed=seed, init_scale=2.0).double()
        player = SwitchingPlayer(**net.vectors())
        for s in positions:
            assert _net_choice(net, s) == player.choose(s)
            _, f = features(s)
            with torch.no_grad():
                torch_scores = net.scores(torch.from_numpy(f)[None])[0].numpy()
            np.testing.assert_allclose(scores_np(net.flat(), f), torch_scores, rtol=1e-12, atol=1e-12)


def test_linear_net_scores_as_the_linear_player():
    net = LinearNet(init="random", seed=5, init_scale=2.0).double()
    player = LinearPlayer(net.flat())
    for s in _positions(40, seed=1):
        assert _net_choice(net, s) == player.choose(s)


def test_padded_candidates_get_no_probability():
    net = LinearNet(seed=0)
    feats = torch.rand(2, 5, 14)
    mask = torch.tensor([[True, True, True, False, False], [True] * 5])
    p = torch.softmax(net(feats, mask, torch.tensor([0.05, 1.0])), -1)
    assert torch.all(p[0, 3:] == 0) and torch.allclose(p.sum(-1), torch.ones(2))


def test_temperature_schedule():
    c = PPOConfig()
    assert temperature(0.0, c) == pytest.approx(1.0)
    assert temperature(0.375, c) == pytest.approx(0.525)
    assert temperature(0.7499, c) == pytest.approx(0.05, abs=1e-3)
    assert temperature(0.75, c) is None and temperature(0.99, c) is None  # the greedy tail


def test_config_refuses_unknown_choices():
    with pytest.raises(ValueError, match="model"):
        PPOConfig(model="cnn")
    with pytest.raises(ValueError, match="opponent"):
        PPOConfig(opponent="medium")
    with pytest.raises(ValueError, match="profile"):
        config_for("huge")


def test_ppo_improves_over_random_init(tmp_path):
    # raw trained weights against Medium on a fixed seed: deterministic players and paired starts,
    # so the two scores are exact figures, not samples
    config = PPOConfig(model="linear", init="random", seed=3, iterations=5, games_per_iteration=16,
                       sizes=(4, 5, 6), eval_every=5, eval_games=40, eval_form="raw",
                       final_eval_games=0)
    tracker = NullTracker()
    result = run(config, out_dir=tmp_path, tracker=tracker)
    first, last = result.evals[0], result.evals[-1]
    assert (first["iteration"], last["iteration"]) == (0, 5)
    assert last["score_rate"] >= first["score_rate"] + 0.25, result.evals
    assert last["mean_margin"] > first["mean_margin"]
    logged = set().union(*(m for _, m in tracker.metrics))
    for name in ("policy_loss", "entropy", "approx_kl", "clip_frac", "epochs_used", "mean_reward",
                 "eval_score_vs_medium"):
        assert name in logged
    assert tracker.params["model"] == "linear"


def test_interrupted_run_resumes_where_it_stopped(tmp_path):
    config = config_for("test", iterations=4)

    def stop_after_two(it, total, metrics):
        if it == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(config, out_dir=tmp_path / "a", progress=stop_after_two)
    assert torch.load(tmp_path / "a" / "checkpoint.pt", weights_only=True)["iteration"] == 2

    seen = []
    resumed = run(config, out_dir=tmp_path / "a", progress=lambda it, total, m: seen.append(it))
    assert seen == [3, 4]
    assert (resumed.resumed_from, resumed.iterations_run, resumed.iterations) == (2, 2, 4)
    assert [h["iteration"] for h in resumed.history] == [1, 2, 3, 4]
    assert torch.load(resumed.checkpoint_path, weights_only=True)["iteration"] == 4

    straight = run(config, out_dir=tmp_path / "b")
    assert straight.resumed_from is None
    assert resumed.weights == straight.weights  # every draw of iteration i comes from (seed, i)

    again = run(config, out_dir=tmp_path / "a")  # already finished: nothing more to train
    assert again.iterations_run == 0 and again.weights == straight.weights


def test_corrupted_checkpoint_is_refused_by_name(tmp_path):
    config = config_for("test", iterations=1)
    result = run(config, out_dir=tmp_path)
    ckpt = result.checkpoint_path
    data = ckpt.read_bytes()
    ckpt.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="corrupted") as e:
        run(config_for("test", iterations=2), out_dir=tmp_path)
    assert str(ckpt) in str(e.value)
    ckpt.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="checkpoint.pt"):
        run(config, out_dir=tmp_path)


def test_checkpoint_of_another_config_is_refused(tmp_path):
    run(config_for("test", iterations=1), out_dir=tmp_path)
    with pytest.raises(CheckpointError, match="lr"):
        run(config_for("test", iterations=2, lr=0.1), out_dir=tmp_path)


@pytest.mark.parametrize("model", ["linear", "switching"])
def test_exported_weights_load_and_play(tmp_path, model):
    result = run(config_for("test", model=model, iterations=1), out_dir=tmp_path)
    doc = load_weights(result.weights_path)
    if model == "linear":
        assert doc["kind"] == "linear" and doc["weights"] == result.weights["weights"]
        factory = lambda seed: linear_player_from_file(result.weights_path, "hard-trained-test")  # noqa: E731
    else:
        assert doc["kind"] == "switching_linear"
        assert (doc["w_early"], doc["w_late"]) == (result.weights["w_early"], result.weights["w_late"])
        factory = lambda seed: switching_player(result.weights_path, "switching-trained-test")  # noqa: E731
    name = f"ppo-test-{model}"
    register_player(name, factory)
    assert make_player(name).choose(random_start(5, np.random.default_rng(0))) >= 0
    tally = play_match(name, "random", games=4, sizes=(4, 8))
    assert tally.games == 4
    assert set(result.final_eval) == ({"shipped_vs_medium", "raw_vs_medium"} if model == "linear"
                                      else {"shipped_vs_medium"})
    summary = result.final_eval["shipped_vs_medium"]
    assert 0 <= summary["wilson_low"] <= summary["score_rate"] <= summary["wilson_high"] <= 1
    json.dumps(result.as_dict())


def test_cli_runs_a_tiny_profile(tmp_path, capsys):
    assert celldiv_ppo.main(["--profile", "test", "--model", "switching", "--iterations", "2",
                             "--out", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["iterations"] == 2 and out["model"] == "switching"
    assert (tmp_path / "weights.json").exists()
    (tmp_path / "checkpoint.pt").write_bytes(b"\x00garbage")
    assert celldiv_ppo.main(["--profile", "test", "--out", str(tmp_path), "--model", "switching"]) == 2
