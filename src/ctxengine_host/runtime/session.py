"""``Session``: one conversation of one agent, driven turn by turn by an agent loop.

The turn pipeline (docs/runtime.md): every message is committed to the store,
then given to ``ingest``; ``bootstrap`` once per engine and session before the
first ingest; ``on_session_start`` on every open; for each provider request
``should_compress_preflight`` → ``compress`` → ``select_context`` → overflow
precheck; after each response ``update_from_response`` → ``should_compress`` →
``compress``; at the end of a turn ``on_turn_complete`` → ``maintain``.

The session orchestrates; the work is done by its parts: the live view and its
caches (:mod:`.live`), request assembly (:mod:`.assembly`), compaction
(:mod:`.compaction`), ``maintain`` runs (:mod:`.maintenance`), sub-agents
(:mod:`.subagents`), the read-only views hooks receive (:mod:`.views`) and the
turn's data (:mod:`.turns`, re-exported here).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..contract.messages import strip_persistence_fields, well_formed
from ..contract.models import RuntimeSettings
from ..contract.usage import estimated_usage, normalize_usage
from ..faults import fault_point
from ..limits import InputLimitError, check_nesting, loads_json
from ..shapes import ShapeError, ShapeReader, timestamp_problem, to_caller, unknown_fields
from ..stores.transcript import StoredMessage, stamp_identities
from ..tokens import versioned
from .assembly import RequestAssembler, system_head
from .compaction import Compactor
from .isolation import SKIPPED, EngineGuard
from .live import LiveEntry, LiveView
from .maintenance import Maintenance
from .subagents import notify_child_ended, spawn_subagent
from .turns import (
    COMPACTION_REASONS,
    BudgetError,
    CompactionEvent,
    ProviderRequest,
    SessionClosedError,
    TurnReport,
    TurnStats,
)
from .validity import ValidityError, message_problem, repair
from .views import TranscriptView, copy_message

if TYPE_CHECKING:
    from .host import ContextHost

__all__ = [
    "COMPACTION_REASONS",
    "BudgetError",
    "CompactionEvent",
    "LiveEntry",
    "ProviderRequest",
    "Session",
    "SessionClosedError",
    "TranscriptView",
    "TurnReport",
]

log = logging.getLogger("ctxengine.runtime")

Message = dict[str, Any]

#: The host's floor for a conversation budget: one short message and the reply primer.
MIN_BUDGET_TOKENS = 32


class Session:
    """One agent's conversation. Use :meth:`ContextHost.open_session` to get one.

    A session is used by one thread at a time (calls are serialized by a lock);
    many sessions may run on threads sharing one host.

    ``live``, ``turn_stats``, ``stored_count``, ``head``, ``head_tokens``,
    ``tool_tokens``, :meth:`engine_call` and :meth:`check_model_result` are shared
    with the session's own modules (assembly, compaction, maintenance, sub-agents);
    callers use the public methods.
    """

    def __init__(
        self,
        host: ContextHost,
        session_id: str,
        guard: EngineGuard,
        *,
        system_prompt: str | None,
        tools: list[dict[str, Any]],
        stored: list[StoredMessage],
        stored_count: int,
        turn_index: int,
        parent: Session | None = None,
        shape: str | None = None,
        send_unknown_fields: bool = False,
    ) -> None:
        self.host = host
        self.session_id = session_id
        self.guard = guard
        self.parent = parent
        self.system_prompt = system_prompt
        self.caller_tools = tools
        self.stored_count = stored_count
        self.turn_stats = TurnStats()
        self.live = LiveView(
            host.counter,
            strict_alternation=host.strict_alternation,
            send_unknown_fields=send_unknown_fields,
        )
        self._shapes = ShapeReader(shape)  # type: ignore[arg-type]
        self._shapes.observe(row.message for row in stored)
        self._unknown_seen: set[str] = set()
        self._lock = threading.RLock()
        self._work = _Working(self)
        self._ended = False
        self._turn_index = turn_index
        self._bootstrapped: set[str] = set()
        self._maintenance = Maintenance(self)
        self._children: dict[str, Session] = {}
        self._last_request: ProviderRequest | None = None
        self._assembler = RequestAssembler(self)
        self._compactor = Compactor(self)
        for problem in self.live.load(stored):  # an older or foreign writer; kept, said so
            log.warning("session %s: stored live view: %s", self.session_id, problem)
        self._engine_tools = self._read_engine_tools()
        self.head = system_head(system_prompt, None)
        self.head_tokens = sum(host.counter.count_message(m) for m in self.head)
        self.tool_tokens = 0
        self.budget_tokens = self._compute_budget()

    # ----------------------------------------------------------------- opening

    def _start(self, reset_pending: bool = False) -> None:
        """``on_session_start``, an interrupted reset finished, then ``bootstrap``."""
        if self.guard.implements("on_session_start"):
            self.engine_call("on_session_start", session_id=self.session_id)
        if reset_pending:
            log.warning("session %s: finishing a reset a crash interrupted", self.session_id)
            self._finish_reset()
        self._ensure_bootstrapped()

    def _ensure_bootstrapped(self) -> None:
        """Bootstrap the engine in charge once per engine and session (recorded in the store)."""
        name = self.guard.handle.name
        if name in self._bootstrapped:
            return
        if self.guard.implements("bootstrap") and not self.host.store.is_bootstrapped(
            name, self.session_id
        ):
            result = self.engine_call(
                "bootstrap",
                session_id=self.session_id,
                messages=self.messages(),
                runtime_settings=self.runtime_settings(),
            )
            self.check_model_result("bootstrap", result)
            name = self.guard.handle.name  # the call may have fallen back
            self.host.store.mark_bootstrapped(name, self.session_id)
        self._bootstrapped.add(name)

    def _on_fallback(self, guard: EngineGuard) -> None:
        """Catch the default engine up after a quarantine (called by the guard)."""
        self.host.prepare_engine(guard)
        if guard.implements("on_session_start"):
            guard.call("on_session_start", {"session_id": self.session_id})
        self._engine_tools = self._read_engine_tools()
        try:
            self.budget_tokens = self._compute_budget()  # the engine's tools changed
        except BudgetError:
            log.warning("session %s: the default engine's tools leave no budget", self.session_id)

    def _read_engine_tools(self) -> list[dict[str, Any]]:
        if not self.guard.implements("get_tool_schemas"):
            return []
        schemas = self.engine_call("get_tool_schemas")
        if not isinstance(schemas, list) or not all(isinstance(s, dict) for s in schemas):
            self.guard.note_invalid("get_tool_schemas", f"expected a list of dicts: {schemas!r}")
            return []
        return [_as_openai_tool(s) for s in schemas]

    # ---------------------------------------------------------------- helpers

    def _working(self) -> _Working:
        """Serialize a public call and add its wall time to the turn's busy time."""
        return self._work

    def engine_call(self, method: str, **kwargs: Any) -> Any:
        """Call the engine through the guard, adding the time to the turn's engine time."""
        started = time.perf_counter()
        try:
            return self.guard.call(method, kwargs)
        finally:
            self.turn_stats.engine_ms += (time.perf_counter() - started) * 1000

    def engine_calls(
        self,
        calls: list[tuple[str, dict[str, Any]]],
        stop_after: Callable[[str, Any], bool] | None = None,
    ) -> list[Any]:
        """:meth:`engine_call` of back-to-back calls, in one worker hand-off
        (:meth:`EngineGuard.call_many`)."""
        started = time.perf_counter()
        try:
            return self.guard.call_many(calls, stop_after)
        finally:
            self.turn_stats.engine_ms += (time.perf_counter() - started) * 1000

    def _check_open(self) -> None:
        if self._ended:
            raise SessionClosedError(
                f"session {self.session_id!r} has ended; reopen it with "
                "host.open_session(session_id) to continue"
            )

    def check_model_result(self, method: str, result: Any) -> None:
        """bootstrap/ingest/maintain results: None, a dict or a model; others are logged."""
        if result is None or result is SKIPPED or isinstance(result, dict):
            return
        if hasattr(result, "model_dump"):
            return
        self.guard.note_invalid(method, f"unexpected {type(result).__name__}")

    def runtime_settings(self) -> RuntimeSettings:
        """What the engine is told about this run."""
        return self.host.runtime_settings(self.guard.mode, self.budget_tokens)

    @property
    def tools(self) -> list[dict[str, Any]]:
        """Tools of each request: the caller's plus the engine's."""
        return [*self.caller_tools, *self._engine_tools]

    def _compute_budget(self) -> int:
        counter = self.host.counter
        tool_tokens = sum(counter.count_tool_schema(t) for t in self.tools)
        budget = (
            self.host.context_length
            - self.host.reserve_output_tokens
            - self.head_tokens
            - tool_tokens
        )
        floor = self._budget_floor()
        if budget < floor:
            raise BudgetError(
                f"no room for the conversation: context length {self.host.context_length} - "
                f"reserve_output_tokens {self.host.reserve_output_tokens} - system prompt "
                f"{self.head_tokens} - tool schemas {tool_tokens} = {budget} tokens, and "
                f"engine '{self.guard.handle.name}' needs at least {floor}; raise the context "
                f"length by {floor - budget} or more, lower [context] reserve_output_tokens, "
                "or shorten the system prompt/tools"
            )
        self.tool_tokens = tool_tokens
        return budget

    def set_system_prompt(self, system_prompt: str | None) -> None:
        """Replace the system prompt (frameworks send theirs with every model call).

        The budget is recomputed; a prompt that leaves no budget raises
        :class:`BudgetError` and the previous prompt stays.
        """
        with self._working():
            self._check_open()
            if system_prompt == self.system_prompt:
                return
            previous = (self.system_prompt, self.head, self.head_tokens)
            self.system_prompt = system_prompt
            self.head = system_head(system_prompt, None)
            self.head_tokens = sum(self.host.counter.count_message(m) for m in self.head)
            try:
                self.budget_tokens = self._compute_budget()
            except BudgetError:
                self.system_prompt, self.head, self.head_tokens = previous
                raise
            self._assembler = RequestAssembler(self)  # its head cache knew the old prompt

    def _budget_floor(self) -> int:
        """The engine's declared minimum budget, never below the host's own."""
        declared = getattr(self.guard.engine, "min_budget_tokens", 0)
        if not isinstance(declared, int) or isinstance(declared, bool):
            declared = 0
        return max(MIN_BUDGET_TOKENS, declared)

    def messages(self) -> list[Message]:
        """Deep copies of the live view, uids included."""
        return self.live.messages()

    @property
    def shape(self) -> str | None:
        """The session's message shape (``chat``, ``responses``, ``anthropic``), None until
        declared or seen."""
        return self._shapes.shape

    def messages_in_shape(self) -> list[Message]:
        """The live view in the session's shape, as the caller gave it (unknown fields and
        timestamps included, uids not)."""
        return to_caller(self.live.messages(), self.shape)

    def _read_input(self, items: list[Any]) -> list[Any]:
        """Input in the session's shape -> internal messages (docs/session-format.md)."""
        try:
            converted = [m for _, m in self._shapes.read(items)]
        except ShapeError as exc:
            raise ValidityError(str(exc)) from None
        fresh: set[str] = set()
        for index, message in enumerate(converted):
            if not isinstance(message, dict):
                continue
            problem = timestamp_problem(message)
            if problem:
                raise ValidityError(f"message {index}: {problem}")
            fresh.update(unknown_fields(message))
        fresh -= self._unknown_seen
        if fresh:
            self._unknown_seen |= fresh
            action = "sent" if self.live.send_unknown_fields else "kept, not sent to the provider"
            log.warning(
                "session %s: unknown message field(s) %s: %s",
                self.session_id,
                ", ".join(sorted(fresh)),
                action,
            )
        return converted

    @property
    def turn_index(self) -> int:
        return self._turn_index

    @property
    def ended(self) -> bool:
        return self._ended

    # ------------------------------------------------------------ adding messages

    def add_messages(self, messages: Iterable[Message], *, repair_input: bool = False) -> None:
        """Commit incoming messages to the transcript, then give them to ``ingest``.

        Invalid input raises :class:`ValidityError` and nothing is stored; with
        ``repair_input=True`` it is fixed by :func:`ctxengine_host.runtime.validity.repair`
        instead (no user content is dropped).
        """
        with self._working():
            self._check_open()
            if isinstance(messages, dict | str):
                raise ValidityError(
                    "add_messages() takes a list of message dicts; wrap a single message "
                    "in a list, or use add_user_message(text)"
                )
            batch = self._read_input(list(messages))
            if repair_input:
                batch = repair(batch, state=self.live.state)
            self._append(batch, origin="input")

    def add_user_message(self, text: str) -> None:
        """Commit one user message."""
        if not isinstance(text, str):
            raise ValidityError(f"user message text must be a str, got {type(text).__name__}")
        self.add_messages([{"role": "user", "content": text}])

    def record_tool_results(self, messages: Iterable[Message]) -> None:
        """Commit tool results answering the last assistant message's calls.

        In the ``anthropic`` shape this is the user message of ``tool_result`` blocks
        (text blocks after them are kept as a user message); in ``responses`` the
        ``function_call_output`` items.
        """
        with self._working():
            batch = self._read_input(list(messages))
            for index, message in enumerate(batch):
                if (
                    isinstance(message, dict)
                    and message.get("role") != "tool"
                    and not _rides_with_tool_results(message)
                ):
                    raise ValidityError(
                        f"tool result {index} has role {message.get('role')!r}; tool results "
                        "have role 'tool' and a 'tool_call_id'"
                    )
            self._check_open()
            # Stored as add_messages() stores them, without reading them a second time.
            self._append(batch, origin="input")

    def _append(self, batch: list[Message], origin: str, *, ingest: bool = True) -> list[LiveEntry]:
        """Store what ``batch`` holds that is new, then (``ingest``) hand it to the engine."""
        live = self.live
        # A retried turn re-sends what is already stored: keep only what is new.
        batch = [m for m in batch if not isinstance(m, dict) or live.matching_entry(m) is None]
        if not batch:
            return []
        state = live.state.copy()
        base = len(live)
        for offset, message in enumerate(batch):
            state.push(message, base + offset)
        pairing = live.pairing.copy()
        stamped = stamp_identities(batch, pairing)
        digests = []
        for offset, message in enumerate(stamped):
            try:
                digest, kept = versioned(message)
            except (RecursionError, ValueError) as exc:  # too deep
                raise ValidityError(
                    f"message {base + offset} cannot be stored as JSON text "
                    f"({type(exc).__name__}: {exc}); flatten it or fix its text encoding"
                ) from None
            if kept is not message:
                stamped[offset] = kept
                log.warning(
                    "session %s: message %d held %d lone UTF-16 surrogate(s) (half of a "
                    "character, cut by a truncation); stored and sent as U+FFFD",
                    self.session_id, base + offset, well_formed(message)[1],
                )  # fmt: skip
            digests.append(digest)
        row_ids = self.host.store.append_live(
            self.session_id, [(m, d, origin) for m, d in zip(stamped, digests, strict=True)], base
        )
        live.state = state
        live.pairing = pairing
        self.stored_count += len(row_ids)
        entries = [
            live.entry(row_id, m, d) for row_id, m, d in zip(row_ids, stamped, digests, strict=True)
        ]
        live.extend(entries)
        if ingest:
            self._ingest(stamped)
        return entries

    def _ingest(
        self, stamped: list[Message], then: list[tuple[str, dict[str, Any]]] | None = None
    ) -> list[Any]:
        """Hand ``stamped`` to the engine, with the calls ``then`` in the same hand-off;
        their results."""
        calls = list(then or ())
        if stamped:
            self._ensure_bootstrapped()
            fault_point("host.ingest.before_engine")
            if self.guard.implements("ingest"):
                copies = [copy_message(m) for m in stamped]
                calls.insert(0, ("ingest", {"session_id": self.session_id, "messages": copies}))
        if not calls:
            return []
        results = self.engine_calls(calls)
        if len(calls) > len(then or ()):
            self.check_model_result("ingest", results.pop(0))
        return results

    # ---------------------------------------------------------- building requests

    def build_request(self) -> ProviderRequest:
        """The request for the next provider call (pipeline: preflight, select, precheck)."""
        with self._working():
            self._check_open()
            state = self.live.state
            if state.unanswered:
                raise ValidityError(
                    f"tool call(s) {', '.join(sorted(state.unanswered))} are unanswered; "
                    "record their results with record_tool_results() before the next request"
                )
            if not state.has_user:
                raise ValidityError(
                    "the conversation has no user message yet; add one before building a request"
                )
            events: list[CompactionEvent] = []
            if self.guard.implements("should_compress_preflight"):
                request = self._preflight_then_select(events)
            else:
                request = self._assembler.assemble()
            if request.over_budget:
                request = self._handle_overflow(request, events)
            request = self._assembler.check_coverage(request)
            self.turn_stats.omitted_messages += request.omitted
            self.turn_stats.requests_with_omissions += int(request.omitted > 0)
            self.turn_stats.sent_messages = request.sent_messages
            request.compactions = events
            request.compacted = any(e.compacted for e in events)
            self.turn_stats.request_tokens = request.estimated_tokens
            self._last_request = request
            return request

    def _preflight_then_select(self, events: list[CompactionEvent]) -> ProviderRequest:
        """``should_compress_preflight`` and ``select_context`` in one worker hand-off; the
        selection is made only when the preflight asks for no compaction (else the request
        is assembled again after it). The selection time includes the preflight's."""
        assembler = self._assembler
        calls = [("should_compress_preflight", {"messages": self.live.view()})]
        if self.guard.implements("select_context"):
            calls.append(assembler.select_call())
        started = time.perf_counter()
        results = self.engine_calls(calls, stop_after=_asks_compaction)
        if self._as_flag("should_compress_preflight", results[0]):
            self._record_event(events, self._compactor.run("preflight"))
            return assembler.assemble()
        if len(results) > 1:
            return assembler.finish(assembler.selected(results[1], started))
        return assembler.finish(assembler.default_request())

    def handle_context_overflow(self, error: BaseException | str | None = None) -> ProviderRequest:
        """The provider said the context is too long: compact with ``force=True`` and rebuild."""
        with self._working():
            self._check_open()
            log.info("session %s: provider overflow (%s); compacting", self.session_id, error)
            events: list[CompactionEvent] = []
            self._record_event(events, self._compactor.run("overflow", force=True))
            request = self.build_request()
            request.compactions = events + request.compactions
            request.compacted = request.compacted or any(e.compacted for e in events)
            return request

    def _handle_overflow(
        self, request: ProviderRequest, events: list[CompactionEvent]
    ) -> ProviderRequest:
        """Over budget: the engine compacts (force); still over: substitute, unless it owns that."""
        self._record_event(events, self._compactor.run("overflow", force=True))
        request = self._assembler.assemble()
        if not request.over_budget or self.host.engine_owns_compaction(self.guard):
            return request
        return self._assembler.substitute(request)

    # ------------------------------------------------------------- responses

    def record_response(self, assistant_message: Message, usage: dict[str, Any] | None) -> None:
        """Commit the provider's answer, then update_from_response → should_compress → compress.

        ``usage`` None: the host estimates it from the request it built
        (see :func:`ctxengine_host.contract.usage.estimated_usage`).
        """
        with self._working():
            self._check_open()
            assistant_message = self._read_response(assistant_message)
            problem = message_problem(assistant_message, len(self.live))
            if problem is None and assistant_message.get("role") != "assistant":
                problem = (
                    f"record_response() takes the assistant's message, got role "
                    f"{assistant_message.get('role')!r}; use add_messages() for other roles"
                )
            if problem:
                raise ValidityError(problem)
            if usage is None:
                prompt = self._last_request.estimated_tokens if self._last_request else 0
                completion = self.host.counter.count_message(
                    strip_persistence_fields(assistant_message)
                )
                usage = estimated_usage(prompt, completion)
            else:
                usage = normalize_usage(usage)
            entries = self._append([assistant_message], origin="response", ingest=False)
            self.turn_stats.usage = usage
            _, flag = self._ingest(
                [entry.message for entry in entries],
                then=[
                    ("update_from_response", {"usage": dict(usage)}),
                    ("should_compress", {"prompt_tokens": usage["prompt_tokens"]}),
                ],
            )
            if self._as_flag("should_compress", flag):
                self._record_event(self.turn_stats.compactions, self._compactor.run("threshold"))

    def _read_response(self, reply: Any) -> Any:
        """A provider answer in the session's shape (a Responses output list, an Anthropic
        message, a chat message without role) as one internal assistant message."""
        if isinstance(reply, dict) and "role" not in reply and "type" not in reply:
            reply = {"role": "assistant", **reply}
        items = reply if isinstance(reply, list) else [reply]
        converted = self._read_input(items)
        if len(converted) != 1:
            raise ValidityError(
                f"record_response() takes one assistant answer; this one makes "
                f"{len(converted)} messages (record tool results with record_tool_results())"
            )
        return converted[0]

    def _as_flag(self, method: str, value: Any) -> bool:
        if value is SKIPPED or value is None:
            return False
        if not isinstance(value, bool):
            self.guard.note_invalid(method, f"expected a bool, got {type(value).__name__}")
            return False
        return value

    # ------------------------------------------------------------- compaction

    def compact(self, focus_topic: str | None = None) -> CompactionEvent | None:
        """Compact now (``force=True``), optionally steering the summary towards ``focus_topic``."""
        with self._working():
            self._check_open()
            event = self._compactor.run("manual", force=True, focus_topic=focus_topic)
            self._record_event(self.turn_stats.compactions, event)
            return event

    def _record_event(self, events: list[CompactionEvent], event: CompactionEvent | None) -> None:
        if event is None:
            return
        events.append(event)
        if events is not self.turn_stats.compactions:
            self.turn_stats.compactions.append(event)

    # ------------------------------------------------------------- turn end

    def finish_turn(self, *, maintain: bool = True) -> TurnReport:
        """End the turn: on_turn_complete → maintain; returns what the turn did.

        ``maintain=False`` leaves ``maintain`` to a host that calls it itself after
        the turn (the gateway does), so it runs once per turn, not twice.
        """
        with self._working():
            self._check_open()
            stats = self.turn_stats
            if self.guard.implements("on_turn_complete"):
                self.engine_call(
                    "on_turn_complete",
                    messages=self.live.view(),
                    usage=dict(stats.usage) if stats.usage is not None else None,
                )
            if maintain and self.guard.implements("maintain"):
                self._maintenance.run()
            self._turn_index += 1
            self.host.store.update_session(self.session_id, turn_index=self._turn_index)
            report = TurnReport(
                turn=self._turn_index - 1,
                live_messages=len(self.live),
                stored_messages=self.stored_count,
                request_tokens=stats.request_tokens,
                budget_tokens=self.budget_tokens,
                compactions=list(stats.compactions),
                select_ms=stats.select_ms,
                compress_ms=stats.compress_ms,
                engine_ms=stats.engine_ms,
                quarantined=self.guard.quarantined_from is not None,
                mode=self.guard.mode,
                engine=self.guard.handle.name,
                usage=stats.usage,
                invalid_results=sum(self.guard.invalid_results.values()),
                omitted_messages=stats.omitted_messages,
                requests_with_omissions=stats.requests_with_omissions,
                sent_messages=stats.sent_messages,
                host_ms=max(
                    0.0,
                    stats.busy_ms
                    + (time.perf_counter() - self._work.busy_since) * 1000
                    - stats.engine_ms,
                ),
            )
            self.turn_stats = TurnStats()
            return report

    def wait_for_maintenance(self, timeout: float | None = None) -> None:
        """Wait for a background ``maintain`` of the previous turn to finish."""
        self._maintenance.wait(timeout)

    # ------------------------------------------------------------- engine tools

    def call_engine_tool(self, name: str, args: dict[str, Any] | str | None = None) -> str:
        """Run one of the engine's tools; always returns a JSON string."""
        with self._lock:
            self._check_open()
            if not isinstance(name, str):
                kind = type(name).__name__
                return json.dumps({"error": f"tool name must be a string, not {kind}"})
            if isinstance(args, str):
                try:
                    args = loads_json(args, what="tool arguments") if args.strip() else {}
                except ValueError as exc:  # invalid JSON, or past the nesting/size limits
                    return json.dumps({"error": f"tool arguments are not valid JSON: {exc}"})
            if args is None:
                args = {}
            if not isinstance(args, dict):
                return json.dumps({"error": "tool arguments must be a JSON object"})
            try:
                check_nesting(args, what="tool arguments")
            except InputLimitError as exc:
                return json.dumps({"error": f"{name}: {exc}"})
            if not self.guard.routes("handle_tool_call"):
                return json.dumps({"error": f"Unknown context engine tool: {name[:80]}"})
            result = self.engine_call("handle_tool_call", name=name, args=args)
            if isinstance(result, str):
                return _as_json_text(result, self.guard)
            if isinstance(result, dict | list):
                self.guard.note_invalid("handle_tool_call", "returned a dict, not a JSON string")
                return json.dumps(result, default=str)
            self.guard.note_invalid("handle_tool_call", f"returned {type(result).__name__}")
            return json.dumps({"error": f"engine tool {name} returned no result"})

    # ------------------------------------------------------------- lifecycle

    def reset(self) -> None:
        """Start over within the session: the live view empties (rows stay), counters zero.

        Crash-safe across the engine's store and the transcript store: the reset is
        recorded first, and a session reopened with the record still set finishes it
        (docs/reliability.md, "Reset").
        """
        with self._lock:
            self._check_open()
            self.wait_for_maintenance()
            self.host.store.begin_reset(self.session_id)
            fault_point("host.reset.after_begin")
            self._finish_reset()

    def _finish_reset(self) -> None:
        """The engine resets, then the live view empties and the record is cleared.

        Run again after a crash: an engine's ``on_session_reset`` must be idempotent
        when nothing was added since (LCM keeps an empty conversation as it is).
        """
        if self.guard.routes("on_session_reset"):
            self.engine_call("on_session_reset")
        fault_point("host.reset.after_engine")
        self.host.store.finish_reset(self.session_id)
        self.live.clear()
        self.turn_stats = TurnStats()

    def end(self, reason: str = "completed") -> None:
        """End the session: on_session_end, sub-agents ended, the engine clone disposed."""
        with self._lock:
            if self._ended:
                return
            for child in list(self._children.values()):
                child.end(reason="parent-ended")
            self.wait_for_maintenance()
            try:
                if self.guard.implements("on_session_end"):
                    self.engine_call(
                        "on_session_end", session_id=self.session_id, messages=self.messages()
                    )
            finally:
                self._ended = True
                self.host.store.update_session(self.session_id, ended=True)
                self.host.release_session(self)
        if self.parent is not None:  # outside our lock: locks go parent → child only
            self.parent._child_ended(self.session_id, reason)

    def _child_ended(self, child_id: str, reason: str) -> None:
        with self._lock:
            self._children.pop(child_id, None)
            notify_child_ended(self, child_id, reason)

    def spawn_subagent(
        self,
        mode: str = "isolated",
        ttl_s: float | None = None,
        *,
        system_prompt: str | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> Session:
        """Start a sub-agent session: ``isolated`` (empty history) or ``fork`` (a copy of this one).

        The engine's ``prepare_subagent_spawn`` may return a rollback callable; it
        is called if the spawn fails, and the error is raised.
        """
        with self._lock:
            self._check_open()
            child = spawn_subagent(self, mode, ttl_s, system_prompt=system_prompt, tools=tools)
            self._children[child.session_id] = child
            return child

    def status(self) -> dict[str, Any]:
        """Numbers for status displays: the session's and the engine's own."""
        with self._lock:
            engine_status: Any = {}
            if self.guard.routes("get_status"):
                engine_status = self.engine_call("get_status")
                if not isinstance(engine_status, dict):
                    self.guard.note_invalid("get_status", "not a dict")
                    engine_status = {}
            return {
                "session_id": self.session_id,
                "engine": self.guard.handle.name,
                "mode": self.guard.mode,
                "quarantined_engine": self.guard.quarantined_from,
                "turn": self._turn_index,
                "live_messages": len(self.live),
                "stored_messages": self.stored_count,
                "live_tokens": self.live.tokens,
                "budget_tokens": self.budget_tokens,
                "context_length": self.host.context_length,
                "invalid_results": dict(self.guard.invalid_results),
                "ended": self._ended,
                "engine_status": engine_status,
            }

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.end(reason="completed" if exc[0] is None else "error")


class _Working:
    """The context of a session's public call (:meth:`Session._working`): its lock, and
    the busy time of the outermost call. One object per session, entered by every call (a
    replay makes several per message): a ``contextmanager`` built a generator and its
    wrapper each time."""

    __slots__ = ("_depth", "_session", "busy_since")

    def __init__(self, session: Session) -> None:
        self._session = session
        self._depth = 0  # calls entered and not left (a public call may make another)
        self.busy_since = 0.0  # when the outermost call began

    def __enter__(self) -> None:
        self._session._lock.acquire()
        self._depth += 1
        if self._depth == 1:
            self.busy_since = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        try:
            self._depth -= 1
            if self._depth == 0:
                elapsed = time.perf_counter() - self.busy_since
                self._session.turn_stats.busy_ms += elapsed * 1000
        finally:
            self._session._lock.release()


def _asks_compaction(method: str, result: Any) -> bool:
    """A preflight that asks for a compaction: the selection after it is not made."""
    return method == "should_compress_preflight" and result is True


def _rides_with_tool_results(message: Message) -> bool:
    """A user message made from the text blocks of an Anthropic tool-result message."""
    source = message.get("ctxengine_source")
    return isinstance(source, dict) and int(source.get("parts", 1)) > 1


def _as_openai_tool(schema: dict[str, Any]) -> dict[str, Any]:
    """Engine tool schemas may be bare function specs; requests need the OpenAI wrapper."""
    if schema.get("type") == "function" and isinstance(schema.get("function"), dict):
        return schema
    return {"type": "function", "function": schema}


def _as_json_text(result: str, guard: Any) -> str:
    """An engine's tool result as JSON text: a result that is not JSON is wrapped (and
    noted), so the caller can always parse what it gets."""
    try:
        json.loads(result)
    except ValueError:
        guard.note_invalid("handle_tool_call", "returned text that is not JSON")
        return json.dumps({"result": result}, ensure_ascii=False)
    return result
