"""The Loong rules conformance suite: every scenario of scenarios/*.json through every implementation.

Each test is one (adapter, scenario) pair, named ``test_scenario[adapter-scenario]``. It plays the
scenario's turns, checks the scenario's expectations at every checkpoint and, for every adapter but the
reference engine, checks that the whole state (every dragon's cells, heading, inbox, echoes and cause,
the pearls, countdowns, scores, result and state hash) equals the reference engine's at every checkpoint.
Pairs an adapter cannot run are listed in EXCLUDED with the reason the adapter gives, and a test keeps
that list exact. The format, the adapters and how to add one: README.md. Which scenario covers which rule
of docs/loong-rules.md: rules.json, and the table in docs/loong-rules.md ("Conformance coverage"), which a
test keeps in step with the scenario files.
"""

import json
import re
from pathlib import Path

import pytest

from bot.core_sim import CoreSimAdapter
from games.loong.scenario import (
    AecAdapter,
    EngineAdapter,
    ScenarioError,
    differences,
    env_at,
    load_scenarios,
    parse_scenario,
    run_scenario,
)
from gpu.loong_diff import SimAdapter

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SCENARIOS = load_scenarios(HERE / "scenarios")
RULES = json.loads((HERE / "rules.json").read_text())["rules"]
ADAPTERS = {"engine": EngineAdapter, "sim": SimAdapter, "aec": AecAdapter, "core": CoreSimAdapter}

_MALFORMED = ["invalid_move_true_kills_only_the_actor", "invalid_move_string_kills_only_the_actor",
              "invalid_sprint_string_kills_only_the_actor", "invalid_split_float_kills_only_the_actor",
              "invalid_none_action_kills_only_the_actor", "invalid_string_action_kills_only_the_actor"]
_BAD_SONAR = ["sonar_value_of_2_64_kills_before_the_action", "sonar_of_three_values_kills_before_the_action",
              "negative_sonar_value_kills_before_the_action", "sonar_string_value_kills_before_the_action"]
_SONAR = ["an_invalid_action_sends_no_ray", "four_rays_kelp_enemy_body_own_body_ally_head",
          "ray_range_reaches_the_last_cell_through_a_portal", "ray_range_ends_after_max_w_h_cells",
          "ray_range_is_the_larger_side_on_a_non_square_board", "ray_range_on_a_non_square_board_stops_after_16_cells",
          "a_ray_that_comes_back_to_the_senders_head_stops_unheard",
          "a_ray_re_entering_the_head_cell_through_a_portal_stops",
          "inbox_keeps_arrival_order_across_senders_and_directions", "a_dragon_that_dies_in_its_action_sends_nothing",
          "a_ray_starts_at_the_sprinters_final_head", "a_dead_dragons_inbox_is_dropped", "an_inbox_has_no_cap",
          "split_child_hears_its_parents_ray"]
_NO_DISCRETE = "has no Discrete action (MOVE 0..3, SPLIT k >= 1, SPRINT of 2 or more steps 0..3)"
# adapter -> reason -> scenarios it cannot run (the reason exactly as the adapter's ``unsupported`` words it)
EXCLUDED = {
    "engine": {},
    "sim": {
        "a malformed Python action has no row in the batched action tensor (int64 kind, arg, dirs)": _MALFORMED,
        "batched sonar is int64 bits plus a mask: every value is a valid uint64, malformed has no form": _BAD_SONAR,
    },
    "aec": {
        "the env sends no sonar (games/loong/aec.py: step takes one Discrete action)": _BAD_SONAR + _SONAR,
        "a malformed Python action has no Discrete action in the env": _MALFORMED,
        "the env's only forfeit is step(None), worded 'no action': a Forfeit's reason cannot be given": [
            "dead_queen_counts_zero_in_the_comparison", "death_pearls_on_even_segments", "forfeit_kills_only_the_actor",
            "split_child_of_a_queen_is_not_a_queen_and_ids_are_never_reused"],
        f"Move(direction=4) {_NO_DISCRETE}": ["invalid_move_direction_4_kills_only_the_actor"],
        f"Split(k=0) {_NO_DISCRETE}": ["split_k_zero_kills"],
        f"Split(k=-1) {_NO_DISCRETE}": ["split_k_negative_kills"],
        f"Sprint(directions=(1,)) {_NO_DISCRETE}": ["one_step_sprint_is_invalid"],
    },
    "core": {
        "the world model simulates no messages (inboxes, echoes, the sonar check); rays: core_sim_ray, "
        "tests/bot/core/test_sim.py": _BAD_SONAR + _SONAR,
        "a malformed Python action has no (kind, arg, dirs) form in core_sim_turn": _MALFORMED,
    },
}
_EXCLUDED_PAIRS = {(a, name): why for a, table in EXCLUDED.items() for why, names in table.items() for name in names}
_reference: dict[str, list] = {}


def reference(scenario):
    """The reference engine's checkpoints of ``scenario`` (computed once)."""
    if scenario.name not in _reference:
        _reference[scenario.name] = run_scenario(EngineAdapter(), scenario)
    return _reference[scenario.name]


def _pairs():
    return [pytest.param(a, s, id=f"{a}-{s.name}") for a in ADAPTERS for s in SCENARIOS
            if (a, s.name) not in _EXCLUDED_PAIRS]


@pytest.mark.parametrize("adapter_name,scenario", _pairs())
def test_scenario(adapter_name, scenario):
    adapter = ADAPTERS[adapter_name]()
    points = run_scenario(adapter, scenario)
    problems = []
    ref = reference(scenario)
    full = set(ref[0].state)
    for n, p in enumerate(points):
        problems += [f"{p.label}: {d}" for d in differences(p.expect, p.state)]
        missing = full - set(p.state)
        if missing != set(adapter.unreported):
            problems.append(f"{p.label}: reports no {sorted(missing)}; it declares {sorted(adapter.unreported)}")
        if adapter_name == "engine":
            continue
        if n >= len(ref):
            problems.append(f"{p.label}: the reference engine had no turn here")
            break
        want = {k: v for k, v in ref[n].state.items() if k in p.state}
        if ref[n].label != p.label or want != p.state:
            keys = [k for k in want if want[k] != p.state.get(k)] or ["label"]
            problems.append(f"{p.label}: differs from the reference engine ({ref[n].label}) in {keys}: "
                            f"{_first_difference(want, p.state, keys[0])}")
            break
    if adapter_name != "engine" and len(points) < len(ref):
        problems.append(f"the reference engine played {len(ref)} checkpoints, {adapter_name} {len(points)}")
    assert not problems, f"{adapter_name} on {scenario.name} ({scenario.source}):\n" + "\n".join(problems)


def _first_difference(want: dict, got: dict, key: str) -> str:
    if key == "dragons":
        for i, d in want["dragons"].items():
            g = got["dragons"].get(i, {})
            for f, v in d.items():
                if g.get(f) != v:
                    return f"dragon {i} {f}: reference {v!r}, got {g.get(f)!r}"
    return f"reference {want.get(key)!r}, got {got.get(key)!r}"


def test_exclusions_are_exactly_the_documented_ones():
    """Every (adapter, scenario) an adapter refuses is listed in EXCLUDED with its reason, and nothing more."""
    names = {s.name for s in SCENARIOS}
    assert {n for _, n in _EXCLUDED_PAIRS} <= names
    for a, cls in ADAPTERS.items():
        adapter = cls()
        for s in SCENARIOS:
            assert adapter.unsupported(s) == _EXCLUDED_PAIRS.get((a, s.name)), (a, s.name)


def test_a_wrong_expectation_or_a_diverging_state_is_reported():
    """The checks can fail: a changed expected value is named field by field, for every adapter."""
    sc = next(s for s in SCENARIOS if s.name == "sprint_pearls_grow_but_add_no_free_steps")
    for cls in ADAPTERS.values():
        points = run_scenario(cls(), sc)
        expect = json.loads(json.dumps(points[-1].expect))
        expect["dragons"]["0"]["cells"][0] = [7, 2]
        expect["pearls"] = [[4, 2]]
        assert differences(expect, points[-1].state) == [
            "dragons.0.cells: expected [[7, 2], [5, 2], [4, 2]], got [[6, 2], [5, 2], [4, 2]]",
            "pearls: expected [[4, 2]], got []"]
        assert differences({"dragons": {"0": {"cause_prefix": "x"}}}, points[-1].state) == [
            "dragons.0.cause: expected one starting 'x', got None"]


def test_every_rule_is_covered_by_a_scenario_or_a_named_test():
    ids = [r["id"] for r in RULES]
    assert len(ids) == len(set(ids))
    used = {r for s in SCENARIOS for r in s.rules}
    assert used <= set(ids), f"scenarios name unknown rules {sorted(used - set(ids))}"
    for r in RULES:
        if r["id"] in used:
            continue
        assert r.get("elsewhere"), f"rule {r['id']} ({r['rule']}) has no scenario and no test"
        for node in r["elsewhere"]:
            path, name = node.split("::")
            assert re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M), f"{node} does not exist"


def coverage_table() -> str:
    """The markdown table of docs/loong-rules.md, "Conformance coverage"."""
    lines = ["| rule | what it says | covered by |", "| --- | --- | --- |"]
    for r in RULES:
        names = [s.name for s in SCENARIOS if r["id"] in s.rules]
        cover = ", ".join(f"`{n}`" for n in names) if names else "; ".join(f"`{t}`" for t in r["elsewhere"])
        lines.append(f"| `{r['id']}` | {r['rule']} | {cover} |")
    return "\n".join(lines)


def test_the_coverage_table_in_the_rules_document_is_current():
    doc = (ROOT / "docs" / "loong-rules.md").read_text()
    m = re.search(r"<!-- coverage:start -->\n(.*?)\n<!-- coverage:end -->", doc, re.S)
    assert m, "docs/loong-rules.md has no <!-- coverage:start --> ... <!-- coverage:end --> block"
    assert m.group(1) == coverage_table(), "the coverage table is stale; replace it with:\n" + coverage_table()


@pytest.mark.parametrize("mutate,match", [
    (lambda o: o.update(play=[{"turn": 0, "do": ["jump", "N"]}]), r"scenario 'x': .*jump"),
    (lambda o: o.update(play=[{"turn": 0, "do": ["move", "E"], "expect": {"colour": 1}}]),
     r"play\[0\]\.expect: unknown expectation 'colour'"),
    (lambda o: o.update(rules=[]), r"'rules' must be a non-empty list"),
    (lambda o: o.update(dragons=[[0, 0, [[2, 2]], "E"], [1, 1, [[2, 2]], "W"]]), r"already holds dragon 0"),
    (lambda o: o.pop("board"), r"exactly one of 'board' and 'map'"),
    (lambda o: o.update(play=[{"turn": 0, "do": ["malformed", "Move(7)"]}]), r"known names are"),
])
def test_bad_scenarios_are_refused_with_the_field_named(mutate, match):
    obj = {"name": "x", "rules": ["move.step"], "board": {"width": 10, "height": 10},
           "dragons": [[0, 0, [[2, 2]], "E"], [1, 1, [[7, 7]], "W"]], "play": []}
    mutate(obj)
    with pytest.raises(ScenarioError, match=r"^f\.json: .*" + match):
        parse_scenario(obj, "f.json")


def test_a_broken_scenario_file_names_the_file(tmp_path):
    (tmp_path / "a.json").write_text("{")
    with pytest.raises(ScenarioError, match=r"a\.json: not valid JSON"):
        load_scenarios(tmp_path)
    (tmp_path / "a.json").write_text('{"scenarios": [{"name": "x", "rules": ["r"], "board": {"width": 10, '
                                     '"height": 10}, "dragons": []}, {"name": "x", "rules": ["r"], '
                                     '"board": {"width": 10, "height": 10}, "dragons": []}]}')
    with pytest.raises(ScenarioError, match=r"a\.json: scenario name 'x' is already used"):
        load_scenarios(tmp_path)


def test_env_at_a_fresh_game_is_what_reset_gives():
    """``env_at`` starts the env the way ``LoongEnv.reset`` does: same agents, selection and observations."""
    from games.loong.aec import LoongEnv
    from games.loong.engine import Game
    from games.loong.mapgen import generate_map

    m = generate_map(12, 12, "rot", 5)
    reset = LoongEnv(game_map=m)
    reset.reset(seed=1)
    at = env_at(Game(m, reset.game.seed))
    assert at.agents == reset.agents and at.agent_selection == reset.agent_selection
    assert at.infos == reset.infos and at.terminations == reset.terminations
    for a in reset.agents:
        got, want = at.observe(a), reset.observe(a)
        assert (got["observation"] == want["observation"]).all() and (got["action_mask"] == want["action_mask"]).all()
    assert at.game.state_hash() == reset.game.state_hash()
