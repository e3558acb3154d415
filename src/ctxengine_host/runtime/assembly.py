"""Building one provider request: the default request, the engine's selection, substitution.

The default request is the session's system prompt followed by the cached
provider copies of the live view, with running token totals: O(1) work apart
from one list of references. ``select_context`` gets read-only views
(:mod:`ctxengine_host.runtime.views`) and may replace that one request (fail-open:
the default request is then built, and only then, since a valid selection replaces it);
when a request is still over budget after the engine compacted, an engine
that does not own compaction has the request compacted by the default
engine's algorithm (``substitute``).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ..contract.models import AssembleResult
from ..discovery.fallback import keep_newest_that_fit
from ..tokens import REPLY_PRIMER_TOKENS
from .coverage import mark_omissions, run_labels, sent_runs, uncovered_runs, with_declared
from .isolation import SKIPPED
from .turns import ProviderRequest
from .validity import RequestChecker, sequence_problems
from .views import HeadedMessagesView, copy_message

if TYPE_CHECKING:
    from .parts import SessionState

Message = dict[str, Any]

log = logging.getLogger("ctxengine.runtime")

#: Room kept free when the host cuts a request, for its omission marker.
MARKER_RESERVE_TOKENS = 64


def system_head(system_prompt: str | None, addition: str | None) -> list[Message]:
    """The system message(s) a request starts with: the engine's addition, then the prompt."""
    if system_prompt is None:
        return [{"role": "system", "content": addition}] if addition else []
    text = f"{addition}\n\n{system_prompt}" if addition else system_prompt
    return [{"role": "system", "content": text}]


class RequestAssembler:
    """Builds a session's provider requests."""

    def __init__(self, session: SessionState) -> None:
        self.session = session
        self._addition_head: tuple[str, list[Message], int] | None = None
        self._checker = RequestChecker(strict_alternation=session.host.strict_alternation)

    def assemble(self) -> ProviderRequest:
        """The engine's selection, else the default request; ``over_budget`` set by precheck."""
        if not self.session.guard.implements("select_context"):
            return self.finish(self.default_request())
        started = time.perf_counter()
        method, kwargs = self.select_call()
        return self.finish(self.selected(self.session.engine_call(method, **kwargs), started))

    def default_request(self) -> ProviderRequest:
        """The session's system prompt and the whole live view, counted."""
        session = self.session
        live = session.live
        conversation = live.tokens + REPLY_PRIMER_TOKENS
        request = ProviderRequest(
            messages=session.head + live.wire,
            tools=session.tools,
            estimated_tokens=session.head_tokens + conversation + session.tool_tokens,
            conversation_tokens=conversation,
            budget_tokens=session.budget_tokens,
            precheck_tokens=conversation,
        )
        if self._keeps_originals():
            request.originals = session.head + [e.message for e in live.entries]
        return request

    def select_call(self) -> tuple[str, dict[str, Any]]:
        """The ``select_context`` call, as (method, kwargs).

        ``request_messages`` reads as the default request's messages (the system head and
        the live view), a snapshot, without building that list.
        """
        session = self.session
        live = session.live
        return "select_context", {
            "request_messages": HeadedMessagesView(session.head, live.wire, len(live.wire)),
            "conversation_messages": session.live.view(),
            "incoming_message": copy_message(session.live.last_user_message()),
            "budget_tokens": session.budget_tokens,
            "runtime_settings": session.runtime_settings(),
        }

    def selected(self, result: Any, started: float) -> ProviderRequest:
        """:meth:`apply_selection`, the time since ``started`` counted as selection time;
        the default request when the selection is not used."""
        try:
            request = self.apply_selection(result)
        finally:
            self.session.turn_stats.select_ms += (time.perf_counter() - started) * 1000
        return request if request is not None else self.default_request()

    def finish(self, request: ProviderRequest) -> ProviderRequest:
        """The request's shape and whether the precheck finds it over budget."""
        request.shape = self.session.shape or "chat"
        request.over_budget = request.precheck_tokens > self.session.budget_tokens
        return request

    def apply_selection(self, result: Any) -> ProviderRequest | None:
        """The request ``select_context``'s result makes, or None (fail-open: anything but a
        valid non-empty selection leaves the default request)."""
        session = self.session
        guard = session.guard
        if result is None or result is SKIPPED or (isinstance(result, list) and not result):
            return None
        addition = None
        authority = "assembled"
        engine_estimate = 0
        if isinstance(result, dict) and "messages" in result:
            try:
                result = AssembleResult.model_validate(result)
            except Exception as exc:
                guard.note_invalid("select_context", f"bad AssembleResult dict: {exc}")
                return None
        covers: list[Any] = []
        if isinstance(result, AssembleResult):
            addition = result.system_prompt_addition or None
            authority = result.prompt_authority
            engine_estimate = result.estimated_tokens
            selected = result.messages
            covers = list(result.covers)
            if not selected and not addition:
                return None
        elif isinstance(result, list):
            selected = result
        else:
            guard.note_invalid("select_context", f"not a list: {type(result).__name__}")
            return None
        if not all(isinstance(m, dict) for m in selected):
            guard.note_invalid("select_context", "the list holds non-dict items")
            return None
        sources: list[Message] | None = None
        positions: list[int | None] | None = None
        if selected:
            kept = self._without_own_system_prompt(selected)
            if engine_estimate and len(kept) < len(selected):
                # The estimate counted the copy of the system prompt just removed (the head's
                # one message): the host sends its own head, which the budget leaves out.
                engine_estimate = max(1, engine_estimate - session.head_tokens)
            # Counted before stripping: uids and digests find the cached counts.
            tokens, wire, positions = session.live.resolve(kept)
            conversation = tokens + REPLY_PRIMER_TOKENS
            sources = kept
        else:  # an addition alone: the default request's messages, already counted
            wire = list(session.live.wire)
            conversation = session.live.tokens + REPLY_PRIMER_TOKENS
        head, head_tokens = self._head_for(addition)
        if not session.head and addition and wire and wire[0].get("role") == "system":
            first = dict(wire[0])
            first["content"] = f"{addition}\n\n{first.get('content') or ''}"
            counter = session.host.counter
            conversation += counter.count_message(first) - counter.count_message(wire[0])
            wire[0] = first
            head, head_tokens = [], 0
        messages = [*head, *wire]
        if selected:
            problems = self._checker.problems(messages)
            if problems:
                guard.note_invalid("select_context", f"invalid sequence: {problems[0]}")
                return None
        if authority == "assembled" and engine_estimate:
            precheck = engine_estimate
        elif authority == "preassembly_may_overflow":
            whole = session.live.tokens + REPLY_PRIMER_TOKENS
            precheck = max(conversation, engine_estimate, whole)
        else:
            precheck = conversation
        return ProviderRequest(
            messages=messages,
            tools=session.tools,
            estimated_tokens=head_tokens + conversation + session.tool_tokens,
            conversation_tokens=conversation,
            budget_tokens=session.budget_tokens,
            precheck_tokens=precheck,
            selected=True,
            system_prompt_addition=addition,
            prompt_authority=authority,
            originals=self._originals(head, kept if selected else None, wire),
            covers=covers,
            sources=sources,
            source_positions=positions,
        )

    def _keeps_originals(self) -> bool:
        """Whether requests carry their internal messages: a session shape other than chat
        converts them for its SDK call (:meth:`ProviderRequest.provider_kwargs`)."""
        return self.session.shape not in (None, "chat")

    def _originals(
        self, head: list[Message], kept: list[Message] | None, wire: list[Message]
    ) -> list[Message] | None:
        """The internal messages behind a selected request (non-chat shapes only)."""
        if not self._keeps_originals():
            return None
        if kept is None:  # an addition alone: the default request's messages
            kept = [e.message for e in self.session.live.entries]
        if not head and wire and kept:  # the addition went into the first system message
            kept = [wire[0], *kept[1:]]
        return [*head, *kept]

    def _without_own_system_prompt(self, selected: list[Message]) -> list[Message]:
        """The selection minus the copy of the session's system prompt the engine received.

        The host re-adds its own head (with the engine's addition); system messages
        the engine added itself stay, right after that head.
        """
        head = self.session.head
        if head and selected and _is_copy_of(selected[0], head[0]):
            return list(selected[1:])
        return list(selected)

    def _head_for(self, addition: str | None) -> tuple[list[Message], int]:
        """The system head with ``addition`` and its token count, cached per addition."""
        session = self.session
        if addition is None:
            return session.head, session.head_tokens
        cached = self._addition_head
        if cached is None or cached[0] != addition:
            head = system_head(session.system_prompt, addition)
            tokens = sum(session.host.counter.count_message(m) for m in head)
            cached = self._addition_head = (addition, head, tokens)
        return cached[1], cached[2]

    def substitute(self, request: ProviderRequest) -> ProviderRequest:
        """This request only, compacted by the default engine (last resort: drop the oldest)."""
        session = self.session
        head_len = len(session.head)
        body = request.sources
        if body is None:  # the default request: the live view, uids included
            body = [e.message for e in session.live.entries]
        counter = session.host.counter
        budget = session.budget_tokens - MARKER_RESERVE_TOKENS  # room for a marker
        covers: list[Any] = []
        compacted = session.host.default_compaction(body, budget)
        if compacted is None or sequence_problems(compacted):
            compacted = keep_newest_that_fit(
                body, budget - REPLY_PRIMER_TOKENS, counter.count_messages
            )
        else:  # the default engine's summary represents what it took out
            covers = self._summarized_away(body, compacted)
        tokens, wire, positions = session.live.resolve(compacted)
        conversation = tokens + REPLY_PRIMER_TOKENS
        head = request.messages[:head_len]
        return ProviderRequest(
            messages=[*head, *wire],
            tools=request.tools,
            estimated_tokens=request.estimated_tokens - request.conversation_tokens + conversation,
            conversation_tokens=conversation,
            budget_tokens=session.budget_tokens,
            selected=request.selected,
            over_budget=conversation > session.budget_tokens,
            precheck_tokens=conversation,
            system_prompt_addition=request.system_prompt_addition,
            prompt_authority=request.prompt_authority,
            substituted=True,
            shape=request.shape,
            covers=covers,
            sources=compacted,
            source_positions=positions,
        )

    def _summarized_away(self, body: list[Message], compacted: list[Message]) -> list[Any]:
        """Uids of ``body`` missing from ``compacted`` when ``compacted`` holds a new summary."""
        kept = {m.get("message_uid") for m in compacted}
        live = self.session.live
        if all(live.position(m.get("message_uid")) is not None for m in compacted):
            return []  # nothing new in the result: messages were only dropped
        return [m["message_uid"] for m in body if m.get("message_uid") not in kept]

    def check_coverage(self, request: ProviderRequest) -> ProviderRequest:
        """Mark the live messages the request leaves out uncovered (O(request), not O(live)).

        The default request sends the whole live view: nothing to check.
        """
        session = self.session
        request.sent_messages = len(request.messages)
        positions = request.source_positions
        if positions is None:
            return request
        live = session.live
        head_len = len(request.messages) - len(positions)
        covered = with_declared(sent_runs(positions), live.declared_spans(request.covers))
        runs = uncovered_runs(len(live), covered)
        if not runs:
            return request
        body = request.messages[head_len:]
        marked = mark_omissions(body, positions, runs)
        extra = live.count(marked) - live.count(body)
        request.messages = [*request.messages[:head_len], *marked]
        request.sent_messages = len(request.messages)
        request.omitted = sum(end - start for start, end in runs)
        request.conversation_tokens += extra
        request.estimated_tokens += extra
        request.precheck_tokens += extra
        log.warning(
            "session %s: %d live messages (%s) left out of the request without a summary; "
            "marked in the request",
            session.session_id,
            request.omitted,
            run_labels(runs[:5]),
        )
        return request


def _is_copy_of(message: Message, head: Message) -> bool:
    """True when ``message`` is the session's system prompt as the engine received it.

    A stored message (it has a uid) is never that copy, even with the same text.
    """
    return (
        message.get("role") == head["role"]
        and message.get("content") == head["content"]
        and "message_uid" not in message
    )
