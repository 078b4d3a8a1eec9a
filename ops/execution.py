"""The execution seam: run independent work items (league pairings, game batches) in this process, on a
local process pool or on Ray, and get their outcomes as they finish.

Every item is a picklable callable with its arguments, its own seed and a name, so its result does not
depend on where or in which order it ran; ``gather`` puts the results back in item order. A worker that
dies mid-item (a killed process, a raised error) has the item retried, up to ``MAX_ATTEMPTS`` runs in
all; what finished before is kept and never run again.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Protocol

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


def league_pairings(executor: Executor, play: Callable[..., Any], *args: Any):
    """A ``map_pairs`` for ``games.league.round_robin``: each pairing is the item
    ``play(a, b, *args, seed=pair_seed)`` named 'a vs b'; a pairing that failed every attempt comes back
    as its error (the league records it as a failure and goes on)."""

    def map_pairs(jobs: list[tuple[str, str, int]]) -> Iterator[tuple[int, Any]]:
        items = [WorkItem(f"{a} vs {b}", play, (a, b, *args), seed=s) for a, b, s in jobs]
        for o in executor.run(items):
            yield o.index, (o.value if o.ok else o.error)

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


class PoolExecutor:
    """A local pool of ``workers`` processes (spawned, not forked). At most one item runs per worker, so
    when a worker dies the items then in flight are the ones retried (each counts an attempt: the pool
    cannot tell which of them the dead worker held); the pool is then started afresh."""

    backend = "local"

    def __init__(self, workers: int = 2) -> None:
        if workers < 1:
            raise ValueError(f"workers: must be at least 1, got {workers}")
        self.workers = workers

    def _pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context(POOL_CONTEXT),
                                   initializer=_ignore_sigint)

    def run(self, items: Sequence[WorkItem]) -> Iterator[Outcome]:
        if not items:
            return
        todo = list(range(len(items)))[::-1]  # popped from the end: item order
        attempts = [0] * len(items)
        pool = self._pool()
        running: dict[Future, int] = {}
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
                    pool.shutdown(wait=True)
                    pool = self._pool()
        finally:
            _stop(pool)


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
def _ray_remote():
    import ray

    global _RAY_CALL
    if _RAY_CALL is None:
        _RAY_CALL = ray.remote(max_retries=0)(_run_item)  # retries are ours: the same policy as the pool
    return _RAY_CALL


_RAY_CALL = None


class RayExecutor:
    """Ray tasks on the cluster at ``address`` ('auto', 'ray://host:10001'), or on a local Ray of
    ``workers`` CPUs started here when ``address`` is empty (its files under ARENA_HOME/ray; Ray's socket
    paths must stay under 107 characters). At most ``workers`` tasks are in flight."""

    backend = "ray"

    def __init__(self, workers: int = 2, address: str = "") -> None:
        if workers < 1:
            raise ValueError(f"workers: must be at least 1, got {workers}")
        self.workers, self.address = workers, address

    def _connect(self) -> None:
        import ray

        if ray.is_initialized():
            return
        if self.address:
            ray.init(address=self.address, log_to_driver=False)
        else:
            from ops.store import arena_home

            ray.init(num_cpus=self.workers, include_dashboard=False, log_to_driver=False,
                     _temp_dir=str((arena_home() / "ray").resolve()))  # sessions and logs under ARENA_HOME

    def run(self, items: Sequence[WorkItem]) -> Iterator[Outcome]:
        import ray

        self._connect()
        call = _ray_remote()
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


def _cause(error: BaseException) -> BaseException:
    """The item's own exception inside Ray's wrapper (so failures read alike on every backend)."""
    cause = getattr(error, "cause", None)
    return cause if isinstance(cause, BaseException) else error


def shutdown_ray() -> None:
    """Stop the Ray this process started or joined (tests, benchmarks)."""
    import ray

    if ray.is_initialized():
        ray.shutdown()


# ------------------------------------------------------------------------------------------ factory
def make_executor(backend: str = "local", workers: int = 2, ray_address: str = "") -> Executor:
    """The executor for a backend name: 'inprocess', 'local' (a process pool) or 'ray'."""
    if backend not in BACKENDS:
        raise ValueError(f"backend: unknown {backend!r} (known: {', '.join(BACKENDS)})")
    if workers < 1:
        raise ValueError(f"workers: must be at least 1, got {workers}")
    if backend == "inprocess":
        return InProcessExecutor()
    if backend == "local":
        return PoolExecutor(workers)
    return RayExecutor(workers, ray_address)
