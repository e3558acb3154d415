"""The gateway's lifecycle mapped onto our runtime: one :class:`Session` per gateway session.

Sessions are keyed by the gateway's ``sessionId`` (its ``sessionKey`` is kept to
find parents of sub-agents). Every message goes through the host's
:class:`~ctxengine_host.Session`, so the transcript store, the engine guard
(timeouts, quarantine, fallback to the default engine) and the engine's
bootstrap/ingest/compaction pipeline apply exactly as in process.

The server keeps each session's history: the plugin sends only what is new
(``afterTurn``'s turn messages, ``ingest``), and ``assemble`` sends none unless the
server asks for it (:data:`~.protocol.RESYNC_NEEDED`, when it has seen fewer gateway
messages than the gateway has). Each gateway message is stored with its index in
the gateway's transcript (:data:`REF_KEY`), so a restarted server knows how many it
has seen.
"""

from __future__ import annotations

import itertools
import logging
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..contract.engine import ttl_problem
from ..contract.models import RuntimeSettings
from ..discovery.validation import engine_info
from ..runtime.validity import ValidityError
from ..runtime.views import TranscriptView
from .protocol import (
    INVALID_PARAMS,
    RESYNC_NEEDED,
    UNKNOWN_SESSION,
    RpcError,
)
from .shapes import ORIGINAL_KEY, ShapeError, from_openai, is_context, to_openai, usage_of

if TYPE_CHECKING:
    from ..runtime.host import ContextHost
    from ..runtime.session import Session

log = logging.getLogger("ctxengine.bridge")

#: The key under which a converted message keeps its index in the gateway's transcript.
REF_KEY = "gateway_ref"

#: The key under which the first message of a committed turn keeps the turn's advancement key.
TURN_KEY = "gateway_turn"

#: Calls the server makes back to the plugin: ``(method, params) -> result``.
ClientCall = Callable[[str, dict[str, Any]], Any]


class BridgeTranscriptView(TranscriptView):
    """``maintain``'s transcript, plus the gateway's safe rewrite offered back to the engine."""

    def __init__(self, session: Session, rewrite: Callable[[dict[str, Any]], Any]) -> None:
        super().__init__(session)
        self._rewrite = rewrite

    def rewrite_transcript_entries(self, request: dict[str, Any]) -> Any:
        """The gateway's ``runtimeContext.rewriteTranscriptEntries(request)``; its result."""
        return self._rewrite(request)


class BridgeSession:
    """One gateway session: our Session, what we have seen of the gateway's transcript."""

    def __init__(self, session: Session, session_key: str | None) -> None:
        self.session = session
        self.session_key = session_key
        self.lock = threading.RLock()
        self.seen = 0
        self.fresh: dict[int, dict[str, Any]] = {}  # ref -> to_openai(original) with its ref
        self.tool_names: dict[str, str] = {}
        self.gateway_settings: Any = None
        self.budget: int | None = None
        self.committed_turns: set[str] = set()
        self.last_base = 0  # the gateway index of the first message of the last add()
        self.maintain_calls = 0  # the gateway's maintain calls (status: maintainCalls)
        for row in session.host.store.rows(session.session_id):
            ref = row.message.get(REF_KEY)
            if isinstance(ref, int) and ref >= self.seen:
                self.seen = ref + 1
            turn = row.message.get(TURN_KEY)
            if isinstance(turn, str):
                self.committed_turns.add(turn)
        for message in session.messages():
            self._remember_tools(message)

    def _remember_tools(self, message: dict[str, Any]) -> None:
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict):
                name = (call.get("function") or {}).get("name")
                self.tool_names[str(call.get("id"))] = str(name or "")

    # ------------------------------------------------------------- messages in

    def add(self, messages: list[Any], base: int | None = None, turn: str | None = None) -> int:
        """Commit gateway messages ``base, base+1, …`` that are new; returns how many were.

        ``turn`` (the gateway's advancement key) is stored on the turn's first
        message, so a committed turn is known as such after a restart.
        """
        start = self.seen if base is None else base
        self.last_base = start
        if start > self.seen:
            raise RpcError(
                RESYNC_NEEDED,
                f"the server has seen {self.seen} messages of this session, not {start}",
                {"seen": self.seen},
            )
        fresh = messages[self.seen - start :]
        pending: list[dict[str, Any]] = []
        added = 0
        for offset, original in enumerate(fresh):
            ref = self.seen + offset
            if not is_context(original):
                continue
            try:
                converted = to_openai(original, ref)
            except ShapeError as exc:
                raise RpcError(INVALID_PARAMS, str(exc)) from None
            converted[REF_KEY] = ref
            if turn is not None:
                converted[TURN_KEY] = turn
                turn = None
            self.fresh[ref] = dict(converted)
            self._remember_tools(converted)
            if converted["role"] == "assistant":
                self._commit(pending)
                pending = []
                self._commit_response(converted, usage_of(original))
            else:
                pending.append(converted)
            added += 1
        self._commit(pending)
        self.seen += len(fresh)
        return added

    def _commit(self, batch: list[dict[str, Any]]) -> None:
        if not batch:
            return
        try:
            self.session.add_messages(batch)
        except ValidityError:
            # The gateway's transcript may hold what our rules refuse (an aborted tool
            # call, two user turns in a row): repair keeps every message's content.
            self.session.add_messages(batch, repair_input=True)

    def _commit_response(self, message: dict[str, Any], usage: dict[str, int] | None) -> None:
        try:
            self.session.record_response(message, usage)
        except ValidityError:
            self._commit([message])

    # ------------------------------------------------------------ messages out

    def to_gateway(
        self, messages: list[dict[str, Any]], known: tuple[int, int] | None = None
    ) -> list[dict[str, Any]]:
        """Our messages in the gateway's shape: originals where the engine left them.

        An unchanged original whose index is in ``known`` (the range the plugin
        still holds) travels as ``{"$ref": index}``: the context goes back without
        being sent back.
        """
        out = []
        for message in messages:
            ref = message.get(REF_KEY)
            fresh = self.fresh.get(ref) if isinstance(ref, int) else None
            if fresh is None and isinstance(message.get(ORIGINAL_KEY), dict):
                fresh = to_openai(message[ORIGINAL_KEY])
                fresh.update({k: message[k] for k in (REF_KEY, TURN_KEY) if k in message})
                self.fresh[ref] = fresh  # type: ignore[index]
            converted = from_openai(message, self.tool_names, fresh)
            if (
                known is not None
                and isinstance(ref, int)
                and known[0] <= ref < known[1]
                and converted is message.get(ORIGINAL_KEY)
            ):
                converted = {"$ref": ref}
            out.append(converted)
        return out

    # ------------------------------------------------------------ settings

    def apply_budget(self, budget: int | None) -> None:
        """The gateway's prompt budget for this call becomes the session's and the engine's."""
        if budget is None or budget <= 0 or budget == self.budget:
            return
        self.budget = budget
        session = self.session
        session.budget_tokens = budget
        if session.guard.routes("update_model"):
            host = session.host
            session.engine_call(
                "update_model",
                model=host.model_name,
                context_length=budget,
                provider=host.provider,
            )

    def runtime_settings(self) -> RuntimeSettings:
        """Ours, with the gateway's own ``runtimeSettings`` passed through in ``diagnostics``."""
        session = self.session
        ours = session.host.runtime_settings(session.guard.mode, session.budget_tokens)
        if self.gateway_settings is None:
            return ours
        return ours.model_copy(
            update={"diagnostics": {**(ours.diagnostics or {}), "gateway": self.gateway_settings}}
        )


class BridgeSessions:
    """Every gateway session of one server, over one :class:`ContextHost`."""

    def __init__(self, host: ContextHost) -> None:
        self.host = host
        self._lock = threading.Lock()
        self._sessions: dict[str, BridgeSession] = {}
        self._by_key: dict[str, str] = {}
        self._rollbacks: dict[str, Callable[[], Any]] = {}
        self._parents: dict[str, str] = {}  # child session key -> parent session id
        self._ids = itertools.count(1)
        self._tools: list[dict[str, Any]] | None = None

    # ------------------------------------------------------------- lookup

    def get(self, params: dict[str, Any], method: str, *, create: bool = True) -> BridgeSession:
        """The session named by ``sessionId`` (opened, or resumed from the store, on first use)."""
        session_id = params.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            raise RpcError(INVALID_PARAMS, f"{method}: 'sessionId' must be a non-empty string")
        key = params.get("sessionKey")
        key = key if isinstance(key, str) and key else None
        with self._lock:
            found = self._sessions.get(session_id)
            if found is None:
                if not create:
                    raise RpcError(UNKNOWN_SESSION, f"{method}: no session {session_id!r}")
                try:
                    # The bridge's own fields (shapes.chat.BRIDGE_FIELDS) ride on the
                    # request's messages so that each maps back to the gateway's record.
                    session = self.host.open_session(session_id, send_unknown_fields=True)
                except ValueError as exc:
                    raise RpcError(INVALID_PARAMS, f"{method}: {exc}") from None
                found = BridgeSession(session, key)
                _pass_settings_through(found)
                self._sessions[session_id] = found
            if key is not None:
                found.session_key = key
                self._by_key[key] = session_id
        if "runtimeSettings" in params:
            found.gateway_settings = params["runtimeSettings"]
        return found

    def find_by_key(self, key: str) -> BridgeSession | None:
        with self._lock:
            session_id = self._by_key.get(key)
            return self._sessions.get(session_id) if session_id else None

    def count(self) -> int:
        with self._lock:
            return len(self._sessions)

    # ------------------------------------------------------------- subagents

    def prepare_spawn(self, params: dict[str, Any]) -> dict[str, Any] | None:
        """``prepareSubagentSpawn``: the parent engine's preparation; a rollback id if any."""
        parent_key = params.get("parentSessionKey")
        child_key = params.get("childSessionKey")
        if not isinstance(parent_key, str) or not isinstance(child_key, str):
            raise RpcError(
                INVALID_PARAMS,
                "prepareSubagentSpawn: 'parentSessionKey' and 'childSessionKey' must be strings",
            )
        parent = self.find_by_key(parent_key)
        if parent is None and isinstance(params.get("parentSessionId"), str):
            parent = self.get({"sessionId": params["parentSessionId"]}, "prepareSubagentSpawn")
        if parent is None:
            return None
        mode = params.get("contextMode") or "isolated"
        if mode not in ("isolated", "fork"):
            raise RpcError(
                INVALID_PARAMS, "prepareSubagentSpawn: 'contextMode' must be isolated|fork"
            )
        ttl_ms = params.get("ttlMs")
        if (problem := ttl_problem(ttl_ms)) is not None:
            raise RpcError(INVALID_PARAMS, f"prepareSubagentSpawn: 'ttlMs' {problem}")
        child_id = params.get("childSessionId") or child_key
        with self._lock:
            self._parents[child_key] = parent.session.session_id
        with parent.lock:
            guard = parent.session.guard
            if not guard.implements("prepare_subagent_spawn"):
                return None
            rollback = parent.session.engine_call(
                "prepare_subagent_spawn",
                parent_session_id=parent.session.session_id,
                child_session_id=child_id,
                context_mode=mode,
                ttl_s=None if ttl_ms is None else ttl_ms / 1000,
            )
        if not callable(rollback):
            return None
        rollback_id = f"rb-{next(self._ids)}-{uuid.uuid4().hex[:8]}"
        with self._lock:
            self._rollbacks[rollback_id] = rollback
        return {"rollbackId": rollback_id}

    def rollback_spawn(self, rollback_id: str) -> bool:
        with self._lock:
            rollback = self._rollbacks.pop(rollback_id, None)
        if rollback is None:
            return False
        rollback()
        return True

    def subagent_ended(self, child_key: str, reason: str) -> None:
        """``onSubagentEnded``: the child's session ends, the parent's engine is told."""
        with self._lock:
            parent_id = self._parents.pop(child_key, None)
            parent = self._sessions.get(parent_id) if parent_id else None
        child = self.find_by_key(child_key)
        if child is not None:
            self.end(child.session.session_id, reason)
        if parent is not None and not parent.session.ended:
            with parent.lock:
                if parent.session.guard.implements("on_subagent_ended"):
                    parent.session.engine_call(
                        "on_subagent_ended",
                        child_session_id=child.session.session_id if child else child_key,
                        reason=reason,
                    )

    # ------------------------------------------------------------- ending

    def end(self, session_id: str, reason: str) -> None:
        with self._lock:
            found = self._sessions.pop(session_id, None)
            if found is not None and found.session_key:
                self._by_key.pop(found.session_key, None)
        if found is not None:
            with found.lock:
                found.session.end(reason=reason)

    def end_all(self, reason: str) -> int:
        with self._lock:
            ids = list(self._sessions)
        for session_id in ids:
            try:
                self.end(session_id, reason)
            except Exception:
                log.exception("ending session %s failed", session_id)
        return len(ids)

    def info(self) -> dict[str, Any]:
        """The engine in charge, in the gateway's ``ContextEngineInfo`` terms, with its tools."""
        info = engine_info(self.host.engine)
        return {
            "tools": self.tools(),
            "name": info.display_name or info.name,
            "engine": info.name,
            "version": info.version,
            "ownsCompaction": info.owns_compaction,
            "turnMaintenanceMode": info.turn_maintenance_mode,
            "mode": self.host.mode,
        }

    def tools(self) -> list[dict[str, Any]]:
        """The engine's tools as the gateway registers them: ``{name, description, parameters}``.

        Read once per server (the engine's schemas do not change per session); an
        engine whose ``get_tool_schemas`` fails or answers nonsense offers none.
        """
        if self._tools is None:
            self._tools = _gateway_tools(self.host.engine)
        return self._tools


def _gateway_tools(engine: object) -> list[dict[str, Any]]:
    read = getattr(engine, "get_tool_schemas", None)
    if read is None:
        return []
    try:
        schemas = read()
    except Exception:
        log.exception("get_tool_schemas failed: the engine's tools are not offered")
        return []
    out = []
    for schema in schemas if isinstance(schemas, list) else []:
        spec = schema.get("function") if isinstance(schema, dict) else None
        spec = spec if isinstance(spec, dict) else schema
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            continue
        parameters = spec.get("parameters")
        out.append(
            {
                "name": spec["name"],
                "description": str(spec.get("description") or spec["name"]),
                "parameters": parameters if isinstance(parameters, dict) else {"type": "object"},
            }
        )
    return out


def _pass_settings_through(bridge: BridgeSession) -> None:
    """The session's engine calls see the gateway's ``runtimeSettings`` too."""
    bridge.session.runtime_settings = bridge.runtime_settings  # type: ignore[method-assign]
