"""OpenHands conversation exports -> Chat messages.

Two event layouts are read, from a JSON list, ``{"events"|"history": [...]}`` or JSONL:

* V0 (``openhands`` event stream, ``event_to_dict``): actions ``{"action", "args",
  "source", "timestamp", "tool_call_metadata"}`` and observations ``{"observation",
  "content", "cause", "extras", "tool_call_metadata"}``. An action made by a tool call
  (``tool_call_metadata``) is a call, grouped with the other calls of the same model
  response; its observation is the tool result. ``message`` actions are user or
  assistant text; ``system`` the system prompt. Older exports (prompt-based CodeAct,
  2024) write an event's fields flat, without ``args`` or ``source``, and actions
  without tool calls (the model wrote the command in its text): such an action is a call
  of its own (id ``openhands-N``) and the next observation its result. What OpenHands'
  conversation memory shows the model as user text is kept as such: a workspace
  context (``recall`` observation) and an error that answers no call.
* V1 (agent SDK events with ``kind``): ``SystemPromptEvent``, ``MessageEvent``
  (``llm_message``), ``ActionEvent`` (``tool_call``, grouped by ``llm_response_id``),
  ``ObservationEvent`` / ``AgentErrorEvent`` / ``UserRejectObservation`` (results).

State changes, condensations and other events the model never saw are counted. An
evaluation's ``output.jsonl`` holds one run per line: one is converted at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .base import Imported, TranscriptError, arguments_text, read_json_or_jsonl, text_of
from .pairing import pair_chat

V1_RESULTS = ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation")
#: V0 events the model never saw (state changes, the memory's own look-up request).
V0_UNSEEN = frozenset(
    {"change_agent_state", "agent_state_changed", "null", "recall", "condensation",
     "condensation_request"}
)  # fmt: skip
#: V0 action fields that are bookkeeping, not what the model asked for.
V0_BOOKKEEPING = frozenset(
    {
        "action", "thought", "is_confirmed", "action_risk", "security_risk", "keep_prompt",
        "confirmation_state", "hidden", "blocking", "is_input", "kernel_init_code",
        "images_urls", "wait_for_response", "id", "timestamp", "source", "message", "cause",
        "tool_call_metadata", "llm_metrics", "args", "include_extra",
    }
)  # fmt: skip
#: The repair of a V0 message action that names no source.
ROLE_FROM_PLACE = "message actions without a source (the first is the user's, then the agent's)"


@dataclass
class _Reading:
    """What one pass over the events carries from event to event."""

    #: (model response id, its assistant message), for the calls of one response.
    group: tuple[Any, dict[str, Any]] | None = None
    #: Ids of the calls made for actions without one, waiting for their observation.
    waiting: list[str] = field(default_factory=list)
    #: Whether the agent has spoken (a message without a source is then the agent's).
    agent_spoke: bool = False
    #: Ids of the commands the user ran (their output is user text, not a tool result).
    user_commands: set[Any] = field(default_factory=set)


def read(text: str) -> Imported:
    imported = Imported("openhands", "chat")
    events: list[Any] = []
    runs: list[Any] = []
    for _, value in read_json_or_jsonl(text, "OpenHands events"):
        if isinstance(value, dict):
            inner = value.get("events") or value.get("history")
            if isinstance(inner, list):
                runs.append(value.get("instance_id", len(runs) + 1))
            events.extend(inner if isinstance(inner, list) else [value])
        elif isinstance(value, list):
            events.extend(value)
    # Evaluation outputs of 2024 list the history as [action, observation] pairs.
    events = [e for item in events for e in (item if isinstance(item, list) else [item])]
    if len(runs) > 1:
        shown = ", ".join(map(str, runs[:5])) + (", …" if len(runs) > 5 else "")
        raise TranscriptError(
            f"holds {len(runs)} runs ({shown}), and a session file is one conversation: "
            "convert each line on its own, e.g. sed -n 2p output.jsonl > run2.jsonl"
        )
    if not events:
        raise TranscriptError("no events; an OpenHands export is a list of events")
    state = _Reading()
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            raise TranscriptError(f"event {index}: expected a JSON object")
        made = (_v1 if "kind" in event else _v0)(event, index, state, imported)
        imported.messages.extend(made)
        state.agent_spoke = state.agent_spoke or any(m["role"] == "assistant" for m in made)
    pair_chat(imported)
    return imported


def _stamp(message: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    if event.get("timestamp"):
        message["timestamp"] = event["timestamp"]
    return message


def _call(state: _Reading, response_id: Any, call: dict[str, Any], text: str, event) -> list:
    """Add a tool call to the assistant message of its model response (a new one if needed)."""
    if state.group is not None and response_id is not None and state.group[0] == response_id:
        state.group[1]["tool_calls"].append(call)
        return []
    message = _stamp({"role": "assistant", "content": text or None, "tool_calls": [call]}, event)
    state.group = (response_id, message)
    return [message]


def _v0(event: dict[str, Any], index: int, state: _Reading, imported: Imported) -> list:
    meta = event.get("tool_call_metadata") or {}
    if "action" in event:
        action = event["action"]
        # Older exports write the fields flat, without ``args``.
        given = event.get("args")
        args: dict[str, Any] = given if isinstance(given, dict) else event
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
            return _call(state, response.get("id"), call, str(args.get("thought") or ""), event)
        if action in V0_UNSEEN:
            imported.drop(f"'{action}' actions without a tool call")
            return []
        state.group = None
        if action == "message":
            return [_stamp(_message(event, args, state, imported), event)]
        if action == "system":
            _keep_tools(imported, args.get("tools"))
            return [_stamp({"role": "system", "content": args.get("content", "")}, event)]
        if action == "run" and event.get("source") == "user":
            if event.get("id") is not None:
                state.user_commands.add(event["id"])
            text = f"User executed the command:\n{args.get('command', '')}"
            return [_stamp({"role": "user", "content": text}, event)]
        if action == "finish":
            text = str(args.get("thought") or args.get("final_thought") or "")
            return [_stamp({"role": "assistant", "content": text}, event)] if text else []
        return _written_call(event, index, action, args, state)
    if "observation" in event:
        kind = event["observation"]
        if meta.get("tool_call_id"):
            result = {"role": "tool", "tool_call_id": meta["tool_call_id"], "content": _said(event)}
            return [_stamp(result, event)]
        if kind == "recall":
            context = _workspace_context(event.get("extras"))
            return [_stamp({"role": "user", "content": context}, event)] if context else []
        if event.get("cause") in state.user_commands:
            text = f"\nObserved result of command executed by user:\n{_said(event)}"
            return [_stamp({"role": "user", "content": text}, event)]
        if state.waiting and kind not in V0_UNSEEN:
            result = {"role": "tool", "tool_call_id": state.waiting.pop(0), "content": _said(event)}
            return [_stamp(result, event)]
        if kind == "error":
            return [_stamp({"role": "user", "content": _said(event)}, event)]
        imported.drop(f"'{kind}' observations without a tool call")
        return []
    imported.drop("events that are neither actions nor observations")
    return []


def _message(
    event: dict[str, Any], args: dict[str, Any], state: _Reading, imported: Imported
) -> dict[str, Any]:
    """A ``message`` action as a Chat message; without a source, its role from its place."""
    text: Any = args.get("content", event.get("message", ""))
    images = [
        u for u in args.get("image_urls") or args.get("images_urls") or () if isinstance(u, str)
    ]
    if images:  # the message's images, as Chat image parts after its text
        text = [{"type": "text", "text": text}] + [
            {"type": "image_url", "image_url": {"url": url}} for url in images
        ]
    source = event.get("source")
    if source is None:
        imported.repaired[ROLE_FROM_PLACE] += 1
        agent = state.agent_spoke or bool(args.get("wait_for_response"))
        return {"role": "assistant" if agent else "user", "content": text}
    return {"role": "user" if source == "user" else "assistant", "content": text}


def _written_call(
    event: dict[str, Any], index: int, action: str, args: dict[str, Any], state: _Reading
) -> list:
    """An action the model wrote in its text (no tool call): a call of its own, answered by
    the next observation."""
    call_id = f"openhands-{event.get('id', index)}"
    state.waiting.append(call_id)
    payload = {k: v for k, v in args.items() if k not in V0_BOOKKEEPING}
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": action, "arguments": arguments_text(payload)},
    }
    message = {
        "role": "assistant",
        "content": str(args.get("thought") or "") or None,
        "tool_calls": [call],
    }
    return [_stamp(message, event)]


def _said(event: dict[str, Any]) -> str:
    """An observation's text as OpenHands showed it to the model: a command's output with
    its prefix and suffix, working directory, interpreter and exit code (when the event
    records them), an error with its closing note, a rejection with its own. An output
    recorded without that metadata (older exports) stands alone, or as the event's
    one-line message where it is empty (a command with no output: how it ended)."""
    kind = event.get("observation")
    text = str(event.get("content") or "")
    extras = event.get("extras")
    metadata = extras.get("metadata") if isinstance(extras, dict) else None
    if kind == "run" and isinstance(metadata, dict):
        text = f"{metadata.get('prefix') or ''}{text}{metadata.get('suffix') or ''}"
        if metadata.get("working_dir"):
            text += f"\n[Current working directory: {metadata['working_dir']}]"
        if metadata.get("py_interpreter_path"):
            text += f"\n[Python interpreter: {metadata['py_interpreter_path']}]"
        if metadata.get("exit_code", -1) != -1:
            text += f"\n[Command finished with exit code {metadata['exit_code']}]"
        return text
    if kind == "error":
        return f"{text}\n[Error occurred in processing last action]"
    if kind == "user_rejected":
        return f"OBSERVATION:\n{text}\n[Last action has been rejected by the user]"
    return text or str(event.get("message") or "")


def _block_text(block: Any) -> str:
    """The text of a V1 text block (``{"type": "text", "text": ...}``) or of a string."""
    return str(block.get("text", "")) if isinstance(block, dict) else text_of(block)


def _keep_tools(imported: Imported, tools: Any) -> None:
    """The tool schemas a system prompt was sent with, as Chat tools (the first set only;
    a session file has one)."""
    if imported.tools or not isinstance(tools, list):
        return
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if isinstance(tool.get("function"), dict):
            imported.tools.append({"type": "function", "function": tool["function"]})
        elif isinstance(tool.get("name") or tool.get("title"), str):  # the SDK's own form
            name = tool.get("name") or tool["title"]
            function = {"name": name, "description": str(tool.get("description") or "")}
            schema = tool.get("parameters") or tool.get("input_schema")
            if not isinstance(schema, dict):
                imported.drop(
                    "tool parameter schemas (not in the export; names, descriptions kept)"
                )
                schema = {"type": "object"}
            function["parameters"] = schema
            imported.tools.append({"type": "function", "function": function})


def _workspace_context(extras: Any) -> str:
    """The text fields of a workspace-context recall, which OpenHands' memory shows the
    model as a user message (repository, runtime, instructions, triggered knowledge)."""
    if not isinstance(extras, dict):
        return ""
    parts = []
    for key, value in extras.items():
        if key == "recall_type" or value in ("", None, [], {}):
            continue
        parts.append(f"{key}: {value if isinstance(value, str) else arguments_text(value)}")
    return "\n".join(parts)


def _arguments_from_response(response: dict[str, Any], call_id: str) -> str | None:
    """The call's arguments as the model wrote them, from the stored model response."""
    for choice in response.get("choices") or ():
        for call in (choice.get("message") or {}).get("tool_calls") or ():
            if call.get("id") == call_id:
                return (call.get("function") or {}).get("arguments")
    return None


def _v1(event: dict[str, Any], index: int, state: _Reading, imported: Imported) -> list:
    kind = event["kind"]
    if kind == "SystemPromptEvent":
        # The SDK sends the prompt and its dynamic context (date, skills) as one message.
        parts = [_block_text(event.get("system_prompt")), _block_text(event.get("dynamic_context"))]
        _keep_tools(imported, event.get("tools"))
        state.group = None
        return [_stamp({"role": "system", "content": "\n\n".join(p for p in parts if p)}, event)]
    if kind == "MessageEvent":
        message = event.get("llm_message") or {}
        role = message.get("role") or ("user" if event.get("source") == "user" else "assistant")
        # The SDK adds a message's extended content (skill text it triggered) to it.
        parts = [text_of(message.get("content")), text_of(event.get("extended_content"))]
        state.group = None
        text = "\n".join(p for p in parts if p)
        return [_stamp({"role": role, "content": text}, event)]
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
        return _call(state, event.get("llm_response_id"), call, thought, event)
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
        return [_stamp(result, event)]
    if kind == "SystemPromptUpdateEvent":
        imported.drop("system prompt updates (a session file keeps the first prompt and tools)")
        return []
    imported.drop(f"'{kind}' events (not seen by the model)")
    return []
