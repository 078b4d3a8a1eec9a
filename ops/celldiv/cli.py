"""``arena celldiv ...``: Cell Division's matches, leagues, teacher, play in the terminal and contender comparisons
(``register`` adds them to the arena CLI, ``ops/cli.py``).

    arena celldiv match --a medium --b easy --games 200 --sizes 4-8 --seed 1 [--json]
    arena celldiv league --players easy,medium,hard --games 100 [--json] [--png FILE]
    arena celldiv play --against hard [--size 6] [--seed 0] [--second]
    arena celldiv contender --current hard --contender switching [--games 200] [--no-mlflow] [--json]
    arena celldiv teacher --profile small --out DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from games.celldiv.board import (
    BLOCKED,
    EMPTY,
    PositionError,
    legal_moves,
    margin,
    play,
    random_start,
    score,
    to_text,
)
from games.celldiv.match import parse_sizes, play_match
from games.celldiv.players import UnknownPlayer, WeightsError, make_player, player_names
from games.league import Interrupted, match_summary
from ops.celldiv.teacher_args import add_teacher_arguments
from ops.cli_common import (
    EXIT_INTERRUPTED,
    CliError,
    add_contender_args,
    add_execution_args,
    console,
    executor_from,
    interrupted_note,
    print_league,
    progress_bar,
    report_comparison,
)
from ops.store import ArtifactStore

USER_ERRORS = (UnknownPlayer,)  # a user mistake that is no ValueError: one line, exit status 2 (ops/cli.py)


def _register_store_players() -> None:
    from ops.celldiv.players import register_store_players

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
    interrupted = False
    try:
        tally = play_match(args.a, args.b, games=args.games, sizes=sizes, seed=args.seed, progress=update)
    except Interrupted as e:
        tally, interrupted = e.partial, True
    finally:
        close()
    s = {**match_summary(tally), "sizes": list(sizes), "seed": args.seed, "interrupted": interrupted}
    note = interrupted_note(tally.games, args.games) if interrupted else ""
    if args.json:
        print(json.dumps(s, indent=2))
    else:
        from rich.table import Table

        t = Table(title=f"Cell Division: {args.a} vs {args.b}, {args.games} games, sizes {args.sizes}, "
                        f"seed {args.seed}{note}")
        for col in ("wins", "draws", "losses", "score rate", "Wilson 95%", "mean margin",
                    f"{args.a} move (median us)", f"{args.b} move (median us)"):
            t.add_column(col, justify="right")
        t.add_row(str(s["wins"]), str(s["draws"]), str(s["losses"]), f"{s['score_rate']:.3f}",
                  f"{s['wilson_low']:.3f}-{s['wilson_high']:.3f}", f"{s['mean_margin']:+.2f}",
                  f"{s['latency_a_us_median']:.0f}", f"{s['latency_b_us_median']:.0f}")
        console().print(t)
    if interrupted:
        print(f"arena: {note.removeprefix(', ')}", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def cmd_celldiv_league(args: argparse.Namespace) -> int:
    from ops.celldiv import league as celldiv_league

    _register_store_players()
    players = tuple(p.strip() for p in args.players.split(",") if p.strip())
    config = celldiv_league.LeagueConfig(players=players, games=args.games, search_games=args.search_games,
                                         sizes=args.sizes, seed=args.seed, anchor=args.anchor)
    executor = executor_from(args)
    # workers in other processes register the trained players themselves
    trained = None if args.backend == "inprocess" else (str(ArtifactStore.default().root), 64)
    from tqdm import tqdm

    pairs = len(players) * (len(players) - 1) // 2
    with tqdm(total=pairs, desc="pairings", file=sys.stderr, leave=False, disable=not sys.stderr.isatty()) as bar:
        try:
            result = celldiv_league.run(config, progress=lambda done, total: bar.update(1),
                                        executor=executor, trained=trained).result
        except Interrupted as e:
            result = e.partial
    return print_league(result, f"Cell Division league: {args.games} games a pairing, sizes {args.sizes}, "
                        f"seed {args.seed}", as_json=args.json, png=args.png)


def cmd_celldiv_contender(args: argparse.Namespace) -> int:
    """An equal-latency contender match (ops/celldiv/contender.py): exit 0 pass, 1 fail, 2 refused or a bad option."""
    from ops.celldiv import contender as op

    _register_store_players()
    config = op.CelldivContenderConfig(games=args.games, sizes=args.sizes, bar=args.bar, statistic=args.statistic,
                                       tolerance=args.tolerance, latency_moves=args.latency_moves, seed=args.seed)
    update, close = progress_bar(args.games, f"{args.contender} vs {args.current}")
    try:
        r = op.contender_match(args.current, args.contender, config, progress=update)
    finally:
        close()
    return report_comparison(r, "arena-celldiv", args)


# -- play ----------------------------------------------------------------------------------------
def parse_cell(text: str, n: int) -> int:
    """'b3' (column letter, row number from 1) or 'row col' / 'row,col' (from 1) -> a row-major cell index."""
    t = text.strip().lower().replace(",", " ")
    parts = t.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        r, c = int(parts[0]) - 1, int(parts[1]) - 1
    elif len(t) >= 2 and t[0].isalpha() and t[1:].isdigit():
        c, r = ord(t[0]) - ord("a"), int(t[1:]) - 1
    else:
        raise PositionError(f"{text.strip()!r} is not a cell: type a column letter and row number like b3, "
                            "or 'row col'")
    if not (0 <= r < n and 0 <= c < n):
        raise PositionError(f"{text.strip()!r} is off the {n}x{n} board (columns a-{chr(ord('a') + n - 1)}, "
                            f"rows 1-{n})")
    return r * n + c


def notation(text: str) -> str:
    """How a typed cell was written: 'letter' (b3), 'comma' (3,2) or 'space' (3 2)."""
    t = text.strip()
    return "letter" if t[:1].isalpha() else "comma" if "," in t else "space"


def cell_text(cell: int, n: int, style: str = "letter") -> str:
    """A cell in a notation ``parse_cell`` reads: b3, 3,2 or 3 2."""
    r, c = divmod(cell, n)
    if style == "comma":
        return f"{r + 1},{c + 1}"
    if style == "space":
        return f"{r + 1} {c + 1}"
    return f"{chr(ord('a') + c)}{r + 1}"


def _show(state, human: int) -> str:
    n = state.size
    marks = {0: ".", 1: "X" if human == 0 else "O", 2: "O" if human == 0 else "X", 3: "#"}
    lines = ["   " + " ".join(chr(ord("a") + c) for c in range(n))]
    for r in range(n):
        lines.append(f"{r + 1:>2} " + " ".join(marks[int(v)] for v in state.board[r]))
    lines.append(f"you (X) {score(state.board, human)}  -  bot (O) {score(state.board, 1 - human)}")
    return "\n".join(lines)


def _occupied(state, cell: int, human: int) -> str | None:
    """Why ``cell`` cannot take a stone, in the player's words (None when it can)."""
    v = int(state.board.reshape(-1)[cell])
    if v == EMPTY:
        return None
    return "blocked" if v == BLOCKED else "taken by your stone" if v - 1 == human else "taken by the bot's stone"


def cmd_celldiv_teacher(args: argparse.Namespace) -> int:
    from ops.celldiv import teacher as celldiv_teacher
    from ops.checkpoints import CheckpointError

    if args.workers < 1:
        raise CliError(f"--workers: must be at least 1, got {args.workers}")
    if args.kickstart is not None and not args.kickstart.is_file():
        raise CliError(f"--kickstart: {args.kickstart}: weight file not found")
    try:
        celldiv_teacher.run_command(args)
    except (CheckpointError, WeightsError, ValueError) as e:
        raise CliError(str(e)) from None
    return 0


def cmd_celldiv_play(args: argparse.Namespace, read: Callable[[str], str] = input) -> int:
    import numpy as np

    _register_store_players()
    bot = make_player(args.against, args.seed)
    state = random_start(args.size, np.random.default_rng(args.seed))
    human = 1 if args.second else 0
    style = "letter"  # moves are echoed in the notation the player last typed
    print(f"Cell Division against {args.against}. You are X. Blocked cells are #.")
    print("A stone scores 1 alone, else 2 for each axis (|, -, \\, /) with a friend beside it.")
    print("Type a cell as column letter and row (b3) or as row and column (3 2 or 3,2); q quits.")
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
                    cell = parse_cell(text, state.size)
                except PositionError as e:
                    print(f"refused: {e}")
                    continue
                style = notation(text)
                why = _occupied(state, cell, human)
                if why is not None:
                    print(f"refused: {cell_text(cell, state.size, style)} is {why}")
                    continue
                print(f"you play {cell_text(cell, state.size, style)}")
                state = play(state, cell)
                break
        else:
            cell = bot.choose(state)
            print(f"{args.against} plays {cell_text(cell, state.size, style)}")
            state = play(state, cell)
    print(_show(state, human))
    m = margin(state, human)
    print("you win" if m > 0 else "you lose" if m < 0 else "a draw", f"by {abs(m)}" if m else "")
    print(to_text(state) if args.verbose else "", end="")
    return 0


def register(games) -> None:
    """Add ``arena celldiv match|league|teacher|play|contender`` to the arena CLI's top-level subparsers."""
    cd = games.add_parser("celldiv", help="Cell Division: matches, leagues, play in the terminal")
    sub = cd.add_subparsers(dest="command", required=True)
    known = ", ".join(player_names())
    m = sub.add_parser("match", help="play two players against each other")
    m.add_argument("--a", required=True, help=f"the player whose results are counted ({known}, ...; required)")
    m.add_argument("--b", required=True, help="its opponent (a player name; required)")
    m.add_argument("--games", type=int, default=200,
                   help="games to play, in pairs that share a start with colours swapped (default: %(default)s)")
    m.add_argument("--sizes", default="4-8",
                   help="board sizes cycled through: '4-8', '6' or '4,6,8' (default: %(default)s)")
    m.add_argument("--seed", type=int, default=0, help="match seed: starts and sampling (default: %(default)s)")
    m.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")
    m.set_defaults(func=cmd_celldiv_match)
    lg = sub.add_parser("league", help="round robin with Elo")
    lg.add_argument("--players", default="random,easy,medium,hard,switching",
                    help="comma-separated player names (default: %(default)s)")
    lg.add_argument("--games", type=int, default=100, help="games a pairing (default: %(default)s)")
    lg.add_argument("--search-games", type=int, default=None,
                    help="games of a pairing with the teacher, which searches every move (default: --games)")
    lg.add_argument("--sizes", default="4-8", help="board sizes cycled through (default: %(default)s)")
    lg.add_argument("--seed", type=int, default=0, help="league seed (default: %(default)s)")
    lg.add_argument("--anchor", default="random", help="player fixed at Elo 0 (default: %(default)s)")
    lg.add_argument("--png", help="also write the Elo plot to this file (default: no plot)")
    lg.add_argument("--json", action="store_true", help="print the league as JSON instead of tables")
    add_execution_args(lg)
    lg.set_defaults(func=cmd_celldiv_league)
    te = sub.add_parser("teacher", help="train the AlphaZero teacher (kickstart, self-play), then its teacher data")
    add_teacher_arguments(te)
    te.set_defaults(func=cmd_celldiv_teacher)
    pl = sub.add_parser("play", help="play against a bot in the terminal")
    pl.add_argument("--against", default="medium", help=f"the bot to play ({known}; default: %(default)s)")
    pl.add_argument("--size", type=int, default=6, help="board size, 4-8 (default: %(default)s)")
    pl.add_argument("--seed", type=int, default=0, help="seed of the start and the bot (default: %(default)s)")
    pl.add_argument("--second", action="store_true", help="let the bot move first")
    pl.add_argument("--verbose", action="store_true", help="print the final position as text at the end")
    pl.set_defaults(func=cmd_celldiv_play)
    ct = sub.add_parser("contender", help="two players of equal move latency: timed, then a fixed match, logged to "
                                          "MLflow as one comparison (exit 0 pass, 1 fail)")
    add_contender_args(ct, what="player: a name or onnx:PATH", games_help="even, at least 20 and two a size",
                       tolerance_help="median move latency", seed=0, seed_help="starts, sampling and timed positions")
    ct.add_argument("--sizes", default="4-8", help="board sizes cycled through (default: %(default)s)")
    ct.add_argument("--latency-moves", type=int, default=200, help="positions each player is timed on "
                    "(default: %(default)s)")
    ct.set_defaults(func=cmd_celldiv_contender)
