"""Replays: exact re-simulation, and refusal of truncated, altered or mislabelled files."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from games.loong.actions import Forfeit
from games.loong.bots import play_game, random_bot
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
    with pytest.raises(ReplayError, match=r"rows, header says"):
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
    with pytest.raises(ReplayError, match=rf"round {rows[i]['round']}: state hash differs|row \d+: expected"):
        verify_replay(load_replay(json_path))


def test_an_altered_sonar_value_is_caught(saved):
    json_path, parquet_path = saved
    rows = pq.read_table(parquet_path).to_pylist()
    for r in rows:  # a value that reaches nobody changes nothing, so alter every southward value
        r["sonar_s"] = None if r["sonar_s"] is None else r["sonar_s"] + 1
    rewrite(parquet_path, pa.Table.from_pylist(rows, schema=pq.read_schema(parquet_path).remove_metadata()),
            json_path)
    with pytest.raises(ReplayError, match="state hash differs"):
        verify_replay(load_replay(json_path))


def test_flipped_byte_wrong_version_and_missing_files(saved):
    json_path, parquet_path = saved
    h = json.loads(json_path.read_text())
    json_path.write_text(json.dumps({**h, "version": 2}))
    with pytest.raises(ReplayError, match=r"game\.json: replay version 2"):
        load_replay(json_path)
    json_path.write_text(json.dumps({**h, "result": {**h["result"], "winner": 1 - (h["result"]["winner"] or 0)}}))
    with pytest.raises(ReplayError, match="header result"):
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
