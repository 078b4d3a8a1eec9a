"""``arena loong positions ...``: the reviewed-positions library (ops/loong/positions.py, docs/loong-positions.md).

    arena loong positions check --build build:expert-0 [--build foil ...] [--library DIR] [--builds DIR]
                                [--network NET.npz] [--json]
    arena loong positions add --replay R --dragon D --round N --move 'move E' --reason "..." [--accept 'move S']
                              [--library DIR] [--author A] [--name NAME] [--embed] [--weight W] [--json]
    arena loong positions list [--library DIR] [--json]

``check`` exits 0 when every bot passes every position, 1 when one fails; a bad option or file is one line, exit 2
(PositionError, a ValueError, printed by the arena CLI). Hooked into ``arena loong`` by ``register(sub)``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ops.loong import positions as op

LIBRARY_HELP = "the positions library folder (default: ARENA_HOME/loong/positions)"


def _library(args: argparse.Namespace) -> Path:
    return Path(args.library) if args.library else op.default_library()


def cmd_check(args: argparse.Namespace) -> int:
    library = _library(args)
    positions = op.load_library(library)
    factories = op.resolve_bots(args.build, builds=args.builds or "", network=args.network or "")
    verdicts = op.check_library(library, factories, positions)
    s = op.summary(verdicts, len(positions))
    if args.json:
        print(json.dumps({**s, "library": str(library), "verdicts": [v.as_dict() for v in verdicts]}, indent=2))
    else:
        if not positions:
            print(f"{library}: empty library, 0 positions checked")
        for v in verdicts:
            print(f"{'pass' if v.passed else 'FAIL'}  {v.bot}  {v.position}: plays {v.move}, correct "
                  f"{' or '.join(v.correct)} (the replay played {v.played}): {v.reason}"
                  + (f" [{v.note}]" if v.note else ""))
        for bot, row in s["by_bot"].items():
            print(f"{bot}: {row['passed']}/{row['passed'] + row['failed']} positions passed")
    return 0 if s["passed"] else 1


def cmd_add(args: argparse.Namespace) -> int:
    path = op.add_position(_library(args), args.replay, dragon=args.dragon, round_=args.round, move=args.move,
                           reason=args.reason, accept=args.accept, author=args.author, embedded=args.embed,
                           name=args.name, weight=args.weight)
    pos = op.load_position(path)
    if args.json:
        print(json.dumps({"path": str(path), **pos.to_json()}, indent=2))
    else:
        print(f"wrote {path}: dragon {pos.dragon} at round {pos.round}, correct "
              f"{' or '.join(op.move_text(m) for m in pos.moves)}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    library = _library(args)
    positions = op.load_library(library)
    rows = [{"position": p.name, "dragon": p.dragon, "round": p.round,
             "correct": [op.move_text(m) for m in p.moves], "reason": p.reason, "author": p.author, "date": p.date,
             "weight": p.weight} for p in positions]
    if args.json:
        print(json.dumps({"library": str(library), "positions": rows}, indent=2))
    else:
        print(f"{library}: {len(rows)} positions")
        for r in rows:
            print(f"{r['position']}: dragon {r['dragon']} round {r['round']}, {' or '.join(r['correct'])}: "
                  f"{r['reason']} ({r['author']}, {r['date']})")
    return 0


def _weight(text: str) -> float:
    try:
        w = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not w > 0 or w == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: a training weight must be positive")
    return w


def register(sub) -> None:
    """Add ``positions check|add|list`` to the ``arena loong`` subparsers."""
    ps = sub.add_parser("positions", help="the reviewed-positions library: check bots against it, add positions")
    psub = ps.add_subparsers(dest="positions_command", required=True)
    ck = psub.add_parser("check", help="every bot on every position (exit 0 all passed, 1 one failed)")
    ck.add_argument("--build", action="append", required=True,
                    help="a bot to check, repeatable: build:<name|id> (a registered wasm build, e.g. "
                         "build:expert-0), expert-0-native, or a Python bot (required)")
    ck.add_argument("--library", help=LIBRARY_HELP)
    ck.add_argument("--builds", help="registered builds root (default: ARENA_HOME/artifacts/loong/builds)")
    ck.add_argument("--network", help="the int8 network of expert-0-native (default: the latest published)")
    ck.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    ck.set_defaults(func=cmd_check)
    ad = psub.add_parser("add", help="add a position: a replay's decision, its correct move and why")
    ad.add_argument("--replay", required=True, help="the replay (.json, its .parquet or their stem) (required)")
    ad.add_argument("--dragon", type=int, required=True, help="the deciding dragon's id (required)")
    ad.add_argument("--round", type=int, required=True, help="the round of the decision (required)")
    ad.add_argument("--move", required=True, help="the correct move: 'move E', 'sprint E,E,S', 'split 3' "
                    "(directions N E S W or 0..3) (required)")
    ad.add_argument("--accept", action="append", default=[],
                    help="another acceptable move, repeatable (default: none, only --move)")
    ad.add_argument("--reason", required=True, help="why the move is correct (required)")
    ad.add_argument("--library", help=LIBRARY_HELP)
    ad.add_argument("--author", help="who reviewed it (default: $ARENA_AUTHOR, else the login name)")
    ad.add_argument("--name", help="the position's file name, without .position.json (default: "
                    "<replay stem>-r<round>-d<dragon>)")
    ad.add_argument("--embed", action="store_true", help="embed the replay's turns up to the decision in the file "
                    "(default: copy the replay into the library's replays/ unless it is already inside it)")
    ad.add_argument("--weight", type=_weight, default=op.DEFAULT_WEIGHT,
                    help="training weight against a dataset decision's 1 (default: %(default)s)")
    ad.add_argument("--json", action="store_true", help="print the position as JSON")
    ad.set_defaults(func=cmd_add)
    ls = psub.add_parser("list", help="the library's positions")
    ls.add_argument("--library", help=LIBRARY_HELP)
    ls.add_argument("--json", action="store_true", help="print the positions as JSON")
    ls.set_defaults(func=cmd_list)
