"""Decision review (ops/loong/review.py): a recorded expert-0 game whose review's priors sum to 1 and whose chosen
candidate is the replay's action at every decision; the format's round trip and its one-line errors; the review
checked against its replay; ``arena loong review`` and ``arena loong view --review``."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess

import numpy as np
import pytest

from games.loong.actions import action_record
from games.loong.mapgen import generate_map
from games.loong.replay import load_replay
from games.loong.viewer import viewer_data
from ops.cli import main
from ops.loong.review import (
    EXPERT0_NATIVE,
    Candidate,
    Choice,
    Decision,
    ReviewError,
    TeacherReview,
    check_against_replay,
    load_review,
    record_games,
    resolve_reviewed,
    save_review,
    sigmoid,
    viewer_review,
)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def recorded(network, tmp_path_factory):
    _, path = network
    factories, explainers, reviewers = resolve_reviewed((EXPERT0_NATIVE, "random"), str(path))
    out = tmp_path_factory.mktemp("reviewed")
    games = record_games(EXPERT0_NATIVE, "random", factories, generate_map(16, 16, "rot", 4, portal_pairs=3),
                         games=2, seed=5, max_rounds=40, replay_dir=out, explainers=explainers, reviewers=reviewers)
    return games


def test_a_recorded_expert0_game_explains_every_turn_it_played(recorded, network):
    net, _ = network
    for g in recorded:
        replay, review = load_replay(g.replay), load_review(g.review)
        check_against_replay(review, replay)
        side = replay.header["bots"].index(EXPERT0_NATIVE)
        assert review.header["reviewers"][str(side)]["bot"] == EXPERT0_NATIVE
        assert review.header["reviewers"][str(1 - side)] is None and review.header["errors"] == []
        turns = {(t.round, t.dragon_id): t for t in replay.turns}
        # every turn of expert-0's team is a decision, in the replay's order, and no other turn is
        teams = viewer_data(replay)["teams"]
        mine = [k for k, t in turns.items() if teams[str(k[1])] == side]
        assert [(d.round, d.dragon) for d in review.decisions] == mine and len(mine) == g.decisions > 10
        assert all(d.team == side for d in review.decisions)
        chosen = 0
        for d in review.decisions:
            played = action_record(turns[(d.round, d.dragon)].action)
            assert (d.played["kind"], tuple(d.played["args"])) == played
            scored = [c for c in d.candidates if c.score is not None]
            assert scored and math.isclose(sum(c.prior for c in d.candidates), 1.0, abs_tol=1e-9)
            assert all(c.prior == 0.0 for c in d.candidates if c.score is None)
            top = max(c.score for c in scored)  # the chosen is the highest score, the first among equals
            assert 0.0 < d.value < 1.0 and d.value == pytest.approx(sigmoid(d.value_logit))
            assert d.value_logit * 2 ** net.value_exp == pytest.approx(round(d.value_logit * 2 ** net.value_exp))
            if d.chosen is not None:
                chosen += 1
                c = d.candidates[d.chosen]
                assert (c.kind, tuple(c.args)) == played, (d.round, d.dragon)
                assert c.score == top and d.candidates.index(c) == next(i for i, x in enumerate(d.candidates)
                                                                      if x.score == top)
                assert c.prior == max(x.prior for x in d.candidates)
            assert d.candidates[0].kind == "move" and [c.args[0] for c in d.candidates[:4]] == [0, 1, 2, 3]
        assert chosen == len(review.decisions)  # the tiny network taps every turn: no fallback move


def test_the_page_embeds_the_recorded_decisions(recorded):
    g = recorded[0]
    replay, review = load_replay(g.replay), load_review(g.review)
    data = viewer_data(replay, viewer_review(review))
    embedded = [(int(r), d) for r, rows in data["review"]["decisions"].items() for d in rows]
    assert len(embedded) == len(review.decisions)
    for r, e in embedded:
        d = review.at(r, e["d"])
        assert (e["v"], e["chosen"], e["n"]) == (d.value, d.chosen, len(d.candidates))
        shown = [row[0] for row in e["c"]]
        assert d.chosen in shown and len(shown) == min(len(d.candidates), data["review"]["top"])
        assert [row[4] for row in e["c"]] == sorted((c.prior for c in d.candidates), reverse=True)[:len(shown)]
        assert e["rest"] == pytest.approx(sum(c.prior for i, c in enumerate(d.candidates) if i not in shown))


def _decision(**kw) -> Decision:
    cands = [Candidate("move", [d], "primitive", "wander", 17 + d, 17 + d, d, 9, 32, [], float(d), p, visits=v, q=q)
             for d, p, v, q in zip(range(4), (0.1, 0.2, 0.3, 0.4), (1, 2, 3, 10), (-0.5, 0.0, 0.25, 0.5))]
    cands.append(Candidate("sprint", [1, 1, 2], "harvest", "harvest", None, 40, 1, 0, 0, ["fatal", "cutoff"], None,
                           0.0))
    teacher = TeacherReview(Choice(3, "wander", 0.5, 0.0), Choice(3, "wander", 0.5, 0.0), Choice(2, "harvest", 0.75,
                                                                                                  None))
    base = dict(round=1, dragon=0, team=0, bot="toy", value=0.625, value_logit=math.log(0.625 / 0.375), chosen=3,
                played={"kind": "move", "args": [3]}, candidates=cands, simulations=16, teacher=teacher)
    return Decision(**{**base, **kw})


@pytest.fixture
def tiny_replay(recorded, tmp_path):
    src = recorded[0].replay
    for p in (src, src.with_suffix(".parquet")):
        shutil.copy(p, tmp_path / p.name)
    return tmp_path / src.name


def test_round_trip_keeps_every_field(tiny_replay):
    decisions = [_decision(), _decision(round=2, dragon=1, team=1, chosen=None, simulations=None, teacher=None)]
    path = save_review(decisions, tiny_replay, reviewers={0: {"bot": "toy"}})
    assert path.name.endswith(".review.jsonl") and path.with_name(tiny_replay.name).exists()
    back = load_review(path)
    assert back.decisions == decisions
    assert back.header["reviewers"] == {"0": {"bot": "toy"}, "1": None} and back.header["decisions"] == 2


BAD = [  # (line number, how the file is damaged, the message's end)
    (1, lambda lines: ["{not json"] + lines[1:], r"line 1: json: not JSON"),
    (1, lambda lines: lines[1:], r"line 1: format: missing"),
    (1, lambda lines: [lines[0].replace('"loong-review"', '"loong-replay"')] + lines[1:],
     r"line 1: format: 'loong-replay', want 'loong-review'"),
    (1, lambda lines: [lines[0].replace('"version": 1', '"version": 2')] + lines[1:],
     r"line 1: version: 2, this reader knows version 1"),
    (1, lambda lines: lines[:2], r"line 1: decisions: header says 2, the file has 1"),
    (2, lambda lines: [lines[0], lines[1].replace('"prior":0.3', '"prior":"0.3"'), lines[2]],
     r"line 2: candidates\[2\]\.prior: expected int or float, got \"0.3\""),
    (2, lambda lines: [lines[0], lines[1].replace('"chosen":3', '"chosen":7'), lines[2]],
     r"line 2: chosen: 7 is not a candidate \(there are 5\)"),
    (2, lambda lines: [lines[0], lines[1].replace('"prior":0.4', '"prior":0.5'), lines[2]],
     r"line 2: candidates: priors sum to 1.100000, not 1"),
    (2, lambda lines: [lines[0], lines[1].replace('"generator":"harvest"', '"generator":"feed"'), lines[2]],
     r"line 2: candidates\[4\]\.generator: 'feed' is not one of primitive, harvest, escape"),
    (2, lambda lines: [lines[0], lines[1].replace('"fatal"', '"doomed"'), lines[2]],
     r"line 2: candidates\[4\]\.flags: \['doomed', 'cutoff'\] holds a flag not among"),
    (2, lambda lines: [lines[0], lines[1].replace('"round":1,', ''), lines[2]], r"line 2: round: missing"),
    (2, lambda lines: [lines[0], lines[1].replace('"value":0.625', '"value":1.5'), lines[2]],
     r"line 2: value: 1.5 is outside \[0.0, 1.0\]"),
    (2, lambda lines: [lines[0], lines[1].replace('"candidate":2', '"candidate":9'), lines[2]],
     r"line 2: teacher\.teacher\.candidate: 9 is not a candidate"),
    (3, lambda lines: [lines[0], lines[1], lines[1]], r"line 3: round: a second decision of dragon 0 at round 1"),
]


@pytest.mark.parametrize("line, damage, message", BAD)
def test_a_bad_review_file_is_one_line_naming_the_file_line_and_field(tiny_replay, tmp_path, line, damage, message):
    path = save_review([_decision(), _decision(round=2, dragon=1, team=1)], tiny_replay)
    path.write_text("\n".join(damage(path.read_text().splitlines())) + "\n")
    with pytest.raises(ReviewError, match=rf"^{re.escape(str(path))}: {message}") as e:
        load_review(path)
    assert "\n" not in str(e.value) and f"line {line}:" in str(e.value)


def test_a_review_of_another_game_or_another_action_is_refused(recorded):
    a, b = recorded
    review_a, replay_b = load_review(a.review), load_replay(b.replay)
    with pytest.raises(ReviewError, match=r"parquet_blake2b: the review was recorded for another game"):
        check_against_replay(review_a, replay_b)
    d = review_a.decisions[3]
    d.played = {"kind": "split", "args": [1]} if d.played["kind"] != "split" else {"kind": "move", "args": [0]}
    with pytest.raises(ReviewError, match=rf"round {d.round} dragon {d.dragon}: played: the review says"):
        check_against_replay(review_a, load_replay(a.replay))


def test_cli_review_then_view_with_the_review(network, tmp_path, capsys):
    _, net_path = network
    out = tmp_path / "games"
    assert main(["loong", "review", "--team0", "random", "--team1", EXPERT0_NATIVE, "--map", "gen:14x14:lr:seed=2",
                 "--games", "2", "--max-rounds", "30", "--replay-dir", str(out), "--network", str(net_path),
                 "--pages", "--json"]) == 0
    docs = json.loads(capsys.readouterr().out)
    assert len(docs) == 2 and all(d["decisions"] > 0 for d in docs)
    for d in docs:
        assert load_review(d["review"]).header["bots"] == load_replay(d["replay"]).header["bots"]
        assert '"review":' in open(d["page"]).read()
    page = tmp_path / "page.html"
    # expert-0-native is neither a built-in bot nor a build: its turns cannot be re-played, so only --partial pages it
    assert main(["loong", "view", docs[1]["replay"], "--review", docs[1]["review"], "--out", str(page)]) == 3
    assert "(expert-0-native): turns not re-played" in capsys.readouterr().err and not page.exists()
    assert main(["loong", "view", docs[1]["replay"], "--review", docs[1]["review"], "--out", str(page),
                 "--partial"]) == 0
    out = capsys.readouterr().out
    assert f"{docs[1]['decisions']} reviewed decisions" in out and page.exists()
    assert "partly verified, not checked: team 0 (expert-0-native): turns not re-played" in out
    # a review that is not this replay's, and a damaged one: one line, exit 2
    assert main(["loong", "view", docs[0]["replay"], "--review", docs[1]["review"], "--out", str(page)]) == 2
    assert "recorded for another game" in capsys.readouterr().err
    bad = tmp_path / "bad.review.jsonl"
    bad.write_text('{"format": "loong-review", "version": 1}\n')
    assert main(["loong", "view", docs[0]["replay"], "--review", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"arena: error: {bad}: line 1: replay: missing"


def test_cli_review_refuses_players_that_cannot_explain_themselves(tmp_path, capsys):
    assert main(["loong", "review", "--team0", "foil", "--team1", "random", "--map", "gen:12x12:rot:seed=1",
                 "--replay-dir", str(tmp_path)]) == 2
    assert "neither explains its decisions" in capsys.readouterr().err


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (CI: apt-get install -y chromium)")
def test_expert0_page_in_headless_chromium_shows_the_recorded_numbers(recorded, tmp_path):
    from games.loong.viewer import write_viewer

    g = recorded[1]
    review = load_review(g.review)
    d = review.decisions[len(review.decisions) // 2]
    page = write_viewer(g.replay, tmp_path / "page.html", viewer_review(review), partial=True)
    out = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                          f"{page.as_uri()}?round={d.round}&dragon={d.dragon}"],
                         capture_output=True, text=True, timeout=90)
    head = re.search(r'<div id="dec-head"([^>]*)>', out.stdout)
    assert head is not None, out.stdout[-2000:] + out.stderr[-2000:]
    attrs = dict(re.findall(r'data-(\w+)="([^"]*)"', head.group(1)))
    assert (int(attrs["round"]), int(attrs["dragon"]), int(attrs["chosen"])) == (d.round, d.dragon, d.chosen)
    assert float(attrs["value"]) == d.value
    row = re.search(r"<tr data-index=\"(\d+)\" data-prior=\"([^\"]+)\" class=\"chosen\">", out.stdout)
    assert row is not None and int(row.group(1)) == d.chosen
    assert float(row.group(2)) == d.candidates[d.chosen].prior
    assert np.isclose(sum(c.prior for c in d.candidates), 1.0)
