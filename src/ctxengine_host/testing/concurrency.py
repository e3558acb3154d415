"""The concurrent-sessions check: one engine prototype, several sessions on threads.

The sessions run through the real runtime (``ContextHost``), which gives each
session ``clone_for_agent()`` of the prototype, as in production. Each session's
messages carry its marker, so a message of one session showing up in another's
request is caught, as is any error, deadlock or quarantine.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ..config import ContextSection, CtxConfig, LoadedConfig
from ..runtime.host import ContextHost
from ..runtime.isolation import forget_quarantine, is_quarantined
from ..runtime.validity import sequence_problems
from ..stores.quarantine import QuarantineLog
from . import samples

Message = dict[str, Any]

#: Output reserve of the kit's host: small, so a small window still leaves a budget.
KIT_RESERVE_TOKENS = 256
#: How long one session may take before the check reports a deadlock.
SESSION_TIMEOUT_S = 120


class HostSessions:
    """Sessions of one ``ContextHost`` over a shared engine prototype, with private files."""

    def __init__(self, engine: Any, model: str, context_length: int, tmp_path: Path) -> None:
        self.name = engine.name
        self.quarantine = QuarantineLog(tmp_path / "kit-quarantine.jsonl")
        forget_quarantine(self.name)
        self.host = ContextHost(
            engine,
            model=model,
            context_length=context_length,
            config=LoadedConfig(
                config=CtxConfig(context=ContextSection(reserve_output_tokens=KIT_RESERVE_TOKENS))
            ),
            store_path=tmp_path / "kit-store.db",
            quarantine=self.quarantine,
            observers=[],
        )
        self.markers: set[str] = set()

    def run(self, marker: str, turns: int, barrier: threading.Barrier) -> None:
        """One session: each turn adds a user message, builds the request, answers it."""
        with self.host.open_session(f"session-{marker}") as session:
            for turn in range(turns):
                session.add_messages([samples.user_message(marker, turn)])
                barrier.wait(timeout=SESSION_TIMEOUT_S)
                request = session.build_request()
                check_own(request.messages, marker, self.markers, "a request")
                session.record_response(samples.turn_messages(marker, turn)[-1], None)
                if session.finish_turn().quarantined:
                    raise AssertionError(f"the host quarantined the engine: {self._reason()}")

    def _reason(self) -> str:
        records = self.quarantine.records(self.name)
        return f"{records[-1].method}: {records[-1].reason}" if records else "(no record)"

    def close(self) -> None:
        try:
            self.host.close()
        finally:
            if is_quarantined(self.name):
                forget_quarantine(self.name)


def check_own(messages: list[Message], marker: str, markers: set[str], where: str) -> None:
    """Raise when ``messages`` hold another session's messages or are not a valid request."""
    foreign = samples.foreign_markers(messages, marker, markers)
    if foreign:
        raise AssertionError(f"{where} of session {marker} contains messages of {sorted(foreign)}")
    problems = sequence_problems(messages)
    if problems:
        raise AssertionError(f"{where} of session {marker} is invalid: {'; '.join(problems)}")


def run_sessions_concurrently(sessions: HostSessions, count: int, turns: int) -> list[str]:
    """Run ``count`` sessions on as many threads; return the problems seen."""
    errors: list[str] = []
    barrier = threading.Barrier(count)
    markers = [f"kit-s{i}" for i in range(count)]
    sessions.markers = set(markers)

    def work(marker: str) -> None:
        try:
            sessions.run(marker, turns, barrier)
        except Exception as exc:
            barrier.abort()
            if not isinstance(exc, threading.BrokenBarrierError):
                errors.append(f"session {marker}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=work, args=(m,), name=m) for m in markers]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=SESSION_TIMEOUT_S)
            if thread.is_alive():
                errors.append(f"session {thread.name} did not finish in {SESSION_TIMEOUT_S} s")
    finally:
        sessions.close()
    return errors
