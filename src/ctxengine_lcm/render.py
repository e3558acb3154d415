"""Conversions between chat messages, stored rows and what the model sees.

A stored message keeps its searchable text in ``content`` (its tool calls' arguments
included, decoded) and everything else of the original dict in ``extra_json``, so the
dict comes back verbatim; where the two differ (tool calls, content parts, a NUL
character, which PostgreSQL text cannot hold), the original content is in ``extra_json``
too. Summaries and large
tool outputs are shown to the model as short messages that name the id to expand.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from ctxengine_host.contract.messages import content_text
from ctxengine_host.json_text import json_dumper
from ctxengine_host.tokens import message_digest, versioned

from .calls import calls_text
from .store import NewMessage, StoredMessage, StoredSummary

Message = dict[str, Any]

SUMMARY_PREFIX = "sum_"
MESSAGE_PREFIX = "msg_"

#: The encoder of a stored message's ``extra_json``, built once (``json.dumps`` with
#: ``default`` builds one per call).
_EXTRA_JSON = json_dumper()


#: What a NUL character becomes in a stored text column (the Unicode replacement character).
NUL_STAND_IN = "\ufffd"


def storable_text(text: str) -> str:
    """``text`` as every backend can store it: PostgreSQL's text type refuses NUL, which
    a tool output may print (a path with an embedded null byte)."""
    return text.replace("\x00", NUL_STAND_IN) if "\x00" in text else text


def storable_columns(content: str, extra_json: str) -> tuple[str, str]:
    """A stored row's ``content`` and ``extra_json`` as every backend can store them (an
    archive from a SQLite store written before NUL was kept out of the column): a content
    holding NUL goes into the extra, as :func:`to_new_message` does, the column keeps the
    searchable text."""
    if "\x00" not in content:
        return content, extra_json
    extra = json.loads(extra_json)
    extra.setdefault("content", content)
    return storable_text(content), _EXTRA_JSON(extra)


def summary_ref(summary_id: int) -> str:
    return f"{SUMMARY_PREFIX}{summary_id}"


def message_ref(message_id: int) -> str:
    return f"{MESSAGE_PREFIX}{message_id}"


def iso_time(epoch: float) -> str:
    """A compact UTC timestamp for the model and tool results."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def derived_uid(conversation_id: int, position: int, message: Message) -> str:
    """A stable uid for a message the host has not stored yet (same history, same uid)."""
    digest = hashlib.sha256(
        json.dumps(
            [conversation_id, position, message.get("role"), content_text(message)],
            ensure_ascii=False,
        ).encode("utf-8", "surrogatepass")  # a lone surrogate (see to_new_message) too
    )
    return digest.hexdigest()[:32]


def to_new_message(
    message: Message,
    uid: str,
    token_count: int,
    created_at: float,
    stub_tokens: int | None,
) -> NewMessage:
    """Split ``message`` into stored columns; ``stub_tokens`` set means kept outside context.
    A message whose text holds a lone surrogate is stored well-formed (no backend can
    encode it), under the digest the original has."""
    digest, message = versioned(message)
    content = message.get("content")
    calls = message.get("tool_calls") or []
    # Text content without tool calls (most messages) has no call text to decode.
    called = calls_text(message) if calls or not isinstance(content, str) else ""
    if isinstance(content, str) and not called and "\x00" not in content:
        extra = {k: v for k, v in message.items() if k != "content"}
        text = content
    else:  # the content is kept in extra; the column holds the searchable text
        extra = dict(message)
        text = storable_text("\n".join(t for t in (content_text(message), called) if t))
    role = message.get("role")
    # The call's names and ids are the model's words: a NUL in them is kept out of the
    # columns as from the content (the message itself comes back from the extra).
    tool_name = ",".join(_call_names(calls)) if calls else ""
    if not tool_name and isinstance(message.get("name"), str):
        tool_name = message["name"]
    tool_call_id = message.get("tool_call_id")
    # Positional, in NewMessage's field order: keywords cost more than the rest of the tuple.
    return NewMessage(
        uid,
        role if isinstance(role, str) else str(role),
        text,
        _EXTRA_JSON(extra),
        storable_text(tool_call_id) if isinstance(tool_call_id, str) else None,
        storable_text(tool_name) or None,
        token_count,
        stub_tokens if stub_tokens is not None else token_count,  # context_tokens
        stub_tokens is not None,  # externalized
        created_at,
        digest,
    )


def _call_names(calls: list[Any]) -> list[str]:
    """The non-empty function names of OpenAI-style tool calls."""
    names = (
        str(c.get("function", {}).get("name", ""))
        for c in calls
        if isinstance(c, dict) and isinstance(c.get("function"), dict)
    )
    return [n for n in names if n]


def stored_digest(message_uid: str, content: str, extra_json: str) -> str:
    """The version digest of a stored row, as :func:`to_new_message` computed it from the
    message (used to fill in the digest of rows stored before it was kept)."""
    message = json.loads(extra_json)
    if "content" not in message:
        message["content"] = content
    message.setdefault("message_uid", message_uid)
    return message_digest(message)


def verbatim_message(stored: StoredMessage) -> Message:
    """The original message dict, exactly as it was ingested (uid included)."""
    message = json.loads(stored.extra_json)
    if "content" not in message:
        message["content"] = stored.content
    message.setdefault("message_uid", stored.message_uid)
    return message


def large_output_stub(message: Message, uid: str, token_count: int, preview_chars: int) -> Message:
    """What the active context holds instead of a large tool output."""
    text = content_text(message)
    preview = text[:preview_chars]
    stub = {k: v for k, v in message.items() if k != "content"}
    stub["content"] = (
        f"[Large tool output kept outside the context: {token_count} tokens, {len(text)} "
        f'characters. Read it with lcm_expand(id="{uid}") (paged) or search it with '
        f"lcm_grep.]\n{preview}" + ("\n[…]" if len(text) > preview_chars else "")
    )
    return stub


def context_message(stored: StoredMessage, preview_chars: int) -> Message:
    """The message as the active context shows it (a stub for a large output)."""
    message = verbatim_message(stored)
    if stored.externalized:
        return large_output_stub(message, stored.message_uid, stored.token_count, preview_chars)
    return message


def summary_header(summary: StoredSummary) -> str:
    return (
        f"[Summary {summary_ref(summary.id)} | {summary.kind}, depth {summary.depth} | "
        f"messages #{summary.first_seq}-#{summary.last_seq} "
        f"({summary.descendant_messages} messages) | "
        f"{iso_time(summary.earliest_at)} to {iso_time(summary.latest_at)}]"
    )


def summary_text(summary: StoredSummary, content: str | None = None) -> str:
    """The text of a summary as the model sees it: header, content, how to expand."""
    body = summary.content if content is None else content
    return (
        f'{summary_header(summary)}\n{body}\n[Details: lcm_expand(id="{summary_ref(summary.id)}")]'
    )


def summary_message(summary: StoredSummary, role: str) -> Message:
    return {"role": role, "content": summary_text(summary)}


def source_block(summary: StoredSummary) -> str:
    """One source summary as input to a condensed summary."""
    return f"{summary_header(summary)}\n{summary.content}"
