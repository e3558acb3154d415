"""``convert --from openai-agents`` on the shapes real Agents SDK sessions take.

Models reached through the SDK's Chat Completions path (Gemini through an OpenAI
compatible endpoint) leave every ``call_id`` empty; a ``SQLiteSession`` database stamps
each row with ``created_at``. The items here are written by hand in those shapes; the
databases are built with the SDK's own schema (``SQLiteSession._init_db_for_connection``).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ctxengine_host.replay.sessionfile import load_session

from .test_convert import convert as convert_as
from .test_convert import ctxengine

PAIRED = "tool calls without a call_id, paired with the output that follows"

#: The tables ``SQLiteSession`` creates (its index is on ``id`` in later versions).
SDK_SCHEMA = """
CREATE TABLE agent_sessions (
    session_id TEXT PRIMARY KEY,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE agent_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    message_data TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    FOREIGN KEY (session_id) REFERENCES agent_sessions (session_id) ON DELETE CASCADE
);
CREATE INDEX idx_agent_messages_session_id ON agent_messages (session_id, created_at);
"""


def convert(source: Path, out: Path) -> dict:
    return convert_as("openai-agents", source, out)


def items_file(tmp_path: Path, items: list) -> Path:
    source = tmp_path / "items.json"
    source.write_text(json.dumps(items))
    return source


def lines(path: Path) -> list[dict]:
    """The session file's items (its header left out)."""
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def said(role: str, text: str) -> dict:
    if role == "user":
        return {"role": "user", "content": text}
    return {"id": "__fake_id__", "type": "message", "role": role, "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}  # fmt: skip


def call(name: str, call_id: str | None = "") -> dict:
    item = {"type": "function_call", "id": "__fake_id__", "name": name, "arguments": "{}"}
    return item if call_id is None else {**item, "call_id": call_id}


def output(text: str, call_id: str | None = "") -> dict:
    item = {"type": "function_call_output", "output": text}
    return item if call_id is None else {**item, "call_id": call_id}


def sdk_database(path: Path, rows: list[tuple[dict, str]], session: str = "s1") -> Path:
    """A SQLiteSession database of one session: (item, created_at) per row."""
    db = sqlite3.connect(path)
    db.executescript(SDK_SCHEMA)
    db.execute("INSERT INTO agent_sessions (session_id) VALUES (?)", (session,))
    db.executemany(
        "INSERT INTO agent_messages (session_id, message_data, created_at) VALUES (?, ?, ?)",
        [(session, json.dumps(item), written) for item, written in rows],
    )
    db.commit()
    db.close()
    return path


def test_calls_with_empty_call_ids_are_paired_with_the_outputs_that_follow(tmp_path):
    """Gemini through the SDK's Chat Completions path writes ``"call_id": ""`` on every
    call and output: a whole session was refused ("a function_call without a call_id")."""
    items = [
        said("user", "Weather in Oslo and Lima?"),
        call("lookup", "call_1"), output("first lookup", "call_1"),  # an id already used
        call("oslo"), call("lima"),  # parallel calls of one response
        output("Oslo: 3 C"), output("Lima: 19 C"),
        said("assistant", "Oslo is cold, Lima is warm."),
        said("user", "And Quito?"),
        call("quito"), output("Quito: 14 C"),
        said("assistant", "Quito is mild."),
    ]  # fmt: skip
    out = tmp_path / "s.jsonl"
    report = convert(items_file(tmp_path, items), out)
    assert report["repaired"] == {PAIRED: 3} and report["dropped"] == {}
    written = lines(out)
    calls = {i["name"]: i["call_id"] for i in written if i.get("type") == "function_call"}
    outputs = {i["output"]: i["call_id"] for i in written if "output" in i}
    assert outputs["Oslo: 3 C"] == calls["oslo"] and outputs["Lima: 19 C"] == calls["lima"]
    assert outputs["Quito: 14 C"] == calls["quito"] and outputs["first lookup"] == "call_1"
    assert len(set(calls.values())) == 4  # the made-up ids collide with no id in use
    parsed = load_session(out)
    roles = [m["role"] for m in parsed.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "tool", "assistant",
                     "user", "assistant", "tool", "assistant"]  # fmt: skip
    assert ctxengine("validate", str(out)).returncode == 0


def test_calls_without_a_call_id_alternating_with_outputs_are_paired(tmp_path):
    items = [
        said("user", "Check both files."),
        call("read_a", None), output("a: ok", None),
        call("read_b", None), output("b: broken", None),
        said("assistant", "b is broken."),
    ]  # fmt: skip
    out = tmp_path / "s.jsonl"
    report = convert(items_file(tmp_path, items), out)
    assert report["repaired"] == {PAIRED: 2}
    parsed = load_session(out)
    assert [m["content"] for m in parsed.messages if m["role"] == "tool"] == [
        "a: ok",
        "b: broken",
    ]
    assert [m["tool_calls"][0]["function"]["name"] for m in parsed.messages[1:4:2]] == [
        "read_a",
        "read_b",
    ]


@pytest.mark.parametrize(
    ("items", "refused", "why"),
    [
        pytest.param(
            [said("user", "hi"), call("f"), said("user", "hello?")],
            'item 1: a function_call with an empty call_id ("")',
            "no output follows it",
            id="a call no output follows",
        ),
        pytest.param(
            [said("user", "hi"), output("stray")],
            'item 1: a function_call_output with an empty call_id ("")',
            "no call without one is waiting for it",
            id="an output with no call before it",
        ),
        pytest.param(
            [said("user", "hi"), call("f"), call("g"), output("1"), call("h"), output("2")],
            'item 2: a function_call with an empty call_id ("")',
            "another call comes before its output",
            id="a call among the outputs of earlier calls",
        ),
        pytest.param(
            [said("user", "hi"), call("f"), call("g"), output("1")],
            'item 2: a function_call with an empty call_id ("")',
            "no output follows it",
            id="fewer outputs than calls",
        ),
    ],
)
def test_empty_call_ids_that_order_cannot_pair_are_refused_saying_so(tmp_path, items, refused, why):
    out = tmp_path / "s.jsonl"
    done = ctxengine("convert", "--from", "openai-agents", str(items_file(tmp_path, items)),
                     str(out))  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert refused in done.stderr and why in done.stderr
    assert "without a call_id" not in done.stderr  # the field is there, empty
    assert "give each call and its output the same call_id" in done.stderr
    assert not out.exists()


def test_sqlite_session_row_times_become_the_messages_timestamps(tmp_path):
    """``agent_messages.created_at`` (SQLite ``CURRENT_TIMESTAMP``, UTC) was never read:
    no message of a converted database had a ``timestamp``."""
    rows = [
        (said("user", "Who wrote Dune?"), "2025-09-04 17:40:46"),
        (said("assistant", "Let me look."), "2025-09-04 17:40:48"),
        (call("search"), "2025-09-04 17:40:49"),  # joined with the text before it
        (output("Frank Herbert"), "2025-09-04 17:40:51"),
        (said("assistant", "Frank Herbert."), "2025-09-04 17:40:52"),
    ]
    path = sdk_database(tmp_path / "agents.db", rows)
    out = tmp_path / "s.jsonl"
    report = convert(path, out)
    assert report["repaired"] == {PAIRED: 1} and report["dropped"] == {}
    assert [i["timestamp"] for i in lines(out)] == [
        "2025-09-04T17:40:46Z",
        "2025-09-04T17:40:48Z",
        "2025-09-04T17:40:49Z",
        "2025-09-04T17:40:51Z",
        "2025-09-04T17:40:52Z",
    ]
    parsed = load_session(out)
    assert [(m["role"], m["timestamp"]) for m in parsed.messages] == [
        ("user", "2025-09-04T17:40:46Z"),
        ("assistant", "2025-09-04T17:40:48Z"),  # its first item's time
        ("tool", "2025-09-04T17:40:51Z"),
        ("assistant", "2025-09-04T17:40:52Z"),
    ]
    assert ctxengine("validate", str(out)).returncode == 0


def test_the_same_items_as_a_json_list_have_no_timestamps(tmp_path):
    items = [said("user", "Who wrote Dune?"), said("assistant", "Frank Herbert.")]
    out = tmp_path / "s.jsonl"
    report = convert(items_file(tmp_path, items), out)
    assert report["repaired"] == {} and report["dropped"] == {}
    assert all("timestamp" not in i for i in lines(out))


def test_a_database_without_created_at_converts_without_timestamps(tmp_path):
    path = tmp_path / "agents.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE agent_messages (id INTEGER PRIMARY KEY AUTOINCREMENT, "
               "session_id TEXT NOT NULL, message_data TEXT NOT NULL)")  # fmt: skip
    for item in (said("user", "hi"), said("assistant", "hello")):
        db.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
                   (json.dumps(item),))  # fmt: skip
    db.commit()
    db.close()
    out = tmp_path / "s.jsonl"
    report = convert(path, out)
    assert report["messages"] == 2 and report["dropped"] == {}
    assert all("timestamp" not in i for i in lines(out))


def test_unreadable_row_times_are_counted_and_left_out(tmp_path):
    rows = [(said("user", "hi"), "yesterday"), (said("assistant", "hello"), None)]
    out = tmp_path / "s.jsonl"
    report = convert(sdk_database(tmp_path / "agents.db", rows), out)
    assert report["dropped"] == {"SQLiteSession row times that are not readable dates": 1}
    assert all("timestamp" not in i for i in lines(out))
