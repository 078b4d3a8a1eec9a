"""Replays: exact re-simulation, and refusal of truncated, altered or mislabelled files."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from games.loong.actions import Forfeit
from games.loong.bots import play_game, random_bot
from games.loong.foil import foil_bot
from games.loong.mapgen import generate_map
from games.loong.replay import ReplayError, _checksum, load_replay, save_replay, verify_replay

MAP = generate_map(14, 12, "tb", 2, portal_pairs=2)


class Sonarist:
    """Random moves plus sonar on every turn; dragon 4 forfeits once so replays hold a 'forfeit' row."""

    def __init__(self, dragon_id, team, seed):
        self.inner = random_bot(dragon_id, team, seed)
        self.id, self.seed = dragon_id, seed

    def act(self, obs):
        if self.id == 4:
            return Forfeit("gave up"), None
        action, _ = self.inner.act(obs)
        return action, (self.seed, None, obs.round, 2**64 - 1)


@pytest.fixture(scope="module")
def match():
    return play_game(MAP, Sonarist, random_bot, 77, max_rounds=80)


@pytest.fixture
def saved(match, tmp_path):
    return save_replay(match, tmp_path / "game")


def test_round_trip_reproduces_every_round(match, saved):
    json_path, parquet_path = saved
    replay = load_replay(json_path)
    assert replay.turns == match.turns and replay.seed == 77 and replay.map == MAP
    game = verify_replay(replay)
    assert game.hashes == match.hashes and game.result == match.result
    # a test-only bot plays its recorded turns while the built-in random bot is re-played against them
    assert not game.bots_replayed and not game.complete
    assert game.unchecked == ("team 0 (Sonarist): turns not re-played (neither a built-in bot nor a build with a "
                              "recorded id)",)
    assert "team 1 (random): every turn re-played (action, sonar, points_used, death_reason)" in game.checked
    assert replay.header["version"] == 2 and replay.header["builds"] == [None, None]
    assert verify_replay(json_path).result == match.result  # a path is loaded first
    assert load_replay(parquet_path).header == replay.header  # either file names the replay
    assert any(t.action == Forfeit("gave up") for t in replay.turns)


def rewrite(parquet_path, table, json_path=None, **header_changes):
    """Replace the turn file; optionally re-sign the header as a careless tool would."""
    pq.write_table(table, parquet_path)
    if json_path is not None:
        h = json.loads(json_path.read_text())
        h["parquet_blake2b"] = _checksum(parquet_path)
        h.update(header_changes)
        json_path.write_text(json.dumps(h))


def test_truncated_rows_are_refused(saved):
    json_path, parquet_path = saved
    table = pq.read_table(parquet_path)
    rewrite(parquet_path, table.slice(0, table.num_rows - 3))
    with pytest.raises(ReplayError, match=r"game\.parquet: checksum does not match"):
        load_replay(json_path)
    rewrite(parquet_path, table.slice(0, table.num_rows - 3), json_path)
    with pytest.raises(ReplayError, match=rf"game\.json: rows: header says {table.num_rows}, game\.parquet has"):
        load_replay(json_path)
    rewrite(parquet_path, table.slice(0, table.num_rows - 3), json_path, rows=table.num_rows - 3)
    with pytest.raises(ReplayError, match=r"found end of rows"):
        verify_replay(load_replay(json_path))


def test_an_altered_action_is_caught_by_the_state_hash(saved):
    json_path, parquet_path = saved
    rows = pq.read_table(parquet_path).to_pylist()
    i = next(i for i, r in enumerate(rows) if r["kind"] == "move" and r["round"] > 5 and r["death_reason"] is None)
    rows[i]["args"] = [(rows[i]["args"][0] + 1) % 4]
    table = pa.Table.from_pylist(rows, schema=pq.read_schema(parquet_path).remove_metadata())
    rewrite(parquet_path, table, json_path)
    altered = rf"hashes\[{rows[i]['round']}\]: header says|row \d+: (expected|death_reason)"
    with pytest.raises(ReplayError, match=altered):
        verify_replay(load_replay(json_path))


def test_an_altered_sonar_value_is_caught(saved):
    json_path, parquet_path = saved
    rows = pq.read_table(parquet_path).to_pylist()
    for r in rows:  # a value that reaches nobody changes nothing, so alter every southward value
        r["sonar_s"] = None if r["sonar_s"] is None else r["sonar_s"] + 1
    rewrite(parquet_path, pa.Table.from_pylist(rows, schema=pq.read_schema(parquet_path).remove_metadata()),
            json_path)
    with pytest.raises(ReplayError, match=r"hashes\[\d+\]: header says \"[0-9a-f]{32}\", the game gives"):
        verify_replay(load_replay(json_path))


def test_flipped_byte_wrong_version_and_missing_files(saved):
    json_path, parquet_path = saved
    h = json.loads(json_path.read_text())
    json_path.write_text(json.dumps({**h, "version": 3}))
    with pytest.raises(ReplayError, match=r"game\.json: replay version 3 / hash version \d+, this engine reads 1 or 2"):
        load_replay(json_path)
    json_path.write_text(json.dumps({**h, "builds": ["../../etc", None]}))
    with pytest.raises(ReplayError, match=r'game\.json: builds: header says \["\.\./\.\./etc", null\], not two build'):
        load_replay(json_path)
    json_path.write_text(json.dumps({**h, "result": {**h["result"], "winner": 1 - (h["result"]["winner"] or 0)}}))
    with pytest.raises(ReplayError, match=r"game\.json: result\.winner: header says \d, the game gives"):
        verify_replay(load_replay(json_path))
    json_path.write_text(json.dumps(h))
    data = bytearray(parquet_path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    parquet_path.write_bytes(bytes(data))
    with pytest.raises(ReplayError, match="checksum does not match"):
        load_replay(json_path)
    parquet_path.unlink()
    with pytest.raises(ReplayError, match="turn file game.parquet is missing"):
        load_replay(json_path)
    json_path.write_text("{nope")
    with pytest.raises(ReplayError, match="header is not JSON"):
        load_replay(json_path)
    with pytest.raises(ReplayError, match="no such replay header"):
        load_replay(json_path.with_name("other.json"))


# -- every header field against the game -----------------------------------------------------------
@pytest.fixture(scope="module")
def foil_match():
    """Built-in bots, so verification also replays them from the seed."""
    return play_game(MAP, foil_bot, random_bot, 5, max_rounds=40)


@pytest.fixture
def foil_saved(foil_match, tmp_path):
    json_path, _ = save_replay(foil_match, tmp_path / "foil")
    return json_path


def test_an_untouched_replay_passes_every_check(foil_match, foil_saved):
    v = verify_replay(foil_saved)
    assert v.bots_replayed and v.result == foil_match.result and v.hashes == foil_match.hashes
    assert v.rounds == 40 and v.turns == len(foil_match.turns)
    assert v.summary()["bots"] == ["foil", "random"] and v.summary()["ok"]


def _tampered(json_path, change):
    h = json.loads(json_path.read_text())
    change(h)
    json_path.write_text(json.dumps(h))
    with pytest.raises(ReplayError) as e:
        verify_replay(json_path)
    return str(e.value)


def _flip_winner(h):
    h["result"]["winner"] = 1 if h["result"]["winner"] != 1 else 0


def _scores(h):
    h["result"]["scores"][0][0] += 1


def _seed(h):
    h["seed"] = str(int(h["seed"]) + 1)


def _hash(h):
    h["hashes"][7] = "f" * 32


def _bots(h):
    h["bots"].reverse()


def _longer(h):
    h["max_rounds"] += 10


def _shorter(h):
    h["max_rounds"] -= 10


def _round(h):
    h["result"]["round"] -= 1


def _reason(h):
    h["result"]["reason"] = "elimination"


@pytest.mark.parametrize("change, message", [
    (_flip_winner, r"foil\.json: result\.winner: header says [01], the game gives [01]$"),
    (_scores, r"foil\.json: result\.scores: header says \[\[\d+, .*\]\], the game gives \[\["),
    (_seed, r'foil\.json: row \d+ \(round \d+, dragon \d+\): action: the turn file has "[a-z ,0-9]+", foil and '
            r'random re-played from seed 6 give "[a-z ,0-9]+"$'),
    (_hash, r'foil\.json: hashes\[7\]: header says "f{32}", the game gives "[0-9a-f]{32}"$'),
    (_bots, r'foil\.json: bots: header says \["random", "foil"\], the game gives \["foil", "random"\]$'),
    (_longer, r"foil\.json: max_rounds: header says 50, the game gives 40$"),
    (_shorter, r"foil\.json: max_rounds: header says 30, but the turns go on after round 30$"),
    (_round, r"foil\.json: result\.round: header says 39, the game gives 40$"),
    (_reason, r'foil\.json: result\.reason: header says "elimination", the game gives "round limit"$'),
])
def test_a_changed_header_field_is_refused_by_name(foil_saved, change, message):
    assert verify_replay(foil_saved).bots_replayed  # untouched, it passes
    import re

    text = _tampered(foil_saved, change)
    assert re.search(message, text), text
    assert "\n" not in text


def test_malformed_header_fields_are_named(foil_saved):
    def bad_seed(h):
        h["seed"] = "seven"

    def lost(h):
        h["seed"] = "5"
        del h["result"]["scores"]

    assert "seed: header says \"seven\", not an unsigned 64-bit integer" in _tampered(foil_saved, bad_seed)
    assert "result.scores: missing from the header" in _tampered(foil_saved, lost)


def test_a_changed_death_reason_is_refused(foil_match, foil_saved):
    parquet_path = foil_saved.with_suffix(".parquet")
    rows = pq.read_table(parquet_path).to_pylist()
    i = next(i for i, r in enumerate(rows) if r["kind"] == "move" and r["death_reason"] is None)
    rows[i]["death_reason"] = "struck by lightning"
    rewrite(parquet_path, pa.Table.from_pylist(rows, schema=pq.read_schema(parquet_path).remove_metadata()),
            foil_saved)
    with pytest.raises(ReplayError, match=rf"row {i}: death_reason: the turn file says \"struck by lightning\", "
                                          r"the game gives null"):
        verify_replay(foil_saved)
