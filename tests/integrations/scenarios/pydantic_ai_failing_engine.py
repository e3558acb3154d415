"""A PydanticAI agent over an engine that breaks mid-conversation: the default engine takes
over, the agent finishes, nothing is lost.

Usage: python pydantic_ai_failing_engine.py STORE_PATH
"""

from __future__ import annotations

import sys

from common import RESERVE_OUTPUT_TOKENS, report, require_stored, tool_output
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ctxengine_host.config import load_config
from ctxengine_host.integrations.pydantic_ai import EngineHistory
from ctxengine_host.runtime.host import ContextHost
from ctxengine_host.stores.quarantine import QuarantineLog
from ctxengine_legacy.engine import LegacyEngine


class BreaksOnThirdRequest(LegacyEngine):
    """Raises from select_context once the conversation has three user messages."""

    name = "breaks-on-third-request"

    def select_context(self, request_messages, conversation_messages, budget_tokens=None):
        if sum(1 for m in conversation_messages if m["role"] == "user") >= 3:
            raise RuntimeError("the engine broke")
        return None


def main(store_path: str) -> None:
    config = load_config(None)
    config.config.context.reserve_output_tokens = RESERVE_OUTPUT_TOKENS
    host = ContextHost(
        BreaksOnThirdRequest(),
        model="gpt-4o",
        context_length=3000,
        config=config,
        store_path=store_path,
    )
    history = EngineHistory(host.open_session("breaking"))

    def model(messages, info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(f"answer after {len(messages)} messages")])
        return ModelResponse(parts=[ToolCallPart("read_log", {"turn": len(messages)})])

    agent = Agent(FunctionModel(model), capabilities=[history.capability()])

    @agent.tool_plain
    def read_log(turn: int) -> str:
        """Read the build log of one run."""
        return tool_output(turn)

    prompts = [f"question {i}" for i in range(5)]
    result = None
    for prompt in prompts:
        result = agent.run_sync(prompt, message_history=result and result.all_messages())
        history.finish_sync(result.all_messages())
    status = history.bridge.session.status()
    assert status["mode"] == "fallback" and status["engine"] == "legacy", status
    [record] = QuarantineLog().records("breaks-on-third-request")
    assert record.method == "select_context", record
    assert history.bridge.fallbacks == 0  # the host's fallback answered; no call went unassembled
    require_stored(host, "breaking", [*prompts, result.output])
    host.close()
    report({"mode": status["mode"], "engine": status["engine"], "output": result.output})


if __name__ == "__main__":
    main(sys.argv[1])
