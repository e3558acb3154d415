"""Session files in every shape: read as internal messages, unknown fields summarised once,
``validate --strict`` lists them, mixed shapes refused with the line."""

from __future__ import annotations

import json
import subprocess
import sys

from openai.types.chat import ChatCompletionMessage

from ctxengine_host.replay.sessionfile import parse_session


def jsonl(entries) -> str:
    return "".join(json.dumps(e) + "\n" for e in entries)


def chat_lines(n: int) -> list[dict]:
    out: list[dict] = [{"role": "developer", "content": "Be brief."}]
    for k in range(n):
        out.append({"role": "user", "content": f"q{k}", "x_trace": k})
        answer = ChatCompletionMessage(role="assistant", content=f"a{k}").model_dump()
        out.append({**answer, "x_trace": k})
    return out


def test_sdk_dumped_chat_file_reads_clean_with_one_summary_warning():
    parsed = parse_session(jsonl(chat_lines(300)), "s.jsonl")
    assert parsed.errors == []
    assert len(parsed.warnings) == 1
    (warning,) = parsed.warnings
    assert warning.line is None
    assert "'x_trace' (600 lines, first line 2)" in warning.message
    assert parsed.system_prompt == "Be brief."
    assert parsed.messages[2]["x_trace"] == 0  # kept
    assert "tool_calls" not in parsed.messages[2]


def test_validate_strict_lists_unknown_fields(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(jsonl(chat_lines(3)))
    cmd = [sys.executable, "-m", "ctxengine_host.cli", "validate", str(path)]
    relaxed = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert relaxed.returncode == 0, relaxed.stdout + relaxed.stderr
    assert relaxed.stdout.count("warning") == 1
    strict = subprocess.run([*cmd, "--strict", "--json"], capture_output=True, text=True)
    assert strict.returncode == 2
    report = json.loads(strict.stdout)
    errors = [p for p in report["problems"] if p["severity"] == "error"]
    assert len(errors) == 1 and "'x_trace'" in errors[0]["message"]
    assert "2, 3, 4, 5, 6, 7" in errors[0]["message"]


def test_anthropic_file_is_read_and_tool_results_pair(tmp_path):
    entries = [
        {"ctxengine_session": {"format_version": 1, "shape": "anthropic"}},
        {"role": "user", "content": "go", "timestamp": "2021-01-01T00:00:00Z"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm", "signature": "s"},
                {"type": "tool_use", "id": "t1", "name": "ls", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"},
                {"type": "text", "text": "now fix it"},
            ],
        },
        {"role": "assistant", "content": "done"},
    ]
    parsed = parse_session(jsonl(entries), "a.jsonl")
    assert parsed.errors == [] and parsed.shape == "anthropic"
    assert [m["role"] for m in parsed.messages] == [
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]
    assert parsed.lines == [2, 3, 4, 4, 5]
    assert [t.index for t in parsed.turns()] == [1, 2]


def test_responses_file_groups_reasoning_with_its_call():
    entries = [
        {"role": "user", "content": "go"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.py"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok"}],
        },
    ]
    parsed = parse_session(jsonl(entries), "r.jsonl")
    assert parsed.errors == [] and parsed.shape == "responses"
    assert [m["role"] for m in parsed.messages] == ["user", "assistant", "tool", "assistant"]
    assert parsed.lines == [1, 2, 4, 5]


def test_mixed_shapes_in_a_file_are_errors_at_their_line():
    entries = [
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
    ]
    parsed = parse_session(jsonl(entries), "m.jsonl")
    first = parsed.errors[0]
    assert first.line == 3
    assert "chat shape but the file uses the responses shape" in first.message


def test_a_bad_timestamp_in_a_file_is_an_error_at_its_line():
    parsed = parse_session(jsonl([{"role": "user", "content": "a", "timestamp": "soon"}]), "t")
    assert [(p.line, "neither ISO 8601" in p.message) for p in parsed.errors] == [(1, True)]


def test_half_of_a_character_is_a_warning_on_its_line_and_read_well_formed():
    """A lone surrogate (an emoji cut in two) in any shape: the message is read with U+FFFD
    in its place, as the runtime stores and sends it, and the line is named."""
    entries = [
        {"role": "user", "content": "list the tags"},
        {"role": "assistant", "content": [{"type": "text", "text": "tags: \ud83d\u2026"}]},
    ]
    parsed = parse_session(jsonl(entries), "cut.jsonl")
    assert parsed.errors == []
    assert [(w.line, "lone UTF-16 surrogate" in w.message) for w in parsed.warnings] == [(2, True)]
    assert "tags: \ufffd\u2026" in json.dumps(parsed.messages, ensure_ascii=False)


def test_replay_says_which_lines_it_repaired(tmp_path):
    """The replay sends the repaired text: it says so on stderr, with the line."""
    path = tmp_path / "cut.jsonl"
    path.write_text(
        jsonl(
            [
                {"role": "user", "content": "list the tags"},
                {"role": "assistant", "content": "tags: \ud83d\u2026"},
            ]
        )
    )
    cmd = [sys.executable, "-m", "ctxengine_host.cli", "replay", str(path), "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert f"{path}:2: 1 lone UTF-16 surrogate" in done.stderr
