"""League games on the batched simulator (ops/loong/batched.py): judged players read their observation from the
lanes, and every game equals the reference runner's with the same bots (turns, sonar, deaths, hashes, result), its
replay re-simulates, a failing bot's forfeit keeps its reason, a capacity the simulator outgrows sends the games to
the reference engine, and the league's tallies are the reference runner's."""

import dataclasses

import pytest

from games.loong.bots import play_game, random_bot
from games.loong.foil import registry
from games.loong.mapgen import generate_map
from games.loong.replay import save_replay, verify_replay
from ops.loong import batched as lb
from ops.loong import league as lg

FOIL = registry()["foil"]


class Raises:
    """A bot that raises on its third turn."""

    name = "raises"

    def __init__(self, dragon_id, team, seed):
        self.turns, self.inner = 0, random_bot(dragon_id, team, seed)

    def act(self, obs):
        self.turns += 1
        if self.turns == 3:
            raise RuntimeError("deliberately broken")
        return self.inner.act(obs)


def raises(dragon_id, team, seed):
    return Raises(dragon_id, team, seed)


JUDGED = {"foil": FOIL, "random": random_bot, "raises": raises}


def same_game(a, b):
    assert a.hashes == b.hashes
    assert [(t.round, t.dragon_id, t.action, t.sonar, t.death) for t in a.turns] == \
        [(t.round, t.dragon_id, t.action, t.sonar, t.death) for t in b.turns]
    assert a.result == b.result and a.deaths == b.deaths and a.standings == b.standings


def reference(game, max_rounds):
    return play_game(game.map, JUDGED[game.names[0]], JUDGED[game.names[1]], game.seed, max_rounds)


def test_games_on_the_simulator_equal_the_reference_runner_and_their_replays_verify(tmp_path):
    maps = [generate_map(14, 14, "lr", seed=3), generate_map(20, 20, "rot", seed=4, kelp_density=0.05),
            generate_map(14, 14, "tb", seed=5)]
    games = [lb.BatchedGame(maps[0], 11, ("foil", "foil")), lb.BatchedGame(maps[1], 12, ("foil", "random")),
             lb.BatchedGame(maps[2], 13, ("random", "raises")), lb.BatchedGame(maps[0], 14, ("raises", "foil"))]
    stats = lb.BatchStats()
    got = lb.play_games(games, JUDGED, max_rounds=60, stats=stats)
    assert stats.games == 4 and stats.replayed == 0 and stats.turns == sum(len(r.turns) for r in got)
    sonar = 0
    for game, r in zip(games, got, strict=True):
        same_game(r, reference(game, 60))
        assert r.bot_names == game.names
        sonar += sum(t.sonar is not None for t in r.turns)
        stem = tmp_path / f"g{game.seed}"
        save_replay(r, stem)
        verify_replay(stem.with_suffix(".json"))
    assert sonar > 0  # the foil relays: inboxes were read from the lanes
    broken = [t for r in got for t in r.turns if t.death and "deliberately broken" in t.death]
    assert broken  # the forfeit's own reason, not the batched row's bare FORFEIT


def test_a_capacity_the_simulator_outgrows_replays_the_games_on_the_reference_engine(monkeypatch):
    monkeypatch.setattr(lb, "INBOX", 1)  # the foil's relay overflows one slot at once
    m = generate_map(14, 14, "lr", seed=3)
    games = [lb.BatchedGame(m, 21, ("foil", "foil")), lb.BatchedGame(m, 22, ("foil", "random"))]
    stats = lb.BatchStats()
    got = lb.play_games(games, JUDGED, max_rounds=40, stats=stats)
    assert stats.replayed == 2
    for game, r in zip(games, got, strict=True):
        same_game(r, reference(game, 40))


def test_an_unknown_player_is_refused_before_any_game():
    m = generate_map(14, 14, "lr", seed=3)
    with pytest.raises(KeyError, match="player 'nobody' is neither judged nor a network player"):
        lb.play_games([lb.BatchedGame(m, 1, ("foil", "nobody"))], JUDGED)


def test_the_league_batched_tallies_equal_the_reference_runners():
    config = lg.LoongLeagueConfig(players=("foil", "random"), maps=("gen:12x12:lr:seed=1", "gen:16x16:rot:seed=2"),
                                  games_per_map=2, max_rounds=40)
    maps = lg.load_maps(config)
    plain = lg.play_pairing("foil", "random", config, maps, JUDGED, seed=5)
    batched = lg.play_pairing("foil", "random", dataclasses.replace(config, batched=True), maps, JUDGED, seed=5)
    assert (batched.wins, batched.draws, batched.losses, batched.margins) == \
        (plain.wins, plain.draws, plain.losses, plain.margins)
    assert len(batched.latency_a) == len(plain.latency_a) and len(batched.latency_b) == len(plain.latency_b)
    part = lg.play_pairing("foil", "random", dataclasses.replace(config, batched=True), maps, JUDGED, (1, 2), seed=5)
    assert part.margins == plain.margins[2:]


@pytest.fixture(scope="module")
def expert0_root(tmp_path_factory):
    """A builds root with expert-0 on a small random network (its network file beside the wasm) and the C foil."""
    import torch

    from bot.builds import build_from_source
    from bot.expert0 import build_expert0
    from bot.int8_expert import quantize
    from bot.toolchain import C_DIR
    from gpu.loong_expert_net import LoongExpertNet

    torch.manual_seed(3)
    model = LoongExpertNet("v1t2c16", mode="fake")
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(2.0)
    root = tmp_path_factory.mktemp("expert0-league") / "builds"
    build_expert0(root, quantize(model.eval()))
    build_from_source(root, [C_DIR / "foil.c"], name="foil-c")
    return root


def test_a_network_build_plays_batched_as_its_judged_wasm_build_plays(expert0_root):
    from bot.builds import factory
    from bot.expert0 import network_player
    from gpu.loong_int8_batch import BatchedInt8Net

    nb = network_player(expert0_root, "expert-0")
    player = lb.NetworkPlayer(nb.factory(), BatchedInt8Net(nb.net))
    judged = {"build:foil-c": factory(expert0_root, "foil-c"), "random": random_bot}
    wasm = factory(expert0_root, "expert-0")
    m16, m20 = generate_map(16, 16, "rot", seed=7), generate_map(20, 20, "lr", seed=8)
    games = [lb.BatchedGame(m16, 31, ("build:expert-0", "build:foil-c")),
             lb.BatchedGame(m16, 31, ("build:foil-c", "build:expert-0")),
             lb.BatchedGame(m20, 32, ("build:expert-0", "build:expert-0")),
             lb.BatchedGame(m20, 33, ("random", "build:expert-0"))]
    stats = lb.BatchStats()
    got = lb.play_games(games, judged, {"build:expert-0": player}, max_rounds=40, stats=stats)
    assert stats.network_turns > 200 and stats.batches < stats.network_turns  # several dragons a batch
    every = {**judged, "build:expert-0": wasm}
    for game, r in zip(games, got, strict=True):
        want = play_game(game.map, every[game.names[0]], every[game.names[1]], game.seed, 40)
        same_game(r, want)
    judged_points = [t.points_used for r in got for t in r.turns if t.points_used]
    assert judged_points  # the judged foil's points are kept in the records


@pytest.mark.parametrize("how", ["native", "torch"])
def test_the_league_plays_network_builds_batched_with_the_reference_runners_tallies(expert0_root, how):
    config = lg.LoongLeagueConfig(players=("build:expert-0", "build:foil-c", "random"),
                                  maps=("gen:14x14:tb:seed=4", "gen:12x12:lr:seed=5"), games_per_map=2,
                                  max_rounds=30, builds=str(expert0_root))
    plain = lg.run(config)
    on_sim = dataclasses.replace(config, batched=True, batch_networks=how)
    maps_done = []
    batched = lg.run_pass(on_sim, on_map_done=lambda d, t: maps_done.append((d, t))).league
    assert maps_done == [(1, 2), (2, 2)]  # a map an item, every pairing in its batch
    assert not plain.failures and not batched.failures
    for a, b in zip(plain.tallies, batched.tallies, strict=True):
        assert (a.a, a.b, a.wins, a.draws, a.losses, a.margins) == (b.a, b.b, b.wins, b.draws, b.losses, b.margins)
    player = lg._NETWORKS[on_sim]["build:expert-0"]
    assert (player.evaluate is not None) == (how == "torch")


def test_network_builds_evaluate_natively_on_the_cpu_unless_asked():
    assert not lg.LoongLeagueConfig().network_batch()
    assert lg.LoongLeagueConfig(batch_networks="torch").network_batch()
    assert lg.LoongLeagueConfig(device="cuda").network_batch()
    with pytest.raises(lg.LeagueConfigError, match="batch_networks: want auto, torch or native, got 'gpu'"):
        lg.check_config(lg.LoongLeagueConfig(batch_networks="gpu"))
    with pytest.raises(lg.LeagueConfigError, match="device: want cpu or cuda"):
        lg.check_config(lg.LoongLeagueConfig(batched=True, device="tpu"))
    assert lg.league_device("cpu") == "cpu" and lg.league_device("auto") in ("cpu", "cuda")


def test_the_dataset_plays_a_network_build_through_its_native_twin(expert0_root, tmp_path):
    """A 'build:' bot that carries its network is played by its native twin (the same C turn as the judged wasm,
    which the test above checks move for move), here labelled by the foil (DAgger)."""
    from bot.builds import verify
    from ops.execution import _CACHE
    from ops.loong.dataset import DatasetConfig, build, load_dataset

    cfg = DatasetConfig(games=1, rounds=15, bands=(20,), seed=2, pairings=(("build:expert-0", "foil"),),
                        builds=str(expert0_root), labeller="foil")
    t = load_dataset(build(cfg, tmp_path / "ds").out, columns=["bot", "played_by", "chosen"])
    bid = verify(expert0_root, "expert-0").id
    assert f"loong-dataset-twin-factory:{bid}" in _CACHE and f"loong-dataset-build:{bid}" not in _CACHE
    assert set(t["played_by"].to_pylist()) == {"build:expert-0", "foil"} and set(t["bot"].to_pylist()) == {"foil"}
