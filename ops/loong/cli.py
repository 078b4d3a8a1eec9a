"""``arena loong ...``: matches between Loong bots, map generation, replay checks and the replay viewer.

    arena loong match --team0 foil --team1 build:foil-c --map gen:48x48:lr:seed=3 --seed 7 --games 20
                      [--max-rounds 500] [--replay-dir DIR] [--builds DIR] [--json]
    arena loong map --gen gen:32x32:rot:seed=5 --out map.json [--json]
    arena loong verify REPLAY [REPLAY ...] [--builds DIR] [--partial] [--json]
    arena loong view REPLAY [--out page.html] [--review REVIEW.jsonl] [--builds DIR] [--partial]
    arena loong review --team0 expert-0-native --team1 foil --map gen:32x32:rot:seed=2 --replay-dir DIR
                      [--games 2] [--seed 0] [--max-rounds 200] [--network NET.npz] [--pages] [--json]
    arena loong league --players foil,random,build:foil-c [--maps 'SPEC;SPEC'] [--games 2] [--json]
    arena loong contender --current build:X --contender build:Y [--games 200] [--bar 0.5] [--tolerance 0.1]
                      [--at-current-budget] [--no-mlflow] [--json]

Players are Python bots by name or registered wasm builds as ``build:<name|id>`` (resolved as the league
resolves them, ``ops.loong.league.resolve_players``). ``ops/cli.py`` calls ``register(subparsers)`` with
its top-level subparsers. Mistakes (unknown bot, malformed map spec, missing or altered replay) raise
``LoongCliError``/``MapError``/``ReplayError``/``BuildError``, all ValueErrors, which the arena CLI
prints as one line with exit status 2. ``verify`` and ``view`` rebuild each side of a replay (built-in bots by
name, builds by the id the header records, from the build store) and re-play the game; a replay some of whose
checks cannot run (a build not in the store, a bot that is neither) is refused naming them, exit status 3, unless
``--partial`` (docs/loong-replay.md). JSON keys: ``ops/cli.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from games.league import Interrupted
from games.loong.foil import registry
from games.loong.mapgen import load_map_spec
from games.loong.maps import KELP, LoongMap
from games.loong.match import UnknownBot, check_replay_dir, play_series
from ops.cli_common import (
    EXIT_INTERRUPTED,
    add_contender_args,
    add_execution_args,
    console,
    executor_from,
    interrupted_note,
    print_league,
    progress_bar,
    report_comparison,
)
from ops.loong.league import DEFAULT_MAPS, LoongLeagueConfig, resolve_players

LoongCliError = UnknownBot  # a user mistake in a loong command: one line, exit status 2
BUILDS_HELP = "registered builds root, for build:<name|id> players (default: ARENA_HOME/artifacts/loong/builds)"
EXIT_UNCHECKED = 3  # verify / view: no check failed, but some could not run (and --partial was not given)
PARTIAL_HELP = ("accept a replay some of whose checks cannot run (a build not in the store, a bot that is neither "
                "built-in nor a build): say what was checked, exit 0 (default: refuse it, exit 3)")


def replay_builds(builds: str | None):
    """The build store that verification loads a replay's builds from (by id)."""
    from bot.builds import ReplayBuilds
    from ops.loong.league import builds_root

    return ReplayBuilds(Path(builds) if builds else builds_root())


def _out_path(option: str, value: str) -> Path:
    """A file to write: its folder must exist and the path must not be a folder."""
    out = Path(value)
    if out.is_dir():
        raise LoongCliError(f"{option} {value}: is a folder, not a file")
    if not out.parent.is_dir():
        raise LoongCliError(f"{option} {value}: folder {out.parent} does not exist")
    return out


# -- commands ------------------------------------------------------------------------------------
def cmd_match(args: argparse.Namespace) -> int:
    factories = resolve_players(LoongLeagueConfig(players=(args.team0, args.team1), builds=args.builds or ""))
    game_map = load_map_spec(args.map)
    if args.replay_dir is not None:
        check_replay_dir(args.replay_dir)
    update, close = progress_bar(args.games, f"{args.team0} vs {args.team1}")
    try:
        series = play_series(args.team0, args.team1, game_map, games=args.games, seed=args.seed,
                             max_rounds=args.max_rounds, replay_dir=args.replay_dir, progress=update,
                             bots=factories)
    except Interrupted as e:
        series = e.partial
    finally:
        close()
    s = series.summary()
    note = interrupted_note(s["games"], args.games) if series.interrupted else ""
    if args.json:
        print(json.dumps(s, indent=2))
    else:
        from rich.table import Table

        t = Table(title=f"Loong: {args.team0} vs {args.team1}, {args.games} games (sides alternate), "
                        f"map {game_map.name}, seed {args.seed}{note}")
        for col in ("wins", "draws", "losses", "score rate", "Wilson 95%", "mean queen margin", "mean rounds",
                    f"{args.team0} move (median us)", f"{args.team1} move (median us)"):
            t.add_column(col, justify="right")
        t.add_row(str(s["wins"]), str(s["draws"]), str(s["losses"]), f"{s['score_rate']:.3f}",
                  f"{s['wilson_low']:.3f}-{s['wilson_high']:.3f}", f"{s['mean_margin']:+.2f}",
                  f"{s['mean_rounds']:.0f}", f"{s['latency_a_us_median']:.0f}", f"{s['latency_b_us_median']:.0f}")
        out = console()
        out.print(t)
        out.print("endings: " + (", ".join(f"{k} {v}" for k, v in s["reasons"].items()) or "none"))
        if series.replays:
            out.print(f"replays: {len(series.replays)} in {args.replay_dir}")
    if series.interrupted:
        print(f"arena: {note.removeprefix(', ')}", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def map_summary(m: LoongMap) -> dict:
    kelp = int((m.edges == KELP).sum()) // 2
    return {"name": m.name, "width": m.width, "height": m.height, "symmetry": m.symmetry,
            "kelp_edges": kelp, "portal_pairs": len(m.portals), "spawn_tiles": len(m.spawns)}


def cmd_map(args: argparse.Namespace) -> int:
    game_map = load_map_spec(args.gen)
    out = _out_path("--out", args.out)
    game_map.save(out)
    s = {**map_summary(game_map), "out": str(out)}
    if args.json:
        print(json.dumps(s, indent=2))
    else:
        print(f"wrote {out}: {s['width']}x{s['height']} {s['symmetry']}, {s['kelp_edges']} kelp edges, "
              f"{s['portal_pairs']} portal pairs, {s['spawn_tiles']} spawn tiles")
    return 0


def _replay_json(text: str) -> Path:
    """The header of the replay named by ``text`` (its .json, its .parquet or their stem)."""
    replay = Path(text)
    stem = replay.with_suffix("") if replay.suffix in (".json", ".parquet") else replay
    if not stem.with_suffix(".json").exists():
        raise LoongCliError(f"replay {text}: no such replay ({stem.with_suffix('.json')} is missing)")
    return stem.with_suffix(".json")


def cmd_view(args: argparse.Namespace) -> int:
    from games.loong.replay import ReplayUnchecked
    from games.loong.viewer import write_verified_viewer

    header = _replay_json(args.replay)
    out = _out_path("--out", args.out) if args.out else header.with_suffix(".html")
    review = None
    if args.review:
        from games.loong.replay import load_replay
        from ops.loong.review import check_against_replay, load_review, viewer_review

        r = load_review(args.review)
        check_against_replay(r, load_replay(header))
        review = viewer_review(r)
    try:
        page, v = write_verified_viewer(header, out, review, str(args.review or "review"),
                                        builds=replay_builds(args.builds), partial=args.partial)
    except ReplayUnchecked as e:  # nothing differs, but a check could not run: no page without --partial
        print(f"arena: error: {e}", file=sys.stderr)
        return EXIT_UNCHECKED
    note = f", {len(review['decisions'])} reviewed decisions" if review is not None else ""
    part = f"; partly verified, not checked: {'; '.join(v.unchecked)}" if v.unchecked else ""
    print(f"wrote {page} ({page.stat().st_size // 1024} KiB{note}{part}); open it in a browser")
    return 0


def cmd_review(args: argparse.Namespace) -> int:
    """Play reviewed games (ops/loong/review.py): each game's replay and its review, optionally its page."""
    from ops.loong import review as op

    factories, explainers, reviewers = op.resolve_reviewed((args.team0, args.team1), args.network or "",
                                                           args.builds or "")
    if not explainers:
        raise LoongCliError(f"--team0 {args.team0} --team1 {args.team1}: neither explains its decisions "
                            f"(reviewed players: {op.EXPERT0_NATIVE})")
    game_map = load_map_spec(args.map)
    update, close = progress_bar(args.games, f"reviewing {args.team0} vs {args.team1}")
    try:
        games = op.record_games(args.team0, args.team1, factories, game_map, games=args.games, seed=args.seed,
                                max_rounds=args.max_rounds, replay_dir=args.replay_dir, explainers=explainers,
                                reviewers=reviewers, progress=update)
    finally:
        close()
    pages = []
    if args.pages:
        from games.loong.viewer import write_viewer

        for g in games:
            pages.append(str(write_viewer(g.replay, g.replay.with_suffix(".html"),
                                          op.viewer_review(op.load_review(g.review)), str(g.review),
                                          builds=replay_builds(args.builds), partial=True)))
    docs = [{"replay": str(g.replay), "review": str(g.review), "decisions": g.decisions, "winner": g.winner,
             "rounds": g.rounds, **({"page": pages[k]} if pages else {})} for k, g in enumerate(games)]
    if args.json:
        print(json.dumps(docs, indent=2))
    else:
        for d in docs:
            print(f"{d['replay']}: {d['rounds']} rounds, {d['decisions']} reviewed decisions -> {d['review']}"
                  + (f", page {d['page']}" if pages else ""))
        if not pages and docs:
            print(f"view one: arena loong view {docs[0]['replay']} --review {docs[0]['review']}")
    return 0


def verified_line(v) -> str:
    """'game.json: ok (60 rounds, winner team 0 (foil) by elimination, 366 turns; ...)'; a partial check says
    'ok, partly' and lists what was not checked."""
    r, bots = v.result, v.replay.header["bots"]
    who = f"a draw ({r.reason})" if r.winner is None else f"winner team {r.winner} ({bots[r.winner]}) by {r.reason}"
    ok = "ok" if v.complete else "ok, partly"
    return f"{v.replay.path}: {ok} ({r.round} rounds, {who}, {v.turns} turns; {v.bots_note})"


def cmd_verify(args: argparse.Namespace) -> int:
    """Exit 0 every replay verified (with --partial: what could be checked passed), 2 one was refused (a field
    differs, or it cannot be read), 3 none was refused but not every check could run on one (without --partial)."""
    from games.loong.replay import ReplayError, unchecked_message, verify_replay

    store = replay_builds(args.builds)
    docs, failed, incomplete = [], 0, 0
    for text in args.replays:
        try:
            v = verify_replay(_replay_json(text), builds=store)
        except (ReplayError, UnknownBot) as e:
            if len(args.replays) == 1:
                raise
            failed += 1
            print(f"arena: error: {e}", file=sys.stderr)
            docs.append({"replay": text, "ok": False, "error": str(e)})
            continue
        if v.unchecked and not args.partial:
            incomplete += 1
            print(f"arena: error: {unchecked_message(v)}", file=sys.stderr)
            docs.append({**v.summary(), "ok": False, "error": unchecked_message(v)})
            continue
        docs.append(v.summary())
        if not args.json:
            print(verified_line(v))
    if args.json:
        print(json.dumps(docs[0] if len(args.replays) == 1 else docs, indent=2))
    return 2 if failed else EXIT_UNCHECKED if incomplete else 0


def cmd_league(args: argparse.Namespace) -> int:
    from ops.loong import league as loong_league

    config = loong_league.LoongLeagueConfig(
        players=tuple(p.strip() for p in args.players.split(",") if p.strip()),
        maps=tuple(m.strip() for m in args.maps.split(";") if m.strip()),
        games_per_map=args.games, max_rounds=args.max_rounds, seed=args.seed, builds=args.builds or "")
    factories = loong_league.resolve_players(config)
    executor = executor_from(args)
    from tqdm import tqdm

    n = len(config.players)
    with tqdm(total=n * (n - 1) // 2, desc="pairings", file=sys.stderr, leave=False,
              disable=not sys.stderr.isatty()) as bar:
        try:
            result = loong_league.run(config, progress=lambda done, total: bar.update(1), factories=factories,
                                      executor=executor)
        except Interrupted as e:
            result = e.partial
    return print_league(result, f"Loong league: {args.games} games a pairing on each of {len(config.maps)} maps",
                        as_json=args.json, png=args.png, maps=list(config.maps))


def cmd_contender(args: argparse.Namespace) -> int:
    """An equal-cost contender match (ops/loong/contender.py): exit 0 pass, 1 fail, 2 refused or a bad option."""
    from ops.loong import contender as op

    config = op.ContenderConfig(games=args.games, bar=args.bar, statistic=args.statistic, tolerance=args.tolerance,
                                at_current_budget=args.at_current_budget, meter_games=args.meter_games,
                                max_rounds=args.max_rounds, seed=args.seed, builds=args.builds or "")
    update, close = progress_bar(args.games, f"{args.contender} vs {args.current}")
    try:
        r = op.contender_match(args.current, args.contender, config,
                               progress=lambda stage, done, total, tally=None:
                               update(done, tally) if stage == "match" else None)
    finally:
        close()
    return report_comparison(r, "arena-loong", args)


def op_names() -> str:
    """The players that explain their decisions (ops.loong.review)."""
    from ops.loong.review import EXPERT0_NATIVE

    return EXPERT0_NATIVE


def register(subparsers) -> None:
    """Add ``loong match|map|verify|view|review|league|contender`` to the arena CLI's top-level subparsers."""
    names = ", ".join(sorted(registry()))
    lg = subparsers.add_parser("loong", help="Loong: matches, leagues, maps, replay checks and viewer")
    sub = lg.add_subparsers(dest="command", required=True)
    from ops.loong.cli_positions import register as register_positions

    register_positions(sub)
    m = sub.add_parser("match", help="play two bots against each other, sides alternating")
    m.add_argument("--team0", required=True,
                   help=f"bot whose wins are counted: {names}, or build:<name|id> for a registered build (required)")
    m.add_argument("--team1", required=True, help="its opponent, named the same way (required)")
    m.add_argument("--map", required=True,
                   help="gen:WxH:SYM:seed=S[,kelp=F,portals=N,spawns=N] or a .json map (required)")
    m.add_argument("--seed", type=int, default=0, help="series seed; each pair of games derives its own "
                   "(default: %(default)s)")
    m.add_argument("--games", type=int, default=20, help="games, in pairs that swap sides (default: %(default)s)")
    m.add_argument("--max-rounds", type=int, default=500, help="round limit of a game (default: %(default)s)")
    m.add_argument("--replay-dir", help="write each game's replay into this folder, created if missing "
                   "(default: no replays)")
    m.add_argument("--builds", help=BUILDS_HELP)
    m.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")
    m.set_defaults(func=cmd_match)
    mp = sub.add_parser("map", help="generate a map and write it as JSON")
    mp.add_argument("--gen", required=True, help="gen:WxH:SYM:seed=S[,kelp=F,portals=N,spawns=N] (required)")
    mp.add_argument("--out", required=True, help="the map file to write; its folder must exist (required)")
    mp.add_argument("--json", action="store_true", help="print the map's summary as JSON")
    mp.set_defaults(func=cmd_map)
    vf = sub.add_parser("verify", help="re-simulate replays, re-play each side's bots (built-in by name, builds by "
                                       "id from the store) and compare every turn and header field (exit 2 if one "
                                       "differs, 3 if a check could not run)")
    vf.add_argument("replays", nargs="+", metavar="REPLAY", help="replay .json (or its .parquet, or their stem)")
    vf.add_argument("--builds", help="registered builds root, where the replay's builds are loaded by id "
                    "(default: ARENA_HOME/artifacts/loong/builds)")
    vf.add_argument("--partial", action="store_true", help=PARTIAL_HELP)
    vf.add_argument("--json", action="store_true", help="print each check as JSON")
    vf.set_defaults(func=cmd_verify)
    v = sub.add_parser("view", help="verify a replay, then write its self-contained HTML viewer")
    v.add_argument("replay", help="replay .json (or its stem)")
    v.add_argument("--out", help="page to write; its folder must exist (default: next to the replay, .html)")
    v.add_argument("--review", help="a review of this replay (REPLAY.review.jsonl, written by 'arena loong review'): "
                   "adds the decision panel (default: none)")
    v.add_argument("--builds", help="registered builds root, where the replay's builds are loaded by id "
                   "(default: ARENA_HOME/artifacts/loong/builds)")
    v.add_argument("--partial", action="store_true", help=PARTIAL_HELP.replace("exit 0", "write the page saying so"))
    v.set_defaults(func=cmd_view)
    rv = sub.add_parser("review", help="play games with decision review: each game's replay and its review "
                                       "(the candidates, priors and value of every decision of a bot that explains "
                                       "itself)")
    rv.add_argument("--team0", required=True, help=f"{op_names()} or any match player (required)")
    rv.add_argument("--team1", required=True, help="its opponent, named the same way (required)")
    rv.add_argument("--map", required=True,
                    help="gen:WxH:SYM:seed=S[,kelp=F,portals=N,spawns=N] or a .json map (required)")
    rv.add_argument("--replay-dir", required=True, help="folder for the replays and reviews, created if missing "
                    "(required)")
    rv.add_argument("--games", type=int, default=2, help="games, in pairs that swap sides (default: %(default)s)")
    rv.add_argument("--seed", type=int, default=0, help="series seed (default: %(default)s)")
    rv.add_argument("--max-rounds", type=int, default=200, help="round limit of a game (default: %(default)s)")
    rv.add_argument("--network", help="the int8 network of expert-0-native (.npz; default: the latest published "
                    "loong_network_int8)")
    rv.add_argument("--builds", help=BUILDS_HELP)
    rv.add_argument("--pages", action="store_true", help="also write each game's viewer page with its review")
    rv.add_argument("--json", action="store_true", help="print the games as JSON")
    rv.set_defaults(func=cmd_review)
    lg2 = sub.add_parser("league", help="round robin of Python bots and registered wasm builds, with Elo")
    lg2.add_argument("--players", default="foil,random",
                     help="comma-separated names, or build:<name|id> for wasm builds (default: %(default)s)")
    lg2.add_argument("--maps", default=";".join(DEFAULT_MAPS),
                     help="map specs separated by ';', every pairing plays on each (default: %(default)s)")
    lg2.add_argument("--games", type=int, default=2, help="games a pairing on each map (default: %(default)s)")
    lg2.add_argument("--max-rounds", type=int, default=500, help="round limit of a game (default: %(default)s)")
    lg2.add_argument("--seed", type=int, default=0, help="league seed (default: %(default)s)")
    lg2.add_argument("--builds", help=BUILDS_HELP)
    lg2.add_argument("--png", help="also write the Elo plot to this file (default: no plot)")
    lg2.add_argument("--json", action="store_true", help="print the league as JSON instead of tables")
    add_execution_args(lg2)
    lg2.set_defaults(func=cmd_league)
    ct = sub.add_parser("contender", help="two builds of equal points a turn: metered, then a fixed match, logged "
                                          "to MLflow as one comparison (exit 0 pass, 1 fail)")
    add_contender_args(ct, what="build, build:<name|id>", games_help="even, at least 36: every size band and "
                       "symmetry with sides swapped", tolerance_help="mean points a turn", seed=1,
                       seed_help="maps and match seeds")
    ct.add_argument("--at-current-budget", action="store_true", help="play a costlier contender at the current "
                    "build's largest metered turn as its per-turn allowance instead of refusing")
    ct.add_argument("--meter-games", type=int, default=6, help="metered games a build against the foil before the "
                    "match (default: %(default)s)")
    ct.add_argument("--max-rounds", type=int, default=200, help="round limit of a game (default: %(default)s)")
    ct.add_argument("--builds", help=BUILDS_HELP)
    ct.set_defaults(func=cmd_contender)
