"""The Loong replay dataset: shards the same bytes in-process and on a pool, every action matched to a candidate
that is that action, outcomes from the engine's result, and bad files refused naming the file and the field; a
registered wasm build's games recorded under its player name, an unknown or altered build refused before any game."""

import json
import shutil
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bot.builds import verify
from bot.core_candidates import KIND_MOVE, KIND_SPLIT, KIND_SPRINT, parse_records, sprint_directions
from ops.execution import _CACHE, PoolExecutor
from ops.loong.dataset import SCHEMA, DatasetConfig, DatasetError, build, check_config, game_spec, load_dataset

CONFIG = DatasetConfig(games=4, rounds=30, shard_games=2, bands=(20, 28), seed=4)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("dataset")
    return build(CONFIG, out / "here"), build(CONFIG, out / "pool", executor=PoolExecutor(2))


def test_the_shards_are_the_same_bytes_in_process_and_on_a_pool(built):
    here, pool = built
    assert [p.name for p in here.shards] == ["part-000000.parquet", "part-000002.parquet"]
    assert [p.read_bytes() for p in here.shards] == [p.read_bytes() for p in pool.shards]
    assert here.summary() == pool.summary()


def test_every_decision_matches_a_candidate_that_is_its_action(built):
    here, _ = built
    t = load_dataset(here.out)
    assert t.num_rows == here.decisions > 300 and {b for b in t["bot"].to_pylist()} == {"foil", "expert-h", "random"}
    kinds = set()
    for action, raw, chosen, count, head, heading, features, taps in zip(
            *(t[c].to_pylist() for c in ("action", "candidates", "chosen", "candidate_count", "after_head",
                                         "after_heading", "features", "taps"))):
        records = parse_records(raw)
        assert len(records) == count >= 1
        assert len(features) == 48 * count and len(taps) == count and max(taps) <= 224
        if chosen < 0:
            continue
        r = records[chosen]
        kinds.add(action[0])
        if action[0] == "M":
            assert r["kind"] == KIND_MOVE and r["first"] == int(action[1:])
        elif action[0] == "X":
            assert r["kind"] == KIND_SPLIT and r["arg"] == int(action[1:])
        else:
            assert action[0] == "S" and r["kind"] == KIND_SPRINT
            if head >= 0:  # the same end state as the engine gave the dragon (maybe by another route)
                assert (r["end"], r["heading"]) == (head, heading)
            else:  # died on the way: the same route
                assert sprint_directions(r) == tuple(int(d) for d in action[1:])
    assert {"M", "S"} <= kinds
    assert here.gaps <= here.decisions // 100  # the core proposes (nearly) every action the bots take


def test_outcomes_are_the_engines_result_for_each_team(built):
    here, _ = built
    t = load_dataset(here.out, columns=["game", "team", "outcome", "bot", "width"])
    for g in range(CONFIG.games):
        rows = [(team, o) for game, team, o in zip(t["game"].to_pylist(), t["team"].to_pylist(),
                                                     t["outcome"].to_pylist()) if game == g]
        by_team = {team: {o for tm, o in rows if tm == team} for team in (0, 1)}
        assert all(len(v) == 1 for v in by_team.values()), by_team  # one outcome a team
        assert by_team[0] == {-o for o in by_team[1]}
    sizes = {game_spec(CONFIG, g)[0] for g in range(CONFIG.games)}
    assert set(t["width"].to_pylist()) == sizes == {20, 28}
    symmetries = [game_spec(CONFIG, g)[1] for g in range(CONFIG.games)]
    assert symmetries == ["lr", "tb", "rot", "tb"]
    full = DatasetConfig()  # the default 18 games: every pairing on every band, and each pairing on every symmetry
    specs = [game_spec(full, g) for g in range(full.games)]
    for pair in full.pairings:
        mine = [s for s in specs if {s[2], s[3]} == set(pair) or (s[2], s[3]) == pair]
        assert {s[0] for s in mine} == set(full.bands) and {s[1] for s in mine} == {"lr", "tb", "rot"}


def test_bad_files_are_refused_naming_the_file_and_the_field(built, tmp_path):
    here, _ = built
    table = pq.read_table(here.shards[0])
    missing = tmp_path / "missing"
    missing.mkdir()
    pq.write_table(table.drop(["chosen"]).replace_schema_metadata(SCHEMA.metadata), missing / "part-000000.parquet")
    with pytest.raises(DatasetError, match=r"part-000000\.parquet: column 'chosen' missing"):
        load_dataset(missing)
    old = tmp_path / "old.parquet"
    pq.write_table(table.replace_schema_metadata({b"schema": b"loong_replay_dataset", b"version": b"0"}), old)
    with pytest.raises(DatasetError, match=r"old\.parquet: schema version '0', expected '3'"):
        load_dataset(old)
    truncated = tmp_path / "cut.parquet"
    data = here.shards[0].read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match=r"cut\.parquet: not a readable Parquet file"):
        load_dataset(truncated)
    retyped = tmp_path / "retyped.parquet"
    pq.write_table(table.set_column(table.schema.get_field_index("round"), "round",
                                    pa.array(np.array(table["round"]), pa.int64())), retyped)
    with pytest.raises(DatasetError, match=r"retyped\.parquet: column 'round' has type int64, expected int16"):
        load_dataset(retyped)
    with pytest.raises(DatasetError, match=r"empty: no part-\*\.parquet shards"):
        (tmp_path / "empty").mkdir()
        load_dataset(tmp_path / "empty")


@pytest.mark.parametrize("cfg, line", [
    (DatasetConfig(games=0), "games: must be at least 1, got 0"),
    (DatasetConfig(bands=(8,)), "bands: map size 8 outside 10..64"),
    (DatasetConfig(pairings=(("foil", "wizard"),)), "pairings: unknown bot 'wizard'"),
    (DatasetConfig(labeller="oracle"), "labeller: unknown bot 'oracle'"),
    (DatasetConfig(pairings=(("teacher:0", "foil"),)), "pairings: player 'teacher:0': units: 0"),
    (DatasetConfig(labeller="teacher:100:psychic"), "labeller: player 'teacher:100:psychic': model: 'psychic'"),
])
def test_a_bad_config_is_one_line_naming_the_field(cfg, line):
    with pytest.raises(DatasetError, match=line):
        check_config(cfg)


BUILT = DatasetConfig(games=2, rounds=20, shard_games=1, bands=(20,), seed=5, pairings=(("build:random-c", "foil"),))


@pytest.fixture(scope="module")
def with_a_build(random_and_foil_builds, tmp_path_factory):
    out = tmp_path_factory.mktemp("with-a-build")
    cfg = replace(BUILT, builds=str(random_and_foil_builds))
    return cfg, build(cfg, out / "here"), build(cfg, out / "pool", executor=PoolExecutor(2))


def test_a_registered_builds_games_are_recorded_under_its_player_name(with_a_build, tmp_path):
    cfg, here, pool = with_a_build
    assert [p.read_bytes() for p in here.shards] == [p.read_bytes() for p in pool.shards]  # loaded in each worker
    t = load_dataset(here.out)
    assert set(here.by_bot) == {"build:random-c", "foil"} and here.by_bot["build:random-c"]["decisions"] > 20
    for game, team, bot in zip(*(t[c].to_pylist() for c in ("game", "team", "bot"))):
        assert bot == game_spec(cfg, game)[2 + team]
    bid = verify(cfg.builds, "random-c").id
    assert json.loads((here.out / "config.json").read_text())["build_ids"] == {"build:random-c": bid}
    assert _CACHE[f"loong-dataset-build:{bid}"].teams  # the judge's factory played the build's dragons
    # random-c plays move for move like the Python random bot: the same games, the same rows but the bot's name
    python = load_dataset(build(replace(cfg, pairings=(("random", "foil"),), builds=""), tmp_path / "python").out)
    assert python.drop(["bot", "played_by"]).equals(t.drop(["bot", "played_by"]))
    assert set(python["bot"].to_pylist()) == {"random", "foil"}


def test_an_unknown_or_altered_build_is_refused_before_any_game(random_and_foil_builds, tmp_path):
    root = str(random_and_foil_builds)
    foil_c = verify(root, "foil-c").id
    for bot, line in [("build:nope", r"pairings: build 'build:nope': no build 'nope' under "),
                      (f"build:random-c@{foil_c[:8]}", r"pairings: build 'build:random-c@\w+': build '\w+' is "
                                                       r"registered as 'foil-c', not as a snapshot of 'random-c'")]:
        with pytest.raises(DatasetError, match=line):
            build(replace(BUILT, pairings=((bot, "foil"),), builds=root), tmp_path / "out")
        assert not (tmp_path / "out").exists()
    altered = tmp_path / "altered"
    shutil.copytree(root, altered)
    wasm = altered / verify(root, "random-c").id / "module.wasm"
    data = bytearray(wasm.read_bytes())
    data[-1] ^= 1
    wasm.write_bytes(bytes(data))
    with pytest.raises(DatasetError, match=r"pairings: build 'build:random-c': build \w+: module\.wasm does not "
                                           r"match its id"):
        check_config(replace(BUILT, builds=str(altered)))


LABELLED = DatasetConfig(games=2, rounds=25, shard_games=1, bands=(20,), seed=6, pairings=(("random", "foil"),))


def test_a_labelled_dataset_records_the_labellers_choice_in_the_played_bots_positions(tmp_path):
    """DAgger: random plays, the foil labels. The inputs are the unlabelled dataset's (the same games), the foil's
    own rows are unchanged, and each random dragon's label is what a foil fed that dragon's observations in order
    answers (checked here by feeding them again to a fresh foil)."""
    from games.loong.bots import _Seat, ask_bot
    from games.loong.foil import registry
    from games.loong.observation import decode
    from ops.loong.dataset import action_code, play_recorded

    plain = load_dataset(build(LABELLED, tmp_path / "plain").out)
    got = build(replace(LABELLED, labeller="foil"), tmp_path / "labelled")
    labelled = load_dataset(got.out)
    assert set(got.by_bot) == {"foil"} and set(labelled["bot"].to_pylist()) == {"foil"}
    assert labelled["played_by"].to_pylist() == plain["bot"].to_pylist() == plain["played_by"].to_pylist()
    inputs = ["game", "dragon", "round", "crop", "overview", "scalars", "candidates", "outcome"]
    assert labelled["played_action"].to_pylist() == plain["action"].to_pylist() == plain["played_action"].to_pylist()
    assert labelled.select(inputs).equals(plain.select(inputs))
    played = np.array(plain["bot"].to_pylist())
    foil_rows, random_rows = played == "foil", played == "random"
    for c in ("action", "chosen", "after_head"):
        assert np.array_equal(labelled[c].to_numpy(zero_copy_only=False)[foil_rows],
                              plain[c].to_numpy(zero_copy_only=False)[foil_rows])
    changed = labelled["action"].to_numpy(zero_copy_only=False) != plain["action"].to_numpy(zero_copy_only=False)
    assert changed[random_rows].mean() > 0.3 and not changed[foil_rows].any()
    assert (labelled["chosen"].to_numpy()[random_rows] >= 0).mean() > 0.97  # the foil's labels are candidates
    size, symmetry, a, b, seed = game_spec(LABELLED, 0)
    turns, teams, _ = play_recorded(size, symmetry, a, b, seed, LABELLED.rounds)
    want = {}
    for dragon, mine in turns.items():
        if (a, b)[teams[dragon]] != "random":
            continue
        shadow = _Seat(registry()["foil"], dragon, teams[dragon], seed)
        for t in mine:
            want[(dragon, t.round)] = action_code(ask_bot(shadow, decode(t.obs))[0])
    rows = zip(*(labelled[c].to_pylist() for c in ("game", "dragon", "round", "action", "played_by")))
    have = {(d, r): act for g, d, r, act, by in rows if g == 0 and by == "random"}
    assert have == want and len(want) > 20


def test_the_native_teacher_plays_and_labels_games(tmp_path):
    """The native privileged teacher as a pairing's bot (it reads the game through ask_bot) and as the labeller: its
    rows are recorded under its player name, the same bytes in process and on a pool, and as labeller every random
    dragon's label is the teacher's choice in the dragon's position."""
    cfg = DatasetConfig(games=2, rounds=8, shard_games=1, bands=(20,), seed=2, pairings=(("teacher:1500", "random"),))
    here = build(cfg, tmp_path / "here")
    pool = build(cfg, tmp_path / "pool", executor=PoolExecutor(2))
    assert [p.read_bytes() for p in here.shards] == [p.read_bytes() for p in pool.shards]
    table = load_dataset(here.out)
    assert set(here.by_bot) == {"teacher:1500", "random"} and here.decisions == table.num_rows > 0
    mine = np.array(table["bot"].to_pylist()) == "teacher:1500"
    assert mine.any() and (table["chosen"].to_numpy()[mine] >= 0).mean() > 0.9  # its moves are candidates
    labelled = build(replace(cfg, pairings=(("random", "foil"),), labeller="teacher:1500"), tmp_path / "labelled")
    rows = load_dataset(labelled.out)
    assert set(rows["bot"].to_pylist()) == {"teacher:1500"}
    changed = np.array(rows["action"].to_pylist()) != np.array(rows["played_action"].to_pylist())
    assert changed.any()  # the teacher does not play as random or the foil does
