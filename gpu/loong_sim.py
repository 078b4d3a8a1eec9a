"""Batched Loong simulator: B games (lanes) in fixed-capacity tensors, every rule of games/loong/engine.py.

A step plays exactly one turn in every running lane: the lane's current dragon (ascending ids, as in
the reference engine) applies its action and sonar; then the lane moves on to its next dragon, ending
and beginning rounds on the way (spawn ticks, round-500 comparison, elimination). Lanes run
independently (different maps of one size, different rounds, different numbers of dragons), and
finished lanes can be reset while the others play on::

    sim = LoongSim(maps, device="cuda")          # lanes start at round 1, actor chosen
    while not sim.all_over():
        obs = observe(sim)                          # gpu.loong_obs: planes of each lane's actor
        sim.step(policy(obs))                       # Turn(act [B, A], sonar [B, 4], sonar_mask [B, 4])

The simulator is one class assembled from its phases, each in its own module:

    gpu.loong_sim_state   the tensors (layout in its docstring), allocation, reset, load_game, fork, remove, queries
    gpu.loong_sim_round   a round's end and beginning (comparison, hashes, spawns, the actors), the acting order
    gpu.loong_sim_turn    step: the actor's MOVE / SPRINT / SPLIT, head-on, death, elimination, sonar
    gpu.loong_sim_codec   the integer codes (actions, results, causes), Turn, encode/decode of actions and sonar

Importers take every public name from here.
"""

from __future__ import annotations

from gpu.loong_sim_codec import (
    C_HEADON,
    C_INVALID,
    DEFAULT_SPRINT_CAP,
    DRAW,
    ELIMINATION,
    FORFEIT,
    MOVE,
    RUNNING,
    SPLIT,
    SPRINT,
    WON0,
    WON1,
    Turn,
    death_cause,
    decode_action,
    decode_sonar,
    encode_action,
    encode_sonar,
)
from gpu.loong_sim_round import RoundPhase
from gpu.loong_sim_state import _LANE_STATE, DEFAULT_INBOX, PEARL, CapacityError, SimState, gat
from gpu.loong_sim_turn import TurnPhase


class LoongSim(SimState, RoundPhase, TurnPhase):
    """B Loong games of one board size on one device. See gpu.loong_sim_state for the state layout."""


__all__ = ["C_HEADON", "C_INVALID", "DEFAULT_INBOX", "DEFAULT_SPRINT_CAP", "DRAW", "ELIMINATION", "FORFEIT", "MOVE",
           "PEARL", "RUNNING", "SPLIT", "SPRINT", "WON0", "WON1", "_LANE_STATE", "CapacityError", "LoongSim", "Turn",
           "death_cause", "decode_action", "decode_sonar", "encode_action", "encode_sonar", "gat"]
