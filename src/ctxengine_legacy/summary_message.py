"""The rolling summary message: how it is written and recognized on later passes.

It is a user-role message (the boundaries put it after a non-user message and
before an assistant message, so turns keep alternating) whose content starts
with :data:`MARKER` and ends with :data:`END_MARKER`. The engine stamps a
``message_uid`` on it and keeps that uid on every later pass, so the host
stores the updated summary as the same logical message.
"""

from __future__ import annotations

import uuid
from typing import Any

from ctxengine_host.contract.messages import content_text

Message = dict[str, Any]

MARKER = "[Context summary]"
END_MARKER = "[End of context summary]"
LATEST_REQUEST_HEADING = "## Latest user request (verbatim)"
_FOCUS_PREFIX = "(Condensed with focus on: "
_INTRO = (
    "Earlier parts of this conversation were condensed into the notes below. "
    "Treat them as background; the messages after this one are verbatim."
)


def is_summary_message(message: Message, known_uids: frozenset[str] = frozenset()) -> bool:
    """True for a summary this engine wrote (by uid, or by the marker on a user message)."""
    if message.get("message_uid") and message["message_uid"] in known_uids:
        return True
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, str)
        and content.startswith(MARKER)
        and END_MARKER in content
    )


def summary_body(message: Message) -> str:
    """The notes of a summary message, without the frame and the restated request."""
    text = content_text(message)
    body = text[len(MARKER) :] if text.startswith(MARKER) else text
    body = body.split(END_MARKER, 1)[0]
    body = body.split(LATEST_REQUEST_HEADING, 1)[0]
    if body.lstrip().startswith(_INTRO):
        body = body.lstrip()[len(_INTRO) :]
    lines = [line for line in body.splitlines() if not line.startswith(_FOCUS_PREFIX)]
    return "\n".join(lines).strip()


def build_summary_message(
    body: str, *, uid: str | None, focus_topic: str | None, latest_request: str | None
) -> Message:
    """The summary carrier message with an engine-set ``message_uid``."""
    parts = [f"{MARKER} {_INTRO}"]
    if focus_topic:
        parts.append(f"{_FOCUS_PREFIX}{focus_topic})")
    parts.append(body.strip() or "(nothing worth keeping)")
    if latest_request:
        parts.append(f"{LATEST_REQUEST_HEADING}\n{latest_request}")
    parts.append(END_MARKER)
    return {
        "role": "user",
        "content": "\n\n".join(parts),
        "message_uid": uid or uuid.uuid4().hex,
    }
