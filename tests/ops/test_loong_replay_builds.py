"""Replays of games between wasm builds (issue 39 item 1): the header names each side's build by content id,
``arena loong verify`` and the viewer load the builds by id from the store and re-play the game in the judge,
so a forged name, seed, sonar value, points_used or forfeit text is refused with the field named, even with the
turn file's checksum recomputed; a replay whose builds are not in the store is refused naming the checks that
could not run, unless ``--partial``."""

import json
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bot.builds import build_from_source, verify
from games.loong.replay import _checksum, load_replay
from ops.cli import main

REPO = Path(__file__).resolve().parents[2]
MAP = "gen:12x12:lr:seed=1"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """random-c, foil-c and spin (a module that loops until its points run out: every dragon forfeits)."""
    root = tmp_path_factory.mktemp("replay-builds") / "builds"
    build_from_source(root, [REPO / "bot/c/random_bot.c"], name="random-c")
    build_from_source(root, [REPO / "bot/c/foil.c"], name="foil-c")
    build_from_source(root, [REPO / "tests/bot/c/spin.c"], name="spin")
    return root


def _match(store, folder, team0, team1, rounds=20):
    assert main(["loong", "match", "--team0", team0, "--team1", team1, "--map", MAP, "--games", "1", "--seed", "3",
                 "--max-rounds", str(rounds), "--builds", str(store), "--replay-dir", str(folder), "--json"]) == 0
    return sorted(folder.glob("*.json"))[0]


@pytest.fixture(scope="module")
def honest(store, tmp_path_factory):
    """One game of build:random-c (team 0) against build:foil-c, its replay files kept pristine."""
    return _match(store, tmp_path_factory.mktemp("honest"), "build:random-c", "build:foil-c")


@pytest.fixture
def replay(honest, tmp_path, capsys):
    """A copy of the honest replay to tamper with."""
    for suffix in (".json", ".parquet"):
        shutil.copy(honest.with_suffix(suffix), tmp_path / honest.with_suffix(suffix).name)
    capsys.readouterr()
    return tmp_path / honest.name


def _refused(capsys, replay, store, *extra):
    assert main(["loong", "verify", str(replay), "--builds", str(store), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def _edit_header(replay, change):
    h = json.loads(replay.read_text())
    change(h)
    replay.write_text(json.dumps(h))


def _edit_turns(replay, change):
    """Change the turn file's rows, then recompute the header's checksum (as a forger would)."""
    parquet = replay.with_suffix(".parquet")
    rows = pq.read_table(parquet).to_pylist()
    change(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(parquet).remove_metadata()), parquet)
    _edit_header(replay, lambda h: h.update(parquet_blake2b=_checksum(parquet)))


def test_the_header_names_each_build_by_its_content_id_and_an_honest_replay_verifies(capsys, store, honest):
    ids = [verify(store, "random-c").id, verify(store, "foil-c").id]
    h = load_replay(honest).header
    assert h["version"] == 2 and h["bots"] == ["build:random-c", "build:foil-c"] and h["builds"] == ids
    capsys.readouterr()
    assert main(["loong", "verify", str(honest), "--builds", str(store)]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"{honest}: ok (") and \
        out.endswith("build:random-c and build:foil-c replayed from the seed play every turn)")
    assert main(["loong", "verify", str(honest), "--builds", str(store), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and doc["complete"] and doc["bots_replayed"] and doc["builds"] == ids and not doc["unchecked"]
    assert f"team 0 (build:random-c, build {ids[0]}): every turn re-played (in the judge, action, sonar, " \
           "points_used, death_reason)" in doc["checked"]
    page = honest.with_suffix(".html")
    assert main(["loong", "view", str(honest), "--builds", str(store), "--out", str(page)]) == 0
    assert "partly" not in capsys.readouterr().out and page.exists()


def test_a_name_swap_is_refused_naming_the_field(capsys, store, replay):
    ids = [verify(store, "random-c").id, verify(store, "foil-c").id]
    _edit_header(replay, lambda h: h["bots"].reverse())  # the loser credited with the other side's result
    err = _refused(capsys, replay, store)
    assert err == f'arena: error: {replay}: bots[0]: header says "build:foil-c", which is not builds[0] {ids[0]} ' \
                  f"in the build store {store}"
    page = replay.with_suffix(".html")
    assert main(["loong", "view", str(replay), "--builds", str(store), "--out", str(page)]) == 2
    assert "bots[0]: header says" in capsys.readouterr().err and not page.exists()
    _edit_header(replay, lambda h: h["builds"].reverse())  # names and ids swapped together: the game tells
    err = _refused(capsys, replay, store)
    assert err == f'arena: error: {replay}: builds: header says ["{ids[1]}", "{ids[0]}"], the game gives ' \
                  f'["{ids[0]}", "{ids[1]}"]'


def test_a_seed_swap_is_refused_naming_the_turn_and_field(capsys, store, replay):
    _edit_header(replay, lambda h: h.update(seed=str(int(h["seed"]) + 1)))
    err = _refused(capsys, replay, store)
    seed = load_replay(replay).seed
    assert re.fullmatch(rf"arena: error: {re.escape(str(replay))}: row \d+ \(round \d+, dragon \d+\): "
                        rf"(action|sonar|points_used|death_reason): the turn file has .+, build:random-c and "
                        rf"build:foil-c re-played from seed {seed} give .+", err), err


def test_changed_sonar_and_points_are_refused_with_the_checksum_recomputed(capsys, store, replay, tmp_path):
    rows = pq.read_table(replay.with_suffix(".parquet")).to_pylist()
    i = next(k for k, r in enumerate(rows) if r["sonar_n"] is not None or r["sonar_e"] is not None
             or r["sonar_s"] is not None or r["sonar_w"] is not None)
    r = rows[i]

    def sonar(rows):
        col = next(c for c in ("sonar_n", "sonar_e", "sonar_s", "sonar_w") if rows[i][c] is not None)
        rows[i][col] ^= 1

    _edit_turns(replay, sonar)
    err = _refused(capsys, replay, store)
    assert re.search(rf"row {i} \(round {r['round']}, dragon {r['dragon_id']}\): sonar: the turn file has \[.*\], "
                     r"build:random-c and build:foil-c re-played from seed \d+ give \[.*\]$", err) or \
        re.search(r"hashes\[\d+\]: header says", err), err  # a value that reaches a dragon changes the state too

    _edit_turns(replay, lambda rows: rows[i].update(**{c: r[c] for c in ("sonar_n", "sonar_e", "sonar_s", "sonar_w")}))
    assert main(["loong", "verify", str(replay), "--builds", str(store)]) == 0  # restored: it passes again
    capsys.readouterr()
    _edit_turns(replay, lambda rows: rows[0].update(points_used=rows[0]["points_used"] + 1))
    err = _refused(capsys, replay, store)
    first = rows[0]
    assert err.endswith(f"row 0 (round {first['round']}, dragon {first['dragon_id']}): points_used: the turn file has "
                        f"{first['points_used'] + 1}, build:random-c and build:foil-c re-played from seed "
                        f"{load_replay(replay).seed} give {first['points_used']}"), err


def test_a_changed_forfeit_text_is_refused(capsys, store, tmp_path):
    replay = _match(store, tmp_path, "build:spin", "build:random-c", rounds=5)
    rows = pq.read_table(replay.with_suffix(".parquet")).to_pylist()
    i = next(k for k, r in enumerate(rows) if r["kind"] == "forfeit")
    assert rows[i]["death_reason"] == "wasm bot ran out of points (100,000,000 a turn)"
    capsys.readouterr()
    assert main(["loong", "verify", str(replay), "--builds", str(store)]) == 0
    capsys.readouterr()
    _edit_turns(replay, lambda rows: rows[i].update(death_reason="opponent disqualified, team 0 wins"))
    err = _refused(capsys, replay, store)
    assert err.endswith(f'row {i} (round 1, dragon {rows[i]["dragon_id"]}): death_reason: the turn file has '
                        '"opponent disqualified, team 0 wins", build:spin and build:random-c re-played from seed '
                        f'{load_replay(replay).seed} give "wasm bot ran out of points (100,000,000 a turn)"'), err


def test_a_build_missing_from_the_store_exits_nonzero_unless_partial(capsys, store, replay, tmp_path):
    partial_store = tmp_path / "only-random"
    shutil.copytree(store / verify(store, "random-c").id, partial_store / verify(store, "random-c").id)
    foil = verify(store, "foil-c").id
    missing = f"team 1 (build:foil-c, build {foil}): turns not re-played (not loadable from the build store: " \
              f"build {foil} is not in the store {partial_store})"
    assert main(["loong", "verify", str(replay), "--builds", str(partial_store)]) == 3
    cap = capsys.readouterr()
    assert cap.out == "" and "Traceback" not in cap.err and len(cap.err.strip().splitlines()) == 1
    assert cap.err.strip() == f"arena: error: {replay}: not every check could run: {missing} (--partial accepts " \
        "what was checked)"
    assert main(["loong", "verify", str(replay), "--builds", str(partial_store), "--partial", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and not doc["complete"] and missing in doc["unchecked"]
    assert any(c.startswith("team 0 (build:random-c,") and "every turn re-played" in c for c in doc["checked"])
    assert main(["loong", "verify", str(replay), "--builds", str(partial_store), "--partial"]) == 0
    assert capsys.readouterr().out.startswith(f"{replay}: ok, partly (")
    page = tmp_path / "page.html"
    assert main(["loong", "view", str(replay), "--builds", str(partial_store), "--out", str(page)]) == 3
    assert "not every check could run" in capsys.readouterr().err and not page.exists()
    assert main(["loong", "view", str(replay), "--builds", str(partial_store), "--out", str(page), "--partial"]) == 0
    assert "partly verified, not checked: " in capsys.readouterr().out and missing in page.read_text()
    # the present side is still re-played against the missing side's record: a forged turn of it is refused
    _edit_turns(replay, lambda rows: rows[0].update(points_used=rows[0]["points_used"] + 1))
    assert "points_used: the turn file has" in _refused(capsys, replay, partial_store, "--partial")


@pytest.mark.parametrize("change, why", [
    (lambda h: (h.pop("builds"), h.update(version=1)), "a version 1 replay records no build id"),
    (lambda h: h.update(builds=[None, None]), "neither a built-in bot nor a build with a recorded id"),
])
def test_a_header_without_build_ids_is_not_accepted_as_verified(capsys, store, replay, change, why):
    """A version 1 replay of a build game, or ids struck out of a version 2 header: the sides cannot be re-played."""
    _edit_header(replay, change)
    assert main(["loong", "verify", str(replay), "--builds", str(store)]) == 3
    err = capsys.readouterr().err
    assert f"team 0 (build:random-c): turns not re-played ({why}); team 1 (build:foil-c): turns not re-played " \
           f"({why}); seed: not checked (neither side could be re-played)" in err
    assert main(["loong", "verify", str(replay), "--builds", str(store), "--partial"]) == 0
    assert capsys.readouterr().out.startswith(f"{replay}: ok, partly (")


def test_a_build_name_the_store_does_not_know_is_named_as_unchecked(capsys, store, replay):
    ids = [verify(store, "random-c").id, verify(store, "foil-c").id]
    _edit_header(replay, lambda h: h["bots"].__setitem__(0, "build:never-registered"))
    assert main(["loong", "verify", str(replay), "--builds", str(store)]) == 3
    assert f"team 0 (build:never-registered, build {ids[0]}): name not checked (the build store {store} cannot tell " \
           "whether it is that build)" in capsys.readouterr().err
    _edit_header(replay, lambda h: h["bots"].__setitem__(0, f"build:{ids[0][:8]}"))  # an id prefix names it
    assert main(["loong", "verify", str(replay), "--builds", str(store)]) == 0
    _edit_header(replay, lambda h: h["bots"].__setitem__(0, f"build:random-c@{ids[1][:8]}"))  # a snapshot of another
    assert "bots[0]: header says \"build:random-c@" in _refused(capsys, replay, store)


def test_a_swap_between_a_built_in_bot_and_a_build_is_refused(capsys, store, tmp_path):
    replay = _match(store, tmp_path, "build:random-c", "random", rounds=10)
    rid = verify(store, "random-c").id
    assert load_replay(replay).header["builds"] == [rid, None]
    capsys.readouterr()
    assert main(["loong", "verify", str(replay), "--builds", str(store)]) == 0
    capsys.readouterr()
    _edit_header(replay, lambda h: h["bots"].reverse())
    assert _refused(capsys, replay, store, "--partial") == \
        f'arena: error: {replay}: bots[0]: header says "random", a built-in bot\'s name, but builds[0] is build {rid}'
