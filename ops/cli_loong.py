"""``arena loong ...``: matches between Loong bots, map generation and the replay viewer.

    arena loong match --team0 foil --team1 random --map gen:48x48:lr:seed=3 --seed 7 --games 20
                      [--max-rounds 500] [--replay-dir DIR] [--json]
    arena loong map --gen gen:32x32:rot:seed=5 --out map.json [--json]
    arena loong view REPLAY [--out page.html]

``ops/cli.py`` calls ``register(subparsers)`` with its top-level subparsers. Mistakes (unknown bot,
malformed map spec, missing replay) raise ``LoongCliError``/``MapError``/``ReplayError``, all
ValueErrors, which the arena CLI prints as one line with exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from games.loong.foil import registry
from games.loong.mapgen import load_map_spec
from games.loong.maps import KELP, LoongMap
from games.loong.match import UnknownBot, bot_factory, play_series
from ops.cli_common import console, print_league, progress_bar
from ops.loong_league import DEFAULT_MAPS

LoongCliError = UnknownBot  # a user mistake in a loong command: one line, exit status 2


# -- commands ------------------------------------------------------------------------------------
def cmd_match(args: argparse.Namespace) -> int:
    for name in (args.team0, args.team1):
        bot_factory(name)
    game_map = load_map_spec(args.map)
    update, close = progress_bar(args.games, f"{args.team0} vs {args.team1}")
    try:
        series = play_series(args.team0, args.team1, game_map, games=args.games, seed=args.seed,
                             max_rounds=args.max_rounds, replay_dir=args.replay_dir, progress=update)
    finally:
        close()
    s = series.summary()
    if args.json:
        print(json.dumps(s, indent=2))
        return 0
    from rich.table import Table

    t = Table(title=f"Loong: {args.team0} vs {args.team1}, {args.games} games (sides alternate), "
                    f"map {game_map.name}, seed {args.seed}")
    for col in ("wins", "draws", "losses", "score rate", "Wilson 95%", "mean queen margin", "mean rounds",
                f"{args.team0} ms/turn", f"{args.team1} ms/turn"):
        t.add_column(col, justify="right")
    t.add_row(str(s["wins"]), str(s["draws"]), str(s["losses"]), f"{s['score_rate']:.3f}",
              f"{s['wilson_low']:.3f}-{s['wilson_high']:.3f}", f"{s['mean_margin']:+.2f}",
              f"{s['mean_rounds']:.0f}", f"{s['ms_per_turn_a']:.2f}", f"{s['ms_per_turn_b']:.2f}")
    out = console()
    out.print(t)
    out.print("endings: " + ", ".join(f"{k} {v}" for k, v in s["reasons"].items()))
    if series.replays:
        console.print(f"replays: {len(series.replays)} in {args.replay_dir}")
    return 0


def map_summary(m: LoongMap) -> dict:
    kelp = int((m.edges == KELP).sum()) // 2
    return {"name": m.name, "width": m.width, "height": m.height, "symmetry": m.symmetry,
            "kelp_edges": kelp, "portal_pairs": len(m.portals), "spawn_tiles": len(m.spawns)}


def cmd_map(args: argparse.Namespace) -> int:
    game_map = load_map_spec(args.gen)
    out = Path(args.out)
    if out.parent and not out.parent.exists():
        raise LoongCliError(f"--out {args.out}: folder {out.parent} does not exist")
    game_map.save(out)
    s = {**map_summary(game_map), "out": str(out)}
    if args.json:
        print(json.dumps(s, indent=2))
    else:
        print(f"wrote {out}: {s['width']}x{s['height']} {s['symmetry']}, {s['kelp_edges']} kelp edges, "
              f"{s['portal_pairs']} portal pairs, {s['spawn_tiles']} spawn tiles")
    return 0


def cmd_view(args: argparse.Namespace) -> int:
    from games.loong.viewer import write_viewer

    replay = Path(args.replay)
    stem = replay.with_suffix("") if replay.suffix in (".json", ".parquet") else replay
    if not stem.with_suffix(".json").exists():
        raise LoongCliError(f"replay {args.replay}: no such replay ({stem.with_suffix('.json')} is missing)")
    out = Path(args.out) if args.out else stem.with_suffix(".html")
    page = write_viewer(stem.with_suffix(".json"), out)
    print(f"wrote {page} ({page.stat().st_size // 1024} KiB); open it in a browser")
    return 0


def cmd_league(args: argparse.Namespace) -> int:
    from ops import loong_league

    config = loong_league.LoongLeagueConfig(
        players=tuple(p.strip() for p in args.players.split(",") if p.strip()),
        maps=tuple(m.strip() for m in args.maps.split(";") if m.strip()),
        games_per_map=args.games, max_rounds=args.max_rounds, seed=args.seed, builds=args.builds or "")
    factories = loong_league.resolve_players(config)
    from tqdm import tqdm

    n = len(config.players)
    with tqdm(total=n * (n - 1) // 2, desc="pairings", file=sys.stderr, leave=False,
              disable=not sys.stderr.isatty()) as bar:
        result = loong_league.run(config, progress=lambda done, total: bar.update(1), factories=factories)
    return print_league(result, f"Loong league: {args.games} games a pairing on each of {len(config.maps)} maps",
                        as_json=args.json, png=args.png, maps=list(config.maps))


def register(subparsers) -> None:
    """Add ``loong match|map|view`` to the arena CLI's top-level subparsers."""
    names = ", ".join(sorted(registry()))
    lg = subparsers.add_parser("loong", help="Loong: matches, maps, replay viewer")
    sub = lg.add_subparsers(dest="command", required=True)
    m = sub.add_parser("match", help="play two bots against each other, sides alternating")
    m.add_argument("--team0", required=True, help=f"bot whose wins are counted ({names})")
    m.add_argument("--team1", required=True, help="its opponent")
    m.add_argument("--map", required=True, help="gen:WxH:SYM:seed=S[,kelp=F,portals=N,spawns=N] or a .json map")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--games", type=int, default=20)
    m.add_argument("--max-rounds", type=int, default=500)
    m.add_argument("--replay-dir", help="write each game's replay here")
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_match)
    mp = sub.add_parser("map", help="generate a map and write it as JSON")
    mp.add_argument("--gen", required=True, help="gen:WxH:SYM:seed=S[,kelp=F,portals=N,spawns=N]")
    mp.add_argument("--out", required=True)
    mp.add_argument("--json", action="store_true")
    mp.set_defaults(func=cmd_map)
    v = sub.add_parser("view", help="write a replay's self-contained HTML viewer")
    v.add_argument("replay", help="replay .json (or its stem)")
    v.add_argument("--out", help="page to write (default: next to the replay, .html)")
    v.set_defaults(func=cmd_view)
    lg2 = sub.add_parser("league", help="round robin of Python bots and registered wasm builds, with Elo")
    lg2.add_argument("--players", default="foil,random", help="names, or build:<name|id> for wasm builds")
    lg2.add_argument("--maps", default=";".join(DEFAULT_MAPS), help="map specs separated by ';'")
    lg2.add_argument("--games", type=int, default=2, help="games a pairing on each map")
    lg2.add_argument("--max-rounds", type=int, default=500)
    lg2.add_argument("--seed", type=int, default=0)
    lg2.add_argument("--builds", help="registered builds root (default ARENA_HOME/artifacts/loong/builds)")
    lg2.add_argument("--png", help="also write the Elo plot here")
    lg2.add_argument("--json", action="store_true")
    lg2.set_defaults(func=cmd_league)
