"""benchmarks/expert_h_points.py's meter of expert-h's parts: the profile build (-DEH_PROFILE=1, the host's
bench.mark at each part's end) decides as the native build does, and its five parts add up to the turn's points
but for the few operators after the last mark."""

from __future__ import annotations

import wasmtime

from benchmarks.expert_h_points import PARTS, ProfiledDragon, Recorder, same_reply
from bot.expert_h import compile_expert_h, expert_h_library
from bot.judge import make_engine
from bot.team_keys import DEV_SECRET
from games.loong.bots import play_game
from games.loong.foil import foil_bot
from games.loong.mapgen import generate_map

SECRET = int(DEV_SECRET, 16)


def test_the_parts_add_up_to_the_turn_and_the_profile_build_decides_alike(native_cache, tmp_path):
    rec = Recorder(expert_h_library(SECRET, cache=native_cache))
    play_game(generate_map(20, 20, "rot", 3), rec, foil_bot, 11, 25, record=False)
    engine = make_engine()
    module = wasmtime.Module.from_file(engine, str(compile_expert_h(tmp_path / "p.wasm", SECRET,
                                                                    defines=("EH_PROFILE=1",)).wasm))
    assert [(i.module, i.name) for i in module.imports] == [("bench", "mark")]
    turns = 0
    for i, log in rec.log.items():
        dragon = ProfiledDragon(engine, module, rec.seeds[i])
        for data, native in log:
            reply, parts, total = dragon.turn(data)
            assert same_reply(native, reply), f"dragon {i}: the profile build's reply differs"
            assert set(parts) == set(PARTS)  # every part marked on an accepted observation with the relay on
            assert parts["candidates"] > 0 and 0 <= total - sum(parts.values()) < 200
            turns += 1
    assert turns >= 25
