"""expert-0's turn split at the network (expert0_begin / expert0_finish; Expert0.begin / finish): begin, the integer
reference network (bot.int8_expert.forward) and finish reply byte for byte as expert0_turn on recorded games, for
the plain and the searching build; a dragon mixing split and whole turns decides as one that never splits (the stem
cache); a refused observation leaves the fallback reply; misuse is refused in one line."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bot.core_inputs import NO_TAP, network_of_turn
from bot.expert0 import Expert0, expert0_library
from bot.int8_expert import quantize

from .test_expert0 import SECRET, _model

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
UNITS = 1500  # a small search budget: many turns stay fast


@pytest.fixture(scope="module")
def net():
    return quantize(_model())


@pytest.fixture(scope="module")
def native(net, native_cache):
    return expert0_library(net, SECRET, cache=native_cache)


def network(net, t) -> tuple[int, np.ndarray]:
    """forward() on one turn's inputs (bot.core_inputs.network_of_turn)."""
    return network_of_turn(net, t)


def _split_turn(bot: Expert0, net, obs: bytes, twin: Expert0 | None = None) -> tuple[bytes, bytes]:
    """begin, the network (the C scores of ``twin``, a whole-turn dragon that just played ``obs``, or forward()),
    finish; untapped candidates are offered INT32_MAX (never picked, whatever the host says)."""
    t = bot.begin_bytes(obs)
    if t is None:
        return bot.finish_bytes()
    if twin is not None:
        _, value, scores = twin.decision()
        scores = scores.astype(np.int64)
    else:
        value, scores = network(net, t)
    scores[np.frombuffer(t.taps, np.uint8) == NO_TAP] = INT32_MAX
    return bot.finish_bytes(value, scores)


@pytest.mark.parametrize("units", [0, UNITS], ids=["plain", "search"])
def test_split_turn_equals_the_whole_turn(recorded, native, net, units):
    """begin + the network + finish: the reply bytes, the sprint's steps and the decision (chosen, value, scores)
    of expert0_turn at every turn; the C network's scores are forward()'s (every third turn: forward() is the
    network given there, elsewhere the whole turn's scores read back)."""
    turns, searched = 0, 0
    games, dragons, rounds = (4, 3, 60) if units == 0 else (3, 3, 30)
    for _, tracks in recorded[:games]:
        for i, t in sorted(tracks.items())[:dragons]:
            whole = Expert0(native, i, i % 2, 50 + i, search_units=units)
            split = Expert0(native, i, i % 2, 50 + i, search_units=units)
            for k, obs in enumerate(t.obs[:rounds]):
                a = whole.reply_bytes(obs)
                chosen, value, scores = whole.decision()
                b = _split_turn(split, net, obs, None if k % 3 == 0 else whole)
                assert a == b, f"dragon {i}, round {obs[12]}: whole {a} != split {b}"
                assert split.last_code == whole.last_code == 0
                c2, v2, s2 = split.decision()
                assert (c2, v2) == (chosen, value) and np.array_equal(s2, scores)
                if k % 3 == 0:
                    fv, fs = network(net, split.inputs())
                    assert fv == value and np.array_equal(fs, scores)
                if units:
                    s = split.search()
                    assert s.limit == units and s.units <= units
                    searched += s.simulations > 0
                turns += 1
    assert turns >= (200 if units == 0 else 100)
    if units:
        assert searched > turns // 2


def test_a_candidate_without_a_tap_is_never_picked(recorded, native, net):
    """The network's top candidate made tapless in the core's inputs (after begin) and offered INT32_MAX: finish
    takes the best of the others (the first among equals), and its score reads INT32_MIN."""
    import ctypes

    checked = 0
    for _, tracks in recorded[:2]:
        for i, t in sorted(tracks.items())[:2]:
            bot = Expert0(native, i, 0, 4)
            for obs in t.obs[:30]:
                inp = bot.begin_bytes(obs)
                value, scores = network(net, inp)
                top = int(np.argmax(scores))
                lib = native
                taps = ctypes.cast(lib.core_inputs_taps(lib.expert0_inputs(bot._addr)), ctypes.POINTER(ctypes.c_uint8))
                taps[top] = NO_TAP
                want = scores.copy()
                want[top] = INT32_MIN
                offered = scores.copy()
                offered[top] = INT32_MAX
                bot.finish_bytes(value, offered)
                chosen, _, got = bot.decision()
                assert np.array_equal(got, want)
                assert chosen == (int(np.argmax(want)) if (want > INT32_MIN).any() else -1)
                checked += 1
    assert checked > 50


def test_a_dragon_mixing_split_and_whole_turns_decides_as_one_that_never_splits(recorded, native, net):
    """The stem cache is not updated by an external evaluation, and need not be: the turns after split ones (runs of
    one to three) are bit-identical to an unsplit dragon's, with the incremental stem and with the full one."""
    turns = 0
    for _, tracks in recorded[1:4]:
        for i, t in sorted(tracks.items())[:2]:
            ref = Expert0(native, i, 0, 9, use_cache=True)
            mixed = Expert0(native, i, 0, 9, use_cache=True)
            full = Expert0(native, i, 0, 9, use_cache=False)
            for k, obs in enumerate(t.obs):
                a = ref.reply_bytes(obs)
                split = k % 7 in (2, 4, 5, 6)
                b = _split_turn(mixed, net, obs, ref) if split else mixed.reply_bytes(obs)
                c = _split_turn(full, net, obs, ref) if k % 5 == 1 else full.reply_bytes(obs)
                assert a == b == c, f"dragon {i}, turn {k}"
                da, db = ref.decision(), mixed.decision()
                assert da[:2] == db[:2] and np.array_equal(da[2], db[2])
                turns += 1
    assert turns > 150


def test_a_refused_observation_leaves_the_fallback(recorded, native, net):
    """A truncated observation: begin gives None (the core's code), finish the MOVE N reply expert0_turn gives (the
    value and scores offered are ignored), and the dragon's next turns go on as the unsplit one's."""
    _, tracks = recorded[0]
    i, t = sorted(tracks.items())[0]
    whole, split = Expert0(native, i, 0, 3), Expert0(native, i, 0, 3)
    for obs in t.obs[:5]:
        assert whole.reply_bytes(obs) == _split_turn(split, net, obs, whole)
    bad = t.obs[5][:20]
    a = whole.reply_bytes(bad)
    assert split.begin_bytes(bad) is None and split.last_code == whole.last_code != 0
    b = split.finish_bytes(123, np.zeros(0, np.int32))
    assert a == b and b[0][0] == 0 and b[0][2:4] == b"\0\0"  # MOVE N
    assert split.decision()[0] == -1
    for obs in t.obs[5:15]:
        assert whole.reply_bytes(obs) == _split_turn(split, net, obs, whole)


def test_finish_without_scores_is_the_safe_fallback(recorded, native, net):
    """finish() with no evaluation: the fallback move begin wrote (the deepest, then roomiest, not fatal move),
    nothing chosen; the parsed action is that MOVE."""
    from games.loong.actions import Move
    from games.loong.observation import decode

    _, tracks = recorded[0]
    i, t = max(tracks.items(), key=lambda it: len(it[1].obs))
    bot = Expert0(native, i, 0, 3)
    moves = set()
    for obs in t.obs[:20]:
        inp = bot.begin_bytes(obs)
        assert inp is not None
        raw, steps = bot.finish_bytes()
        recs = np.frombuffer(inp.records, np.uint8).reshape(-1, 48)
        key = [int(r[12]) << 9 | int(not r[14] & 1) << 8 | int(r[13]) for r in recs[:4]]
        assert raw[0] == 0 and raw[2] == int(np.argmax(key)) and steps == b""
        chosen, _, scores = bot.decision()
        assert chosen == -1 and (scores == INT32_MIN).all()
        moves.add(raw[2])
    assert len(moves) >= 2
    bot.begin(decode(t.obs[20]))
    action, _ = bot.finish()
    assert isinstance(action, Move)


def test_misuse_is_refused_in_one_line(recorded, native, net):
    _, tracks = recorded[0]
    i, t = sorted(tracks.items())[0]
    bot = Expert0(native, i, 0, 3)
    with pytest.raises(RuntimeError, match="finish without a begin"):
        bot.finish_bytes()
    inp = bot.begin_bytes(t.obs[0])
    with pytest.raises(ValueError, match="value and scores together"):
        bot.finish_bytes(None, np.zeros(inp.count, np.int32))
    inp = bot.begin_bytes(t.obs[1])
    with pytest.raises(ValueError, match=rf"scores must be integers \[{inp.count}\]"):
        bot.finish_bytes(0, np.zeros(inp.count + 1, np.int32))
    inp = bot.begin_bytes(t.obs[2])
    with pytest.raises(ValueError, match="scores outside int32"):
        bot.finish_bytes(0, np.full(inp.count, 2**31, np.int64))
    bot.begin_bytes(t.obs[3])
    bot.finish_bytes()
    with pytest.raises(RuntimeError, match="finish without a begin"):
        bot.finish_bytes()


def test_inputs_of_begin_are_the_whole_turns(recorded, native):
    """begin's TurnInputs are the bytes expert0_turn's network read (planes, records, features, taps, cells)."""
    m, tracks = recorded[2]
    for i, t in sorted(tracks.items())[:2]:
        whole, split = Expert0(native, i, 0, 1), Expert0(native, i, 0, 1)
        for obs in t.obs[:25]:
            whole.reply_bytes(obs)
            inp = split.begin_bytes(obs)
            assert inp.same(whole.inputs()) and not inp.same(dataclasses.replace(inp, facing=inp.facing ^ 1))
            split.finish_bytes(*network_of(whole))


def network_of(bot: Expert0) -> tuple[int, np.ndarray]:
    _, value, scores = bot.decision()
    return value, scores
