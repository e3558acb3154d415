"""Text no backend can store as it is, on both backends: a NUL character (a coding
agent's tool output printing a path with an embedded null byte, as in a real
mini-swe-agent session; PostgreSQL text refuses it) and half of a character (a lone
UTF-16 surrogate left by a truncation; UTF-8 cannot encode it). Each failed the ingest."""

from __future__ import annotations

import json
import secrets

import pytest
from conftest import headline_summarize, make_engine, turn, uid
from pg.fixtures import fresh_schema_url
from test_tenancy import exported_archive

from ctxengine_lcm.archive import LcmArchiver

OUTPUT = (
    "<returncode>0</returncode>\n<output>\npath.resolve() raised ValueError: embedded null "
    "byte\np.absolute() succeeded: /tmp/test\x00file.py\n</output>"
)


def exchange(n: int) -> list[dict]:
    """A tool call and its output holding a NUL, then an answer."""
    call_id = f"call_nul_{n}"
    call = {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": "", "tool_calls": [call], "message_uid": uid()},
        {"role": "tool", "tool_call_id": call_id, "content": OUTPUT, "message_uid": uid()},
        {"role": "assistant", "content": f"step {n}: the\x00path is odd", "message_uid": uid()},
    ]


def test_a_nul_character_is_stored_found_summarized_and_given_back(tmp_path, database):
    engine = make_engine(tmp_path, database=database, session="s")
    first = exchange(0)
    engine.ingest("s", first)
    history = [{"role": "system", "content": "You are a coding agent."}, *first]
    selected = engine.select_context(history, budget_tokens=6_000)
    assert OUTPUT in [m.get("content") for m in selected.messages]  # verbatim, NUL and all
    out = json.loads(engine.handle_tool_call("lcm_grep", {"pattern": "absolute succeeded"}))
    assert out["count"] >= 1 and "test" in out["results"][0]["snippet"]
    # Enough history for summaries made from those texts (the extractive summarizer copies
    # lines, NUL included).
    for n in range(1, 30):
        batch = [*exchange(n), *turn(n)]
        history += batch
        engine.ingest("s", batch)
        result = engine.select_context(history, budget_tokens=6_000)
        if engine.should_compress(result.estimated_tokens):
            engine.compress(history)
    summaries = engine.get_status()["context_summaries_by_depth"]
    assert sum(summaries.values()) >= 1, summaries
    found = json.loads(
        engine.handle_tool_call("lcm_grep", {"pattern": "absolute succeeded", "limit": 50})
    )
    assert found["count"] >= 1 and not found.get("partial")
    message = next(r for r in found["results"] if r["kind"] == "message")
    expanded = json.loads(engine.handle_tool_call("lcm_expand", {"id": message["id"]}))
    assert expanded["message"]["content"] == OUTPUT
    engine.dispose()


def test_an_archive_holding_nul_characters_imports_on_both_backends(tmp_path, database):
    """A SQLite store written before kept NUL in its text columns: its archive, imported
    into PostgreSQL (the migration path), keeps every message verbatim."""
    data = exported_archive(tmp_path)
    rows = data["conversations"][0]["messages"]
    row = next(r for r in rows if r["content"] == "archived words")
    row["content"], row["digest"] = "archived\x00words", ""
    row["tool_call_id"], row["tool_name"] = "call\x00one", "read\x00file"
    target = LcmArchiver({"database": database}, tmp_path)
    assert target.import_session("s", data, "target-store")
    back = target.export_session("s", "target-store")
    target.close()
    stored = [r for r in back["conversations"][0]["messages"] if "archived" in r["content"]]
    assert [json.loads(r["extra_json"]).get("content", r["content"]) for r in stored] == [
        "archived\x00words"
    ]


def test_half_of_a_character_is_stored_well_formed_and_known_again(tmp_path, database):
    """A framework hands the engine a tool output holding a lone surrogate (an emoji cut
    in two by a truncation): UTF-8 cannot encode it, and the ingest failed on both
    backends. It is stored with U+FFFD in its place, the context shows that, and the
    caller's copy, still holding the half character, is the same version (not stored
    again)."""
    engine = make_engine(tmp_path, database=database, session="s")
    cut = json.loads('{"role": "tool", "tool_call_id": "c1", "content": "tags \\ud83d\\u2026"}')
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    history = [
        {"role": "user", "content": "list the tags \ud83d", "message_uid": uid()},
        {"role": "assistant", "content": "", "tool_calls": [call], "message_uid": uid()},
        {**cut, "message_uid": uid()},
    ]
    assert engine.ingest("s", history).count == 3
    assert engine.ingest("s", history).count == 0
    selected = engine.select_context(history, budget_tokens=6_000)
    contents = [m.get("content") for m in selected.messages]
    assert "tags \ufffd\u2026" in contents and "list the tags \ufffd" in contents
    found = json.loads(engine.handle_tool_call("lcm_grep", {"pattern": "tags"}))
    assert found["count"] == 2
    engine.dispose()


def test_a_nul_in_a_call_id_or_a_tool_name_is_stored_and_given_back(tmp_path, database):
    """The call's id and tool name are the model's words, and a tool result's ``name`` is
    that tool name: a NUL in either failed the ingest on PostgreSQL (their columns are
    text). The message comes back verbatim, and the result is still found with its call."""
    engine = make_engine(tmp_path, database=database, session="s")
    call_id, name = "call\x00one", "read\x00file"
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}
    history = [
        {"role": "user", "content": "read the config", "message_uid": uid()},
        {"role": "assistant", "content": "", "tool_calls": [call], "message_uid": uid()},
        {"role": "tool", "tool_call_id": call_id, "name": name, "content": "port = 8431",
         "message_uid": uid()},
    ]  # fmt: skip
    assert engine.ingest("s", history).count == 3
    selected = engine.select_context(history, budget_tokens=6_000)
    assert [m.get("tool_call_id") for m in selected.messages][-1] == call_id
    assert selected.messages[-1]["name"] == name
    assert selected.messages[-2]["tool_calls"][0]["function"]["name"] == name
    found = json.loads(engine.handle_tool_call("lcm_grep", {"pattern": "read file"}))
    call_hit = next(r for r in found["results"] if r["role"] == "assistant")
    assert "8431" in json.dumps(call_hit["tool_results"])
    engine.dispose()


@pytest.mark.parametrize(
    ("session_id", "problem"),
    [("chat\x00one", "NUL"), ("x" * 600, "600 characters"), (7, "int")],
)
def test_a_session_id_no_store_keeps_as_given_is_refused_alike_on_both_backends(
    tmp_path, database, session_id, problem
):
    """An engine driven without a host takes its session ids as given. A NUL in one made
    PostgreSQL fail the statement (psycopg's DataError, the engine then quarantined) while
    SQLite kept it, and an id too long for PostgreSQL's index failed there alone; each is
    refused before the store is touched, with the rule, on both backends."""
    engine = make_engine(tmp_path, database=database, session="s")
    engine.ingest("s", turn(0))
    with pytest.raises((ValueError, TypeError), match="session id") as refused:
        engine.on_session_start(session_id)
    assert problem in str(refused.value)
    # Nothing was switched to it: the engine goes on with its session.
    assert engine.get_status()["stored_messages"] == len(turn(0))
    engine.dispose()


@pytest.mark.parametrize(("uid", "problem"), [("u" * 3000, "3000 characters"), ("a\x00b", "NUL")])
def test_a_message_uid_no_store_keeps_as_given_is_refused_alike_on_both_backends(
    tmp_path, database, uid, problem
):
    """A caller's own ``message_uid`` keys the row. PostgreSQL's index refused a long one
    (reported as a lost connection, "retry it") and its text a NUL, where SQLite kept
    both; the batch is refused before any statement, with the rule, on both."""
    engine = make_engine(tmp_path, database=database, session="s")
    batch = turn(0)
    batch[1]["message_uid"] = uid
    with pytest.raises(ValueError, match="message_uid") as refused:
        engine.ingest("s", batch)
    assert problem in str(refused.value)
    assert engine.get_status()["stored_messages"] == 0  # nothing of the batch
    engine.ingest("s", turn(1))
    assert engine.get_status()["stored_messages"] == len(turn(1))
    engine.dispose()


@pytest.mark.postgres
def test_a_statement_the_server_refuses_is_not_reported_as_a_lost_connection(pg_database):
    """PostgreSQL refusing a statement (an index entry past its size limit, a statement
    timeout) leaves the connection whole: the error is the server's, with what was rolled
    back, not "the connection failed, retry it". A regex scan's page past its statement
    timeout ends the scan (the store catches the timeout), where it failed the grep."""
    import psycopg

    from ctxengine_lcm.pg_store import PgLcmStore
    from ctxengine_lcm.store import NewMessage

    store = PgLcmStore(fresh_schema_url(pg_database), statement_timeout_seconds=0.05)
    conversation = store.current_conversation("s")
    row = NewMessage(secrets.token_hex(1600), "user", "hi", "{}", None, None, 1, 1, False, 0.0, "d")
    with pytest.raises(psycopg.errors.ProgramLimitExceeded) as refused:
        store.append(conversation.id, [row])
    assert "nothing of this operation was committed" in "".join(refused.value.__notes__)
    assert store._scan_page("SELECT pg_sleep(0.5)", ()) is None
    assert store.append(conversation.id, [row._replace(message_uid="short")]).count == 1


def test_a_summary_holding_half_a_character_is_stored_and_compaction_goes_on(tmp_path, database):
    """A model's summary may hold half of a character (its JSON can carry ``\\ud83d``
    alone, echoing a tool output cut through an emoji). UTF-8 cannot encode it: the
    summary's write failed on both backends, the sweep ended as a summarizer error, and
    every later sweep met the same chunk, so the session never compacted again. It is
    stored with U+FFFD in its place, as a message is."""

    def echoing(content, target_tokens, focus_topic=None, previous=None):
        made = headline_summarize(content, target_tokens, focus_topic, previous)
        return made.model_copy(update={"text": f"{made.text} read emoji \ud83d cut"})

    engine = make_engine(tmp_path, database=database, session="s")
    engine.context._summarize = echoing
    history: list[dict] = []
    for n in range(60):
        batch = turn(n, words=200)
        history += batch
        engine.ingest("s", batch)
    engine.compress(history, force=True)
    summaries = engine.get_status()["context_summaries_by_depth"]
    assert sum(summaries.values()) >= 2, summaries
    found = json.loads(engine.handle_tool_call("lcm_grep", {"pattern": "emoji", "limit": 5}))
    summary = next(r for r in found["results"] if r["kind"] == "summary")
    assert "emoji \ufffd cut" in summary["snippet"]
    engine.dispose()
