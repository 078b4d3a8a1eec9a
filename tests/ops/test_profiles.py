"""ops/profiles.py: one way from a profile name plus overrides to a typed config, every bad profile, field or value
one line naming it; and every work step resolves its profiles through it."""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass

import pytest

from ops.profiles import ProfileError, Profiles, given, override


@dataclass(frozen=True)
class Toy:
    games: int = 8
    rate: float = 0.5
    name: str = "toy"
    gumbel: bool = True
    sizes: tuple[int, ...] = (20,)
    pair: tuple[int, int] = (1, 2)
    limit: float | None = None


class ToyError(ValueError):
    pass


TOY = Profiles("toy", Toy, {"test": dict(games=2, sizes=(12,)), "small": {}, "full": dict(games=64, gumbel=False)},
               ToyError)


def one_line(e: pytest.ExceptionInfo) -> str:
    line = str(e.value)
    assert "\n" not in line
    return line


def test_profiles_resolve_to_the_table_over_the_defaults():
    assert TOY.names == ("test", "small", "full")
    assert TOY.resolve("small") == Toy()
    assert TOY.resolve("test") == Toy(games=2, sizes=(12,))
    assert TOY.resolve("full", rate=1, limit=0.25) == Toy(games=64, gumbel=False, rate=1, limit=0.25)
    assert TOY.resolve("test", sizes=[4, 5]).sizes == [4, 5]  # a list fits a tuple field (as before: not converted)
    assert TOY.configs() == {"test": Toy(games=2, sizes=(12,)), "small": Toy(), "full": Toy(games=64, gumbel=False)}


def test_an_unknown_profile_is_one_line_in_the_modules_error():
    with pytest.raises(ToyError) as e:
        TOY.resolve("huge")
    assert one_line(e) == "profile: 'huge' is not one of test, small, full"
    with pytest.raises(ProfileError) as e:  # without an error class of its own: ProfileError, a ValueError
        Profiles("toy", Toy, {"test": {}}).resolve("small")
    assert one_line(e) == "profile: 'small' is not one of test"


def test_an_unknown_field_is_one_line_naming_it():
    with pytest.raises(ToyError) as e:
        TOY.resolve("test", colour="red")
    assert one_line(e) == "colour: not a toy config field (known: games, gumbel, limit, name, pair, rate, sizes)"


@pytest.mark.parametrize("overrides,line", [
    (dict(games="3"), "games: '3' is not an int"),
    (dict(games=2.5), "games: 2.5 is not an int"),
    (dict(games=True), "games: True is not an int"),
    (dict(rate="fast"), "rate: 'fast' is not a float"),
    (dict(name=3), "name: 3 is not a str"),
    (dict(gumbel=1), "gumbel: 1 is not a bool"),
    (dict(sizes=(20, "x")), "sizes: (20, 'x') is not a tuple[int, ...]"),
    (dict(pair=(1, 2, 3)), "pair: (1, 2, 3) is not a tuple[int, int]"),
    (dict(limit="none"), "limit: 'none' is not a float | None"),
])
def test_a_value_of_the_wrong_type_is_one_line_naming_field_and_value(overrides, line):
    with pytest.raises(ToyError) as e:
        TOY.resolve("small", **overrides)
    assert one_line(e) == line


def test_an_int_fits_a_float_field_and_none_an_optional_one():
    assert TOY.resolve("small", rate=1, limit=None) == Toy(rate=1)


def test_command_line_pairs_are_parsed_by_the_fields_type():
    cfg = TOY.parse("test", ["games=4", "rate=0.25", "name=big", "gumbel=no", "sizes=20, 28", "pair=3,4",
                             "limit=0.5"])
    assert cfg == Toy(games=4, rate=0.25, name="big", gumbel=False, sizes=(20, 28), pair=(3, 4), limit=0.5)
    assert TOY.parse("full", ["limit=none"]).limit is None
    for word, value in (("true", True), ("1", True), ("Yes", True), ("on", True), ("false", False), ("0", False),
                        ("no", False), ("off", False)):
        assert TOY.parse("small", [f"gumbel={word}"]).gumbel is value
    assert TOY.parse("small", [], games=5) == Toy(games=5)  # overrides first
    assert TOY.parse("small", ["games=6"], games=5).games == 6  # the pairs after them


@pytest.mark.parametrize("pairs,line", [
    (["colour=red"], "colour: not a toy config field (known: games, gumbel, limit, name, pair, rate, sizes)"),
    (["games=many"], "games: 'many' is not an int"),
    (["games=2.5"], "games: '2.5' is not an int"),
    (["gumbel=maybe"], "gumbel: 'maybe' is not a bool"),
    (["rate=fast"], "rate: 'fast' is not a float"),
    (["sizes=20,x"], "sizes: '20,x' is not a tuple[int, ...]"),
    (["pair=1"], "pair: '1' is not a tuple[int, int]"),
    (["games"], "'games': not FIELD=VALUE"),
])
def test_bad_command_line_pairs_are_one_line(pairs, line):
    with pytest.raises(ToyError) as e:
        TOY.parse("small", pairs)
    assert one_line(e) == line
    with pytest.raises(ToyError) as e:
        TOY.parse("huge", pairs)  # the profile first
    assert one_line(e) == "profile: 'huge' is not one of test, small, full"


def test_override_checks_a_config_instance_the_same_way():
    assert override(Toy(), "toy", ToyError, games=3) == Toy(games=3)
    with pytest.raises(ToyError) as e:
        override(Toy(), "toy", ToyError, colour=1)
    assert one_line(e).startswith("colour: not a toy config field (known: ")
    with pytest.raises(ProfileError, match=r"^games: 'x' is not an int$"):
        override(Toy(), "toy", games="x")


def test_a_bad_table_fails_at_definition_naming_the_profile():
    with pytest.raises(ProfileError, match=r"^toy profile full: colour: not a toy config field"):
        Profiles("toy", Toy, {"full": dict(colour=1)})
    with pytest.raises(ProfileError, match=r"^toy profile test: games: '2' is not an int$"):
        Profiles("toy", Toy, {"test": dict(games="2")})
    with pytest.raises(TypeError, match="dataclass"):
        Profiles("toy", dict, {})


def test_a_missing_required_field_is_one_line():
    @dataclass(frozen=True)
    class Needs:
        sizes: tuple[int, ...]
        seed: int = 0

    with pytest.raises(ProfileError) as e:
        Profiles("needs", Needs, {"test": {}}).resolve("test")
    assert one_line(e).startswith("needs config: ") and "sizes" in str(e.value)


# -- every work step resolves through ops.profiles -----------------------------------------------------------------
# module, its Profiles, its own resolver (None: only the Profiles), the error class callers catch
STEPS = [
    ("ops.loong.student", "profile_config", "StudentError"),
    ("ops.loong.value_fit", "profile_config", "ValueFitError"),
    ("ops.loong.teacher", "teacher_config", "TeacherConfigError"),
    ("ops.loong.teacher_targets", "profile_config", "TargetsError"),
    ("ops.loong.belief", None, None),
    ("ops.celldiv.ppo", "config_for", None),
    ("ops.celldiv.teacher", None, None),
    ("ops.celldiv.distill", None, None),
    ("ops.loong.kickstart", None, "KickstartError"),
    ("ops.loong.selfplay", None, "SelfPlayConfigError"),
    ("ops.loong.dataset", None, "DatasetError"),
]


@pytest.mark.parametrize("module,resolver,error", STEPS, ids=[s[0] for s in STEPS])
def test_every_work_step_resolves_its_profiles_through_ops_profiles(module, resolver, error):
    mod = importlib.import_module(module)
    profiles = mod.CONFIG_PROFILES
    assert isinstance(profiles, Profiles)
    assert profiles.names == ("test", "small", "full")
    err = getattr(mod, error) if error else ProfileError
    assert profiles.error is err and issubclass(err, ValueError)
    resolve = getattr(mod, resolver) if resolver else profiles.resolve
    for name in profiles.names:
        cfg = resolve(name)
        assert isinstance(cfg, profiles.config) and cfg == profiles.resolve(name)
        if hasattr(mod, "PROFILES") and dataclasses.is_dataclass(next(iter(mod.PROFILES.values()))):
            assert mod.PROFILES[name] == cfg  # the celldiv steps' PROFILES: the resolved configs
    with pytest.raises(err) as e:
        resolve("huge")
    assert one_line(e) == "profile: 'huge' is not one of test, small, full"
    with pytest.raises(err) as e:
        resolve("test", colour=1)
    assert one_line(e).startswith(f"colour: not a {profiles.what} config field (known: ")
    with pytest.raises(err) as e:
        resolve("test", seed="1")
    assert one_line(e) == "seed: '1' is not an int"


def test_the_kickstart_overrides_go_through_ops_profiles():
    from ops.loong import kickstart as kick

    base = kick.KickstartConfig()
    assert kick.with_overrides(base, epochs=5) == dataclasses.replace(base, epochs=5)
    with pytest.raises(kick.KickstartError, match=r"^epochs: '5' is not an int$"):
        kick.with_overrides(kick.KickstartConfig(), epochs="5")


@pytest.mark.parametrize("module,argv,line", [
    ("ops.celldiv.teacher", ["--profile", "test", "--set", "colour=red"], "colour: not a teacher config field"),
    ("ops.celldiv.teacher", ["--profile", "huge"], "profile: 'huge' is not one of test, small, full"),
    ("ops.celldiv.distill", ["--profile", "test", "--data", "none.parquet", "--set", "epochs=many"],
     "epochs: 'many' is not an int"),
])
def test_the_celldiv_command_lines_refuse_a_bad_set_in_one_line(module, argv, line, tmp_path, capsys):
    mod = importlib.import_module(module)
    with pytest.raises(SystemExit) as e:
        mod.main([*argv, "--out", str(tmp_path / "out")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and line in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # refused before any work


def test_given_keeps_the_fields_a_caller_set():
    assert given(games=None, rounds=3, shape="", seed=0) == {"rounds": 3, "shape": "", "seed": 0}
    assert TOY.resolve("test", **given(games=None, rate=0.25)) == Toy(games=2, sizes=(12,), rate=0.25)


# -- every other table of sizes by profile (assets, checks) is a Profiles too, with the values it had -------------
def _tables():
    from assets import celldiv_league, contender, loong, loong_league, loong_value_lost
    from ops.loong import mimic as loong_mimic
    from ops.loong import search_check as loong_search_check

    return [
        ("celldiv league", celldiv_league.SCALES, {}, {
            "test": dict(tier_games=10, games=4, search_games=4, teacher_simulations=4),
            "small": dict(tier_games=100, games=200, search_games=24, teacher_simulations=16),
            "full": dict(tier_games=400, games=400, search_games=200, teacher_simulations=128)}),
        ("value-lost report", loong_value_lost.POINTS_PROFILES, {}, {
            "test": dict(points_size=12, points_rounds=8, points_games=1),
            "small": dict(points_size=20, points_rounds=30, points_games=1),
            "full": dict(points_size=64, points_rounds=60, points_games=2)}),
        ("league pass", loong_league.LEAGUE, {}, {
            "test": dict(maps=1, games=2, rounds=40, pfsp=2, batched=True),
            "small": dict(maps=3, games=2, rounds=500, pfsp=6, batched=False),
            "full": dict(maps=6, games=10, rounds=500, pfsp=40, batched=True)}),
        ("mimic", loong_mimic.CONFIG_PROFILES, dict(bot="foil"), {
            "test": dict(games=3), "small": dict(games=18), "full": dict(games=600)}),
        ("loong contender", contender.LOONG_PROFILE, {}, {
            "test": dict(games=36, max_rounds=30, meter_games=2), "small": dict(games=200, max_rounds=200),
            "full": dict(games=400, max_rounds=500)}),
        ("celldiv contender", contender.CELLDIV_PROFILE, {}, {
            "test": dict(games=20, latency_moves=40), "small": dict(games=200), "full": dict(games=1000)}),
        ("wasm build", loong.SEARCHING_BUILD, {}, {
            "test": dict(searching=False), "small": dict(searching=False), "full": dict(searching=True)}),
        ("search check", loong_search_check.SEARCH_CHECK_SIZES, {}, {
            "test": dict(games=4, rounds=12), "small": dict(games=192, rounds=60),
            "full": dict(games=400, rounds=500)}),
        ("cycle gate", loong_search_check.CYCLE_SIZES, {}, {
            "test": dict(games=4, rounds=12), "small": dict(games=96, rounds=500),
            "full": dict(games=400, rounds=500)}),
        ("release check", loong_search_check.RELEASE_SIZES, {}, {
            "test": dict(games=4, rounds=12), "small": dict(games=200, rounds=100),
            "full": dict(games=400, rounds=500)}),
    ]


def test_every_table_by_profile_resolves_through_ops_profiles_with_its_values():
    for what, profiles, required, values in _tables():
        assert isinstance(profiles, Profiles) and profiles.what == what and profiles.names == ("test", "small", "full")
        for name, fields in values.items():
            cfg = profiles.resolve(name, **required)
            assert {k: getattr(cfg, k) for k in fields} == fields, (what, name)
        with pytest.raises(ValueError) as e:
            profiles.resolve("small", colour=1, **required)
        assert one_line(e).startswith(f"colour: not a {what} config field (known: "), what
        with pytest.raises(ValueError) as e:
            profiles.resolve("huge", **required)
        assert one_line(e) == "profile: 'huge' is not one of test, small, full"


def test_the_kickstart_and_the_mimics_share_one_kickstart_table():
    from ops.loong import kickstart as kick

    assert kick.CONFIG_PROFILES.resolve("test").holdout == 0.34
    assert kick.CONFIG_PROFILES.resolve("full").accelerator == "auto"
    with pytest.raises(kick.KickstartError) as e:
        kick.CONFIG_PROFILES.resolve("small", epochs="two")
    assert one_line(e) == "epochs: 'two' is not an int"
