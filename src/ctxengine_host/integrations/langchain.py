"""LangChain 1.x ``create_agent`` middleware and LangGraph ``pre_model_hook``; engine tools.

``pip install "ctxengine-host[langchain]"`` (or ``[langgraph]``); tested with langchain 1.5.2,
langchain-core 1.8.3, langgraph 1.2.24 (langgraph-prebuilt 1.1.3).

Both hooks are request-only: the graph's ``messages`` state keeps every message;
each model call gets the context the selected engine assembles::

    context = EngineContext(session)  # a Session or an AsyncSession
    agent = create_agent(model, tools=[*my_tools, *context.tools()],
                         middleware=[context.middleware()])
    graph = create_react_agent(model, [*my_tools, *context.tools()],
                               pre_model_hook=context.pre_model_hook)

The middleware uses ``wrap_model_call`` (LangChain's hook that changes one model
request); ``before_model`` can only update the graph state, which would rewrite
the conversation. The LangGraph hook returns ``llm_input_messages``, never
``messages``. See docs/integrations.md.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool, StructuredTool

from .bridge import HistoryBridge

log = logging.getLogger("ctxengine.integrations")

Message = dict[str, Any]


class EngineContext:
    """One session as LangChain middleware, a LangGraph pre-model hook and LangChain tools."""

    def __init__(self, session: Any) -> None:
        self.bridge = HistoryBridge(session)

    # LangGraph create_react_agent ------------------------------------------------

    def pre_model_hook(self, state: Any) -> dict[str, Any]:
        """``{"llm_input_messages": ...}``: the engine's context for this call only."""
        messages = _state_messages(state)
        return {"llm_input_messages": self.messages_for_model(messages) or messages}

    def messages_for_model(self, messages: list[BaseMessage]) -> list[BaseMessage] | None:
        """The engine's context for ``messages`` (the whole history), or None on failure."""
        try:
            chat = to_chat(messages)
        except Exception:
            log.exception("could not read LangChain's messages; they are used unchanged")
            return None
        assembled = self.bridge.assemble(chat)
        return None if assembled is None else from_chat(assembled)

    async def amessages_for_model(self, messages: list[BaseMessage]) -> list[BaseMessage] | None:
        try:
            chat = to_chat(messages)
        except Exception:
            log.exception("could not read LangChain's messages; they are used unchanged")
            return None
        assembled = await self.bridge.aassemble(chat)
        return None if assembled is None else from_chat(assembled)

    def finish(self, state: Any) -> None:
        """After ``invoke``: store the final answer (no model call followed it), end the turn."""
        try:
            self.bridge.commit(to_chat(_state_messages(state)))
            self.bridge.finish_turn()
        except Exception:
            log.exception("could not store the end of the run")

    # LangChain create_agent --------------------------------------------------------

    def middleware(self) -> AgentMiddleware:
        return EngineMiddleware(self)

    # Tools ---------------------------------------------------------------------

    def tools(self) -> list[BaseTool]:
        """The engine's tools as LangChain tools (the engine's JSON schemas as args schemas)."""
        return [self._tool(t.name, t.description, t.parameters) for t in self.bridge.engine_tools()]

    def _tool(self, name: str, description: str, parameters: dict[str, Any]) -> BaseTool:
        bridge = self.bridge

        def run(**kwargs: Any) -> str:
            return bridge.call_tool(name, kwargs)

        async def arun(**kwargs: Any) -> str:
            return await bridge.acall_tool(name, kwargs)

        return StructuredTool.from_function(
            func=run,
            coroutine=arun,
            name=name,
            description=description or name,
            args_schema=parameters,
        )


class EngineMiddleware(AgentMiddleware):
    """``create_agent`` middleware: each model request carries the engine's context."""

    def __init__(self, context: EngineContext) -> None:
        super().__init__()
        self.context = context

    @property
    def name(self) -> str:
        return "CtxengineContext"

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return handler(self._override(request, self.context.messages_for_model))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        history = _request_history(request)
        messages = await self.context.amessages_for_model(history)
        return await handler(_with_messages(request, messages))

    def _override(self, request: ModelRequest, assemble: Any) -> ModelRequest:
        return _with_messages(request, assemble(_request_history(request)))


def _request_history(request: ModelRequest) -> list[BaseMessage]:
    head = [request.system_message] if request.system_message is not None else []
    return [*head, *request.messages]


def _with_messages(request: ModelRequest, messages: list[BaseMessage] | None) -> ModelRequest:
    if messages is None:
        return request
    system = [m for m in messages if isinstance(m, SystemMessage)]
    rest = [m for m in messages if not isinstance(m, SystemMessage)]
    if len(system) > 1:  # the engine added its own: one system message for create_agent
        system = [SystemMessage("\n\n".join(str(m.content) for m in system))]
    return request.override(messages=rest, system_message=system[0] if system else None)


def _state_messages(state: Any) -> list[BaseMessage]:
    return list(state["messages"] if isinstance(state, dict) else state.messages)


def to_chat(messages: list[BaseMessage]) -> list[Message]:
    """LangChain messages as OpenAI chat messages."""
    out: list[Message] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            out.append({"role": "system", "content": _text(message.content)})
        elif isinstance(message, HumanMessage):
            out.append({"role": "user", "content": _text(message.content)})
        elif isinstance(message, AIMessage):
            chat: Message = {"role": "assistant", "content": _text(message.content) or None}
            if message.tool_calls:
                chat["tool_calls"] = [
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
                    }
                    for call in message.tool_calls
                ]
            out.append(chat)
        elif isinstance(message, ToolMessage):
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id,
                    "content": _text(message.content),
                }
            )
        else:
            out.append({"role": "user", "content": _text(message.content)})
    return out


def from_chat(messages: list[Message]) -> list[BaseMessage]:
    """OpenAI chat messages as LangChain messages."""
    out: list[BaseMessage] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content) if content else ""
        if role in ("system", "developer"):
            out.append(SystemMessage(text))
        elif role == "assistant":
            calls = [
                {
                    "id": call["id"],
                    "name": call["function"]["name"],
                    "args": _arguments(call["function"].get("arguments")),
                    "type": "tool_call",
                }
                for call in message.get("tool_calls") or []
            ]
            out.append(AIMessage(content=text, tool_calls=calls))
        elif role == "tool":
            out.append(ToolMessage(content=text, tool_call_id=message.get("tool_call_id", "")))
        else:
            out.append(HumanMessage(text))
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            parts.append(f"[{block.get('type', 'block') if isinstance(block, dict) else 'block'}]")
    return "".join(parts)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_value": value}
