"""expert-0, the network's top candidate (issue 11, item 6; docs/loong-expert0.md), and expert-0-search, the same
bot with the search in the C core choosing among the network's likeliest candidates (issue 12 item 1;
docs/expert-core-search.md).

    folder = network_sources(net)                   # the generated C of an Int8ExpertNet, cached by its digest
    build = build_expert0(root, net)                # the wasm bot (network compiled in), registered as "expert-0"
    build = build_expert0(root, net, search=True)   # the searching wasm bot, registered as "expert-0-search"
    factory = expert0_factory(net)                  # native: Expert0 per dragon, the same C turn (bot/core/expert0.c)
    factory = expert0_factory(net, search_units=SEARCH_UNITS)   # native, searching with the judge build's budget
    play_game(m, factory, foil_bot, seed)
    inputs = bot.begin(obs); action, sonar = bot.finish(value, scores)   # the turn split at the network (batched)
    player = network_player(root, "expert-0")       # a build's native twin (its network.npz, search units, secret)

The same C function ``expert0_turn`` decides in both builds: the wasm build through the judge's ABI, the native one
through ctypes. Its inputs come from bot/core/inputs.h, the function the replay dataset records with, so the bot
reads exactly the bytes the network was trained on. The sonar key is the team secret given as two -D words
(``bot.expert_h.secret_flags``), never a file in git. A registered build carries its integer network
(``<build>/network.npz``) and a record of what its native twin needs (``<build>/expert0.json``: the search units,
a sha256 of the secret, never the secret).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bot.abi import REPLY_SIZE, parse_reply
from bot.builds import Build
from bot.expert_h import SPRINT_MAX, secret_flags
from bot.int8_expert import Int8ExpertNet, digest, save
from bot.native import CORE_DIR, load_native
from games.loong.actions import Action, Sonar
from games.loong.observation import Observation, encode

NAME = "expert-0"
SEARCH_NAME = "expert-0-search"  # the registered searching build
NATIVE_NAME = "expert-0-native"
# The bot's own file first (the one that defines the ABI exports); the generated expert_net.c is added per network.
EXPERT0_SOURCES = tuple(CORE_DIR / f for f in ("expert0.c", "inputs.c", "planes.c", "candidates.c", "route.c",
                                                  "filters.c", "spawns.c", "symmetry.c", "relay.c", "sonar.c",
                                                  "world.c", "sim.c", "search.c"))
NO_CHOICE = 0xFFFFFFFF  # EXPERT0_NONE
# search.h: CORE_SEARCH_UNITS (the judge build's units a turn: 56M points / CORE_SEARCH_UNIT_POINTS), read from the
# header so the two never disagree.
SEARCH_HEADER = CORE_DIR / "search.h"
SEARCH_FLAGS = ("-DEXPERT0_SEARCH", "-DCORE_SEARCH_CLOCK")  # the searching wasm build (the clock as its guard)
SEARCH_SUMMARY = ("chosen", "units", "simulations", "placed", "dropped", "flags", "phases", "considered", "nodes",
                  "limit", "max_sim_units")
SEARCH_FLAG_NAMES = {1: "ran", 2: "guard_stop", 4: "budget_stop", 8: "only_fatal", 16: "arena_full"}
NETWORK_FILE = "network.npz"  # in a registered build's folder: its integer network (bot.int8_expert.save)
TWIN_FILE = "expert0.json"    # beside it: what the native twin needs to decide as the build does
TWIN_FORMAT = "expert-0-twin/1"
INT32_MIN = -(2**31)


def _search_constant(name: str) -> int:
    import re

    text = SEARCH_HEADER.read_text()
    m = re.search(rf"\b{name} = (\d+),", text)
    if m is None:
        raise RuntimeError(f"{SEARCH_HEADER}: no constant {name}")
    return int(m.group(1))


SEARCH_UNIT_POINTS = _search_constant("CORE_SEARCH_UNIT_POINTS")
SEARCH_UNITS = _search_constant("CORE_SEARCH_POINTS") // SEARCH_UNIT_POINTS


def search_flags(search: bool, search_units: int | None = None) -> tuple[str, ...]:
    """The -D flags of the searching wasm build: the judge's budget, or ``search_units`` a turn (tests)."""
    if not search:
        if search_units is not None:
            raise ValueError("expert-0: search_units given without search=True")
        return ()
    if search_units is None:
        return SEARCH_FLAGS
    if not isinstance(search_units, int) or isinstance(search_units, bool) or not 1 <= search_units < 2**32:
        raise ValueError(f"expert-0: search_units must be an int in 1..2^32-1, got {search_units!r}")
    return (*SEARCH_FLAGS, f"-DEXPERT0_SEARCH_UNITS={search_units}u")


def _resolve_secret(secret: int | None) -> int:
    """The secret a build compiles with: ``secret``, or (None) ``bot.team_keys.load_secret`` as secret_flags reads."""
    if secret is None:
        from bot.team_keys import load_secret

        return load_secret().value
    if not isinstance(secret, int) or isinstance(secret, bool) or not 0 <= secret < 2**128:
        raise ValueError("expert-0: the sonar secret must be an int in 0..2^128-1")
    return secret


def secret_sha256(secret: int) -> str:
    """What a build records of its sonar secret: a domain-separated sha256 of its 16 bytes (never the secret)."""
    return hashlib.sha256(b"arena expert-0 sonar secret/1\0" + secret.to_bytes(16, "big")).hexdigest()


def network_sources(net: Int8ExpertNet, cache: Path | None = None) -> Path:
    """The folder holding the network's generated expert_net.c, expert_net_config.h and weight blob
    (bot.codegen_expert.source_folder: by shape and digest), generated once and moved into place whole, so parallel
    builders never read a half-written file."""
    from bot.codegen_expert import generate_expert, source_folder

    folder = source_folder(net, cache)
    if (folder / "expert_net.c").exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        generate_expert(net).write(tmp)
        os.rename(tmp, folder)
    except OSError:
        if not (folder / "expert_net.c").exists():
            raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return folder


def compile_expert0(net: Int8ExpertNet, out: Path, secret: int | None = None, cache: Path | None = None, *,
                    search: bool = False, search_units: int | None = None):
    """The judged bot with ``net`` compiled in, as a wasm module at ``out`` (bot.toolchain.CompileResult);
    ``cache``: bot.native's cache folder (the generated sources go beside it). ``search``: the searching build
    (CORE_SEARCH_UNITS a turn, or ``search_units``; the judge's clock as its guard)."""
    from bot.toolchain import compile_c

    flags = search_flags(search, search_units)
    folder = network_sources(net, cache)
    return compile_c([*EXPERT0_SOURCES, folder / "expert_net.c"], Path(out), include=(CORE_DIR, folder),
                     extra_flags=(*secret_flags(secret), *flags))


def build_expert0(root: Path, net: Int8ExpertNet, *, name: str | None = None, secret: int | None = None,
                  cache: Path | None = None, search: bool = False, search_units: int | None = None):
    """Compile expert-0 with ``net`` and register it in the build store ``root`` under ``name`` (default
    ``expert-0``, or ``expert-0-search`` for the searching build); the build's ``network_version`` is the network's
    digest (bot.builds.Build). The build's folder gets the network (``network.npz``) and the native twin's record
    (``expert0.json``: search units, the secret's sha256), each written once (``network_player`` reads them)."""
    from bot.builds import add_file, register

    secret = _resolve_secret(secret)
    name = name or (SEARCH_NAME if search else NAME)
    with tempfile.TemporaryDirectory() as tmp:
        r = compile_expert0(net, Path(tmp) / "module.wasm", secret, cache, search=search, search_units=search_units)
        b = register(root, r.wasm.read_bytes(), name=name, network_version=digest(net),
                     source_sha256=r.source_sha256, source_files=r.inputs, compiler=r.compiler)
    record = {"format": TWIN_FORMAT, "network": NETWORK_FILE, "network_version": digest(net),
              "search_units": (SEARCH_UNITS if search_units is None else search_units) if search else 0,
              "search_clock": search, "secret_sha256": secret_sha256(secret)}
    add_file(b, NETWORK_FILE, lambda path: save(net, path))
    add_file(b, TWIN_FILE, lambda path: path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n"))
    return b


def expert0_library(net: Int8ExpertNet, secret: int | None = None, cache: Path | None = None) -> ctypes.CDLL:
    """The native build of the same sources (expert0.c with -DLOONG_NO_MAIN: no ABI exports), argtypes declared."""
    from bot.codegen_expert import NATIVE_NET_FLAGS

    folder = network_sources(net, cache)
    flags = ("-DLOONG_NO_MAIN", *secret_flags(secret), *NATIVE_NET_FLAGS, f"-I{folder}")
    lib = load_native([*EXPERT0_SOURCES, folder / "expert_net.c"], "expert-0", extra_flags=flags, cache=cache)
    vp, u32 = ctypes.c_void_p, ctypes.c_uint32
    for fn, args, res in (("expert0_size", [], u32), ("expert0_init", [vp, ctypes.c_uint64, u32], None),
                          ("expert0_init_search", [vp, ctypes.c_uint64, u32, u32], None),
                          ("expert0_turn", [vp, vp, u32, vp, vp], u32),
                          ("expert0_begin", [vp, vp, u32, vp, vp], u32),
                          ("expert0_finish", [vp, vp, u32, ctypes.c_int32, vp, vp, vp], None),
                          ("expert0_search", [vp], vp), ("expert0_network_pick", [vp], ctypes.c_int32),
                          ("core_search_set", [vp, u32, u32], None),
                          ("core_search_tune", [vp, u32, u32, u32, u32, u32, u32], None),
                          ("core_search_summary", [vp, vp], u32), ("core_search_stats", [vp, vp, u32], u32),
                          ("expert0_network_version", [], ctypes.c_char_p),
                          ("expert0_network_shape", [], ctypes.c_char_p)):
        getattr(lib, fn).argtypes, getattr(lib, fn).restype = args, res
    for fn, res in (("expert0_inputs", vp), ("expert_net_crop", vp), ("expert_net_overview", vp),
                    ("expert_net_scalars", vp), ("core_inputs_count", u32), ("core_inputs_facing", u32),
                    ("core_inputs_records", vp), ("core_inputs_features", vp), ("core_inputs_taps", vp),
                    ("core_inputs_cells", vp)):
        getattr(lib, fn).argtypes, getattr(lib, fn).restype = [] if fn.startswith("expert_net") else [vp], res
    version = lib.expert0_network_version().decode()
    if version != digest(net):
        raise RuntimeError(f"expert-0 native build: network {version[:16]}... compiled in, {digest(net)[:16]}... "
                           "asked for")
    return lib


def _check_units(search_units: int) -> int:
    if not isinstance(search_units, int) or isinstance(search_units, bool) or not 0 <= search_units < 2**32:
        raise ValueError(f"expert-0: search_units must be an int in 0..2^32-1 (0: off), got {search_units!r}")
    return search_units


@dataclass(frozen=True)
class SearchResult:
    """The last turn's search (bot/core/search.h, core_search_summary and core_search_stats): ``chosen`` the
    candidate the search chose (-1: it did not choose), ``network_pick`` the network's own (-1 none), the units used
    of ``limit``, the simulations finished, the sampled dragons placed and dropped, ``flags`` (SEARCH_FLAG_NAMES),
    the halving phases run, the tree's nodes, the dearest simulation's units, and per considered candidate
    (candidate, visits, mean value Q16, logit Q16, the phase it left or 0)."""

    chosen: int
    network_pick: int
    units: int
    limit: int
    simulations: int
    placed: int
    dropped: int
    flags: int
    phases: int
    nodes: int
    max_sim_units: int
    considered: tuple[tuple[int, int, int, int, int], ...]

    def flag_names(self) -> tuple[str, ...]:
        return tuple(n for b, n in SEARCH_FLAG_NAMES.items() if self.flags & b)


@dataclass(frozen=True)
class SearchTune:
    """The search's constants compared at equal cost on the native build (core_search_tune; docs/expert-core-search.md,
    "Tuning"): C_SCALE, the candidates the root considers, rollout rounds, the standing's weights. The defaults are
    the judged build's (search.h)."""

    c_scale: float = 3.0
    considered: int = 4
    rollout_rounds: int = 10
    weights: tuple[int, int, int] = (1, 1, 1)
    mode: int = 3  # CORE_SEARCH_MODE_*: 1 our dragon follows its candidate's route in the rollouts, 2 the tree

    def __post_init__(self) -> None:
        if not 0 <= self.c_scale <= 256:
            raise ValueError(f"search tune: c_scale must be in 0..256, got {self.c_scale!r}")
        if not 1 <= self.considered <= 16:
            raise ValueError(f"search tune: considered must be in 1..16, got {self.considered!r}")
        if not 0 <= self.rollout_rounds <= 32:
            raise ValueError(f"search tune: rollout_rounds must be in 0..32, got {self.rollout_rounds!r}")
        if len(self.weights) != 3 or not all(0 <= w <= 1024 for w in self.weights) or not any(self.weights):
            raise ValueError(f"search tune: weights must be three ints in 0..1024, not all 0, got {self.weights!r}")
        if self.mode not in range(4):
            raise ValueError(f"search tune: mode must be in 0..3, got {self.mode!r}")

    def apply(self, lib: ctypes.CDLL, search, units: int) -> None:
        """Set these constants on one dragon's search (``search``: its core_search) of ``units`` a turn."""
        lib.core_search_set(search, units, self.considered)
        lib.core_search_tune(search, round(self.c_scale * 65536), self.rollout_rounds, *self.weights, self.mode)


class Expert0:
    """One dragon's expert-0 on the native build (the Python bot protocol of games/loong/bots.py); with
    ``search_units`` > 0 the search runs every turn in that many units (SEARCH_UNITS: the judge build's)."""

    name = NATIVE_NAME

    def __init__(self, lib: ctypes.CDLL, dragon_id: int, team: int, seed: int, use_cache: bool = True,
                 search_units: int = 0, tune: SearchTune | None = None) -> None:
        self.lib = lib
        self._state = ctypes.create_string_buffer(lib.expert0_size() + 16)
        self._addr = (ctypes.addressof(self._state) + 15) & ~15  # the stem cache is 16-byte aligned
        self._reply = ctypes.create_string_buffer(REPLY_SIZE)
        self._steps = ctypes.create_string_buffer(SPRINT_MAX)
        self.last_code = 0
        self._begun: bytes | None = None  # the observation of a turn begun and not yet finished
        self._count = 0
        lib.expert0_init_search(self._addr, seed, int(use_cache), _check_units(search_units))
        if tune is not None:
            tune.apply(lib, lib.expert0_search(self._addr), search_units)

    def reply_bytes(self, data: bytes) -> tuple[bytes, bytes]:
        """One turn on encoded observation bytes: (the 40 reply bytes, the sprint's directions)."""
        ctypes.memset(self._reply, 0, REPLY_SIZE)
        self._begun = None
        self.last_code = self.lib.expert0_turn(self._addr, data, len(data), self._reply, self._steps)
        return self._read_reply()

    def _read_reply(self) -> tuple[bytes, bytes]:
        raw = self._reply.raw
        kind, arg = raw[0], int.from_bytes(raw[2:4], "little")
        return raw, self._steps.raw[:arg] if kind == 1 else b""

    def act(self, obs: Observation) -> tuple[Action, Sonar | None]:
        raw, steps = self.reply_bytes(encode(obs))
        return parse_reply(raw, lambda ptr, n: steps[:n])

    def begin_bytes(self, data: bytes):
        """The turn up to the network (expert0_begin) on encoded observation bytes: its inputs
        (bot.core_inputs.TurnInputs), or None when the core refused the observation (``last_code``)."""
        data = bytes(data)
        ctypes.memset(self._reply, 0, REPLY_SIZE)
        self.last_code = self.lib.expert0_begin(self._addr, data, len(data), self._reply, self._steps)
        self._begun = data  # finish reads the same observation
        self._count = 0
        if self.last_code != 0:
            return None
        t = self.inputs()
        self._count = t.count
        return t

    def begin(self, obs: Observation):
        """``begin_bytes`` on an Observation."""
        return self.begin_bytes(encode(obs))

    def finish_bytes(self, value: int | None = None, scores: np.ndarray | None = None) -> tuple[bytes, bytes]:
        """The rest of the turn begun (expert0_finish) from the network's ``value`` and ``scores`` int [n]
        (candidates without a tap are never picked); both None: the fallback reply as it stands. (reply, steps)."""
        if self._begun is None:
            raise RuntimeError("expert-0: finish without a begin (or the turn is finished already)")
        data, self._begun = self._begun, None
        if (value is None) != (scores is None):
            raise ValueError("expert-0 finish: give value and scores together, or neither (the fallback)")
        ptr = None
        if scores is not None and self.last_code == 0:
            arr = np.asarray(scores)
            if arr.shape != (self._count,) or arr.dtype.kind not in "iu":
                raise ValueError(f"expert-0 finish: scores must be integers [{self._count}], got {arr.dtype}"
                                 f"{list(arr.shape)}")
            if arr.size and (arr.min() < INT32_MIN or arr.max() >= 2**31):
                raise ValueError("expert-0 finish: scores outside int32")
            if not isinstance(value, int | np.integer) or not INT32_MIN <= int(value) < 2**31:
                raise ValueError(f"expert-0 finish: value must be an int32, got {value!r}")
            buf = np.ascontiguousarray(arr, np.int32)
            ptr = buf.ctypes.data
        self.lib.expert0_finish(self._addr, data, len(data), int(value or 0), ptr, self._reply, self._steps)
        return self._read_reply()

    def finish(self, value: int | None = None, scores: np.ndarray | None = None) -> tuple[Action, Sonar | None]:
        """``finish_bytes`` parsed: (action, sonar)."""
        raw, steps = self.finish_bytes(value, scores)
        return parse_reply(raw, lambda ptr, n: steps[:n])

    def inputs(self):
        """The last turn's inputs as the network read them (bot.core_inputs.TurnInputs)."""
        from bot.core_inputs import FEATURES, RECORD, TurnInputs
        from bot.core_planes import CROP_BYTES, OVERVIEW_BYTES, SCALARS

        lib, s = self.lib, self.lib.expert0_inputs(self._addr)
        n = lib.core_inputs_count(s)
        cells = np.ctypeslib.as_array(ctypes.cast(lib.core_inputs_cells(s), ctypes.POINTER(ctypes.c_uint16)),
                                      (17 * 17,)).copy()
        return TurnInputs(ctypes.string_at(lib.expert_net_crop(), CROP_BYTES),
                          ctypes.string_at(lib.expert_net_overview(), OVERVIEW_BYTES),
                          ctypes.string_at(lib.expert_net_scalars(), SCALARS),
                          ctypes.string_at(lib.core_inputs_records(s), RECORD * n),
                          ctypes.string_at(lib.core_inputs_features(s), FEATURES * n),
                          ctypes.string_at(lib.core_inputs_taps(s), n), cells, lib.core_inputs_facing(s))

    def decision(self) -> tuple[int, int, np.ndarray]:
        """The last turn's (chosen candidate or -1, value, scores int32 [n]; INT32_MIN where a candidate has no tap)."""
        lib = self.lib
        if not hasattr(lib, "_expert0_fields"):
            lib.expert0_last.argtypes, lib.expert0_last.restype = [ctypes.c_void_p, ctypes.c_void_p], ctypes.c_void_p
            lib._expert0_fields = True
        head = (ctypes.c_int32 * 3)()
        ptr = lib.expert0_last(self._addr, head)
        chosen, value, n = head[0], head[1], head[2]
        scores = np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_int32)), (max(n, 1),))[:n].copy()
        return (-1 if chosen == -1 else chosen), value, scores

    def search(self) -> SearchResult:
        """The last turn's search (its figures are zero and ``chosen`` -1 when the search is off)."""
        lib = self.lib
        s = lib.expert0_search(self._addr)
        head = (ctypes.c_uint32 * len(SEARCH_SUMMARY))()
        lib.core_search_summary(s, head)
        f = dict(zip(SEARCH_SUMMARY, head, strict=True))
        stats = (ctypes.c_uint32 * (5 * 16))()
        k = lib.core_search_stats(s, stats, 16)
        rows = tuple((stats[5 * i], stats[5 * i + 1], stats[5 * i + 2], ctypes.c_int32(stats[5 * i + 3]).value,
                      stats[5 * i + 4]) for i in range(k))
        chosen = -1 if f["chosen"] == NO_CHOICE else f["chosen"]
        return SearchResult(chosen, lib.expert0_network_pick(self._addr), f["units"], f["limit"], f["simulations"],
                            f["placed"], f["dropped"], f["flags"], f["phases"], f["nodes"], f["max_sim_units"], rows)


class Expert0Factory:
    """``factory(dragon_id, team, seed) -> Expert0``, one shared native library for one network; ``search_units``
    > 0: every dragon searches with that many units a turn."""

    name = NATIVE_NAME

    def __init__(self, net: Int8ExpertNet, secret: int | None = None, cache: Path | None = None,
                 use_cache: bool = True, search_units: int = 0, tune: SearchTune | None = None) -> None:
        self.search_units = _check_units(search_units)
        self.tune = tune
        self.lib = expert0_library(net, secret, cache)
        self.version = digest(net)
        self.use_cache = use_cache

    def __call__(self, dragon_id: int, team: int, seed: int) -> Expert0:
        return Expert0(self.lib, dragon_id, team, seed, self.use_cache, self.search_units, self.tune)


def expert0_factory(net: Int8ExpertNet, secret: int | None = None, cache: Path | None = None,
                    use_cache: bool = True, search_units: int = 0, tune: SearchTune | None = None) -> Expert0Factory:
    return Expert0Factory(net, secret, cache, use_cache, search_units, tune)


@dataclass(frozen=True)
class NetworkBuild:
    """A registered expert-0 build with what its native twin needs: the bot.builds.Build, its integer network, the
    search units a turn (0: the plain bot) and the secret it was compiled with (never shown in the repr)."""

    build: Build
    net: Int8ExpertNet
    search_units: int
    secret: int = field(repr=False)

    def factory(self, cache: Path | None = None) -> Expert0Factory:
        """The native Expert0Factory that plays as the build does."""
        return Expert0Factory(self.net, self.secret, cache, use_cache=True, search_units=self.search_units)


def network_player(root: Path, ref: str, secret: int | None = None) -> NetworkBuild | None:
    """The native twin of build ``ref`` under ``root`` (``secret``: default ``load_secret()``, checked against the
    build's record); None for a build without expert0.json or network.npz. BuildError naming the file when the
    network's digest is not the build's network_version, the record is damaged, or the secret differs."""
    from bot.builds import BuildError, verify
    from bot.int8_expert import load

    b = verify(root, ref)
    record_path, network_path = b.path / TWIN_FILE, b.path / NETWORK_FILE
    if not record_path.is_file() or not network_path.is_file():
        return None
    try:
        record = json.loads(record_path.read_text())
        units = record["search_units"]
        if record.get("format") != TWIN_FORMAT or not isinstance(record.get("secret_sha256"), str):
            raise KeyError("format")
        _check_units(units)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BuildError(f"{record_path}: not an expert-0 twin record ({type(e).__name__}: {e})") from None
    try:
        net = load(network_path)
    except ValueError as e:
        raise BuildError(str(e)) from None
    want = b.meta.get("network_version")
    if digest(net) != want or record.get("network_version") != want:
        raise BuildError(f"{network_path}: network {digest(net)[:16]}... is not the build's network_version "
                         f"{str(want)[:16]}...")
    secret = _resolve_secret(secret)
    if secret_sha256(secret) != record["secret_sha256"]:
        raise BuildError(f"{record_path}: build {b.id} was compiled with another sonar secret than the one given")
    return NetworkBuild(b, net, units, secret)


__all__ = ["EXPERT0_SOURCES", "NETWORK_FILE", "SEARCH_NAME", "SEARCH_UNITS", "SEARCH_UNIT_POINTS", "TWIN_FILE",
           "Expert0", "Expert0Factory", "NetworkBuild", "SearchResult", "SearchTune", "build_expert0",
           "compile_expert0", "expert0_factory", "expert0_library", "network_player", "network_sources",
           "search_flags", "secret_sha256"]
