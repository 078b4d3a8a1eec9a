"""Registered builds: content-addressed, stored once, verified by re-hashing; the ``arena bot`` CLI."""

from __future__ import annotations

import json

import pytest
from wasmtime import wat2wasm

from bot.builds import (
    BuildError,
    ReplayBuilds,
    build_id,
    denotes,
    factory,
    list_builds,
    load,
    load_id,
    register,
    resolve,
    verify,
)
from games.loong import generate_map, play_game, random_bot
from ops.cli import main


def test_builds_are_content_addressed_and_stored_once(tmp_path, c_bots):
    wasm = c_bots["random"]
    a = register(tmp_path, wasm, name="rand", network_version="none", compiler="test")
    assert a.id == build_id(wasm) and a.wasm() == wasm and a.meta["size"] == len(wasm)
    b = register(tmp_path, wasm, name="rand2")
    assert b.id == a.id and b.meta == a.meta  # the first registration's metadata is kept
    assert resolve(tmp_path, "rand") == resolve(tmp_path, "rand2") == resolve(tmp_path, a.id[:8]) == a.id
    assert [x.id for x in list_builds(tmp_path)] == [a.id]
    other = register(tmp_path, c_bots["count"], name="rand")  # a name moves to the latest registration
    assert resolve(tmp_path, "rand") == other.id != a.id
    assert len(list_builds(tmp_path)) == 2


def test_replays_find_a_build_by_its_exact_id_and_match_its_player_names(tmp_path, c_bots):
    """What replay verification asks the store: a build by its whole id only (a name that spells an id, or a prefix,
    never stands in for it), and whether a player name stands for it (a name that has moved on still names the
    build first registered under it)."""
    a = register(tmp_path, c_bots["random"], name="rand")
    assert load_id(tmp_path, a.id).id == a.id and ReplayBuilds(tmp_path).factory(a.id, "build:rand").build_id == a.id
    for bad, message in [(a.id[:8], "is not 24 lowercase hex digits"), ("../" + a.id[3:], "is not 24"),
                         ("0" * 24, "is not in the store")]:
        with pytest.raises(BuildError, match=message):
            load_id(tmp_path, bad)
    other = register(tmp_path, c_bots["count"], name="rand")  # the name moves on
    (tmp_path / "names" / ("0" * 24)).write_text(a.id + "\n")  # a name spelling an id: not a way to that id
    with pytest.raises(BuildError, match="is not in the store"):
        load_id(tmp_path, "0" * 24)
    assert denotes(tmp_path, "build:rand", a.id) and denotes(tmp_path, "build:rand", other.id)
    assert denotes(tmp_path, f"build:{a.id[:8]}", a.id) and denotes(tmp_path, f"build:rand@{a.id[:8]}", a.id)
    assert denotes(tmp_path, f"build:{other.id[:8]}", a.id) is False
    assert denotes(tmp_path, f"build:rand@{other.id[:8]}", a.id) is False
    register(tmp_path, c_bots["spin"], name="spinner")
    assert denotes(tmp_path, "build:spinner", a.id) is False  # the store names another build so
    assert denotes(tmp_path, "build:unknown", a.id) is None and denotes(tmp_path, "random", a.id) is None


def test_verify_rehashes_the_wasm(tmp_path, c_bots):
    b = register(tmp_path, c_bots["random"], name="r")
    verify(tmp_path, b.id)
    data = bytearray(b.wasm_path.read_bytes())
    data[-1] ^= 1
    b.wasm_path.write_bytes(bytes(data))
    with pytest.raises(BuildError, match="does not match its id"):
        verify(tmp_path, "r")
    with pytest.raises(BuildError, match="does not match"):
        load(tmp_path, "r").wasm()


def test_refused_modules_are_not_registered(tmp_path):
    wasi = wat2wasm('(module (import "wasi_snapshot_preview1" "proc_exit" (func (param i32))))')
    with pytest.raises(BuildError, match="refused: module imports func wasi_snapshot_preview1.proc_exit"):
        register(tmp_path, wasi)
    with pytest.raises(BuildError, match="no build"):
        resolve(tmp_path, "nothing")


def test_a_registered_build_plays(tmp_path, c_bots):
    register(tmp_path, c_bots["random"], name="random-c")
    m = generate_map(16, 16, "lr", 3)
    match = play_game(m, factory(tmp_path, "random-c"), random_bot, seed=2, max_rounds=20)
    assert match.hashes == play_game(m, random_bot, random_bot, seed=2, max_rounds=20).hashes
    assert match.bot_names[0] == "random-c"


def test_cli_builds_registers_and_prints_the_id(tmp_path, capsys):
    src = tmp_path / "mine.c"
    src.write_text('#include "loong_bot.h"\nvoid bot_init(uint64_t s) { (void)s; }\n'
                   'void bot_act(const uint8_t *o, uint32_t n, loong_reply *r) { (void)o; (void)n; r->arg = 1; }\n')
    root = tmp_path / "store"
    assert main(["bot", "build", str(src), "--name", "east", "--network-version", "none", "--root", str(root)]) == 0
    bid = capsys.readouterr().out.strip()
    b = verify(root, bid)
    assert b.name == "east" and b.meta["network_version"] == "none" and b.meta["compiler"].startswith("zig ")
    assert b.meta["source_files"] == ["loong_bot.h", "mine.c"] and len(b.meta["source_sha256"]) == 64
    assert main(["bot", "build", str(src), "--root", str(root), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == bid  # same source, same bytes, same id
    assert main(["bot", "verify", "east", "--root", str(root)]) == 0
    assert main(["bot", "list", "--root", str(root)]) == 0
    assert bid in capsys.readouterr().out
    bad = tmp_path / "bad.c"
    bad.write_text("int main(void) { return syntax error; }\n")
    assert main(["bot", "build", str(bad), "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert "bad.c" in err and "compile" in err and "Traceback" not in err


def test_source_hash_covers_headers_and_embedded_files(tmp_path):
    from bot.toolchain import compile_c, compiler_version

    (tmp_path / "table.bin").write_bytes(bytes(range(16)))
    src = tmp_path / "emb.c"
    src.write_text('#include "loong_bot.h"\nstatic const uint8_t T[] = {\n#embed "table.bin"\n};\n'
                   'void bot_init(uint64_t s) { (void)s; }\n'
                   'void bot_act(const uint8_t *o, uint32_t n, loong_reply *r) { (void)o; r->arg = T[n & 15] & 3; }\n')
    a = compile_c([src], tmp_path / "a.wasm")
    assert a.inputs == ("emb.c", "loong_bot.h", "table.bin") and a.compiler == compiler_version()
    (tmp_path / "table.bin").write_bytes(bytes(range(1, 17)))
    b = compile_c([src], tmp_path / "b.wasm")
    assert b.source_sha256 != a.source_sha256
    assert compiler_version().startswith("zig 0.") and "clang" in compiler_version()
