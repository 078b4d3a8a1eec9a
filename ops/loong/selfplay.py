"""Batched Loong self-play: many games side by side on the batched simulator, written in the
reference replay format (each replay re-simulates exactly in the reference engine)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from games.loong.mapgen import generate_map
from games.loong.maps import MAX_SIDE, MIN_SIDE
from games.loong.replay import load_replay, save_replay, verify_replay
from ops.execution import Executor, InProcessExecutor, WorkItem, gather
from ops.profiles import Profiles

SYMMETRIES = ("lr", "tb", "rot")
POLICIES = ("random", "chaos")


@dataclass(frozen=True)
class SelfPlayConfig:
    games: int = 64
    """Games to play; each gets its own generated map and seed."""
    size: int = 24
    """Map side (lanes of one batch share a size; maps differ)."""
    team0: str = "random"
    """Batched policy of team 0: 'random' (the reference random bot's moves) or 'chaos' (rule coverage)."""
    team1: str = "random"
    """Batched policy of team 1."""
    max_rounds: int = 500
    """Round limit."""
    batch_size: int = 64
    """Games on the simulator at once; finished lanes take the next game."""
    scheduler_k: int = 0
    """Parallel-turn waves of k dragons (0: strict id order; both give identical games)."""
    seed: int = 0
    """Map and match seeds derive from it."""


@dataclass
class SelfPlayResult:
    replays: list[Path] = field(default_factory=list)
    wins: tuple[int, int, int] = (0, 0, 0)  # team 0, team 1, draws
    turns: int = 0
    seconds: float = 0.0
    verified: str = ""


class SelfPlayConfigError(ValueError):
    """A self-play config that cannot be played; the message names the field and the value."""


CONFIG_PROFILES = Profiles("self-play", SelfPlayConfig, {
    "test": dict(games=3, size=12, max_rounds=30, batch_size=3),
    "small": dict(games=64, size=24, max_rounds=200, batch_size=64),
    "full": dict(games=4096, size=48, max_rounds=500, batch_size=4096),
}, SelfPlayConfigError)


def check_config(config: SelfPlayConfig) -> None:
    """Refuse a config before any game: unknown policies, map sides the rules do not allow, counts below one."""
    for name in ("team0", "team1"):
        if getattr(config, name) not in POLICIES:
            raise SelfPlayConfigError(f"{name}: unknown batched policy {getattr(config, name)!r} "
                                      f"(known: {', '.join(POLICIES)})")
    if not MIN_SIDE <= config.size <= MAX_SIDE:
        raise SelfPlayConfigError(f"size: map side must be in [{MIN_SIDE}, {MAX_SIDE}], got {config.size}")
    for name in ("games", "max_rounds", "batch_size"):
        if getattr(config, name) < 1:
            raise SelfPlayConfigError(f"{name}: must be at least 1, got {getattr(config, name)}")
    if config.scheduler_k < 0:
        raise SelfPlayConfigError(f"scheduler_k: must be 0 (strict id order) or more, got {config.scheduler_k}")


def policy(name: str):
    from gpu.loong_policy import ChaosPolicy, RandomPolicy

    known = {"random": RandomPolicy, "chaos": ChaosPolicy}
    if name not in known:
        raise SelfPlayConfigError(f"unknown batched policy {name!r}; known: {', '.join(known)}")
    return known[name]()


def play_games(config: SelfPlayConfig, first: int, count: int, threads: int | None = None, *, seed: int):
    """Games ``first`` .. ``first + count - 1`` of the config as one work item: (match results, dragon turns).
    Each game's map and seed derive from ``seed`` and its number alone, so any split gives the same games.
    ``threads``: torch threads of this worker (one a worker when several share the cores)."""
    from gpu.loong_play import play_batched_games

    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    pols = (policy(config.team0), policy(config.team1))
    games = range(first, first + count)
    maps = [generate_map(config.size, config.size, SYMMETRIES[g % 3], seed=seed * 100_003 + g) for g in games]
    seeds = [seed * 1_000_003 + g for g in games]
    stats: dict = {}
    matches = play_batched_games(maps, pols, seeds, max_rounds=config.max_rounds, batch_size=config.batch_size,
                                 scheduler_k=config.scheduler_k or None, stats=stats)
    return matches, int(stats.get("turns", 0))


def work_items(config: SelfPlayConfig, workers: int, threads: int | None = None) -> list[WorkItem]:
    """The games in batches of at most ``batch_size``, split further so that every worker gets one."""
    per = max(1, min(config.batch_size, math.ceil(config.games / workers)))
    return [WorkItem(f"games {g}-{min(g + per, config.games) - 1}", play_games,
                     (config, g, min(per, config.games - g), threads), seed=config.seed)
            for g in range(0, config.games, per)]


def run(config: SelfPlayConfig, out_dir: Path, executor: Executor | None = None,
        progress: Callable[[str, int, int], None] | None = None) -> SelfPlayResult:
    """Play, write one replay per game under ``out_dir``, and re-simulate the first in the reference engine.
    ``executor``: where the game batches are played (default: in this process); the same replays on every
    backend and worker count. ``progress(batch name, done, total)`` as each batch finishes."""
    check_config(config)
    executor = executor or InProcessExecutor()
    threads = None if executor.backend == "inprocess" else 1
    t0 = time.perf_counter()
    batches = gather(executor, work_items(config, executor.workers, threads),
                     on_done=(lambda o, done, total: progress(o.name, done, total)) if progress else None)
    matches = [m for batch, _ in batches for m in batch]
    out = SelfPlayResult(seconds=time.perf_counter() - t0, turns=sum(turns for _, turns in batches))
    out_dir.mkdir(parents=True, exist_ok=True)
    w = [0, 0, 0]
    for g, m in enumerate(matches):
        json_path, _ = save_replay(m, out_dir / f"game{g:05d}")
        out.replays.append(json_path)
        w[2 if m.winner is None else m.winner] += 1
    out.wins = tuple(w)
    if out.replays:
        verify_replay(load_replay(out.replays[0]))
        out.verified = str(out.replays[0])
    return out
