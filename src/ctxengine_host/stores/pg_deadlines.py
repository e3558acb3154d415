"""One thread per process that stops PostgreSQL statements still running at their deadline.

A deadline given to a run of reads (:class:`~ctxengine_host.stores.pg.DeadlineReads`) is
watched here rather than set on the connection as ``statement_timeout``: setting and
resetting it cost two round trips per search, more than a rare-term search's own work.
At the deadline the watch asks the run to cancel its connection's statement, as psql's
Ctrl-C does (libpq's cancel request); a run that ended before it is not touched. A run
still open is asked again every :data:`AGAIN_SECONDS`: a cancel that reaches the server
between two statements is ignored there, and a statement sent at the deadline's edge
would otherwise run on unbounded.
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from typing import Protocol

#: How soon a run still open after a cancel is cancelled again.
AGAIN_SECONDS = 0.05


class Cancellable(Protocol):
    """A run of reads with a deadline (``time.monotonic()``) that can stop its statement."""

    deadline: float

    def cancel(self) -> bool:
        """Stop the statement running, if any; False once the run has ended."""
        ...


class DeadlineWatch:
    """Calls ``cancel()`` on each watched run once its deadline has passed, from one
    daemon thread started on first use (and again in a forked child)."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, Cancellable]] = []
        self._order = itertools.count()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, run: Cancellable) -> None:
        """Cancel ``run`` at its deadline (a run that ended by then ignores the call)."""
        with self._changed:
            heapq.heappush(self._due, (run.deadline, next(self._order), run))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._serve, name="ctxengine-pg-deadlines", daemon=True
                )
                self._thread.start()
            elif self._due[0][2] is run:  # earlier than what the thread waits for
                self._changed.notify()

    def forget(self) -> None:
        """Start afresh (in a forked child: the parent's runs and thread are not its own)."""
        self._due = []
        self._changed = threading.Condition()
        self._thread = None

    def _serve(self) -> None:
        while True:
            with self._changed:
                while not self._due or self._due[0][0] > time.monotonic():
                    wait = self._due[0][0] - time.monotonic() if self._due else None
                    self._changed.wait(wait)
                _, _, run = heapq.heappop(self._due)
            # Outside the lock: a cancel request is a connection of its own.
            if run.cancel():
                with self._changed:
                    again = time.monotonic() + AGAIN_SECONDS
                    heapq.heappush(self._due, (again, next(self._order), run))


#: The process's watch.
WATCH = DeadlineWatch()
os.register_at_fork(after_in_child=WATCH.forget)
