"""What Claude Code sends the model without a message line of its own.

- **Attachments** (``attachment`` lines, 2.1.x): context Claude Code adds to the next
  request as a system reminder: a hook's additional context, the skill listing, the task
  reminder. They sit in the chain of ``parentUuid`` links as messages do and become user
  text there. The other attachment types record the run (a hook's exit, changes of the
  deferred tool list, a message shown to the user only) and are reported by type.
- **Queued prompts** (``queue-operation`` lines): what the user typed while the agent
  worked. ``enqueue`` holds the text; ``remove`` takes the oldest out and Claude Code sends
  it with the next request, where the model answers it, with no message line for it;
  ``dequeue`` takes one out that is then written as a prompt line of its own; ``popAll``
  gives the queue back to the user's input box (nothing sent). A slash command never
  reaches the model, and a text written as a prompt line is already there: neither is
  queued for sending.
"""

from __future__ import annotations

from typing import Any

from .base import Imported, as_blocks, text_of

#: Attachment types whose content goes to the model.
MODEL_ATTACHMENTS = frozenset({"hook_additional_context", "skill_listing", "task_reminder"})
#: What the report calls the queued prompts kept, and those never sent.
QUEUED_SENT = "queued prompts Claude Code sent with a request (no line of their own; user text)"
QUEUED_TAKEN_BACK = "queued prompts the user took back (never sent)"
QUEUED_LEFT = "queued prompts still queued at the end (never sent)"


def attachment_as_user_line(line: dict[str, Any]) -> dict[str, Any] | None:
    """A model-facing attachment line as a user line in its place in the chain (same
    uuid, parent and time), or None (not an attachment the model sees, or empty)."""
    attachment = line.get("attachment")
    if line.get("type") != "attachment" or not isinstance(attachment, dict):
        return None
    if attachment.get("type") not in MODEL_ATTACHMENTS:
        return None
    text = text_of(attachment.get("content")).strip()
    if not text:
        return None
    kept: dict[str, Any] = {
        k: line[k] for k in ("uuid", "parentUuid", "timestamp", "isSidechain") if k in line
    }
    block = {"type": "text", "text": f"<system-reminder>\n{text}\n</system-reminder>"}
    return {**kept, "type": "user", "message": {"role": "user", "content": [block]}}


def attachment_drop_reason(line: dict[str, Any]) -> str:
    """The report's reason for an attachment line that is not kept, by its type."""
    attachment = line.get("attachment")
    kind = attachment.get("type") if isinstance(attachment, dict) else None
    return f"'attachment' lines of type '{kind}' (run records, not sent to the model)"


def sent_prompts(lines: list[dict[str, Any]], imported: Imported) -> list[tuple[int, str]]:
    """(position in ``lines`` of the ``remove``, text) of each queued prompt Claude Code
    sent with a request; the prompts taken back or left in the queue are reported."""
    written = {text_of(v["message"].get("content")).strip() for v in lines if _prompt(v)}
    queue: list[str] = []
    sent: list[tuple[int, str]] = []
    for position, line in enumerate(lines):
        if line.get("type") != "queue-operation":
            continue
        operation = line.get("operation")
        if operation == "enqueue":
            text = text_of(line.get("content")).strip()
            if text and not text.startswith("/") and text not in written:
                queue.append(text)
        elif operation == "remove" and queue:
            sent.append((position, queue.pop(0)))
        elif operation == "dequeue" and queue:
            queue.pop(0)
        elif operation == "popAll" and queue:
            imported.drop(QUEUED_TAKEN_BACK, len(queue))
            queue.clear()
    if queue:
        imported.drop(QUEUED_LEFT, len(queue))
    if sent:
        imported.repaired[QUEUED_SENT] += len(sent)
    return sent


def place_sent_prompts(
    imported: Imported, sent: list[tuple[int, str]], answers: list[tuple[int, int]]
) -> None:
    """Each sent prompt as text at the end of the user message of the request it went
    with: the one before the first answer written after its ``remove``. ``answers``:
    (position of an assistant line, index of its message), in order."""
    messages = imported.messages
    by_target: dict[int, list[dict[str, Any]]] = {}
    for position, text in sent:
        at = next((index for pos, index in answers if pos > position), len(messages))
        by_target.setdefault(at, []).append({"type": "text", "text": text})
    for at, blocks in sorted(by_target.items(), reverse=True):  # inserts keep indexes valid
        before = messages[at - 1] if at > 0 else None
        if before is not None and before["role"] == "user":
            before["content"] = [*as_blocks(before["content"]), *blocks]
        else:
            messages.insert(at, {"role": "user", "content": blocks})


def _prompt(line: dict[str, Any]) -> bool:
    return line.get("type") == "user" and isinstance(line.get("message"), dict)
