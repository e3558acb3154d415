"""Write importer samples with the real libraries' own serializers (run in .envs/agents).

Usage: python make_samples.py OUT_DIR. Writes, with no network and no model:

* ``langchain.json`` — ``langchain_core.messages.messages_to_dict`` of a tool loop;
* ``langchain-dumpd.json`` — the same messages through ``langchain_core.load.dumpd``;
* ``agents-session.db`` — an OpenAI Agents SDK ``SQLiteSession`` written by ``Runner``
  driving an agent with a function tool (a scripted ``Model`` plays the LLM);
* ``mini-text.traj.json``, ``mini-toolcall.traj.json`` — mini-swe-agent trajectories
  saved by ``DefaultAgent.save`` (its scripted test models play the LLM; the commands
  are ``echo`` lines run by ``LocalEnvironment``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")


def langchain_samples(out: Path) -> None:
    from langchain_core.load import dumpd
    from langchain_core.messages import (
        AIMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
        messages_to_dict,
    )

    messages = [
        SystemMessage("You are a coding agent."),
        HumanMessage("Which port does the exporter use?"),
        AIMessage(
            "",
            tool_calls=[{"name": "grep", "args": {"pattern": "port"}, "id": "call_1"}],
            response_metadata={"model_name": "gpt-test"},
            usage_metadata={"input_tokens": 12, "output_tokens": 5, "total_tokens": 17},
        ),
        ToolMessage("exporter.yaml: port: 46942", tool_call_id="call_1"),
        AIMessage("The exporter listens on 46942."),
    ]
    (out / "langchain.json").write_text(json.dumps(messages_to_dict(messages), indent=1))
    (out / "langchain-dumpd.json").write_text(json.dumps([dumpd(m) for m in messages]))


def agents_sample(out: Path) -> None:
    from agents import Agent, ModelResponse, Runner, SQLiteSession, Usage, function_tool
    from agents.models.interface import Model
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage

    @function_tool
    def read_file(path: str) -> str:
        """Read a file of the project."""
        return f"contents of {path}: PORT = 46942"

    class ScriptedModel(Model):
        """Answers with a tool call first, then with text: the LLM's part, scripted."""

        def __init__(self) -> None:
            self.calls = 0

        async def get_response(self, *args, **kwargs):
            self.calls += 1
            if self.calls == 1:
                item = ResponseFunctionToolCall(
                    type="function_call",
                    id="fc_1",
                    call_id="call_1",
                    name="read_file",
                    arguments='{"path": "settings.py"}',
                    status="completed",
                )
            else:
                item = ResponseOutputMessage(
                    id=f"msg_{self.calls}",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[{"type": "output_text", "text": "It is 46942.", "annotations": []}],
                )
            return ModelResponse(output=[item], usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    agent = Agent(name="coder", instructions="Answer briefly.", tools=[read_file])
    agent.model = ScriptedModel()
    session = SQLiteSession("s1", str(out / "agents-session.db"))
    asyncio.run(Runner.run(agent, "Which port is configured?", session=session))
    items = asyncio.run(session.get_items())
    (out / "agents-items.json").write_text(json.dumps(items))


def mini_samples(out: Path) -> None:
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.test_models import (
        DeterministicModel,
        DeterministicToolcallModel,
        make_output,
        make_toolcall_output,
    )

    submit = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo done"
    templates = {
        "system_template": "You are a helpful assistant that runs bash commands.",
        "instance_template": "Task: {{task}}",
        "step_limit": 10,
    }
    text_model = DeterministicModel(
        outputs=[
            make_output(
                "Look first.\n```mswea_bash_command\necho port=46942\n```",
                [{"command": "echo port=46942"}],
            ),
            make_output(f"Submit.\n```mswea_bash_command\n{submit}\n```", [{"command": submit}]),
        ]
    )
    agent = DefaultAgent(text_model, LocalEnvironment(), **templates)
    agent.run("find the port")
    agent.save(out / "mini-text.traj.json")

    def call(call_id: str, command: str) -> dict:
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})},
        }

    tool_model = DeterministicToolcallModel(
        outputs=[
            make_toolcall_output(
                "Looking.",
                [call("call_1", "echo port=46942")],
                [{"command": "echo port=46942", "tool_call_id": "call_1"}],
            ),
            make_toolcall_output(
                None, [call("call_2", submit)], [{"command": submit, "tool_call_id": "call_2"}]
            ),
        ]
    )
    agent = DefaultAgent(tool_model, LocalEnvironment(), **templates)
    agent.run("find the port")
    agent.save(out / "mini-toolcall.traj.json")


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    langchain_samples(target)
    agents_sample(target)
    mini_samples(target)
    print("samples written to", target)
