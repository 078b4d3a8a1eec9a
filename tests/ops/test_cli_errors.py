"""The real ``arena`` entry point under a closed pipe and Ctrl-C, and ``bot build`` of what is not C:
never a traceback, one line for a mistake, the finished games reported."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from games.loong.replay import verify_replay
from ops.cli import main

ARENA = Path(sys.executable).with_name("arena")


def _env(tmp_path):
    return {**os.environ, "ARENA_HOME": str(tmp_path / "home")}


@pytest.mark.parametrize("argv", [
    ["celldiv", "match", "--a", "easy", "--b", "random", "--games", "2", "--sizes", "4", "--json"],
    ["loong", "league", "--players", "foil,random", "--maps", "gen:12x12:lr:seed=1", "--games", "2",
     "--max-rounds", "10", "--json"],
])
def test_output_into_a_closed_pipe_exits_quietly(tmp_path, argv):
    """``arena ... --json | head -1`` where head has gone: the writer's read end is closed before it writes."""
    read, write = os.pipe()
    os.close(read)
    try:
        p = subprocess.run([str(ARENA), *argv], stdout=write, stderr=subprocess.PIPE, text=True, timeout=120,
                           env=_env(tmp_path))
    finally:
        os.close(write)
    assert p.returncode == 141, p.stderr
    assert p.stderr == ""  # no traceback, no "Exception ignored" at exit


def test_json_into_head_prints_the_first_line(tmp_path):
    p = subprocess.run(f"'{ARENA}' celldiv match --a easy --b random --games 2 --sizes 4 --json | head -1",
                       shell=True, capture_output=True, text=True, timeout=120, env=_env(tmp_path))
    assert p.stdout == "{\n" and "Traceback" not in p.stderr


def test_ctrl_c_during_a_match_reports_the_finished_games(tmp_path, in_a_clean_process):
    if not in_a_clean_process:
        return
    replays = tmp_path / "replays"
    proc = subprocess.Popen([str(ARENA), "loong", "match", "--team0", "foil", "--team1", "foil", "--map",
                             "gen:24x24:lr:seed=1", "--games", "20", "--max-rounds", "200", "--replay-dir",
                             str(replays), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(tmp_path))
    try:
        deadline = time.monotonic() + 120
        while not (replays / "game0000_foil_vs_foil.json").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)  # the first game is finished
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted after" in err
    s = json.loads(out)
    assert s["interrupted"] is True and 1 <= s["games"] < 20
    assert len(s["replays"]) == s["games"] == len(list(replays.glob("*.json")))
    for r in s["replays"]:  # every kept game is whole: its replay verifies
        assert verify_replay(r).bots_replayed


# -- bot build of what is not C: one line naming the file ---------------------------------------
@pytest.mark.parametrize("name, data, message", [
    ("notes.txt", b"int x;\n", "notes.txt: not a C source file (bot build compiles .c files)"),
    ("bot.wasm", b"\0asm\x01\0\0\0", "bot.wasm: a WebAssembly binary, not C source: register it with "
                                      "`arena bot register"),
    ("noise.c", bytes(range(256)) * 4, "noise.c: not C source: binary data"),
    ("broken.c", b"int f( { return x; }\n", "broken.c does not compile: "),
    ("missing.c", None, "missing.c: no such source file"),
])
def test_bot_build_of_what_is_not_c_is_one_line(capsys, tmp_path, name, data, message):
    src = tmp_path / name
    if data is not None:
        src.write_bytes(data)
    assert main(["bot", "build", str(src), "--root", str(tmp_path / "builds")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    if name == "broken.c":
        assert f"{src}:1:8: error: expected parameter declarator" in err  # the compiler's first error
    assert not (tmp_path / "builds").exists() or not any((tmp_path / "builds").iterdir())
