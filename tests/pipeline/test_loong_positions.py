"""The positions check asset: a registered wasm build (through the judge) on a 2-position library, reported per
position with the non-blocking check ``positions_regression``; an empty library passes with 0 positions."""

import json
from pathlib import Path

from wasmtime import wat2wasm

from assets.loong_positions import loong_position_checks
from bot.builds import register
from games.loong.bots import play_game, random_bot
from games.loong.foil import registry
from games.loong.mapgen import generate_map
from games.loong.replay import save_replay
from ops.loong import positions as op

NORTH = wat2wasm("""(module (memory (export "memory") 1)
  (func (export "init") (param i32 i32))
  (func (export "obs_buffer") (param i32) (result i32) i32.const 1024)
  (func (export "act") (param i32) (result i32) i32.const 0))""")  # the zero reply bytes: MOVE north


def _library(tmp_path: Path) -> Path:
    r = play_game(generate_map(12, 12, "lr", seed=2), registry()["foil"], random_bot, 3, 12)
    json_path, _ = save_replay(r, tmp_path / "g")
    t = next(t for t in r.turns if t.round == 5)
    lib = tmp_path / "lib"
    for name, move in (("north", "move N"), ("south", "move S")):
        op.add_position(lib, json_path, dragon=t.dragon_id, round_=5, move=move, reason=f"{name} is right",
                        author="tester", name=name)
    return lib


def test_a_build_is_checked_per_position(resources, materialise, tmp_path):
    register(Path(resources["artifact_store"].root) / "loong" / "builds", NORTH, name="north")
    lib = _library(tmp_path)
    result = materialise(loong_position_checks, resources, tmp_path, {"library": str(lib), "bots": ["build:north"]})
    assert result.success
    meta = result.asset_materializations_for_node("loong_position_checks")[0].metadata
    assert meta["positions"].value == 2 and meta["bots"].value == ["build:north"]
    assert meta["by_bot"].value == {"build:north": {"passed": 1, "failed": 1}}
    assert "expert-0 is not registered" in meta["notes"].value[0]
    doc = json.loads((Path(meta["path"].value) / "positions.json").read_text())
    got = {v["position"]: (v["passed"], v["move"], v["correct"], v["reason"]) for v in doc["verdicts"]}
    assert got == {"north": (True, "move N", ["move N"], "north is right"),
                   "south": (False, "move N", ["move S"], "south is right")}
    assert "| build:north | south | FAIL | move N | move S |" in meta["verdicts"].value
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == "positions_regression" and not check.passed
    assert check.severity.value == "WARN" and check.metadata["failed"].value == ["build:north: south"]


def test_an_empty_library_passes_with_zero_positions(resources, materialise, tmp_path):
    result = materialise(loong_position_checks, resources, tmp_path, {"library": str(tmp_path / "none")})
    assert result.success
    meta = result.asset_materializations_for_node("loong_position_checks")[0].metadata
    assert meta["positions"].value == 0 and any("0 positions checked" in n for n in meta["notes"].value)
    (check,) = result.get_asset_check_evaluations()
    assert check.passed


def test_a_bad_position_file_fails_the_asset_in_one_line(resources, materialise, failure_line, tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "x.position.json").write_text('{"format": "loong-position", "version": 9}')
    result = materialise(loong_position_checks, resources, tmp_path, {"library": str(lib)})
    assert not result.success
    assert failure_line(result) == f"loong_position_checks: {lib / 'x.position.json'}: version: 9, this reader " \
                                   "knows version 1"
