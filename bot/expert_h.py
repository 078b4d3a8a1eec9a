"""expert-h, the baseline bot on the expert core (issue 10, item 8; docs/expert-core-route.md).

    build = build_expert_h(root)            # the wasm bot compiled from EXPERT_H_SOURCES, registered as "expert-h"
    factory = expert_h_factory()            # native: ExpertH per dragon, the same C turn (bot/core/bot.c)
    play_game(m, factory, foil_bot, seed)

The same C function ``expert_h_turn`` decides in both builds: the wasm build through the judge's ABI (bot_act), the
native one through ctypes, so native matches decide exactly as the judged bot does (tested byte for byte). The sonar
key is the 128-bit secret of ``bot.team_keys.load_secret`` given to the compiler as two -D words, never written to a
file in git; ``arena bot build`` without them builds a bot that sends no sonar.

Every tunable constant and switch of bot.c is a row of one table, ``bot/core/expert_h_params.h`` (default, range,
meaning; docs/decisions/expert-h.md): ``expert_h_params()`` reads it, and ``expert_h_defines`` (applied to every
``defines=`` of the builds here) refuses a name not in it or a value outside its range.
"""

from __future__ import annotations

import ctypes
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bot.abi import REPLY, REPLY_SIZE, parse_reply
from bot.native import CORE_DIR, load_native
from games.loong.actions import Action, Sonar
from games.loong.observation import Observation, encode

NAME = "expert-h"
NATIVE_NAME = "expert-h-native"
# The bot's sources, its own file first (the one that defines the ABI exports).
EXPERT_H_SOURCES = tuple(CORE_DIR / f for f in ("bot.c", "route.c", "candidates.c", "filters.c", "relay.c", "world.c",
                                                   "sonar.c"))
SPRINT_MAX = 64  # CORE_SPRINT_MAX


def secret_flags(secret: int | None = None) -> tuple[str, ...]:
    """-D flags carrying the sonar secret (default ``load_secret()``: the environment, the key file, else the
    public development secret)."""
    if secret is None:
        from bot.team_keys import load_secret

        secret = load_secret().value
    hi, lo = secret >> 64, secret & ((1 << 64) - 1)
    return (f"-DEXPERT_H_SECRET_HI={hi:#018x}ull", f"-DEXPERT_H_SECRET_LO={lo:#018x}ull")


PARAMS_HEADER = CORE_DIR / "expert_h_params.h"
_ROW = re.compile(r'^\s*EH_PARAM\((EH_\w+),\s*(\w+),\s*(-?\d+),\s*(-?\d+),\s*"([^"]*)"\)')


@dataclass(frozen=True)
class ExpertHParam:
    """One row of bot/core/expert_h_params.h: a tunable constant or switch of bot.c."""

    name: str
    default: int
    min: int
    max: int
    meaning: str


def expert_h_params(header: Path = PARAMS_HEADER) -> dict[str, ExpertHParam]:
    """The parameter table (``EH_PARAM(NAME, default, min, max, "meaning")`` rows of the header), by name, in the
    table's order. A default that names an earlier parameter (EH_CHAMPION_FEED: EH_QUEEN_FEED) is that one's."""
    out: dict[str, ExpertHParam] = {}
    for line in header.read_text().splitlines():
        m = _ROW.match(line)
        if not m:
            continue
        name, default, lo, hi, meaning = m.groups()
        value = out[default].default if default in out else int(default)
        out[name] = ExpertHParam(name, value, int(lo), int(hi), meaning)
    return out


def expert_h_defines(values: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Tuning switches of bot.c as given on a command line (``EH_NAME=INTEGER`` each, a parameter of
    bot/core/expert_h_params.h within its range); ValueError, one line naming the first one refused."""
    params = expert_h_params()
    for d in values:
        name, _, value = d.partition("=")
        if not name.isidentifier() or not name.startswith("EH_") or not value.lstrip("-").isdigit():
            raise ValueError(f"{d!r}: expected EH_NAME=INTEGER")
        p = params.get(name)
        if p is None:
            raise ValueError(f"{d!r}: {name} is not a parameter of bot/core/expert_h_params.h")
        if not p.min <= int(value) <= p.max:
            raise ValueError(f"{d!r}: {name}={int(value)} lies outside its range {p.min}..{p.max}")
    return tuple(values)


def compile_expert_h(out: Path, secret: int | None = None, defines: tuple[str, ...] = ()):
    """The judged bot as a wasm module at ``out`` (bot.toolchain.CompileResult)."""
    from bot.toolchain import compile_c

    return compile_c(list(EXPERT_H_SOURCES), Path(out),
                     extra_flags=(*secret_flags(secret), *(f"-D{d}" for d in expert_h_defines(defines))))


def build_expert_h(root: Path, *, name: str = NAME, secret: int | None = None):
    """Compile expert-h and register it in the build store ``root`` under ``name`` (bot.builds.Build)."""
    from bot.builds import register

    with tempfile.TemporaryDirectory() as tmp:
        r = compile_expert_h(Path(tmp) / "module.wasm", secret)
        return register(root, r.wasm.read_bytes(), name=name, source_sha256=r.source_sha256,
                        source_files=r.inputs, compiler=r.compiler)


def expert_h_library(secret: int | None = None, cache: Path | None = None,
                     defines: tuple[str, ...] = ()) -> ctypes.CDLL:
    """The native build of the same sources (bot.c with -DLOONG_NO_MAIN: no ABI exports), argtypes declared.
    ``defines``: extra ``NAME=VALUE`` parameters of bot.c for tuning builds (checked by ``expert_h_defines``, passed
    as -D)."""
    flags = ("-DLOONG_NO_MAIN", *secret_flags(secret), *(f"-D{d}" for d in expert_h_defines(defines)))
    lib = load_native(list(EXPERT_H_SOURCES), "expert-h", extra_flags=flags, cache=cache)
    vp, u32 = ctypes.c_void_p, ctypes.c_uint32
    lib.expert_h_size.argtypes, lib.expert_h_size.restype = [], u32
    lib.expert_h_init.argtypes, lib.expert_h_init.restype = [vp, ctypes.c_uint64], None
    lib.expert_h_turn.argtypes, lib.expert_h_turn.restype = [vp, vp, u32, vp, vp], u32
    return lib


class ExpertH:
    """One dragon's expert-h on the native build (the Python bot protocol of games/loong/bots.py)."""

    name = NATIVE_NAME

    def __init__(self, lib: ctypes.CDLL, dragon_id: int, team: int, seed: int) -> None:
        self.lib = lib
        self._state = ctypes.create_string_buffer(lib.expert_h_size())
        self._reply = ctypes.create_string_buffer(REPLY_SIZE)
        self._steps = ctypes.create_string_buffer(SPRINT_MAX)
        self.last_code = 0
        lib.expert_h_init(self._state, seed)

    def reply_bytes(self, data: bytes) -> tuple[bytes, bytes]:
        """One turn on encoded observation bytes: (the 40 reply bytes, the sprint's directions)."""
        ctypes.memset(self._reply, 0, REPLY_SIZE)
        self.last_code = self.lib.expert_h_turn(self._state, data, len(data), self._reply, self._steps)
        raw = self._reply.raw
        kind, _, arg = raw[0], raw[1], int.from_bytes(raw[2:4], "little")
        return raw, self._steps.raw[:arg] if kind == 1 else b""

    def act(self, obs: Observation) -> tuple[Action, Sonar | None]:
        raw, steps = self.reply_bytes(encode(obs))
        return parse_reply(raw, lambda ptr, n: steps[:n])


class ExpertHFactory:
    """``factory(dragon_id, team, seed) -> ExpertH``, one shared native library."""

    name = NATIVE_NAME

    def __init__(self, secret: int | None = None, cache: Path | None = None, defines: tuple[str, ...] = ()) -> None:
        self.lib = expert_h_library(secret, cache, defines)

    def __call__(self, dragon_id: int, team: int, seed: int) -> ExpertH:
        return ExpertH(self.lib, dragon_id, team, seed)


def expert_h_factory(secret: int | None = None, cache: Path | None = None,
                     defines: tuple[str, ...] = ()) -> ExpertHFactory:
    return ExpertHFactory(secret, cache, defines)


__all__ = ["EXPERT_H_SOURCES", "ExpertH", "ExpertHFactory", "ExpertHParam", "PARAMS_HEADER", "REPLY",
           "build_expert_h", "compile_expert_h", "expert_h_defines", "expert_h_params",
           "expert_h_factory", "expert_h_library", "secret_flags"]
