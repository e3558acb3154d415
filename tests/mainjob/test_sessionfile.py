"""Session files and ``ctxengine validate``: shapes, ordering rules, line numbers, gzip."""

from __future__ import annotations

import gzip
import json

from ctxengine_host.replay.probes import check_probes
from ctxengine_host.replay.sessionfile import parse_session

from .conftest import LONG, SHORT, run_cli

USER = {"role": "user", "content": "hello"}
ASSISTANT = {"role": "assistant", "content": "hi"}
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
    ],
}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "no matches"}


def jsonl(*messages: object) -> str:
    return "".join((m if isinstance(m, str) else json.dumps(m)) + "\n" for m in messages)


def errors_at(text: str) -> list[tuple[int | None, str]]:
    return [(p.line, p.message) for p in parse_session(text).errors]


def test_a_valid_session_has_no_problems_and_groups_turns() -> None:
    parsed = parse_session(jsonl({"role": "system", "content": "s"}, USER, CALL, RESULT, ASSISTANT))
    assert parsed.problems == []
    assert parsed.system_prompt == "s"
    [turn] = parsed.turns()
    assert turn.user == [USER] and len(turn.replies) == 3


def test_malformed_json_is_reported_with_its_line_number() -> None:
    [(line, message)] = errors_at(jsonl(USER, ASSISTANT, '{"role": "user", "content": '))
    assert line == 3 and "invalid JSON" in message


def test_message_shape_problems_name_the_line() -> None:
    text = jsonl(USER, {"role": "robot", "content": "x"}, {"role": "assistant"}, "[1, 2]")
    found = errors_at(text)
    assert [line for line, _ in found] == [2, 3, 4]
    assert "'role' must be one of" in found[0][1]
    assert "needs 'content' or 'tool_calls'" in found[1][1]
    assert "expected a message object" in found[2][1]


def test_tool_ordering_rules() -> None:
    orphan = errors_at(jsonl(USER, RESULT))
    assert orphan[0][0] == 2 and "does not answer a call" in orphan[0][1]
    unanswered = errors_at(jsonl(USER, CALL, USER))
    assert unanswered[0][0] == 2 and "not answered before the next user" in unanswered[0][1]
    trailing = errors_at(jsonl(USER, CALL))
    assert trailing[0][0] == 2 and "no result" in trailing[0][1]


def test_system_later_and_conversation_not_starting_with_user() -> None:
    found = errors_at(jsonl(ASSISTANT, USER, {"role": "system", "content": "late"}))
    assert (1, "the conversation must start with a user message, not assistant") in found
    assert found[1][0] == 3 and "system message after the conversation" in found[1][1]


def test_usage_is_checked_on_assistant_lines() -> None:
    bad = dict(ASSISTANT, usage={"prompt_tokens": -1, "completion_tokens": 2})
    [(line, message)] = errors_at(jsonl(USER, bad))
    assert line == 2 and "usage.prompt_tokens must be a non-negative integer" in message
    good = parse_session(
        jsonl(USER, dict(ASSISTANT, usage={"prompt_tokens": 5, "completion_tokens": 2}))
    )
    assert good.errors == [] and good.usages[1] == {"prompt_tokens": 5, "completion_tokens": 2}


def test_json_array_form_reports_lines_too() -> None:
    text = "[\n" + json.dumps(USER) + ",\n" + json.dumps(ASSISTANT) + ',\n{"role": 7}\n]\n'
    parsed = parse_session(text)
    assert len(parsed.messages) == 2
    assert [(p.line, "'role' must be one of" in p.message) for p in parsed.errors] == [(4, True)]


def test_empty_file_is_an_error() -> None:
    assert "empty" in errors_at("\n\n")[0][1]


def test_probe_file_for_another_session_is_rejected() -> None:
    parsed = parse_session(jsonl(USER, ASSISTANT))
    document = {
        "message_count": 2,
        "probes": [{"question": "what?", "answer": "zebra", "message_index": 0, "turn": 1}],
    }
    probes, problems = check_probes(document, parsed)
    assert probes == [] and "not in message 0" in problems[0].message
    document["message_count"] = 9
    assert "belongs to another session" in check_probes(document, parsed)[1][0].message
    leaked = {"probes": [{"question": "is it hello?", "answer": "hello", "message_index": 0}]}
    assert "appears in the question" in check_probes(leaked, parsed)[1][0].message


def test_cli_validate_ok_on_the_committed_samples() -> None:
    for sample in (SHORT, LONG):
        result = run_cli("validate", str(sample), "--json")
        assert result.returncode == 0, result.stdout
        report = json.loads(result.stdout)
        assert report["ok"] and report["probes"] >= 10 and report["problems"] == []


def test_cli_validate_reports_line_numbers_and_exit_2(tmp_path) -> None:
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(gzip.compress(jsonl(USER, "not json", RESULT).encode()))
    result = run_cli("validate", str(path))
    assert result.returncode == 2
    assert f"{path}:2: error: invalid JSON" in result.stdout
    assert f"{path}:3: error: tool result for 'c1'" in result.stdout
    as_json = run_cli("validate", str(path), "--json")
    assert as_json.returncode == 2
    assert [p["line"] for p in json.loads(as_json.stdout)["problems"]] == [2, 3]


def test_cli_validate_missing_file_is_bad_input(tmp_path) -> None:
    result = run_cli("validate", str(tmp_path / "nope.jsonl"))
    assert result.returncode == 2 and "no such session file" in result.stdout
