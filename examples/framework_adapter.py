"""A ctxengine engine driven the way a framework-style agent loop drives its engine.

    .venv/bin/python examples/framework_adapter.py

`FrameworkEngineAdapter` gives any ctxengine engine the framework ABC's method set
(docs/compat.md). Here the default engine, `legacy`, is wrapped and fed a long
conversation in a 3,000-token window; the loop compacts whenever the engine says so.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ctxengine_host.discovery.compat import FrameworkEngineAdapter
from ctxengine_host.testing import samples
from ctxengine_host.testing.context import kit_engine_context
from ctxengine_host.tokens import TokenCounter
from ctxengine_legacy.engine import LegacyEngine


def main() -> None:
    counter = TokenCounter("gpt-4")
    with tempfile.TemporaryDirectory() as data:
        context = kit_engine_context("legacy", Path(data), counter)
        engine = FrameworkEngineAdapter(LegacyEngine(context=context))
        engine.update_model("gpt-4", 3000)
        engine.on_session_start("demo")
        history = [{"role": "system", "content": "You are a careful coding assistant."}]
        for turn in range(30):
            history.append(samples.user_message("demo", turn))
            request = engine.select_context(list(history), budget_tokens=2500) or history
            tokens = counter.count_messages(request)
            engine.update_from_response(
                {"prompt_tokens": tokens, "completion_tokens": 60, "total_tokens": tokens + 60}
            )
            history.extend(samples.turn_messages("demo", turn))
            engine.on_turn_complete(list(history))
            if engine.should_compress():
                before = len(history)
                history = engine.compress(history, current_tokens=tokens)
                print(f"turn {turn:2}: compacted {before} -> {len(history)} messages")
        engine.on_session_end("demo", history)
        print("status:", engine.get_status())


if __name__ == "__main__":
    main()
