"""The search check and the release check (issue 12 item 6; seed part 4, "The checks before a network, search or bot
is used or released"; docs/loong-search-check.md).

    size = SEARCH_CHECK_SIZES.resolve("small")                       # games and round limit, fixed here before any game
    m = search_match(NET, "plain", size, seed=0, executor)   # expert-0-search against expert-0, the same network
    m = search_match(NET, "foil", RELEASE_SIZES.resolve("small"), seed=0, executor)   # the release check's match
    m = search_match(NEW, "parent", size, seed=0, executor, search_units=0, parent=OLD)   # the cycle's gate (plain)
    m.passed(SEARCH_PASS_LOWER)

Both sides play on the native build of the one C turn the judged bot runs (``bot.expert0``): the searching side with
the judge build's search budget (``bot.expert0.SEARCH_UNITS``, the same decisions as the wasm build: the search
counts units, it never reads a clock), the plain side the network's top candidate. Against ``parent`` (the network
a cycle's student came from: ``ops.loong_cycle_gate``) both sides play with the same search units, 0 for the plain
network on both. Maps: every size band and
symmetry (``ops.loong.contender.band_map``), each map twice with the sides swapped on one match seed. Passed when
the Wilson 95% lower bound of the searching side's score rate (wins + draws / 2) is above the bar.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from games.gate import EVEN, Gate
from games.loong.match import pair_seed
from games.stats import wilson_interval
from ops.execution import Executor, WorkItem, cached, gather
from ops.loong.contender import BANDS, band_map
from ops.profiles import Profiles

SEARCH_PASS_LOWER = EVEN   # the search check: the searching bot beats the plain bot (seed: "searching bot beats the
                          # plain bot"); Wilson 95% lower bound above this
RELEASE_PASS_LOWER = EVEN  # the release check: Wilson 95% lower bound above 50% against the foil (issue 12)
RELEASE_MIN_GAMES = 200   # the release check's size at least (issue 12: "over at least 200 games")
SEARCH_GATE = Gate("search_beats_plain", "expert-0-search's score rate against expert-0 (the same network's top "
                   "candidate, no search), on every size band and symmetry", bar=SEARCH_PASS_LOWER)
RELEASE_GATE = Gate("release_beats_foil", "expert-0-search's score rate against the foil, on every size band and "
                    "symmetry", bar=RELEASE_PASS_LOWER)
CYCLE_PASS_LOWER = EVEN    # the cycle's gate (issue 37 item 4): the student's Wilson 95% lower bound against its
                          # parent above this
CYCLE_GATE = Gate("student_beats_parent", "expert-N+1's score rate against its parent expert-N (the network the "
                  "cycle's targets were searched for), both the network's top candidate, no search, on every size "
                  "band and symmetry", bar=CYCLE_PASS_LOWER)
GAMES_A_PART = 4          # games a work item plays (a pair of maps): parts never depend on the workers
OPPONENTS = ("plain", "foil", "expert-h", "parent")


@dataclass(frozen=True)
class CheckSize:
    """A check match's size, fixed in the code before its games: ``games`` (even: pairs swap sides), ``rounds``."""

    games: int
    rounds: int

    def __post_init__(self) -> None:
        if self.games < 2 or self.games % 2:
            raise ValueError(f"games: an even number of at least 2, got {self.games}")
        if not 1 <= self.rounds <= 500:
            raise ValueError(f"rounds: 1..500, got {self.rounds}")


# Sizes by profile (docs/loong-search-check.md, "Sizes": set by the games this CPU plays in a cycle and the power
# to see the effect measured); the test profile only proves the path.
SEARCH_CHECK_SIZES = Profiles("search check", CheckSize, {"test": dict(games=4, rounds=12),
                                                          "small": dict(games=192, rounds=60),
                                                          "full": dict(games=400, rounds=500)})
# The cycle's gate at the rules' 500 rounds, sized by power (docs/loong-cycle.md, "The gate"): n = (1.96 + 0.84)^2
# p (1 - p) / (p - 0.5)^2 games see a true score rate p above 0.5 four times in five: small 96 (p = 0.65: 79, and
# the teacher check's size), full 400 (p = 0.57: 392); the test profile only proves the path.
CYCLE_SIZES = Profiles("cycle gate", CheckSize, {"test": dict(games=4, rounds=12), "small": dict(games=96, rounds=500),
                                                "full": dict(games=400, rounds=500)})
RELEASE_SIZES = Profiles("release check", CheckSize, {"test": dict(games=4, rounds=12),
                                                      "small": dict(games=RELEASE_MIN_GAMES, rounds=100),
                                                      "full": dict(games=RELEASE_MIN_GAMES * 2, rounds=500)})


@dataclass(frozen=True)
class GameRecord:
    """One game of a check: the searching side's team, its score (1 / 0.5 / 0), the result and the search's work."""

    game: int
    width: int
    height: int
    symmetry: str
    side: int
    score: float
    reason: str
    rounds: int
    scores: tuple
    searched: int         # the searching side's turns that ran a search
    simulations: int      # simulations over those turns
    changed: int          # turns where the search chose another candidate than the network's top one
    guard_stops: int      # turns the judge's clock stopped (never on the native build: a sanity count)


@dataclass
class SearchMatch:
    """A check match's tally (the searching side's view) and its games."""

    opponent: str
    size: CheckSize
    seed: int
    search_units: int
    games: list[GameRecord] = field(default_factory=list)
    seconds: float = 0.0
    side: str = "expert-0-search"  # the checked side's name in the line

    @property
    def wins(self) -> int:
        return sum(g.score == 1.0 for g in self.games)

    @property
    def draws(self) -> int:
        return sum(g.score == 0.5 for g in self.games)

    @property
    def losses(self) -> int:
        return sum(g.score == 0.0 for g in self.games)

    @property
    def score(self) -> float:
        return sum(g.score for g in self.games) / max(len(self.games), 1)

    @property
    def wilson(self) -> tuple[float, float]:
        return wilson_interval(sum(g.score for g in self.games), len(self.games))

    def passed(self, bar: float) -> bool:
        return len(self.games) == self.size.games and self.wilson[0] > bar

    @property
    def simulations_a_turn(self) -> float:
        searched = sum(g.searched for g in self.games)
        return sum(g.simulations for g in self.games) / max(searched, 1)

    @property
    def changed_share(self) -> float:
        return sum(g.changed for g in self.games) / max(sum(g.searched for g in self.games), 1)

    def by_band(self) -> dict[str, tuple[int, float]]:
        """Games and score rate by size band (sides lo-hi) and symmetry."""
        out: dict[str, list[float]] = {}
        for g in self.games:
            lo, hi = next(b for b in BANDS if b[0] <= g.width <= b[1])
            out.setdefault(f"{lo}-{hi} {g.symmetry}", []).append(g.score)
        return {k: (len(v), statistics.fmean(v)) for k, v in sorted(out.items())}

    def record(self) -> dict:
        lo, hi = self.wilson
        return {"opponent": self.opponent, "games": self.size.games, "rounds": self.size.rounds, "seed": self.seed,
                "search_units": self.search_units, "wins": self.wins, "draws": self.draws, "losses": self.losses,
                "score": self.score, "wilson95": [lo, hi], "simulations_a_turn": self.simulations_a_turn,
                "changed_share": self.changed_share, "seconds": self.seconds,
                "by_map": {k: {"games": n, "score": s} for k, (n, s) in self.by_band().items()},
                "game_records": [asdict(g) for g in self.games]}

    def line(self, bar: float) -> str:
        lo, hi = self.wilson
        search = (f"; {self.simulations_a_turn:.1f} simulations a searched turn, the search changed "
                  f"{self.changed_share:.1%} of the network's picks" if self.search_units else "; no search")
        return (f"{self.side} vs {self.opponent}: {self.wins}-{self.draws}-{self.losses} over {len(self.games)} "
                f"games ({self.size.rounds} rounds), score {self.score:.3f}, Wilson 95% [{lo:.3f}, {hi:.3f}], bar "
                f"lower > {bar}: {'pass' if self.passed(bar) else 'FAIL'}{search}")


class _Watched:
    """A factory whose bots' searches are tallied after each turn (the native Expert0's ``search()``)."""

    name = "expert-0-search"

    def __init__(self, factory) -> None:
        self.factory = factory
        self.searched = self.simulations = self.changed = self.guard_stops = 0

    def __call__(self, dragon_id: int, team: int, seed: int) -> _WatchedBot:
        return _WatchedBot(self.factory(dragon_id, team, seed), self)


class _WatchedBot:
    """One dragon's searching bot, its search after each turn added to its factory's tally."""

    name = "expert-0-search"

    def __init__(self, bot, tally: _Watched) -> None:
        self.bot, self.tally = bot, tally

    def act(self, obs):
        out = self.bot.act(obs)
        s, t = self.bot.search(), self.tally
        flags = s.flag_names()
        if "ran" in flags:
            t.searched += 1
            t.simulations += s.simulations
            t.changed += int(s.chosen != s.network_pick)
        t.guard_stops += int("guard_stop" in flags)
        return out


def _opponent(name: str, net_path: str, digest: str, parent: tuple[str, str] | None = None, units: int = 0):
    if name == "parent":
        from bot.expert0 import expert0_factory
        from bot.int8_expert import load

        path, version = parent
        return cached(f"expert0-search:{version}:{units}:None", lambda: expert0_factory(load(path), search_units=units))
    if name == "plain":
        from bot.expert0 import expert0_factory
        from bot.int8_expert import load

        return cached(f"expert0:{digest}", lambda: expert0_factory(load(net_path)))
    if name == "foil":
        from games.loong.foil import foil_bot

        return foil_bot
    if name == "expert-h":
        from bot.expert_h import expert_h_factory

        return cached("expert-h", expert_h_factory)
    raise ValueError(f"opponent: one of {', '.join(OPPONENTS)}, got {name!r}")


def play_part(net_path: str, digest: str, opponent: str, games: list[int], rounds: int, match_seed: int,
              search_units: int, tune=None, parent: tuple[str, str] | None = None, *,
              seed: int = 0) -> list[GameRecord]:
    """Games ``games`` of a check (a work item; ``seed`` unused: every game's seeds derive from ``match_seed``);
    ``parent``: the parent network's (path, digest) when ``opponent`` is "parent"."""
    from bot.expert0 import expert0_factory
    from bot.int8_expert import load
    from games.loong.bots import play_game

    searcher = cached(f"expert0-search:{digest}:{search_units}:{tune!r}",
                      lambda: expert0_factory(load(net_path), search_units=search_units, tune=tune))
    other = _opponent(opponent, net_path, digest, parent, search_units)
    out = []
    for g in games:
        m, pair, side = band_map(g, match_seed), pair_seed(match_seed, g // 2), g % 2
        me = _Watched(searcher)
        r = play_game(m, me, other, pair, rounds, record=False) if side == 0 else \
            play_game(m, other, me, pair, rounds, record=False)
        score = 0.5 if r.winner is None else float(r.winner == side)
        out.append(GameRecord(g, m.width, m.height, m.symmetry or "", side, score, r.reason,
                              r.result.round, tuple(map(tuple, r.result.scores)), me.searched, me.simulations,
                              me.changed, me.guard_stops))
    return out


def search_match(net_path: Path | str, opponent: str, size: CheckSize, *, seed: int, executor: Executor,
                 search_units: int | None = None, tune=None, parent: Path | str | None = None, side: str = "",
                 progress: Callable[[str, int, int], None] | None = None) -> SearchMatch:
    """The searching expert-0 against ``opponent`` ('plain': the same network without search, 'foil', 'expert-h',
    'parent': the network ``parent`` with the same ``search_units``) over ``size``'s games, in parts of GAMES_A_PART
    through ``executor``; ``search_units`` 0: the plain network (no search); ``tune``: a ``bot.expert0.SearchTune``
    (None: the judged build's constants); ``side``: the checked side's name in the match's line;
    ``progress(part, done, total)``."""
    import time

    from bot.expert0 import SEARCH_UNITS
    from bot.int8_expert import digest, load

    if opponent not in OPPONENTS:
        raise ValueError(f"opponent: one of {', '.join(OPPONENTS)}, got {opponent!r}")
    units = SEARCH_UNITS if search_units is None else search_units
    if not isinstance(units, int) or units < 0 or (units == 0 and opponent == "plain"):
        raise ValueError(f"search_units: a positive int (0, no search, only against another network), got {units!r}")
    if (parent is None) != (opponent != "parent"):
        raise ValueError("parent: the parent network's file exactly when the opponent is 'parent'")
    version = digest(load(net_path))  # a damaged file is its loader's one-line ValueError
    against = (str(parent), digest(load(parent))) if parent is not None else None
    ids = list(range(size.games))
    parts = [ids[i:i + GAMES_A_PART] for i in range(0, len(ids), GAMES_A_PART)]
    items = [WorkItem(f"games {p[0]}-{p[-1]}", play_part,
                      (str(net_path), version, opponent, p, size.rounds, seed, units, tune, against)) for p in parts]
    t0 = time.perf_counter()
    results = gather(executor, items, on_done=(lambda o, done, total: progress(o.name, done, total))
                     if progress else None)
    m = SearchMatch(opponent, size, seed, units, sorted((g for part in results for g in part), key=lambda g: g.game),
                    side=side or ("expert-0-search" if units else "expert-0"))
    m.seconds = time.perf_counter() - t0
    return m


def _tune(a):
    """The CLI's SearchTune (None when no constant is given)."""
    from bot.expert0 import SearchTune

    given = {"c_scale": a.c_scale, "considered": a.considered, "rollout_rounds": a.rollout_rounds, "mode": a.mode}
    given = {k: v for k, v in given.items() if v is not None}
    if a.weights is not None:
        try:
            given["weights"] = tuple(int(w) for w in a.weights.split(","))
        except ValueError:
            raise ValueError(f"--weights: three comma-separated ints, got {a.weights!r}") from None
    return SearchTune(**given) if given else None


def main(argv: list[str] | None = None) -> int:
    """``python -m ops.loong.search_check --network NET.npz [--opponent plain] [--games 96] [--rounds 60]``: one check
    match as the assets play it; exit 1 when the bar is missed, 2 on bad arguments."""
    import argparse

    from ops.execution import make_executor

    ap = argparse.ArgumentParser(prog="python -m ops.loong.search_check", description=main.__doc__.splitlines()[0])
    ap.add_argument("--network", required=True, help="an int8 network (loong_network_int8's network.npz)")
    ap.add_argument("--opponent", default="plain", choices=OPPONENTS)
    ap.add_argument("--parent", default=None, help="with --opponent parent: the network the checked one came from")
    ap.add_argument("--games", type=int, default=SEARCH_CHECK_SIZES.resolve("small").games)
    ap.add_argument("--rounds", type=int, default=SEARCH_CHECK_SIZES.resolve("small").rounds)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--search-units", type=int, default=None, help="units a turn (default: the judge build's; 0: "
                    "no search, against --opponent parent only)")
    ap.add_argument("--c-scale", type=float, default=None, help="the Gumbel root's C_SCALE (default: search.h's)")
    ap.add_argument("--considered", type=int, default=None, help="candidates the root considers")
    ap.add_argument("--rollout-rounds", type=int, default=None, help="rounds a rollout plays after the current one")
    ap.add_argument("--weights", default=None, help="the standing's weights: queen,longest,total")
    ap.add_argument("--mode", type=int, default=None, help="search.h's CORE_SEARCH_MODE_* bits (1 follow, 2 tree)")
    a = ap.parse_args(argv)
    bar = SEARCH_PASS_LOWER if a.opponent == "plain" else RELEASE_PASS_LOWER
    try:
        size = CheckSize(a.games, a.rounds)
        tune = _tune(a)
        m = search_match(a.network, a.opponent, size, seed=a.seed, executor=make_executor("local", a.workers),
                         search_units=a.search_units, tune=tune, parent=a.parent)
    except ValueError as e:
        ap.error(str(e))
    print(m.line(bar) + (f" ({tune})" if tune else ""))
    for k, (n, s) in m.by_band().items():
        print(f"  {k:>12}: {n:3d} games, score {s:.3f}")
    print(f"  {m.seconds:.0f} s")
    return 0 if m.passed(bar) else 1


if __name__ == "__main__":
    import sys

    sys.exit(main())
