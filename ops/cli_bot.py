"""``arena bot ...``: build and register WebAssembly bots (added to ``arena`` through ops.cli EXTENSIONS).

    arena bot build SRC.c [MORE.c ...] [--name NAME] [--network-version V] [--root DIR] [--json]
    arena bot list [--root DIR] [--json]
    arena bot verify ID_OR_NAME [--root DIR]

The store root defaults to ``ARENA_HOME/artifacts/loong/builds`` (ops.store).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bot.builds import STORE_SUBPATH, BuildError, build_from_source, list_builds, verify
from bot.toolchain import CompileError
from ops.store import ArtifactStore


def _root(args: argparse.Namespace) -> Path:
    return Path(args.root) if args.root else ArtifactStore.default().root.joinpath(*STORE_SUBPATH)


def _summary(b) -> dict:
    m = b.meta
    return {"id": b.id, "name": m.get("name"), "size": m.get("size"), "network_version": m.get("network_version"),
            "source_sha256": m.get("source_sha256"), "compiler": m.get("compiler"), "created": m.get("created"),
            "path": str(b.wasm_path)}


def cmd_bot_build(args: argparse.Namespace) -> int:
    sources = [Path(s) for s in args.sources]
    missing = [str(s) for s in sources if not s.is_file()]
    if missing:
        raise BuildError(f"no such source file: {', '.join(missing)}")
    try:
        b = build_from_source(_root(args), sources, name=args.name, network_version=args.network_version)
    except CompileError as e:
        raise BuildError(str(e)) from None
    if args.json:
        print(json.dumps(_summary(b), indent=2))
    else:
        print(b.id)
    return 0


def cmd_bot_list(args: argparse.Namespace) -> int:
    builds = [_summary(b) for b in list_builds(_root(args))]
    if args.json:
        print(json.dumps(builds, indent=2))
        return 0
    for b in builds:
        print(f"{b['id']}  {b['size']:>9,} B  {b['created']}  {b['name'] or '-'}  net={b['network_version'] or '-'}")
    return 0


def cmd_bot_verify(args: argparse.Namespace) -> int:
    b = verify(_root(args), args.ref)
    print(f"{b.id} ok ({b.meta['size']:,} bytes, sha256 {b.meta['sha256']})")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``arena bot ...`` to the top-level parser's subcommands."""
    bot = subparsers.add_parser("bot", help="WebAssembly bots: build, register, verify")
    sub = bot.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="compile C to wasm (ziglang), register it, print its id")
    b.add_argument("sources", nargs="+", metavar="SRC.c")
    b.add_argument("--name", help="a name that points at this build (the latest registration wins)")
    b.add_argument("--network-version", help="the network version compiled in, if any")
    b.add_argument("--root", help="build store (default ARENA_HOME/artifacts/loong/builds)")
    b.add_argument("--json", action="store_true", help="print the build's metadata as JSON")
    b.set_defaults(func=cmd_bot_build)
    ls = sub.add_parser("list", help="list registered builds")
    ls.add_argument("--root")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_bot_list)
    v = sub.add_parser("verify", help="re-hash a build against its id")
    v.add_argument("ref", metavar="ID_OR_NAME")
    v.add_argument("--root")
    v.set_defaults(func=cmd_bot_verify)
