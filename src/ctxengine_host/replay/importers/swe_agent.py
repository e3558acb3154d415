"""mini-swe-agent and SWE-agent trajectories -> Chat (or Responses) messages.

mini-swe-agent (``trajectory_format`` ``mini-swe-agent-1.x``): ``messages`` are Chat
messages with an ``extra`` dict (actions, cost, ``timestamp``); the final ``exit``
message is the run's outcome, not something the model saw. Its Responses-API mode
stores response objects (``{"object": "response", "output": [...]}``) and items.

SWE-agent (``.traj``): ``history`` holds Chat-like messages with ``agent``,
``message_type``, ``thought``, ``action``; tool results name their calls in
``tool_call_ids``. ``trajectory`` holds one step per model output (``response``,
``thought``, ``action``, ``observation``): mostly a second copy of the history's
assistant messages, but also the attempts SWE-agent requeried (a format error, a blocked
command: never in the history) and, in 1.0-era runs, the run's last step (its ``submit``
and the diff), which only the trajectory holds.
"""

from __future__ import annotations

import json
from typing import Any

from .base import Imported, TranscriptError, arguments_text, text_of
from .pairing import pair_chat, pair_responses

CHAT_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name")
#: Fields of a trajectory message that are read (the rest are reported).
_READ_FIELDS = frozenset({*CHAT_FIELDS, "extra", "timestamp", "tool_call_ids"})
#: SWE-agent's bookkeeping fields, reported together.
_BOOKKEEPING = ("agent", "message_type", "thought", "action")


def read_mini(text: str) -> Imported:
    data = _document(text, "mini-swe-agent trajectory")
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise TranscriptError("a mini-swe-agent trajectory has a 'messages' list; this has none")
    if any(
        isinstance(m, dict) and (m.get("object") == "response" or "type" in m) for m in messages
    ):
        return _mini_responses(messages)
    imported = Imported("mini-swe-agent", "chat")
    for message in messages:
        if not isinstance(message, dict):
            raise TranscriptError("a trajectory message is not an object")
        if message.get("role") == "exit":
            imported.drop("exit records (the run's outcome, not sent to the model)")
            continue
        imported.messages.append(_chat(message, imported, message.get("extra")))
    pair_chat(imported)
    return imported


def _mini_responses(messages: list[Any]) -> Imported:
    imported = Imported("mini-swe-agent", "responses")
    for message in messages:
        if not isinstance(message, dict):
            continue
        extra: dict[str, Any] = message["extra"] if isinstance(message.get("extra"), dict) else {}
        if message.get("role") == "exit":
            imported.drop("exit records (the run's outcome, not sent to the model)")
        elif message.get("object") == "response":
            for item in message.get("output") or ():
                imported.messages.append(_stamped(dict(item), extra))
        else:
            item = {k: v for k, v in message.items() if k != "extra"}
            imported.messages.append(_stamped(item, extra))
        if extra:
            imported.drop("mini-swe-agent 'extra' records (actions, cost)")
    pair_responses(imported)
    return imported


def read_swe_agent(text: str) -> Imported:
    data = _document(text, "SWE-agent trajectory")
    history = data.get("history")
    if not isinstance(history, list):
        raise TranscriptError("a SWE-agent .traj has a 'history' list; this has none")
    imported = Imported("swe-agent", "chat")
    for message in history:
        if not isinstance(message, dict):
            raise TranscriptError("a history entry is not an object")
        ids = message.get("tool_call_ids")
        if message.get("role") == "tool" and isinstance(ids, list) and ids:
            message = {**message, "tool_call_id": ids[0]}
        if any(k in message for k in _BOOKKEEPING):
            imported.drop("SWE-agent bookkeeping (agent, message_type, thought, action)")
        imported.messages.append(_chat(message, imported, None))
    if isinstance(data.get("trajectory"), list) and data["trajectory"]:
        _trajectory(imported, history, data["trajectory"], data.get("replay_config"))
    pair_chat(imported)
    return imported


#: How the convert report names the trajectory steps, by what became of them.
STEP_COPY = "trajectory steps (a second copy of the history)"
STEP_APPENDED = "trajectory steps not in the history (appended)"
STEP_REQUERIED = "trajectory steps not in the history (requeried attempts)"
STEP_DIVERGED = "trajectory steps not in the history (after history steps they do not copy)"
STEP_NOT_STEP = "trajectory entries that are not steps"
#: The largest steps x answers table the alignment builds (~4 s, ~100 MB); past it, a
#: file no real run writes, steps are matched in turn.
ALIGN_CELLS = 4_000_000


def _trajectory(
    imported: Imported, history: list[Any], steps: list[Any], replay_config: Any
) -> None:
    """Each trajectory step the history holds is dropped as a copy; the steps after the
    history's last step (a 1.0-era run's last step is only in the trajectory) are
    appended in the history's shape; other steps, attempts SWE-agent requeried, dropped.
    """
    answers = [
        m
        for m in history
        if isinstance(m, dict) and m.get("role") == "assistant" and not m.get("is_demo")
    ]
    kept = [s for s in steps if isinstance(s, dict)]
    if len(kept) < len(steps):
        imported.drop(STEP_NOT_STEP, len(steps) - len(kept))
    copies = _align(kept, answers)
    last = max((i for i, j in enumerate(copies) if j is not None), default=-1)
    # Steps after the last copied one go on from the history only where that copy is the
    # history's last answer (or the history has none): else the two end differently.
    goes_on = not answers or (last >= 0 and copies[last] == len(answers) - 1)
    calls = any(m.get("tool_calls") for m in answers)
    tools = _tool_names(answers, replay_config)
    for index, step in enumerate(kept):
        if copies[index] is not None:
            imported.drop(STEP_COPY)
        elif index < last or (index < len(kept) - 1 and _requeried(step)):
            imported.drop(STEP_REQUERIED)
        elif not goes_on:
            imported.drop(STEP_DIVERGED)
        else:
            imported.messages.extend(_step_messages(step, index + 1, calls, tools))
            imported.repaired[STEP_APPENDED] += 1


def _align(steps: list[dict[str, Any]], answers: list[dict[str, Any]]) -> list[int | None]:
    """For each step, the index of the history answer it copies, or None: the in-order
    pairing with the most steps that copy their answer's text (``response`` is its
    content, or the same ``thought`` and ``action``), then the most that copy only its
    ``action`` (a demonstration's history may have been edited). Where an attempt and
    its requery read the same, the later is the copy (the requery was run)."""
    n, m = len(steps), len(answers)
    weight = n + 1  # one copy of the text outweighs any number of copies of the action
    said = [_said(s.get("response"), s) for s in steps]
    written = [_said(text_of(a.get("content")), a) for a in answers]

    def score(i: int, j: int) -> int:
        (response, thought, action), (content, thought_j, action_j) = said[i], written[j]
        if (response and response == content) or (
            (thought or action) and (thought, action) == (thought_j, action_j)
        ):
            return weight
        return int(bool(action) and action == action_j)

    if n * m > ALIGN_CELLS:  # a file far past any real run's size: each step in turn
        out: list[int | None] = [None] * n
        j = 0
        for i in range(n):
            if j < m and score(i, j):
                out[i], j = j, j + 1
        return out
    scores = [[score(i, j) for j in range(m)] for i in range(n)]
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n):
        for j in range(m):
            paired = best[i][j] + scores[i][j] if scores[i][j] else 0
            best[i + 1][j + 1] = max(paired, best[i][j + 1], best[i + 1][j])
    out = [None] * n
    i, j = n, m
    while i and j:  # from the end: the latest step that copies an answer is its copy
        if scores[i - 1][j - 1] and best[i][j] == best[i - 1][j - 1] + scores[i - 1][j - 1]:
            out[i - 1] = j - 1
            i, j = i - 1, j - 1
        elif best[i][j] == best[i - 1][j]:
            i -= 1
        else:
            j -= 1
    return out


def _said(text: Any, entry: dict[str, Any]) -> tuple[str, str, str]:
    """What a step or an answer says: its text (stripped), ``thought``, ``action``."""
    thought, action = _text(entry.get("thought")), _text(entry.get("action"))
    return _text(text).strip(), thought.strip(), action.strip()


def _requeried(step: dict[str, Any]) -> bool:
    """A step that was never run: SWE-agent 1.x records a requeried attempt with no
    observation and an ``execution_time`` of 0."""
    time = step.get("execution_time")
    return not _text(step.get("observation")) and time == 0 and not isinstance(time, bool)


def _tool_names(answers: list[dict[str, Any]], replay_config: Any) -> set[str]:
    """The tools the run called, and its submit command (``submit`` unless configured)."""
    names = {"submit"}
    for answer in answers:
        for call in answer.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                names.add(function["name"])
    if isinstance(replay_config, str):
        try:
            replay_config = json.loads(replay_config)
        except json.JSONDecodeError:
            replay_config = None
    agent = replay_config.get("agent") if isinstance(replay_config, dict) else None
    tools = agent.get("tools") if isinstance(agent, dict) else None
    if isinstance(tools, dict) and isinstance(tools.get("submit_command"), str):
        names.add(tools["submit_command"])
    return names


def _step_messages(
    step: dict[str, Any], number: int, calls: bool, tools: set[str]
) -> list[dict[str, Any]]:
    """A trajectory step as the history would hold it: the model's output (its tool call,
    in a history of tool calls, else its text) and the observation."""
    response, thought = _text(step.get("response")), _text(step.get("thought"))
    action, observation = _text(step.get("action")), _text(step.get("observation"))
    content = response or thought
    if not calls and not response and action.strip():
        content = f"{thought}\n```\n{action.strip()}\n```".lstrip("\n")
    answer: dict[str, Any] = {"role": "assistant", "content": content}
    out = [_stamped(answer, step)]
    if calls and action.strip():
        call_id = f"swe-agent-step-{number}"
        command = action.strip()
        if command in tools:  # a command of the run's tools, given alone: no arguments
            function = {"name": command, "arguments": "{}"}
        else:  # the command line SWE-agent ran in its shell
            function = {"name": "bash", "arguments": arguments_text({"command": action})}
        answer["tool_calls"] = [{"id": call_id, "type": "function", "function": function}]
        out.append(
            _stamped({"role": "tool", "tool_call_id": call_id, "content": observation}, step)
        )
    elif observation:
        out.append(_stamped({"role": "user", "content": observation}, step))
    return out


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _document(text: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(
            f"not JSON ({exc.msg} at line {exc.lineno}); is this a {what}?"
        ) from None
    if not isinstance(data, dict):
        raise TranscriptError(f"a {what} is a JSON object")
    return data


def _chat(message: dict[str, Any], imported: Imported, extra: Any) -> dict[str, Any]:
    out = {k: message[k] for k in CHAT_FIELDS if message.get(k) is not None}
    for field in sorted(set(message) - _READ_FIELDS - set(_BOOKKEEPING)):
        if not _empty(message[field]):  # ``"function_call": null`` loses nothing
            imported.drop(f"'{field}' message fields (no Chat form)")
    if "content" not in out:
        out["content"] = None if out.get("tool_calls") else ""
    if isinstance(out["content"], list):
        out["content"] = _parts(out["content"], imported)
    if isinstance(extra, dict) and extra:
        imported.drop("mini-swe-agent 'extra' records (actions, cost, raw output)")
    return _stamped(out, extra if isinstance(extra, dict) else {}, message)


def _empty(value: Any) -> bool:
    """None, "", [], {}, or a dict of such values (``{"refusal": null}``)."""
    if isinstance(value, dict):
        return all(_empty(v) for v in value.values())
    return value is None or (isinstance(value, str | list) and not value)


def _parts(content: list[Any], imported: Imported) -> Any:
    kept = []
    for part in content:
        if isinstance(part, dict) and part.get("type") in ("text", "image_url"):
            kept.append({k: v for k, v in part.items() if k != "cache_control"})
        else:
            imported.drop("content parts with no Chat form")
    if kept and all(p["type"] == "text" for p in kept):
        return text_of(kept)
    return kept


def _stamped(message: dict[str, Any], *sources: dict[str, Any]) -> dict[str, Any]:
    """``message`` with the first numeric ``timestamp`` of ``sources``: mini-swe-agent 2
    keeps it in ``extra``, 1.16-1.17 on the message itself."""
    for source in sources:
        stamp = source.get("timestamp")
        if isinstance(stamp, int | float) and not isinstance(stamp, bool):
            message["timestamp"] = stamp
            break
    return message
