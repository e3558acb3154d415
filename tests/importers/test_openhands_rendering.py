"""``ctxengine convert --from openhands`` keeps the text OpenHands showed the model.

A V1 tool result is what the agent SDK's ``to_llm_content`` makes of the observation
(``openhands-sdk``: the error header; ``openhands-tools``: a terminal's notes), and a V0
workspace context is what OpenHands' conversation memory renders from the ``recall``
observation (``additional_info.j2``, ``microagent_info.j2``). The samples are written
here in the shapes the SDK's and OpenHands' event serializers write.
"""

from __future__ import annotations

import json

from .test_convert import converted, roles

ERROR_HEADER = "[An error occurred during execution.]\n"


def v1_action(call_id: str, tool: str, arguments: dict, response: str) -> dict:
    action = {"kind": "TerminalAction", **arguments}
    return {
        "kind": "ActionEvent", "id": f"a-{call_id}", "timestamp": "2026-06-16T05:39:48.70",
        "source": "agent", "thought": [], "action": action, "tool_name": tool,
        "tool_call_id": call_id, "llm_response_id": response,
        "tool_call": {"id": call_id, "name": tool, "arguments": json.dumps(arguments)},
    }  # fmt: skip


def v1_result(call_id: str, tool: str, observation: dict, **extra) -> dict:
    return {
        "kind": "ObservationEvent", "id": f"o-{call_id}", "timestamp": "2026-06-16T05:39:49.10",
        "source": "environment", "tool_name": tool, "tool_call_id": call_id,
        "observation": observation, "action_id": f"a-{call_id}", **extra,
    }  # fmt: skip


def terminal(text: str, is_error: bool, **metadata) -> dict:
    """A ``TerminalObservation`` as the SDK dumps it (metadata defaults: no notes)."""
    notes = {
        "exit_code": -1, "pid": -1, "username": None, "hostname": None,
        "working_dir": None, "py_interpreter_path": None, "prefix": "", "suffix": "",
    }  # fmt: skip
    return {
        "kind": "TerminalObservation", "content": [{"type": "text", "text": text}],
        "is_error": is_error, "command": "pytest", "exit_code": metadata.get("exit_code"),
        "timeout": False, "metadata": notes | metadata, "full_output_save_dir": None,
    }  # fmt: skip


def test_v1_results_read_as_the_sdk_showed_them(tmp_path):
    """The SDK prepends its error header to a failed result and appends a terminal's
    notes (suffix, working directory, interpreter, exit code) and the context a result
    triggered (``extended_content``); only the observation's content was kept. A
    rejection reads ``Action rejected: …`` (it read ``[rejected by the user] …``)."""
    cut = "Cannot execute multiple commands at once.\nPlease run each command separately"
    failed = terminal("1 failed, 12 passed", False, exit_code=1, working_dir="/workspace/tides",
                      py_interpreter_path="/usr/local/bin/python",
                      suffix="\n[The command completed with exit code 1.]")  # fmt: skip
    text = [{"type": "text", "text": "Invalid `path` parameter: no such file."}]
    missing = {"kind": "FileEditorObservation", "is_error": True, "command": "view",
               "path": "/workspace/tides/tide.py", "content": text}  # fmt: skip
    rule = [{"type": "text", "text": "<RULE>Tests live in tests/.</RULE>"}]
    events = [
        {"kind": "MessageEvent", "id": "m1", "source": "user",
         "llm_message": {"role": "user", "content": [{"type": "text", "text": "Fix tides."}]}},
        v1_action("c1", "terminal", {"command": "cd tides\npytest"}, "r1"),
        v1_result("c1", "terminal", terminal(cut, True)),
        v1_action("c2", "terminal", {"command": "cd tides && pytest"}, "r2"),
        v1_result("c2", "terminal", failed),
        v1_action("c3", "file_editor", {"command": "view", "path": "tide.py"}, "r3"),
        v1_result("c3", "file_editor", missing, extended_content=rule),
        v1_action("c4", "terminal", {"command": "rm -rf tests"}, "r4"),
        {"kind": "UserRejectObservation", "id": "x4", "source": "user", "tool_name": "terminal",
         "tool_call_id": "c4", "rejection_reason": "Do not delete tests", "action_id": "a-c4"},
    ]  # fmt: skip
    report, parsed = converted(tmp_path, "openhands", events, "v1")
    assert roles(parsed) == ["user", *["assistant", "tool"] * 4]
    results = [m["content"] for m in parsed.messages if m["role"] == "tool"]
    assert results == [
        f"{ERROR_HEADER}\n{cut}",
        "1 failed, 12 passed\n[The command completed with exit code 1.]"
        "\n[Current working directory: /workspace/tides]"
        "\n[Python interpreter: /usr/local/bin/python]"
        "\n[Command finished with exit code 1]",
        f"{ERROR_HEADER}\nInvalid `path` parameter: no such file."
        "\n<RULE>Tests live in tests/.</RULE>",
        "Action rejected: Do not delete tests",
    ]
    assert report["repaired"] == {}


def v0_recall(event_id: int, cause: int, **extras) -> dict:
    """A ``RecallObservation`` as ``event_to_dict`` writes it."""
    return {"id": event_id, "timestamp": "2025-07-09T13:41:11.28", "source": "environment",
            "message": "Added workspace context", "cause": cause, "observation": "recall",
            "content": "Added workspace context", "extras": extras}  # fmt: skip


def v0_user(event_id: int, text: str) -> list[dict]:
    """A user's message and the memory's recall request it starts."""
    return [
        {"id": event_id, "timestamp": "2025-07-09T13:41:10.00", "source": "user",
         "message": text, "action": "message",
         "args": {"content": text, "image_urls": None, "wait_for_response": False}},
        {"id": event_id + 1, "timestamp": "2025-07-09T13:41:10.10", "source": "user",
         "message": f"Retrieving content for: {text}", "action": "recall",
         "args": {"recall_type": "workspace_context", "query": text, "thought": ""}},
    ]  # fmt: skip


GITHUB = {"name": "github", "trigger": "github", "content": "Use the GitHub API."}
DOCKER = {"name": "docker", "trigger": "container", "content": "Docker is installed."}


def test_v0_workspace_context_reads_as_openhands_memory_renders_it(tmp_path):
    """OpenHands shows a workspace context as its ``additional_info.j2`` template renders
    it, then the knowledge of the microagents the message triggered; a later recall
    shows only the microagents no earlier recall showed. The recall's fields were kept
    as ``key: value`` lines (a triggered microagent as JSON)."""
    context = v0_recall(
        3, 2, recall_type="workspace_context", repo_name="acme/tides", repo_directory="tides",
        repo_branch="", repo_instructions="Run the tests with `make test`.",
        runtime_hosts={"http://localhost:51234": 51234}, additional_agent_instructions="",
        date="2025-07-09", custom_secrets_descriptions={}, conversation_instructions="",
        working_dir="/workspace", microagent_knowledge=[GITHUB],
    )  # fmt: skip
    knowledge = v0_recall(7, 6, recall_type="knowledge", microagent_knowledge=[GITHUB, DOCKER])
    again = v0_recall(11, 10, recall_type="knowledge", microagent_knowledge=[DOCKER])
    done = {"id": 12, "source": "agent", "action": "message", "args": {"content": "Done."}}
    events = [
        *v0_user(1, "Push the tide fix to github"), context,
        {"id": 4, "source": "agent", "action": "message", "args": {"content": "Pushed."}},
        *v0_user(5, "Now run it in a container"), knowledge,
        *v0_user(9, "And the container logs?"), again, done,
    ]  # fmt: skip
    report, parsed = converted(tmp_path, "openhands", events, "v0")
    assert roles(parsed) == ["user", "user", "assistant", "user", "user", "user", "assistant"]
    workspace, knowledge_shown = parsed.messages[1]["content"], parsed.messages[4]["content"]
    assert workspace == (
        "<REPOSITORY_INFO>\n"
        "At the user's request, repository acme/tides has been cloned to tides"
        " in the current working directory.\n"
        "\n</REPOSITORY_INFO>\n\n"
        "<REPOSITORY_INSTRUCTIONS>\nRun the tests with `make test`.\n"
        "</REPOSITORY_INSTRUCTIONS>\n\n"
        "<RUNTIME_INFORMATION>\n\n"
        "The current working directory is /workspace\n\n\n"
        "The user has access to the following hosts for accessing a web application,\n"
        "each of which has a corresponding port:\n"
        "* http://localhost:51234 (port 51234)\n\n"
        "When starting a web server, use the corresponding ports. You should also\n"
        "set any options to allow iframes and CORS requests, and allow the server to\n"
        "be accessed from any host (e.g. 0.0.0.0).\n"
        "For example, if you are using vite.config.js, you should set server.host and"
        " server.allowedHosts to true\n\n\n\n\n"
        "Today's date is 2025-07-09 (UTC).\n\n"
        "</RUNTIME_INFORMATION>\n"
        "<EXTRA_INFO>\n"
        'The following information has been included based on a keyword match for "github".\n'
        "It may or may not be relevant to the user's request.\n\n"
        "Use the GitHub API.\n"
        "</EXTRA_INFO>"
    )
    assert knowledge_shown == (
        "<EXTRA_INFO>\n"
        'The following information has been included based on a keyword match for "container".\n'
        "It may or may not be relevant to the user's request.\n\n"
        "Docker is installed.\n"
        "</EXTRA_INFO>"
    )
    shown_nothing = "'recall' observations that show the model nothing (knowledge shown before)"
    assert report["dropped"][shown_nothing] == 1
