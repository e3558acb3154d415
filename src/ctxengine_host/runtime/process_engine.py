"""The host's side of ``[isolation] mode = "process"``: an engine stand-in whose calls run in a
worker process that is killed when a call runs past its timeout.

Thread isolation abandons a late call but cannot stop it: an engine stuck in C
code holding the GIL (a backtracking regex, a native library) freezes every
thread of the host. Here each engine instance (the prototype and each session's
clone) lives in its own worker process (:mod:`.process_worker`). A
:class:`ProcessEngine` has the engine's contract methods; each call is sent
over the pipe and waited for with the method's timeout (the guard does not
time it again). On timeout the worker is killed and :class:`CallTimeout`
raised, so the guard's fault table applies unchanged (quarantine + fallback);
the next call on the same stand-in starts a fresh worker and replays the setup
(``update_model`` and attribute settings). While it waits, the host answers the
worker's service calls (the summarizer) on the waiting thread, so summaries are
recorded in the turn's compaction event as in thread mode.
"""

from __future__ import annotations

import logging
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from multiprocessing.connection import Connection, Listener
from typing import Any

from .isolation import CallTimeout, Timeouts, _spec_defaults
from .process_worker import EngineDescription, MirroredMessages, RemoteTranscript, WorkerSpec
from .views import MessagesView, TranscriptView

log = logging.getLogger("ctxengine.runtime")

#: How long a worker may take to start and build its engine (not part of any call's timeout).
STARTUP_TIMEOUT_SECONDS = 60.0

#: Engine calls whose effect is setup, replayed into a restarted worker.
REPLAYED_CALLS = frozenset({"update_model"})


class WorkerCrashed(RuntimeError):
    """The engine's worker process died during a call (the engine is quarantined)."""


class WorkerStartError(RuntimeError):
    """A worker process could not start or build its engine."""


class _Worker:
    """One worker process and its connection."""

    def __init__(self, spec: WorkerSpec, services: Callable[[str, dict[str, Any]], Any]) -> None:
        self.services = services
        key = secrets.token_bytes(32)
        with Listener(authkey=key) as listener:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "ctxengine_host.runtime.process_worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                text=True,
            )
            try:
                assert self.process.stdin is not None
                self.process.stdin.write(f"{listener.address} {key.hex()}\n")
                self.process.stdin.close()
                self.conn = _accept(listener, self.process)
                self.conn.send(spec)
                kind, value = self.exchange(STARTUP_TIMEOUT_SECONDS)
            except BaseException:
                self.kill()
                raise
        if kind == "failed":
            self.kill()
            raise value
        self.description: EngineDescription = value

    @property
    def pid(self) -> int:
        return self.process.pid

    def exchange(
        self, timeout: float | None, local: dict[str, Any] | None = None
    ) -> tuple[str, Any]:
        """Wait for the worker's answer, serving its service calls meanwhile.

        ``local`` holds objects of this call the worker may read back (the transcript).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                ready = self.conn.poll(remaining)
                message = self.conn.recv() if ready else None
            except (EOFError, OSError) as exc:
                raise self.crashed() from exc
            if message is None:
                raise CallTimeout(f"no answer within {timeout:g} s")
            if message[0] != "service":
                return message[0], message[1:] if len(message) > 2 else message[1]
            try:
                reply: tuple[str, Any] = ("service_result", self._serve(message, local or {}))
            except Exception as exc:
                reply = ("service_error", exc)
            self.conn.send(reply)

    def crashed(self) -> WorkerCrashed:
        """The error for a connection lost mid-call, with the worker's exit code."""
        try:
            code = self.process.wait(1.0)
        except subprocess.TimeoutExpired:
            code = None
        return WorkerCrashed(f"the engine's worker process (pid {self.pid}) died (exit {code})")

    def _serve(self, message: tuple[Any, ...], local: dict[str, Any]) -> Any:
        _, name, kwargs = message
        if name == "transcript" and "transcript" in local:
            return getattr(local["transcript"], kwargs["what"])()
        return self.services(name, kwargs)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        conn = getattr(self, "conn", None)
        if conn is not None:
            conn.close()

    def close(self, timeout: float = 5.0) -> None:
        """Close the connection (the worker disposes and exits); kill it if it lingers."""
        self.conn.close()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()


def _accept(listener: Listener, process: subprocess.Popen[str]) -> Connection:
    """``listener.accept()``, given up when the process exits or the startup timeout passes."""
    box: dict[str, Any] = {}

    def accept() -> None:
        try:
            box["conn"] = listener.accept()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=accept, name="ctxengine-worker-accept", daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while thread.is_alive() and process.poll() is None and time.monotonic() < deadline:
        thread.join(0.05)
    if "conn" in box:
        return box["conn"]
    process.kill()
    listener.close()  # wakes the accepting thread
    thread.join(1.0)
    raise WorkerStartError(
        f"the engine's worker process did not connect (exit code {process.poll()}); "
        "run `ctxengine doctor` to check that the engine loads"
    )


class ProcessEngine:
    """Stands in for one engine instance that runs in a worker process.

    Reading an info or budget attribute returns the value the worker sent back
    with its last answer; setting one is sent to the worker. Contract methods
    are generated per engine (see :func:`start_process_engine`).
    """

    def __init__(
        self,
        worker: _Worker,
        spec: WorkerSpec,
        timeouts: Timeouts,
        services: Callable[[str, dict[str, Any]], Any],
    ) -> None:
        object.__setattr__(self, "_spec", spec)
        object.__setattr__(self, "_timeouts", timeouts)
        object.__setattr__(self, "_services", services)
        object.__setattr__(self, "_lock", threading.Lock())
        object.__setattr__(self, "_setup", [])
        object.__setattr__(self, "_closed", False)
        object.__setattr__(self, "restarts", 0)
        object.__setattr__(self, "_sent", {})
        object.__setattr__(self, "_worker", worker)
        object.__setattr__(self, "description", worker.description)
        object.__setattr__(self, "_attrs", dict(worker.description.attrs))

    # -------------------------------------------------------------- identity

    @property
    def name(self) -> str:
        return self.description.name

    @property
    def ctxengine_routes(self) -> tuple[frozenset[str], frozenset[str]]:
        """(methods the host routes, methods the engine implements): read by ``EngineHandle``."""
        return self.description.routed, self.description.implemented

    @property
    def worker_pid(self) -> int | None:
        worker = self._worker
        return None if worker is None else worker.pid

    def __getattr__(self, name: str) -> Any:
        attrs = self.__dict__.get("_attrs", {})
        if name in attrs:
            return attrs[name]
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        self._remote(("setattr", name, value), None)
        self._attrs[name] = value
        self._setup.append(("setattr", name, value))

    # -------------------------------------------------------------- calls

    def call_remote(self, method: str, kwargs: dict[str, Any]) -> Any:
        """``method(**kwargs)`` in the worker, within the method's timeout."""
        timeout = self._timeouts.for_method(method)
        deadline = kwargs.get("deadline")
        local: dict[str, Any] = {}

        def message() -> tuple[Any, ...]:
            seconds_left = None if deadline is None else deadline - time.monotonic()
            args = {k: self._portable(v, local) for k, v in kwargs.items()}
            return ("call", method, args, seconds_left)

        value = self._remote(message, timeout, local)
        if method in REPLAYED_CALLS:
            self._setup.append(("call", method, dict(kwargs)))
        return value

    def _portable(self, value: Any, local: dict[str, Any]) -> Any:
        """An argument as it crosses the pipe: views by reference, the transcript by callback.

        Each message of a view is sent once: the worker keeps what it was sent under
        the id of the host's item (pinned here, so ids are not reused), and a view
        goes over as a list of those ids plus the messages not sent before. A turn
        then costs the new messages, not the history (the mirror starts over when
        it holds far more than the views being sent).
        """
        if isinstance(value, MessagesView):
            items, length = value._items, len(value)
            sent = self._sent
            reset = len(sent) > 4 * length + 512
            if reset:
                sent.clear()
            ids, added = [], []
            for index in range(length):
                item = items[index]
                key = id(item)
                if key not in sent:
                    sent[key] = item
                    added.append((key, value[index]))
                ids.append(key)
            return MirroredMessages(ids, added, reset)
        if isinstance(value, TranscriptView):
            local["transcript"] = value
            return RemoteTranscript(value.session_id)
        if isinstance(value, Sequence) and not isinstance(value, str | bytes | list | tuple):
            return list(value)
        return value

    def _remote(
        self,
        message: tuple[Any, ...] | Callable[[], tuple[Any, ...]],
        timeout: float | None,
        local: dict[str, Any] | None = None,
    ) -> Any:
        if self._closed:
            raise RuntimeError(f"engine {self.name!r}: its worker process was closed")
        # One call at a time per worker; waiting is bounded by the running call's own
        # timeout (its worker is killed then), and does not count against this one's.
        self._lock.acquire()
        try:
            worker = self._running_worker()
            built = message() if callable(message) else message
            try:
                try:
                    worker.conn.send(built)
                except OSError as exc:
                    raise worker.crashed() from exc
                kind, payload = worker.exchange(timeout, local)
            except CallTimeout:
                log.warning(
                    "engine %r: killing worker process %d after %s timed out",
                    self.name,
                    worker.pid,
                    built[1],
                )
                self._drop_worker()
                raise
            except WorkerCrashed:
                self._drop_worker()
                raise
        finally:
            self._lock.release()
        value, attrs = payload
        self._attrs.update(attrs)
        if kind == "error":
            raise value
        if kind == "ref":
            return _RemoteCallable(self, value)
        return value

    def _running_worker(self) -> _Worker:
        """The live worker; a killed one is replaced by a fresh one with the setup replayed."""
        if self._worker is not None:
            return self._worker
        worker = _Worker(replace(self._spec, expect_name=self.name), self._services)
        for op in self._setup:  # this instance's own setup, after the build (and clone)
            worker.conn.send(op if op[0] == "setattr" else ("call", op[1], op[2], None))
            kind, payload = worker.exchange(STARTUP_TIMEOUT_SECONDS)
            if kind == "error":
                worker.kill()
                raise payload[0]
        object.__setattr__(self, "_worker", worker)
        object.__setattr__(self, "restarts", self.restarts + 1)
        log.warning("engine %r: worker process restarted (pid %d)", self.name, worker.pid)
        return worker

    def _drop_worker(self) -> None:
        worker = self._worker
        object.__setattr__(self, "_worker", None)
        self._sent.clear()  # a new worker has been sent nothing yet
        if worker is not None:
            worker.kill()

    # -------------------------------------------------------------- lifecycle

    def clone_for_agent(self) -> ProcessEngine:
        """A clone in a worker of its own: the prototype rebuilt there with this setup, cloned."""
        replay = [*self._spec.replay, *self._setup]
        clone_spec = replace(self._spec, clone=True, expect_name=self.name, replay=replay)
        return start_process_engine(clone_spec, self._timeouts, self._services)

    def dispose(self) -> None:
        """The engine's ``dispose()`` in the worker (nothing once the worker is gone)."""
        if self._closed or self._worker is None:
            return
        self.call_remote("dispose", {})

    def ctxengine_close(self) -> None:
        """Stop the worker for good (host close, session end, quarantine)."""
        with self._lock:
            if self._closed:
                return
            object.__setattr__(self, "_closed", True)
            worker = self._worker
            object.__setattr__(self, "_worker", None)
        if worker is not None:
            worker.close()


class _RemoteCallable:
    """A callable the engine returned (a sub-agent rollback), called back in its worker."""

    def __init__(self, engine: ProcessEngine, ref: int) -> None:
        self._engine = engine
        self._ref = ref

    def __call__(self) -> Any:
        return self._engine._remote(("call_ref", self._ref), self._engine._timeouts.hook_seconds)


def _forwarder(method: str) -> Callable[..., Any]:
    """A method taking every parameter of the hookspec by name and sending them all."""
    defaults = _spec_defaults(method)
    params = ", ".join(f"{name}=_defaults[{name!r}]" for name in defaults)
    mapping = ", ".join(f"{name!r}: {name}" for name in defaults)
    source = (
        f"def {method}(self, {params}):\n    return self.call_remote({method!r}, {{{mapping}}})\n"
        if defaults
        else f"def {method}(self):\n    return self.call_remote({method!r}, {{}})\n"
    )
    namespace: dict[str, Any] = {"_defaults": defaults}
    exec(compile(source, f"<ctxengine process engine {method}>", "exec"), namespace)
    return namespace[method]


_CLASSES: dict[frozenset[str], type[ProcessEngine]] = {}
_CLASSES_LOCK = threading.Lock()


def _engine_class(description: EngineDescription) -> type[ProcessEngine]:
    """A :class:`ProcessEngine` subclass with a forwarder per routed method."""
    methods = frozenset(description.routed) - {"clone_for_agent", "dispose"}
    with _CLASSES_LOCK:
        cls = _CLASSES.get(methods)
        if cls is None:
            namespace = {m: _forwarder(m) for m in sorted(methods)}
            cls = type("ProcessEngine", (ProcessEngine,), namespace)
            _CLASSES[methods] = cls
    return cls


def start_process_engine(
    spec: WorkerSpec,
    timeouts: Timeouts,
    services: Callable[[str, dict[str, Any]], Any],
) -> ProcessEngine:
    """Start a worker for ``spec`` and return the stand-in for its engine.

    Raises what resolution raised in the worker (``EngineSelectionError``,
    ``ConfigError``), or :class:`WorkerStartError`.
    """
    worker = _Worker(spec, services)
    return _engine_class(worker.description)(worker, spec, timeouts, services)
