"""``ctxengine serve`` over stdio, as the gateway plugin drives it (a real subprocess)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxengine_host.gateway_bridge.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RESYNC_NEEDED,
)

from .client import StdioClient, assistant, user

KEY = "agent:main:main"
#: Directory engines of these tests (``CTXENGINE_PLUGINS_DIR``).
ENGINES = Path(__file__).parent / "engines"
#: A real 1x1 PNG: its header gives the size, so it costs what OpenAI's tile rule says
#: (a truncated header is priced at the worst case, which this small window cannot hold).
PNG_1PX = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kg"
    "AAAABJRU5ErkJggg=="
)


def _turns(client: StdioClient, session: str, count: int, start: int = 0) -> list[dict]:
    history: list[dict] = []
    for i in range(start, start + count):
        new = [
            user(f"question {i} " + "lorem ipsum " * 40, ts=2 * i),
            assistant(f"answer {i} " + "dolor sit " * 40, ts=2 * i + 1, prompt_tokens=120 * i),
        ]
        client.call(
            "afterTurn",
            sessionId=session,
            sessionKey=KEY,
            sessionFile="unused",
            base=2 * i,
            newMessages=new,
            prePromptMessageCount=2 * i,
            tokenBudget=1500,
        )
        history += new
    return history


@pytest.mark.parametrize("engine", ["legacy", "lcm"])
def test_turns_compact_and_assemble_in_the_gateways_shape(tmp_path, engine):
    client = StdioClient(tmp_path, engine)
    try:
        hello = client.call("initialize", protocolVersion="1.0")
        assert hello["info"]["engine"] == engine
        assert hello["info"]["ownsCompaction"] is (engine == "lcm")
        client.call("bootstrap", sessionId="s1", sessionKey=KEY, sessionFile="unused")
        empty = client.call("assemble", sessionId="s1", sessionKey=KEY, messages=[], historyCount=0)
        assert empty["messages"] == []
        history = _turns(client, "s1", 12)
        status = client.call("status", sessionId="s1")
        assert status["seen"] == 24 and status["stored_messages"] >= 24
        assert status["engine_status"]["compression_count"] >= 1  # the small budget compacted
        result = client.call("assemble", sessionId="s1", historyCount=24, tokenBudget=1500)
        messages = result["messages"]
        assert 0 < len(messages) < 24
        assert result["estimatedTokens"] <= 1500
        assert messages[-1] == history[-1]  # untouched messages come back as sent
        assert all("timestamp" in m and "role" in m for m in messages)
        assert "gateway_message" not in json.dumps(messages)
        if engine == "lcm":  # its summaries declare what they cover, as gateway indexes
            assert result["omitted"] == 0
            assert result["covers"] and all(0 <= lo <= hi < 24 for lo, hi in result["covers"])
        compacted = client.call("compact", sessionId="s1", sessionKey=KEY, force=True)
        assert compacted["ok"] is True and "tokensBefore" in compacted["result"]
        assert client.call("dispose") == {"endedSessions": 1}
    finally:
        assert client.close() == 0


def test_bad_requests_get_errors_and_the_server_goes_on(tmp_path):
    client = StdioClient(tmp_path, "legacy")
    try:
        assert client.send_raw(b"{not json\n")["error"]["code"] == PARSE_ERROR
        assert client.send_raw(b'{"id": 1, "method": "info"}\n')["error"]["code"] == INVALID_REQUEST
        assert client.send_raw(b"[]\n")["error"]["code"] == INVALID_REQUEST
        assert client.request("nope")["error"]["code"] == METHOD_NOT_FOUND
        bad = client.request("afterTurn", sessionId="s1", newMessages=[{"role": "robot"}])
        assert bad["error"]["code"] == INVALID_PARAMS and "robot" in bad["error"]["message"]
        assert client.request("ingest", sessionId="bad id!", message=user("x"))["error"][
            "code"
        ] == (INVALID_PARAMS)
        assert client.request("assemble", sessionId="s1", tokenBudget="lots")["error"]["code"] == (
            INVALID_PARAMS
        )
        bogus = client.request("initialize", protocolVersion="2.0")
        assert "not supported" in bogus["error"]["message"]
        assert client.call("info")["engine"] == "legacy"  # still serving
    finally:
        assert client.close() == 0


def test_only_new_messages_travel_and_a_gap_asks_for_history(tmp_path):
    client = StdioClient(tmp_path, "legacy")
    try:
        client.call("ingest", sessionId="s2", message=user("one", 1))
        assert client.call("ingestBatch", sessionId="s2", messages=[assistant("two", 2)]) == {
            "ingestedCount": 1,
            "seen": 2,
            "refBase": 1,
        }
        gap = client.request("assemble", sessionId="s2", historyCount=4)
        assert gap["error"]["code"] == RESYNC_NEEDED and gap["error"]["data"] == {"seen": 2}
        history = [user("one", 1), assistant("two", 2), user("three", 3), assistant("four", 4)]
        result = client.call(
            "assemble",
            sessionId="s2",
            historyCount=4,
            history={"base": 2, "messages": history[2:]},
        )
        assert result["messages"] == history and result["seen"] == 4
        again = client.call(  # a retried turn: the server skips what it has
            "afterTurn", sessionId="s2", base=2, newMessages=history[2:], prePromptMessageCount=2
        )
        assert again["seen"] == 4
        ahead = client.request("afterTurn", sessionId="s2", base=9, newMessages=[user("x")])
        assert ahead["error"]["code"] == RESYNC_NEEDED
    finally:
        client.close()


def test_a_restarted_server_resumes_the_session_from_its_store(tmp_path):
    first = StdioClient(tmp_path, "lcm")
    history = _turns(first, "s3", 4)
    first.process.kill()
    first.process.wait()
    second = StdioClient(tmp_path, "lcm")
    try:
        result = second.call("assemble", sessionId="s3", historyCount=len(history))
        assert result["messages"][-1] == history[-1]
        assert second.call("status", sessionId="s3")["seen"] == len(history)
    finally:
        second.close()


def test_tool_calls_results_and_images_survive_the_trip(tmp_path):
    client = StdioClient(tmp_path, "lcm")
    image = {"type": "image", "data": PNG_1PX, "mimeType": "image/png"}
    turn = [
        {"role": "user", "content": [{"type": "text", "text": "read it"}, image], "timestamp": 1},
        assistant("", ts=2, calls=[("call_7", "read", {"path": "/etc/motd"})]),
        {
            "role": "toolResult",
            "toolCallId": "call_7",
            "toolName": "read",
            "content": [{"type": "text", "text": "hello"}],
            "isError": False,
            "timestamp": 3,
        },
        assistant("it says hello", ts=4),
    ]
    try:
        client.call("afterTurn", sessionId="s4", base=0, newMessages=turn, prePromptMessageCount=0)
        assert client.call("assemble", sessionId="s4", historyCount=4)["messages"] == turn
    finally:
        client.close()


def test_commit_turn_is_idempotent_across_a_restart(tmp_path):
    turn = [user("hi", 1), assistant("hello", 2)]
    first = StdioClient(tmp_path, "legacy")
    try:
        done = first.call("commitTurn", sessionId="s5", advancementKey="turn-1", messages=turn)
        assert done["status"] == "committed" and done["seen"] == 2
        again = first.call("commitTurn", sessionId="s5", advancementKey="turn-1", messages=turn)
        assert again == {"status": "duplicate", "seen": 2}
    finally:
        first.close()
    second = StdioClient(tmp_path, "legacy")
    try:
        retried = second.call("commitTurn", sessionId="s5", advancementKey="turn-1", messages=turn)
        assert retried["status"] == "duplicate"
        assert second.call("assemble", sessionId="s5", historyCount=2)["messages"] == turn
    finally:
        second.close()


def test_unchanged_messages_come_back_as_refs_the_plugin_holds(tmp_path):
    client = StdioClient(tmp_path, "legacy")
    turn = [user("hi", 1), assistant("hello", 2), user("more", 3), assistant("sure", 4)]
    try:
        done = client.call("afterTurn", sessionId="s6", newMessages=turn, prePromptMessageCount=0)
        assert done["refBase"] == 0
        held = client.call("assemble", sessionId="s6", historyCount=4, refRange=[2, 4])
        assert held["messages"] == [turn[0], turn[1], {"$ref": 2}, {"$ref": 3}]
        bad = client.request("assemble", sessionId="s6", refRange="all")
        assert bad["error"]["code"] == INVALID_PARAMS
    finally:
        client.close()


def test_the_engines_tools_are_offered_and_run_in_the_session(tmp_path):
    """LCM's tools come with the handshake; callTool runs them on that session's history."""
    client = StdioClient(tmp_path, "lcm")
    try:
        info = client.call("initialize", protocolVersion="1.0")["info"]
        names = [tool["name"] for tool in info["tools"]]
        assert {"lcm_grep", "lcm_expand", "lcm_describe"} <= set(names)
        grep = next(tool for tool in info["tools"] if tool["name"] == "lcm_grep")
        assert grep["parameters"]["properties"]["pattern"]["type"] == "string"
        client.call(
            "afterTurn",
            sessionId="t1",
            base=0,
            newMessages=[user("remember: the vault code is zebra-4417"), assistant("noted")],
        )
        client.call("afterTurn", sessionId="t2", base=0, newMessages=[user("x"), assistant("y")])
        found = client.call(
            "callTool", sessionId="t1", name="lcm_grep", arguments={"pattern": "zebra"}
        )
        assert "zebra-4417" in found["text"]
        other = client.call(
            "callTool", sessionId="t2", name="lcm_grep", arguments={"pattern": "zebra"}
        )
        assert "zebra-4417" not in other["text"]  # another session's history is not searched
        bad = client.call("callTool", sessionId="t1", name="lcm_grep", arguments={"mode": 3})
        assert "error" in json.loads(bad["text"])
        refused = client.request("callTool", sessionId="t1", name="lcm_grep", arguments=[1])
        assert refused["error"]["code"] == INVALID_PARAMS
    finally:
        assert client.close() == 0


@pytest.mark.parametrize("engine", ["legacy", "lcm"])
def test_half_of_a_character_from_the_gateway_comes_back_whole_or_repaired(tmp_path, engine):
    """A TypeScript gateway truncating a tool output by UTF-16 units can cut an emoji in
    two: the lone surrogate reaches the server as a JSON escape. The turn is stored (the
    whole turn was refused: "cannot be stored as JSON text") and assembled with U+FFFD in
    its place."""
    client = StdioClient(tmp_path, engine)
    turn = [user("list the tags \ud83d", 1), assistant("tags: \ud83d\u2026", 2)]
    try:
        client.call("afterTurn", sessionId="s7", newMessages=turn, prePromptMessageCount=0)
        back = client.call("assemble", sessionId="s7", historyCount=2)["messages"]
        assert json.dumps(back, ensure_ascii=False).count("\ufffd") == 2
        assert client.call("status", sessionId="s7")
    finally:
        client.close()


def test_a_tool_answer_echoing_half_of_a_character_reaches_the_gateway(tmp_path):
    """A gateway's model may send half of a character in a tool's arguments (a JSON escape
    Node writes for a lone surrogate); ``lcm_grep`` echoes its pattern, and the answer's
    line could not be encoded as UTF-8: the server failed the call. It goes out with the
    half as a JSON escape, which the gateway reads back as it sent it."""
    client = StdioClient(tmp_path, "lcm")
    try:
        client.call(
            "afterTurn", sessionId="t1", base=0, newMessages=[user("zebra"), assistant("ok")]
        )
        found = client.call(
            "callTool", sessionId="t1", name="lcm_grep", arguments={"pattern": "zebra \ud83d"}
        )
        assert json.loads(found["text"])["pattern"] == "zebra \ud83d"
        assert client.call("status", sessionId="t1")
    finally:
        assert client.close() == 0


def test_nan_and_infinity_are_refused_and_the_refusal_answers_the_request(tmp_path):
    """Python's JSON reader takes ``NaN`` and ``Infinity``; the gateway's does not. A turn
    holding one was stored and echoed back by ``assemble`` in a line the gateway could not
    read. It is refused as not JSON, answering the request it came in (its id), and the
    session goes on."""
    client = StdioClient(tmp_path, "lcm")
    turn = '[{"role":"user","content":"hi","timestamp":NaN},{"role":"assistant","content":"ok"}]'
    line = (
        '{"jsonrpc":"2.0","id":"t-1","method":"afterTurn","params":{"sessionId":"n1",'
        f'"base":0,"newMessages":{turn}}}}}\n'
    )
    try:
        refused = client.send_raw(line.encode())
        assert refused["id"] == "t-1" and refused["error"]["code"] == PARSE_ERROR
        assert "NaN is not a JSON value" in refused["error"]["message"]
        infinite = client.send_raw(line.replace("NaN", "-Infinity").encode())
        assert "-Infinity is not a JSON value" in infinite["error"]["message"]
        ok = [user("hi"), assistant("ok")]
        client.call("afterTurn", sessionId="n1", base=0, newMessages=ok)
        assert len(client.call("assemble", sessionId="n1", historyCount=2)["messages"]) == 2
    finally:
        assert client.close() == 0


@pytest.mark.parametrize("odd", ["nan", "datetime"])
def test_an_answer_json_cannot_hold_is_answered_as_an_error(tmp_path, monkeypatch, odd):
    """An engine's status holding NaN (a line the gateway cannot read) or a datetime (no
    line at all: the gateway waited for its own timeout) is answered as an internal error
    naming the problem, to the same request; the server goes on."""
    monkeypatch.setenv("CTXENGINE_PLUGINS_DIR", str(ENGINES))
    monkeypatch.setenv("CTXENGINE_TEST_STATUS", odd)
    client = StdioClient(tmp_path, "oddstatus")
    try:
        client.call("afterTurn", sessionId="o1", base=0, newMessages=[user("hi"), assistant("ok")])
        answer = client.request("status", sessionId="o1")
        assert answer["error"]["code"] == INTERNAL_ERROR
        assert "could not be written as JSON" in answer["error"]["message"]
        assert client.call("assemble", sessionId="o1", historyCount=2)["messages"]
    finally:
        assert client.close() == 0


def test_a_subagent_ttl_without_meaning_is_refused(tmp_path):
    """``ttlMs`` negative, not a number, or past a float (``1e400`` reads as infinity) is
    refused naming the parameter; a finite one grants the child the parent's history."""
    client = StdioClient(tmp_path, "lcm")
    spawn = {"parentSessionKey": KEY, "childSessionKey": "agent:main:sub"}
    try:
        _turns(client, "p1", 1)
        for ttl in ("-5", '"soon"', "1e400", "true"):
            line = (
                '{"jsonrpc":"2.0","id":9,"method":"prepareSubagentSpawn","params":'
                f'{{"parentSessionKey":"{KEY}","childSessionKey":"agent:main:sub","ttlMs":{ttl}}}}}\n'
            )
            refused = client.send_raw(line.encode())
            assert refused["error"]["code"] == INVALID_PARAMS, (ttl, refused)
            assert "'ttlMs' must be" in refused["error"]["message"]
        assert client.call("prepareSubagentSpawn", **spawn, ttlMs=60_000)
    finally:
        assert client.close() == 0
