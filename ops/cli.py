"""The one command line, ``arena``: matches, leagues and play for both games.

    arena celldiv match --a medium --b easy --games 200 --sizes 4-8 --seed 1 [--json]
    arena celldiv league --players easy,medium,hard --games 100 [--json] [--png FILE]
    arena celldiv play --against hard [--size 6] [--seed 0] [--second]
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable

from games.celldiv.board import PositionError, legal_moves, margin, play, random_start, score, to_text
from games.celldiv.match import parse_sizes, play_match
from games.celldiv.players import UnknownPlayer, WeightsError, make_player, player_names
from ops.cli_common import console, print_league, progress_bar

# Other games and tools add their subcommands from their own modules: name -> module with
# ``register(subparsers)``. A module that is not there yet is simply left out.
EXTENSIONS = ("ops.cli_loong", "ops.cli_bot")


class CliError(Exception):
    """A user mistake: printed as one line, exit status 2."""


def _register_store_players() -> None:
    from ops.celldiv_players import register_store_players

    try:
        register_store_players()
    except Exception as e:  # noqa: BLE001 - a broken artifact never hides the built-in tiers
        print(f"warning: trained players not loaded: {e}", file=sys.stderr)


def cmd_celldiv_match(args: argparse.Namespace) -> int:
    _register_store_players()
    sizes = parse_sizes(args.sizes)
    for name in (args.a, args.b):
        make_player(name, 0)
    update, close = progress_bar(args.games, f"{args.a} vs {args.b}")
    try:
        tally = play_match(args.a, args.b, games=args.games, sizes=sizes, seed=args.seed, progress=update)
    finally:
        close()
    s = tally.summary()
    if args.json:
        print(json.dumps(s, indent=2))
        return 0
    from rich.table import Table

    t = Table(title=f"Cell Division: {args.a} vs {args.b}, {args.games} games, sizes {args.sizes}, seed {args.seed}")
    for col in ("wins", "draws", "losses", "score rate", "Wilson 95%", "mean margin",
                f"{args.a} move (median us)", f"{args.b} move (median us)"):
        t.add_column(col, justify="right")
    t.add_row(str(s["wins"]), str(s["draws"]), str(s["losses"]), f"{s['score_rate']:.3f}",
              f"{s['wilson_low']:.3f}-{s['wilson_high']:.3f}", f"{s['mean_margin']:+.2f}",
              f"{s['latency_a_us_median']:.0f}", f"{s['latency_b_us_median']:.0f}")
    console().print(t)
    return 0


def cmd_celldiv_league(args: argparse.Namespace) -> int:
    from ops import celldiv_league

    _register_store_players()
    players = tuple(p.strip() for p in args.players.split(",") if p.strip())
    config = celldiv_league.LeagueConfig(players=players, games=args.games, sizes=args.sizes, seed=args.seed,
                                         anchor=args.anchor)
    from tqdm import tqdm

    pairs = len(players) * (len(players) - 1) // 2
    with tqdm(total=pairs, desc="pairings", file=sys.stderr, leave=False, disable=not sys.stderr.isatty()) as bar:
        report = celldiv_league.run(config, progress=lambda done, total: bar.update(1))
    return print_league(report.result, f"Cell Division league: {args.games} games a pairing, sizes {args.sizes}, "
                        f"seed {args.seed}", as_json=args.json, png=args.png)


def parse_cell(text: str, n: int) -> int:
    """'b3' (column letter, row number from 1) or 'row col' (from 1) -> a row-major cell index."""
    t = text.strip().lower().replace(",", " ")
    parts = t.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        r, c = int(parts[0]) - 1, int(parts[1]) - 1
    elif len(t) >= 2 and t[0].isalpha() and t[1:].isdigit():
        c, r = ord(t[0]) - ord("a"), int(t[1:]) - 1
    else:
        raise PositionError(f"{text!r} is not a cell: type a column letter and row number like b3, or 'row col'")
    if not (0 <= r < n and 0 <= c < n):
        raise PositionError(f"{text!r} is off the {n}x{n} board (columns a-{chr(ord('a') + n - 1)}, rows 1-{n})")
    return r * n + c


def _show(state, human: int) -> str:
    n = state.size
    marks = {0: ".", 1: "X" if human == 0 else "O", 2: "O" if human == 0 else "X", 3: "#"}
    lines = ["   " + " ".join(chr(ord("a") + c) for c in range(n))]
    for r in range(n):
        lines.append(f"{r + 1:>2} " + " ".join(marks[int(v)] for v in state.board[r]))
    lines.append(f"you (X) {score(state.board, human)}  -  bot (O) {score(state.board, 1 - human)}")
    return "\n".join(lines)


def cmd_celldiv_play(args: argparse.Namespace, read: Callable[[str], str] = input) -> int:
    import numpy as np

    _register_store_players()
    bot = make_player(args.against, args.seed)
    state = random_start(args.size, np.random.default_rng(args.seed))
    human = 1 if args.second else 0
    print(f"Cell Division against {args.against}. You are X. Blocked cells are #.")
    print("A stone scores 1 alone, else 2 for each axis (|, -, \\, /) with a friend beside it.")
    while len(legal_moves(state)):
        print(_show(state, human))
        if state.to_move == human:
            while True:
                try:
                    text = read("your move (e.g. b3, or q to quit): ")
                except EOFError:
                    print("\nbye")
                    return 0
                if text.strip().lower() in ("q", "quit", "exit"):
                    return 0
                try:
                    state = play(state, parse_cell(text, state.size))
                    break
                except PositionError as e:
                    print(f"refused: {e}")
        else:
            cell = bot.choose(state)
            r, c = divmod(cell, state.size)
            print(f"{args.against} plays {chr(ord('a') + c)}{r + 1}")
            state = play(state, cell)
    print(_show(state, human))
    m = margin(state, human)
    print("you win" if m > 0 else "you lose" if m < 0 else "a draw", f"by {abs(m)}" if m else "")
    print(to_text(state) if args.verbose else "", end="")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arena", description="Train, rate and play game bots.")
    games = parser.add_subparsers(dest="game", required=True)
    cd = games.add_parser("celldiv", help="Cell Division")
    sub = cd.add_subparsers(dest="command", required=True)
    m = sub.add_parser("match", help="play two players against each other")
    m.add_argument("--a", required=True, help=f"player name ({', '.join(player_names())}, ...)")
    m.add_argument("--b", required=True)
    m.add_argument("--games", type=int, default=200)
    m.add_argument("--sizes", default="4-8")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_celldiv_match)
    lg = sub.add_parser("league", help="round robin with Elo")
    lg.add_argument("--players", default="random,easy,medium,hard,switching")
    lg.add_argument("--games", type=int, default=100)
    lg.add_argument("--sizes", default="4-8")
    lg.add_argument("--seed", type=int, default=0)
    lg.add_argument("--anchor", default="random", help="player fixed at Elo 0")
    lg.add_argument("--png", help="also write the Elo plot here")
    lg.add_argument("--json", action="store_true")
    lg.set_defaults(func=cmd_celldiv_league)
    pl = sub.add_parser("play", help="play against a bot in the terminal")
    pl.add_argument("--against", default="medium")
    pl.add_argument("--size", type=int, default=6)
    pl.add_argument("--seed", type=int, default=0)
    pl.add_argument("--second", action="store_true", help="let the bot move first")
    pl.add_argument("--verbose", action="store_true")
    pl.set_defaults(func=cmd_celldiv_play)
    for module in EXTENSIONS:
        try:
            ext = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != module:
                raise
            continue
        ext.register(games)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (PositionError, UnknownPlayer, WeightsError, CliError, ValueError) as e:
        print(f"arena: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
