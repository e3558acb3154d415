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
  context or triggered knowledge (``recall`` observation, rendered as the memory renders
  it) and an error that answers no call.
* V1 (agent SDK events with ``kind``): ``SystemPromptEvent``, ``MessageEvent``
  (``llm_message``), ``ActionEvent`` (``tool_call``, grouped by ``llm_response_id``),
  ``ObservationEvent`` / ``AgentErrorEvent`` / ``UserRejectObservation`` (results, as
  the SDK's ``to_llm_message`` renders them).

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
#: What the agent SDK puts before a failed result (``Observation.ERROR_MESSAGE_HEADER``).
V1_ERROR_HEADER = "[An error occurred during execution.]\n"
#: V1 observations rendered as a command's output (``TerminalObservation``, named
#: ``ExecuteBashObservation`` until November 2025).
V1_TERMINALS = frozenset({"TerminalObservation", "ExecuteBashObservation"})
#: V1 observations whose own ``to_llm_content`` shows the model something else than their
#: content: kept as their content.
V1_OWN_RENDERING = frozenset(
    {"TaskObservation", "ConsultTomObservation", "SleeptimeComputeObservation"}
)
#: What the workspace context of OpenHands (``additional_info.j2``) says of hosts and of
#: a checked-out branch.
HOSTS_NOTE = (
    "The user has access to the following hosts for accessing a web application,\n"
    "each of which has a corresponding port:\n"
)
WEB_SERVER_NOTE = (
    "When starting a web server, use the corresponding ports. You should also\n"
    "set any options to allow iframes and CORS requests, and allow the server to\n"
    "be accessed from any host (e.g. 0.0.0.0).\n"
    "For example, if you are using vite.config.js, you should set server.host and "
    "server.allowedHosts to true\n"
)
BRANCH_NOTE = (
    'The repository has been checked out to branch "{0}".\n\n'
    'IMPORTANT: You should work within the current branch "{0}" unless:\n'
    "    1. the user explicitly instructs otherwise\n"
    '    2. the current branch is "main", "master", or another default branch where direct '
    "pushes may be unsafe\n"
)
#: How ``microagent_info.j2`` introduces a microagent's knowledge.
KNOWLEDGE_NOTE = (
    'The following information has been included based on a keyword match for "{0}".\n'
    "It may or may not be relevant to the user's request.\n\n"
)


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
    #: Names of the microagents earlier recalls brought (the memory shows each once).
    recalled: set[str] = field(default_factory=set)


def read(text: str) -> Imported:
    imported = Imported("openhands", "chat")
    events: list[Any] = []
    runs: list[Any] = []
    for _, value in read_json_or_jsonl(text, "OpenHands events", imported):
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
            return _recall(event, state, imported)
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
        return _command_output(text, metadata)
    if kind == "error":
        return f"{text}\n[Error occurred in processing last action]"
    if kind == "user_rejected":
        return f"OBSERVATION:\n{text}\n[Last action has been rejected by the user]"
    return text or str(event.get("message") or "")


def _command_output(output: str, metadata: dict[str, Any]) -> str:
    """A command's output as OpenHands shows it to the model (V0's ``CmdOutputObservation``
    and the SDK's ``TerminalObservation`` alike): its prefix and suffix, then its working
    directory, interpreter and exit code where known (-1: still running)."""
    text = f"{metadata.get('prefix') or ''}{output}{metadata.get('suffix') or ''}"
    if metadata.get("working_dir"):
        text += f"\n[Current working directory: {metadata['working_dir']}]"
    if metadata.get("py_interpreter_path"):
        text += f"\n[Python interpreter: {metadata['py_interpreter_path']}]"
    if metadata.get("exit_code", -1) != -1:
        text += f"\n[Command finished with exit code {metadata['exit_code']}]"
    return text


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


def _recall(event: dict[str, Any], state: _Reading, imported: Imported) -> list:
    """A ``recall`` observation as OpenHands' conversation memory shows it: a user message
    of the workspace context and the knowledge of the microagents it brought, or, for a
    later recall, of the microagents no earlier recall brought (OpenHands' own
    ``disabled_microagents`` setting is not in the export)."""
    given = event.get("extras")
    extras: dict[str, Any] = given if isinstance(given, dict) else {}
    agents = [a for a in extras.get("microagent_knowledge") or () if isinstance(a, dict)]
    context, new = "", [a for a in agents if str(a.get("name")) not in state.recalled]
    if extras.get("recall_type") == "workspace_context":
        context = _workspace_context(extras) if _has_context(extras) else ""
        new = agents
    state.recalled.update(str(a.get("name")) for a in agents)
    text = "\n".join(p for p in (context, _knowledge(new)) if p)
    if not text:
        shown = "knowledge shown before" if agents else "nothing to show"
        imported.drop(f"'recall' observations that show the model nothing ({shown})")
        return []
    return [_stamp({"role": "user", "content": text}, event)]


def _has_context(extras: dict[str, Any]) -> bool:
    """Whether OpenHands' memory renders a workspace context: a repository, its
    instructions, the conversation's instructions, a date or secrets."""
    keys = ("repo_name", "repo_directory", "conversation_instructions", "date")
    return any(extras.get(k) for k in keys) or bool(
        str(extras.get("repo_instructions") or "").strip()
        or extras.get("custom_secrets_descriptions")
    )


def _workspace_context(extras: dict[str, Any]) -> str:
    """OpenHands' ``additional_info.j2`` rendered for a recall, its blank lines included
    (the template keeps the line break after each of its tags)."""
    text = _repository_info(extras) + "\n"
    if extras.get("repo_instructions"):
        instructions = extras["repo_instructions"]
        text += f"<REPOSITORY_INSTRUCTIONS>\n{instructions}\n</REPOSITORY_INSTRUCTIONS>\n"
    text += "\n" + _runtime_information(extras)
    if extras.get("conversation_instructions"):
        instructions = extras["conversation_instructions"]
        text += f"<CONVERSATION_INSTRUCTIONS>\n{instructions}\n</CONVERSATION_INSTRUCTIONS>\n"
    return text.strip()


def _repository_info(extras: dict[str, Any]) -> str:
    name, directory = extras.get("repo_name") or "", extras.get("repo_directory") or ""
    if not (name or directory):
        return ""
    text = (
        "\n<REPOSITORY_INFO>\nAt the user's request, repository "
        f"{name} has been cloned to {directory} in the current working directory.\n"
    )
    if extras.get("repo_branch"):
        text += BRANCH_NOTE.format(extras["repo_branch"])
    return text + "\n</REPOSITORY_INFO>\n"


def _runtime_information(extras: dict[str, Any]) -> str:
    """The ``<RUNTIME_INFORMATION>`` block: working directory, hosts, the runtime's
    instructions, secrets and date, each where the recall has it."""
    text = "<RUNTIME_INFORMATION>\n"
    if extras.get("working_dir"):
        text += f"\nThe current working directory is {extras['working_dir']}\n"
    text += "\n"
    hosts = extras.get("runtime_hosts") or {}
    if hosts:
        listed = "".join(f"* {host} (port {port})\n" for host, port in hosts.items())
        text += f"\n{HOSTS_NOTE}{listed}\n{WEB_SERVER_NOTE}"
    text += "\n"
    if extras.get("additional_agent_instructions"):
        text += f"\n{extras['additional_agent_instructions']}\n"
    text += "\n"
    secrets = extras.get("custom_secrets_descriptions") or {}
    if secrets:
        listed = "".join(f"\n* **${name}**: {about}\n" for name, about in secrets.items())
        text += (
            "\n<CUSTOM_SECRETS>\nYou have access to the following environment variables\n"
            f"{listed}\n</CUSTOM_SECRETS>\n"
        )
    text += "\n"
    if extras.get("date"):
        text += f"\nToday's date is {extras['date']} (UTC).\n"
    return text + "\n</RUNTIME_INFORMATION>\n"


def _knowledge(agents: list[dict[str, Any]]) -> str:
    """The microagents' knowledge as ``microagent_info.j2`` shows it."""
    return "\n\n".join(
        f"<EXTRA_INFO>\n{KNOWLEDGE_NOTE.format(a.get('trigger'))}{a.get('content')}\n</EXTRA_INFO>"
        for a in agents
    )


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
        text = _v1_result(event)
        result = {"role": "tool", "tool_call_id": event.get("tool_call_id"), "content": text}
        return [_stamp(result, event)]
    if kind == "SystemPromptUpdateEvent":
        imported.drop("system prompt updates (a session file keeps the first prompt and tools)")
        return []
    imported.drop(f"'{kind}' events (not seen by the model)")
    return []


def _v1_result(event: dict[str, Any]) -> str:
    """A V1 result as the SDK's ``to_llm_message`` gives it to the model, its text parts
    joined by newlines as the SDK's string form joins them: an observation's rendering
    and the context it triggered (``extended_content``), an error, a rejection."""
    kind = event["kind"]
    if kind == "AgentErrorEvent":
        return str(event.get("error", ""))
    if kind == "UserRejectObservation":
        return f"Action rejected: {event.get('rejection_reason', '')}"
    observation, extended = event.get("observation"), event.get("extended_content")
    parts = _observation(observation) if isinstance(observation, dict) else [text_of(observation)]
    return "\n".join(parts + (_texts(extended) if isinstance(extended, list) else []))


def _observation(observation: dict[str, Any]) -> list[str]:
    """The text parts of an observation's ``to_llm_content``: the SDK's error header when
    ``is_error``, then its content, a terminal's as a command's output. An observation of
    an older SDK (no ``content`` list) or one that renders itself otherwise is its content."""
    content = observation.get("content", observation)
    if not isinstance(content, list) or observation.get("kind") in V1_OWN_RENDERING:
        return [text_of(content)]
    header = [V1_ERROR_HEADER] if observation.get("is_error") else []
    if observation.get("kind") not in V1_TERMINALS:
        return [*header, *_texts(content)]
    metadata = observation.get("metadata")
    output = "".join(_texts(content))
    return [*header, _command_output(output, metadata if isinstance(metadata, dict) else {})]


def _texts(content: list[Any]) -> list[str]:
    """The texts of the SDK's content parts (images are not text)."""
    return [str(p["text"]) for p in content if isinstance(p, dict) and "text" in p]
