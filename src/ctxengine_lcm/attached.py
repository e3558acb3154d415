"""What an ``lcm_grep`` message hit carries besides its own text: the steps of the agent's
loop next to it.

An agent works in steps, a thought with a call, then the call's results, and the words a
question shares with a step are often in one part of it while the fact is in another:

- a call hit (found by its command or the thought before it) carries the results that
  follow it (``tool_results``): the output holds the value, often without a word of the
  question (``2.2.0.dev0`` under ``python -c "import pydicom; print(...)"``);
- calls that follow it without a thought of their own carry that thought on ("let me
  add OL to the exclusion list", then a bare ``sed`` call holding the new list): they
  are listed as well (``then``: each call's text and its results), up to the next thought;
- an assistant message written after tool results reasons about them, in its own words
  (``a very small positive number (6.12e-17)``) while the output holds the value as
  printed (``6.123233995736766e-17``): it carries those results (``after_results``);
- a tool result is acted on in the next step, which names what was read in its own
  terms: a result hit (a helper's docstring, found by "cosine" and "degrees") carries the
  assistant step that follows it and that step's results (``next_step``: the helper run
  as ``cosd(90)`` and the value it printed, without a word of the docstring); the three
  best result hits do, each looked at up to four messages on.

Each attached text is the beginning of the message, ids to expand the rest, and each is
shown once per search: a message that is a hit itself, or attached to an earlier hit, is
named by its id alone. All of it is read in one look-up of the messages around the hits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxengine_host.contract.messages import content_text, tool_call_ids

from .render import message_ref, storable_text, verbatim_message
from .store import LcmStore, SearchHit, StoredMessage

#: Messages looked at on either side of a hit, and the characters shown of each.
STEPS_AROUND = 8
SHOWN_CHARS = 300
#: The best result hits that carry their next step, and the messages looked at after
#: each (the step's other results, the next call, its results): each costs rows read
#: and room in the result, and a history of tool results has one in most slots.
NEXT_STEP_HITS = 3
NEXT_STEP_AFTER = 4
#: The keys an item gets from this module (an item too large for its room drops them).
KEYS = ("after_results", "tool_results", "then", "next_step")

Loaded = dict[int, StoredMessage]


def attachments(store: LcmStore, hits: Sequence[SearchHit]) -> dict[int, dict[str, Any]]:
    """The keys to add to each assistant message hit's result item, and to the best tool
    result hits', by the hit's id. The look-up is made only when a hit is (or may be) a
    tool call or is a tool result: hits of a conversation without tool use (answers
    after the user's words) cost nothing."""
    results = [h for h in hits if h.kind == "message" and h.role == "tool"][:NEXT_STEP_HITS]
    mine = [h for h in hits if h.kind == "message" and h.role == "assistant"]
    if all(h.tool_call is False for h in mine) and not results:
        return {}
    wanted = {h.id + n for h in mine for n in range(-STEPS_AROUND, STEPS_AROUND + 1)}
    wanted |= {h.id + n for h in results for n in range(NEXT_STEP_AFTER + 1)}
    loaded = store.messages_by_id(sorted(i for i in wanted if i > 0))
    out: dict[int, dict[str, Any]] = {}
    for hit in results:
        message = loaded.get(hit.id)
        step = _next_step(loaded, message) if message is not None else []
        if step:
            out[hit.id] = {"next_step": step}
    for hit in mine:
        message = loaded.get(hit.id)
        if message is None:
            continue
        keys: dict[str, Any] = {}
        before = _results_before(loaded, message)
        if before:
            keys["after_results"] = [_shown(m) for m in before]
        answers, then = _steps_after(loaded, message)
        if answers:
            keys["tool_results"] = [_shown(m) for m in answers]
        if then:
            keys["then"] = then
        if keys:
            out[hit.id] = keys
    return out


def shown_once(items: list[dict[str, Any]]) -> None:
    """Name by id alone, in place, each attached message that is itself a result or was
    attached to an earlier one (the same output follows one hit and precedes the next)."""
    seen = {item["id"] for item in items}
    for item in items:
        for key in KEYS:
            for entry in item.get(key, ()):
                for attached in (entry, *entry.get("tool_results", ())):
                    if attached["id"] in seen:
                        attached.pop("snippet", None)
                    seen.add(attached["id"])


def _results_before(loaded: Loaded, message: StoredMessage) -> list[StoredMessage]:
    """The tool results right before ``message``, in order."""
    found: list[StoredMessage] = []
    for n in range(1, STEPS_AROUND + 1):
        previous = _neighbour(loaded, message, -n)
        if previous is None or previous.role != "tool":
            break
        found.append(previous)
    return found[::-1]


def _steps_after(
    loaded: Loaded, message: StoredMessage
) -> tuple[list[StoredMessage], list[dict[str, Any]]]:
    """The results of ``message``'s calls, and the calls without a thought of their own
    that follow (each with its results)."""
    results: list[StoredMessage] = []
    then: list[dict[str, Any]] = []
    call, offset = message, 1
    while call.tool_name:
        # As the results' column holds them (a NUL stored as U+FFFD).
        ids = {storable_text(i) for i in tool_call_ids(verbatim_message(call))}
        mine: list[StoredMessage] = []
        while offset <= STEPS_AROUND:
            output = _neighbour(loaded, message, offset)
            if output is None or output.tool_call_id not in ids:
                break
            mine.append(output)
            offset += 1
        if call is message:
            results = mine
        else:
            then.append({**_shown(call), "tool_results": [_shown(m) for m in mine]})
        following = _neighbour(loaded, message, offset)
        if following is None or following.role != "assistant" or _thought(following):
            break
        call, offset = following, offset + 1
    return results, then


def _next_step(loaded: Loaded, result: StoredMessage) -> list[dict[str, Any]]:
    """The assistant message after the results of ``result``'s step (its call's other
    results skipped), with its own results: one entry, or none."""
    for n in range(1, NEXT_STEP_AFTER + 1):
        following = _neighbour(loaded, result, n)
        if following is None or following.role not in ("tool", "assistant"):
            return []
        if following.role == "assistant":
            results, _ = _steps_after(loaded, following)
            return [{**_shown(following), "tool_results": [_shown(m) for m in results]}]
    return []


def _neighbour(loaded: Loaded, message: StoredMessage, n: int) -> StoredMessage | None:
    """The message ``n`` steps from ``message`` in its conversation, if loaded."""
    other = loaded.get(message.id + n)
    if other is None or other.conversation_id != message.conversation_id:
        return None
    return other if other.seq == message.seq + n else None


def _thought(message: StoredMessage) -> bool:
    """Whether an assistant message says something besides its calls."""
    return bool(content_text(verbatim_message(message)).strip())


def _shown(message: StoredMessage) -> dict[str, Any]:
    text = message.content
    cut = text[:SHOWN_CHARS] + ("…" if len(text) > SHOWN_CHARS else "")
    return {"id": message_ref(message.id), "snippet": cut}
