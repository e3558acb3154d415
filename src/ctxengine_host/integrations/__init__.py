"""Adapters for agent frameworks; each module needs its framework (an optional extra).

* :mod:`.openai_agents` — OpenAI Agents SDK: a ``Session`` and a model-input filter.
* :mod:`.pydantic_ai` — PydanticAI: a history processor.
* :mod:`.langchain` — LangChain ``create_agent`` middleware and LangGraph ``pre_model_hook``.
* :mod:`.litellm` — LiteLLM: model windows and token counts, a summarizer backend.

All of them share :mod:`.bridge` (chat-message terms); see docs/integrations.md.
"""
