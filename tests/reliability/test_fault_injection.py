"""Every contract method x every fault, against DESIGN's fault table.

For each case: the turns complete; the stored transcript (uids and timestamps aside)
equals a clean run's; quarantine is recorded exactly when the table says (raise or
hang: one record naming the method; an invalid value or mutated inputs: none); and the
request is the fail-open one (an ignored result or a defaced input changes no request).
"""

from __future__ import annotations

import json

import pytest
from runtime.conftest import HEALTHY_TIMEOUT, timeout_for
from runtime.driver import transcript
from runtime.engines import INVALID_RESULTS, RecordingEngine
from runtime.test_faults import DRIVEN_METHODS

from ctxengine_host.runtime.isolation import EngineFailure, is_quarantined
from ctxengine_host.runtime.validity import sequence_problems
from ctxengine_host.stores.quarantine import QuarantineLog

from .faulty import inject
from .script import converse

#: More invalid values per method, beyond the runtime suite's (label, value).
EXTRA_INVALID: dict[str, list[tuple[str, object]]] = {
    "should_compress": [("list", [True]), ("float", 1.0)],
    "should_compress_preflight": [("dict", {"yes": True}), ("int", 1)],
    "compress": [
        ("None", None),
        ("int", 3),
        ("unanswered call at the end", [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c9"}]},
            {"role": "user", "content": "again"},
        ]),
        ("unknown role", [{"role": "wizard", "content": "x"}]),
        ("CompactResult with non-dict messages", {"ok": True, "messages": [1, 2]}),
    ],
    "select_context": [
        ("dict without messages", {"picked": []}),
        ("AssembleResult dict with bad messages", {"messages": "all"}),
        ("unanswered call at the end", [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c9"}]},
        ]),
        ("no user message", [{"role": "assistant", "content": "hi"}]),
        ("tool_calls not a list", [{"role": "user", "content": "q"},
                                   {"role": "assistant", "tool_calls": "all"}]),
    ],
    "ingest": [("str", "ok"), ("list", [])],
    "bootstrap": [("int", 1)],
    "maintain": [("str", "done")],
    "get_tool_schemas": [("str", "recall"), ("list of str", ["recall"])],
    "handle_tool_call": [("None", None), ("bytes", b"{}")],
    "get_status": [("None", None), ("str", "fine")],
    "prepare_subagent_spawn": [("int", 42)],
    "clone_for_agent": [("int", 42)],
}  # fmt: skip

INVALID_CASES = [
    (method, label, value)
    for table in (INVALID_RESULTS, EXTRA_INVALID)
    for method, cases in table.items()
    for label, value in cases
]

#: Methods that receive lists or dicts the engine could deface. (This suite found that
#: per-request hooks once shared nested lists with the live view; they now get read-only
#: views whose items are private copies: ctxengine_host.runtime.views.MessagesView.)
MUTABLE_INPUT_METHODS = [
    "bootstrap",
    "ingest",
    "should_compress_preflight",
    "select_context",
    "update_from_response",
    "compress",
    "on_turn_complete",
    "handle_tool_call",
    "on_session_end",
]

#: After these fail, later calls of the same turn still use the engine (they run last).
LATE_METHODS = ("dispose", "on_session_end", "on_subagent_ended")


def make_engine(cls: type) -> RecordingEngine:
    engine = cls()
    engine.compress_on_prompt_tokens = {222}
    return engine


@pytest.fixture
def clean(make_host, tmp_path):
    """The clean run: its transcript and its requests."""
    host = make_host(make_engine(RecordingEngine), store_path=tmp_path / "clean.db")
    reports, requests = converse(host)
    assert len(reports) == 3
    return transcript(host), requests


def run_faulty(make_host, method: str, fault: str, value: object = None):
    engine = make_engine(inject(RecordingEngine, method, fault, value))
    engine.calls.clear()
    host = make_host(engine, timeout=timeout_for(fault))
    reports, requests = converse(host)
    return host, reports, requests


@pytest.mark.parametrize("fault", ["raise", "hang"])
@pytest.mark.parametrize("method", DRIVEN_METHODS)
def test_raise_or_hang_quarantines_once_and_loses_nothing(method, fault, make_host, clean, figures):
    clean_rows, clean_requests = clean
    host, reports, requests = run_faulty(make_host, method, fault)

    assert len(reports) == 3, "every turn completes"
    assert transcript(host) == clean_rows
    records = QuarantineLog().records("faulty")
    assert [r.method for r in records] == [method]
    assert ("CallTimeout" if fault == "hang" else "injected failure") in records[0].reason
    assert is_quarantined("faulty")
    if method not in LATE_METHODS:
        assert (reports[-1].mode, reports[-1].engine) == ("fallback", "legacy")
    # Each request is a valid sequence and, at these sizes, the one the clean run built.
    for built in requests:
        assert sequence_problems([json.loads(m) for m in built]) == []
    assert requests == clean_requests, "the default engine changed a small request"
    figures("fault", method=method, fault=fault, survived=True)


@pytest.mark.parametrize(("method", "label", "value"), INVALID_CASES)
def test_invalid_value_is_ignored_counted_never_quarantined(
    method, label, value, make_host, clean, figures
):
    clean_rows, clean_requests = clean
    host, reports, requests = run_faulty(make_host, method, "invalid", value)

    assert len(reports) == 3
    assert transcript(host) == clean_rows
    assert QuarantineLog().records() == []
    assert not is_quarantined("faulty")
    counted = sum(r.invalid_results for r in reports) + sum(host._guard.invalid_results.values())
    assert counted >= 1, f"{method} returning {label} was not counted"
    assert requests == clean_requests, "an ignored result must leave every request unchanged"
    figures("fault", method=method, fault=f"invalid:{label}", survived=True)


@pytest.mark.parametrize("method", MUTABLE_INPUT_METHODS)
def test_engine_defacing_its_inputs_changes_no_request_and_no_row(
    method, make_host, clean, figures
):
    clean_rows, clean_requests = clean
    host, reports, requests = run_faulty(make_host, method, "mutate")

    assert len(reports) == 3
    assert transcript(host) == clean_rows
    assert QuarantineLog().records() == []
    assert requests == clean_requests, f"{method} defacing its arguments leaked into a request"
    figures("fault", method=method, fault="mutate", survived=True)


def test_the_default_engine_failing_surfaces_and_keeps_the_transcript(make_host):
    """Fault table, row 4: no quarantine; the error surfaces; the transcript is unchanged."""
    from ctxengine_legacy.engine import LegacyEngine

    broken = inject(LegacyEngine, "compress", "raise", name="legacy")()
    host = make_host(broken)
    session = host.open_session("s")
    session.add_user_message("keep me")
    before = [r.message["content"] for r in host.store.rows("s")]
    with pytest.raises(EngineFailure, match="injected failure in compress"):
        session.compact()
    assert [r.message["content"] for r in host.store.rows("s")] == before == ["keep me"]
    assert QuarantineLog().records() == []
    assert not is_quarantined("legacy")
    assert sequence_problems(session.build_request().messages) == []


def test_an_engine_failing_the_contract_check_is_quarantined_at_resolution(make_host):
    class MisnamedParameter(RecordingEngine):
        name = "nocompress"

        def compress(self, messages, current_tokens=None, focus=None):  # not focus_topic
            return messages

    host = make_host(MisnamedParameter())
    assert host.engine_name == "legacy"
    assert [r.method for r in QuarantineLog().records("nocompress")] == ["resolve"]
    session = host.open_session("s")
    session.add_user_message("hello")
    assert session.build_request().messages[-1]["content"] == "hello"


def test_a_required_method_set_to_none_fails_the_contract_check(make_host):
    class NoCompress(RecordingEngine):
        name = "nocompress"
        compress = None  # type: ignore[assignment]

    host = make_host(NoCompress())
    assert host.engine_name == "legacy"


def test_unmet_host_requirements_refuse_before_the_run(make_host):
    from ctxengine_host.discovery.slot import EngineSelectionError

    class Demanding(RecordingEngine):
        name = "demanding"
        host_requirements = {"compact": {"capabilities": ["gpu-cluster"], "message": "needs a GPU"}}

    with pytest.raises(EngineSelectionError, match=r"gpu-cluster|GPU"):
        make_host(Demanding())
    assert QuarantineLog().records() == []


# ------------------------------------------------------------------ the real LCM engine

#: LcmEngine methods the scripted conversation reaches: all but the hooks it leaves to the
#: base class (the host skips a default that is not overridden).
LCM_REACHED = [
    m for m in DRIVEN_METHODS if m not in {"on_turn_complete", "maintain", "on_session_end"}
]


def lcm_run(make_host, tmp_path, name: str, engine_cls: type, timeout: float = HEALTHY_TIMEOUT):
    from ctxengine_host.contract.context import EngineContext
    from ctxengine_host.tokens import TokenCounter

    counter = TokenCounter("gpt-4")
    context = EngineContext(
        engine_name="lcm",
        data_dir=tmp_path,
        count_tokens=counter.count_any,
        summarize=lambda *a, **k: pytest.fail("no summary expected at this size"),
    )
    engine = engine_cls(config={"database": str(tmp_path / f"{name}.db")}, context=context)
    host = make_host(engine, store_path=tmp_path / f"{name}-transcripts.db", timeout=timeout)
    reports, requests = converse(host)
    return host, reports, requests


@pytest.mark.parametrize("fault", ["raise", "hang"])
@pytest.mark.parametrize("method", LCM_REACHED)
def test_the_real_lcm_engine_failing_anywhere_loses_nothing(
    method, fault, make_host, tmp_path, figures
):
    from ctxengine_lcm.engine import LcmEngine

    clean_host, clean_reports, _ = lcm_run(make_host, tmp_path, "clean", LcmEngine)
    host, reports, requests = lcm_run(
        make_host, tmp_path, "faulty", inject(LcmEngine, method, fault), timeout_for(fault)
    )
    assert len(reports) == len(clean_reports) == 3
    assert transcript(host) == transcript(clean_host)
    assert [r.method for r in QuarantineLog().records("faulty")] == [method]
    for built in requests:
        assert sequence_problems([json.loads(m) for m in built]) == []
    figures("fault", method=f"lcm.{method}", fault=fault, survived=True)
