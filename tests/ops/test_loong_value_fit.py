"""The privileged value fit: samples against the reference engine, TD(lambda) targets, the early-stopping test,
the calibration figures, the CLI's test profile end to end, and bad input in one line."""

import json
import math

import numpy as np
import pytest
import torch

from games.loong.engine import Game
from games.loong.replay import load_replay
from gpu.loong_value_net import FULL_CHANNELS, HORIZONS, dequantize, quantize
from ops.loong import value_fit as vf


@pytest.fixture(scope="module")
def test_run(tmp_path_factory):
    """The CLI's test profile once for the module: replays, samples, fits, the saved fit."""
    out = tmp_path_factory.mktemp("value_fit")
    assert vf.main(["--profile", "test", "--out", str(out)]) == 0
    return out


def _reference_record(replay):
    """Step the reference engine through the replay: per round end (units, total, longest) of both teams, and the
    body of every dragon at the start of its turn in each round."""
    game = Game(replay.map, replay.seed, int(replay.header["max_rounds"]))
    counts = [_counts(game)]
    bodies = {}
    turns = iter(replay.turns)
    while not game.over:
        game.begin_round()
        while (i := game.next_actor()) is not None:
            bodies[(game.round, i)] = list(game.dragons[i].body)
            t = next(turns)
            assert (t.round, t.dragon_id) == (game.round, i)
            game.turn(i, t.action, t.sonar)
        game.end_round()
        counts.append(_counts(game))
    return np.array(counts, np.int32), bodies, game


def _counts(game):
    s = game.scores()
    return [game.living[0], s[0][2], s[0][1], game.living[1], s[1][2], s[1][1]]


def test_samples_match_the_reference_engine(test_run):
    paths = vf.find_replays(test_run / "replays")
    samples = vf.extract(paths, sample_every=10)
    assert len(samples) == len(paths) == 3
    for gs in samples:
        _check_against_reference(gs, 10)


def test_samples_of_a_game_won_by_elimination(tmp_path):
    from games.loong.bots import play_game
    from games.loong.foil import registry
    from games.loong.mapgen import generate_map
    from games.loong.replay import save_replay

    bots = registry()
    r = play_game(generate_map(20, 20, "rot", seed=1), bots["foil"], bots["random"], 1, 60)
    assert r.reason == "elimination" and r.rounds < 60  # the game ends mid-round: the last counts are its end
    path, _ = save_replay(r, tmp_path / "eliminated")
    [gs] = vf.extract([path], sample_every=7)
    _check_against_reference(gs, 7)


def _check_against_reference(gs, K):
    replay = load_replay(gs.replay)
    ref, bodies, game = _reference_record(replay)
    assert gs.round_counts.dtype == ref.dtype and gs.round_counts.tobytes() == ref.tobytes()
    assert len(gs) > 0
    living = {(r, i) for (r, i) in bodies if (r - 1) % K == 0}
    assert {(int(r), int(d)) for r, d in zip(gs.round, gs.dragon)} == living  # every living dragon, once
    assert len(living) == len(gs)
    full = dequantize(torch.from_numpy(gs.u8), torch.from_numpy(gs.i8))
    assert full.shape == (len(gs), FULL_CHANNELS, replay.map.height, replay.map.width)
    max_rounds = int(replay.header["max_rounds"])
    for j in range(len(gs)):
        r, d, team = int(gs.round[j]), int(gs.dragon[j]), int(gs.team[j])
        assert team == game.dragons[d].team
        body = bodies[(r, d)]
        own = full[j, 12].reshape(-1).nonzero().view(-1).tolist()
        assert sorted(own) == sorted(body)  # the own-segment plane is the reference dragon's body
        assert full[j, 13].reshape(-1).nonzero().view(-1).tolist() == [body[0]]
        winner = replay.header["result"]["winner"]
        assert gs.outcome[j] == (0.5 if winner is None else float(winner == team))
        for k, h in enumerate(HORIZONS):
            c = ref[min(r + h, len(ref) - 1)]
            own_c, other_c = (c[:3], c[3:]) if team == 0 else (c[3:], c[:3])
            assert gs.counts[j, k].tolist() == [own_c[0], other_c[0], own_c[1], other_c[1], own_c[2], other_c[2]]
            for q in range(3):
                tot = own_c[q] + other_c[q]
                want = own_c[q] / tot if tot else 0.5
                assert gs.shares[j, 3 * k + q] == pytest.approx(want)
        assert gs.scalars[j].tolist() == pytest.approx([r / max_rounds, max_rounds / 500])


def test_shares_when_both_teams_have_none():
    counts = np.zeros((1, 3, 6), np.int32)
    counts[0, 0] = [2, 1, 10, 5, 0, 0]
    assert vf.shares_from_counts(counts)[0, :3].tolist() == pytest.approx([2 / 3, 10 / 15, 0.5])
    assert vf.shares_from_counts(counts)[0, 3:].tolist() == [0.5] * 6


def test_quantize_is_lossless_and_refuses_off_grid_values():
    full = torch.zeros(2, FULL_CHANNELS, 20, 24)
    full[0, 21, 3, 4] = 200 / 64
    full[1, 9, 0, 0] = 17 / 40
    full[1, 24, 5, 5] = -12 / 24
    full[1, 25, 5, 5] = 9 / 20
    u8, i8 = quantize(full)
    assert u8.dtype == torch.uint8 and i8.dtype == torch.int8
    assert torch.allclose(dequantize(u8, i8), full, atol=1e-7)
    full[0, 21, 3, 5] = 300 / 64  # segment 300 of a dragon longer than 256: saturates
    u8, _ = quantize(full)
    assert u8[0, 21, 3, 5] == 255 and u8[0, 21, 3, 4] == 200
    full[0, 21, 3, 4] = 0.3  # not a multiple of 1/64
    with pytest.raises(ValueError, match="channel 21"):
        quantize(full)


def test_td_targets_on_a_hand_made_sequence():
    # game 7, team 0: rounds 1, 11 (two dragons), 21; team 1: rounds 1, 11; team 0 won
    game = np.array([7, 7, 7, 7, 7, 7])
    team = np.array([0, 0, 0, 0, 1, 1])
    rnd = np.array([1, 11, 11, 21, 1, 11])
    value = np.array([0.5, 0.6, 0.8, 0.9, 0.4, 0.2])
    outcome = np.array([1, 1, 1, 1, 0, 0], np.float64)
    g = vf.td_targets(game, team, rnd, value, outcome, lam=0.5)
    g21 = 1.0
    g11 = 0.5 * 0.9 + 0.5 * g21  # V at round 21 is 0.9
    g1 = 0.5 * 0.7 + 0.5 * g11  # V at round 11 is the mean of 0.6 and 0.8
    h11 = 0.0
    h1 = 0.5 * 0.2 + 0.5 * h11
    assert g.tolist() == pytest.approx([g1, g11, g11, g21, h1, h11])
    assert vf.td_targets(game, team, rnd, value, outcome, lam=0.0).tolist() == pytest.approx(
        [0.7, 0.9, 0.9, 1.0, 0.2, 0.0])  # lambda 0: one-step bootstrap


def test_paired_test_clusters_by_game():
    best = np.array([1.0, 1.0, 1.0, 1.0])
    cur = np.array([0.5, 0.7, 0.9, 0.9])
    mean, se, z = vf.paired_test(best, cur, np.array([0, 0, 1, 1]))
    # d = .5 .3 .1 .1, mean .25; per-game sums of deviations .3 and -.3; se = sqrt(2 * .18) / 4 = .15
    assert (mean, se, z) == pytest.approx((0.25, 0.15, 0.25 / 0.15))
    assert z > vf.Z_ONE_SIDED_95
    _, se_unclustered, _ = vf.paired_test(best, cur, np.array([0, 1, 2, 3]))
    assert se_unclustered < se  # clustering widens the error when a game's samples move together
    assert vf.paired_test(best, cur, np.array([3, 3, 3, 3]))[2] == 0.0  # one game: no clustered error, no stop


def test_calibration_figures_on_hand_made_numbers():
    p = np.array([0.1] * 10 + [0.7] * 10)
    y = np.array([0.0] * 9 + [1.0] + [1.0] * 5 + [0.0] * 5)
    ece, rows = vf.ece_equal_count(p, y, bins=2)
    assert [r["n"] for r in rows] == [10, 10]
    assert ece == pytest.approx(0.5 * abs(0.1 - 0.1) + 0.5 * abs(0.7 - 0.5))
    c = vf.calibration(p, y, base_rate=0.3)
    want_ll = -(9 * math.log(0.9) + math.log(0.1) + 5 * math.log(0.7) + 5 * math.log(0.3)) / 20
    want_const = -(6 * math.log(0.3) + 14 * math.log(0.7)) / 20
    assert c["log_loss"] == pytest.approx(want_ll) and c["constant_log_loss"] == pytest.approx(want_const)
    assert c["ece"] == pytest.approx(vf.ece_equal_count(p, y)[0])
    assert not c["passed"]  # ECE over 10 bins is 0.1 > MAX_ECE
    # every bin of 4 calibrated exactly: ECE 0 and a log loss below the constant 0.5's (ln 2): passes
    p = np.array([0.25] * 20 + [0.75] * 20)
    y = np.array([1.0, 0, 0, 0] * 5 + [1.0, 1, 1, 0] * 5)
    good = vf.calibration(p, y, base_rate=0.5)
    assert good["ece"] == pytest.approx(0) and good["passed"]
    assert good["log_loss"] == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)))
    # calibrated but no better than the constant predictor: fails
    flat = vf.calibration(np.full(20, 0.5), np.array([0.0, 1.0] * 10), base_rate=0.5)
    assert flat["ece"] == pytest.approx(0) and not flat["passed"]


def test_cli_test_profile_end_to_end(test_run):
    result = json.loads((test_run / "result.json").read_text())
    assert result["games"] == 3 and sum(result["samples"].values()) > 0
    assert {f["horizon"] for f in result["fits"]} == {20, 50}
    fit = vf.load_value_fit(test_run / "value_fit.pt")
    assert fit.horizon == result["chosen_horizon"] and fit.lam == pytest.approx(1 - 10 / fit.horizon)
    assert fit.passed == result["passed"]
    chosen = next(f for f in result["fits"] if f["horizon"] == fit.horizon)
    if not result["passed"]:  # the lowest calibration log loss overall is kept, flagged
        assert chosen["calibration_log_loss"] == min(f["calibration_log_loss"] for f in result["fits"])
    v, s = fit.net(torch.zeros(2, FULL_CHANNELS, 17, 23), torch.zeros(2, 2))  # any map size
    assert v.shape == (2,) and s.shape == (2, 9)
    assert (test_run / "reliability.png").read_bytes()[:4] == b"\x89PNG"


def test_the_live_hook_reads_what_the_samples_stored(test_run):
    from gpu.loong_sim import LoongSim
    from gpu.loong_value_net import value_hook

    fit = vf.load_value_fit(test_run / "value_fit.pt")
    paths = vf.find_replays(test_run / "replays")
    [gs] = vf.extract(paths[:1], sample_every=10)
    replay = load_replay(paths[0])
    sim = LoongSim([replay.map, replay.map], seeds=[replay.seed] * 2, max_rounds=int(replay.header["max_rounds"]))
    live = value_hook(fit.net)(sim)  # round 1, each lane's first actor: the game's first sample
    with torch.no_grad():
        stored = torch.sigmoid(fit.net(dequantize(torch.from_numpy(gs.u8[:1]), torch.from_numpy(gs.i8[:1])),
                                       torch.from_numpy(gs.scalars[:1]))[0])
    assert live.shape == (2,) and torch.allclose(live, stored.expand(2), atol=1e-6)


def test_fit_of_given_replays_logs_one_child_run_a_horizon(test_run, tmp_path):
    from ops.tracking import NullTracker

    cfg = vf.profile_config("test", horizons=(10, 30), max_epochs=1)
    children = vf._NullChild()
    r = vf.run(cfg, tmp_path / "again", NullTracker(), replays=test_run / "replays", children=children)
    assert set(children.runs) == {"H=10", "H=30"}
    assert all(t.params["horizon"] in (10, 30) and t.metrics for t in children.runs.values())
    assert r.replays == str(test_run / "replays") and not (tmp_path / "again" / "replays").exists()


def test_bad_input_is_one_line(tmp_path, capsys):
    assert vf.main(["--profile", "test", "--out", str(tmp_path / "o"), "--replays", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such folder" in err and "nope" in err
    (tmp_path / "empty").mkdir()
    assert vf.main(["--profile", "test", "--out", str(tmp_path / "o"), "--replays", str(tmp_path / "empty")]) == 2
    assert "no replays" in capsys.readouterr().err
    assert vf.main(["--profile", "huge", "--out", str(tmp_path / "o")]) == 2
    assert "profile" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert vf.main(["--profile", "test", "--out", str(tmp_path / "file")]) == 2
    assert "is a file" in capsys.readouterr().err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "game.json").write_text("{not json")
    (bad / "game.parquet").write_bytes(b"")
    assert vf.main(["--profile", "test", "--out", str(tmp_path / "o"), "--replays", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "game.json" in err and "not JSON" in err


def test_a_wrong_or_corrupt_fit_file_is_refused_in_one_line(test_run, tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a torch file at all")
    for path, field in ((tmp_path / "missing.pt", "no such"), (bad, "not a readable torch file")):
        with pytest.raises(vf.ValueFitError, match=field) as e:
            vf.load_value_fit(path)
        assert "\n" not in str(e.value) and str(path) in str(e.value)
    doc = torch.load(test_run / "value_fit.pt", weights_only=True)
    for key, value, field in (("horizon", None, "horizon"), ("lambda", 0.123, "lambda"), ("shape", "v9", "shape"),
                              ("format", "other", "format")):
        broken = {**doc, key: value} if value is not None else {k: v for k, v in doc.items() if k != key}
        p = tmp_path / f"{key}.pt"
        torch.save(broken, p)
        with pytest.raises(vf.ValueFitError, match=f"{p}: {field}") as e:
            vf.load_value_fit(p)
        assert "\n" not in str(e.value)
    sd = dict(doc["state_dict"])
    sd.pop(next(iter(sd)))
    torch.save({**doc, "state_dict": sd}, tmp_path / "sd.pt")
    with pytest.raises(vf.ValueFitError, match="state_dict") as e:
        vf.load_value_fit(tmp_path / "sd.pt")
    assert "\n" not in str(e.value)


def test_config_errors_name_the_field():
    for overrides, field in ((dict(games=2), "games"), (dict(horizons=(5,)), "horizons"), (dict(shape="x"), "shape"),
                             (dict(pairings=(("foil", "nobody"),)), "pairings"), (dict(bands=(70,)), "bands")):
        with pytest.raises(vf.ValueFitError, match=f"^{field}"):
            vf.check_config(vf.profile_config("test", **overrides))


def test_games_cover_every_band_and_symmetry():
    cfg = vf.profile_config("small", games=36)
    specs = [vf.game_spec(cfg, g) for g in range(36)]
    assert {(s[0], s[1]) for s in specs} == {(b, sym) for b in cfg.bands for sym in vf.SYMMETRIES}
    assert {(s[2], s[3]) for s in specs} == {("foil", "foil"), ("expert-h", "foil"), ("foil", "expert-h")}


def test_full_channels_agree_with_the_observation():
    from gpu import loong_obs

    assert loong_obs.FULL_CHANNELS == FULL_CHANNELS
