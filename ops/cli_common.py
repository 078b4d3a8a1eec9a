"""Pieces every ``arena`` subcommand shares: the progress bar, the console, the league tables."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

from games.gate import EVEN
from games.league import LeagueResult
from ops.contender import compare_link, log_comparison, report_lines

EXIT_INTERRUPTED = 130  # Ctrl-C: what finished is printed, marked interrupted


class CliError(Exception):
    """A user mistake: printed as one line, exit status 2."""


def console():
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 140)


def score_note(tally) -> str:
    """The running score a progress bar shows: '3-1-2, score 0.583' (the first-named side's)."""
    return f"{tally.wins}-{tally.draws}-{tally.losses}, score {tally.score_rate:.3f}"


def progress_bar(total: int, label: str, unit: str = "game") -> tuple[Callable[..., None], Callable[[], None]]:
    """A tqdm bar on stderr (shown only on a terminal): returns (update to n done, with the running tally when
    given, close). The bar shows the games done, their rate, the time left and the running score."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc=label, unit=unit, file=sys.stderr, leave=False,
               disable=total < 2 or not sys.stderr.isatty())

    def update(done: int, tally=None) -> None:
        bar.n = done
        if tally is not None:
            bar.set_postfix_str(score_note(tally), refresh=False)
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


def add_contender_args(parser, *, what: str, games_help: str, tolerance_help: str, seed: int, seed_help: str) -> None:
    """The options both games' ``contender`` commands share: the two sides, the match's size and bar, the cost
    tolerance, the seed, MLflow and JSON output; ``what`` names a side (e.g. "build, build:<name|id>")."""
    parser.add_argument("--current", required=True, help=f"the current {what} (required)")
    parser.add_argument("--contender", required=True, help=f"the contender {what} (required)")
    parser.add_argument("--games", type=int, default=200, help=f"match games, {games_help} (default: %(default)s)")
    parser.add_argument("--bar", type=float, default=EVEN, help="pass bar on --statistic (default: %(default)s)")
    parser.add_argument("--statistic", default="wilson_low", help="wilson_low (the Wilson 95%% lower bound of the "
                        "contender's score rate) or score_rate (default: %(default)s)")
    parser.add_argument("--tolerance", type=float, default=0.10,
                        help=f"largest relative difference of {tolerance_help} (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=seed, help=f"{seed_help} (default: %(default)s)")
    parser.add_argument("--no-mlflow", action="store_true", help="do not log the comparison to MLflow")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")


def report_comparison(result, experiment: str, args) -> int:
    """Log a contender comparison to MLflow (unless ``--no-mlflow``), print it (``--json`` or lines) and return the
    exit code: 0 when the contender passed its bar, 1 when it did not."""
    runs = {} if args.no_mlflow else log_comparison(result, experiment)
    link = compare_link(runs) if runs else ""
    if args.json:
        print(json.dumps({**result.summary(), "mlflow_runs": runs, "mlflow_compare": link}, indent=2))
    else:
        for line in report_lines(result):
            print(line)
        if runs:
            print(f"MLflow: compare the two sides (experiment {experiment}, games and check attached): {link}")
    for w in getattr(result, "warnings", list)():
        print(f"arena: warning: {w}", file=sys.stderr)
    return 0 if result.verdict.passed else 1
