"""Running the engine's ``compress`` for a session and applying its result.

``compress`` cannot change the live view (DESIGN guarantee 4): an engine that
keeps its own history (it implements ``ingest``, so it was given every message
already) gets a :class:`~ctxengine_host.runtime.views.CopyOnWriteMessages` whose items
are private copies made when read (LCM reads the newest few, not thousands),
and whose list methods work on a private copy; any other engine gets a private
deep copy of the whole list; that view handed back is read as a list. A list
or ``CompactResult.messages`` becomes the new live view when it is a valid
sequence: unchanged message versions keep their rows,
new ones are stored as engine rows; nothing is deleted. ``messages=None`` means
the engine keeps the history itself. Every summarizer call made on the worker
is recorded in the :class:`CompactionEvent`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..contract.models import CompactResult
from ..stores.transcript import ToolCallPairing, stamp_identities
from ..summarizer.errors import SummarizerError
from ..tokens import message_digest
from .isolation import SKIPPED
from .live import LiveEntry
from .turns import CompactionEvent
from .validity import SequenceState, sequence_problems
from .views import MessagesView

if TYPE_CHECKING:
    from .parts import SessionState

log = logging.getLogger("ctxengine.runtime")

Message = dict[str, Any]


class Compactor:
    """One session's compactions: call ``compress``, check its result, swap the live view."""

    def __init__(self, session: SessionState) -> None:
        self.session = session

    def run(
        self, reason: str, *, force: bool = False, focus_topic: str | None = None
    ) -> CompactionEvent | None:
        """One ``compress`` call; None when the engine in charge has no ``compress``."""
        session = self.session
        live, stats, guard = session.live, session.turn_stats, session.guard
        before_msgs, before_tokens = len(live), live.tokens
        started = time.perf_counter()
        summaries: list[Any] = []
        try:
            result = guard.call(
                "compress",
                {
                    "messages": (
                        live.copy_on_write() if guard.implements("ingest") else live.messages()
                    ),
                    "current_tokens": before_tokens,
                    "focus_topic": focus_topic,
                    "force": force,
                    "runtime_settings": session.runtime_settings(),
                },
                within=self._summary_recorder(summaries),
            )
        except SummarizerError as exc:
            log.warning("session %s: compaction aborted: %s", session.session_id, exc)
            result = CompactResult(ok=False, reason=f"summarizer failed: {exc}")
        elapsed = (time.perf_counter() - started) * 1000
        stats.compress_ms += elapsed
        stats.engine_ms += elapsed
        event = CompactionEvent(
            reason=reason,
            tokens_before=before_tokens,
            tokens_after=before_tokens,
            messages_before=before_msgs,
            messages_after=before_msgs,
            latency_ms=elapsed,
            summary_levels=[int(getattr(s, "level", 0)) for s in summaries],
            summary_tokens=sum(int(getattr(s, "output_tokens", 0)) for s in summaries),
            engine=guard.handle.name,
        )
        if result is SKIPPED:
            return None
        new_messages = self._result_messages(result, event)
        if new_messages is None:
            return event
        if not self._replace_live(new_messages):
            event.ok = False
            event.detail = "the engine's result is not a valid message sequence; ignored"
            return event
        event.messages_after = len(session.live)
        event.tokens_after = session.live.tokens
        event.compacted = (
            event.compacted
            or event.messages_after != before_msgs
            or (event.tokens_after != before_tokens)
        )
        return event

    def _summary_recorder(self, sink: list[Any]) -> Callable[[Callable[[], Any]], Any] | None:
        recording = getattr(self.session.host.summarizer, "recording", None)
        if recording is None:
            return None

        def within(call: Callable[[], Any]) -> Any:
            with recording() as results:
                try:
                    return call()
                finally:
                    sink.extend(results)

        return within

    def _result_messages(self, result: Any, event: CompactionEvent) -> list[Message] | None:
        """The new live view a compress result asks for, or None (unchanged / engine-owned)."""
        guard = self.session.guard
        if isinstance(result, dict) and not isinstance(result, list):
            try:
                result = CompactResult.model_validate(result)
            except Exception as exc:
                guard.note_invalid("compress", f"bad CompactResult dict: {exc}")
                event.ok, event.detail = False, "invalid result ignored"
                return None
        if isinstance(result, CompactResult):
            event.ok = result.ok
            event.detail = result.reason
            if result.messages is None:
                event.compacted = result.compacted
                if result.tokens_after is not None:
                    event.tokens_after = result.tokens_after
                if result.tokens_before is not None:
                    event.tokens_before = result.tokens_before
                return None
            if not result.ok:
                return None
            return result.messages
        if isinstance(result, MessagesView):
            result = list(result)  # our input handed back (maybe edited): its messages
        if isinstance(result, list):
            return result
        guard.note_invalid("compress", f"expected a list or CompactResult, got {result!r}"[:200])
        event.ok, event.detail = False, "invalid result ignored"
        return None

    def _replace_live(self, new_messages: list[Any]) -> bool:
        """Point the live view at ``new_messages``; unchanged versions reuse their rows."""
        session = self.session
        live = session.live
        strict = session.host.strict_alternation
        problems = sequence_problems(
            new_messages,
            require_user=live.state.has_user,
            allow_pending_tail=True,
            strict_alternation=strict,
        )
        state = SequenceState(strict_alternation=strict)
        for message in new_messages if not problems else ():
            state.feed(message)
        pending = live.state.unanswered
        if (
            not problems
            and pending
            and (state.unanswered != pending or not pending <= state.call_ids)
        ):
            problems = [f"the tool call(s) {', '.join(sorted(pending))} awaiting results were lost"]
        if problems:
            session.guard.note_invalid("compress", problems[0])
            return False
        current = live.by_version()
        pairing = ToolCallPairing()
        entries: list[LiveEntry] = []
        fresh: list[tuple[int, Message, str]] = []
        for message in new_messages:
            digest = message_digest(message)
            reused = current.get((message.get("message_uid"), digest))
            if reused is not None and _same_identity(reused.message, message):
                pairing.observe(reused.message)
                entries.append(reused)
                continue
            (stamped,) = stamp_identities([message], pairing)
            fresh.append((len(entries), stamped, digest))
            entries.append(None)  # type: ignore[arg-type]
        store = session.host.store
        if fresh:
            row_ids = store.insert_rows(session.session_id, [(m, d, "engine") for _, m, d in fresh])
            session.stored_count += len(row_ids)
            for (position, stamped, digest), row_id in zip(fresh, row_ids, strict=True):
                entries[position] = live.entry(row_id, stamped, digest)
        if [e.row_id for e in entries] != [e.row_id for e in live.entries]:
            store.replace_live(session.session_id, [e.row_id for e in entries])
        live.replace(entries, state)
        return True


def _same_identity(stored: Message, candidate: Message) -> bool:
    """A compress result reuses a row only when its persistence fields agree too."""
    for key in ("_absorbed_message_uids", "_tool_call_uids", "_tool_call_uid"):
        if key in candidate and candidate[key] != stored.get(key):
            return False
    return True
