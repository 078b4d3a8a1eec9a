"""``arena bot ...``: build and register WebAssembly bots (added to ``arena`` through ops.cli EXTENSIONS).

    arena bot build SRC.c [MORE.c ...] [--name NAME] [--network-version V] [--root DIR] [--json]
    arena bot register FILE.wasm [--name NAME] [--network-version V] [--root DIR] [--json]
    arena bot list [--root DIR] [--json]
    arena bot verify ID_OR_NAME [--root DIR]

The store root defaults to ``ARENA_HOME/artifacts/loong/builds`` (ops.store). A file that is not what the
command takes (a .txt or a .wasm given to ``build``, C given to ``register``, C that does not compile, a
module the judge refuses) is one line naming the file and the reason, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from bot.abi import WASM_MAGIC
from bot.builds import STORE_SUBPATH, BuildError, build_from_source, list_builds, read_wasm_file, verify
from bot.builds import register as register_build
from bot.toolchain import CompileError
from ops.store import ArtifactStore

ROOT_HELP = "build store (default: ARENA_HOME/artifacts/loong/builds)"


def _root(args: argparse.Namespace) -> Path:
    return Path(args.root) if args.root else ArtifactStore.default().root.joinpath(*STORE_SUBPATH)


def _summary(b) -> dict:
    m = b.meta
    return {"id": b.id, "name": m.get("name"), "size": m.get("size"), "network_version": m.get("network_version"),
            "source_sha256": m.get("source_sha256"), "compiler": m.get("compiler"), "created": m.get("created"),
            "path": str(b.wasm_path)}


def _print_build(b, as_json: bool) -> None:
    print(json.dumps(_summary(b), indent=2) if as_json else b.id)


def check_c_source(path: Path) -> None:
    """Refuse, naming the file, what is not C source text: a missing file, another kind of file, binary data."""
    if not path.is_file():
        raise BuildError(f"{path}: no such source file")
    data = path.read_bytes()
    if data.startswith(WASM_MAGIC):
        raise BuildError(f"{path}: a WebAssembly binary, not C source: register it with `arena bot register {path}`")
    if path.suffix != ".c":
        raise BuildError(f"{path}: not a C source file (bot build compiles .c files)")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise BuildError(f"{path}: not C source: binary data, not UTF-8 text") from None
    if b"\0" in data:
        raise BuildError(f"{path}: not C source: binary data (NUL bytes)")


_ERROR_LINE = re.compile(r"\berror\b", re.IGNORECASE)


def compile_error_line(e: CompileError) -> str:
    """The compiler's first error as one line: 'bad.c does not compile: bad.c:1:8: error: ... (2 errors)'."""
    head, _, output = str(e).partition("\n")
    what = head.removesuffix(":").removesuffix(" failed")  # "compiling bad.c" / "linking module.wasm"
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    first = next((ln for ln in lines if _ERROR_LINE.search(ln)), lines[0] if lines else "no compiler output")
    count = next((ln for ln in reversed(lines) if re.fullmatch(r"\d+ errors? generated\.", ln)), "")
    more = f" ({count.removesuffix(' generated.')})" if count else ""
    if what.startswith("compiling "):
        return f"{what.removeprefix('compiling ')} does not compile: {first}{more}"
    return f"{what} failed: {first}{more}"


def cmd_bot_build(args: argparse.Namespace) -> int:
    sources = [Path(s) for s in args.sources]
    for s in sources:
        check_c_source(s)
    try:
        b = build_from_source(_root(args), sources, name=args.name, network_version=args.network_version)
    except CompileError as e:
        raise BuildError(compile_error_line(e)) from None
    _print_build(b, args.json)
    return 0


def cmd_bot_register(args: argparse.Namespace) -> int:
    path = Path(args.wasm)
    data = read_wasm_file(path)  # BuildError naming the file: missing, too large, not a WebAssembly binary
    try:
        b = register_build(_root(args), data, name=args.name, network_version=args.network_version)
    except ValueError as e:  # BuildError, BotRejected: the judge's reason
        raise BuildError(f"{path}: {e}") from None
    _print_build(b, args.json)
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
    bot = subparsers.add_parser("bot", help="WebAssembly bots: build, register, list, verify")
    sub = bot.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="compile C to wasm (ziglang), register it, print its id")
    b.add_argument("sources", nargs="+", metavar="SRC.c", help="C source files")
    b.add_argument("--name", help="a name that points at this build, the latest registration wins (default: none)")
    b.add_argument("--network-version", help="the network version compiled in, if any (default: none)")
    b.add_argument("--root", help=ROOT_HELP)
    b.add_argument("--json", action="store_true", help="print the build's metadata as JSON")
    b.set_defaults(func=cmd_bot_build)
    r = sub.add_parser("register", help="register a ready .wasm module (checked by the judge), print its id")
    r.add_argument("wasm", metavar="FILE.wasm", help="a WebAssembly binary")
    r.add_argument("--name", help="a name that points at this build, the latest registration wins (default: none)")
    r.add_argument("--network-version", help="the network version compiled in, if any (default: none)")
    r.add_argument("--root", help=ROOT_HELP)
    r.add_argument("--json", action="store_true", help="print the build's metadata as JSON")
    r.set_defaults(func=cmd_bot_register)
    ls = sub.add_parser("list", help="list registered builds")
    ls.add_argument("--root", help=ROOT_HELP)
    ls.add_argument("--json", action="store_true", help="print the builds as JSON")
    ls.set_defaults(func=cmd_bot_list)
    v = sub.add_parser("verify", help="re-hash a build against its id")
    v.add_argument("ref", metavar="ID_OR_NAME", help="a build id, a unique id prefix or a name")
    v.add_argument("--root", help=ROOT_HELP)
    v.set_defaults(func=cmd_bot_verify)
