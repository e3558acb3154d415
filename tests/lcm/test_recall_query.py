"""Recall from the question's wording: tool-call arguments searchable and decoded, query
alternatives (identifier forms, derived forms, synonyms) ranked below the terms as written,
a tool call hit carrying its results."""

from __future__ import annotations

import json

from conftest import make_engine, record_searches, uid

from ctxengine_lcm.calls import calls_text
from ctxengine_lcm.query import derived_forms, expand_query, synonyms_of
from ctxengine_lcm.ranking import rerank
from ctxengine_lcm.search import fts_query
from ctxengine_lcm.store import SearchHit


def call(engine, name, args):
    return json.loads(engine.handle_tool_call(name, args))


def tool_call(name: str, arguments: dict, content: str | None = None) -> dict:
    return {
        "role": "assistant",
        "content": content,
        "message_uid": uid(),
        "tool_calls": [
            {
                "id": f"call_{uid()[:8]}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


def result_of(assistant: dict, content: str) -> dict:
    return {
        "role": "tool",
        "tool_call_id": assistant["tool_calls"][0]["id"],
        "content": content,
        "message_uid": uid(),
    }


def test_calls_text_decodes_arguments_and_reads_tool_use_blocks():
    message = tool_call("edit_file", {"path": "src/a.py", "patch": "-x = 1\n+x = 2\n"})
    assert calls_text(message) == "edit_file path: src/a.py patch: -x = 1\n+x = 2\n"
    blocks = {
        "role": "assistant",
        "content": [{"type": "tool_use", "name": "ls", "input": {"dir": "/tmp"}}],
    }
    assert calls_text(blocks) == "ls dir: /tmp"
    assert calls_text({"role": "user", "content": "hi"}) == ""
    hostile = tool_call("x", {})
    hostile["tool_calls"][0]["function"]["arguments"] = "{" * 300_000
    assert len(calls_text(hostile)) <= 200_010  # cut, never parsed past the bound


def test_a_fact_stated_only_in_call_arguments_is_found_and_expanded_decoded(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    edit = tool_call(
        "edit_file", {"path": "config/exports.toml", "patch": "+timeout_seconds = 120\n"}
    )
    engine.ingest("s1", [{"role": "user", "content": "Fix the export.", "message_uid": uid()},
                         edit, result_of(edit, "patch applied")])  # fmt: skip
    out = call(engine, "lcm_grep", {"pattern": "timeout"})
    hit = out["results"][0]
    assert hit["role"] == "assistant" and "timeout_seconds = 120" in hit["snippet"]
    assert hit["tool_results"][0]["snippet"] == "patch applied"
    expanded = call(engine, "lcm_expand", {"id": hit["id"]})
    assert expanded["message"]["content"] is None  # verbatim: as ingested
    assert expanded["message"]["tool_calls"] == edit["tool_calls"]
    decoded = expanded["tool_call_arguments"][0]
    assert decoded == {
        "name": "edit_file",
        "arguments": json.loads(edit["tool_calls"][0]["function"]["arguments"]),
    }


def test_synonyms_and_derived_forms_find_what_the_words_miss(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    show = tool_call("shell", {"command": "pip show psycopg"})
    table = {"role": "assistant", "content": "1141:writers = {", "message_uid": uid()}
    task = {"role": "user", "content": "Check the setup.", "message_uid": uid()}
    engine.ingest("s1", [task, show, result_of(show, "Name: psycopg\nVersion: 3.3.7"), table])
    out = call(engine, "lcm_grep", {"pattern": "release driver"})
    assert any("3.3.7" in r["snippet"] for r in out["results"])
    written = call(engine, "lcm_grep", {"pattern": "write table"})
    assert [r["snippet"] for r in written["results"]] == ["1141:writers = {"]
    as_written = call(engine, "lcm_grep", {"pattern": "release AND driver"})
    assert as_written["count"] == 0  # explicit operators: no alternatives


def test_alternatives_never_outrank_the_term_as_written():
    def hit(n: int, text: str) -> SearchHit:
        return SearchHit("message", n, 1, float(n), text, "user", n, score=-1.0)

    # "storage" is common (every hit but one holds it): its synonym "disk", held by one
    # hit only, is rare, yet stands in for a common word and must weigh as little.
    hits = [hit(n, f"storage note {n}") for n in range(1, 21)] + [hit(99, "the disk is full")]
    terms = [("storage", False)]
    ranked = rerank(hits, terms, expand_query(fts_query("storage")).of(terms))
    assert ranked[-1].hit.id == 99
    # Without a term held, the alternative counts: a rare term's synonym finds its hit.
    ranked = rerank(hits, [("volume", False)], [[("disk", 0.5)]])
    assert ranked[0].hit.id == 99


def test_query_alternatives_by_kind():
    expansion = expand_query(fts_query("resolveTenant multi-value flush batch"))
    texts = {k: [a.text for a in v] for k, v in expansion.alternatives.items()}
    assert "resolve tenant" in texts["resolvetenant"]
    assert "multivalue" in texts["multi-value"]
    assert "flushbatch" in texts["flush"]
    assert expand_query(fts_query('"flush batch" OR x')).expression is None
    assert "version" in synonyms_of("releases") and "listen" in synonyms_of("connections")
    assert "restore" in synonyms_of("undone") and "revert" in synonyms_of("undo")
    assert derived_forms("write")[0] == "writer" and "installation" in derived_forms("installed")


def test_the_alternatives_are_searched_only_where_the_words_leave_the_pool_short(
    tmp_path, database, monkeypatch
):
    engine = make_engine(tmp_path, database=database, grep_rerank_pool=2)
    texts = ["release 1 of the driver", "release 2 of the driver", "Version: 3.3.7"]
    engine.ingest("s1", [{"role": "user", "content": t, "message_uid": uid()} for t in texts])
    searched = record_searches(engine, monkeypatch)
    args = {"pattern": "release", "scope": "messages"}
    # Two matches fill a pool of two: the synonym "version" is not looked for.
    full = call(engine, "lcm_grep", {**args, "limit": 2})
    assert searched == ['"release"']
    assert not any("3.3.7" in r["snippet"] for r in full["results"])
    searched.clear()
    short = call(engine, "lcm_grep", {**args, "limit": 3})  # a pool of three: one short
    assert len(searched) == 2 and '"version"' in searched[1]
    assert short["results"][-1]["snippet"] == "Version: 3.3.7"
    engine.dispose()


def test_an_alternative_too_common_for_the_pool_is_not_searched(tmp_path, database, monkeypatch):
    """Alternatives are chosen as the query's words are (seeds.py): every match of those
    that fit the pool, none of one that overflows it, so a synonym that is a common word
    costs a count, not a ranking of its newest matches (#17)."""
    engine = make_engine(tmp_path, database=database, grep_rerank_pool=3)
    texts = ["release 1 of the driver", *(f"version bump {n}" for n in range(12))]
    engine.ingest("s1", [{"role": "user", "content": t, "message_uid": uid()} for t in texts])
    searched = record_searches(engine, monkeypatch)
    out = call(engine, "lcm_grep", {"pattern": "release", "scope": "messages", "limit": 3})
    # One match, short of the pool: the alternatives are counted; "version" overflows it.
    assert searched[0] == '"release"' and not any('"version"' in e for e in searched[1:])
    assert [r["snippet"] for r in out["results"]] == ["release 1 of the driver"]
    engine.dispose()


def test_only_an_assistant_hit_has_the_steps_around_it_looked_up(tmp_path, database, monkeypatch):
    engine = make_engine(tmp_path, database=database)
    ask = {"role": "user", "content": "keep the value we agreed on", "message_uid": uid()}
    edit = tool_call("edit_file", {"path": "exports.toml", "patch": "+timeout = 120\n"})
    note = {"role": "assistant", "content": "the timeout stays", "message_uid": uid()}
    engine.ingest("s1", [ask, edit, result_of(edit, "patch applied"), note])
    looked_up: list[list[int]] = []
    by_id = engine.store.messages_by_id

    def recorded(ids):
        looked_up.append(list(ids))
        return by_id(looked_up[-1])

    monkeypatch.setattr(engine.store, "messages_by_id", recorded)
    asked = call(engine, "lcm_grep", {"pattern": "agreed", "scope": "messages"})
    assert asked["count"] == 1 and looked_up == []  # the user's words: no steps around
    both = call(engine, "lcm_grep", {"pattern": "timeout", "scope": "messages"})
    assert len(looked_up) == 1  # one look-up for all the hits
    hits = {r["snippet"]: r for r in both["results"]}
    assert hits["the timeout stays"].get("tool_results") is None  # an answer, not a call
    assert hits["the timeout stays"]["after_results"][0]["snippet"] == "patch applied"
    call_hit = next(
        r for r in both["results"] if r["role"] == "assistant" and "patch" in r["snippet"]
    )
    # The same result follows the call and precedes the answer: shown once, named twice.
    assert call_hit["tool_results"][0]["id"] == hits["the timeout stays"]["after_results"][0]["id"]
    assert json.dumps(both).count("patch applied") == 1
    engine.dispose()
