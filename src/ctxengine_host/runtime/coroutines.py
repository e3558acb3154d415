"""Contract methods written as coroutines, settled for the host's worker threads.

An engine may implement any contract method as ``async def`` (a gateway's
engines are async by nature). The host calls every engine method on a worker
thread (:class:`ctxengine_host.runtime.isolation.WorkerPool`); when the call returns an
awaitable, :class:`CoroutineRunner` runs it to completion on an event loop and
hands the result back to that thread, within the call's timeout:

* under :class:`ctxengine_host.runtime.aio.AsyncContextHost` the loop is the caller's own
  loop, so the engine's coroutines share it with the agent (its clients, locks
  and tasks stay on one loop);
* under the sync :class:`ctxengine_host.runtime.host.ContextHost` it is a private loop on
  one daemon thread, started on the first coroutine and stopped by ``close()``.

A coroutine that times out is cancelled. A coroutine that blocks its loop
(CPU work, ``time.sleep``) cannot be interrupted: the call still times out and
the engine is quarantined, but the loop stays blocked until the coroutine
yields; only process isolation can stop such an engine (docs/runtime.md).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from collections.abc import Awaitable
from typing import Any


class CoroutineTimeout(TimeoutError):
    """A coroutine engine call gave no answer within its timeout (it was cancelled)."""


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


class CoroutineRunner:
    """Settles awaitables returned by engine calls on ``loop`` (None: a private loop)."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._owner_loop = loop
        self._private: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def settle(self, value: Any, timeout: float | None) -> Any:
        """``value`` itself, or the result of awaiting it within ``timeout`` seconds."""
        if not inspect.isawaitable(value):
            return value
        loop = self._loop()
        if _running_here(loop):
            _discard(value)
            raise RuntimeError(
                "a coroutine engine method was called on its own event loop's thread, which "
                "would deadlock; drive the engine through AsyncContextHost/AsyncSession (they "
                "run the pipeline off the loop) instead of the sync ContextHost"
            )
        future = asyncio.run_coroutine_threadsafe(_await(value), loop)
        try:
            return future.result(timeout if timeout and timeout > 0 else None)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise CoroutineTimeout(f"the coroutine gave no answer within {timeout:g} s") from None

    def _loop(self) -> asyncio.AbstractEventLoop:
        if self._owner_loop is not None:
            if self._owner_loop.is_closed() or not self._owner_loop.is_running():
                raise RuntimeError(
                    "the event loop of this AsyncContextHost is not running; use the host "
                    "only from the loop it was started on"
                )
            return self._owner_loop
        with self._lock:
            if self._private is None:
                self._private = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._private.run_forever, name="ctxengine-coroutines", daemon=True
                )
                self._thread.start()
            return self._private

    def close(self) -> None:
        """Stop the private loop, if one was started (the owner's loop is left alone)."""
        with self._lock:
            loop, thread = self._private, self._thread
            self._private = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        if not thread.is_alive():
            loop.close()


def _running_here(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _discard(value: Any) -> None:
    close = getattr(value, "close", None)
    if inspect.iscoroutine(value) and callable(close):
        close()  # no "never awaited" warning for a call we refuse
