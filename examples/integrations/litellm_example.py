"""An agent loop on litellm.completion: the budget from LiteLLM's model map, summaries too.

Needs the provider's key for MODEL (e.g. ANTHROPIC_API_KEY, OPENAI_API_KEY, or a local Ollama).

    pip install "ctxengine-host[litellm]" ctxengine-lcm
    LITELLM_LOCAL_MODEL_COST_MAP=True CTXENGINE_ENGINE=lcm \
        python examples/integrations/litellm_example.py openai/gpt-4o-mini
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm is imported

try:
    import litellm
except ImportError as exc:  # one line naming what to install, not a traceback
    raise SystemExit(
        f'litellm_example: {exc.name} is not installed: pip install "ctxengine-host[litellm]"'
    ) from None

from ctxengine_host import ContextHost
from ctxengine_host.config import SummarizerSection, load_config
from ctxengine_host.integrations.litellm import litellm_budget


def main(model: str) -> None:
    config = load_config(None)
    config.config.summarizer = SummarizerSection(backend="litellm", model=model)
    with ContextHost(None, config=config, **litellm_budget(model)) as host:
        print(f"{model}: window {host.context_length} tokens, engine {host.engine_name}")
        with host.open_session(system_prompt="You answer in one sentence.") as session:
            for question in ("What is a flaky test?", "How do I find one?"):
                session.add_user_message(question)
                request = session.build_request()
                reply = litellm.completion(model=model, messages=request.messages)
                message = reply.choices[0].message
                session.record_response(
                    {"role": "assistant", "content": message.content}, reply.usage.model_dump()
                )
                session.finish_turn()
                print(f"> {question}\n{message.content}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "openai/gpt-4o-mini")
