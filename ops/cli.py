"""The one command line, ``arena``: matches, leagues and play for both games. A composition root: each game adds
its subcommands from its own package (``arena celldiv ...`` in ``ops/celldiv/cli.py``, ``arena loong ...`` in
``ops/loong/cli.py``, ``arena bot ...`` in ``ops/loong/cli_bot.py``).

    arena celldiv match --a medium --b easy --games 200 --sizes 4-8 --seed 1 [--json]
    arena celldiv league --players easy,medium,hard --games 100 [--json] [--png FILE]
    arena celldiv play --against hard [--size 6] [--seed 0] [--second]
    arena celldiv contender --current hard --contender switching [--games 200] [--no-mlflow] [--json]

(``arena loong ...`` lives in ``ops/loong/cli.py``, ``arena bot ...`` in ``ops/loong/cli_bot.py``.)

JSON keys, one meaning in both games (``--json`` of ``celldiv match``, ``loong match`` and both leagues):

    a, b                      the two players; every figure is a's view
    games, wins, draws, losses, score_rate (draws count one half), wilson_low, wilson_high (95%)
    mean_margin               a's mean final margin (Cell Division: score difference; Loong: queen length)
    latency_a_us_median, latency_b_us_median, latency_a_us_p99, latency_b_us_p99
                              think time of one move, microseconds (a move: one Cell Division placement,
                              one Loong dragon's turn)
    moves_a, moves_b          how many moves those figures cover
    seed                      the match seed
    interrupted               true when Ctrl-C stopped it: the figures cover the games that finished
    celldiv match             sizes (board sizes cycled through)
    loong match               map, width, height, symmetry, max_rounds, reasons (ending -> games),
                              mean_rounds, replays (paths)
    leagues                   players, ratings [{player, elo, low, high, games}], pairings [the match keys
                              above, one object per pairing], failures [{a, b, error}], interrupted;
                              loong league: maps

Exit status: 0 done, 1 a league pairing failed, 2 a user mistake (one line on stderr, no traceback),
130 stopped by Ctrl-C (what finished is printed, marked interrupted), 141 standard output closed
early (``arena ... --json | head -1``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from types import ModuleType

from ops.cli_common import EXIT_INTERRUPTED, CliError

# Each game adds its subcommands from its own module: a module with ``register(subparsers)`` and, optionally,
# ``USER_ERRORS`` (its user mistakes that are no ValueError). A module that is not there yet is simply left out.
EXTENSIONS = ("ops.celldiv.cli", "ops.loong.cli", "ops.loong.cli_bot")
EXIT_USER_ERROR, EXIT_BROKEN_PIPE = 2, 141


def extensions() -> list[ModuleType]:
    out = []
    for module in EXTENSIONS:
        try:
            out.append(importlib.import_module(module))
        except ModuleNotFoundError as e:
            if e.name != module:
                raise
    return out


# -- the parser and main -------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arena", description="Train, rate and play game bots.")
    games = parser.add_subparsers(dest="game", required=True)
    for ext in extensions():
        ext.register(games)
    return parser


def _silence_stdout() -> None:
    """Standard output was closed (``| head``): point it at devnull so the exit flush says nothing."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _os_error(e: OSError) -> str:
    if e.filename is not None and e.strerror:
        return f"{e.filename}: {e.strerror}"
    return str(e)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    user_errors = (CliError, ValueError, *(e for ext in extensions() for e in getattr(ext, "USER_ERRORS", ())))
    from games.league import claim_interrupts

    try:
        claim_interrupts()  # after the imports: a native library's own SIGINT handler would swallow Ctrl-C
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print("arena: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except user_errors as e:
        print(f"arena: error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except OSError as e:
        print(f"arena: error: {_os_error(e)}", file=sys.stderr)
        return EXIT_USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
