"""expert-h's parameter table (bot/core/expert_h_params.h; docs/decisions/expert-h.md): the default build decides
byte for byte as the bot did before the table and the deletions of the measured-off variants (the digests below
were recorded on that code: sha256 over every expert-h turn's reply bytes, in order, of five short games); every
EH_ name bot.c uses is in the table, each default lies in its range and equals the header's #define;
``expert_h_defines`` refuses a name not in the table or a value outside its range with one line naming it."""

from __future__ import annotations

import hashlib
import re

import pytest

from bot.expert_h import ExpertH, expert_h_defines, expert_h_library, expert_h_params
from bot.native import CORE_DIR
from bot.team_keys import DEV_SECRET
from games.loong.bots import play_game
from games.loong.foil import foil_bot
from games.loong.mapgen import generate_map

SECRET = int(DEV_SECRET, 16)

# (side, symmetry, map seed, game seed, expert-h vs foil or vs itself) -> the digest of expert-h's replies
GAMES = {
    (12, "rot", 4, 41, "foil"):
        "71aa9525d04e09807161997c739cd5743cc7fab67365bddeb6176b857a417752",
    (16, "tb", 5, 51, "self"):
        "6e4e776d55c4418cbc595d2914a6cc16d0a2f1f0c62f11c17aeaeddfd63a1bf6",
    (20, "lr", 7, 71, "foil"):
        "12693b2a4f7e6bfdba34c7dee142abb6f16310aa373ac222c3e6f8b22e3b06a2",
    (20, "tb", 9, 91, "self"):
        "acf17566f809e8f9556cafc75080d0e9c7c20f314344747a67626fba1e68eee9",
    (28, "rot", 11, 111, "foil"):
        "a237135705ce3e5bf61c4d3c1e8e2584541538fdcc3fb9a19cd9feb193d85b24",
}
ROUNDS = 150


class _Recorder:
    """A factory of native expert-h dragons whose every reply (the 40 bytes but the sprint pointer, and the sprint's
    directions) goes into one shared sha256, in the order the turns are played."""

    name = "expert-h-recorded"

    def __init__(self, lib, digest) -> None:
        self.lib, self.digest, self.turns = lib, digest, 0

    def __call__(self, dragon_id: int, team: int, seed: int):
        bot = ExpertH(self.lib, dragon_id, team, seed)
        inner, rec = bot.reply_bytes, self

        def reply_bytes(data: bytes) -> tuple[bytes, bytes]:
            raw, steps = inner(data)
            rec.digest.update(bytes([dragon_id & 0xFF]) + raw[:4] + raw[8:] + steps)
            rec.turns += 1
            return raw, steps

        bot.reply_bytes = reply_bytes
        return bot


def _digest(lib, side, sym, map_seed, seed, other) -> tuple[str, int]:
    h = hashlib.sha256()
    m = generate_map(side, side, sym, seed=map_seed)
    a = _Recorder(lib, h)
    b = a if other == "self" else foil_bot
    play_game(m, a, b, seed, ROUNDS, record=False)
    return h.hexdigest(), a.turns


@pytest.fixture(scope="module")
def native(native_cache):
    return expert_h_library(SECRET, cache=native_cache)


@pytest.mark.parametrize("game", sorted(GAMES))
def test_default_build_decides_as_before(native, game):
    digest, turns = _digest(native, *game)
    assert turns > 100
    assert digest == GAMES[game], f"{game}: {digest} ({turns} turns)"


def test_every_eh_name_in_bot_c_is_in_the_table():
    params = expert_h_params()
    # the names bot.c defines for itself and that are no parameters: the meter's marks, the records' array size
    own = {"EH_MARK", "EH_RECORDS", "EH_PART_BELIEF", "EH_PART_RECEIVE", "EH_PART_CANDIDATES", "EH_PART_SCORE",
           "EH_PART_SEND"}
    used = set(re.findall(r"\bEH_[A-Z0-9_]+\b", (CORE_DIR / "bot.c").read_text())) - own
    assert used and used <= set(params), sorted(used - set(params))
    assert {"EH_ROOM_NEED", "EH_REACH_MAX", "EH_WORKERS_FLEE", "EH_LENGTH_MIN", "EH_HEAD_MEMORY"} <= set(params)


def test_the_table_defaults_lie_in_range_and_equal_the_header_defines():
    params = expert_h_params()
    assert len(params) >= 30
    text = (CORE_DIR / "expert_h_params.h").read_text()
    defines = dict(re.findall(r"^#define (EH_\w+) (\w+)$", text, re.M))
    for p in params.values():
        assert p.min <= p.default <= p.max, p
        assert p.meaning, p
        d = defines[p.name]
        assert (params[d].default if d in params else int(d)) == p.default, (p.name, d)
    assert set(defines) == set(params)


@pytest.mark.parametrize("bad, named", [("EH_NOPE=1", "EH_NOPE"), ("EH_QUEEN_CAMPS=2", "EH_QUEEN_CAMPS"),
                                        ("EH_ECHO=6", "EH_ECHO=6"), ("EH_WANDER_TURN=0", "EH_WANDER_TURN=0"),
                                        ("EH_ROOM_NEED=x", "EH_ROOM_NEED=x")])
def test_expert_h_defines_refuses_unknown_names_and_values_out_of_range(bad, named):
    with pytest.raises(ValueError) as e:
        expert_h_defines([bad])
    assert named in str(e.value) and "\n" not in str(e.value)
    assert expert_h_defines(["EH_ECHO=0", "EH_WANDER_TURN=4", "EH_TEAM_CAP=32"]) == (
        "EH_ECHO=0", "EH_WANDER_TURN=4", "EH_TEAM_CAP=32")


def test_the_decision_records_rule_list_is_decides_order():
    """docs/decisions/expert-h.md lists the rules in the order bot.c's decide applies them (tested, so the prose
    cannot drift from the code again)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    code = (root / "bot" / "core" / "bot.c").read_text()
    decide = code[code.index("rule_strike(h, &t)) return code"):]
    in_code = re.findall(r"(rule_[a-z_]+)\(h, &t\)", decide[: decide.index("rule_route(h, &t);") + 20])
    doc = (root / "docs" / "decisions" / "expert-h.md").read_text()
    listed = doc[doc.index("## The policy's rules"):]
    listed = listed[: listed.index("writes the reply, else `rule_route`") + 40]
    in_doc = re.findall(r"`(rule_[a-z_]+)`", listed)
    assert in_code == in_doc and in_code[0] == "rule_strike" and in_code[-1] == "rule_route", (in_code, in_doc)
