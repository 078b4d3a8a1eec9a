"""The replay viewer: exact per-round data, a self-contained page, and the page in headless Chromium."""

import re
import shutil
import subprocess

import pytest

from games.loong.bots import play_game, random_bot
from games.loong.engine import Game
from games.loong.foil import foil_bot
from games.loong.mapgen import generate_map
from games.loong.replay import ReplayError, load_replay, save_replay
from games.loong.viewer import B64, ray_cells, render_html, state_checksum, unpack_cells, viewer_data, write_viewer

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0"]


@pytest.fixture(scope="module")
def replay_path(tmp_path_factory):
    m = generate_map(16, 16, "rot", 4, portal_pairs=3)
    r = play_game(m, foil_bot, random_bot, 3, max_rounds=60)
    json_path, _ = save_replay(r, tmp_path_factory.mktemp("replay") / "game")
    return json_path


def states_by_round(replay):
    """(bodies, pearls) after every round, from the engine."""
    game = Game(replay.map, replay.seed, int(replay.header["max_rounds"]))
    out = [_state(game)]
    turns = iter(replay.turns)
    while not game.over:
        game.begin_round()
        while (i := game.next_actor()) is not None:
            t = next(turns)
            game.turn(i, t.action, t.sonar)
        game.end_round()
        out.append((_state(game), state_checksum(game)))
    return out


def _state(game):
    return ({i: list(d.body) for i, d in game.dragons.items() if d.alive},
            {c for c, p in enumerate(game.pearls) if p})


def test_the_deltas_rebuild_every_round_exactly(replay_path):
    replay = load_replay(replay_path)
    data = viewer_data(replay)
    truth = states_by_round(replay)
    assert len(data["frames"]) == len(truth) - 1 == replay.header["result"]["round"]
    bodies = {i: unpack_cells(s) for i, s in data["bodies0"]}
    pearls = set(unpack_cells(data["pearls0"]))
    assert (bodies, pearls) == truth[0]
    for r, frame in enumerate(data["frames"], start=1):  # the page's algorithm, in Python
        for i, pre, keep in frame["b"]:
            body = unpack_cells(pre) + bodies.get(i, [])[:keep]
            if body:
                bodies[i] = body
            else:
                bodies.pop(i, None)
        pearls |= set(unpack_cells(frame["pa"]))
        pearls -= set(unpack_cells(frame["pr"]))
        assert (bodies, pearls) == truth[r][0], f"round {r}"
        rows = [row.split(",") for row in frame["t"].split(";")]
        turns = [t for t in replay.turns if t.round == r]
        assert [int(row[0]) for row in rows] == [t.dragon_id for t in turns]
        for row, t in zip(rows, turns):
            sent = [None if not v else sum(B64.index(ch) << (6 * (10 - i)) for i, ch in enumerate(v))
                    for v in row[3].split(".")] if row[3] else None
            assert sent == (list(t.sonar) if t.sonar else None)
            if t.death is not None:
                assert f"{t.dragon_id}: {t.death}" in data["causes"][int(row[4])]
    rays = [ray for f in data["frames"] for ray in f["rays"]]
    assert rays and {ray[4] for ray in rays} >= {2}  # the foil talks, and somebody hears
    # a received ray ends in a cell that held a segment after that round's sends: recheck one exactly
    sender, d, start, count, end = next(ray for ray in rays if ray[4] == 2 and ray[3] > 1)
    path = ray_cells(replay.map, unpack_cells(start)[0], d, count)
    assert len(path) == count and unpack_cells(start)[0] not in path


def test_page_is_one_self_contained_file(replay_path, tmp_path):
    page = write_viewer(replay_path, tmp_path / "page.html")
    html = page.read_text()
    assert '"frames"' in html and "/*__REPLAY_DATA__*/" not in html
    for banned in ("<script src", "<link", "fetch(", "XMLHttpRequest", "http://", "https://", "import("):
        assert banned not in html
    assert len(html) < 400_000


def test_json_cannot_break_out_of_its_script_tag():
    html = render_html({"map": {"name": "</script><script>alert(1)</script>"}})
    assert html.count("</script>") == 2 and "<\\/script>" in html


def test_a_tampered_replay_is_refused(replay_path, tmp_path):
    import json

    header = json.loads(replay_path.read_text())
    header["hashes"][5] = "0" * 32
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(header))
    shutil.copy(replay_path.with_suffix(".parquet"), tmp_path / header["parquet"])
    with pytest.raises(ReplayError, match=r"bad\.json: hashes\[5\]: header says"):
        write_viewer(bad, tmp_path / "bad.html")
    assert not (tmp_path / "bad.html").exists()


def test_a_changed_winner_is_refused_before_any_page_is_written(replay_path, tmp_path):
    import json

    header = json.loads(replay_path.read_text())
    winner = header["result"]["winner"]
    header["result"]["winner"] = 1 if winner != 1 else 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(header))
    shutil.copy(replay_path.with_suffix(".parquet"), tmp_path / header["parquet"])
    with pytest.raises(ReplayError, match=rf"bad\.json: result\.winner: header says {header['result']['winner']}, "
                                          rf"the game gives {json.dumps(winner)}$"):
        write_viewer(bad, tmp_path / "bad.html")
    assert not (tmp_path / "bad.html").exists()


def _dump(page, query, tmp_path):
    """Load the page in headless Chromium; returns (#state text, #errors text, console lines)."""
    out = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                          f"{page.as_uri()}{query}"], capture_output=True, text=True, timeout=90)
    state = re.search(r'<pre id="state">([^<]*)</pre>', out.stdout)
    errors = re.search(r'<pre id="errors">([^<]*)</pre>', out.stdout)
    console = [line for line in out.stderr.splitlines() if ":CONSOLE" in line]
    assert state is not None, out.stdout[-2000:] + out.stderr[-2000:]
    return state.group(1), errors.group(1) if errors else "", console


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (CI: apt-get install -y chromium)")
def test_page_in_headless_chromium_follows_the_round(replay_path, tmp_path):
    page = write_viewer(replay_path, tmp_path / "page.html")
    replay = load_replay(replay_path)
    truth = states_by_round(replay)
    last = len(truth) - 1
    seen = {}
    for query, want in (("?round=10", 10), ("?round=99999", last)):
        state, errors, console = _dump(page, query, tmp_path)
        assert errors == "" and console == [], (errors, console)
        fields = dict(kv.split("=") for kv in state.split())
        assert int(fields["round"]) == want
        assert fields["state"] == truth[want][1]  # the page drew exactly the engine's state
        assert int(fields["dragons"]) == len(truth[want][0][0])
        seen[want] = fields["canvas"]
    assert seen[10] != seen[last]  # moving the round changes the drawn canvas
