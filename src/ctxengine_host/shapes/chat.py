"""OpenAI Chat Completions messages: the internal shape, and the boundary's clean-up of it.

Every valid Chat Completions message is accepted: optional fields written as
``null`` (``tool_calls``, ``function_call``, ``refusal``, ``audio``: what the SDK's
``model_dump()`` writes) or ``tool_calls: []`` are dropped; the legacy
``function_call`` / ``function`` role pair becomes a tool call with id
:data:`LEGACY_CALL_ID` and its result, the caller's original kept in
``ctxengine_source``. What a provider receives is :func:`provider_copy`: the
request fields only.
"""

from __future__ import annotations

from typing import Any

from ..contract.models import PERSISTENCE_ONLY_FIELDS

Message = dict[str, Any]

SOURCE_FIELD = "ctxengine_source"
#: The call id a legacy ``function_call`` gets (one call per message, so ids never clash).
LEGACY_CALL_ID = "function_call"

#: Fields a Chat Completions request message may carry, per the API reference.
REQUEST_FIELDS = frozenset(
    {"role", "content", "name", "tool_calls", "tool_call_id", "refusal", "audio"}
)
#: Fields the host keeps and returns but never sends: our metadata, response-only fields.
METADATA_FIELDS = frozenset({"timestamp", SOURCE_FIELD, "usage", "annotations"})
#: Fields a bridge keeps on the messages it passes through (``send_unknown``) to give its
#: caller back its own record of each (gateway_bridge/): the provider never receives them
#: as they are, so the token counter does not price them.
BRIDGE_FIELDS = frozenset({"gateway_message", "gateway_ref", "gateway_turn"})
#: Every field that is not "unknown" (no warning, not listed by ``validate --strict``).
KNOWN_FIELDS = REQUEST_FIELDS | METADATA_FIELDS | {"function_call"} | PERSISTENCE_ONLY_FIELDS
_NULLABLE = ("tool_calls", "function_call", "refusal", "audio", "name", "annotations")


def unknown_fields(message: Message) -> list[str]:
    """The fields of an internal message that no API here defines (kept, not sent)."""
    return [key for key in message if key not in KNOWN_FIELDS]


def normalize_chat(message: Any) -> Any:
    """A Chat Completions message in the internal form (anything else is returned as is)."""
    if not isinstance(message, dict) or SOURCE_FIELD in message:
        return message
    out = {k: v for k, v in message.items() if not (k in _NULLABLE and v is None)}
    role = out.get("role")
    if role == "assistant" and out.get("tool_calls") == []:
        del out["tool_calls"]
    if role == "assistant" and isinstance(out.get("function_call"), dict):
        call = out.pop("function_call")
        if "tool_calls" not in out:
            out["tool_calls"] = [
                {
                    "id": LEGACY_CALL_ID,
                    "type": "function",
                    "function": {
                        "name": call.get("name", ""),
                        "arguments": call.get("arguments", ""),
                    },
                }
            ]
        out[SOURCE_FIELD] = {"shape": "chat", "item": message}
    elif role == "function":
        out = {k: v for k, v in out.items() if k != "name"}
        out["role"] = "tool"
        out["tool_call_id"] = LEGACY_CALL_ID
        out[SOURCE_FIELD] = {"shape": "chat", "item": message}
    return out


def provider_copy(message: Message, *, send_unknown: bool = False) -> Message:
    """What a provider receives of a stored message: request fields only.

    ``send_unknown`` keeps the fields no API here defines (for providers that take
    extensions); metadata and persistence-only fields are never sent. An assistant's
    ``audio`` is sent as the reference the API takes, ``{"id": ...}``.
    """
    if send_unknown:
        never = METADATA_FIELDS | PERSISTENCE_ONLY_FIELDS | {"function_call"}
        out = {k: v for k, v in message.items() if k not in never}
    else:
        out = {k: v for k, v in message.items() if k in REQUEST_FIELDS}
    audio = out.get("audio")
    if isinstance(audio, dict) and set(audio) - {"id"} and "id" in audio:
        out["audio"] = {"id": audio["id"]}
    return out


def caller_copy(message: Message) -> Message:
    """A stored message as the caller gave it (the legacy function form restored)."""
    source = message.get(SOURCE_FIELD)
    if isinstance(source, dict) and source.get("shape") == "chat":
        return dict(source["item"])
    return {k: v for k, v in message.items() if k not in PERSISTENCE_ONLY_FIELDS}
