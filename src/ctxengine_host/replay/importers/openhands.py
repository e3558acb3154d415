"""OpenHands conversation exports -> Chat messages.

Two event layouts are read, from a JSON list, ``{"events"|"history": [...]}`` or JSONL:

* V0 (``openhands`` event stream, ``event_to_dict``): actions ``{"action", "args",
  "source", "timestamp", "tool_call_metadata"}`` and observations ``{"observation",
  "content", "cause", "extras", "tool_call_metadata"}``. An action made by a tool call
  (``tool_call_metadata``) is a call, grouped with the other calls of the same model
  response; its observation is the tool result. ``message`` actions are user or
  assistant text; ``system`` the system prompt.
* V1 (agent SDK events with ``kind``): ``SystemPromptEvent``, ``MessageEvent``
  (``llm_message``), ``ActionEvent`` (``tool_call``, grouped by ``llm_response_id``),
  ``ObservationEvent`` / ``AgentErrorEvent`` / ``UserRejectObservation`` (results).

State changes, condensations and other events the model never saw are counted.
"""

from __future__ import annotations

from typing import Any

from .base import Imported, TranscriptError, arguments_text, read_json_or_jsonl, text_of
from .pairing import pair_chat

V1_RESULTS = ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation")


def read(text: str) -> Imported:
    imported = Imported("openhands", "chat")
    events: list[Any] = []
    for _, value in read_json_or_jsonl(text, "OpenHands events"):
        if isinstance(value, dict):
            inner = value.get("events") or value.get("history")
            events.extend(inner if isinstance(inner, list) else [value])
        elif isinstance(value, list):
            events.extend(value)
    if not events:
        raise TranscriptError("no events; an OpenHands export is a list of events")
    group: tuple[Any, dict[str, Any]] | None = None  # (response id, assistant message)
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            raise TranscriptError(f"event {index}: expected a JSON object")
        made, group = (_v1 if "kind" in event else _v0)(event, group, imported)
        imported.messages.extend(made)
    pair_chat(imported)
    return imported


def _stamp(message: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    if event.get("timestamp"):
        message["timestamp"] = event["timestamp"]
    return message


def _call(group, response_id, call: dict[str, Any], text: str, event) -> tuple[list, Any]:
    """Add a tool call to the assistant message of its model response (a new one if needed)."""
    if group is not None and response_id is not None and group[0] == response_id:
        group[1]["tool_calls"].append(call)
        return [], group
    message = _stamp({"role": "assistant", "content": text or None, "tool_calls": [call]}, event)
    return [message], (response_id, message)


def _v0(event: dict[str, Any], group, imported: Imported) -> tuple[list, Any]:
    meta = event.get("tool_call_metadata") or {}
    if "action" in event:
        action, args = event["action"], event.get("args") or {}
        if meta.get("tool_call_id"):
            response = meta.get("model_response") or {}
            arguments = _arguments_from_response(response, meta["tool_call_id"])
            call = {
                "id": meta["tool_call_id"],
                "type": "function",
                "function": {
                    "name": meta.get("function_name") or action,
                    "arguments": arguments if arguments is not None else arguments_text(args),
                },
            }
            return _call(group, response.get("id"), call, str(args.get("thought") or ""), event)
        if action == "message":
            role = "user" if event.get("source") == "user" else "assistant"
            text = args.get("content", event.get("message", ""))
            return [_stamp({"role": role, "content": text}, event)], None
        if action == "system":
            return [_stamp({"role": "system", "content": args.get("content", "")}, event)], None
        imported.drop(f"'{action}' actions without a tool call")
        return [], group
    if "observation" in event:
        if meta.get("tool_call_id"):
            # a command with no output still told the model how it ended (exit code);
            # the event's one-line message carries that, its empty content does not
            text = str(event.get("content") or event.get("message") or "")
            result = {"role": "tool", "tool_call_id": meta["tool_call_id"], "content": text}
            return [_stamp(result, event)], group
        imported.drop(f"'{event['observation']}' observations without a tool call")
        return [], group
    imported.drop("events that are neither actions nor observations")
    return [], group


def _arguments_from_response(response: dict[str, Any], call_id: str) -> str | None:
    """The call's arguments as the model wrote them, from the stored model response."""
    for choice in response.get("choices") or ():
        for call in (choice.get("message") or {}).get("tool_calls") or ():
            if call.get("id") == call_id:
                return (call.get("function") or {}).get("arguments")
    return None


def _v1(event: dict[str, Any], group, imported: Imported) -> tuple[list, Any]:
    kind = event["kind"]
    if kind == "SystemPromptEvent":
        prompt = event.get("system_prompt")
        text = prompt.get("text", "") if isinstance(prompt, dict) else text_of(prompt)
        return [_stamp({"role": "system", "content": text}, event)], None
    if kind == "MessageEvent":
        message = event.get("llm_message") or {}
        role = message.get("role") or ("user" if event.get("source") == "user" else "assistant")
        return [_stamp({"role": role, "content": text_of(message.get("content"))}, event)], None
    if kind == "ActionEvent":
        tool_call = event.get("tool_call") or {}
        function = tool_call.get("function") or tool_call
        call = {
            "id": event.get("tool_call_id") or tool_call.get("id"),
            "type": "function",
            "function": {
                "name": event.get("tool_name") or function.get("name", ""),
                "arguments": arguments_text(function.get("arguments", event.get("action"))),
            },
        }
        thought = text_of(event.get("thought"))
        if event.get("reasoning_content") or event.get("thinking_blocks"):
            imported.drop("reasoning content of actions (no Chat form)")
        return _call(group, event.get("llm_response_id"), call, thought, event)
    if kind in V1_RESULTS:
        observation = event.get("observation")
        if kind == "AgentErrorEvent":
            text = str(event.get("error", ""))
        elif kind == "UserRejectObservation":
            text = f"[rejected by the user] {event.get('rejection_reason', '')}"
        elif isinstance(observation, dict):
            text = text_of(observation.get("content", observation))
        else:
            text = text_of(observation)
        result = {"role": "tool", "tool_call_id": event.get("tool_call_id"), "content": text}
        return [_stamp(result, event)], group
    imported.drop(f"'{kind}' events (not seen by the model)")
    return [], group
