"""Whole games on the batched simulator: ``play_batched_games`` (reference-format match records, ready for
``games.loong.replay.save_replay``) and the parallel-turn scheduler (``run_wave``).

Parallel-turn scheduler: a wave observes the next k dragons of each lane's round from one state, asks the
policy once for all of them, then applies their actions in id order; before dragon j acts its inputs are
observed again, and the lane's wave ends at the first dragon whose inputs changed (it is asked again
in the next wave). Because every policy here is a pure function of its inputs (randomness included,
gpu.loong_policy), the game equals strict id-order play exactly; the gain is k dragons per policy call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from games.loong.actions import Forfeit
from games.loong.bots import MatchResult, TurnRecord
from games.loong.engine import MAX_ROUNDS, GameResult
from games.loong.maps import LoongMap
from gpu.loong_obs import LoongObs, observe, same_inputs
from gpu.loong_sim import (
    C_HEADON,
    C_INVALID,
    DRAW,
    ELIMINATION,
    LoongSim,
    Turn,
    death_cause,
    decode_action,
    decode_sonar,
)

Policy = Callable[[LoongObs], Turn]


def needs_planes(policies: tuple[Policy, Policy]) -> bool:
    """Whether any policy reads the planes (a policy may say it does not with ``needs_planes = False``)."""
    return any(getattr(p, "needs_planes", True) for p in policies)


def run_policies(obs: LoongObs, policies: tuple[Policy, Policy], think: list[float] | None = None) -> Turn:
    """Ask team 0's and team 1's policy for their rows of ``obs`` (once when both are the same object)."""
    p0, p1 = policies
    if p0 is p1:
        t0 = time.perf_counter()
        turn = p0(obs)
        if think is not None:
            think[0] += (time.perf_counter() - t0) / 2
            think[1] += (time.perf_counter() - t0) / 2
        return _full_turn(turn, len(obs.rng))
    n = len(obs.rng)
    parts = []
    for team, p in enumerate(policies):
        rows = (obs.team == team).nonzero()[:, 0]
        if len(rows) == 0:
            continue
        t0 = time.perf_counter()
        parts.append((rows, _full_turn(p(obs.select(rows)), len(rows))))
        if think is not None:
            think[team] += time.perf_counter() - t0
    if not parts:
        return _full_turn(p0(obs), n)
    dev = parts[0][1].act.device
    width = max(part.act.shape[1] for _, part in parts)  # policies may leave different sprint columns off
    out = Turn(torch.zeros(n, width, dtype=torch.int64, device=dev), torch.zeros(n, 4, dtype=torch.int64, device=dev),
               torch.zeros(n, 4, dtype=torch.bool, device=dev))
    for rows, part in parts:
        out.act[rows, : part.act.shape[1]] = part.act
        out.sonar[rows], out.sonar_mask[rows] = part.sonar, part.sonar_mask
    return out


def _full_turn(turn: Turn, n: int) -> Turn:
    if turn.sonar is None or turn.sonar_mask is None:
        dev = turn.act.device
        return Turn(turn.act, torch.zeros(n, 4, dtype=torch.int64, device=dev),
                    torch.zeros(n, 4, dtype=torch.bool, device=dev))
    return turn


def run_wave(sim: LoongSim, policies: tuple[Policy, Policy], k: int,
             on_step: Callable[[], None] | None = None, think: list[float] | None = None) -> torch.Tensor:
    """One wave of up to k turns per running lane; returns ``[B]`` turns applied in each lane."""
    slots = sim.next_slots(k)
    planes = needs_planes(policies)
    obs = observe(sim, slots, planes=planes)
    turn = run_policies(obs, policies, think)
    B = sim.B
    act = turn.act.view(B, k, -1)
    sonar, smask = turn.sonar.view(B, k, 4), turn.sonar_mask.view(B, k, 4)
    in_wave = (sim.result == 0) & (slots[:, 0] < sim.S)
    applied = torch.zeros(B, dtype=torch.int64, device=sim.device)
    rows = torch.arange(B, device=sim.device) * k
    for j in range(k):
        if j > 0:
            now = observe(sim, planes=planes)
            in_wave &= (sim.actor == slots[:, j]) & same_inputs(now, obs.select(rows + j))
        if not bool(in_wave.any()):
            break
        sim.step(Turn(act[:, j], sonar[:, j], smask[:, j]), lanes=in_wave)
        if on_step is not None:
            on_step()
        applied += in_wave.long()
    return applied


@dataclass
class _Finished:
    result: GameResult
    standings: dict
    hashes: list[str]


def play_batched_games(
    maps: Sequence[LoongMap],
    policies: Policy | tuple[Policy, Policy],
    seeds: Sequence[int],
    *,
    max_rounds: int = MAX_ROUNDS,
    batch_size: int | None = None,
    device: str | torch.device = "cpu",
    bot_names: tuple[str, str] | None = None,
    scheduler_k: int | None = None,
    stats: dict | None = None,
    **sim_kwargs,
) -> list[MatchResult]:
    """Play one game per (map, seed) on the batched simulator and return reference ``MatchResult``s.

    ``policies`` is one policy for both teams or (team 0, team 1); a policy with ``reads_sim = True`` is asked
    ``policy(sim, lane_game)`` (``lane_game`` [B]: each lane's index into ``maps``) for every lane's turn. At
    most ``batch_size`` games run at once (default: all); finished lanes take the next game. Every turn, every
    round's state hash (from the simulator's own tensors) and the result are recorded, so ``save_replay`` writes
    replays that ``verify_replay`` re-simulates in the reference engine. ``scheduler_k`` plays in parallel-turn waves.
    ``stats`` (a dict) receives turns, steps, waves and seconds.
    """
    if len(maps) != len(seeds):
        raise ValueError(f"{len(maps)} maps but {len(seeds)} seeds")
    pols = policies if isinstance(policies, tuple) else (policies, policies)
    names = bot_names or tuple(str(getattr(p, "name", type(p).__name__)) for p in pols)
    G = len(maps)
    B = min(batch_size or G, G)
    sim = LoongSim(maps[:B], seeds=seeds[:B], max_rounds=max_rounds, device=device, record_hashes=True,
                   record_turns=True, **sim_kwargs)
    lane_game = torch.arange(B, device=sim.device)
    queue = list(range(B, G))
    records: list[np.ndarray] = []
    finished: dict[int, _Finished] = {}
    think = [0.0, 0.0]
    counts = {"turns": 0, "steps": 0, "waves": 0, "wave_lanes": 0}
    t0 = time.perf_counter()

    def after_step() -> None:
        records.append(_turn_rows(sim, lane_game))
        counts["steps"] += 1
        done = sim.last["active"] & (sim.result != 0)
        if bool(done.any()):
            _finish(sim, done, lane_game, finished)
            lanes = done.nonzero()[:, 0].tolist()
            fresh = [(b, queue.pop(0)) for b in lanes if queue]
            if fresh:
                sim.reset([b for b, _ in fresh], [maps[g] for _, g in fresh], [seeds[g] for _, g in fresh])
                for b, g in fresh:
                    lane_game[b] = g

    host = getattr(pols[0], "reads_sim", False)
    if host and (pols[1] is not pols[0] or scheduler_k):
        raise ValueError("a policy that reads the simulator plays both teams, without the wave scheduler")
    while not sim.all_over():
        if host:  # it observes the lanes itself (e.g. reference observations for judged bots: ops/loong/batched.py)
            t0 = time.perf_counter()
            sim.step(pols[0](sim, lane_game))
            think[0] += time.perf_counter() - t0
            after_step()
        elif scheduler_k:
            applied = run_wave(sim, pols, scheduler_k, after_step, think)
            counts["waves"] += 1
            counts["wave_lanes"] += int((applied > 0).sum())
        else:
            turn = run_policies(observe(sim, planes=needs_planes(pols)), pols, think)
            sim.step(turn)
            after_step()
    rows = np.concatenate(records) if records else np.zeros((0, 12 + sim.cap), np.int64)
    counts["turns"] = len(rows)
    counts["seconds"] = time.perf_counter() - t0
    if stats is not None:
        stats.update(counts)
    return [_match(maps[g], seeds[g], names, rows[rows[:, 0] == g], finished[g], sim.cap, max_rounds,
                   tuple(think)) for g in range(G)]


# Columns of a recorded turn row: game, round, dragon id, length, team living, cause, other, partner,
# sonar mask bits, then sonar values (4), then the action row (2 + cap).
def _turn_rows(sim: LoongSim, lane_game: torch.Tensor) -> np.ndarray:
    last = sim.last
    act = last["act"]
    smask = last.get("sonar_mask")
    bits = (smask.long() * torch.tensor([1, 2, 4, 8], device=act.device)).sum(1)
    cols = [lane_game, last["round"], last["aid"], last["length"], last["living"], last["cause"],
            last["other"], last["partner"], bits]
    table = torch.cat([torch.stack(cols, 1), last["sonar"], act], 1)
    return table[last["active"]].cpu().numpy()


def _finish(sim: LoongSim, done: torch.Tensor, lane_game: torch.Tensor, finished: dict) -> None:
    scores = sim.scores().cpu().numpy()
    for b in done.nonzero()[:, 0].tolist():
        code, reason = int(sim.result[b]), int(sim.reason[b])
        winner = None if code == DRAW else code - 1
        s = tuple(tuple(int(v) for v in scores[b, team]) for team in (0, 1))
        result = GameResult(winner, "elimination" if reason == ELIMINATION else "round limit", int(sim.round[b]), s)
        standings = {team: {"living": int(sim.living[b, team]), "queen_length": s[team][0], "longest": s[team][1],
                            "total": s[team][2]} for team in (0, 1)}
        finished[int(lane_game[b])] = _Finished(result, standings, list(sim.hashes[b]))


def _match(m: LoongMap, seed: int, names, rows: np.ndarray, fin: _Finished, cap: int, max_rounds: int,
           think: tuple[float, float]) -> MatchResult:
    turns, deaths = [], {}
    for r in rows.tolist():
        rnd, aid, length, living, cause, other, partner, bits = r[1:9]
        action = decode_action(r[13:], length, living, cap)
        mask = [bool(bits >> d & 1) for d in range(4)]
        sonar = None if isinstance(action, Forfeit) else decode_sonar(r[9:13], mask)
        death = action.reason if isinstance(action, Forfeit) else death_cause(cause, other)
        if (cause == C_INVALID) != isinstance(action, Forfeit):
            raise AssertionError(f"round {rnd} dragon {aid}: simulator and rules disagree on validity of {action}")
        turns.append(TurnRecord(rnd, aid, action, sonar, 0, death))
        if death is not None:
            deaths[aid] = (rnd, death)
        if cause == C_HEADON and partner >= 0:
            deaths[partner] = (rnd, f"head-on with dragon {aid}")
    return MatchResult(m, seed, names, fin.result, turns, fin.hashes, deaths, think, fin.standings, max_rounds)
