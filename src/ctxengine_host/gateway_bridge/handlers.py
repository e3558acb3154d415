"""One function per gateway lifecycle call: params in the gateway's terms, result in its shape."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..contract.messages import content_text
from ..runtime.isolation import EngineFailure
from ..runtime.validity import ValidityError
from .protocol import (
    INVALID_PARAMS,
    PROTOCOL_VERSION,
    RESYNC_NEEDED,
    RpcError,
    optional_int,
    require_list,
    require_object,
    require_str,
)
from .sessions import REF_KEY, BridgeSessions, BridgeTranscriptView, ClientCall

log = logging.getLogger("ctxengine.bridge")

Handler = Callable[[BridgeSessions, dict[str, Any], ClientCall], Any]


def initialize(sessions: BridgeSessions, params: dict[str, Any], call: ClientCall) -> Any:
    """The handshake: the plugin's protocol major must be ours."""
    wanted = params.get("protocolVersion")
    if isinstance(wanted, str) and wanted.split(".")[0] != PROTOCOL_VERSION.split(".")[0]:
        raise RpcError(
            INVALID_PARAMS,
            f"protocol {wanted} is not supported by this server (speaks {PROTOCOL_VERSION}); "
            "upgrade the plugin and ctxengine together",
        )
    return {"protocolVersion": PROTOCOL_VERSION, "info": sessions.info()}


def info(sessions: BridgeSessions, params: dict[str, Any], call: ClientCall) -> Any:
    return sessions.info()


def bootstrap(sessions: BridgeSessions, params: dict[str, Any], call: ClientCall) -> Any:
    """Open (or resume) the session; our engine's own bootstrap runs as the runtime says."""
    bridge = sessions.get(params, "bootstrap")
    return {"bootstrapped": True, "importedMessages": 0, "seen": bridge.seen}


def ingest(sessions: BridgeSessions, params: dict[str, Any], call: ClientCall) -> Any:
    bridge = sessions.get(params, "ingest")
    if "message" not in params:
        raise RpcError(INVALID_PARAMS, "ingest: 'message' is required")
    with bridge.lock:
        ingested = bridge.add([params["message"]]) > 0
        return {"ingested": ingested, "seen": bridge.seen, "refBase": bridge.last_base}


def ingest_batch(sessions: BridgeSessions, params: dict[str, Any], call: ClientCall) -> Any:
    bridge = sessions.get(params, "ingestBatch")
    messages = require_list(params, "messages", "ingestBatch")
    with bridge.lock:
        count = bridge.add(messages)
        return {"ingestedCount": count, "seen": bridge.seen, "refBase": bridge.last_base}


def assemble(sessions: BridgeSessions, params: dict[str, Any], call: ClientCall) -> Any:
    """The request our engine builds, in the gateway's shape.

    ``historyCount`` is how many messages the gateway's history has; when the
    server has seen fewer it answers :data:`RESYNC_NEEDED` with ``seen``, and the
    plugin repeats the call with ``history: {base: seen, messages: [...]}``.
    """
    bridge = sessions.get(params, "assemble")
    count = optional_int(params, "historyCount", "assemble")
    history = params.get("history")
    with bridge.lock:
        if isinstance(history, dict):
            base = optional_int(history, "base", "assemble history") or 0
            bridge.add(require_list(history, "messages", "assemble history"), base)
        elif history is not None:
            raise RpcError(INVALID_PARAMS, "assemble: 'history' must be {base, messages}")
        if count is not None and count > bridge.seen:
            raise RpcError(
                RESYNC_NEEDED,
                f"the server has seen {bridge.seen} of the session's {count} messages",
                {"seen": bridge.seen},
            )
        bridge.apply_budget(optional_int(params, "tokenBudget", "assemble"))
        session = bridge.session
        try:
            request = session.build_request()
        except ValidityError:
            # No user turn yet, or tool calls still open: nothing to assemble;
            # the gateway's own messages go as they are.
            live = [m for m in session.messages()]
            return {
                "messages": bridge.to_gateway(live, _ref_range(params.get("refRange"))),
                "estimatedTokens": session.live.tokens,
                "promptAuthority": "assembled",
                "seen": bridge.seen,
            }
        known = _ref_range(params.get("refRange"))
        head, rest = _split_system_head(request.messages)
        additions = [a for a in (request.system_prompt_addition, *head) if a]
        result: dict[str, Any] = {
            "messages": bridge.to_gateway(rest, known),
            "estimatedTokens": request.conversation_tokens,
            "promptAuthority": request.prompt_authority,
            "seen": bridge.seen,
        }
        if additions:
            result["systemPromptAddition"] = "\n\n".join(additions)
        covers = _covered_indexes(session, request.covers)
        if covers or request.omitted:
            result["covers"] = covers
            result["omitted"] = request.omitted
        return result


def _covered_indexes(session: Any, covers: list[Any]) -> list[list[int]]:
    """The engine's declared coverage (``AssembleResult.covers``: uids and uid ranges) as
    inclusive ranges of the gateway's message indexes: what the request represents by a
    summary rather than sends (docs/bridge.md, "Coverage")."""
    if not covers:
        return []
    index = {
        e.message.get("message_uid"): e.message.get(REF_KEY)
        for e in session.live.entries
        if isinstance(e.message.get(REF_KEY), int)
    }
    ranges = []
    for cover in covers:
        first, last = (cover, cover) if isinstance(cover, str) else tuple(cover)
        lo, hi = index.get(first), index.get(last)
        if lo is not None and hi is not None:
            ranges.append([lo, hi])
    return ranges


def _ref_range(value: Any) -> tuple[int, int] | None:
    """``refRange: [lo, hi]``: the gateway indexes whose messages the plugin holds."""
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise RpcError(INVALID_PARAMS, "assemble: 'refRange' must be [lo, hi] integers")
    return value[0], value[1]


def _split_system_head(messages: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """Leading system messages our engine wrote: the gateway's ``systemPromptAddition``.

    The gateway owns the system prompt; what our engine puts at the head of the
    request (LCM's recall guidance, say) belongs there, not in the conversation.
    """
    count = 0
    while count < len(messages) and messages[count].get("role") == "system":
        count += 1
    return [content_text(m) for m in messages[:count]], messages[count:]


def compact(sessions: BridgeSessions, params: dict[str, Any], call: ClientCall) -> Any:
    """Our engine compacts (``force``, or when it says it is time); the gateway's result shape."""
    bridge = sessions.get(params, "compact")
    force = params.get("force") is True
    focus = params.get("customInstructions")
    with bridge.lock:
        bridge.apply_budget(optional_int(params, "tokenBudget", "compact"))
        session = bridge.session
        if not session.messages():
            return {"ok": True, "compacted": False, "reason": "nothing to compact"}
        if not force:
            current = optional_int(params, "currentTokenCount", "compact")
            flag = session.engine_call(
                "should_compress",
                prompt_tokens=current if current is not None else session.live.tokens,
            )
            if flag is not True:
                return {"ok": True, "compacted": False, "reason": "below the engine's threshold"}
        event = session.compact(focus_topic=focus if isinstance(focus, str) and focus else None)
        if event is None:
            return {"ok": True, "compacted": False, "reason": "the engine did not compact"}
        result = {
            "tokensBefore": event.tokens_before,
            "tokensAfter": event.tokens_after,
            "details": {
                "engine": event.engine,
                "messagesBefore": event.messages_before,
                "messagesAfter": event.messages_after,
                "latencyMs": round(event.latency_ms, 3),
                "summaryTokens": event.summary_tokens,
            },
        }
        out: dict[str, Any] = {"ok": event.ok, "compacted": event.compacted, "result": result}
        if event.detail:
            out["reason"] = event.detail
        return out


def after_turn(sessions: BridgeSessions, params: dict[str, Any], call: ClientCall) -> Any:
    """Commit the turn's new messages, then end the turn (``on_turn_complete``).

    ``maintain`` is not run here: the gateway calls it after every successful turn
    (:func:`maintain`), with its transcript rewrite; running it here too made it run
    twice per turn.

    The plugin sends ``messages.slice(prePromptMessageCount)`` as ``newMessages``
    with ``base`` = the index of the first in the gateway's history.
    """
    bridge = sessions.get(params, "afterTurn")
    messages = require_list(params, "newMessages", "afterTurn")
    base = optional_int(params, "base", "afterTurn")
    with bridge.lock:
        try:
            bridge.add(messages, base)
        except RpcError as exc:
            if exc.code != RESYNC_NEEDED:
                raise
            raise RpcError(exc.code, exc.message, {"seen": bridge.seen}) from None
        bridge.apply_budget(optional_int(params, "tokenBudget", "afterTurn"))
        report = bridge.session.finish_turn(maintain=False)  # the gateway calls maintain
        return {
            "turn": report.turn,
            "compactions": len(report.compactions),
            "mode": report.mode,
            "seen": bridge.seen,
            "refBase": bridge.last_base,
        }


def commit_turn(sessions: BridgeSessions, params: dict[str, Any], call: ClientCall) -> Any:
    """One accepted turn, atomically and once per ``advancementKey`` (the gateway may retry it)."""
    bridge = sessions.get(params, "commitTurn")
    key = require_str(params, "advancementKey", "commitTurn")
    messages = require_list(params, "messages", "commitTurn")
    with bridge.lock:
        if key in bridge.committed_turns:
            return {"status": "duplicate", "seen": bridge.seen}
        bridge.add(messages, turn=key)
        bridge.committed_turns.add(key)
        report = bridge.session.finish_turn(maintain=False)  # the gateway calls maintain
        return {
            "status": "committed",
            "seen": bridge.seen,
            "refBase": bridge.last_base,
            "compactions": len(report.compactions),
        }


def maintain(sessions: BridgeSessions, params: dict[str, Any], call: ClientCall) -> Any:
    """Our engine's ``maintain``, given a transcript view that can rewrite the gateway's entries."""
    bridge = sessions.get(params, "maintain")
    totals = {"changed": False, "bytesFreed": 0, "rewrittenEntries": 0}
    session = bridge.session

    def rewrite(request: dict[str, Any]) -> Any:
        result = call(
            "rewriteTranscriptEntries", {"sessionId": session.session_id, "request": request}
        )
        if isinstance(result, dict):
            totals["changed"] = totals["changed"] or result.get("changed") is True
            totals["bytesFreed"] += int(result.get("bytesFreed") or 0)
            totals["rewrittenEntries"] += int(result.get("rewrittenEntries") or 0)
        return result

    with bridge.lock:
        bridge.maintain_calls += 1
        session.wait_for_maintenance()
        if not session.guard.implements("maintain"):
            return {**totals, "reason": "the engine has no maintain"}
        outcome = session.engine_call(
            "maintain",
            session_id=session.session_id,
            runtime_settings=session.runtime_settings(),
            transcript=BridgeTranscriptView(session, rewrite),
        )
        session.check_model_result("maintain", outcome)
    return totals


def call_tool(sessions: BridgeSessions, params: dict[str, Any], call: ClientCall) -> Any:
    """One of the engine's tools (LCM's ``lcm_grep`` ...) called by the gateway's model.

    Runs in the session's engine (it sees that session's history only); the result
    is the tool's JSON text, errors included (a bad argument is an answer, not a failure).
    """
    bridge = sessions.get(params, "callTool")
    name = require_str(params, "name", "callTool")
    arguments = params.get("arguments", {})
    if not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "callTool: 'arguments' must be an object")
    with bridge.lock:
        return {"text": bridge.session.call_engine_tool(name, arguments)}


def prepare_subagent_spawn(
    sessions: BridgeSessions, params: dict[str, Any], call: ClientCall
) -> Any:
    return sessions.prepare_spawn(params)


def rollback_subagent_spawn(
    sessions: BridgeSessions, params: dict[str, Any], call: ClientCall
) -> Any:
    return {"rolledBack": sessions.rollback_spawn(require_str(params, "rollbackId", "rollback"))}


def on_subagent_ended(sessions: BridgeSessions, params: dict[str, Any], call: ClientCall) -> Any:
    key = require_str(params, "childSessionKey", "onSubagentEnded")
    given = params.get("reason")
    reason = given if isinstance(given, str) else "completed"
    sessions.subagent_ended(key, reason)
    return None


def end_session(sessions: BridgeSessions, params: dict[str, Any], call: ClientCall) -> Any:
    sessions.end(require_str(params, "sessionId", "endSession"), "completed")
    return None


def dispose(sessions: BridgeSessions, params: dict[str, Any], call: ClientCall) -> Any:
    """The gateway let go of the engine: every session ends (the server itself goes on)."""
    return {"endedSessions": sessions.end_all("disposed")}


def status(sessions: BridgeSessions, params: dict[str, Any], call: ClientCall) -> Any:
    if params.get("sessionId"):
        bridge = sessions.get(params, "status", create=False)
        with bridge.lock:
            return {
                **bridge.session.status(),
                "seen": bridge.seen,
                "maintainCalls": bridge.maintain_calls,
            }
    return {"sessions": sessions.count(), "info": sessions.info()}


HANDLERS: dict[str, Handler] = {
    "initialize": initialize,
    "info": info,
    "bootstrap": bootstrap,
    "ingest": ingest,
    "ingestBatch": ingest_batch,
    "assemble": assemble,
    "compact": compact,
    "afterTurn": after_turn,
    "commitTurn": commit_turn,
    "maintain": maintain,
    "callTool": call_tool,
    "prepareSubagentSpawn": prepare_subagent_spawn,
    "rollbackSubagentSpawn": rollback_subagent_spawn,
    "onSubagentEnded": on_subagent_ended,
    "endSession": end_session,
    "dispose": dispose,
    "status": status,
}


def handle(sessions: BridgeSessions, method: str, params: Any, call: ClientCall) -> Any:
    """Run one call; engine failures become :class:`RpcError`, never a dead server."""
    handler = HANDLERS.get(method)
    if handler is None:
        from .protocol import METHOD_NOT_FOUND

        raise RpcError(METHOD_NOT_FOUND, f"unknown method {method!r}; see docs/bridge.md")
    try:
        return handler(sessions, require_object(params, method), call)
    except RpcError:
        raise
    except EngineFailure as exc:
        raise RpcError(-32000, f"{method}: the engine failed: {exc}") from None
    except (ValidityError, ValueError, TypeError) as exc:
        raise RpcError(INVALID_PARAMS, f"{method}: {exc}") from None
