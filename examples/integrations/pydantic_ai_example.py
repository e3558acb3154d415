"""A PydanticAI agent whose context the selected ctxengine engine assembles.

Runs offline: the model is PydanticAI's FunctionModel, which calls the tool once per
question and then answers. Swap in a real model ("openai:gpt-4o", ...) to use it for real.

    pip install "ctxengine-host[pydantic-ai]" ctxengine-lcm
    CTXENGINE_ENGINE=lcm python examples/integrations/pydantic_ai_example.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

try:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
except ImportError as exc:  # one line naming what to install, not a traceback
    raise SystemExit(
        f"pydantic_ai_example: {exc.name} is not installed: "
        'pip install "ctxengine-host[pydantic-ai]"'
    ) from None

from ctxengine_host import ContextHost
from ctxengine_host.integrations.pydantic_ai import EngineHistory


def scripted_model(messages, info: AgentInfo) -> ModelResponse:
    """Read the log for a new question; answer once the log came back."""
    last = messages[-1].parts[-1]
    if isinstance(last, ToolReturnPart):
        return ModelResponse(parts=[TextPart(f"The log says: {last.content[:40]}…")])
    return ModelResponse(parts=[ToolCallPart("read_log", {"job": "ci"}, tool_call_id="c1")])


def main() -> None:
    store = Path(tempfile.mkdtemp()) / "transcripts.db"
    with ContextHost(None, model="gpt-4o", context_length=8_000, store_path=store) as host:
        history = EngineHistory(host.open_session("example"))
        agent = Agent(
            FunctionModel(scripted_model),
            system_prompt="You fix flaky tests.",
            capabilities=[history.capability()],
            tools=history.tools(),  # the engine's own tools (lcm: lcm_grep, ...)
        )

        @agent.tool_plain
        def read_log(job: str) -> str:
            """Read the build log of a job."""
            return f"{job}: test_retry failed after 3 attempts (timeout 30 s)"

        result = None
        for question in ("Why is CI red?", "And how do I fix it?"):
            result = agent.run_sync(question, message_history=result and result.all_messages())
            history.finish_sync(result.all_messages())
            print(f"> {question}\n{result.output}")
        stored = len(host.store.rows("example"))
        print(f"engine {host.engine_name}: {stored} messages stored in {store}")


if __name__ == "__main__":
    main()
