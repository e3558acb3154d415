"""PydanticAI: a history processor backed by a ctxengine session, engine tools as tools.

``pip install "ctxengine-host[pydantic-ai]"``; tested with pydantic-ai-slim 2.68.0.
PydanticAI 2 takes history processors as a capability (``history_processors=``
was removed in v2)::

    history = EngineHistory(session)      # a Session or an AsyncSession
    agent = Agent(model, capabilities=[history.capability()], tools=history.tools())

Before each model request PydanticAI hands the processor its message history;
the new messages are committed to the session, the engine assembles the request,
and the processor returns it as PydanticAI messages, which (PydanticAI's own
convention for processors) become the run's history. See docs/integrations.md.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

from pydantic_ai import Tool
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from .bridge import HistoryBridge

log = logging.getLogger("ctxengine.integrations")

Message = dict[str, Any]


class EngineHistory:
    """The history processor (:meth:`process`) and tools of one session."""

    def __init__(self, session: Any) -> None:
        self.bridge = HistoryBridge(session)

    async def process(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """PydanticAI's history-processor call: the engine's context, or ``messages`` unchanged."""
        try:
            chat = to_chat(messages)
        except Exception:
            log.exception("could not read PydanticAI's history; it is used unchanged")
            return messages
        assembled = await self.bridge.aassemble(chat)
        if assembled is None:
            return messages
        output = from_chat(assembled, template=_last_request(messages))
        self.bridge.remember(to_chat(output))
        return output

    async def finish(self, messages: list[ModelMessage]) -> None:
        """After a run: store its last answer (no model call followed it) and end the turn.

        Pass ``result.all_messages()``; without this call the answer is stored when
        the next run starts with that history.
        """
        try:
            chat = to_chat(messages)
            await self.bridge.offload(self._finish, chat)
        except Exception:
            log.exception("could not store the end of the run")

    def finish_sync(self, messages: list[ModelMessage]) -> None:
        """:meth:`finish` for ``agent.run_sync`` callers."""
        try:
            self._finish(to_chat(messages))
        except Exception:
            log.exception("could not store the end of the run")

    def _finish(self, chat: list[Message]) -> None:
        self.bridge.commit(chat)
        self.bridge.finish_turn()

    def capability(self) -> ProcessHistory:
        return ProcessHistory(self.process)

    def tools(self) -> list[Tool]:
        """The engine's tools as PydanticAI tools (their JSON schemas as the engine gives them)."""
        return [self._tool(t.name, t.description, t.parameters) for t in self.bridge.engine_tools()]

    def _tool(self, name: str, description: str, parameters: dict[str, Any]) -> Tool:
        bridge = self.bridge

        async def run_engine_tool(**kwargs: Any) -> str:
            return await bridge.acall_tool(name, kwargs)

        return Tool.from_schema(run_engine_tool, name, description, parameters)


def to_chat(messages: list[ModelMessage]) -> list[Message]:
    """PydanticAI messages as OpenAI chat messages (text, tool calls, tool results)."""
    out: list[Message] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            out.append(_response_to_chat(message))
            continue
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                out.append({"role": "system", "content": part.content})
            elif isinstance(part, UserPromptPart):
                out.append({"role": "user", "content": _user_text(part.content)})
            elif isinstance(part, ToolReturnPart):
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": part.tool_call_id,
                        "content": part.model_response_str(),
                    }
                )
            elif isinstance(part, RetryPromptPart):
                if part.tool_name:
                    out.append(
                        {
                            "role": "tool",
                            "tool_call_id": part.tool_call_id,
                            "content": part.model_response(),
                        }
                    )
                else:
                    out.append({"role": "user", "content": part.model_response()})
    return out


def _response_to_chat(response: ModelResponse) -> Message:
    text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
    calls = [
        {
            "id": p.tool_call_id,
            "type": "function",
            "function": {"name": p.tool_name, "arguments": p.args_as_json_str()},
        }
        for p in response.parts
        if isinstance(p, ToolCallPart)
    ]
    message: Message = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _user_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    texts = [c if isinstance(c, str) else f"[{type(c).__name__}]" for c in content]
    return "\n".join(texts)


def from_chat(messages: list[Message], template: ModelRequest | None = None) -> list[ModelMessage]:
    """OpenAI chat messages as PydanticAI messages; ``template`` lends the last request its
    run fields (run id, instructions, timestamp)."""
    out: list[ModelMessage] = []
    parts: list[Any] = []
    call_names: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content) if content else ""
        if role == "assistant":
            if parts:
                out.append(ModelRequest(parts=parts))
                parts = []
            response_parts: list[Any] = [TextPart(text)] if text else []
            for call in message.get("tool_calls") or []:
                function = call.get("function", {})
                call_names[call["id"]] = function.get("name", "")
                response_parts.append(
                    ToolCallPart(
                        function.get("name", ""),
                        function.get("arguments") or "{}",
                        tool_call_id=call["id"],
                    )
                )
            out.append(ModelResponse(parts=response_parts))
        elif role in ("system", "developer"):
            parts.append(SystemPromptPart(text))
        elif role == "tool":
            call_id = message.get("tool_call_id", "")
            parts.append(ToolReturnPart(call_names.get(call_id, ""), text, tool_call_id=call_id))
        else:
            parts.append(UserPromptPart(text))
    if parts:
        last = ModelRequest(parts=parts)
        if template is not None:
            last = dataclasses.replace(template, parts=parts)
        out.append(last)
    return out


def _last_request(messages: list[ModelMessage]) -> ModelRequest | None:
    last = messages[-1] if messages else None
    return last if isinstance(last, ModelRequest) else None
