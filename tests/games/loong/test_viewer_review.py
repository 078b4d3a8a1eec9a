"""The replay viewer's decision panel (issue 13, item 4): a recorded review embedded in the page, and the page in
headless Chromium stepped by its keys to a known round and dragon, showing the recorded value, priors, visits, Q,
teacher review and the chosen candidate, with the candidates drawn on the board.

The reviewed bot is a toy searcher written here (it scores its four moves, "searches" them and keeps a teacher's
verdict), so every optional field of the format is exercised without compiling expert-0 (tests/ops/test_loong_review.py
records expert-0 itself)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from games.loong.actions import Move
from games.loong.bots import looks_safe
from games.loong.foil import foil_bot
from games.loong.mapgen import generate_map
from games.loong.maps import DX, DY
from games.loong.replay import load_replay
from games.loong.rng import SplitMix64
from games.loong.viewer import render_html, review_data, viewer_data, write_viewer
from ops.loong.review import (
    Candidate,
    Choice,
    Decision,
    TeacherReview,
    check_against_replay,
    load_review,
    record_games,
    softmax,
    viewer_review,
)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0"]


class ToySearcher:
    """Scores its four moves (safe ones higher, plus noise), gives each "visits" (by prior) and a Q (noise), plays
    the most visited; its teacher prefers the highest Q. It explains itself through ``explain`` (the hook of
    ops.loong.review)."""

    name = "toy-searcher"

    def __init__(self, dragon_id: int, team: int, seed: int) -> None:
        self.rng = SplitMix64(seed)
        self.last = None

    def act(self, obs):
        scores = [(2.0 if looks_safe(obs, d) else -2.0) + self.rng.below(1000) / 500.0 for d in range(4)]
        priors = softmax(scores)
        visits = [1 + int(40 * p) for p in priors]
        q = [self.rng.below(2001) / 1000 - 1 for _ in range(4)]  # the searched values, not the priors
        best = max(range(4), key=lambda d: (visits[d], -d))
        self.last = (scores, priors, visits, q, best)
        return Move(best), None

    def explain(self, obs, reply) -> Decision:
        scores, priors, visits, q, best = self.last
        hx, hy = obs.head
        cands = []
        for d in range(4):
            end = ((hy + DY[d]) % obs.height) * obs.width + (hx + DX[d]) % obs.width
            cands.append(Candidate("move", [d], "primitive", "wander", end, end, d, 9 if looks_safe(obs, d) else 0,
                                   8, [] if looks_safe(obs, d) else ["fatal"], scores[d], priors[d], visits[d], q[d]))
        net, teacher = max(range(4), key=lambda d: priors[d]), max(range(4), key=lambda d: q[d])
        review = TeacherReview(Choice(best, "wander", q[best], q[teacher] - q[best]),
                               Choice(net, "wander", q[net], q[teacher] - q[net]), Choice(teacher, "wander", q[teacher],
                                                                                         0.0))
        return Decision(obs.round, obs.dragon_id, obs.team, self.name, 0.25 + obs.round / 1000, None, best,
                        {"kind": "move", "args": [best]}, cands, simulations=sum(visits), teacher=review)


def toy(dragon_id: int, team: int, seed: int) -> ToySearcher:
    return ToySearcher(dragon_id, team, seed)


toy.name = "toy-searcher"  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def game(tmp_path_factory):
    m = generate_map(16, 16, "rot", 4, portal_pairs=3)
    g = record_games("toy-searcher", "foil", {"toy-searcher": toy, "foil": foil_bot}, m, games=1, seed=3,
                     max_rounds=40, replay_dir=tmp_path_factory.mktemp("toy"),
                     reviewers={"toy-searcher": {"bot": "toy-searcher"}})[0]
    replay, review = load_replay(g.replay), load_review(g.review)
    check_against_replay(review, replay)
    return g, replay, review


def test_the_review_is_embedded_by_round_and_dragon(game):
    _, replay, review = game
    data = viewer_data(replay, viewer_review(review))
    rounds = data["review"]["decisions"]
    assert sum(len(v) for v in rounds.values()) == len(review.decisions) > 20
    for r, rows in rounds.items():
        assert [e["d"] for e in rows] == sorted(e["d"] for e in rows)
        for e in rows:
            d = review.at(int(r), e["d"])
            assert e["sim"] == d.simulations and e["teacher"]["teacher"][0] == d.teacher.teacher.candidate
            assert [row[12] for row in e["c"]] == [d.candidates[row[0]].visits for row in e["c"]]
    # only the likeliest are embedded, with the chosen and the teacher's choices, and the rest's prior summed
    d = next(d for d in review.decisions if len({d.chosen, d.teacher.teacher.candidate}) == 2)
    small = review_data({"header": review.header, "decisions": [d.to_json()]}, {(d.round, d.dragon)}, "r", top=1)
    e = small["decisions"][str(d.round)][0]
    top = max(range(4), key=lambda i: (d.candidates[i].prior, -i))
    assert {row[0] for row in e["c"]} == {top, d.chosen, d.teacher.teacher.candidate, d.teacher.network.candidate}
    assert e["rest"] == pytest.approx(sum(c.prior for i, c in enumerate(d.candidates) if i not in
                                          {row[0] for row in e["c"]}))
    with pytest.raises(ValueError, match=r"r: round 999 dragon 0: the review's decision is not a turn"):
        review_data({"header": {}, "decisions": [{**d.to_json(), "round": 999, "dragon": 0}]}, set(), "r")


def test_a_page_with_a_review_stays_self_contained(game, tmp_path):
    g, _, review = game
    html = write_viewer(g.replay, tmp_path / "page.html", viewer_review(review), partial=True).read_text()
    assert '"review":' in html
    for banned in ("<script src", "<link", "fetch(", "XMLHttpRequest", "http://", "https://", "import("):
        assert banned not in html
    hostile = render_html({"review": {"decisions": {"1": [{"bot": "</script><script>alert(1)</script>"}]}}})
    assert hostile.count("</script>") == 2


def _dump(page, query, tmp_path):
    out = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                          f"{page.as_uri()}{query}"], capture_output=True, text=True, timeout=90)
    assert '<pre id="state">' in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]
    errors = re.search(r'<pre id="errors">([^<]*)</pre>', out.stdout).group(1)
    console = [line for line in out.stderr.splitlines() if ":CONSOLE" in line]
    assert errors == "" and console == [], (errors, console)
    return out.stdout


def _state(dom: str) -> dict:
    return dict(kv.split("=") for kv in re.search(r'<pre id="state">([^<]*)</pre>', dom).group(1).split())


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (CI: apt-get install -y chromium)")
def test_the_decision_panel_in_headless_chromium_shows_the_recorded_numbers(game, tmp_path):
    g, _, review = game
    page = write_viewer(g.replay, tmp_path / "page.html", viewer_review(review), partial=True)
    by_round: dict[int, list[Decision]] = {}
    for d in review.decisions:
        by_round.setdefault(d.round, []).append(d)
    r = next(r for r, ds in sorted(by_round.items()) if len(ds) >= 2 and r > 3)
    want = sorted(by_round[r], key=lambda d: d.dragon)[1]  # the second reviewed dragon of round r
    # keyboard: from round r - 3, three steps right, then the next reviewed dragon
    dom = _dump(page, f"?round={r - 3}&keys=ArrowRight*3,ArrowDown", tmp_path)
    state = _state(dom)
    assert (int(state["round"]), int(state["dragon"])) == (r, want.dragon)
    head = dict(re.findall(r'data-(\w+)="([^"]*)"', re.search(r'<div id="dec-head"([^>]*)>', dom).group(1)))
    assert (int(head["round"]), int(head["dragon"]), int(head["chosen"])) == (r, want.dragon, want.chosen)
    assert float(head["value"]) == want.value
    rows = re.findall(r'<tr data-index="(\d+)" data-prior="([^"]+)"( class="chosen")?>(.*?)</tr>', dom)
    assert [int(i) for i, *_ in rows] == sorted(range(4), key=lambda i: (-want.candidates[i].prior, i))
    for i, prior, chosen, cells in rows:
        c = want.candidates[int(i)]
        texts = re.findall(r"<td[^>]*>([^<]*)</td>", cells)
        assert float(prior) == c.prior and texts[3] == f"{c.prior:.4f}"
        assert (texts[5], texts[6]) == (str(c.visits), f"{c.q:.3f}")
        assert bool(chosen) == (int(i) == want.chosen)
    teacher = re.findall(r"<tr data-choice=\"(\w+)\"><td>\w+</td><td>(\d+)</td>", dom)
    assert teacher == [(k, str(getattr(want.teacher, k).candidate)) for k in ("played", "network", "teacher")]
    assert int(state["marks"]) == 4 + 1  # four end cells and the chosen one's highlight
    # 'c' hides the candidates: the same round and state, fewer marks, another canvas
    hidden = _state(_dump(page, f"?round={r}&dragon={want.dragon}&keys=c", tmp_path))
    assert (hidden["state"], hidden["marks"]) == (state["state"], "0") and hidden["canvas"] != state["canvas"]
    # up goes back to the first reviewed dragon of the round
    back = _state(_dump(page, f"?round={r}&dragon={want.dragon}&keys=ArrowUp", tmp_path))
    assert int(back["dragon"]) == min(d.dragon for d in by_round[r])


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (CI: apt-get install -y chromium)")
def test_a_page_without_a_review_has_no_panel(game, tmp_path):
    g, *_ = game
    dom = _dump(write_viewer(g.replay, tmp_path / "plain.html", partial=True), "?round=5&keys=ArrowDown", tmp_path)
    assert '<div id="review" hidden="">' in dom and "dragon=" not in _state(dom)
