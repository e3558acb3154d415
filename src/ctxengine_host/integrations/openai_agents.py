"""OpenAI Agents SDK: a ``Session`` kept in the ctxengine store, a model-input filter, tools.

``pip install "ctxengine-host[openai-agents]"``; tested with openai-agents 0.24.0::

    memory = EngineSession(host.open_session("chat-42"))
    agent = Agent(name="fixer", instructions="...", tools=[*my_tools, *memory.tools()])
    result = await Runner.run(
        agent, "Why is CI red?", session=memory,
        run_config=RunConfig(call_model_input_filter=memory.call_model_input_filter),
    )

The SDK reads a session once per run (``get_items``: the engine's live view, so
compacted when the engine compacted) and writes the run's new items at its end
(``add_items``). The model-input filter runs before every model call of the
run: new items are committed first, then the engine assembles the input, so a
long tool loop inside one run is compacted too. The filter works with any SDK
session (or none): it mirrors whatever input the SDK passes.

Items are converted to chat messages here (Responses-API messages, function
calls and their outputs); reasoning and other hosted-tool items are not kept
(the store holds chat messages).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from agents import FunctionTool
from agents.models.fake_id import FAKE_RESPONSES_ID
from agents.run_config import CallModelData, ModelInputData

from ..contract.messages import strip_persistence_fields
from .bridge import HistoryBridge

log = logging.getLogger("ctxengine.integrations")

Message = dict[str, Any]
Item = dict[str, Any]


class EngineSession:
    """The SDK's ``Session`` protocol over a ctxengine session (a Session or AsyncSession)."""

    def __init__(self, session: Any, *, session_settings: Any = None) -> None:
        self.bridge = HistoryBridge(session)
        self.session_id = self.bridge.session.session_id
        self.session_settings = session_settings
        self._served: list[Item] = []
        self._added: list[Item] = []

    # -------------------------------------------------------------- Session protocol

    async def get_items(self, limit: int | None = None) -> list[Item]:
        """The live view as input items (the newest ``limit`` when given)."""
        live = await self.bridge.offload(self.bridge.session.messages)
        items = chat_to_items([strip_persistence_fields(m) for m in live])
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        self._served, self._added = items, []
        self.bridge.remember(items_to_chat(items))
        return items

    async def add_items(self, items: list[Item]) -> None:
        """Store the run's new items (those the model-input filter has not stored already)."""
        self._added.extend(dict(i) for i in items)
        chat = items_to_chat([*self._served, *self._added])
        await self.bridge.offload(self._commit, chat)

    def _commit(self, chat: list[Message]) -> None:
        self.bridge.commit(chat)
        if chat and chat[-1].get("role") == "assistant" and not chat[-1].get("tool_calls"):
            self.bridge.finish_turn()  # the run ended with the model's answer

    async def pop_item(self) -> Item | None:
        raise NotImplementedError(
            "ctxengine never deletes a stored message; use clear_session() to start the "
            "conversation over (the transcript keeps every row)"
        )

    async def clear_session(self) -> None:
        """The live view empties (the stored rows stay); the next run starts afresh."""
        await self.bridge.offload(self.bridge.session.reset)
        self._served, self._added = [], []
        self.bridge.forget()

    # -------------------------------------------------------------- model-input filter

    async def call_model_input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """``RunConfig(call_model_input_filter=...)``: the engine's context for this call."""
        model_data = data.model_data
        try:
            head = [{"role": "system", "content": model_data.instructions}]
            chat = [*(head if model_data.instructions else []), *items_to_chat(model_data.input)]
        except Exception:
            log.exception("could not read the SDK's model input; it is sent unchanged")
            return model_data
        assembled = await self.bridge.aassemble(chat)
        if assembled is None:
            return model_data
        system = [m for m in assembled if m.get("role") in ("system", "developer")]
        rest = assembled[len(system) :] if assembled[: len(system)] == system else assembled
        instructions = "\n\n".join(str(m.get("content") or "") for m in system) or None
        return ModelInputData(input=chat_to_items(rest), instructions=instructions)

    # -------------------------------------------------------------- tools

    def tools(self) -> list[FunctionTool]:
        """The engine's tools as SDK function tools."""
        return [self._tool(t.name, t.description, t.parameters) for t in self.bridge.engine_tools()]

    def _tool(self, name: str, description: str, parameters: dict[str, Any]) -> FunctionTool:
        bridge = self.bridge

        async def invoke(_context: Any, arguments: str) -> str:
            return await bridge.acall_tool(name, arguments)

        return FunctionTool(
            name=name,
            description=description,
            params_json_schema=parameters,
            on_invoke_tool=invoke,
            strict_json_schema=False,
        )


def items_to_chat(items: list[Any]) -> list[Message]:
    """Responses-API input items as chat messages; a model's function calls join its message."""
    out: list[Message] = []
    for raw in items:
        item = raw if isinstance(raw, dict) else _as_dict(raw)
        kind, role = item.get("type"), item.get("role")
        if kind == "function_call":
            call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item.get("arguments") or "{}"},
            }
            if out and out[-1]["role"] == "assistant":
                out[-1].setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else json.dumps(output)
            out.append({"role": "tool", "tool_call_id": item["call_id"], "content": text})
        elif role in ("system", "developer"):
            out.append({"role": "system", "content": _text(item.get("content"))})
        elif role == "user":
            out.append({"role": "user", "content": _text(item.get("content"))})
        elif role == "assistant":
            out.append({"role": "assistant", "content": _text(item.get("content")) or None})
        # reasoning, hosted-tool and other items have no chat form: not kept
    return out


def chat_to_items(messages: list[Message]) -> list[Item]:
    """Chat messages as Responses-API input items."""
    items: list[Item] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content) if content else ""
        if role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.get("tool_call_id", ""),
                    "output": text,
                }
            )
        elif role == "assistant":
            if text:  # an output message, so that the calls below join it (as the SDK's own)
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "id": FAKE_RESPONSES_ID,
                        "status": "completed",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                )
            for call in message.get("tool_calls") or []:
                function = call.get("function", {})
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call["id"],
                        "name": function.get("name", ""),
                        "arguments": function.get("arguments") or "{}",
                    }
                )
        else:
            items.append({"role": "system" if role == "developer" else role, "content": text})
    return items


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        if isinstance(part, dict):
            if "text" in part:
                parts.append(str(part["text"]))
            elif "refusal" in part:
                parts.append(str(part["refusal"]))
            else:
                parts.append(f"[{part.get('type', 'part')}]")
    return "".join(parts)


def _as_dict(item: Any) -> Item:
    dump = getattr(item, "model_dump", None)
    return dump(exclude_unset=True) if callable(dump) else dict(item)
