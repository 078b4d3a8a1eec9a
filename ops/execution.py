"""The execution seam: run independent work items (league pairings, game batches) in this process, on a
local process pool or on Ray, and get their outcomes as they finish.

Every item is a picklable callable with its arguments, its own seed and a name, so its result does not
depend on where or in which order it ran; ``gather`` puts the results back in item order. A worker that
dies mid-item (a killed process, a raised error) has the item retried, up to ``MAX_ATTEMPTS`` runs in
all; what finished before is kept and never run again.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Protocol

from games.stats import MatchTally

MAX_ATTEMPTS = 3
"""Runs of one item at most (the first and two retries) before it is reported as failed."""
BACKENDS = ("inprocess", "local", "ray")
WAKE_S = 0.5  # how often a waiting parent looks for Ctrl-C
POOL_CONTEXT = "spawn"  # torch and wasmtime start threads: a forked child could inherit a held lock


@dataclass(frozen=True)
class WorkItem:
    """One independent piece of work: ``fn(*args, seed=seed)``; ``name`` identifies it in errors and logs."""

    name: str
    fn: Callable[..., Any]
    args: tuple = ()
    seed: int = 0

    def __call__(self) -> Any:
        return self.fn(*self.args, seed=self.seed)


@dataclass
class Outcome:
    """What became of the item at ``index``: its ``value``, or the ``error`` of its last attempt."""

    index: int
    name: str
    value: Any = None
    error: BaseException | None = None
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return self.error is None


class WorkFailed(RuntimeError):
    """Items that failed every attempt; the message names each one and its last error."""

    def __init__(self, failed: list[Outcome]) -> None:
        self.failed = failed
        super().__init__("; ".join(f"{o.name} failed after {o.attempts} attempts: {describe(o.error)}"
                                   for o in failed))


_CACHE: dict[str, Any] = {}
CACHE_LIMIT = 4  # objects a worker keeps (networks, compiled builds); the oldest goes first


def cached(key: str, load: Callable[[], Any]) -> Any:
    """The object ``load()`` made for ``key`` in this process, made once: a worker (pool process, Ray actor)
    keeps a loaded network or compiled build between the items that name the same key. The key must name
    the content (a weights hash, a build id), never a path whose file may change."""
    if key not in _CACHE:
        while len(_CACHE) >= CACHE_LIMIT:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = load()
    return _CACHE[key]


def describe(error: BaseException | None) -> str:
    return f"{type(error).__name__}: {error}"


class Executor(Protocol):
    backend: str
    workers: int

    def run(self, items: Sequence[WorkItem]) -> Iterator[Outcome]:
        """Every item's outcome, in the order they finish (retries included, so each index comes once)."""
        ...


def gather(executor: Executor, items: Sequence[WorkItem],
           on_done: Callable[[Outcome, int, int], None] | None = None) -> list[Any]:
    """The items' values in item order; ``on_done(outcome, done, total)`` as each finishes. Raises
    ``WorkFailed`` naming every item that failed all its attempts (after the others have finished)."""
    outcomes: dict[int, Outcome] = {}
    for o in executor.run(items):
        outcomes[o.index] = o
        if on_done:
            on_done(o, len(outcomes), len(items))
    failed = [outcomes[i] for i in sorted(outcomes) if not outcomes[i].ok]
    if failed:
        raise WorkFailed(failed)
    return [outcomes[i].value for i in range(len(items))]


def league_pairings(executor: Executor, play: Callable[..., Any], *args: Any,
                    parts: int | Callable[[str, str], int] = 1):
    """A ``map_pairs`` for ``games.league.round_robin``: each pairing is played as ``parts`` items
    ``play(a, b, *args, (k, parts), seed=pair_seed)`` named 'a vs b' ('a vs b, part k+1/n'), k = 0 .. parts-1,
    whose tallies are merged in part order (``play`` must play the same games however it is split; ``parts``
    never depends on the number of workers). With ``parts`` 1 the item is ``play(a, b, *args, seed=...)``.
    ``parts`` may be a function of the pairing (a, b) (pairings of different lengths); then every item gets
    its part, (0, 1) included. A pairing with a part that failed every attempt comes back as that part's error
    (the league records it as a failure and goes on)."""
    if not callable(parts) and parts < 1:
        raise ValueError(f"parts: must be at least 1, got {parts}")
    per_pair = callable(parts)
    parts_of: Callable[[str, str], int] = parts if per_pair else (lambda a, b: parts)

    def map_pairs(jobs: list[tuple[str, str, int]]) -> Iterator[tuple[int, Any]]:
        items: list[WorkItem] = []
        owner: list[tuple[int, int]] = []  # item index -> (pairing, part)
        counts = []
        for pair, (a, b, s) in enumerate(jobs):
            n = parts_of(a, b)
            if n < 1:
                raise ValueError(f"parts: must be at least 1, got {n} for {a} vs {b}")
            counts.append(n)
            for k in range(n):
                if n == 1 and not per_pair:
                    items.append(WorkItem(f"{a} vs {b}", play, (a, b, *args), seed=s))
                else:
                    name = f"{a} vs {b}" if n == 1 else f"{a} vs {b}, part {k + 1}/{n}"
                    items.append(WorkItem(name, play, (a, b, *args, (k, n)), seed=s))
                owner.append((pair, k))
        done: dict[int, dict[int, Any]] = {}
        for o in executor.run(items):
            pair, k = owner[o.index]
            done.setdefault(pair, {})[k] = o.value if o.ok else o.error
            if len(done[pair]) < counts[pair]:
                continue
            results = [done[pair][k] for k in range(counts[pair])]
            errors = [r for r in results if isinstance(r, BaseException)]
            a, b, _ = jobs[pair]
            yield pair, errors[0] if errors else (results[0] if len(results) == 1 else
                                                   MatchTally.merged(a, b, results))

    return map_pairs


# --------------------------------------------------------------------------------------- in-process
class InProcessExecutor:
    """Items one after the other in this process (tests, the CLI's default; Ctrl-C reaches the item)."""

    backend = "inprocess"
    workers = 1

    def run(self, items: Sequence[WorkItem]) -> Iterator[Outcome]:
        for k, item in enumerate(items):
            for attempt in range(1, MAX_ATTEMPTS + 1):
                try:
                    value = item()
                except Exception as e:  # noqa: BLE001 - retried, then reported by name
                    if attempt == MAX_ATTEMPTS:
                        yield Outcome(k, item.name, error=e, attempts=attempt)
                else:
                    yield Outcome(k, item.name, value=value, attempts=attempt)
                    break


# ------------------------------------------------------------------------------------- process pool
def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the parent, which stops the pool and keeps what finished."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_item(item: WorkItem) -> Any:
    return item()


_POOLS: dict[int, ProcessPoolExecutor] = {}  # this process's pools by size, kept between runs


class PoolExecutor:
    """A local pool of ``workers`` processes (spawned, not forked), kept between runs (one pool a size in this
    process), so its workers keep what ``cached`` loaded and a run does not pay the pool's start again. At
    most one item runs per worker, so when a worker dies the items then in flight are the ones retried (each
    counts an attempt: the pool cannot tell which of them the dead worker held); the pool is then started
    afresh. A run abandoned (Ctrl-C, an error) stops the pool's workers."""

    backend = "local"

    def __init__(self, workers: int = 2) -> None:
        if workers < 1:
            raise ValueError(f"workers: must be at least 1, got {workers}")
        self.workers = workers

    def _pool(self) -> ProcessPoolExecutor:
        if self.workers not in _POOLS:
            if not _POOLS:
                _close_at_exit()
            _POOLS[self.workers] = ProcessPoolExecutor(
                self.workers, mp_context=multiprocessing.get_context(POOL_CONTEXT), initializer=_ignore_sigint)
        return _POOLS[self.workers]

    def _drop(self, pool: ProcessPoolExecutor) -> None:
        if _POOLS.get(self.workers) is pool:
            del _POOLS[self.workers]

    def run(self, items: Sequence[WorkItem]) -> Iterator[Outcome]:
        if not items:
            return
        todo = list(range(len(items)))[::-1]  # popped from the end: item order
        attempts = [0] * len(items)
        pool = self._pool()
        running: dict[Future, int] = {}
        complete = False
        try:
            while todo or running:
                while todo and len(running) < self.workers:
                    k = todo.pop()
                    attempts[k] += 1
                    running[pool.submit(_run_item, items[k])] = k
                finished: set = set()
                while not finished:  # woken twice a second, so that Ctrl-C is seen while items run
                    finished, _ = wait(running, timeout=WAKE_S, return_when=FIRST_COMPLETED)
                broken = False
                for f in finished:
                    k = running.pop(f)
                    try:
                        value = f.result()
                    except BrokenProcessPool as e:
                        broken = True
                        error: BaseException | None = e
                    except Exception as e:  # noqa: BLE001 - retried, then reported by name
                        error = e
                    else:
                        yield Outcome(k, items[k].name, value=value, attempts=attempts[k])
                        continue
                    if attempts[k] >= MAX_ATTEMPTS:
                        yield Outcome(k, items[k].name, error=error, attempts=attempts[k])
                    else:
                        todo.append(k)
                if broken:  # every other future of a broken pool fails too: retry those in flight
                    for f, k in list(running.items()):
                        running.pop(f)
                        if attempts[k] >= MAX_ATTEMPTS:
                            yield Outcome(k, items[k].name, error=BrokenProcessPool("a worker died"),
                                          attempts=attempts[k])
                        else:
                            todo.append(k)
                    self._drop(pool)
                    pool.shutdown(wait=True)
                    pool = self._pool()
            complete = True
        finally:
            if not complete:  # abandoned with items in flight: stop the workers, start afresh next time
                self._drop(pool)
                _stop(pool)


def close_pools() -> None:
    """Stop this process's kept pools (benchmarks timing a cold start, tests)."""
    for workers in list(_POOLS):
        _stop(_POOLS.pop(workers))


def _shut_pools() -> None:
    for workers in list(_POOLS):
        _POOLS.pop(workers).shutdown(wait=True)  # idle workers: they leave at once


_FINALIZER: list = []


def _close_at_exit() -> None:
    """Shut the kept pools down when this process exits, before it waits for its children. A process that is
    itself a multiprocessing child (a Dagster step) joins its children at exit before the interpreter's atexit
    handlers run, and the pool's idle workers wait for a shutdown only those handlers would send: without this
    finalizer that exit never ends."""
    from multiprocessing import util

    if not _FINALIZER:
        _FINALIZER.append(util.Finalize(None, _shut_pools, exitpriority=100))


def _stop(pool: ProcessPoolExecutor) -> None:
    """Shut the pool down without waiting for items in flight (Ctrl-C, an abandoned iterator)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.is_alive():
            p.terminate()
    for p in processes:
        p.join(timeout=5)


# ---------------------------------------------------------------------------------------------- Ray
class WorkerDied(RuntimeError):
    """A Ray worker (task process or actor) died while it held an item."""


class _RayWorker:
    """A Ray actor: one long-lived process that runs items one at a time and keeps what ``cached`` loaded."""

    def pid(self) -> int:
        return os.getpid()

    def run(self, item: WorkItem) -> Any:
        return item()


_RAY_CALL = None
_RAY_ACTOR = None
_ACTORS: list = []  # this process's actors, shared by its Ray executors: each holds a CPU while it lives
_ACTOR_GPUS = [0.0]  # the GPU share they were started with


def _ray_remote():
    import ray

    global _RAY_CALL
    if _RAY_CALL is None:
        _RAY_CALL = ray.remote(max_retries=0)(_run_item)  # retries are ours: the same policy as the pool
    return _RAY_CALL


def _ray_actor_class():
    import ray

    global _RAY_ACTOR
    if _RAY_ACTOR is None:
        _RAY_ACTOR = ray.remote(max_restarts=0, max_task_retries=0)(_RayWorker)  # a dead actor: ours to replace
    return _RAY_ACTOR


class RayExecutor:
    """Ray on the cluster at ``address`` ('auto', 'ray://host:10001'), or on a local Ray of ``workers`` CPUs
    started here when ``address`` is empty (its files under ARENA_HOME/ray; Ray's socket paths must stay under
    107 characters). At most ``workers`` items are in flight.

    ``actors`` (default): ``workers`` Ray actors, long-lived processes kept between items and between runs (one
    set a process, shared by its executors: an actor holds its CPU while it lives), so a worker keeps a loaded
    network or compiled build (``cached``); a dead actor is replaced and its item retried. Otherwise one Ray
    task per item (the process's actors are stopped first, so that the tasks find free CPUs). Each worker asks
    Ray for one CPU and ``gpus_per_worker`` GPUs (a fraction shares a GPU among workers; teacher workers only)."""

    backend = "ray"

    def __init__(self, workers: int = 2, address: str = "", *, actors: bool = True,
                 gpus_per_worker: float = 0.0) -> None:
        if workers < 1:
            raise ValueError(f"workers: must be at least 1, got {workers}")
        if not 0.0 <= gpus_per_worker <= 1.0:
            raise ValueError(f"gpus_per_worker: must be within 0 .. 1, got {gpus_per_worker}")
        self.workers, self.address = workers, address
        self.actors, self.gpus_per_worker = actors, gpus_per_worker

    def connect(self) -> None:
        """Start or join Ray, and check that the cluster can give what this executor asks."""
        import ray

        from games.native_signals import native_signal_handlers_kept

        if not ray.is_initialized():
            with native_signal_handlers_kept():  # the judge's wasm traps stay caught in this process
                if self.address:
                    ray.init(address=self.address, log_to_driver=False)
                else:
                    from ops.store import arena_home

                    ray.init(num_cpus=self.workers, include_dashboard=False, log_to_driver=False,
                             _temp_dir=str((arena_home() / "ray").resolve()))  # sessions and logs under ARENA_HOME
        self.check()

    def check(self) -> None:
        """Refuse a GPU share the cluster cannot give (Ray would wait for it for ever)."""
        import ray

        if self.gpus_per_worker > 0:
            gpus = ray.cluster_resources().get("GPU", 0.0)
            if gpus < self.gpus_per_worker:
                raise ValueError(f"gpus_per_worker: {self.gpus_per_worker} asked, but the Ray cluster has "
                                 f"{gpus:g} GPUs")

    def _options(self) -> dict:
        return {"num_cpus": 1, "num_gpus": self.gpus_per_worker}

    def _new_actor(self):
        return _ray_actor_class().options(**self._options()).remote()

    def worker_pids(self) -> list[int]:
        """The pids of this executor's actors (tests kill one by its pid)."""
        import ray

        return [ray.get(a.pid.remote()) for a in _ACTORS]

    def run(self, items: Sequence[WorkItem]) -> Iterator[Outcome]:
        self.connect()
        if self.actors:
            yield from self._run_actors(items)
        else:
            yield from self._run_tasks(items)

    def _run_tasks(self, items: Sequence[WorkItem]) -> Iterator[Outcome]:
        import ray

        self.close()
        call = _ray_remote().options(**self._options())
        todo = list(range(len(items)))[::-1]
        attempts = [0] * len(items)
        running: dict[Any, int] = {}
        try:
            while todo or running:
                while todo and len(running) < self.workers:
                    k = todo.pop()
                    attempts[k] += 1
                    running[call.remote(items[k])] = k
                finished: list = []
                while not finished:
                    finished, _ = ray.wait(list(running), num_returns=1, timeout=WAKE_S)
                for ref in finished:
                    k = running.pop(ref)
                    try:
                        value = ray.get(ref)
                    except Exception as e:  # noqa: BLE001 - a raised error or a dead worker: retried
                        if attempts[k] >= MAX_ATTEMPTS:
                            yield Outcome(k, items[k].name, error=_cause(e), attempts=attempts[k])
                        else:
                            todo.append(k)
                    else:
                        yield Outcome(k, items[k].name, value=value, attempts=attempts[k])
        finally:
            for ref in running:
                ray.cancel(ref, force=True)

    def _run_actors(self, items: Sequence[WorkItem]) -> Iterator[Outcome]:
        import ray
        from ray.exceptions import RayActorError

        if _ACTOR_GPUS[0] != self.gpus_per_worker:
            self.close()
            _ACTOR_GPUS[0] = self.gpus_per_worker
        while len(_ACTORS) < self.workers:
            _ACTORS.append(self._new_actor())
        free = list(_ACTORS[: self.workers])[::-1]
        todo = list(range(len(items)))[::-1]
        attempts = [0] * len(items)
        running: dict[Any, tuple[int, Any]] = {}
        try:
            while todo or running:
                while todo and free:
                    actor, k = free.pop(), todo.pop()
                    attempts[k] += 1
                    running[actor.run.remote(items[k])] = (k, actor)
                finished: list = []
                while not finished:
                    finished, _ = ray.wait(list(running), num_returns=1, timeout=WAKE_S)
                for ref in finished:
                    k, actor = running.pop(ref)
                    try:
                        value = ray.get(ref)
                    except RayActorError:  # the actor's process died: a new one takes its place
                        error: BaseException = WorkerDied(f"the Ray worker running {items[k].name} died")
                        actor = self._replace(actor)
                    except Exception as e:  # noqa: BLE001 - the item raised: retried on the same actor
                        error = _cause(e)
                    else:
                        free.append(actor)
                        yield Outcome(k, items[k].name, value=value, attempts=attempts[k])
                        continue
                    free.append(actor)
                    if attempts[k] >= MAX_ATTEMPTS:
                        yield Outcome(k, items[k].name, error=error, attempts=attempts[k])
                    else:
                        todo.append(k)
        finally:  # an abandoned run (Ctrl-C, an error): stop the actors still busy, keep the idle ones
            for _, actor in running.values():
                self._replace(actor, start=False)

    def _replace(self, actor, *, start: bool = True):
        import ray

        ray.kill(actor, no_restart=True)
        _ACTORS[:] = [a for a in _ACTORS if a is not actor]
        if not start:
            return None
        fresh = self._new_actor()
        _ACTORS.append(fresh)
        return fresh

    @staticmethod
    def close() -> None:
        """Stop this process's actors (they also end with the Ray session)."""
        import ray

        if ray.is_initialized():
            for actor in _ACTORS:
                ray.kill(actor, no_restart=True)
        _ACTORS.clear()


def _cause(error: BaseException) -> BaseException:
    """The item's own exception inside Ray's wrapper (so failures read alike on every backend)."""
    cause = getattr(error, "cause", None)
    return cause if isinstance(cause, BaseException) else error


def shutdown_ray() -> None:
    """Stop the Ray this process started or joined (tests, benchmarks)."""
    import ray

    if ray.is_initialized():
        from games.native_signals import native_signal_handlers_kept

        RayExecutor.close()
        with native_signal_handlers_kept():  # ray.shutdown leaves SIGSEGV, SIGILL... at SIG_DFL
            ray.shutdown()


# ------------------------------------------------------------------------------------------ factory
def make_executor(backend: str = "local", workers: int = 2, ray_address: str = "", *, ray_actors: bool = True,
                  gpus_per_worker: float = 0.0) -> Executor:
    """The executor for a backend name: 'inprocess', 'local' (a process pool) or 'ray' (actors, or tasks
    when ``ray_actors`` is false; ``gpus_per_worker`` GPUs each, Ray only)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend: unknown {backend!r} (known: {', '.join(BACKENDS)})")
    if workers < 1:
        raise ValueError(f"workers: must be at least 1, got {workers}")
    if backend == "inprocess":
        return InProcessExecutor()
    if backend == "local":
        return PoolExecutor(workers)
    return RayExecutor(workers, ray_address, actors=ray_actors, gpus_per_worker=gpus_per_worker)
