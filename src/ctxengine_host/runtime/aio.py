"""``AsyncContextHost`` / ``AsyncSession``: the runtime for asyncio agent loops.

Not a second pipeline: an :class:`AsyncSession` drives the sync
:class:`~ctxengine_host.runtime.session.Session` of the same host, each call on an
executor thread, serialized per session by an ``asyncio.Lock``. So every
guarantee of the sync runtime holds unchanged (the store commit before any
engine sees a message, timeouts, quarantine and fallback, validity checks), a
sync engine never blocks the event loop, and many sessions run concurrently on
one loop. Coroutine contract methods are awaited on the caller's loop
(:mod:`ctxengine_host.runtime.coroutines`). See docs/runtime.md, "Async runtime".
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from ..config import load_config
from .host import ContextHost
from .session import CompactionEvent, ProviderRequest, Session, TurnReport

T = TypeVar("T")
Message = dict[str, Any]


class AsyncContextHost:
    """The async counterpart of :class:`ContextHost`, with the same arguments.

    The host is built on first use inside the running loop (``async with`` or
    ``await host.start()``), because coroutine engine methods run on that loop.
    ``executor_workers`` bounds how many session calls run at once.
    """

    def __init__(
        self, engine: object | str | None = None, *, executor_workers: int = 32, **kwargs: Any
    ) -> None:
        self._engine = engine
        self._kwargs = kwargs
        self._workers = executor_workers
        self._host: ContextHost | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._start_lock = asyncio.Lock()

    @classmethod
    def from_config(
        cls, config_path: str | Path | None = None, *, engine: str | None = None, **kwargs: Any
    ) -> AsyncContextHost:
        """Like :meth:`ContextHost.from_config`: the config file found as DESIGN.md says."""
        return cls(engine, config=load_config(config_path), **kwargs)

    async def start(self) -> AsyncContextHost:
        """Build the sync host (engine resolution, store) off the loop; idempotent."""
        async with self._start_lock:
            if self._host is None:
                self._loop = asyncio.get_running_loop()
                self._executor = ThreadPoolExecutor(
                    max_workers=self._workers, thread_name_prefix="ctxengine-async"
                )
                build = functools.partial(
                    ContextHost, self._engine, event_loop=self._loop, **self._kwargs
                )
                self._host = await self._loop.run_in_executor(self._executor, build)
        return self

    @property
    def host(self) -> ContextHost:
        """The sync host underneath (its store, counter, quarantine log, engine)."""
        if self._host is None:
            raise RuntimeError("AsyncContextHost is not started: use `async with` or start()")
        return self._host

    @property
    def engine_name(self) -> str:
        return self.host.engine_name

    @property
    def mode(self) -> str:
        return self.host.mode

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` on the host's executor (sync work that must not block)."""
        await self.start()
        if self._executor is None:
            raise RuntimeError("this AsyncContextHost is closed; create a new one")
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            raise RuntimeError("an AsyncContextHost is used from one event loop only")
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def open_session(
        self,
        session_id: str | None = None,
        *,
        system_prompt: str | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> AsyncSession:
        """Start or resume a session, as :meth:`ContextHost.open_session`."""
        await self.start()
        session = await self.run(
            self.host.open_session, session_id, system_prompt=system_prompt, tools=tools
        )
        return AsyncSession(self, session)

    async def close(self) -> None:
        """End open sessions, dispose the engines, close the store; then stop the executor."""
        if self._host is None or self._executor is None:
            return
        await self.run(self._host.close)
        executor, self._executor = self._executor, None
        executor.shutdown(wait=False)

    async def __aenter__(self) -> AsyncContextHost:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class AsyncSession:
    """One conversation under :class:`AsyncContextHost`; the methods of :class:`Session`,
    awaited. Concurrent calls on one session run one after the other."""

    def __init__(self, host: AsyncContextHost, session: Session) -> None:
        self._host = host
        self.session = session
        self._lock = asyncio.Lock()

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        async with self._lock:
            return await self._host.run(fn, *args, **kwargs)

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run sync code that drives :attr:`session` (e.g. a framework adapter's step) on the
        host's executor, serialized with this session's other calls."""
        return await self._call(fn, *args, **kwargs)

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def engine_tool_names(self) -> set[str]:
        """Names of the tools the engine offers (dispatch them to :meth:`call_engine_tool`)."""
        return {t["function"]["name"] for t in self.session.tools[len(self.session.caller_tools) :]}

    @property
    def ended(self) -> bool:
        return self.session.ended

    async def add_messages(
        self, messages: Iterable[Message], *, repair_input: bool = False
    ) -> None:
        await self._call(self.session.add_messages, list(messages), repair_input=repair_input)

    async def add_user_message(self, text: str) -> None:
        await self._call(self.session.add_user_message, text)

    async def build_request(self) -> ProviderRequest:
        return await self._call(self.session.build_request)

    async def record_response(
        self, assistant_message: Message, usage: dict[str, Any] | None
    ) -> None:
        await self._call(self.session.record_response, assistant_message, usage)

    async def record_tool_results(self, messages: Iterable[Message]) -> None:
        await self._call(self.session.record_tool_results, list(messages))

    async def call_engine_tool(self, name: str, args: dict[str, Any] | str | None = None) -> str:
        return await self._call(self.session.call_engine_tool, name, args)

    async def handle_context_overflow(
        self, error: BaseException | str | None = None
    ) -> ProviderRequest:
        return await self._call(self.session.handle_context_overflow, error)

    async def finish_turn(self) -> TurnReport:
        return await self._call(self.session.finish_turn)

    async def compact(self, focus_topic: str | None = None) -> CompactionEvent | None:
        return await self._call(self.session.compact, focus_topic)

    async def reset(self) -> None:
        await self._call(self.session.reset)

    async def messages(self) -> list[Message]:
        return await self._call(self.session.messages)

    async def status(self) -> dict[str, Any]:
        return await self._call(self.session.status)

    async def wait_for_maintenance(self, timeout: float | None = None) -> None:
        await self._call(self.session.wait_for_maintenance, timeout)

    async def spawn_subagent(
        self,
        mode: str = "isolated",
        ttl_s: float | None = None,
        *,
        system_prompt: str | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> AsyncSession:
        child = await self._call(
            self.session.spawn_subagent, mode, ttl_s, system_prompt=system_prompt, tools=tools
        )
        return AsyncSession(self._host, child)

    async def end(self, reason: str = "completed") -> None:
        await self._call(self.session.end, reason)

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.end(reason="completed" if exc[0] is None else "error")
