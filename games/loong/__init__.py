"""Loong reference engine (numpy only): the ground truth every other Loong implementation must match.

Rules: docs/loong-rules.md (decisions included). Observation bytes: docs/loong-observation.md.

Public API
----------
Maps (``games.loong.maps``, ``games.loong.mapgen``)
    LoongMap(width, height, edges[H, W, 4], portals, spawns, dragons, symmetry, name)
        .step(cell, d) -> (target cell, arrival heading, kind); flat tables step_cell / step_heading /
        step_kind [W*H, 4]; .cell(x, y), .xy(c); .to_json(), .dumps(), .save(path)
    load_map(path), loads_map(text), map_from_json(obj)      -> LoongMap, or MapError naming field/cell
    generate_map(width, height, symmetry, seed, kelp_density=0.06, portal_pairs=2, spawn_tiles=None)
    load_map_spec("gen:48x48:lr:seed=3,kelp=0.08,portals=2,spawns=12" | "file:x.json" | "x.json")
    constants N, E, S, W, OPEN, KELP, PORTAL, NO_HEADING
Actions (``games.loong.actions``)
    Move(direction), Sprint(directions), Split(k), Forfeit(reason); sonar = None | (n, e, s, w) of
    None / uint64. check_action(action, length, team_living), check_sonar(sonar) -> reason | None;
    canonical(action, sonar) -> the one spelling replays store.
Engine (``games.loong.engine``)
    Game(loong_map, seed, max_rounds=500); Game.from_position(map, dragons, pearls, ...)
    game.begin_round() -> acting ids; game.next_actor() -> id | None;
    game.turn(id, action, sonar) -> TurnOutcome(dragon_id, deaths, born); game.end_round()
    game.over, game.result: GameResult(winner 0/1/None, reason, round, scores)
    game.dragons[id]: Dragon(id, team, body deque of cells head first, heading, alive, cause, ...)
    game.state_hash(), game.hashes (index 0 = start, r = after round r), game.clone(), game.safe_moves(id)
Observation (``games.loong.observation``)
    observe(game, id, points_left=100_000_000) -> Observation; encode(obs) -> bytes; decode(bytes)
Bots and matches (``games.loong.bots``)
    factory(dragon_id, team, seed) -> bot with bot.act(obs) -> (action, sonar)
    random_bot, RandomBot, looks_safe(obs, d), BOTS
    play_game(map, bots_team0, bots_team1, seed, max_rounds=500) -> MatchResult
Replays (``games.loong.replay``)
    save_replay(match_result, path) -> (json path, parquet path); load_replay(path) -> Replay;
    verify_replay(replay | path, builds=store) -> VerifiedReplay (every header field re-derived; built-in
        bots and builds (by id, from ``builds``) re-played from the seed, every turn compared; what could not
        run in ``unchecked``); ReplayError. Format and checks: docs/loong-replay.md.
    Not imported here (it pulls in pyarrow): ``from games.loong.replay import ...``
Scenarios (``games.loong.scenario``, for tests of any implementation)
    board(w, h, kelp=[(x, y, d)], portals=[((x, y, d), (x, y, d))], spawns=[(x, y, P, cd)]) -> LoongMap
    position(map, [(id, team, [(x, y) head first], heading)], pearls=[(x, y)]) -> Game;
    run_turns(game, {id: action | (action, sonar)}, default=None); cells(game, id); pearl_cells(game)
Seeds (``games.loong.rng``)
    dragon_seed(match_seed, dragon_id) (splitmix64), SplitMix64(seed).next() / .below(n)
"""

from games.loong.actions import (
    Action,
    Forfeit,
    Move,
    Sonar,
    Split,
    Sprint,
    canonical,
    check_action,
    check_sonar,
)
from games.loong.bots import BOTS, MatchResult, RandomBot, TurnRecord, looks_safe, play_game, random_bot
from games.loong.engine import Dragon, Game, GameResult, RuleError, TurnOutcome
from games.loong.mapgen import generate_map, load_map_spec, parse_map_spec, start_problems
from games.loong.maps import (
    DIR_NAMES,
    KELP,
    NO_HEADING,
    OPEN,
    PORTAL,
    E,
    LoongMap,
    MapError,
    N,
    S,
    Spawn,
    StartDragon,
    W,
    load_map,
    loads_map,
    map_from_json,
)
from games.loong.observation import Observation, decode, encode, observe
from games.loong.rng import SplitMix64, dragon_seed

__all__ = [
    "Action", "BOTS", "DIR_NAMES", "Dragon", "E", "Forfeit", "Game", "GameResult", "KELP", "LoongMap",
    "MapError", "MatchResult", "Move", "N", "NO_HEADING", "OPEN", "Observation", "PORTAL", "RandomBot",
    "RuleError", "S", "Sonar", "Spawn", "Split", "SplitMix64", "Sprint", "StartDragon", "TurnOutcome",
    "TurnRecord", "W", "canonical", "check_action", "check_sonar", "decode", "dragon_seed", "encode", "generate_map",
    "load_map", "load_map_spec", "loads_map", "looks_safe", "map_from_json", "observe", "parse_map_spec",
    "play_game", "random_bot", "start_problems",
]

# the foil registers itself in BOTS; importing it here makes BOTS["foil"] always present
from games.loong.foil import FoilBot, foil_bot  # noqa: E402

__all__ += ["FoilBot", "foil_bot"]
