"""The rules a request's message sequence must follow, and the repair path for bad input.

Rules (docs/runtime.md, "Validity"):

1. Every message is a dict with a known role (``system``, ``developer``, ``user``,
   ``assistant``, ``tool``); a tool result has a ``tool_call_id``; ``tool_calls``
   is a list of dicts each with an ``id``.
2. System-level messages (``system`` and ``developer``, one rule for both) only at
   the start.
3. Every tool result answers a call of the assistant message right before its
   run of tool results.
4. Every call is answered before the next user or assistant message.
5. At least one user message.
6. Optional: strict user/assistant alternation (no two user or two assistant
   messages in a row, tool results aside).

Engine results that break a rule are ignored for that call; caller input that
breaks one is rejected with :class:`ValidityError`, or fixed by :func:`repair`,
which never drops user content.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import is_
from typing import Any

from ..contract.messages import MAX_UID_CHARS, uid_problem

Message = dict[str, Any]

KNOWN_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
#: System-level roles: ``developer`` is OpenAI's name for system-level instructions, placed
#: and repaired by the same rule as ``system`` (docs/runtime.md, "Validity").
HEAD_ROLES = frozenset({"system", "developer"})

_NO_CALLS: frozenset[str] = frozenset()

#: Text of the tool result the repair path adds for a call that was never answered.
MISSING_RESULT_TEXT = "[no tool result was recorded for this call]"


class ValidityError(ValueError):
    """A message sequence breaks a validity rule; the message says which and how to fix it."""


def message_problem(message: Any, index: int) -> str | None:
    """What is wrong with one message on its own (rule 1), or None."""
    if not isinstance(message, dict):
        return (
            f"message {index} is a {type(message).__name__}, not a dict; pass OpenAI chat "
            f'format dicts like {{"role": "user", "content": "..."}}'
        )
    role = message.get("role")
    if role not in KNOWN_ROLES:
        return (
            f"message {index} has unknown role {role!r}; use one of "
            f"{', '.join(sorted(KNOWN_ROLES))}"
        )
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        return f"message {index} is a tool result without a string 'tool_call_id'"
    for key in ("message_uid", "_tool_call_uid"):  # the stores key rows by them
        uid = message.get(key)
        if isinstance(uid, str) and uid and (problem := uid_problem(uid)) is not None:
            return (
                f"message {index}: its {key!r} {uid[:40]!r} {problem}; give ids of at most "
                f"{MAX_UID_CHARS} characters without NUL, or none (the host gives each one)"
            )
    calls = message.get("tool_calls")
    if calls is not None:
        if role != "assistant":
            return f"message {index} has 'tool_calls' but role {role!r}; only assistants call tools"
        if not isinstance(calls, list) or not all(
            isinstance(c, dict) and isinstance(c.get("id"), str) for c in calls
        ):
            return f"message {index}: 'tool_calls' must be a list of dicts each with a string 'id'"
    return None


@dataclass
class SequenceState:
    """Incremental checker: feed messages one by one (O(1) each); the state of a prefix."""

    strict_alternation: bool = False
    seen_non_head: bool = False
    has_user: bool = False
    last_speaker: str | None = None
    call_ids: frozenset[str] = frozenset()
    unanswered: set[str] = field(default_factory=set)
    in_tool_run: bool = False

    def problem(self, message: Any, index: int) -> str | None:
        """What rule ``message`` would break if appended, or None (the state is unchanged)."""
        own = message_problem(message, index)
        if own:
            return own
        role = message["role"]
        if role in HEAD_ROLES:
            if self.seen_non_head:
                return (
                    f"message {index}: a {role} message after the conversation started; "
                    "system messages are allowed only at the start (put it in the system "
                    "prompt, or send it as a user message)"
                )
            return None
        if role == "tool":
            call_id = message["tool_call_id"]
            if not self.in_tool_run or call_id not in self.call_ids:
                return (
                    f"message {index}: tool result for call {call_id!r} does not answer a "
                    "call of the preceding assistant message; record the assistant message "
                    "with that tool call first, or send the output as a user message"
                )
            return None
        if self.unanswered:
            return (
                f"message {index}: a {role} message while tool call(s) "
                f"{', '.join(sorted(self.unanswered))} are unanswered; record their tool "
                "results first"
            )
        if self.strict_alternation and self.last_speaker == role:
            return f"message {index}: two {role} messages in a row (strict alternation)"
        return None

    def feed(self, message: Message) -> None:
        """Advance past a message known to be acceptable."""
        role = message["role"]
        if role in HEAD_ROLES:
            return
        self.seen_non_head = True
        if role == "tool":
            self.unanswered.discard(message["tool_call_id"])
            return
        self.last_speaker = role
        if role == "user":
            self.has_user = True
        calls = message.get("tool_calls")
        if not calls:  # most messages: no id list, no frozenset to build
            self.call_ids = _NO_CALLS
            self.unanswered = set()
            self.in_tool_run = False
            return
        ids = [c["id"] for c in calls]
        self.call_ids = frozenset(ids)
        self.unanswered = set(ids)
        self.in_tool_run = True

    def push(self, message: Any, index: int) -> None:
        """Check and feed; raise :class:`ValidityError` on a broken rule."""
        problem = self.problem(message, index)
        if problem:
            raise ValidityError(problem)
        self.feed(message)

    def copy(self) -> SequenceState:
        return SequenceState(
            self.strict_alternation,
            self.seen_non_head,
            self.has_user,
            self.last_speaker,
            self.call_ids,
            set(self.unanswered),
            self.in_tool_run,
        )


def sequence_problems(
    messages: Sequence[Any],
    *,
    require_user: bool = True,
    allow_pending_tail: bool = False,
    strict_alternation: bool = False,
) -> list[str]:
    """Every rule the sequence breaks (empty when valid).

    ``allow_pending_tail`` accepts calls left unanswered at the very end (a
    history compacted between a tool call and its result).
    """
    if not isinstance(messages, list | tuple):
        return [f"expected a list of messages, got {type(messages).__name__}"]
    state = SequenceState(strict_alternation=strict_alternation)
    problems = _scan(state, messages, 0)
    return problems + _end_problems(state, require_user, allow_pending_tail)


def _scan(state: SequenceState, messages: Sequence[Any], start: int) -> list[str]:
    """The problems of ``messages[start:]``, fed to ``state`` (which ends past them)."""
    problems: list[str] = []
    for index in range(start, len(messages)):
        message = messages[index]
        problem = state.problem(message, index)
        if problem:
            problems.append(problem)
            if message_problem(message, index):
                continue
        state.feed(message)
    return problems


def _end_problems(state: SequenceState, require_user: bool, allow_pending_tail: bool) -> list[str]:
    """The rules a whole sequence breaks at its end: calls left open, no user message."""
    problems = []
    if state.unanswered and not allow_pending_tail:
        problems.append(
            f"tool call(s) {', '.join(sorted(state.unanswered))} at the end are unanswered"
        )
    if require_user and not state.has_user:
        problems.append("no user message; a request needs at least one")
    return problems


class RequestChecker:
    """:func:`sequence_problems` of a session's successive requests, checking only what grew.

    A request that starts with the last valid one's messages (the same dicts) is checked
    from the state that one ended in. Sound because those dicts are the host's own copies
    (the system head, live entries' provider copies, :meth:`LiveView.resolve`'s copies),
    never changed once built.
    """

    def __init__(self, *, strict_alternation: bool) -> None:
        self.strict_alternation = strict_alternation
        self._valid: list[Message] = []
        self._state = SequenceState(strict_alternation=strict_alternation)

    def problems(self, messages: list[Message]) -> list[str]:
        """What :func:`sequence_problems` returns for ``messages`` (default options)."""
        start = self._checked_prefix(messages)
        if start:
            state = self._state.copy()
        else:
            state = SequenceState(strict_alternation=self.strict_alternation)
        problems = _scan(state, messages, start)
        problems += _end_problems(state, require_user=True, allow_pending_tail=False)
        if not problems:
            self._valid, self._state = list(messages), state
        return problems

    def _checked_prefix(self, messages: list[Message]) -> int:
        """How many leading messages are the last valid request's, in order (all or none)."""
        valid = self._valid
        if valid and len(valid) <= len(messages) and all(map(is_, valid, messages)):
            return len(valid)
        return 0


def repair(
    messages: Sequence[Any],
    *,
    strict_alternation: bool = False,
    state: SequenceState | None = None,
) -> list[Message]:
    """A valid sequence keeping all user content; raise for what cannot be repaired.

    ``state`` is the state of the history the messages will follow (default:
    an empty conversation).

    Repairs, in order (documented in docs/runtime.md):

    * a system/developer message after the start becomes a user message prefixed
      ``[system]``;
    * a tool result that answers no preceding call becomes a user message
      ``[tool result for call <id>] <content>``;
    * a call still unanswered when the next user/assistant message arrives gets a
      tool result saying no result was recorded (calls open at the end stay open:
      their results may come in a later batch);
    * with ``strict_alternation``, consecutive user (or assistant, without tool
      calls) messages are merged; the merge keeps the first ``message_uid`` and
      records the others in ``_absorbed_message_uids``.

    Non-dicts and unknown roles are not guessed at: :class:`ValidityError`.
    """
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in KNOWN_ROLES:
            raise ValidityError(message_problem(message, index) or "unrepairable message")
    out: list[Message] = []
    state = state.copy() if state is not None else SequenceState()
    for index, original in enumerate(messages):
        message = dict(original)
        role = message["role"]
        if role == "tool" and not isinstance(message.get("tool_call_id"), str):
            message["tool_call_id"] = ""
        if role in HEAD_ROLES and state.seen_non_head:
            message = _as_user(message, "[system] ")
        elif role == "tool" and (
            not state.in_tool_run or message["tool_call_id"] not in state.call_ids
        ):
            message = _as_user(message, f"[tool result for call {message['tool_call_id']}] ")
        if message["role"] in ("user", "assistant") and state.unanswered:
            for call_id in sorted(state.unanswered):
                filler = {"role": "tool", "tool_call_id": call_id, "content": MISSING_RESULT_TEXT}
                out.append(filler)
                state.feed(filler)
        problem = state.problem(message, index)
        if problem:
            raise ValidityError(problem)
        state.feed(message)
        out.append(message)
    return merge_alternation(out) if strict_alternation else out


def _as_user(message: Message, prefix: str) -> Message:
    text = message.get("content")
    converted = {k: v for k, v in message.items() if k not in ("tool_call_id", "name")}
    converted["role"] = "user"
    converted["content"] = prefix + (text if isinstance(text, str) else str(text or ""))
    converted.pop("_tool_call_uid", None)
    return converted


def merge_alternation(messages: list[Message]) -> list[Message]:
    """Merge runs of user messages (and of plain assistant messages), recording absorbed uids."""
    out: list[Message] = []
    for message in messages:
        prev = out[-1] if out else None
        mergeable = (
            prev is not None
            and prev["role"] == message["role"]
            and message["role"] in ("user", "assistant")
            and not prev.get("tool_calls")
            and not message.get("tool_calls")
            and isinstance(prev.get("content"), str)
            and isinstance(message.get("content"), str)
        )
        if not mergeable or prev is None:
            out.append(message)
            continue
        merged = dict(prev)
        merged["content"] = f"{prev['content']}\n\n{message['content']}"
        absorbed = list(prev.get("_absorbed_message_uids") or [])
        if message.get("message_uid"):
            absorbed.append(message["message_uid"])
        absorbed.extend(message.get("_absorbed_message_uids") or [])
        if absorbed:
            merged["_absorbed_message_uids"] = absorbed
        out[-1] = merged
    return out
