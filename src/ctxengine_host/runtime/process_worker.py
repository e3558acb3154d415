"""The worker process of ``[isolation] mode = "process"``: one engine, served over a pipe.

The host starts ``python -m ctxengine_host.runtime.process_worker`` and hands it, over
stdin, the address and key of a connection to dial back. The worker resolves
the engine by name exactly as the host's slot would (entry point, plugins
directory, framework-ABC directory), with an :class:`EngineContext` whose
services cross the pipe: ``summarize`` is a call back into the host; token
counting runs here with the host's model and encoding (it is pure, and a round
trip per count would cost more than the count). Then it answers one call at a
time until the host closes the connection, or kills the process.

Messages (pickled tuples), host → worker: ``("call", method, kwargs, seconds_left)``,
``("setattr", name, value)``, ``("call_ref", ref)``; worker → host:
``("result", value, attrs)``, ``("ref", ref, attrs)``, ``("error", exc, attrs)``,
``("service", name, kwargs)`` (answered with ``("service_result", value)`` or
``("service_error", exc)``), and once at start ``("ready", description)`` or
``("failed", exc)``.
"""

from __future__ import annotations

import logging
import pickle
import sys
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Client, Connection
from pathlib import Path
from typing import Any

#: Plain engine attributes the host reads; sent back after every call.
SNAPSHOT_ATTRS = (
    "version",
    "display_name",
    "owns_compaction",
    "turn_maintenance_mode",
    "last_prompt_tokens",
    "last_completion_tokens",
    "last_total_tokens",
    "threshold_tokens",
    "context_length",
    "compression_count",
    "threshold_percent",
    "model_thresholds",
)

_PLAIN = (bool, int, float, str, type(None))


class RemoteEngineError(RuntimeError):
    """An engine exception that could not cross the pipe as itself (type and text kept)."""


@dataclass
class WorkerSpec:
    """How a worker builds its engine; ``replay`` re-applies the host's setup after a restart."""

    choice: Any  # slot.SlotChoice
    loaded: Any  # config.LoadedConfig
    data_dir: str
    model: str
    encoding: str
    clone: bool = False
    expect_name: str | None = None
    #: The transcript store's identity: an engine in a worker keys its history by it
    #: (issue #13: never by session id alone); ``transcript_holds`` is a service call.
    store_id: str | None = None
    replay: list[tuple[Any, ...]] = field(default_factory=list)


@dataclass
class EngineDescription:
    """What the host needs to stand in for the engine: its name, methods and attributes."""

    name: str
    fallback: bool
    reason: str | None
    warnings: list[str]
    entry: Any
    routed: frozenset[str]
    implemented: frozenset[str]
    attrs: dict[str, Any]
    records: list[tuple[str, str, str]]


@dataclass
class MirroredMessages:
    """A message view as sent: item ids, and the messages the worker has not been sent yet."""

    ids: list[int]
    added: list[tuple[int, dict[str, Any]]]
    reset: bool = False


@dataclass
class RemoteTranscript:
    """Stands for ``maintain``'s transcript; its reads are calls back into the host."""

    session_id: str


class _Transcript:
    """``TranscriptView``'s reads, answered by the host over the pipe."""

    def __init__(self, worker: _Worker, session_id: str) -> None:
        self._worker = worker
        self.session_id = session_id

    def messages(self) -> list[dict[str, Any]]:
        return self._worker.service("transcript", {"what": "messages"})

    def rows(self) -> list[Any]:
        return self._worker.service("transcript", {"what": "rows"})


class _CollectedQuarantine:
    """Stands in for the host's quarantine log during resolution; the host writes the records."""

    def __init__(self) -> None:
        self.records: list[tuple[str, str, str]] = []

    def record(self, name: str, method: str, reason: str) -> None:
        self.records.append((name, method, reason))


def snapshot(engine: object) -> dict[str, Any]:
    """The engine's plain attributes (values that pickle cheaply and mean the same here)."""
    attrs: dict[str, Any] = {}
    for name in SNAPSHOT_ATTRS:
        try:
            value = getattr(engine, name)
        except Exception:
            continue
        if isinstance(value, _PLAIN) or (
            isinstance(value, dict) and all(isinstance(v, _PLAIN) for v in value.values())
        ):
            attrs[name] = dict(value) if isinstance(value, dict) else value
    return attrs


def portable(exc: BaseException) -> BaseException:
    """``exc`` when it survives pickling, else a :class:`RemoteEngineError` naming it."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RemoteEngineError(f"{type(exc).__name__}: {exc}")
    return exc


class _Worker:
    def __init__(self, conn: Connection, spec: WorkerSpec) -> None:
        self.conn = conn
        self.spec = spec
        self.refs: dict[int, Any] = {}
        self.keep: list[Any] = []  # a clone's prototype, disposed on exit
        self.mirror: dict[int, dict[str, Any]] = {}  # messages sent, by the host item's id

    # ------------------------------------------------------------ services

    def summarize(
        self,
        content: Any,
        target_tokens: int,
        focus_topic: str | None = None,
        previous: str | None = None,
    ) -> Any:
        """The host's summarizer, called back over the pipe."""
        kwargs = {"content": content, "target_tokens": target_tokens}
        kwargs.update(focus_topic=focus_topic, previous=previous)
        return self.service("summarize", kwargs)

    def transcript_holds(self, session_id: str, message_uid: str) -> bool:
        """Whether the host's transcript holds the message, asked over the pipe."""
        return bool(
            self.service("transcript_holds", {"session_id": session_id, "uid": message_uid})
        )

    def service(self, name: str, kwargs: dict[str, Any]) -> Any:
        """A host service, called during the engine call being served."""
        self.conn.send(("service", name, kwargs))
        kind, value = self.conn.recv()
        if kind == "service_error":
            raise value
        return value

    def make_context(self, engine_name: str) -> Any:
        from ..contract.context import EngineContext
        from ..tokens import TokenCounter

        counter = TokenCounter(self.spec.model, self.spec.encoding)
        return EngineContext(
            engine_name=engine_name,
            data_dir=Path(self.spec.data_dir) / "engines" / engine_name,
            count_tokens=counter.count_any,
            summarize=self.summarize,
            store_id=self.spec.store_id,
            transcript_holds=self.transcript_holds if self.spec.store_id else None,
        )

    # ------------------------------------------------------------ building

    def build(self) -> tuple[object, EngineDescription]:
        from ..contract.signatures import implemented_methods
        from ..discovery.slot import resolve_engine
        from .isolation import routed_methods

        spec = self.spec
        collected = _CollectedQuarantine()
        resolved = resolve_engine(
            spec.choice, spec.loaded, make_context=self.make_context, quarantine=collected
        )
        engine = resolved.engine
        if spec.expect_name is not None and resolved.name != spec.expect_name:
            raise RemoteEngineError(
                f"engine {spec.expect_name!r} no longer loads in a fresh worker: {resolved.reason}"
            )
        for op in spec.replay:
            self.apply(engine, op)
        if spec.clone:
            self.keep.append(engine)
            engine = engine.clone_for_agent()
        description = EngineDescription(
            name=resolved.name,
            fallback=resolved.fallback,
            reason=resolved.reason,
            warnings=list(resolved.warnings),
            entry=resolved.entry,
            routed=routed_methods(engine),
            implemented=implemented_methods(engine),
            attrs=snapshot(engine),
            records=collected.records,
        )
        return engine, description

    def apply(self, engine: object, op: tuple[Any, ...]) -> Any:
        from ..contract.signatures import call_declared

        if op[0] == "setattr":
            setattr(engine, op[1], op[2])
            return None
        _, method, kwargs = op
        return call_declared(getattr(engine, method), kwargs)

    # ------------------------------------------------------------ serving

    def serve(self, engine: object) -> None:
        while True:
            try:
                message = self.conn.recv()
            except (EOFError, OSError):
                return  # the host closed the connection or died
            kind = message[0]
            try:
                if kind == "call":
                    _, method, kwargs, seconds_left = message
                    if "deadline" in kwargs and seconds_left is not None:
                        kwargs["deadline"] = time.monotonic() + seconds_left
                    kwargs = {k: self.local_value(v) for k, v in kwargs.items()}
                    value = self.call(engine, method, kwargs)
                elif kind == "call_ref":
                    value = self.refs.pop(message[1])()
                else:
                    value = self.apply(engine, message)
            except BaseException as exc:  # the engine's failure is the host's to judge
                self.conn.send(("error", portable(exc), snapshot(engine)))
                continue
            self.reply(engine, value)

    def local_value(self, value: Any) -> Any:
        """Arguments as the engine sees them: views over the mirror, a readable transcript."""
        if isinstance(value, MirroredMessages):
            from .views import CopyOnWriteMessages

            if value.reset:
                self.mirror = {}
            self.mirror.update(value.added)
            return CopyOnWriteMessages([self.mirror[key] for key in value.ids])
        if isinstance(value, RemoteTranscript):
            return _Transcript(self, value.session_id)
        return value

    def call(self, engine: object, method: str, kwargs: dict[str, Any]) -> Any:
        if method == "dispose" and not callable(getattr(engine, "dispose", None)):
            return None
        return self.apply(engine, ("call", method, kwargs))

    def reply(self, engine: object, value: Any) -> None:
        try:
            payload = pickle.dumps(("result", value, snapshot(engine)))
        except Exception as exc:
            if callable(value):  # e.g. a sub-agent rollback: called back by reference
                ref = id(value)
                self.refs[ref] = value
                self.conn.send(("ref", ref, snapshot(engine)))
                return
            error = RemoteEngineError(
                f"the engine returned a {type(value).__name__} that cannot cross the process "
                f"boundary ({type(exc).__name__}: {exc}); return plain data"
            )
            self.conn.send(("error", error, snapshot(engine)))
            return
        self.conn.send_bytes(payload)

    def dispose_kept(self) -> None:
        for engine in self.keep:
            try:
                engine.dispose()
            except Exception:
                logging.getLogger("ctxengine.runtime").exception("dispose() in the worker failed")


def main() -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    address, key = sys.stdin.readline().split()
    conn = Client(address, authkey=bytes.fromhex(key))
    worker = _Worker(conn, conn.recv())
    try:
        engine, description = worker.build()
    except BaseException as exc:
        conn.send(("failed", portable(exc)))
        return 1
    conn.send(("ready", description))
    try:
        worker.serve(engine)
    finally:
        worker.dispose_kept()
    return 0


if __name__ == "__main__":
    # Run the module under its real name, so what it pickles names ``ctxengine_host.…``.
    from ctxengine_host.runtime import process_worker

    sys.exit(process_worker.main())
