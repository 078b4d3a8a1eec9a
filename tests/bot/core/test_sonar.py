"""Sonar frames (bot/core/sonar.c): SPECK64/128, team keys, records, check bits; native == wasm; bounds."""

from __future__ import annotations

import ctypes
import random
from pathlib import Path

import pytest
import wasmtime

from bot.native import load_native
from bot.team_keys import DEV_SECRET, ENV_VAR, KEY_FILE, SonarKeyError, load_secret
from bot.toolchain import compile_c

SONAR_C = Path(__file__).resolve().parents[3] / "bot" / "core" / "sonar.c"
U32, U64 = ctypes.c_uint32, ctypes.c_uint64
MASK64 = (1 << 64) - 1
CHECK_BITS = 7  # SONAR_CHECK_BITS in sonar.h
MAX_RECORDS = 16
SECRET = int(DEV_SECRET, 16)
SECRET_WORDS = (SECRET >> 64, SECRET & MASK64)
SIGHTING, EDGES, SPAWN, INTENT, STATUS = 1, 2, 3, 4, 5
HEADS = (2, 4)
FIELDS = ("kind", "cell", "round", "value", "extra")
SHIMS = ("sonar_test_frames", "sonar_test_digest", "sonar_test_accepted", "sonar_test_buffer",
         "sonar_speck_encrypt")


class Record(ctypes.Structure):
    _fields_ = [(name, U32) for name in FIELDS]


def declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    sigs = {
        "sonar_speck_encrypt": (U64, [U64, U64, U64]),
        "sonar_speck_decrypt": (U64, [U64, U64, U64]),
        "sonar_team_key": (None, [U64, U64, U32, ctypes.POINTER(U64)]),
        "sonar_ctx_size": (ctypes.c_size_t, []),
        "sonar_init": (ctypes.c_int, [ctypes.c_void_p, U64, U64, U32, U32, U32, U32]),
        "sonar_init_secret": (ctypes.c_int, [ctypes.c_void_p, U64, U64, U32, U32, U32, U32]),
        "sonar_payload_bits": (U32, [ctypes.c_void_p]),
        "sonar_record_bits": (U32, [ctypes.c_void_p, ctypes.POINTER(Record), U32]),
        "sonar_encode": (U32, [ctypes.c_void_p, U32, ctypes.POINTER(Record), U32, ctypes.POINTER(ctypes.c_uint8),
                               ctypes.POINTER(U64)]),
        "sonar_decode": (ctypes.c_int32, [ctypes.c_void_p, U64, U32, ctypes.POINTER(Record), U32,
                                          ctypes.POINTER(U32)]),
        "sonar_test_buffer": (ctypes.POINTER(U64), []),
        "sonar_test_frames": (U32, [U64, U64, U32, U32, U32, U64, U32]),
        "sonar_test_digest": (U64, [U64, U64, U32, U32, U32, U64, U32]),
        "sonar_test_accepted": (U32, [U64, U64, U32, U32, U32, U64, U32, U32]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


@pytest.fixture(scope="module")
def lib(tmp_path_factory) -> ctypes.CDLL:
    return declare(load_native([SONAR_C], "sonar", cache=tmp_path_factory.mktemp("sonar-native")))


@pytest.fixture(scope="module")
def ubsan(tmp_path_factory) -> ctypes.CDLL:
    """The same source with the undefined-behaviour sanitizer (bounds, shifts, overflow) trapping."""
    return declare(load_native([SONAR_C], "sonar_ubsan", cache=tmp_path_factory.mktemp("sonar-ubsan"),
                               extra_flags=("-fsanitize=undefined", "-fsanitize-trap=undefined")))


class Wasm:
    """The wasm32 build of sonar.c run under plain wasmtime (not the judge)."""

    def __init__(self, path: Path):
        engine = wasmtime.Engine()
        self.store = wasmtime.Store(engine)
        module = wasmtime.Module(engine, compile_c([SONAR_C], path, exports=SHIMS).wasm.read_bytes())
        self.ex = wasmtime.Instance(self.store, module, []).exports(self.store)

    def __call__(self, name: str, *args: int) -> int:
        signed = [a - (1 << 64) if a >= 1 << 63 else a for a in args]
        return self.ex[name](self.store, *signed)

    def words(self, n: int) -> bytes:
        ptr = self("sonar_test_buffer")
        return bytes(self.ex["memory"].read(self.store, ptr, ptr + 8 * n))


@pytest.fixture(scope="module")
def wasm(tmp_path_factory) -> Wasm:
    return Wasm(tmp_path_factory.mktemp("sonar-wasm") / "sonar.wasm")


def context(lib, team: int, width: int = 64, height: int = 64, check_bits: int = CHECK_BITS, secret=SECRET_WORDS):
    ctx = ctypes.create_string_buffer(lib.sonar_ctx_size())
    assert lib.sonar_init_secret(ctx, *secret, team, width, height, check_bits) == 0
    return ctx


def records(recs: list[tuple[int, ...]]):
    arr = (Record * max(1, len(recs)))()
    for i, r in enumerate(recs):
        arr[i] = Record(*r)
    return arr


def encode(lib, ctx, send_round: int, recs: list[tuple[int, ...]]) -> tuple[int, list[int], int]:
    arr, packed, frame = records(recs), (ctypes.c_uint8 * max(1, len(recs)))(), U64()
    count = lib.sonar_encode(ctx, send_round, arr, len(recs), packed, ctypes.byref(frame))
    return count, list(packed)[:len(recs)], frame.value


def decode(lib, ctx, frame: int, recv_round: int, cap: int = MAX_RECORDS):
    out, sent = (Record * MAX_RECORDS)(), U32(0xDEAD)
    k = lib.sonar_decode(ctx, frame, recv_round, out, cap, ctypes.byref(sent))
    return k, [tuple(getattr(out[i], f) for f in FIELDS) for i in range(min(max(k, 0), cap))], sent.value


def bits(lib, ctx, rec: tuple[int, ...], send_round: int) -> int:
    r = Record(*rec)
    return lib.sonar_record_bits(ctx, ctypes.byref(r), send_round)


# ---- SPECK and keys ----

def test_speck64_128_matches_the_papers_test_vector(lib, wasm):
    # ePrint 2013/404, Appendix C, Speck64/128: key 1b1a1918 13121110 0b0a0908 03020100,
    # plaintext 3b726574 7475432d, ciphertext 8c6fa548 454e028b
    key, plain, cipher = (0x1B1A191813121110, 0x0B0A090803020100), 0x3B7265747475432D, 0x8C6FA548454E028B
    assert lib.sonar_speck_encrypt(*key, plain) == cipher
    assert lib.sonar_speck_decrypt(*key, cipher) == plain
    assert wasm("sonar_speck_encrypt", *key, plain) & MASK64 == cipher
    rng = random.Random(5)
    for _ in range(200):
        k, x = (rng.getrandbits(64), rng.getrandbits(64)), rng.getrandbits(64)
        assert lib.sonar_speck_decrypt(*k, lib.sonar_speck_encrypt(*k, x)) == x


def test_team_keys_are_speck_of_the_label_under_the_secret(lib):
    keys = {}
    for team in (0, 1):
        out = (U64 * 2)()
        lib.sonar_team_key(*SECRET_WORDS, team, out)
        base = (0x534F4E52 << 32) | (2 * team)
        assert out[0] == lib.sonar_speck_encrypt(*SECRET_WORDS, base)
        assert out[1] == lib.sonar_speck_encrypt(*SECRET_WORDS, base | 1)
        keys[team] = (out[0], out[1])
    assert keys[0] != keys[1]
    other = (U64 * 2)()
    lib.sonar_team_key(SECRET_WORDS[0], SECRET_WORDS[1] ^ 1, 0, other)
    assert (other[0], other[1]) != keys[0]


def test_init_refuses_a_bad_board_or_check_width(lib):
    ctx = ctypes.create_string_buffer(lib.sonar_ctx_size())
    for w, h, c in ((0, 10, 7), (10, 0, 7), (257, 256, 7), (64, 64, 0), (64, 64, 33)):
        assert lib.sonar_init(ctx, 1, 2, 0, w, h, c) == -1, (w, h, c)
    assert lib.sonar_init(ctx, 1, 2, 0, 256, 256, 32) == 0
    assert lib.sonar_payload_bits(ctx) == 31


# ---- the frame format, bit by bit ----

def mix64(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def test_a_frame_is_check_parity_and_records_under_the_team_key(lib):
    ctx = context(lib, team=1)
    key = (U64 * 2)()
    lib.sonar_team_key(*SECRET_WORDS, 1, key)
    send = 37
    # sighting of a pearl at cell 100 seen in round 34; status: length 5, queen
    count, packed, frame = encode(lib, ctx, send, [(SIGHTING, 100, 34, 1, 0), (STATUS, 0, 0, 5, 1)])
    assert (count, packed) == (2, [1, 1])
    plain = lib.sonar_speck_decrypt(key[0], key[1], frame)
    c = CHECK_BITS
    payload = "01" + format(100, "012b") + "010" + "00100" + "1110" + "00101" + "1"
    expect_low = (send & 1) << (63 - c) | int(payload.ljust(63 - c, "0"), 2)
    assert plain & ((1 << (64 - c)) - 1) == expect_low
    check = mix64(expect_low ^ mix64((1 << 32) | send)) >> (64 - c)
    assert plain >> (64 - c) == check
    assert bits(lib, ctx, (SIGHTING, 100, 34, 1, 0), send) == 22
    assert bits(lib, ctx, (STATUS, 0, 0, 5, 1), send) == 10
    assert bits(lib, ctx, (EDGES, 7, 0, 0b10_01_00_01, 0), send) == 3 + 12 + 8
    assert bits(lib, ctx, (SPAWN, 7, 40, 12, 0), send) == 3 + 12 + 6 + 6
    assert bits(lib, ctx, (INTENT, 7, 40, 2, 0), send) == 3 + 12 + 3 + 5
    assert bits(lib, ctx, (SIGHTING, 7, 37, 2, 5), send) == 2 + 12 + 3 + 5 + 1  # a head carries its id
    assert decode(lib, ctx, frame, send)[0] == 2
    assert decode(lib, ctx, frame, send + 1) == (2, [(SIGHTING, 100, 34, 1, 0), (STATUS, 0, 0, 5, 1)], send)


# ---- round trips ----

def random_record(rng: random.Random, cells: int, send: int) -> tuple[int, ...]:
    kind = rng.choice((SIGHTING, SIGHTING, SIGHTING, EDGES, SPAWN, INTENT, STATUS))
    cell = rng.randrange(cells)
    if kind == SIGHTING:
        what = rng.randrange(6)
        return kind, cell, send - rng.randrange(min(send, 60) + 1), what, rng.randrange(200) if what in HEADS else 0
    if kind == EDGES:
        return kind, cell, 0, sum(rng.randrange(3) << (2 * d) for d in range(4)), 0
    if kind == SPAWN:
        period = rng.randint(8, 40)
        return kind, cell, send + 1 + rng.randrange(period), period, 0
    if kind == INTENT:
        return kind, cell, send + rng.randrange(40), rng.randrange(64), 0
    return kind, 0, 0, rng.randint(1, 300), rng.randrange(2)


def invalid_record(rng: random.Random, cells: int, send: int) -> tuple[int, ...]:
    return rng.choice([
        (0, 0, 0, 0, 0), (6, 1, 1, 1, 1), (SIGHTING, cells, send, 1, 0), (SIGHTING, 0, send + 1, 1, 0),
        (SIGHTING, 0, send, 6, 0), (SIGHTING, 0, send, 1, 3), (SIGHTING, 0, send, 2, 0x10000),
        (EDGES, cells, 0, 0, 0), (EDGES, 0, 0, 0b11, 0), (EDGES, 0, 0, 0x100, 0), (EDGES, 0, 1, 0, 0),
        (SPAWN, 0, send + 1, 7, 0), (SPAWN, 0, send + 1, 41, 0), (SPAWN, 0, send + 20, 10, 0),
        (INTENT, 0, send - 1, 1, 0) if send else (INTENT, 0, 0, 64, 0), (INTENT, 0, send, 64, 0),
        (STATUS, 0, 0, 0, 0), (STATUS, 0, 0, 8193, 0), (STATUS, 0, 0, 3, 2), (STATUS, 1, 0, 3, 0),
    ])


def test_encode_packs_greedily_by_priority_and_decode_returns_the_records(lib):
    rng = random.Random(20261201)
    contexts = {}
    total_packed = 0
    for trial in range(3000):
        w, h = rng.randint(10, 64), rng.randint(10, 64)
        c = CHECK_BITS if trial % 3 else rng.randint(1, 32)
        if (w, h, c) not in contexts:
            contexts[w, h, c] = context(lib, 0, w, h, c)
        ctx = contexts[w, h, c]
        send = rng.randrange(501)
        valid = [rng.random() < 0.9 for _ in range(rng.randrange(12))]
        recs = [random_record(rng, w * h, send) if ok else invalid_record(rng, w * h, send) for ok in valid]
        count, packed, frame = encode(lib, ctx, send, recs)
        room, expect_flags, expect = 63 - c, [], []
        for r, ok in zip(recs, valid, strict=True):
            size = bits(lib, ctx, r, send)
            assert (size > 0) == ok, r
            if size == 0:
                expect_flags.append(2)
            elif size <= room:
                room -= size
                expect_flags.append(1)
                expect.append(r)
            else:
                expect_flags.append(0)
        assert packed == expect_flags, (trial, recs)
        assert count == len(expect)
        total_packed += count
        for recv in (send, send + 1):
            assert decode(lib, ctx, frame, recv) == (len(expect), expect, send), (trial, recs)
    assert total_packed > 3000  # frames are not trivially empty


def test_invalid_records_are_never_packed(lib):
    ctx = context(lib, 0, 20, 20)
    rng = random.Random(3)
    for send in (0, 1, 77):
        for i in range(60):
            bad = invalid_record(random.Random(i), 400, send)
            good = random_record(rng, 400, send)
            count, packed, frame = encode(lib, ctx, send, [bad, good])
            assert packed == [2, 1] and count == 1, (bad, send)
            assert decode(lib, ctx, frame, send) == (1, [good], send)


def test_a_stale_spawn_moves_forward_by_whole_periods(lib):
    ctx = context(lib, 0)
    _, packed, frame = encode(lib, ctx, 100, [(SPAWN, 9, 55, 10, 0)])  # attempts at 55, 65, ..., 105
    assert packed == [1]
    assert decode(lib, ctx, frame, 100)[1] == [(SPAWN, 9, 105, 10, 0)]
    _, _, frame = encode(lib, ctx, 100, [(SPAWN, 9, 100, 10, 0)])  # an attempt this round: the next is 110
    assert decode(lib, ctx, frame, 101)[1] == [(SPAWN, 9, 110, 10, 0)]


def test_round_zero_and_the_parity_bit(lib):
    ctx = context(lib, 0)
    _, _, frame = encode(lib, ctx, 0, [(STATUS, 0, 0, 3, 0)])
    assert decode(lib, ctx, frame, 0) == (1, [(STATUS, 0, 0, 3, 0)], 0)
    assert decode(lib, ctx, frame, 1) == (1, [(STATUS, 0, 0, 3, 0)], 0)
    _, _, odd = encode(lib, ctx, 1, [(STATUS, 0, 0, 3, 0)])
    assert decode(lib, ctx, odd, 0)[0] == -1  # would have been sent in round -1


# ---- native == wasm ----

@pytest.mark.parametrize("board,c", [((64, 64), CHECK_BITS), ((10, 13), CHECK_BITS), ((33, 20), 12), ((64, 64), 1)])
def test_wasm_and_native_give_identical_frames_and_decodes(lib, wasm, board, c):
    n = 4096
    assert lib.sonar_test_frames(*SECRET_WORDS, *board, c, 99, n) == n
    native = ctypes.string_at(lib.sonar_test_buffer(), 8 * n)
    assert wasm("sonar_test_frames", *SECRET_WORDS, *board, c, 99, n) == n
    assert wasm.words(n) == native
    assert len(set(native[i:i + 8] for i in range(0, 8 * n, 8))) > n * 0.75  # empty frames repeat
    digest = lib.sonar_test_digest(*SECRET_WORDS, *board, c, 4, 5000)
    assert digest != 0 and wasm("sonar_test_digest", *SECRET_WORDS, *board, c, 4, 5000) & MASK64 == digest
    for mode in (1, 2):
        assert wasm("sonar_test_accepted", *SECRET_WORDS, *board, c, 8, 20000, mode) == \
            lib.sonar_test_accepted(*SECRET_WORDS, *board, c, 8, 20000, mode)


# ---- forgeries and noise: a million frames in one native call each ----

MILLION = 1_000_000


@pytest.mark.parametrize("c,n", [(CHECK_BITS, MILLION), (1, MILLION // 4), (4, MILLION // 4)])
def test_foreign_frames_and_noise_are_accepted_at_most_at_the_documented_rate(lib, c, n):
    bound = n / 2**c  # the check bits alone
    documented = bound / 40  # docs/loong-sonar.md: a random payload must also parse (measured ~1/107 of 2^-c)
    assert lib.sonar_test_accepted(*SECRET_WORDS, 64, 64, c, 1, n, 0) == n  # own frames: all
    foreign = lib.sonar_test_accepted(*SECRET_WORDS, 64, 64, c, 2, n, 1)
    noise = lib.sonar_test_accepted(*SECRET_WORDS, 64, 64, c, 3, n, 2)
    replay = lib.sonar_test_accepted(*SECRET_WORDS, 64, 64, c, 4, n, 3)
    assert foreign <= documented and noise <= documented, (foreign, noise, documented)
    assert 0.75 * bound <= replay <= 1.25 * bound, (replay, bound)  # a replay parses: only the check stops it


# ---- malformed input stays inside the buffers ----

def test_decode_writes_at_most_cap_records_and_nothing_after(lib, ubsan):
    for build in (lib, ubsan):
        ctx = context(build, 0, 64, 64, 1)
        status = (STATUS, 0, 0, 1, 0)  # 6 bits: ten fit in 62
        count, packed, frame = encode(build, ctx, 5, [status] * 12)
        assert count == 10 and packed == [1] * 10 + [0, 0]
        for cap in range(0, 12):
            out = (Record * 12)()
            ctypes.memset(out, 0xA5, ctypes.sizeof(out))
            assert build.sonar_decode(ctx, frame, 5, out, cap, None) == 10
            raw = ctypes.string_at(out, ctypes.sizeof(out))
            assert raw[20 * min(cap, 10):] == b"\xa5" * (20 * (12 - min(cap, 10)))
            assert all(tuple(getattr(out[i], f) for f in FIELDS) == status for i in range(min(cap, 10)))
        assert build.sonar_decode(ctx, frame, 5, None, 0, None) == 10
        recs, flags = records([status] * 3), (ctypes.c_uint8 * 8)(*[0xA5] * 8)
        assert build.sonar_encode(ctx, 5, recs, 3, flags, ctypes.byref(U64())) == 3
        assert list(flags) == [1, 1, 1] + [0xA5] * 5
        assert build.sonar_encode(ctx, 5, recs, 0, None, ctypes.byref(U64())) == 0


def test_random_values_and_bit_flips_decode_safely_under_the_sanitizer(ubsan, lib):
    rng = random.Random(11)
    for c in (1, CHECK_BITS, 32):
        ctx = context(ubsan, 0, 64, 64, c)
        for _ in range(20000):
            k, recs, _ = decode(ubsan, ctx, rng.getrandbits(64), rng.randrange(1 << 32))
            assert -1 <= k <= MAX_RECORDS and len(recs) == max(k, 0)
        _, _, frame = encode(ubsan, ctx, 9, [random_record(rng, 4096, 9) for _ in range(4)])
        for bit in range(64):
            k, _, _ = decode(ubsan, ctx, frame ^ (1 << bit), 9)
            assert -1 <= k <= MAX_RECORDS
    assert ubsan.sonar_test_digest(*SECRET_WORDS, 64, 64, CHECK_BITS, 4, 5000) == \
        lib.sonar_test_digest(*SECRET_WORDS, 64, 64, CHECK_BITS, 4, 5000)
    assert ubsan.sonar_test_accepted(*SECRET_WORDS, 13, 11, 2, 6, 50000, 2) == \
        lib.sonar_test_accepted(*SECRET_WORDS, 13, 11, 2, 6, 50000, 2)


# ---- the secret (bot/team_keys.py) ----

def test_the_secret_comes_from_the_variable_then_the_file_then_the_public_default(tmp_path):
    secret_file = tmp_path / KEY_FILE
    assert load_secret(env={}, home=tmp_path).is_development
    assert load_secret(env={}, home=tmp_path).value == SECRET
    secret_file.parent.mkdir()
    secret_file.write_text("  00112233445566778899AABBCCDDEEFF\n")
    s = load_secret(env={}, home=tmp_path)
    assert s.value == 0x00112233445566778899AABBCCDDEEFF and s.source == str(secret_file)
    assert s.words() == (0x0011223344556677, 0x8899AABBCCDDEEFF)
    assert "0011" not in repr(s)
    env = {ENV_VAR: "ffeeddccbbaa99887766554433221100"}
    assert load_secret(env=env, home=tmp_path).value == 0xFFEEDDCCBBAA99887766554433221100
    assert load_secret(env={"ARENA_HOME": str(tmp_path)}).source == str(secret_file)
    secret_file.unlink()
    secret_file.mkdir()
    with pytest.raises(SonarKeyError, match="not a regular file"):
        load_secret(env={}, home=tmp_path)


@pytest.mark.parametrize("value", ["", "abc", "00112233445566778899aabbccddeeff00", "0011223344556677889 aabbccddeeff",
                                   "00112233445566778899aabbccddeefg", "0x112233445566778899aabbccddeeff"])
def test_a_malformed_secret_is_one_line_naming_its_source(tmp_path, value):
    with pytest.raises(SonarKeyError) as e:
        load_secret(env={ENV_VAR: value}, home=tmp_path)
    msg = str(e.value)
    assert msg.startswith(ENV_VAR + ":") and "\n" not in msg and (not value.strip() or value.strip() not in msg)
    secret_file = tmp_path / KEY_FILE
    secret_file.parent.mkdir(exist_ok=True)
    secret_file.write_text(value)
    with pytest.raises(SonarKeyError, match=f"^{secret_file}: the sonar secret must be 32 hex digits"):
        load_secret(env={}, home=tmp_path)
