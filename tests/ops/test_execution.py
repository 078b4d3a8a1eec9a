"""The execution seam: item order whatever the finish order, retries of raised errors and of a worker killed
by its pid (finished items never rerun), failures named, and the leagues identical on every backend."""

import json
import os
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from games.celldiv.match import play_match
from games.league import Interrupted, round_robin
from games.stats import MatchTally
from ops.celldiv import league as celldiv_league
from ops.execution import (
    MAX_ATTEMPTS,
    InProcessExecutor,
    PoolExecutor,
    RayExecutor,
    WorkFailed,
    WorkItem,
    cached,
    gather,
    league_pairings,
    make_executor,
    shutdown_ray,
)
from ops.loong import dataset as loong_dataset
from ops.loong import league as loong_league
from ops.loong import selfplay as loong_selfplay


# -- work items (module level: a spawned worker imports them) ----------------------------------------
def square_after(delay: float, *, seed: int) -> int:
    time.sleep(delay)
    return seed * seed


def square_after_marker(folder: str, wait_for: int, *, seed: int) -> int:
    """Write folder/<seed>.done; with wait_for >= 0 first wait (up to 60 s) until folder/<wait_for>.done exists, so
    that this item finishes after that one whatever the machine's load."""
    deadline = time.monotonic() + 60
    while wait_for >= 0 and not (Path(folder) / f"{wait_for}.done").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    (Path(folder) / f"{seed}.done").touch()
    return seed * seed


def count_run(folder: str, name: str, *, seed: int) -> int:
    """Append this run to folder/name.runs and return the seed."""
    with open(Path(folder) / f"{name}.runs", "a") as f:
        f.write(f"{os.getpid()}\n")
    return seed


def victim(folder: str, *, seed: int) -> int:
    """First run: record the pid and sleep until killed. Later runs: return at once."""
    pids = Path(folder) / "victim.pids"
    first = not pids.exists()
    with open(pids, "a") as f:
        f.write(f"{os.getpid()}\n")
    if first:
        time.sleep(60)
    return seed + 1000


def suicide(folder: str, *, seed: int) -> int:
    """Every run kills its own worker process."""
    with open(Path(folder) / "suicide.runs", "a") as f:
        f.write(f"{os.getpid()}\n")
    os.kill(os.getpid(), signal.SIGKILL)
    return seed


def flaky(folder: str, fails: int, *, seed: int) -> int:
    """Raise for the first ``fails`` runs, then return the seed."""
    runs = Path(folder) / "flaky.runs"
    n = len(runs.read_text().splitlines()) if runs.exists() else 0
    runs.write_text("x\n" * (n + 1))
    if n < fails:
        raise RuntimeError(f"flaky run {n}")
    return seed


def tally_or_sleep(a: str, b: str, folder: str, *, seed: int) -> MatchTally:
    """A won game, or (against 'slow') the pid recorded and a long sleep."""
    if b == "slow":
        with open(Path(folder) / "slow.pids", "a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(60)
    return MatchTally(a, b, 1, 0, 0, [1.0])


def sliced_tally(a: str, b: str, part: tuple[int, int] = (0, 1), *, seed: int) -> MatchTally:
    """Part k of n of a six-game 'match' (games k*6//n .. (k+1)*6//n - 1); against 'bad' part 2 raises."""
    k, n = part
    if b == "bad" and k == min(1, n - 1):
        raise RuntimeError(f"{a} vs bad: part {k} broke")
    t = MatchTally(a, b)
    for g in range(k * 6 // n, (k + 1) * 6 // n):
        t.record(1 if (seed + g) % 3 else -1, float(seed % 97 + g))
    return t


DATASET = loong_dataset.DatasetConfig(games=2, rounds=20, shard_games=1, bands=(20,), seed=3)
def pool_in_a_child(out: str) -> None:
    """A multiprocessing child (as a Dagster step is) that runs items on a kept pool, then returns."""
    Path(out).write_text(str(gather(PoolExecutor(2), [WorkItem("one", square_after, (0.0,), seed=3)])))


LOADS: list[str] = []


def loaded_once(key: str, *, seed: int) -> tuple[int, int, int]:
    """(this process's pid, how many times it loaded ``key``, seed): a worker that keeps what it loaded
    answers 1 however many items it runs."""
    obj = cached(key, lambda: LOADS.append(key) or {"key": key})
    assert obj["key"] == key
    return os.getpid(), LOADS.count(key), seed


def runs(folder: Path, name: str) -> int:
    p = folder / f"{name}.runs"
    return len(p.read_text().splitlines()) if p.exists() else 0


# -- the seam ------------------------------------------------------------------------------------------
def test_results_come_in_item_order_whatever_order_they_finish(tmp_path):
    # item 0 waits for item 1 (run beside it by the pool's second worker): it finishes after it on any load
    items = [WorkItem(f"item{k}", square_after_marker, (str(tmp_path), 1 if k == 0 else -1), seed=k) for k in range(4)]
    pool = PoolExecutor(2)
    finished = [o.index for o in pool.run(items)]
    assert finished[0] != 0 and sorted(finished) == [0, 1, 2, 3]  # item 0 finished after the others
    assert gather(pool, items) == gather(InProcessExecutor(), items) == [0, 1, 4, 9]


def test_a_raised_error_is_retried_then_reported_by_name(tmp_path):
    ok = [WorkItem("flaky", flaky, (str(tmp_path), MAX_ATTEMPTS - 1), seed=7)]
    assert gather(InProcessExecutor(), ok) == [7] and runs(tmp_path, "flaky") == MAX_ATTEMPTS
    (tmp_path / "flaky.runs").unlink()
    items = [WorkItem("first", count_run, (str(tmp_path), "first"), seed=1),
             WorkItem("always-bad", flaky, (str(tmp_path), 99), seed=2)]
    with pytest.raises(WorkFailed, match=rf"always-bad failed after {MAX_ATTEMPTS} attempts: RuntimeError: flaky"):
        gather(PoolExecutor(2), items)
    assert runs(tmp_path, "flaky") == MAX_ATTEMPTS and runs(tmp_path, "first") == 1


def test_a_killed_worker_has_its_item_retried_and_finished_items_are_not_rerun(tmp_path):
    items, killed, thread = victim_and_killer(tmp_path)
    outcomes = {o.index: o for o in PoolExecutor(2).run(items)}
    thread.join()
    assert killed, "the victim never started"
    assert [outcomes[k].value for k in range(4)] == [0, 1, 1002, 3]
    assert outcomes[2].attempts == 2 and all(outcomes[k].attempts == 1 for k in (0, 1, 3))
    victim_pids = [int(p) for p in (tmp_path / "victim.pids").read_text().split()]
    assert len(victim_pids) == 2 and victim_pids[0] == killed[0] != victim_pids[1]
    assert [runs(tmp_path, n) for n in ("quick0", "quick1", "quick3")] == [1, 1, 1]  # finished: never rerun


def test_a_worker_that_always_dies_is_reported_by_name_and_the_rest_finish(tmp_path):
    folder = str(tmp_path)
    items = [WorkItem("fine", count_run, (folder, "fine"), seed=5), WorkItem("doomed", suicide, (folder,), seed=6)]
    with pytest.raises(WorkFailed, match=rf"doomed failed after {MAX_ATTEMPTS} attempts: BrokenProcessPool") as e:
        gather(PoolExecutor(1), items)
    assert [o.name for o in e.value.failed] == ["doomed"]
    assert runs(tmp_path, "suicide") == MAX_ATTEMPTS and runs(tmp_path, "fine") == 1


def test_ctrl_c_during_a_pool_league_keeps_the_finished_pairings_and_stops_the_workers(tmp_path, in_a_clean_process):
    if not in_a_clean_process:
        return
    def when_both_sleep() -> None:
        pids, deadline = tmp_path / "slow.pids", time.monotonic() + 30
        while time.monotonic() < deadline and not (pids.exists() and len(pids.read_text().split()) == 2):
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    def press_ctrl_c(done: int, total: int) -> None:
        if done == 3:  # (a, b), (a, c), (b, c) done; both workers now sleep against 'slow'
            threading.Thread(target=when_both_sleep).start()

    with pytest.raises(Interrupted) as e:
        round_robin(("a", "b", "c", "slow"), None, on_pair_done=press_ctrl_c,
                    map_pairs=league_pairings(PoolExecutor(2), tally_or_sleep, str(tmp_path)))
    league = e.value.partial
    assert league.interrupted and [(t.a, t.b) for t in league.tallies] == [("a", "b"), ("a", "c"), ("b", "c")]
    pids = [int(p) for p in (tmp_path / "slow.pids").read_text().split()]
    assert len(pids) == 2
    for pid in pids:  # the sleeping workers were stopped, not left running
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_pairing_split_into_parts_is_the_whole_pairing_and_a_failed_part_fails_it():
    whole = round_robin(("a", "b", "c", "bad"), None, seed=4,
                        map_pairs=league_pairings(InProcessExecutor(), sliced_tally))
    split = round_robin(("a", "b", "c", "bad"), None, seed=4,
                        map_pairs=league_pairings(PoolExecutor(2), sliced_tally, parts=3))
    assert [(t.a, t.b, t.wins, t.losses, t.margins) for t in split.tallies] == \
        [(t.a, t.b, t.wins, t.losses, t.margins) for t in whole.tallies]
    assert len(whole.tallies) == 3 and all(t.games == 6 for t in whole.tallies)
    assert [(a, b) for a, b, _ in split.failures] == [("a", "bad"), ("b", "bad"), ("c", "bad")]
    assert all("part 1 broke" in e for _, _, e in split.failures)
    with pytest.raises(ValueError, match="parts: must be at least 1, got 0"):
        league_pairings(InProcessExecutor(), sliced_tally, parts=0)


def test_a_child_process_that_kept_a_pool_exits(tmp_path):
    """The kept pool's idle workers are shut down when the process exits, before a multiprocessing child joins
    its own children (that join would otherwise wait for ever: a Dagster step that never ends)."""
    import multiprocessing

    child = multiprocessing.get_context("spawn").Process(target=pool_in_a_child, args=(str(tmp_path / "out"),))
    child.start()
    child.join(timeout=60)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive and child.exitcode == 0 and (tmp_path / "out").read_text() == "[9]"


def test_bad_backend_and_worker_counts_are_refused():
    with pytest.raises(ValueError, match="backend: unknown 'cluster'"):
        make_executor("cluster")
    with pytest.raises(ValueError, match="workers: must be at least 1, got 0"):
        make_executor("local", workers=0)
    assert make_executor("inprocess").backend == "inprocess" and make_executor().workers == 2


# -- the leagues ----------------------------------------------------------------------------------------
def table_bytes(result) -> bytes:
    """The league table and ratings as bytes, without the move timings (which differ run to run)."""
    rows = [{k: v for k, v in row.items() if "latency" not in k} for row in result.table()]
    return json.dumps({"pairings": rows, "ratings": [r.as_dict() for r in result.ratings],
                       "failures": result.failures}, sort_keys=True).encode()


def test_celldiv_league_is_the_same_in_process_and_on_two_workers():
    config = celldiv_league.LeagueConfig(players=("random", "easy", "medium"), games=4, sizes="4", seed=3)
    done = []
    one = celldiv_league.run(config, progress=lambda d, t: done.append((d, t)), executor=InProcessExecutor())
    two = celldiv_league.run(config, executor=PoolExecutor(2))
    assert done == [(1, 3), (2, 3), (3, 3)]
    assert table_bytes(one.result) == table_bytes(two.result)
    assert [(t.a, t.b, t.games) for t in two.result.tallies] == [("random", "easy", 4), ("random", "medium", 4),
                                                                 ("easy", "medium", 4)]


def test_celldiv_pairings_with_a_searching_player_play_their_own_number_of_games():
    config = celldiv_league.LeagueConfig(players=("random", "easy", "medium"), games=42, search_games=6,
                                         search_players=("medium",), sizes="4", seed=3)
    one = celldiv_league.run(config, executor=InProcessExecutor())
    two = celldiv_league.run(config, executor=PoolExecutor(2))
    assert [(t.a, t.b, t.games) for t in one.result.tallies] == [("random", "easy", 42), ("random", "medium", 6),
                                                                 ("easy", "medium", 6)]
    assert table_bytes(one.result) == table_bytes(two.result)
    # the 42 games (three parts) are the pairing's games played whole, and the 6 the first 6 of a long pairing
    assert one.result.tallies[0].margins == play_match("random", "easy", games=42, sizes="4",
                                                       seed=3 * 1_000_003).margins
    assert one.result.tallies[1].margins == play_match("random", "medium", games=6, sizes="4",
                                                       seed=3 * 1_000_003 + 1).margins
    with pytest.raises(celldiv_league.LeagueConfigError, match="search_games: must be at least 1, got 0"):
        celldiv_league.check_config(replace(config, search_games=0))
    plain = replace(config, search_games=None)
    assert plain.games_of("random", "medium") == plain.games_of("random", "easy") == 42


def test_pairings_of_different_lengths_split_into_their_own_parts():
    parts = {("a", "b"): 1, ("a", "c"): 3, ("b", "c"): 2}
    whole = round_robin(("a", "b", "c"), None, seed=4, map_pairs=league_pairings(InProcessExecutor(), sliced_tally))
    split = round_robin(("a", "b", "c"), None, seed=4,
                        map_pairs=league_pairings(PoolExecutor(2), sliced_tally, parts=lambda a, b: parts[(a, b)]))
    assert [(t.a, t.b, t.wins, t.losses, t.margins) for t in split.tallies] == \
        [(t.a, t.b, t.wins, t.losses, t.margins) for t in whole.tallies]
    with pytest.raises(ValueError, match="parts: must be at least 1, got 0 for a vs b"):
        round_robin(("a", "b"), None, map_pairs=league_pairings(InProcessExecutor(), sliced_tally,
                                                                 parts=lambda a, b: 0))


def test_loong_league_is_the_same_in_process_and_on_two_workers():
    config = loong_league.LoongLeagueConfig(players=("foil", "random"), maps=("gen:16x16:lr:seed=1",),
                                            games_per_map=2, max_rounds=30, seed=1)
    one = loong_league.run(config, executor=InProcessExecutor())
    two = loong_league.run(config, executor=PoolExecutor(2))
    assert table_bytes(one) == table_bytes(two) and len(two.tallies) == 1


def test_a_failing_pairing_is_a_league_failure_on_the_pool(tmp_path):
    config = celldiv_league.LeagueConfig(players=("random", "easy"), games=2, sizes="4")
    result = round_robin(config.players, None, map_pairs=league_pairings(
        PoolExecutor(2), celldiv_league.play_pairing, config.games, "4,99"))
    assert result.tallies == [] and result.failures[0][:2] == ("random", "easy")
    assert "PositionError" in result.failures[0][2]


SELFPLAY = loong_selfplay.SelfPlayConfig(games=3, size=12, team1="chaos", max_rounds=20, batch_size=3, seed=2)


def replay_bytes(result) -> list[bytes]:
    return [p.read_bytes() for p in result.replays]


def test_selfplay_gives_the_same_replays_in_process_and_on_two_workers(tmp_path):
    one = loong_selfplay.run(SELFPLAY, tmp_path / "one", executor=InProcessExecutor())
    two = loong_selfplay.run(SELFPLAY, tmp_path / "two", executor=PoolExecutor(2))
    assert [i.name for i in loong_selfplay.work_items(SELFPLAY, 2)] == ["games 0-1", "games 2-2"]
    assert len(one.replays) == 3 and replay_bytes(one) == replay_bytes(two)
    assert (one.wins, one.turns) == (two.wins, two.turns)


def test_ray_plays_the_league_and_selfplay_and_writes_the_teacher_data_like_the_local_pool(tmp_path, monkeypatch,
                                                                                           network):
    from dataclasses import replace

    from ops.celldiv import teacher as celldiv_teacher
    from ops.loong import teacher_targets as targets

    targets_cfg = targets.profile_config("test", replays=False)

    config = celldiv_league.LeagueConfig(players=("random", "easy", "medium"), games=4, sizes="4", seed=5)
    teacher_config = replace(celldiv_teacher.PROFILES["test"], iterations=1)
    teacher = celldiv_teacher.run(teacher_config, out_dir=tmp_path / "teacher").teacher_ckpt
    here = celldiv_teacher.generate_teacher_data(teacher, teacher_config, tmp_path / "here.parquet")
    home = Path(tempfile.mkdtemp(prefix="arena-", dir="/tmp"))  # short: Ray's socket paths are limited
    monkeypatch.setenv("ARENA_HOME", str(home))
    try:
        ray = RayExecutor(2)
        on_ray = celldiv_league.run(config, executor=ray)
        on_tasks = celldiv_league.run(config, executor=RayExecutor(2, actors=False))
        ray_games = loong_selfplay.run(SELFPLAY, tmp_path / "ray", executor=ray)
        on_ray_data = celldiv_teacher.generate_teacher_data(teacher, teacher_config, tmp_path / "ray.parquet",
                                                            executor=ray)
        assert on_ray_data.read_bytes() == here.read_bytes()  # the dataset: the same bytes
        on_ray_shards = loong_dataset.build(DATASET, tmp_path / "shards-ray", executor=ray).shards
        targets.run(targets_cfg, network[1], tmp_path / "targets-ray", executor=ray)  # the native teacher's targets
        shutdown_ray()
        assert any((home / "ray").glob("session_*"))  # the local Ray kept its files under ARENA_HOME
    finally:
        shutdown_ray()
        shutil.rmtree(home, ignore_errors=True)
    local = celldiv_league.run(config, executor=PoolExecutor(2))
    assert table_bytes(on_ray.result) == table_bytes(local.result) == table_bytes(on_tasks.result)
    local_games = loong_selfplay.run(SELFPLAY, tmp_path / "local", executor=PoolExecutor(2))
    here_shards = loong_dataset.build(DATASET, tmp_path / "shards-here").shards
    assert len(here_shards) == 2 and [p.read_bytes() for p in on_ray_shards] == [p.read_bytes() for p in here_shards]
    assert len(ray_games.replays) == 3 and replay_bytes(ray_games) == replay_bytes(local_games)
    here_targets = targets.run(targets_cfg, network[1], tmp_path / "targets-here")
    assert here_targets.decisions > 0 and [p.read_bytes() for p in here_targets.paths] == [
        p.read_bytes() for p in sorted((tmp_path / "targets-ray").glob("part-*.parquet"))]


def victim_and_killer(tmp_path: Path) -> tuple[list[WorkItem], list[int], threading.Thread]:
    """Three quick items and a victim, and a started thread that kills the victim's worker, by its pid (appended
    to the list), once the quick items have finished."""
    folder = str(tmp_path)
    items = [WorkItem("quick0", count_run, (folder, "quick0"), seed=0),
             WorkItem("quick1", count_run, (folder, "quick1"), seed=1),
             WorkItem("victim", victim, (folder,), seed=2),
             WorkItem("quick3", count_run, (folder, "quick3"), seed=3)]
    killed: list[int] = []
    return items, killed, kill_when_started(tmp_path, ("quick0", "quick1", "quick3"), killed)


def kill_when_started(tmp_path: Path, quick: tuple[str, ...], killed: list[int]) -> threading.Thread:
    """A thread that kills the victim's worker, by its pid, once the quick items have finished."""

    def killer():
        pids, deadline = tmp_path / "victim.pids", time.monotonic() + 60
        while time.monotonic() < deadline:
            if all(runs(tmp_path, n) for n in quick) and pids.exists() and pids.read_text().strip():
                pid = int(pids.read_text().split()[0])
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.05)

    thread = threading.Thread(target=killer)
    thread.start()
    return thread


def test_ray_actors_keep_what_they_loaded_and_a_killed_actor_has_its_item_retried(tmp_path, monkeypatch):
    home = Path(tempfile.mkdtemp(prefix="arena-", dir="/tmp"))  # short: Ray's socket paths are limited
    monkeypatch.setenv("ARENA_HOME", str(home))
    try:
        ray = RayExecutor(2)
        items = [WorkItem(f"load{k}", loaded_once, ("net-abc",), seed=k) for k in range(8)]
        first = gather(ray, items)
        again = gather(ray, items)  # the same actors, between runs too
        pids = set(ray.worker_pids())
        assert len(pids) == 2 and {pid for pid, _, _ in first + again} <= pids
        assert all(loads == 1 for _, loads, _ in first + again)  # each actor loaded the network once
        assert [s for _, _, s in first] == list(range(8))

        items, killed, thread = victim_and_killer(tmp_path)
        folder = str(tmp_path)
        outcomes = {o.index: o for o in ray.run(items)}
        thread.join()
        assert killed and killed[0] in pids, "the victim never started on an actor"
        assert [outcomes[k].value for k in range(4)] == [0, 1, 1002, 3]
        assert outcomes[2].attempts == 2 and all(outcomes[k].attempts == 1 for k in (0, 1, 3))
        victim_pids = [int(p) for p in (tmp_path / "victim.pids").read_text().split()]
        assert len(victim_pids) == 2 and victim_pids[0] == killed[0] != victim_pids[1]
        assert [runs(tmp_path, n) for n in ("quick0", "quick1", "quick3")] == [1, 1, 1]
        assert len(ray.worker_pids()) == 2 and killed[0] not in ray.worker_pids()  # replaced

        doomed = [WorkItem("fine", count_run, (folder, "fine"), seed=5), WorkItem("doomed", suicide, (folder,), seed=6)]
        with pytest.raises(WorkFailed, match=rf"doomed failed after {MAX_ATTEMPTS} attempts: WorkerDied: the Ray"):
            gather(ray, doomed)
        assert runs(tmp_path, "suicide") == MAX_ATTEMPTS and runs(tmp_path, "fine") == 1

        with pytest.raises(ValueError, match=r"gpus_per_worker: 0.5 asked, but the Ray cluster has 0 GPUs"):
            gather(RayExecutor(2, gpus_per_worker=0.5), items)
    finally:
        shutdown_ray()
        shutil.rmtree(home, ignore_errors=True)


def test_a_celldiv_pairing_is_split_into_whole_pairs_of_games_that_cover_it_once():
    for games in (1, 2, 3, 19, 20, 21, 40, 41, 100, 101):
        n = celldiv_league.parts_of(games)
        assert n == -(-games // celldiv_league.GAMES_PER_PART)
        spans = [celldiv_league.part_games(games, (k, n)) for k in range(n)]
        assert all(first % 2 == 0 and count >= 1 for first, count in spans)
        assert [f for f, _ in spans[1:]] == [f + c for f, c in spans[:-1]]  # contiguous, in order
        assert spans[0][0] == 0 and sum(c for _, c in spans) == games
    split = celldiv_league.play_pairing("random", "easy", 41, "4-6", None, (1, 3), seed=3)
    whole = play_match("random", "easy", games=41, sizes="4-6", seed=3)
    first, count = celldiv_league.part_games(41, (1, 3))
    assert split.margins == whole.margins[first:first + count]

