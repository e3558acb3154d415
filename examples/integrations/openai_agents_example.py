"""An OpenAI Agents SDK agent with its session kept, and its model input assembled, by ctxengine.

Needs an OpenAI-compatible endpoint: OPENAI_API_KEY (and OPENAI_BASE_URL for another server).

    pip install "ctxengine-host[openai-agents]" ctxengine-lcm
    CTXENGINE_ENGINE=lcm python examples/integrations/openai_agents_example.py
"""

from __future__ import annotations

import asyncio

try:
    from agents import Agent, RunConfig, Runner, function_tool
except ImportError as exc:  # one line naming what to install, not a traceback
    raise SystemExit(
        f"openai_agents_example: {exc.name} is not installed: "
        'pip install "ctxengine-host[openai-agents]"'
    ) from None

from ctxengine_host import ContextHost
from ctxengine_host.integrations.openai_agents import EngineSession


@function_tool
def read_log(job: str) -> str:
    """Read the build log of a job."""
    return f"{job}: test_retry failed after 3 attempts (timeout 30 s)"


async def main() -> None:
    with ContextHost.from_config(model="gpt-4o-mini", context_length=128_000) as host:
        memory = EngineSession(host.open_session("agents-example"))
        agent = Agent(
            name="fixer",
            instructions="You fix flaky tests. Read the log before answering.",
            model="gpt-4o-mini",
            tools=[read_log, *memory.tools()],
        )
        config = RunConfig(call_model_input_filter=memory.call_model_input_filter)
        for question in ("Why is CI red?", "And how do I fix it?"):
            result = await Runner.run(agent, question, session=memory, run_config=config)
            print(f"> {question}\n{result.final_output}")


if __name__ == "__main__":
    asyncio.run(main())
