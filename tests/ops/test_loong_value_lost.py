"""The value-lost report (ops/loong/value_lost.py): the causes, sums, rates and top departures of a synthetic targets
table whose every row's cause is known; the window situations against the engine's observation; the generators'
points in the judge's meter; the top departures' links to their games' pages (and what a bad targets folder says);
the CLI's one-line errors."""

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bot.core_candidates import GEN_ESCAPE, GEN_HARVEST, GEN_PRIMITIVE, KIND_MOVE, KIND_SPLIT, KIND_SPRINT, RECORD_DTYPE
from ops.loong.teacher_targets import SCHEMA, load_targets
from ops.loong.value_lost import (
    CAUSES,
    COLUMNS,
    FILES,
    ReportError,
    classify,
    generator_points,
    is_queen,
    main,
    render_markdown,
    report,
    top_departures,
    window_situation,
    write_report,
)

NAN = float("nan")
CROP_BYTES, CH = 17 * 17 * 56, 56


def records(*specs) -> bytes:
    """48-byte records from (kind, generator, arg, sprint directions)."""
    r = np.zeros(len(specs), RECORD_DTYPE)
    for i, (kind, gen, arg, dirs) in enumerate(specs):
        r[i]["kind"], r[i]["generator"], r[i]["arg"] = kind, gen, arg
        for s, d in enumerate(dirs):
            r[i]["dirs"][s // 4] |= d << (2 * (s % 4))
    return r.tobytes()


P, H, E = GEN_PRIMITIVE, GEN_HARVEST, GEN_ESCAPE
# 0-3 MOVE N E S W, 4 SPLIT 1, 5 SPRINT E,E (primitives); 6 harvest MOVE E, 7 escape MOVE S (the same actions as 1, 2)
BASE = [(KIND_MOVE, P, d, ()) for d in range(4)] + [(KIND_SPLIT, P, 1, ()), (KIND_SPRINT, P, 2, (1, 1)),
                                                    (KIND_MOVE, H, 1, ()), (KIND_MOVE, E, 2, ())]
WIDE = BASE + [(KIND_MOVE, H, 0, ())]  # 8: a second harvest move, N


def crop(*marks) -> bytes:
    """A crop with byte ``value`` at (row, col, channel) for each mark (HWC)."""
    c = bytearray(CROP_BYTES)
    for row, col, ch, value in marks:
        c[(row * 17 + col) * CH + ch] = value
    return bytes(c)


def row(i, chosen, teacher, lost, margins=(NAN, NAN, NAN), recs=BASE, crop_bytes=None, queen=False,
        untapped=()) -> dict:
    """One targets row; ``untapped``: records without a trunk tap (the network never scored them)."""
    n = len(recs)
    taps = bytearray(n)
    for k in untapped:
        taps[k] = 255
    scalars = bytearray(32)
    scalars[1] = 127 if queen else 0
    q = np.zeros(n, np.float32)
    return {"game": i // 4, "dragon": i % 4, "team": i % 2, "round": 10 + i, "bot": "expert-0-native", "width": 20,
            "height": 20, "symmetry": "lr", "action": "M0", "after_head": 0, "after_heading": 0,
            "crop": crop_bytes or bytes(CROP_BYTES), "overview": bytes(3600), "scalars": bytes(scalars),
            "candidates": records(*recs), "features": bytes(48 * n), "taps": bytes(taps), "candidate_count": n,
            "chosen": chosen, "generator_match": False, "outcome": 0, "prior": q.tobytes(), "teacher_q": q.tobytes(),
            "teacher_visits": np.zeros(n, np.uint16).tobytes(), "teacher_policy": q.tobytes(),
            "teacher_choice": teacher, "teacher_value": 0.0, "value_lost": lost, "margin_full": margins[0],
            "margin_sight": margins[1], "margin_team": margins[2]}


def synthetic() -> tuple[pa.Table, list[str]]:
    """Ten rows of known causes (dyadic values, so every sum is exact)."""
    specs = [
        (1, 1, 0.0, (NAN,) * 3, {}, "none"),  # the same action
        (1, 3, 0.5, (0.25, 0.125, 0.125), dict(crop_bytes=crop((8, 10, 19, 127), (2, 2, 25, 64)), untapped=(3,)),
         "candidate"),  # the teacher's move W never scored
        (0, 5, 0.25, (NAN,) * 3, dict(queen=True, crop_bytes=crop((6, 9, 25, 64)), untapped=(5,)),
         "candidate"),  # a sprint never scored
        (0, 1, 0.375, (0.25, -0.125, 0.25), {}, "information"),  # teammate knew
        (3, 2, 0.125, (-0.0625, 0.0, -0.125), {}, "information"),  # beyond any teammate; the full test disagrees
        (1, 2, 0.1875, (0.125, 0.25, 0.25), {}, "ranking"),
        (2, 1, 0.0625, (NAN,) * 3, {}, "untested"),
        (0, 1, NAN, (NAN,) * 3, {}, "none"),  # unsearched
        (1, 8, -0.03125, (0.125, 0.375, 0.375), dict(recs=WIDE), "ranking"),  # another harvest move
        (1, 6, 0.0, (NAN,) * 3, {}, "none"),  # the harvest record of the student's own move: no departure
    ]
    rows = [row(i, c, t, v, m, **kw) for i, (c, t, v, m, kw, _) in enumerate(specs)]
    return pa.Table.from_pylist(rows, schema=SCHEMA), [s[-1] for s in specs]


def test_every_departure_gets_its_one_cause():
    table, causes = synthetic()
    assert [CAUSES[c] for c in classify(table)] == causes


def test_a_candidate_gap_is_an_action_the_network_never_scored():
    """A primitive-only action the network scored is ranking or information, not a candidate gap; an action no
    record holds (teacher_choice -1) or whose every record lacks a tap is one; a taps column that does not match
    the records is refused naming the row."""
    rows = [row(0, 1, 3, 0.5, (0.25, 0.125, 0.125)),  # move W: only the primitive list proposes it, and scored
            row(1, 1, 3, 0.5, (0.25, -0.125, 0.125)),  # the same, but not preferred on the dragon's sight
            row(2, 1, -1, 0.5, (0.25, 0.125, 0.125)),  # the native teacher's own listing: no record holds it
            row(3, 1, 2, 0.5, (0.25, 0.125, 0.125), untapped=(2,)),  # move S: its escape record 7 has a tap
            row(4, 1, 2, 0.5, (0.25, 0.125, 0.125), untapped=(2, 7))]  # neither of its records has one
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    assert [CAUSES[c] for c in classify(table)] == ["ranking", "information", "candidate", "ranking", "candidate"]
    bad = row(5, 1, 3, 0.5)
    bad["taps"] = bytes(3)
    with pytest.raises(ReportError, match="targets row 0: taps holds 3 bytes for 8 records"):
        classify(pa.Table.from_pylist([bad], schema=SCHEMA))


def test_action_keys_group_records_as_record_rows_does():
    """The report's vectorised grouping (one key a record) is record_rows' grouping, on records whose sprint
    directions carry stray bits past their length (which neither may read)."""
    from ops.loong.teacher_targets import record_rows
    from ops.loong.value_lost import action_keys

    rng = np.random.default_rng(5)
    r = np.zeros(400, RECORD_DTYPE)
    r["kind"] = rng.integers(0, 3, 400)
    r["generator"] = rng.integers(0, 3, 400)
    r["arg"] = np.where(r["kind"] == KIND_SPRINT, rng.integers(2, 40, 400), rng.integers(0, 4, 400))
    r["dirs"] = rng.integers(0, 4, (400, 16)) * 0x55 & rng.integers(0, 2, (400, 16)) * 0xFF  # repeats and strays
    r["end"] = rng.integers(0, 400, 400)  # fields that are not the action
    _, group = record_rows(r)
    keys = action_keys(np.frombuffer(r.tobytes(), np.uint8).reshape(-1, 48))
    same_keys = (keys[:, None, :] == keys[None, :, :]).all(axis=2)
    assert np.array_equal(same_keys, group[:, None] == group[None, :])
    assert len(set(group.tolist())) < 400  # some records share an action: the check can fail


def test_the_report_sums_rates_and_splits_exactly():
    table, _ = synthetic()
    doc = report(table)
    assert json.loads(json.dumps(doc)) == doc  # JSON-able as it is
    assert (doc["decisions"], doc["searched"], doc["departures"]) == (10, 9, 7)
    v = doc["value_lost"]
    assert v["total"] == 1.46875 and v["mean_per_departure"] == 1.46875 / 7 and v["negative_departures"] == 1
    c = doc["causes"]
    assert {k: (t["count"], t["value_lost"]) for k, t in c.items()} == {
        "candidate": (2, 0.75), "information": (2, 0.5), "ranking": (2, 0.15625), "untested": (1, 0.0625)}
    assert c["candidate"]["share_of_value_lost"] == 0.75 / 1.46875 and c["untested"]["share"] == 1 / 7
    info = doc["information"]
    assert (info["teammate_knew"]["count"], info["teammate_knew"]["value_lost"]) == (1, 0.375)
    assert (info["beyond_any_teammate"]["count"], info["beyond_any_teammate"]["value_lost"]) == (1, 0.125)
    assert info["team_untested"]["count"] == 0 and info["full_disagrees"] == 1
    assert doc["noise"] == {"tested": 5, "full_disagrees": 1, "share": 0.2}
    gens = doc["generators"]
    assert {k: (g["student_choices"], g["teacher_choices"]) for k, g in gens.items()} == {
        "harvest": (5, 6), "escape": (1, 2), "primitive": (4, 2)}  # primitive: no generator's record is the action
    assert gens["harvest"]["student_rate"] == 0.5 and gens["escape"]["teacher_rate"] == 0.2
    # variants: the student chose a G candidate, the teacher another action that is also one
    assert gens["harvest"]["variants"] == {"count": 1, "value_lost": -0.03125}
    assert gens["escape"]["variants"] == {"count": 0, "value_lost": 0.0}
    assert gens["primitive"]["variants"] == {"count": 1, "value_lost": 0.25}  # row 2: move N against sprint E,E
    assert all(g["points"] is None for g in gens.values()) and "points" not in doc


def test_candidate_gaps_by_situation_and_generator():
    table, _ = synthetic()
    gaps = report(table)["candidate_gaps"]
    s = gaps["by_situation"]
    pick = {k: {v: (t["candidate_gaps"], t["value_lost"], t["departures"]) for v, t in vals.items()}
            for k, vals in s.items()}
    assert pick == {"teacher_kind": {"move": (1, 0.5, 6), "sprint": (1, 0.25, 1)},
                    "role": {"queen": (1, 0.25, 1), "worker": (1, 0.5, 6)},
                    "enemy_in_window": {"no": (1, 0.5, 6), "yes": (1, 0.25, 1)},  # row 1's enemy is out of it
                    "pearl_in_window": {"no": (1, 0.25, 6), "yes": (1, 0.5, 1)}}
    assert s["teacher_kind"]["move"]["gap_rate"] == 1 / 6 and s["role"]["queen"]["share_of_gap_value"] == 1 / 3
    assert gaps["by_generator"] == {"harvest": {"count": 1, "value_lost": 0.5, "share_of_gap_value": 2 / 3},
                                    "primitive": {"count": 1, "value_lost": 0.25, "share_of_gap_value": 1 / 3}}


def test_the_points_enter_each_generator():
    table, _ = synthetic()
    points = {"harvest": {"median": 5.0}, "escape": {"median": 7.0}, "primitive": {"median": 9.0}}
    doc = report(table, points=points)
    assert {k: g["points"]["median"] for k, g in doc["generators"].items()} == {"harvest": 5.0, "escape": 7.0,
                                                                                "primitive": 9.0}


def test_top_departures_are_the_costliest():
    table, _ = synthetic()
    top = top_departures(table, 3)
    assert [(t["game"], t["dragon"], t["round"], t["cause"], t["value_lost"]) for t in top] == [
        (0, 1, 11, "candidate", 0.5), (0, 3, 13, "information", 0.375), (0, 2, 12, "candidate", 0.25)]
    assert (top[0]["student"], top[0]["student_generators"]) == ("move E", ["harvest", "primitive"])
    assert (top[0]["teacher"], top[0]["teacher_generators"]) == ("move W", ["primitive"])
    assert top[2]["teacher"] == "sprint E,E" and top[2]["margin_sight"] is None
    assert top[1]["margin_sight"] == -0.125
    assert len(top_departures(table, 50)) == 7  # every departure, no more
    md = render_markdown(report(table), top)
    assert "| candidate | 2 | 28.6% | 0.750 |" in md and "move E (harvest) | move W (primitive)" in md


def test_the_window_situations_are_the_engines_observation():
    """Every turn of a recorded game: the crop's window flags and the queen scalar equal what the engine showed."""
    from bot.core_inputs import NativeInputs, inputs_library
    from games.loong.observation import decode
    from ops.loong.dataset import play_recorded

    lib = inputs_library()
    seen = {"enemy": set(), "pearl": set(), "queen": set()}
    for seed in (3, 4):
        turns, _, _ = play_recorded(12, "rot", "foil", "foil", seed, 20)
        for track in turns.values():
            inputs = NativeInputs(lib)
            for t in track:
                got = inputs.turn(t.obs)
                inputs.sent(t.sonar)
                if got is None:
                    continue
                obs = decode(t.obs)
                enemy = bool(((obs.dragon_teams >= 0) & (obs.dragon_teams != obs.team)).any())
                assert window_situation(got.crop) == (enemy, bool(obs.pearls.any()))
                assert is_queen(got.scalars) == obs.is_queen
                seen["enemy"].add(enemy), seen["pearl"].add(bool(obs.pearls.any())), seen["queen"].add(obs.is_queen)
    assert all(v == {True, False} for v in seen.values()), seen  # both values met: the check can fail


@pytest.fixture(scope="module")
def points(tmp_path_factory):
    return generator_points(12, 8, 1, 5, cache=tmp_path_factory.mktemp("native"))


def test_generator_points_in_the_judges_meter(points):
    from ops.loong.dataset import play_recorded

    turns, _, _ = play_recorded(12, "lr", "foil", "foil", 5, 8)
    assert points["turns"] == sum(len(t) for t in turns.values())
    assert points["harvest"]["median"] > 0 and points["escape"]["median"] > 0
    for k in ("harvest", "escape", "primitive", "harvest+escape"):
        assert 0 < points[k]["median"] <= points[k]["p99"] <= points[k]["max"] <= points["all"]["max"]
    # the pair holds the search from the head that neither one alone pays
    assert points["harvest+escape"]["median"] > points["harvest"]["median"] + points["escape"]["median"]
    with pytest.raises(ReportError, match="generator_points: size must be an integer 10..64, got 9"):
        generator_points(9, 8, 1, 0)


def _one_line(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_the_cli_answers_bad_input_in_one_line(tmp_path, capsys):
    out = str(tmp_path / "out")
    assert _one_line(capsys, ["--targets", str(tmp_path / "none"), "--out", out]) == (
        f"loong_value_lost: --targets {tmp_path / 'none'}: no such folder or file")
    from ops.loong.dataset import SCHEMA as DATASET

    (tmp_path / "ds").mkdir()
    pq.write_table(DATASET.empty_table(), tmp_path / "ds" / "part-000000.parquet")
    err = _one_line(capsys, ["--targets", str(tmp_path / "ds"), "--out", out])
    assert "part-000000.parquet: schema 'loong_replay_dataset', expected 'loong_teacher_targets'" in err
    table, _ = synthetic()
    (tmp_path / "t").mkdir()
    pq.write_table(table, tmp_path / "t" / "part-000000.parquet")
    (tmp_path / "file").write_text("")
    assert "is a file" in _one_line(capsys, ["--targets", str(tmp_path / "t"), "--out", str(tmp_path / "file")])
    assert "--top: must be >= 1" in _one_line(capsys, ["--targets", str(tmp_path / "t"), "--out", out, "--top", "0"])


def test_the_cli_writes_the_report(tmp_path, capsys):
    table, _ = synthetic()
    (tmp_path / "t").mkdir()
    pq.write_table(table, tmp_path / "t" / "part-000000.parquet")
    assert main(["--targets", str(tmp_path / "t"), "--out", str(tmp_path / "out"), "--top", "2",
                 "--points-games", "0"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["departures"] == 7 and summary["value_lost/candidate"] == 0.75
    assert all((tmp_path / "out" / f).is_file() for f in FILES)
    assert json.loads((tmp_path / "out" / "report.json").read_text()) == report(
        load_targets(tmp_path / "t", columns=COLUMNS))
    top = json.loads((tmp_path / "out" / "top_departures.json").read_text())
    assert [t["value_lost"] for t in top] == [0.5, 0.375]
    assert (tmp_path / "out" / "value_lost.png").read_bytes()[:4] == b"\x89PNG"
    assert not math.isnan(summary["value_lost"])


# -- the top departures' pages ---------------------------------------------------------------------------------------
def _targets(tmp_path, games) -> tuple[pa.Table, object]:
    """The synthetic table as a targets folder whose games.json is ``games`` (JSON, or text as it is)."""
    table, _ = synthetic()
    d = tmp_path / "t"
    (d / "replays").mkdir(parents=True)
    pq.write_table(table, d / "part-000000.parquet")
    (d / "games.json").write_text(games if isinstance(games, str) else json.dumps(games))
    return table, d


def test_the_top_departures_link_their_games_pages(tmp_path):
    # game 0's page was written by the targets (copied as it is); game 1 has no replay (replays were off)
    table, d = _targets(tmp_path, [{"game": 0, "replay": "replays/game0000_a_vs_b.json"}, {"game": 1, "replay": None}])
    (d / "replays" / "game0000_a_vs_b.html").write_text("<html>game 0</html>")
    out = tmp_path / "r"
    write_report(table, out, top=5, targets=d)
    top = json.loads((out / "top_departures.json").read_text())
    assert [(t["game"], t["page"]) for t in top] == [
        (0, "pages/game0000_a_vs_b.html?round=11&dragon=1"), (0, "pages/game0000_a_vs_b.html?round=13&dragon=3"),
        (0, "pages/game0000_a_vs_b.html?round=12&dragon=2"), (1, None), (1, None)]
    assert [p.name for p in (out / "pages").iterdir()] == ["game0000_a_vs_b.html"]
    assert (out / "pages" / "game0000_a_vs_b.html").read_text() == "<html>game 0</html>"
    md = (out / "report.md").read_text()
    assert "| teacher | decision |" in md
    assert ("| 0 | 1 | 11 | candidate | 0.500 | move E (harvest) | move W (primitive) | "
            "[round 11, dragon 1](pages/game0000_a_vs_b.html?round=11&dragon=1) |") in md
    assert "| 1 | 1 | 15 | ranking | 0.188 | move E (harvest) | move S (escape) | - |" in md
    # no targets folder (or one without games.json): no links, no page column
    plain = render_markdown(report(table), top_departures(table, 3))
    assert "decision |" not in plain and "](pages/" not in plain
    write_report(table, tmp_path / "r2", top=3, targets=tmp_path / "r")  # a folder without games.json
    assert [t["page"] for t in json.loads((tmp_path / "r2" / "top_departures.json").read_text())] == [None] * 3


def test_a_bad_targets_folder_is_one_line_naming_the_file(tmp_path):
    from games.loong.bots import play_game
    from games.loong.foil import foil_bot
    from games.loong.mapgen import generate_map
    from games.loong.replay import save_replay
    from ops.loong.review import save_review

    cases = [("not json", "games.json: not JSON"), ([{"replay": "x.json"}], "games.json: entry 0: game: expected a "
                                                                            "game number"),
             ([{"game": 0, "replay": 5}], "games.json: entry 0: replay: expected a replay header's path, got 5"),
             ([{"game": 0, "replay": "replays/game0000_a_vs_b.json"}],
              "game0000_a_vs_b.json: the replay games.json names is missing")]
    for k, (games, msg) in enumerate(cases):
        table, d = _targets(tmp_path / str(k), games)
        with pytest.raises(ReportError, match=msg):
            write_report(table, tmp_path / str(k) / "r", top=3, targets=d)
    # a real replay whose review lacks the departure's decision
    table, d = _targets(tmp_path / "review", [{"game": 0, "replay": "replays/game0000_foil_vs_foil.json"}])
    m = generate_map(12, 12, "rot", 2)
    json_path, _ = save_replay(play_game(m, foil_bot, foil_bot, 3, 20), d / "replays" / "game0000_foil_vs_foil")
    save_review([], json_path)
    with pytest.raises(ReportError, match=r"game0000_foil_vs_foil.review.jsonl: no decision of dragon 1 at round 11"):
        write_report(table, tmp_path / "review" / "r", top=3, targets=d)
    (d / "games.json").write_text(json.dumps([{"game": 0, "replay": "replays/game0000_foil_vs_foil.json"}]))
    json_path.with_name("game0000_foil_vs_foil.review.jsonl").write_text('{"format": "other"}\n')
    with pytest.raises(ReportError, match=r"game0000_foil_vs_foil.review.jsonl: line 1: "):
        write_report(table, tmp_path / "review" / "r", top=3, targets=d)
    assert main(["--targets", str(d), "--out", str(tmp_path / "cli"), "--points-games", "0"]) == 2
