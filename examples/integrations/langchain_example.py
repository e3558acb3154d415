"""LangChain create_agent and LangGraph create_react_agent on a ctxengine engine's context.

Needs an OpenAI-compatible endpoint: OPENAI_API_KEY (and OPENAI_BASE_URL for another server).

    pip install "ctxengine-host[langchain,langgraph]" langchain-openai ctxengine-lcm
    CTXENGINE_ENGINE=lcm python examples/integrations/langchain_example.py
"""

from __future__ import annotations

try:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
except ImportError as exc:  # one line naming what to install, not a traceback
    raise SystemExit(
        f"langchain_example: {exc.name} is not installed: "
        'pip install "ctxengine-host[langchain,langgraph]" langchain-openai'
    ) from None

from ctxengine_host import ContextHost
from ctxengine_host.integrations.langchain import EngineContext

SYSTEM = "You fix flaky tests. Read the log before answering."


@tool
def read_log(job: str) -> str:
    """Read the build log of a job."""
    return f"{job}: test_retry failed after 3 attempts (timeout 30 s)"


def converse(agent, context: EngineContext) -> None:
    state = {"messages": []}
    for question in ("Why is CI red?", "And how do I fix it?"):
        state = agent.invoke({"messages": [*state["messages"], HumanMessage(question)]})
        print(f"> {question}\n{state['messages'][-1].content}")
    context.finish(state)


def main() -> None:
    model = ChatOpenAI(model="gpt-4o-mini")
    with ContextHost.from_config(model="gpt-4o-mini", context_length=128_000) as host:
        context = EngineContext(host.open_session("langchain-example"))
        tools = [read_log, *context.tools()]
        converse(
            create_agent(model, tools, system_prompt=SYSTEM, middleware=[context.middleware()]),
            context,
        )

        graph_context = EngineContext(host.open_session("langgraph-example", system_prompt=SYSTEM))
        tools = [read_log, *graph_context.tools()]
        graph = create_react_agent(model, tools, pre_model_hook=graph_context.pre_model_hook)
        converse(graph, graph_context)


if __name__ == "__main__":
    main()
