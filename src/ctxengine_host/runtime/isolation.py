"""Running engine calls under timeouts, and the fault policy of the fault table in docs/design.md.

Every engine call goes through :class:`EngineGuard`: through the engine's
pluggy plugin manager (so observer plugins see it), on a pool worker with a
timeout (``compress``/``maintain``: ``context_timeout_seconds``, 0 = inline;
every other method: ``hook_timeout_seconds``). When the engine raises or
times out, the guard quarantines it for the process (a :class:`QuarantineLog`
record other processes can read), switches the session to the default engine
and runs the call there. The default engine's own failure is raised as
:class:`EngineFailure`. A ``SummarizerError`` passes through untouched: the
summarizer backend failed for good, which is not the engine's fault. A worker
stuck in a hung call is written off and replaced, so hung engines cannot
exhaust the pool.
"""

from __future__ import annotations

import _thread
import inspect
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import accumulate
from typing import Any

from ..contract.bridge import engine_plugin_manager
from ..contract.engine import ContextEngine
from ..contract.hookspecs import ContractSpec
from ..contract.signatures import implemented_methods
from ..stores.quarantine import QuarantineSink
from ..summarizer.errors import SummarizerError
from .coroutines import CoroutineRunner

log = logging.getLogger("ctxengine.runtime")

#: Methods that run under ``context_timeout_seconds`` (0 = inline); the rest use the hook timeout.
LONG_METHODS = frozenset({"compress", "maintain"})

#: Base-class defaults the host calls even when the engine does not override them.
ROUTED_DEFAULTS = frozenset(
    {
        "update_model",
        "get_status",
        "on_session_reset",
        "get_tool_schemas",
        "handle_tool_call",
        "clone_for_agent",
    }
)

#: Returned by :meth:`EngineGuard.call` when the engine now in charge lacks the method.
SKIPPED: Any = type("Skipped", (), {"__repr__": lambda self: "SKIPPED"})()

_quarantined: set[str] = set()
_quarantine_lock = threading.Lock()


def is_quarantined(name: str) -> bool:
    with _quarantine_lock:
        return name in _quarantined


def forget_quarantine(name: str | None = None) -> None:
    """Lift this process's quarantine (tests, ``doctor --clear-quarantine``)."""
    with _quarantine_lock:
        if name is None:
            _quarantined.clear()
        else:
            _quarantined.discard(name)


class CallTimeout(TimeoutError):
    """An engine call ran past its timeout; its late result will be discarded."""


class PoolExhausted(RuntimeError):
    """Too many engine calls are hung at once to start another."""


class EngineFailure(RuntimeError):
    """The default engine failed: surfaced to the caller, the transcript is unchanged."""

    def __init__(self, engine: str, method: str, cause: BaseException) -> None:
        super().__init__(
            f"the default engine {engine!r} failed in {method}(): {cause!r}; the transcript "
            "is unchanged (check the engine's installation or report the bug)"
        )
        self.engine = engine
        self.method = method
        self.cause = cause


class _Job:
    """Calls handed to a worker in one hand-off; ``done`` is held until the worker has
    settled them.

    A bare lock is the cheapest hand-off there is (no ``Event``/``Condition``, whose
    wait allocates a lock and takes two more): the caller blocks on ``done``, the
    worker releases it. ``step`` is the call running (its index and start), so the
    caller can hold each call to its own timeout. ``finished``, ``abandoned`` and a
    move to the next step change only under the pool's lock, so a timeout and a late
    finish cannot both claim a step, and an abandoned job starts no further call.
    """

    __slots__ = ("abandoned", "done", "failure", "finished", "results", "step", "steps", "stop")

    def __init__(
        self,
        steps: Sequence[tuple[Callable[[], Any], float | None]],
        stop: Callable[[int, Any], bool] | None = None,
    ) -> None:
        self.steps = steps
        self.stop = stop
        self.done = _thread.allocate_lock()
        self.done.acquire()
        self.results: list[Any] = []
        self.failure: tuple[int, BaseException] | None = None
        self.step = (0, 0.0)  # set when the job is handed over
        self.finished = False
        self.abandoned = False


class WorkerPool:
    """Daemon worker threads for engine calls with timeouts.

    At most ``max_workers`` calls run at once; a call that times out frees its
    slot (the pool starts a replacement) while its thread stays written off until
    the call returns. At most ``max_stuck`` such threads may exist at once.
    A call that returns an awaitable (a coroutine engine method) is settled by
    ``coroutines`` within the same timeout.
    """

    def __init__(
        self, max_workers: int = 32, max_stuck: int = 64, coroutines: CoroutineRunner | None = None
    ) -> None:
        self.coroutines = coroutines or CoroutineRunner()
        self.max_workers = max_workers
        self.max_stuck = max_stuck
        self._cond = threading.Condition(threading.Lock())
        self._waiting = 0  # callers waiting in _acquire for a free slot
        self._idle: list[_Worker] = []
        self._busy = 0
        self.stuck = 0
        self.created = 0
        self._closed = False

    def run(self, fn: Callable[[], Any], timeout: float | None) -> Any:
        """``fn()`` on a worker within ``timeout`` seconds (None or 0: inline)."""
        if not timeout or timeout <= 0:
            return self.coroutines.settle(fn(), None)
        results, failure = self.run_steps([(fn, timeout)])
        if failure is not None:
            raise failure[1]
        return results[0]

    def run_steps(
        self,
        steps: Sequence[tuple[Callable[[], Any], float | None]],
        stop: Callable[[int, Any], bool] | None = None,
    ) -> tuple[list[Any], tuple[int, BaseException] | None]:
        """Consecutive calls on one worker, in one hand-off, each within its own timeout
        (None: no limit): the results of the calls that returned, and the index and
        exception (:class:`CallTimeout` included) of the first that did not, after which
        no further call starts. ``stop(index, result)``, called on the worker after each
        call, ends the run early when true.

        A hand-off costs two thread switches (tens of microseconds, far more on a loaded
        machine); calls the host makes back to back share one. The caller is not woken as
        the worker moves on: it sleeps until the shortest limit among the calls not yet
        done, counted from the start of the one it last saw running, which no later call's
        own limit can end before.
        """
        limits = [timeout if timeout and timeout > 0 else math.inf for _, timeout in steps]
        soonest = list(accumulate(reversed(limits), min))[::-1]
        job = _Job(steps, stop)
        worker = self._acquire()
        job.step = (0, time.monotonic())
        worker.start(job)
        while True:
            index, started = job.step
            wake = started + soonest[index] - time.monotonic()
            if job.done.acquire(True, max(0.0, wake) if wake != math.inf else -1):
                return job.results, job.failure
            with self._cond:
                if job.finished or job.step[0] != index:
                    continue  # it finished, or moved on to the next call, meanwhile
                if time.monotonic() < started + limits[index]:
                    continue  # woken for a later call's shorter limit: this one has time
                job.abandoned = True
                self._busy -= 1
                self.stuck += 1
                self._wake_waiter()
                error = CallTimeout(f"no answer within {limits[index]:g} s")
                return job.results[:index], (index, error)

    def _play(self, job: _Job) -> None:
        """Run ``job``'s calls in order on this (worker) thread, until one fails."""
        settle = self.coroutines.settle
        for index, (fn, timeout) in enumerate(job.steps):
            if index:
                with self._cond:
                    if job.abandoned:
                        return
                    job.step = (index, time.monotonic())
            try:
                result = settle(fn(), timeout)
            except BaseException as exc:
                job.failure = (index, exc)
                return
            job.results.append(result)
            if job.stop is not None and job.stop(index, result):
                return

    def _acquire(self) -> _Worker:
        with self._cond:
            while True:
                if self._closed:
                    raise RuntimeError("the engine worker pool is closed")
                if self._idle:
                    self._busy += 1
                    return self._idle.pop()
                if self._busy < self.max_workers:
                    if self.stuck >= self.max_stuck:
                        raise PoolExhausted(
                            f"{self.stuck} engine calls are hung; refusing to start more"
                        )
                    self._busy += 1
                    self.created += 1
                    return _Worker(self)
                self._waiting += 1
                try:
                    self._cond.wait()
                finally:
                    self._waiting -= 1

    def _wake_waiter(self) -> None:
        """A slot came free: wake one caller waiting for it (call with ``_cond`` held)."""
        if self._waiting:
            self._cond.notify()

    def _finished(self, worker: _Worker, job: _Job) -> bool:
        """Settle ``job``; True when ``worker`` goes back to the idle list."""
        with self._cond:
            job.finished = True
            job.done.release()
            if job.abandoned:
                self.stuck -= 1
            else:
                self._busy -= 1
            self._wake_waiter()
            if self._closed:
                return False
            self._idle.append(worker)
            return True

    def close(self) -> None:
        with self._cond:
            self._closed = True
            for worker in self._idle:
                worker.stop()
            self._idle.clear()
            self._cond.notify_all()
        self.coroutines.close()


class _Worker:
    """One daemon thread running the jobs handed to it, one at a time.

    ``_wake`` is held while the worker has nothing to do; :meth:`start` puts a job
    in the slot and releases it (a job is only handed to an idle worker).
    """

    def __init__(self, pool: WorkerPool) -> None:
        self._pool = pool
        self._wake = _thread.allocate_lock()
        self._wake.acquire()
        self._job: _Job | None = None
        threading.Thread(target=self._loop, name="ctxengine-engine-call", daemon=True).start()

    def start(self, job: _Job | None) -> None:
        self._job = job
        self._wake.release()

    def stop(self) -> None:
        self.start(None)

    def _loop(self) -> None:
        while True:
            self._wake.acquire()
            job, self._job = self._job, None
            if job is None:
                return
            self._pool._play(job)
            if not self._pool._finished(self, job):
                return


@cache
def _spec_defaults(method: str) -> dict[str, Any]:
    params = inspect.signature(getattr(ContractSpec, method)).parameters
    return {
        name: (None if p.default is inspect.Parameter.empty else p.default)
        for name, p in params.items()
        if name != "self"
    }


def routed_methods(engine: object) -> frozenset[str]:
    """Methods the host calls on ``engine``: what it implements plus the routed defaults."""
    own = implemented_methods(engine)
    defaults = {m for m in ROUTED_DEFAULTS if callable(getattr(engine, m, None))}
    return own | defaults


@dataclass(frozen=True)
class Timeouts:
    hook_seconds: float = 10.0
    context_seconds: float = 120.0

    def for_method(self, method: str) -> float | None:
        seconds = self.context_seconds if method in LONG_METHODS else self.hook_seconds
        return seconds if seconds > 0 else None


class EngineHandle:
    """One engine instance and the plugin manager its calls go through.

    An engine in a worker process (:mod:`.process_engine`) says which methods it
    routes and implements (``ctxengine_routes``), times its own calls (the worker
    is killed on timeout, so the guard calls it inline) and has a worker to stop.
    """

    def __init__(self, engine: object, name: str, *, is_default: bool, observers=()) -> None:
        self.engine = engine
        self.name = name
        self.is_default = is_default
        routes = getattr(engine, "ctxengine_routes", None)
        if routes is None:
            self.methods = routed_methods(engine)
            self.implemented = implemented_methods(engine)
        else:
            self.methods, self.implemented = routes
        self.self_timed = routes is not None
        self._pm = engine_plugin_manager(engine, observers, self.methods)
        #: Routed defaults that run only our own code (the base class's, no observer):
        #: called inline, without a thread hop. Everything else keeps its timeout.
        self.inline = (
            frozenset()
            if self.self_timed or observers
            else frozenset(m for m in self.methods - self.implemented if _host_default(engine, m))
        )

    def close(self) -> None:
        """Stop the engine's worker process, if it has one (quarantined or disposed)."""
        closer = getattr(self.engine, "ctxengine_close", None) if self.self_timed else None
        if closer is not None:
            try:
                closer()
            except Exception:
                log.exception("stopping the worker process of engine %r failed", self.name)

    def invoke(self, method: str, kwargs: dict[str, Any]) -> Any:
        args = dict(_spec_defaults(method))
        args.update(kwargs)
        return getattr(self._pm.hook, method)(**args)


class EngineGuard:
    """The engine of one session (or the prototype) under the fault policy.

    ``make_default`` builds a default-engine handle when the engine is
    quarantined; ``on_fallback`` catches it up (update_model, session start,
    bootstrap) before the failed call is retried on it.
    """

    def __init__(
        self,
        handle: EngineHandle,
        *,
        pool: WorkerPool,
        timeouts: Timeouts,
        quarantine: QuarantineSink,
        make_default: Callable[[], EngineHandle],
        on_fallback: Callable[[EngineGuard], None] | None = None,
    ) -> None:
        self.handle = handle
        self.pool = pool
        self.timeouts = timeouts
        self.quarantine = quarantine
        self.make_default = make_default
        self.on_fallback = on_fallback
        self.quarantined_from: str | None = None
        self.invalid_results: Counter[str] = Counter()
        self._switch_lock = threading.RLock()

    @property
    def engine(self) -> object:
        return self.handle.engine

    @property
    def mode(self) -> str:
        return "fallback" if self.quarantined_from else "normal"

    def implements(self, method: str) -> bool:
        """True when the current engine has its own ``method`` (zero-cost skip otherwise)."""
        return method in self.handle.implemented

    def routes(self, method: str) -> bool:
        return method in self.handle.methods

    def call(
        self,
        method: str,
        kwargs: dict[str, Any] | None = None,
        *,
        within: Callable[[Callable[[], Any]], Any] | None = None,
    ) -> Any:
        """Call ``method`` on the current engine under its timeout and the fault policy.

        ``within`` wraps the call on the worker thread (e.g. to record summarizer
        calls). Returns :data:`SKIPPED` when the engine in charge lacks the method.
        """
        kwargs = dict(kwargs or {})
        handle = self._handle_for(method)
        if method not in handle.methods:
            return SKIPPED
        timeout = self.timeouts.for_method(method)
        if method == "compress":
            kwargs["deadline"] = time.monotonic() + timeout if timeout else None
        try:
            pool_timeout = None if handle.self_timed or method in handle.inline else timeout
            return self.pool.run(_bound(handle, method, kwargs, within), pool_timeout)
        except SummarizerError:
            raise  # the summarizer failed for good, not the engine: no quarantine
        except Exception as exc:
            if handle.is_default:
                raise EngineFailure(handle.name, method, exc) from exc
            reason = f"{type(exc).__name__}: {exc}"
        self.fall_back(method, reason, failed=handle)
        return self.call(method, kwargs, within=within)

    def _handle_for(self, method: str) -> EngineHandle:
        """The engine to call now: the default one if another session of this process
        quarantined ours (no new record)."""
        handle = self.handle
        if not handle.is_default and handle.name in _quarantined:
            self.fall_back(method, "quarantined in this process", failed=handle, record=False)
        return self.handle

    def call_many(
        self,
        calls: Sequence[tuple[str, dict[str, Any]]],
        stop_after: Callable[[str, Any], bool] | None = None,
    ) -> list[Any]:
        """Consecutive calls (method, kwargs) in one worker hand-off, with what :meth:`call`
        gives each: its own timeout, the fault policy, :data:`SKIPPED` when not routed.
        ``stop_after(method, result)`` true ends the calls there: the results are then
        fewer than the calls (it runs on the worker, so it must be quick and not raise).

        The calls after one that fails are made one by one on the engine the policy
        switched to, exactly as separate calls would be. ``compress`` (its deadline),
        an engine that times its own calls and a lone call go through :meth:`call`.
        """
        handle = self._handle_for(calls[0][0])
        routed = [i for i, (method, _) in enumerate(calls) if method in handle.methods]
        if handle.self_timed or len(routed) < 2 or any(calls[i][0] == "compress" for i in routed):
            return self._call_each(calls, [], stop_after)
        steps = []
        for i in routed:
            method, kwargs = calls[i]
            bound = _bound(handle, method, dict(kwargs), None)
            steps.append((bound, self.timeouts.for_method(method)))
        stop = None if stop_after is None else lambda n, r: stop_after(calls[routed[n]][0], r)
        done, failure = self.pool.run_steps(steps, stop)
        results: list[Any] = []
        for i, result in zip(routed, done, strict=False):
            results += [SKIPPED] * (i - len(results))  # not routed: skipped, as by call()
            results.append(result)
        if failure is None:
            if len(done) == len(routed):
                results += [SKIPPED] * (len(calls) - len(results))
            return results
        index, exc = failure
        failed = routed[index]
        method = calls[failed][0]
        if isinstance(exc, SummarizerError) or not isinstance(exc, Exception):
            raise exc  # as from call(): the summarizer's failure, or not an engine fault
        if handle.is_default:
            raise EngineFailure(handle.name, method, exc) from exc
        self.fall_back(method, f"{type(exc).__name__}: {exc}", failed=handle)
        results += [SKIPPED] * (failed - len(results))
        return self._call_each(calls, results, stop_after)

    def _call_each(
        self,
        calls: Sequence[tuple[str, dict[str, Any]]],
        results: list[Any],
        stop_after: Callable[[str, Any], bool] | None,
    ) -> list[Any]:
        """The calls from ``len(results)`` on, one :meth:`call` each, appended to ``results``."""
        for method, kwargs in calls[len(results) :]:
            result = self.call(method, kwargs)
            results.append(result)
            if stop_after is not None and result is not SKIPPED and stop_after(method, result):
                break
        return results

    def fall_back(
        self,
        method: str,
        reason: str,
        *,
        failed: EngineHandle | None = None,
        record: bool = True,
    ) -> None:
        """Quarantine the current engine for the process and switch to the default engine."""
        with self._switch_lock:
            failed = failed or self.handle
            if self.handle is not failed:  # another thread already switched
                return
            if record:
                log.warning("engine %r quarantined after %s(): %s", failed.name, method, reason)
                try:
                    self.quarantine.record(failed.name, method, reason)
                except Exception as exc:  # a diagnosis: it must not stop the recovery
                    log.error("could not write the quarantine record: %s", exc)
            with _quarantine_lock:
                _quarantined.add(failed.name)
            self.quarantined_from = failed.name
            try:
                self.handle = self.make_default()
            except Exception as exc:
                raise EngineFailure("default", "construct", exc) from exc
            failed.close()
            if self.on_fallback is not None:
                self.on_fallback(self)

    def note_invalid(self, method: str, detail: str) -> None:
        """An engine returned an invalid value: ignored for this call, logged and counted."""
        self.invalid_results[method] += 1
        log.warning(
            "engine %r: invalid result from %s() ignored: %s", self.handle.name, method, detail
        )


def _host_default(engine: object, method: str) -> bool:
    """True when ``engine.method`` is the contract base class's own implementation."""
    own = ContextEngine.__dict__.get(method)
    return own is not None and getattr(type(engine), method, None) is own


def _bound(
    handle: EngineHandle,
    method: str,
    kwargs: dict[str, Any],
    within: Callable[[Callable[[], Any]], Any] | None,
) -> Callable[[], Any]:
    def call() -> Any:
        return handle.invoke(method, kwargs)

    if within is None:
        return call
    return lambda: within(call)
