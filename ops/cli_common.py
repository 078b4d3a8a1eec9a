"""Pieces every ``arena`` subcommand shares: the progress bar, the console, the league tables."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

from games.league import LeagueResult

EXIT_INTERRUPTED = 130  # Ctrl-C: what finished is printed, marked interrupted


def console():
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 140)


def progress_bar(total: int, label: str, unit: str = "game") -> tuple[Callable[[int], None], Callable[[], None]]:
    """A tqdm bar on stderr (shown only on a terminal): returns (update to n done, close)."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc=label, unit=unit, file=sys.stderr, leave=False,
               disable=total < 2 or not sys.stderr.isatty())

    def update(done: int) -> None:
        bar.n = done
        bar.refresh()

    return update, bar.close


def interrupted_note(done: int, total: int, unit: str = "games") -> str:
    """', interrupted after 3 of 20 games': the title suffix of a run Ctrl-C stopped."""
    return f", interrupted after {done} of {total} {unit}"


def league_doc(result: LeagueResult, **extra) -> dict:
    """A league as ``--json`` prints it (keys documented in ``ops/cli.py``)."""
    return {
        "players": result.players, **extra,
        "ratings": [r.as_dict() for r in result.ratings],
        "pairings": result.table(),
        "failures": [{"a": a, "b": b, "error": e} for a, b, e in result.failures],
        "interrupted": result.interrupted,
    }


def print_league(result: LeagueResult, title: str, *, as_json: bool, png: str | None = None, **extra) -> int:
    """Print a league as JSON or as Elo and pairing tables (and the plot when asked); exit status 1
    if a pairing failed, 130 if Ctrl-C stopped it (the finished pairings are printed)."""
    pairs = len(result.players) * (len(result.players) - 1) // 2
    note = interrupted_note(len(result.tallies) + len(result.failures), pairs, "pairings") \
        if result.interrupted else ""
    title += note
    if png and result.tallies:
        from ops.plots import league_png

        league_png(result, png, title)
    if as_json:
        print(json.dumps(league_doc(result, **extra), indent=2))
    else:
        from rich.table import Table

        t = Table(title=title)
        for col in ("player", "Elo", "95% interval", "games"):
            t.add_column(col, justify="right")
        for r in result.ratings:
            t.add_row(r.player, f"{r.elo:+.0f}", f"{r.low:+.0f} .. {r.high:+.0f}", str(r.games))
        p = Table(title="pairings (score rate of a against b, Wilson 95%)")
        for col in ("a", "b", "W-D-L", "score rate", "Wilson 95%", "mean margin"):
            p.add_column(col, justify="right")
        for s in result.table():
            p.add_row(s["a"], s["b"], f"{s['wins']}-{s['draws']}-{s['losses']}", f"{s['score_rate']:.3f}",
                      f"{s['wilson_low']:.3f}-{s['wilson_high']:.3f}", f"{s['mean_margin']:+.2f}")
        out = console()
        out.print(t)
        out.print(p)
    for a, b, e in result.failures:
        print(f"pairing {a} vs {b} failed: {e}", file=sys.stderr)
    if result.interrupted:
        print(f"arena: {note.removeprefix(', ')} (the last one may be partly played)", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0 if not result.failures else 1


def add_execution_args(parser) -> None:
    """``--backend`` and ``--workers``: where a command's work items (league pairings, game batches) run
    (ops/execution.py)."""
    from ops.execution import BACKENDS

    parser.add_argument("--backend", choices=BACKENDS, default="inprocess",
                        help="where the work items (pairings, game batches) run: in this process, a local process "
                             "pool or Ray (ARENA_RAY_ADDRESS names a cluster; else a local one) (default: %(default)s)")
    parser.add_argument("--workers", type=int, default=2,
                        help="pool processes or Ray workers in flight (default: %(default)s)")


def executor_from(args):
    """The executor ``add_execution_args``' options ask for; ValueError (one line) for a bad one."""
    import os

    from ops.execution import make_executor

    return make_executor(args.backend, args.workers, os.environ.get("ARENA_RAY_ADDRESS", ""))
