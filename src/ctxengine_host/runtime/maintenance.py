"""Running the engine's ``maintain`` after a turn: inline, or on a background thread.

``turn_maintenance_mode = "background"`` engines run it off the session's
thread; the next run (and reset/end) waits for the previous one, so runs never
overlap. A background failure is logged, never raised into the agent loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..faults import fault_point
from .views import TranscriptView

if TYPE_CHECKING:
    from .parts import SessionState

log = logging.getLogger("ctxengine.runtime")


class Maintenance:
    """One session's ``maintain`` runs."""

    def __init__(self, session: SessionState) -> None:
        self.session = session
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        """Run ``maintain`` for the turn that just finished, as the engine's mode says."""
        session = self.session
        if getattr(session.guard.engine, "turn_maintenance_mode", "foreground") != "background":
            started = time.perf_counter()
            self._call()
            session.turn_stats.engine_ms += (time.perf_counter() - started) * 1000
            return
        self.wait()
        thread = threading.Thread(
            target=self._in_background(self._call),
            name=f"ctxengine-maintain-{session.session_id}",
            daemon=True,
        )
        self._thread = thread
        thread.start()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a background run of the previous turn to finish."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            if not thread.is_alive():
                self._thread = None

    def _call(self) -> None:
        session = self.session
        result = session.guard.call(
            "maintain",
            {
                "session_id": session.session_id,
                "runtime_settings": session.runtime_settings(),
                "transcript": TranscriptView(session),
            },
        )
        session.check_model_result("maintain", result)

    def _in_background(self, run: Callable[[], None]) -> Callable[[], None]:
        session_id = self.session.session_id

        def target() -> None:
            try:
                fault_point("host.maintain.background")
                run()
            except Exception:
                log.exception("session %s: background maintenance failed", session_id)

        return target
