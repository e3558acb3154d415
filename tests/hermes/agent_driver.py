"""Run inside the ``hermes`` framework environment: Hermes's own AIAgent, several turns.

Usage: python agent_driver.py BASE_URL TURNS OUT.json (HERMES_HOME set by the test).
Each user message carries a long filler so the real loop reaches its compaction
threshold; turn 1 plants a fact and the last turn asks the model to search for it.
Writes what the agent did (engine class and name, compression count, messages,
final responses) to OUT.json; Hermes's log goes to stderr.
"""

from __future__ import annotations

import json
import logging
import sys

FILLER = " ".join(f"word{i % 97}" for i in range(4800))


def main() -> None:
    base_url, turns, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(name)s %(levelname)s %(message)s"
    )
    from run_agent import AIAgent

    agent = AIAgent(
        base_url=base_url,
        api_key="scripted-key",
        provider="custom",
        model="scripted-model",
        max_iterations=6,
        tool_delay=0,
        enabled_toolsets=["context_engine"],
        quiet_mode=False,
        skip_context_files=True,
        skip_memory=True,
        platform="cli",
    )
    history: list = []
    finals = []
    for turn in range(turns):
        if turn == 1:
            text = "Remember this: the vault code is 7141-quartz."
        elif turn == turns - 1:
            text = "SEARCH-HISTORY: what was the vault code?"
        else:
            text = f"Turn {turn}. Please note this background. {FILLER}"
        result = agent.run_conversation(text, conversation_history=history)
        history = result.get("messages") or history
        finals.append(result.get("final_response"))
    report = {
        "engine_class": type(agent.context_compressor).__name__,
        "engine_name": getattr(agent.context_compressor, "name", None),
        "compression_count": agent.context_compressor.compression_count,
        "context_length": agent.context_compressor.context_length,
        "finals": finals,
        "tool_messages": [m for m in history if m.get("role") == "tool"],
    }
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(report, fh, default=str)


if __name__ == "__main__":
    main()
