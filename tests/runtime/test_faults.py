"""DESIGN's fault table, method by method, with real engines that raise, hang or return junk."""

from __future__ import annotations

import pytest

from ctxengine_host.runtime.isolation import is_quarantined
from ctxengine_host.stores.quarantine import QuarantineLog

from .conftest import timeout_for
from .driver import drive, transcript
from .engines import INVALID_RESULTS, RecordingEngine, faulty_engine

#: Every method the scripted conversation reaches.
DRIVEN_METHODS = [
    "update_model",
    "clone_for_agent",
    "on_session_start",
    "bootstrap",
    "get_tool_schemas",
    "ingest",
    "should_compress_preflight",
    "select_context",
    "update_from_response",
    "should_compress",
    "compress",
    "on_turn_complete",
    "maintain",
    "handle_tool_call",
    "get_status",
    "prepare_subagent_spawn",
    "on_subagent_ended",
    "on_session_end",
    "dispose",
]


def clean_transcript(make_host, tmp_path):
    engine = RecordingEngine()
    engine.compress_on_prompt_tokens = {222}
    host = make_host(engine, store_path=tmp_path / "clean.db")
    drive(host)
    return transcript(host)


@pytest.fixture
def reference(make_host, tmp_path):
    return clean_transcript(make_host, tmp_path)


def test_the_script_reaches_every_driven_method(make_host):
    engine = RecordingEngine()
    engine.compress_on_prompt_tokens = {222}
    drive(make_host(engine))
    assert set(DRIVEN_METHODS) - {"update_model", "clone_for_agent"} <= set(engine.methods())


@pytest.mark.parametrize("fault", ["raise", "hang"])
@pytest.mark.parametrize("method", DRIVEN_METHODS)
def test_raise_or_hang_quarantines_and_the_turn_completes(method, fault, make_host, reference):
    engine = faulty_engine(method, fault)
    engine.compress_on_prompt_tokens = {222}
    host = make_host(engine, timeout=timeout_for(fault))
    reports = drive(host)

    assert len(reports) == 3
    assert transcript(host) == reference
    records = QuarantineLog().records("faulty")
    assert [r.method for r in records] == [method]
    assert (
        "CallTimeout" in records[0].reason if fault == "hang" else "injected" in records[0].reason
    )
    assert is_quarantined("faulty")
    if method not in ("dispose", "on_session_end", "on_subagent_ended"):
        assert reports[-1].mode == "fallback"
        assert reports[-1].engine == "legacy"
        assert reports[-1].quarantined


@pytest.mark.parametrize(
    ("method", "label", "value"),
    [(m, label, v) for m, cases in INVALID_RESULTS.items() for label, v in cases],
)
def test_invalid_results_are_ignored_counted_and_not_quarantined(
    method, label, value, make_host, reference
):
    engine = faulty_engine(method, "value", value)
    engine.compress_on_prompt_tokens = {222}
    engine.calls.clear()
    host = make_host(engine)
    reports = drive(host)

    assert len(reports) == 3
    assert transcript(host) == reference
    assert QuarantineLog().records() == []
    assert not is_quarantined("faulty")
    counted = sum(r.invalid_results for r in reports) + sum(host._guard.invalid_results.values())
    assert counted >= 1, f"{method} returning {label} was not counted"


@pytest.mark.parametrize("fault", ["raise", "hang"])
def test_reset_fault_quarantines_and_the_reset_completes(fault, make_host):
    engine = faulty_engine("on_session_reset", fault)
    session = make_host(engine, timeout=timeout_for(fault)).open_session("s")
    session.add_user_message("hi")
    session.reset()
    assert session.messages() == []
    assert [r.method for r in QuarantineLog().records("faulty")] == ["on_session_reset"]
    assert session.guard.mode == "fallback"


def test_the_default_engine_is_prepared_when_it_takes_over_during_open(make_host):
    session = make_host(faulty_engine("get_tool_schemas", "raise")).open_session("s")
    assert session.guard.handle.name == "legacy"
    assert session.guard.engine.context_length == 8192
    assert session.tools == [t for t in session.tools if t["function"]["name"] != "recall"]


def test_a_quarantine_record_that_cannot_be_written_does_not_stop_the_fallback(
    make_host, reference, monkeypatch, caplog
):
    """The record is a diagnosis, the fallback the recovery: a log that fails (a database
    that refuses the row or is gone, not only a file that cannot be written) is logged and
    the turn goes on with the default engine."""

    def refuse(self, engine, method, reason):
        raise RuntimeError("the database refused the record")

    monkeypatch.setattr(QuarantineLog, "record", refuse)
    engine = faulty_engine("select_context", "raise")
    engine.compress_on_prompt_tokens = {222}
    host = make_host(engine)
    reports = drive(host)
    assert transcript(host) == reference
    assert reports[-1].mode == "fallback" and reports[-1].engine == "legacy"
    assert is_quarantined("faulty")
    assert "could not write the quarantine record" in caplog.text
