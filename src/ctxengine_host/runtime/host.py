"""``ContextHost``: the engine prototype, the store, the token counter, the worker pool.

One host serves many sessions (threads welcome). Each session gets the
engine's ``clone_for_agent()``; the prototype is disposed by :meth:`close`.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import re
import threading
import uuid
from pathlib import Path
from typing import Any

from ..config import LoadedConfig, load_config
from ..contract.context import EngineContext
from ..contract.messages import well_formed_text
from ..contract.models import HOST_CAPABILITIES, RuntimeSettings, SummaryResult
from ..contract.signatures import call_declared, missing_required
from ..discovery.plugins import LoadedPlugins, load_plugins, summarizer_plugin_manager
from ..paths import user_data_dir
from ..shapes import check_shape
from ..stores.backends import open_store
from ..stores.pg_quarantine import quarantine_log_for
from ..stores.quarantine import QuarantineLog
from ..stores.transcript import ToolCallPairing, TranscriptStore, stamp_identities
from ..summarizer import SummarizerService
from ..tokens import TokenCounter, message_digest
from .coroutines import CoroutineRunner
from .isolation import (
    EngineFailure,
    EngineGuard,
    EngineHandle,
    Timeouts,
    WorkerPool,
    is_quarantined,
)
from .session import Session

log = logging.getLogger("ctxengine.runtime")

#: The window assumed when neither the caller nor ``[context] context_length`` sets one.
DEFAULT_CONTEXT_LENGTH = 32_768
DEFAULT_MODEL = "gpt-4"

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,199}$")


class ContextHost:
    """The runtime an agent loop drives; see docs/runtime.md.

    ``engine`` is an engine instance (used as the prototype as is), an engine
    name (resolved like the slot), or None (the slot: ``CTXENGINE_ENGINE``, the
    config file, then ``legacy``). ``observers`` None loads the ``ctxengine.plugins``
    group (observers and summarizer backends); a list is used as is, without plugins.
    """

    def __init__(
        self,
        engine: object | str | None = None,
        *,
        model: str | None = None,
        context_length: int | None = None,
        config: LoadedConfig | None = None,
        store_path: str | Path | None = None,
        store: TranscriptStore | None = None,
        data_dir: str | Path | None = None,
        encoding: str | None = None,
        quarantine: QuarantineLog | None = None,
        observers: list[object] | None = None,
        strict_alternation: bool = False,
        max_workers: int = 32,
        event_loop: asyncio.AbstractEventLoop | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        self.config = config or LoadedConfig()
        # Engines keep their own files under <data_dir>/engines/<name>.
        self.data_dir = Path(data_dir) if data_dir is not None else user_data_dir()
        cfg = self.config.config
        self.model = model or cfg.context.model or DEFAULT_MODEL
        provider, _, bare = self.model.rpartition(":")
        self.provider, self.model_name = provider, bare
        length = next(
            (v for v in (context_length, cfg.context.context_length) if v is not None),
            DEFAULT_CONTEXT_LENGTH,
        )
        if isinstance(length, bool) or not isinstance(length, int) or length <= 0:
            raise ValueError(f"context_length must be a positive integer, got {length!r}")
        self.context_length = length
        self.reserve_output_tokens = cfg.context.reserve_output_tokens
        self.strict_alternation = strict_alternation
        # A counter may be given (e.g. integrations.litellm's, with the provider's tokenizer).
        self.counter = counter or TokenCounter(self.model, encoding or cfg.context.encoding)
        plugins = None
        if observers is None:
            plugins = self._load_plugins()
            self.observers = plugins.objects
        else:
            self.observers = list(observers)
        self.summarizer = SummarizerService(
            cfg.summarizer,
            self.counter,
            plugin_manager=summarizer_plugin_manager(plugins) if plugins else None,
        )
        self.quarantine = quarantine or quarantine_log_for(store_path or cfg.store.url)
        # Coroutine engine methods run on ``event_loop`` (AsyncContextHost), else a private loop.
        self.pool = WorkerPool(max_workers=max_workers, coroutines=CoroutineRunner(event_loop))
        self.timeouts = Timeouts(
            hook_seconds=cfg.compression.hook_timeout_seconds,
            context_seconds=cfg.compression.context_timeout_seconds,
        )
        self.store: TranscriptStore = store or open_store(
            store_path or cfg.store.url or cfg.store.path or None
        )
        self._lock = threading.Lock()
        self._sessions: dict[int, Session] = {}
        self._default_resolved: Any = None
        self.resolved = self._resolve(engine)
        self._guard = EngineGuard(
            EngineHandle(
                self.resolved.engine,
                self.resolved.name,
                is_default=self._is_default(self.resolved),
                observers=self.observers,
            ),
            pool=self.pool,
            timeouts=self.timeouts,
            quarantine=self.quarantine,
            make_default=self._default_handle,
            on_fallback=self.prepare_engine,
        )
        self.prepare_engine(self._guard)
        self._closed = False

    @classmethod
    def from_config(
        cls,
        config_path: str | Path | None = None,
        *,
        engine: str | None = None,
        model: str | None = None,
        context_length: int | None = None,
        store_path: str | Path | None = None,
        **kwargs: Any,
    ) -> ContextHost:
        """A host for the config file found as docs/design.md says; the slot picks the engine."""
        return cls(
            engine,
            model=model,
            context_length=context_length,
            config=load_config(config_path),
            store_path=store_path,
            **kwargs,
        )

    # ----------------------------------------------------------- construction

    def _load_plugins(self) -> LoadedPlugins:
        loaded = load_plugins()
        for problem in loaded.problems:
            log.warning("%s", problem)
        return loaded

    def make_context(self, engine_name: str) -> EngineContext:
        """The services an engine gets at construction."""
        return EngineContext(
            engine_name=engine_name,
            data_dir=self.data_dir / "engines" / engine_name,
            count_tokens=self.counter.count_any,
            summarize=self._summarize,
            store_id=getattr(self.store, "store_id", None),
            transcript_holds=getattr(self.store, "holds_message", None),
        )

    def _summarize(
        self,
        content: str | list[dict[str, Any]],
        target_tokens: int,
        focus_topic: str | None = None,
        previous: str | None = None,
    ) -> SummaryResult:
        return self.summarizer.summarize(
            content, target_tokens, focus_topic=focus_topic, previous=previous
        )

    def _resolve(self, engine: object | str | None) -> Any:
        from ..discovery.slot import ResolvedEngine, SlotChoice, choose_slot, resolve_engine
        from ..discovery.validation import contract_problems, host_requirement_problems

        if engine is None or isinstance(engine, str):
            choice = choose_slot(engine, self.config)
            if self._isolated(choice.name):
                return self._resolve_in_worker(choice)
            return resolve_engine(
                choice, self.config, make_context=self.make_context, quarantine=self.quarantine
            )
        name = _engine_name(engine)
        if self._isolated(name):
            raise IsolationError(
                f'engine {name!r} is set to [isolation] mode = "process", but it was passed to '
                "ContextHost as an instance, which runs in this process; pass its name (an entry "
                "point or a plugins-directory engine) so the host builds it in a worker process, "
                f'or set [isolation.engines.{name}] mode = "thread"'
            )
        choice = SlotChoice(name, "explicit", name)  # type: ignore[arg-type]
        problems = contract_problems(engine)
        if problems:
            reason = f"contract check failed: {'; '.join(problems)}"
            log.warning("engine %r not used: %s", name, reason)
            self.quarantine.record(name, "resolve", reason)
            default = self._load_default()
            return ResolvedEngine(default.engine, default.name, default.entry, True, reason, choice)
        unmet = host_requirement_problems(engine, HOST_CAPABILITIES)
        if unmet:
            from ..discovery.slot import EngineSelectionError

            raise EngineSelectionError("; ".join(unmet))
        return ResolvedEngine(engine, name, None, False, None, choice)

    def _isolated(self, name: str) -> bool:
        """True when ``name`` runs in a worker process (never the default engine)."""
        from ..discovery.slot import DEFAULT_ENGINE

        if name == DEFAULT_ENGINE or not self.config.engine_enabled(name):
            return False
        return self.config.config.isolation.mode_for(name) == "process"

    def _resolve_in_worker(self, choice: Any) -> Any:
        """Resolve the selected engine in a worker process; the default runs here if it fails."""
        from ..discovery.slot import ResolvedEngine
        from .process_engine import WorkerCrashed, WorkerStartError, start_process_engine
        from .process_worker import RemoteEngineError, WorkerSpec

        spec = WorkerSpec(
            choice,
            self.config,
            str(self.data_dir),
            self.counter.model,
            self.counter.encoding_name,
            store_id=getattr(self.store, "store_id", None),
        )
        try:
            engine = start_process_engine(spec, self.timeouts, self._engine_service)
        except (WorkerStartError, WorkerCrashed, RemoteEngineError, TimeoutError) as exc:
            reason = f"its worker process could not start: {exc}"
            log.warning("engine %r not used: %s", choice.name, reason)
            self.quarantine.record(choice.name, "resolve", reason)
            default = self._load_default()
            return ResolvedEngine(default.engine, default.name, default.entry, True, reason, choice)
        found = engine.description
        for record in found.records:
            self.quarantine.record(*record)
        if found.name != choice.name:  # it fell back in the worker: the default runs here
            engine.ctxengine_close()
            default = self._load_default()
            return ResolvedEngine(
                default.engine, default.name, default.entry, True, found.reason, choice
            )
        return ResolvedEngine(
            engine, found.name, found.entry, found.fallback, found.reason, choice, found.warnings
        )

    def _engine_service(self, name: str, kwargs: dict[str, Any]) -> Any:
        """A host service called by an engine in a worker process."""
        if name == "summarize":
            return self._summarize(**kwargs)
        if name == "transcript_holds":
            return self.store.holds_message(kwargs["session_id"], kwargs["uid"])
        raise ValueError(f"unknown host service {name!r}")

    def _load_default(self) -> Any:
        with self._lock:
            if self._default_resolved is None:
                from ..discovery.slot import load_default_engine

                self._default_resolved = load_default_engine(
                    self.config, make_context=self.make_context
                )
            return self._default_resolved

    def _is_default(self, resolved: Any) -> bool:
        from ..discovery.engines import LAST_RESORT_NAME
        from ..discovery.slot import DEFAULT_ENGINE

        return resolved.name in (DEFAULT_ENGINE, LAST_RESORT_NAME)

    def _default_handle(self) -> EngineHandle:
        """A fresh default-engine instance for a session whose engine was quarantined."""
        default = self._load_default()
        try:
            engine = default.engine.clone_for_agent()
        except Exception as exc:
            raise EngineFailure(default.name, "clone_for_agent", exc) from exc
        return EngineHandle(engine, default.name, is_default=True, observers=self.observers)

    def prepare_engine(self, guard: EngineGuard) -> None:
        """Give an engine the config's thresholds, then ``update_model`` (host build, clones)."""
        engine: Any = guard.engine
        context = getattr(engine, "context", None)
        store_id = getattr(self.store, "store_id", None)
        if isinstance(context, EngineContext) and context.store_id is None and store_id:
            context.bind_transcript_store(store_id, self.store.holds_message)
        thresholds = self.config.config.compression.model_thresholds
        if thresholds and isinstance(getattr(engine, "model_thresholds", None), dict):
            engine.model_thresholds = {**engine.model_thresholds, **thresholds}
        percent = getattr(self.config.config.compression, "threshold_percent", None)
        if percent is not None and hasattr(engine, "threshold_percent"):
            engine.threshold_percent = percent
        if guard.routes("update_model"):
            guard.call(
                "update_model",
                {
                    "model": self.model_name,
                    "context_length": self.context_length,
                    "provider": self.provider,
                },
            )

    # ----------------------------------------------------------- properties

    @property
    def engine(self) -> object:
        """The engine prototype in charge (the default after a quarantine)."""
        return self._guard.engine

    @property
    def engine_name(self) -> str:
        return self._guard.handle.name

    @property
    def mode(self) -> str:
        return self._guard.mode

    def runtime_settings(self, mode: str, budget_tokens: int | None) -> RuntimeSettings:
        """The ``RuntimeSettings`` engines receive."""
        choice = self.resolved.choice
        return RuntimeSettings.model_validate(
            {
                "runtime": {"mode": mode},
                "model": {
                    "name": self.model_name,
                    "provider": self.provider or None,
                    "context_length": self.context_length,
                },
                "engine_selection": {"selected": choice.name, "source": choice.source},
                "execution_host": "ctxengine",
                "limits": {
                    "budget_tokens": budget_tokens,
                    "max_output_tokens": self.reserve_output_tokens,
                },
            }
        )

    def engine_owns_compaction(self, guard: EngineGuard) -> bool:
        return bool(getattr(guard.engine, "owns_compaction", False))

    def default_compaction(
        self, messages: list[dict[str, Any]], budget_tokens: int
    ) -> list[dict[str, Any]] | None:
        """One request compacted by a fresh default engine (request-only; None if it fails).

        The engine is told a window of ``budget_tokens`` so that its own threshold
        lands inside the budget.
        """
        try:
            engine = self._load_default().engine.clone_for_agent()
            if callable(getattr(engine, "update_model", None)):
                call_declared(
                    engine.update_model,
                    {
                        "model": self.model_name,
                        "context_length": budget_tokens,
                        "provider": self.provider,
                    },
                )
            result = call_declared(
                engine.compress,
                {
                    "messages": copy.deepcopy(messages),
                    "current_tokens": None,
                    "focus_topic": None,
                    "force": True,
                },
            )
        except Exception:
            log.exception("the default engine could not compact an oversized request")
            return None
        messages_out = getattr(result, "messages", result)
        if not isinstance(messages_out, list) or not all(isinstance(m, dict) for m in messages_out):
            return None
        if self.counter.count_messages(messages_out) > budget_tokens:
            return None
        return messages_out

    # ----------------------------------------------------------- sessions

    def open_session(
        self,
        session_id: str | None = None,
        *,
        system_prompt: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        shape: str | None = None,
        send_unknown_fields: bool = False,
    ) -> Session:
        """Start a session, or resume a stored one (its live view, uids and turn count).

        ``shape`` declares the message shape (``chat``, ``responses``, ``anthropic``;
        None: detected); ``send_unknown_fields`` lets fields no API defines reach the
        provider (docs/session-format.md, "Message shapes").
        """
        return self._open(
            session_id,
            system_prompt=system_prompt,
            tools=tools,
            shape=check_shape(shape),
            send_unknown_fields=send_unknown_fields,
        )

    def _open(
        self,
        session_id: str | None,
        *,
        system_prompt: str | None,
        tools: list[dict[str, Any]] | None,
        parent: Session | None = None,
        fork_from: list[dict[str, Any]] | None = None,
        shape: str | None = None,
        send_unknown_fields: bool = False,
    ) -> Session:
        if self._closed:
            raise RuntimeError("this ContextHost is closed; create a new one")
        session_id = _check_session_id(session_id)
        with self._lock:
            if any(s.session_id == session_id for s in self._sessions.values()):
                raise ValueError(
                    f"session {session_id!r} is already open in this host; keep using that "
                    "Session, or end() it before opening it again"
                )
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise TypeError(f"system_prompt must be a str, got {type(system_prompt).__name__}")
        if system_prompt and (problem := system_prompt_problem(system_prompt)) is not None:
            raise ValueError(problem)
        if tools is not None and (
            not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools)
        ):
            raise TypeError("tools must be a list of OpenAI tool dicts")
        row = self.store.open_session(
            session_id,
            parent_session_id=parent.session_id if parent else None,
            system_prompt=system_prompt,
            tools=tools,
        )
        guard = self._session_guard()
        try:
            if fork_from and row.created:
                copies = stamp_identities(fork_from, ToolCallPairing())
                self.store.append_live(
                    session_id, [(m, message_digest(m), "fork") for m in copies], 0
                )
            session = Session(
                self,
                session_id,
                guard,
                system_prompt=row.system_prompt,
                tools=list(row.tools or []),
                stored=self.store.live(session_id),
                stored_count=self.store.count_rows(session_id),
                turn_index=row.turn_index,
                parent=parent,
                shape=shape,
                send_unknown_fields=send_unknown_fields,
            )
            guard.on_fallback = session._on_fallback
            session._start(reset_pending=row.reset_pending)
        except BaseException:
            self._dispose(guard)
            raise
        with self._lock:
            self._sessions[id(session)] = session
        return session

    def _session_guard(self) -> EngineGuard:
        """A guard over a fresh clone of the prototype (the default engine when quarantined)."""
        proto = self._guard
        quarantined = not proto.handle.is_default and is_quarantined(proto.handle.name)
        if quarantined:
            handle = self._default_handle()
        else:
            clone = proto.call("clone_for_agent")
            name = proto.handle.name
            if missing_required(clone):
                reason = f"clone_for_agent() returned {type(clone).__name__}, not an engine"
                proto.note_invalid("clone_for_agent", reason)
                handle = self._default_handle()
                quarantined = True
            else:
                is_default = proto.handle.is_default
                handle = EngineHandle(clone, name, is_default=is_default, observers=self.observers)
        guard = EngineGuard(
            handle,
            pool=self.pool,
            timeouts=self.timeouts,
            quarantine=self.quarantine,
            make_default=self._default_handle,
            on_fallback=self.prepare_engine,  # the session installs its own once built
        )
        if quarantined or proto.quarantined_from:
            guard.quarantined_from = proto.quarantined_from or self.resolved.name
        self.prepare_engine(guard)
        return guard

    def release_session(self, session: Session) -> None:
        """A session ended: forget it and dispose its engine clone."""
        with self._lock:
            self._sessions.pop(id(session), None)
        self._dispose(session.guard)

    def _dispose(self, guard: EngineGuard) -> None:
        if guard.engine is self.resolved.engine:
            return
        try:
            if guard.implements("dispose"):
                guard.call("dispose")
        except EngineFailure:
            log.exception("dispose() of a session engine failed")
        finally:
            guard.handle.close()

    def close(self) -> None:
        """End open sessions, ``dispose()`` the engines, stop the workers, close the store."""
        if self._closed:
            return
        with self._lock:
            sessions = list(self._sessions.values())
        for session in sessions:
            try:
                session.end(reason="host-closed")
            except Exception:
                log.exception("ending session %s on close failed", session.session_id)
        self._closed = True
        disposed = {id(self._guard.engine)}
        if self._guard.implements("dispose"):
            try:
                self._guard.call("dispose")
            except EngineFailure:
                log.exception("dispose() of the engine failed")
        for engine in (self.resolved.engine, getattr(self._default_resolved, "engine", None)):
            if engine is None or id(engine) in disposed:
                continue
            disposed.add(id(engine))
            try:
                self.pool.run(engine.dispose, self.timeouts.hook_seconds)
            except Exception:
                log.exception("dispose() of engine %r failed", _engine_name(engine))
        self._guard.handle.close()
        closer = getattr(self.resolved.engine, "ctxengine_close", None)
        if closer is not None:
            closer()
        self.pool.close()
        self.store.close()

    def __enter__(self) -> ContextHost:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class IsolationError(ValueError):
    """An ``[isolation]`` setting cannot be honoured; the message names the fix."""


def _engine_name(engine: object) -> str:
    try:
        name = engine.name  # type: ignore[attr-defined]
    except Exception:
        return type(engine).__name__
    return name if isinstance(name, str) and name else type(engine).__name__


def _check_session_id(session_id: str | None) -> str:
    if session_id is None:
        return uuid.uuid4().hex
    problem = session_id_problem(session_id)
    if problem is not None:
        raise ValueError(f"{problem} (or None for a new random id)")
    return session_id


def session_id_problem(session_id: object) -> str | None:
    """Why ``session_id`` cannot name a session, or None (the rule for every way one comes
    in: the API, archives)."""
    if isinstance(session_id, str) and _SESSION_ID.fullmatch(session_id):
        return None
    shown = repr(session_id[:60] if isinstance(session_id, str) else session_id)
    return (
        f"invalid session id {shown}: use 1-200 characters of letters, digits and ._:/@- "
        "starting with a letter or digit"
    )


def system_prompt_problem(system_prompt: str) -> str | None:
    """Why no store can keep ``system_prompt`` as given, or None."""
    if "\x00" in system_prompt or well_formed_text(system_prompt) != system_prompt:
        return (
            "system_prompt holds a NUL character or half of a character (a lone UTF-16 "
            "surrogate): the session's store keeps the prompt as given and cannot hold "
            "either; remove them"
        )
    return None
