"""``ctxengine convert --from swe-agent|mini-swe-agent`` on the shapes real runs write.

A SWE-agent 1.0-era run keeps its last step (the ``submit`` and the diff) only in
``trajectory``, and SWE-agent 1.x records there the attempts it requeried (never in the
history): the trajectory was dropped whole as "a second copy of the history". A
mini-swe-agent 2.2 message carries ``"function_call": null``, ``"annotations": []``,
``"provider_specific_fields": {"refusal": null}``: reported as fields not kept, though
they hold nothing. The trajectories are written here in the shapes those tools save.
"""

from __future__ import annotations

import json

import pytest

from .test_convert import converted, roles

COPY = "trajectory steps (a second copy of the history)"
APPENDED = "trajectory steps not in the history (appended)"
REQUERIED = "trajectory steps not in the history (requeried attempts)"
DIVERGED = "trajectory steps not in the history (after history steps they do not copy)"
BOOKKEEPING = "SWE-agent bookkeeping (agent, message_type, thought, action)"


def call(call_id: str, name: str, arguments: dict) -> dict:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"id": call_id, "type": "function", "function": function}


def answer(text: str, action: str, *calls: dict) -> dict:
    """An assistant message as SWE-agent's ``add_step_to_history`` writes it."""
    message = {"role": "assistant", "content": text, "thought": text, "action": action,
               "agent": "main", "message_type": "action"}  # fmt: skip
    if calls:
        message["tool_calls"] = list(calls)
    return message


def observation(text: str, call_id: str | None = None) -> dict:
    message = {"role": "user", "content": text, "agent": "main", "message_type": "observation"}
    if call_id:
        message |= {"role": "tool", "tool_call_ids": [call_id]}
    return message


def step(text: str, action: str, seen: str, **extra) -> dict:
    """A trajectory step as SWE-agent's ``add_step_to_trajectory`` writes it."""
    return {"action": action, "observation": seen, "response": text, "thought": text,
            "execution_time": 0.25, "state": {"working_dir": "/repo"}, **extra}  # fmt: skip


OPENING = [
    {"role": "system", "content": "You are a programmer.", "agent": "main",
     "message_type": "system_prompt"},
    {"role": "user", "content": "Fix the tide table.", "agent": "main",
     "message_type": "observation"},
]  # fmt: skip
STEPS = [
    ("I will look for the table.", "find_file tides.csv", "Found 1 match: data/tides.csv"),
    ("Now I run the check.", "python3 check.py", "all 12 tides ok"),
]
#: The tool calls the model made for STEPS.
CALLS = [("find_file", {"file_name": "tides.csv"}), ("bash", {"command": "python3 check.py"})]
DIFF = "diff --git a/data/tides.csv b/data/tides.csv\n+06:12,high\n"


def tool_call_run() -> dict:
    """Two steps in the history (tool calls); the trajectory also holds the last one."""
    history = [*OPENING]
    for number, (text, action, seen) in enumerate(STEPS, 1):
        made = call(f"call_{number}", *CALLS[number - 1])
        history += [answer(text, action, made), observation(seen, made["id"])]
    trajectory = [step(*s) for s in STEPS]
    trajectory.append(step("The check passes; submitting.", "submit", DIFF, timestamp=1764747995.5))
    return {"environment": "main", "trajectory": trajectory, "history": history, "info": {}}


def test_swe_agent_last_step_only_in_the_trajectory_is_appended_as_a_call(tmp_path):
    """The 1.0-era run's last step (its response, ``submit``, the diff) was lost, and
    the three trajectory steps were reported as a copy of the history (it holds two)."""
    report, parsed = converted(tmp_path, "swe-agent", tool_call_run(), name="traj")
    assert roles(parsed) == ["system", "user", "assistant", "tool", "assistant", "tool",
                             "assistant", "tool"]  # fmt: skip
    last, result = parsed.messages[-2:]
    assert last["content"] == "The check passes; submitting."
    assert [c["function"] for c in last["tool_calls"]] == [{"name": "submit", "arguments": "{}"}]
    assert result["tool_call_id"] == last["tool_calls"][0]["id"]
    assert result["content"] == DIFF
    assert last["timestamp"] == result["timestamp"] == 1764747995.5
    assert report["dropped"] == {BOOKKEEPING: 6, COPY: 2}
    assert report["repaired"] == {APPENDED: 1}
    assert report["messages"] == 8


def test_swe_agent_appended_command_is_the_shell_line_swe_agent_ran(tmp_path):
    """An action that is not a tool given alone is the command SWE-agent ran in its
    shell: a ``bash`` call."""
    run = tool_call_run()
    run["trajectory"][-1] |= {"action": "python3 check.py --all\n", "observation": "ok"}
    _, parsed = converted(tmp_path, "swe-agent", run, name="traj")
    function = parsed.messages[-2]["tool_calls"][0]["function"]
    assert function["name"] == "bash"
    assert json.loads(function["arguments"]) == {"command": "python3 check.py --all\n"}
    assert parsed.messages[-1]["content"] == "ok"


def test_swe_agent_last_step_of_a_text_history_is_appended_as_text(tmp_path):
    """A history without tool calls (the action in the model's text): the step is the
    model's text, its observation a user message."""
    history = [*OPENING]
    trajectory = []
    for text, action, seen in STEPS:
        said = f"{text}\n```\n{action}\n```"
        history += [answer(said, action), observation(seen)]
        trajectory.append(step(said, action, seen))
    trajectory.append(step("Submitting.\n```\nsubmit\n```", "submit", DIFF))
    run = {"trajectory": trajectory, "history": history}
    report, parsed = converted(tmp_path, "swe-agent", run, name="traj")
    assert roles(parsed)[-2:] == ["assistant", "user"]
    assert parsed.messages[-2] == {"role": "assistant", "content": "Submitting.\n```\nsubmit\n```"}
    assert parsed.messages[-1]["content"] == DIFF
    assert not any(m.get("tool_calls") for m in parsed.messages)
    assert report["dropped"][COPY] == 2 and report["repaired"] == {APPENDED: 1}


def test_swe_agent_trajectory_equal_to_the_history_adds_nothing(tmp_path):
    run = tool_call_run()
    run["trajectory"].pop()
    report, parsed = converted(tmp_path, "swe-agent", run, name="traj")
    assert len(parsed.messages) == 6
    assert report["dropped"] == {BOOKKEEPING: 6, COPY: 2}
    assert report["repaired"] == {}


def test_swe_agent_requeried_attempts_are_reported_as_such(tmp_path):
    """SWE-agent 1.x puts an attempt it requeried (a format error, a blocked command) in
    the trajectory, never in the history; an attempt the model repeated word for word is
    a requery too, the later step the one that ran. A step the model really repeated
    (run twice, both in the history) is a copy each time."""
    run = tool_call_run()
    run["trajectory"].pop()
    unparsed = step("I will run the check without a tool call.", "", "", execution_time=0.0)
    repeated = step(*STEPS[1], execution_time=0.0) | {"observation": ""}
    run["trajectory"][1:1] = [unparsed, repeated]
    run["history"] += [answer(STEPS[1][0], STEPS[1][1], call("call_3", "bash", {"command": "x"})),
                       observation(STEPS[1][2], "call_3")]  # fmt: skip
    run["trajectory"].append(step(*STEPS[1]))
    report, parsed = converted(tmp_path, "swe-agent", run, name="traj")
    assert len(parsed.messages) == 8
    assert report["dropped"][COPY] == 3
    assert report["dropped"][REQUERIED] == 2
    assert APPENDED not in report["repaired"]


def test_swe_agent_last_steps_append_only_what_ran_after_the_history(tmp_path):
    """Of the steps after the history, an attempt that never ran (no observation, an
    ``execution_time`` of 0) before the next is a requery, not a message; where the
    history's last answer is no step of the trajectory, the two end differently and the
    steps after are reported, not appended after an answer they may repeat."""
    run = tool_call_run()
    run["trajectory"].insert(2, step("Submit without a call.", "", "", execution_time=0))
    report, parsed = converted(tmp_path, "swe-agent", run, name="traj")
    assert [m.get("content") for m in parsed.messages[-2:]] == [
        "The check passes; submitting.",
        DIFF,
    ]
    assert report["dropped"][REQUERIED] == 1 and report["repaired"] == {APPENDED: 1}

    run = tool_call_run()
    run["history"][-2]["content"] = run["history"][-2]["thought"] = "Edited by hand."
    run["history"][-2]["action"] = "python3 check.py -v"
    report, parsed = converted(tmp_path, "swe-agent", run, name="traj")
    assert len(parsed.messages) == 6
    assert report["dropped"][COPY] == 1
    assert report["dropped"][DIVERGED] == 2
    assert report["repaired"] == {}


MINI_EMPTY = {
    "function_call": None,
    "annotations": [],
    "provider_specific_fields": {"refusal": None},
}


def mini_run(**fields) -> dict:
    """A mini-swe-agent 2.2 tool-call trajectory; ``fields`` on each assistant message."""
    assistant = {"role": "assistant", "content": "Listing.", **fields,
                 "tool_calls": [call("call_ls", "bash", {"command": "ls"})],
                 "extra": {"timestamp": 1764747991.6, "cost": 0.01}}  # fmt: skip
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "List the files."},
        assistant,
        {"role": "tool", "tool_call_id": "call_ls", "content": "tides.csv"},
        {**assistant, "content": "Done.", "tool_calls": []},
    ]
    return {"trajectory_format": "mini-swe-agent-1.1", "messages": messages, "info": {}}


def test_mini_swe_agent_empty_message_fields_are_not_reported(tmp_path):
    report, parsed = converted(tmp_path, "mini-swe-agent", mini_run(**MINI_EMPTY))
    assert len(parsed.messages) == 5
    assert not [reason for reason in report["dropped"] if "message fields" in reason]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("annotations", [{"type": "url_citation", "url": "https://example.org/tides"}]),
        ("provider_specific_fields", {"refusal": "I cannot do that."}),
        ("function_call", {"name": "bash", "arguments": "{}"}),
    ],
)
def test_mini_swe_agent_message_fields_holding_something_are_still_reported(tmp_path, field, value):
    report, _ = converted(tmp_path, "mini-swe-agent", mini_run(**(MINI_EMPTY | {field: value})))
    assert report["dropped"][f"'{field}' message fields (no Chat form)"] == 2
    others = set(MINI_EMPTY) - {field}
    assert not [r for r in report["dropped"] if any(f"'{o}'" in r for o in others)]
