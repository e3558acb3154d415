"""Shapes found in real transcripts of recent tool versions (Claude Code 2.1.x, Codex CLI
0.12x), written here in their format: what the model was sent and had no message line
of its own, and files an editor or a copy made awkward."""

from __future__ import annotations

import json
from pathlib import Path

from ctxengine_host.replay.importers import claude_code, codex
from ctxengine_host.replay.importers.claude_code_context import (
    QUEUED_SENT,
    QUEUED_TAKEN_BACK,
)
from ctxengine_host.replay.sessionfile import load_session

from .test_convert import convert, ctxengine

STAMP = "2026-04-24T19:03:5{}.000Z"


def line(uuid: str, parent: str | None, kind: str, **fields) -> dict:
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "timestamp": STAMP.format(0),
        **fields,
    }


def said(uuid: str, parent: str | None, role: str, content, **fields) -> dict:
    message = {
        "role": role,
        "content": content,
        **({"id": f"msg_{uuid}"} if role == "assistant" else {}),
    }
    return line(uuid, parent, role, message=message, **fields)


def call(uuid: str, parent: str, call_id: str) -> dict:
    block = {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "make"}}
    return said(uuid, parent, "assistant", [block])


def result(uuid: str, parent: str, call_id: str, text: str) -> dict:
    return said(
        uuid, parent, "user", [{"type": "tool_result", "tool_use_id": call_id, "content": text}]
    )


def queued(operation: str, content: str | None = None) -> dict:
    entry = {"type": "queue-operation", "operation": operation, "timestamp": STAMP.format(1)}
    return entry if content is None else {**entry, "content": content}


def jsonl(values: list[dict]) -> str:
    return "".join(json.dumps(v) + "\n" for v in values)


def text_blocks(message: dict) -> list[str]:
    content = message["content"]
    if isinstance(content, str):
        return [content]
    return [b["text"] for b in content if b.get("type") == "text"]


def test_a_prompt_queued_while_the_agent_worked_goes_with_the_request_it_was_sent_in():
    """Claude Code sends a prompt typed during a turn with its next request and writes no
    message line for it (``queue-operation`` lines only): the answer replied to a prompt
    the session did not hold."""
    lines = [
        said("u1", None, "user", "Fix the build."),
        call("a1", "u1", "t1"),
        queued("enqueue", "use make -j4"),
        queued("enqueue", "/compact"),  # a slash command: never sent to the model
        queued("remove"),
        result("r1", "a1", "t1", "ok"),
        said("a2", "r1", "assistant", [{"type": "text", "text": "Using -j4 from now on."}]),
        queued("enqueue", "also run the tests"),
        queued("popAll"),  # taken back into the input box
        said("u2", "a2", "user", "Thanks."),
        said("a3", "u2", "assistant", [{"type": "text", "text": "You're welcome."}]),
    ]
    imported = claude_code.read(jsonl(lines))
    roles = [m["role"] for m in imported.messages]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant"]
    with_result = imported.messages[2]
    assert [b["type"] for b in with_result["content"]] == ["tool_result", "text"]
    assert text_blocks(with_result) == ["use make -j4"]
    everything = json.dumps(imported.messages)
    assert "/compact" not in everything and "also run the tests" not in everything
    assert imported.repaired[QUEUED_SENT] == 1
    assert imported.dropped[QUEUED_TAKEN_BACK] == 1


def test_a_queued_prompt_written_as_a_prompt_line_is_not_sent_twice():
    lines = [
        said("u1", None, "user", "Start."),
        said("a1", "u1", "assistant", [{"type": "text", "text": "Working."}]),
        queued("enqueue", "and then stop"),
        queued("dequeue"),
        said("u2", "a1", "user", "and then stop"),
        said("a2", "u2", "assistant", [{"type": "text", "text": "Stopping."}]),
    ]
    imported = claude_code.read(jsonl(lines))
    assert json.dumps(imported.messages).count("and then stop") == 1
    assert QUEUED_SENT not in imported.repaired


def test_context_attachments_are_user_text_and_run_records_are_reported_by_type():
    """Claude Code 2.1.x writes a hook's additional context and the skill listing as
    ``attachment`` lines in the chain; the model gets them as system reminders. They were
    dropped as "not messages", with the hooks' exit records."""
    lines = [
        line(
            "h1",
            None,
            "attachment",
            attachment={"type": "hook_success", "stdout": "{}", "content": ""},
        ),
        line(
            "h2",
            "h1",
            "attachment",
            attachment={
                "type": "hook_additional_context",
                "content": ["Use the superpowers skill."],
            },
        ),
        said("u1", "h2", "user", "Hello."),
        line(
            "s1",
            "u1",
            "attachment",
            attachment={"type": "skill_listing", "content": "- review: review a diff"},
        ),
        said("a1", "s1", "assistant", [{"type": "text", "text": "Hi."}]),
    ]
    imported = claude_code.read(jsonl(lines))
    assert [m["role"] for m in imported.messages] == ["user", "assistant"]
    texts = text_blocks(imported.messages[0])
    assert texts[1] == "Hello."
    assert "Use the superpowers skill." in texts[0] and "- review: review a diff" in texts[2]
    assert all(t.startswith("<system-reminder>") for t in (texts[0], texts[2]))
    reason = "'attachment' lines of type 'hook_success' (run records, not sent to the model)"
    assert imported.dropped[reason] == 1


def test_a_line_holding_two_json_values_is_split_and_reported(tmp_path):
    """Real Claude Code files hold lines where an answer line and a summary line were
    written with no newline between them: the whole file was refused."""
    first = said("u1", None, "user", "Hi.")
    answer = said("a1", "u1", "assistant", [{"type": "text", "text": "Hello."}])
    summary = {"type": "summary", "summary": "Greeting", "leafUuid": "a1"}
    source = tmp_path / "glued.jsonl"
    source.write_text(json.dumps(first) + "\n" + json.dumps(answer) + json.dumps(summary) + "\n")
    report = convert("claude-code", source, tmp_path / "out.jsonl")
    assert report["messages"] == 2
    assert report["repaired"] == {
        "lines holding several JSON values with no newline between them (split)": 1
    }
    assert report["dropped"]["'summary' lines (not messages)"] == 1
    source.write_text(json.dumps(first) + "\n" + json.dumps(answer) + '{"type": "summ\n')
    refused = ctxengine("convert", "--from", "claude-code", str(source), str(tmp_path / "x.jsonl"))
    assert refused.returncode == 2 and "line 2: invalid JSON" in refused.stderr


def test_a_line_separator_inside_a_string_does_not_end_the_line(tmp_path):
    """JSON strings may hold U+2028 unescaped (JavaScript's JSON.stringify writes it so);
    Python's ``splitlines`` cut such a line in two and the file was refused."""
    text = "a web page's text\u2028with a line separator"
    lines = [
        said("u1", None, "user", text),
        said("a1", "u1", "assistant", [{"type": "text", "text": "ok"}]),
    ]
    source = tmp_path / "ls.jsonl"
    source.write_text(
        "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in lines), encoding="utf-8"
    )
    assert "\u2028" in source.read_text(encoding="utf-8")
    convert("claude-code", source, tmp_path / "out.jsonl")
    checked = ctxengine("validate", str(tmp_path / "out.jsonl"))
    assert checked.returncode == 0, checked.stdout
    assert load_session(tmp_path / "out.jsonl").messages[0]["content"] == text


def test_codex_base_instructions_lead_the_session_as_its_system_prompt():
    """Codex 0.12x records the instructions it sends with every request only in
    ``session_meta``; they were dropped with the line as run metadata."""
    meta = {
        "timestamp": STAMP.format(0),
        "type": "session_meta",
        "payload": {
            "id": "s1",
            "cli_version": "0.125.0",
            "base_instructions": {"text": "You are a coding agent."},
        },
    }
    prompt = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi."}]}
    answer = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Hello."}],
    }
    items = [
        {"timestamp": STAMP.format(1), "type": "response_item", "payload": p}
        for p in (prompt, answer)
    ]
    imported = codex.read(jsonl([meta, *items]))
    first = imported.messages[0]
    assert first["role"] == "system"
    assert first["content"] == [{"type": "input_text", "text": "You are a coding agent."}]
    assert [m.get("role") for m in imported.messages[1:]] == ["user", "assistant"]
    without = {**meta, "payload": {"id": "s1"}}
    assert [m.get("role") for m in codex.read(jsonl([without, *items])).messages] == [
        "user",
        "assistant",
    ]


def test_the_quarantine_reads_records_holding_a_line_separator(tmp_path: Path):
    """A record whose reason holds U+2028 unescaped (an engine's error text, written by a
    writer that keeps non-ASCII as is) was cut in two and skipped as unreadable."""
    from ctxengine_host.stores.quarantine import QuarantineLog

    log = QuarantineLog(tmp_path / "quarantine.jsonl")
    log.record("lcm", "ingest", "first")
    raw = {"engine": "lcm", "method": "compress", "reason": "a\u2028b", "time": 1.0, "pid": 1}
    with open(log.path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(raw, ensure_ascii=False) + "\n")
    assert [r.reason for r in log.records()] == ["first", "a\u2028b"]


def test_added_results_and_openings_carry_the_time_of_their_neighbour():
    """A result the pairing adds for a call that has none had no timestamp, so the replay
    gave it its own clock: the time range of the summary covering it ran to today."""
    lines = [
        said("u1", None, "user", "Run it."),
        call("a1", "u1", "t1"),  # interrupted: no result
        said("u2", "a1", "user", "Stop."),
        said("a2", "u2", "assistant", [{"type": "text", "text": "Stopped."}]),
        call("a3", "a2", "t2"),  # the session ends on a call
    ]
    imported = claude_code.read(jsonl(lines))
    added = [m for m in imported.messages if "no tool result was recorded" in json.dumps(m)]
    assert len(added) == 2
    assert all(m.get("timestamp") == STAMP.format(0) for m in added)
    answer = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Hi."}],
    }
    opened = codex.read(
        jsonl([{"timestamp": STAMP.format(3), "type": "response_item", "payload": answer}])
    )
    assert opened.messages[0]["content"] == "[the transcript starts here]"
    assert opened.messages[0]["timestamp"] == STAMP.format(3)
