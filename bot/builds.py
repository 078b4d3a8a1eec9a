"""Registered builds: a .wasm and its metadata, stored once under its content hash, referenced by id.

    b = register(root, wasm_bytes, name="foil", network_version="none", source_sha256=..., compiler=...)
    b = register(root, Path("mybot.wasm"), name="mine")   # a ready module; errors name the file
    b = build_from_source(root, [Path("bot/c/random_bot.c")], name="random-c")   # compile + register
    verify(root, b.id)            # re-hashes the stored wasm against its id and metadata
    factory(root, "random-c")     # a judge bot factory for play_game (verified first)

Layout under ``root`` (the caller passes it; the project's is ``ARENA_HOME/artifacts/loong/builds``,
resolved by ``ops/loong/cli_bot.py`` from ``ops.store``; bot/ never imports ops)::

    <id>/module.wasm     the module, never rewritten
    <id>/build.json      {id, sha256, size, name, network_version, source_sha256, source_files, compiler,
                          created, abi_version}
    <id>/module-<engine tag>.cwasm   wasmtime's compiled code for one judge configuration (written by
                          ``register`` and ``factory``), so a league compiles each build once, not per process
    <id>/<extra file>    files a builder adds beside the module once (``add_file``; e.g. expert-0's network)
    names/<name>         the id a name points at (the latest registration under that name)

The id is the first 24 hex digits of the wasm's sha256, so the same bytes always get the same id
and an id always names the same bytes: a pool opponent plays identically forever.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bot.abi import ABI_VERSION, MODULE_LIMIT

ID_DIGITS = 24
_NAME = re.compile(r"^[A-Za-z0-9_.+-]{1,80}$")
_ID = re.compile(r"^[0-9a-f]{6,64}$")


class BuildError(ValueError):
    """A build that cannot be registered, found or trusted; the message says why."""


@dataclass(frozen=True)
class Build:
    id: str
    path: Path  # the build's folder
    meta: dict

    @property
    def wasm_path(self) -> Path:
        return self.path / "module.wasm"

    def compiled_path(self, judge) -> Path:
        """Where this build's compiled code for ``judge``'s configuration lives."""
        return self.path / f"module-{judge.engine_tag}.cwasm"

    @property
    def name(self) -> str | None:
        return self.meta.get("name")

    def wasm(self) -> bytes:
        """The module's bytes, checked against the id (raises BuildError if altered)."""
        data = self.wasm_path.read_bytes()
        _check(self, data)
        return data


STORE_SUBPATH = ("loong", "builds")  # under the artifact store root: ArtifactStore(root).root / "loong" / "builds"


def build_id(wasm: bytes) -> str:
    return hashlib.sha256(wasm).hexdigest()[:ID_DIGITS]


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def register(root: Path, wasm: bytes | Path, *, name: str | None = None, network_version: str | None = None,
             source_sha256: str | None = None, source_files: tuple[str, ...] = (), compiler: str | None = None,
             check: bool = True) -> Build:
    """Store ``wasm`` (bytes, or a path to a ready .wasm) once under its id (a second registration of the same
    bytes keeps the first metadata, and only moves ``name`` to it). ``check``: refuse modules the judge would
    refuse (BuildError: 'refused: <the judge's reason>'; a path that cannot be read as a module: BuildError
    naming the file, see ``read_wasm_file``), and keep the judge's compiled code beside the module."""
    data = read_wasm_file(wasm) if isinstance(wasm, str | Path) else bytes(wasm)
    if name is not None and not _NAME.match(name):
        raise BuildError(f"build name {name!r}: use 1-80 letters, digits, '_', '.', '+', '-'")
    if check:
        from bot.judge import BotRejected, default_judge

        try:
            default_judge().load(data)
        except BotRejected as e:
            raise BuildError(f"refused: {e}") from None
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    bid = build_id(data)
    folder = root / bid
    if not (folder / "build.json").exists():
        meta = {
            "id": bid, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "name": name,
            "network_version": network_version, "source_sha256": source_sha256,
            "source_files": list(source_files), "compiler": compiler,
            "created": datetime.now(UTC).isoformat(timespec="seconds"), "abi_version": ABI_VERSION,
        }
        tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{bid}."))
        (tmp / "module.wasm").write_bytes(data)
        (tmp / "build.json").write_text(json.dumps(meta, indent=1) + "\n")
        try:
            os.rename(tmp, folder)
        except OSError:  # registered meanwhile by someone else (same bytes): keep theirs
            for f in tmp.iterdir():
                f.unlink()
            tmp.rmdir()
    if name is not None:
        (root / "names").mkdir(exist_ok=True)
        _write_atomic(root / "names" / name, (bid + "\n").encode())
    b = verify(root, bid)
    if check:  # the compiled code beside the module (the judge's in-memory copy: no second compile)
        judge = default_judge()
        judge.load(data, compiled=b.compiled_path(judge))
    return b


_RESERVED = ("module.wasm", "build.json")


def add_file(b: Build, filename: str, write) -> bool:
    """Put ``filename`` into the build's folder once: ``write(path)`` fills a temporary file that is linked into
    place only where no such file is yet (atomic: readers see no file or the whole one; one already there is kept).
    True when this call added it."""
    if not _NAME.match(filename) or filename.startswith(".") or filename in _RESERVED \
            or filename.startswith("module-"):
        raise BuildError(f"build {b.id}: {filename!r} is not a name for an extra file")
    target = b.path / filename
    if target.exists():
        return False
    tmp = Path(tempfile.mkdtemp(dir=b.path, prefix=f".{filename}."))
    try:
        write(tmp / filename)
        os.link(tmp / filename, target)
        return True
    except FileExistsError:  # added meanwhile by another builder: keep theirs
        return False
    finally:
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()


def read_wasm_file(path: str | Path, module_limit: int = MODULE_LIMIT) -> bytes:
    """The bytes of a ready .wasm file; BuildError naming the file when it is missing, unreadable, over the
    module limit (checked before reading) or not a WebAssembly binary."""
    from bot.abi import WASM_MAGIC

    path = Path(path)
    try:
        if not path.is_file():
            raise BuildError(f"{path}: no such file")
        size = path.stat().st_size
        if size > module_limit:
            raise BuildError(f"{path}: refused: module is {size:,} bytes, over the {module_limit:,}-byte limit")
        data = path.read_bytes()
    except OSError as e:
        raise BuildError(f"{path}: cannot read it ({e.strerror or e})") from None
    if not data.startswith(WASM_MAGIC):
        hint = " (C sources are compiled with `arena bot build`)" if path.suffix in (".c", ".h") else \
            " (WebAssembly text: compile it to a .wasm binary first)" if data.lstrip()[:1] == b"(" else ""
        raise BuildError(f"{path}: not a WebAssembly binary{hint}")
    return data


def build_from_source(root: Path, sources: list[Path], *, name: str | None = None,
                      network_version: str | None = None) -> Build:
    """Compile C sources with the project toolchain and register the result (a bot exports only the ABI's
    functions, so there is no ``exports`` option: the judge refuses other exports)."""
    from bot.toolchain import compile_c

    with tempfile.TemporaryDirectory() as tmp:
        r = compile_c([Path(s) for s in sources], Path(tmp) / "module.wasm")
        return register(root, r.wasm.read_bytes(), name=name, network_version=network_version,
                        source_sha256=r.source_sha256, source_files=r.inputs, compiler=r.compiler)


def resolve(root: Path, ref: str) -> str:
    """An id from a full id, a unique id prefix (6+ hex digits) or a name."""
    root = Path(root)
    if _NAME.match(ref) and (root / "names" / ref).exists():
        return (root / "names" / ref).read_text().strip()
    if _ID.match(ref):
        hits = [p.name for p in root.glob(f"{ref}*") if p.is_dir() and len(p.name) == ID_DIGITS]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise BuildError(f"build id prefix {ref!r} is ambiguous: {sorted(hits)[:5]}")
    raise BuildError(f"no build {ref!r} under {root}")


def _check(b: Build, data: bytes) -> None:
    digest = hashlib.sha256(data).hexdigest()
    if digest[:ID_DIGITS] != b.id or b.meta.get("sha256") != digest or b.meta.get("size") != len(data):
        raise BuildError(f"build {b.id}: module.wasm does not match its id/metadata (sha256 {digest[:24]}...)")


def load(root: Path, ref: str) -> Build:
    """The build named by ``ref`` (id, id prefix or name), metadata read, not yet re-hashed."""
    bid = resolve(root, ref)
    folder = Path(root) / bid
    try:
        meta = json.loads((folder / "build.json").read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise BuildError(f"build {bid}: unreadable build.json ({e})") from None
    if meta.get("id") != bid:
        raise BuildError(f"build {bid}: build.json names id {meta.get('id')!r}")
    return Build(bid, folder, meta)


def verify(root: Path, ref: str) -> Build:
    """Load and re-hash: raises BuildError unless the stored wasm still matches its id and metadata."""
    b = load(root, ref)
    _check(b, b.wasm_path.read_bytes())
    return b


def list_builds(root: Path) -> list[Build]:
    """Every build under ``root``, oldest first."""
    root = Path(root)
    if not root.exists():
        return []
    out = [load(root, p.name) for p in root.iterdir() if p.is_dir() and len(p.name) == ID_DIGITS]
    return sorted(out, key=lambda b: (b.meta.get("created", ""), b.id))


FULL_ID = re.compile(rf"^[0-9a-f]{{{ID_DIGITS}}}$")


def load_id(root: Path, bid: str) -> Build:
    """The build whose id is exactly ``bid`` (24 hex digits), re-hashed; never a name or a prefix, so a name that
    spells an id cannot stand in for it. BuildError when the store does not hold it or it was altered."""
    if not FULL_ID.match(bid):
        raise BuildError(f"build id {bid!r} is not {ID_DIGITS} lowercase hex digits")
    folder = Path(root) / bid
    if not (folder / "build.json").is_file():
        raise BuildError(f"build {bid} is not in the store {root}")
    try:
        meta = json.loads((folder / "build.json").read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise BuildError(f"build {bid}: unreadable build.json ({e})") from None
    if not isinstance(meta, dict) or meta.get("id") != bid:
        raise BuildError(f"build {bid}: build.json names another id")
    b = Build(bid, folder, meta)
    try:
        data = b.wasm_path.read_bytes()
    except OSError as e:
        raise BuildError(f"build {bid}: cannot read module.wasm ({e.strerror or e})") from None
    _check(b, data)
    return b


def denotes(root: Path, player: str, bid: str) -> bool | None:
    """Whether the player name ``player`` ('build:<name | id prefix | name@id prefix>', as leagues and matches name
    builds) stands for build ``bid`` in the store at ``root``: True, False, or None when the store cannot tell
    (not a 'build:' name, or a name it does not know). A name matches where the store's name points at ``bid`` now
    or where ``bid`` was first registered under it (a name may have moved to a newer build since)."""
    if not player.startswith("build:"):
        return None
    ref = player.removeprefix("build:")
    if "@" in ref:
        name, prefix = ref.split("@", 1)
        if not _ID.match(prefix) or not bid.startswith(prefix):
            return False
        return denotes(root, f"build:{name}", bid)
    if _ID.match(ref) and bid.startswith(ref):
        return True
    pointer = Path(root) / "names" / ref
    now = pointer.read_text().strip() if _NAME.match(ref) and pointer.is_file() else None
    try:
        first = json.loads((Path(root) / bid / "build.json").read_text()).get("name")
    except (OSError, json.JSONDecodeError):
        first = None
    if now == bid or first == ref:
        return True
    return False if now is not None or _ID.match(ref) else None


class ReplayBuilds:
    """The build store as ``games.loong.replay.verify_replay`` reads it: a judge bot factory by exact build id
    (``factory``; BuildError when it is missing or altered), whether a player name stands for a build
    (``denotes``) and which recorded reasons are time-limit kills (``limit_kill``)."""

    def __init__(self, root: Path, judge=None) -> None:
        self.root, self.judge = Path(root), judge

    def factory(self, bid: str, name: str):
        from bot.judge import default_judge

        b = load_id(self.root, bid)
        judge = self.judge or default_judge()
        return judge.factory(b.wasm(), name=name, compiled=b.compiled_path(judge))

    def denotes(self, player: str, bid: str) -> bool | None:
        return denotes(self.root, player, bid)

    @staticmethod
    def limit_kill(reason: str) -> str | None:
        """"cpu", "wall" or None: the judge's time-limit kill a recorded reason names (``bot.judge.limit_kill``);
        verification re-plays a CPU-limit kill and names a wall-backstop kill as a check it cannot run."""
        from bot.judge import limit_kill

        return limit_kill(reason)

    def __str__(self) -> str:
        return str(self.root)


def factory(root: Path, ref: str, judge=None, name: str | None = None):
    """A judge bot factory (``play_game``-ready) for a verified build; its compiled code is loaded from (or
    written to) the build's folder, so each build is compiled once per judge configuration."""
    from bot.judge import default_judge

    b = verify(root, ref)
    judge = judge or default_judge()
    return judge.factory(b.wasm(), name=name or b.name or b.id, compiled=b.compiled_path(judge))
