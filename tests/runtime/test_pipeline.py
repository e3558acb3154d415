"""The turn pipeline: hook order, skipped hooks, request-only selection, compaction results."""

from __future__ import annotations

import threading

from ctxengine_host.contract.models import PERSISTENCE_ONLY_FIELDS, CompactResult
from ctxengine_host.contract.signatures import implemented_methods
from ctxengine_host.runtime.isolation import SKIPPED

from .engines import (
    AssemblingEngine,
    BackgroundEngine,
    OwnsCompactionEngine,
    QuietEngine,
    RecordingEngine,
    SummarizingEngine,
)

USAGE = {"prompt_tokens": 50, "completion_tokens": 5}


def one_turn(session, text="hello", usage=USAGE):
    session.add_user_message(text)
    request = session.build_request()
    session.record_response({"role": "assistant", "content": f"re: {text}"}, usage)
    return request, session.finish_turn()


def test_hook_order_of_a_turn(make_host):
    engine = RecordingEngine()
    host = make_host(engine)
    with host.open_session("s", system_prompt="sys") as session:
        one_turn(session)
    order = [m for m in engine.methods() if m not in ("get_tool_schemas", "dispose")]
    assert order == [
        "on_session_start",
        "bootstrap",
        "ingest",
        "should_compress_preflight",
        "select_context",
        "ingest",
        "update_from_response",
        "should_compress",
        "on_turn_complete",
        "maintain",
        "on_session_end",
    ]


def test_bootstrap_once_per_engine_and_session_with_existing_history(make_host, store_path):
    host = make_host(QuietEngine())
    with host.open_session("s") as session:
        one_turn(session)
    host.close()
    engine = RecordingEngine()
    host2 = make_host(engine)
    with host2.open_session("s"):
        pass
    with host2.open_session("s"):
        pass
    assert [d for m, d in engine.calls if m == "bootstrap"] == [2]
    assert engine.methods().count("on_session_start") == 2
    assert host2.store.is_bootstrapped("recording", "s")


def test_hooks_an_engine_does_not_implement_are_never_called(make_host):
    engine = QuietEngine()
    host = make_host(engine)
    session = host.open_session("s")
    assert session.guard.handle.implemented == implemented_methods(engine)
    assert session.guard.call("select_context", {}) is SKIPPED
    _, report = one_turn(session)
    assert report.select_ms == 0 and report.compactions == []
    assert 0 < report.host_ms < 1000 and report.engine_ms > 0


def test_on_turn_complete_gets_none_usage_without_a_provider_response(make_host):
    engine = RecordingEngine()
    session = make_host(engine).open_session("s")
    session.add_user_message("hi")
    session.finish_turn()
    one_turn(session, "again")
    usages = [d for m, d in engine.calls if m == "on_turn_complete"]
    assert usages[0] is None
    assert usages[1]["prompt_tokens"] == 50 and usages[1]["total_tokens"] == 55


def test_selection_is_request_only_and_stripped(make_host):
    engine = RecordingEngine()
    engine.select_result = lambda request, conversation: conversation[-1:]
    host = make_host(engine)
    session = host.open_session("s", system_prompt="sys")
    one_turn(session, "first")
    session.add_user_message("second")
    request = session.build_request()
    assert request.selected
    # The engine declares no cover for the first turn: the host marks the gap.
    assert [m["content"].split("\n\n")[-1] for m in request.messages] == ["sys", "second"]
    assert request.messages[1]["content"].startswith("[ctxengine: omitted 2 earlier messages")
    assert request.omitted == 2
    assert all(PERSISTENCE_ONLY_FIELDS.isdisjoint(m) for m in request.messages)
    assert len(host.store.live("s")) == 3
    assert len(session.messages()) == 3


def test_selection_fails_open_on_none_empty_and_junk(make_host):
    engine = RecordingEngine()
    session = make_host(engine).open_session("s")
    session.add_user_message("hi")
    plain = session.build_request().messages
    for result, invalid in ((None, 0), ([], 0), ("junk", 1), ([{"role": "user"}, 3], 1)):
        session.guard.engine.select_result = result  # the session's clone
        before = sum(session.guard.invalid_results.values())
        request = session.build_request()
        assert request.messages == plain and not request.selected
        assert sum(session.guard.invalid_results.values()) - before == invalid


def test_assemble_result_addition_is_prepended_to_the_system_prompt(make_host):
    host = make_host(AssemblingEngine())
    session = host.open_session("s", system_prompt="Be brief.")
    one_turn(session, "one")
    session.add_user_message("two")
    request = session.build_request()
    assert request.messages == [
        {"role": "system", "content": "Recall: blue.\n\nBe brief."},
        {"role": "user", "content": "two"},
    ]
    assert request.system_prompt_addition == "Recall: blue."


def test_compact_result_replaces_the_live_view_and_keeps_rows(make_host):
    engine = SummarizingEngine()
    host = make_host(engine)
    session = host.open_session("s", system_prompt="sys")
    for i in range(3):
        one_turn(session, f"turn {i}")
    rows_before = host.store.rows("s")
    uids_before = [m["message_uid"] for m in session.messages()]
    session.add_user_message("last")
    event = session.compact(focus_topic="turns")
    assert event.ok and event.compacted and event.reason == "manual"
    assert event.messages_before == 7 and event.messages_after == 2
    live = session.messages()
    assert live[0] == {
        "role": "user",
        "content": "[summary of 6 messages]",
        "message_uid": SummarizingEngine.SUMMARY_UID,
    }
    assert live[1]["message_uid"] not in uids_before  # "last" was added after
    rows_after = host.store.rows("s")
    assert rows_after[: len(rows_before)] == rows_before
    assert [r.origin for r in rows_after[len(rows_before) :]] == ["input", "engine"]
    assert [r.message["message_uid"] for r in host.store.live("s")] == [
        m["message_uid"] for m in live
    ]
    assert ("compress", {"n": 7, "force": True, "focus": "turns"}) in engine.calls


def test_compress_gets_a_private_deep_copy(make_host):
    engine = RecordingEngine()

    def vandal(messages):
        for m in messages:
            m["content"] = "overwritten"
        messages.clear()
        return None

    engine.compress_result = vandal
    session = make_host(engine).open_session("s")
    one_turn(session)
    before = session.messages()
    event = session.compact()
    assert not event.ok  # None is not a valid compress result
    assert session.messages() == before


def test_compact_result_without_messages_means_the_engine_keeps_history(make_host):
    session = make_host(OwnsCompactionEngine()).open_session("s")
    one_turn(session)
    before = session.messages()
    event = session.compact()
    assert event.ok and not event.compacted
    assert session.messages() == before


def test_threshold_compaction_runs_after_update_from_response(make_host):
    engine = SummarizingEngine()
    engine.compress_on_prompt_tokens = {77}
    session = make_host(engine).open_session("s")
    one_turn(session, "a")
    _, report = one_turn(session, "b", usage={"prompt_tokens": 77, "completion_tokens": 1})
    assert [e.reason for e in report.compactions] == ["threshold"]
    methods = engine.methods()
    i = methods.index("compress")
    assert methods[i - 2 : i + 1] == ["update_from_response", "should_compress", "compress"]


def test_preflight_true_compacts_before_selection(make_host):
    engine = SummarizingEngine()
    engine.preflight = True
    session = make_host(engine).open_session("s")
    one_turn(session, "a")
    session.add_user_message("b")
    request = session.build_request()
    assert request.compacted and [e.reason for e in request.compactions] == ["preflight"]
    methods = engine.methods()
    assert methods[-3:] == ["should_compress_preflight", "compress", "select_context"]


def test_engine_uids_merges_and_rewrites_are_kept(make_host):
    engine = RecordingEngine()
    host = make_host(engine)
    session = host.open_session("s")
    session.add_messages([{"role": "user", "content": "A"}])
    session.record_response({"role": "assistant", "content": "x"}, USAGE)
    session.add_messages([{"role": "user", "content": "B"}])
    a, x, b = session.messages()

    def fold(messages):
        merged = dict(messages[0])
        merged["content"] = "A\n\nB"
        merged["_absorbed_message_uids"] = [messages[2]["message_uid"]]
        rewritten = dict(messages[1], content="x (shortened)")
        return [merged, rewritten]

    session.guard.engine.compress_result = fold
    session.compact()
    merged, rewritten = session.messages()
    assert merged["message_uid"] == a["message_uid"]
    assert merged["_absorbed_message_uids"] == [b["message_uid"]]
    assert rewritten["message_uid"] == x["message_uid"]
    stored = host.store.live("s")
    assert stored[0].message["_absorbed_message_uids"] == [b["message_uid"]]
    assert stored[1].origin == "engine"
    assert len({r.row_id for r in host.store.rows("s")}) == 5


def test_compress_list_result_with_no_change_writes_nothing(make_host):
    engine = RecordingEngine()
    host = make_host(engine)
    session = host.open_session("s")
    one_turn(session)
    rows = host.store.rows("s")
    event = session.compact()
    assert event.ok and not event.compacted
    assert host.store.rows("s") == rows


def test_background_maintenance_runs_off_the_session_thread(make_host):
    engine = BackgroundEngine()
    session = make_host(engine).open_session("s")
    one_turn(session)
    session.wait_for_maintenance(5)
    detail = next(d for m, d in engine.calls if m == "maintain")
    assert detail["thread"] != threading.current_thread().name
    assert detail["rows"] == 2


def test_compact_result_dict_is_accepted(make_host):
    engine = RecordingEngine()
    engine.compress_result = lambda messages: {
        "ok": True,
        "compacted": True,
        "messages": messages[-1:],
    }
    session = make_host(engine).open_session("s")
    one_turn(session, "a")
    session.add_user_message("b")
    event = session.compact()
    assert event.ok and [m["content"] for m in session.messages()] == ["b"]
    assert isinstance(CompactResult.model_validate({"ok": True}), CompactResult)


def test_engine_tools_are_offered_and_dispatched(make_host):
    session = make_host(RecordingEngine()).open_session("s", tools=[])
    assert session.tools[0]["type"] == "function"
    assert session.tools[0]["function"]["name"] == "recall"
    assert session.call_engine_tool("recall", '{"q": "x"}') == '{"found": []}'
    assert "error" in session.call_engine_tool("recall", "{not json")


def test_reset_empties_the_live_view_but_keeps_rows(make_host):
    engine = RecordingEngine()
    host = make_host(engine)
    session = host.open_session("s")
    one_turn(session)
    session.reset()
    assert session.messages() == [] and host.store.live("s") == []
    assert len(host.store.rows("s")) == 2
    assert "on_session_reset" in engine.methods()
    one_turn(session, "again")
    assert len(session.messages()) == 2


def test_close_disposes_and_session_is_a_context_manager(make_host):
    engine = RecordingEngine()
    host = make_host(engine)
    with host.open_session("s") as session:
        one_turn(session)
    assert session.ended
    host.close()
    assert engine.methods().count("dispose") == 2  # the session's clone, then the prototype


def test_compaction_reports_the_summaries_made_on_the_worker(make_host):
    from ctxengine_host.contract.models import CompactResult as Result

    class UsesSummarizer(RecordingEngine):
        name = "uses-summarizer"

        def compress(self, messages, current_tokens=None, focus_topic=None, force=False):
            summary = self.context.summarize(messages[:-1], target_tokens=200)
            carrier = {"role": "user", "content": f"Summary: {summary.text}"}
            return Result(ok=True, compacted=True, messages=[carrier, messages[-1]])

    engine = UsesSummarizer()
    host = make_host(engine)
    engine.context = host.make_context(engine.name)
    session = host.open_session("s")
    for i in range(3):
        one_turn(session, f"fact {i}: the port is {8000 + i}. " * 5)
    session.add_user_message("which port?")
    event = session.compact()
    assert event.compacted and event.summary_levels and event.summary_tokens > 0
    assert event.summary_tokens <= 200
    assert session.messages()[0]["content"].startswith("Summary: ")


def test_compaction_between_a_call_and_its_result_keeps_the_call_open(make_host):
    from .driver import tool_call

    engine = RecordingEngine()
    engine.compress_on_prompt_tokens = {500}
    session = make_host(engine).open_session("s")
    session.add_user_message("read it")
    session.guard.engine.compress_result = lambda messages: messages[:1]  # drops the call
    call = {"role": "assistant", "content": None, "tool_calls": [tool_call("c1", "f")]}
    session.record_response(call, {"prompt_tokens": 500, "completion_tokens": 1})
    assert session.guard.invalid_results["compress"] == 1
    session.record_tool_results([{"role": "tool", "tool_call_id": "c1", "content": "data"}])
    session.guard.engine.compress_result = lambda m: [dict(m[0], content="read"), *m[1:]]
    assert session.compact().compacted
    assert [m["role"] for m in session.messages()] == ["user", "assistant", "tool"]
