"""Replays of build games with a time-limit kill (issue 39, items 1 and 2 together): a CPU-limit kill is re-played
in the judge and must come out the same (the limit counts CPU time, so the verifying host repeats it); a kill by
the wall-time backstop depends on the host that stalled the turn, so verification takes that turn from the record,
names it as a check it could not run (exit 3 unless --partial) and re-plays every other turn. The backstop is set
small here (0.2 s) so that a real backstop kill is recorded in a test."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from wasmtime import wat2wasm

import bot.judge
from bot.builds import ReplayBuilds, factory, register
from bot.judge import Judge, cpu_limit_reason, play_judged_game, wall_backstop_reason
from games.loong import generate_map, random_bot
from games.loong.replay import _checksum, load_replay, save_replay, verify_replay
from ops.cli import main

# One MOVE north (the zero bytes at 0) on a dragon's first turn, then a loop with no end on its second.
SPIN_ON_SECOND_TURN = wat2wasm("""(module
  (memory (export "memory") 1) (global $n (mut i32) (i32.const 0))
  (func (export "init") (param i32 i32))
  (func (export "obs_buffer") (param i32) (result i32) i32.const 1024)
  (func (export "act") (param i32) (result i32)
    (global.set $n (i32.add (global.get $n) (i32.const 1)))
    (if (i32.ge_u (global.get $n) (i32.const 2)) (then (loop (br 0))))
    i32.const 0))""")
UNMETERED = 10**15  # points that never run out: only a time limit ends the loop
MAP = generate_map(16, 16, "lr", 2)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("limit-kills") / "builds"
    register(root, SPIN_ON_SECOND_TURN, name="spin2")
    return root


def _record(store, judge: Judge, folder):
    f = factory(store, "spin2", judge=judge, name="build:spin2")
    match = play_judged_game(MAP, f, random_bot, seed=4, max_rounds=12)
    json_path, _ = save_replay(match, folder / "game")
    return json_path, match


def _verify_with(monkeypatch, judge: Judge):
    """The CLI's build store re-plays builds in ``judge`` (as if it were this host's standard judge)."""
    monkeypatch.setattr(bot.judge, "default_judge", lambda: judge)


def _kills(match, reason):
    return [i for i, t in enumerate(match.turns) if t.death == reason or getattr(t.action, "reason", None) == reason]


def test_a_cpu_limit_kill_is_re_played_exactly(store, tmp_path, monkeypatch, capsys):
    judge = Judge(points_per_turn=UNMETERED, cpu_limit=0.2)
    replay, match = _record(store, judge, tmp_path)
    killed = _kills(match, cpu_limit_reason(0.2))
    assert killed and all(match.turns[i].points_used == UNMETERED for i in killed)
    v = verify_replay(replay, builds=ReplayBuilds(store, judge))
    assert v.complete and v.bots_replayed and not v.unchecked
    assert any(c.startswith("team 0 (build:spin2,") and "every turn re-played (in the judge" in c for c in v.checked)
    _verify_with(monkeypatch, judge)
    assert main(["loong", "verify", str(replay), "--builds", str(store)]) == 0
    assert capsys.readouterr().out.strip().endswith("replayed from the seed play every turn)")
    # the limit's number is part of the record: a changed one is a forgery, named with the field
    parquet = replay.with_suffix(".parquet")
    rows = pq.read_table(parquet).to_pylist()
    rows[killed[0]]["death_reason"] = cpu_limit_reason(0.3)
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(parquet).remove_metadata()), parquet)
    h = json.loads(replay.read_text())
    replay.write_text(json.dumps({**h, "parquet_blake2b": _checksum(parquet)}))
    assert main(["loong", "verify", str(replay), "--builds", str(store), "--partial"]) == 2
    err = capsys.readouterr().err
    assert f"row {killed[0]} (round " in err and "death_reason: the turn file has " \
        '"wasm bot exceeded the 0.3 s CPU-time limit a turn"' in err, err


def test_a_wall_backstop_kill_is_named_as_unchecked_not_as_a_forgery(store, tmp_path, monkeypatch, capsys):
    recording = Judge(points_per_turn=UNMETERED, cpu_limit=1000.0, wall_backstop=0.2)  # a stalled host, in effect
    replay, match = _record(store, recording, tmp_path)
    killed = _kills(match, wall_backstop_reason(0.2))
    assert killed
    # re-played on a host that would end the loop by its CPU limit: the recorded backstop kill is not re-run
    verifying = Judge(points_per_turn=UNMETERED, cpu_limit=0.2)
    v = verify_replay(replay, builds=ReplayBuilds(store, verifying))
    assert not v.complete and len(v.unchecked) == len(killed)
    for i, note in zip(killed, v.unchecked):
        t = match.turns[i]
        assert note == f"team 0 (build:spin2, build {match.bot_builds[0]}): row {i} (round {t.round}, dragon " \
                       f"{t.dragon_id}): killed by the wall-time backstop on the host that recorded it (a stall of " \
                       "that host, which another host cannot repeat); taken from the record, not re-played"
    assert any(c.startswith("team 0 (build:spin2,") and "every other turn re-played" in c for c in v.checked)
    assert any(c.startswith("team 1 (random)") and "every turn re-played" in c for c in v.checked)
    _verify_with(monkeypatch, verifying)
    assert main(["loong", "verify", str(replay), "--builds", str(store)]) == 3
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"arena: error: {replay}: not every check could run: team 0 (build:spin2") and \
        "killed by the wall-time backstop on the host that recorded it" in err and len(err.splitlines()) == 1
    assert main(["loong", "verify", str(replay), "--builds", str(store), "--partial"]) == 0
    assert capsys.readouterr().out.startswith(f"{replay}: ok, partly (")
    # the turns before the kill are still re-played: a forged one is refused
    parquet = replay.with_suffix(".parquet")
    rows = pq.read_table(parquet).to_pylist()
    first = next(i for i, r in enumerate(rows) if r["dragon_id"] % 2 == 0 and r["kind"] != "forfeit")
    rows[first]["points_used"] += 1
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(parquet).remove_metadata()), parquet)
    replay.write_text(json.dumps({**json.loads(replay.read_text()), "parquet_blake2b": _checksum(parquet)}))
    assert main(["loong", "verify", str(replay), "--builds", str(store), "--partial"]) == 2
    assert f"row {first} (round" in capsys.readouterr().err


def test_a_stall_of_the_verifying_host_is_named_as_unchecked(store, tmp_path):
    """Recorded with a CPU-limit kill; re-played on a host whose backstop comes first (it stalls): that turn is the
    verifying host's, not the bot's, so it is taken from the record and named."""
    replay, match = _record(store, Judge(points_per_turn=UNMETERED, cpu_limit=0.2), tmp_path)
    killed = _kills(match, cpu_limit_reason(0.2))
    stalled = Judge(points_per_turn=UNMETERED, cpu_limit=0.2, wall_backstop=0.05)
    v = verify_replay(load_replay(replay), builds=ReplayBuilds(store, stalled))
    assert len(v.unchecked) == len(killed)
    assert all(n.endswith("killed by the wall-time backstop on this host (it stalled the re-play); taken from the "
                          "record, not re-played") for n in v.unchecked)
