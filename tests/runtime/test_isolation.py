"""Timeouts, the worker pool under hung calls, deadlines, inline compress."""

from __future__ import annotations

import threading
import time

import pytest

from ctxengine_host.contract.engine import ContextEngine
from ctxengine_host.runtime.isolation import CallTimeout, EngineHandle, WorkerPool

from .conftest import HANG_TIMEOUT, config
from .engines import RELEASE, RecordingEngine


def test_hung_workers_do_not_exhaust_the_pool():
    pool = WorkerPool(max_workers=2, max_stuck=16)
    for _ in range(6):
        with pytest.raises(CallTimeout):
            pool.run(lambda: RELEASE.wait(10), 0.05)
    assert pool.stuck == 6
    assert pool.run(lambda: 42, 1.0) == 42
    RELEASE.set()
    deadline = time.monotonic() + 5
    while pool.stuck and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.stuck == 0
    pool.close()


def test_pool_reuses_idle_workers():
    pool = WorkerPool(max_workers=4)
    for i in range(50):
        assert pool.run(lambda i=i: i * 2, 1.0) == i * 2
    assert pool.created == 1
    pool.close()


def test_errors_propagate_from_workers():
    pool = WorkerPool()
    with pytest.raises(ZeroDivisionError):
        pool.run(lambda: 1 / 0, 1.0)
    pool.close()


class DeadlineEngine(RecordingEngine):
    name = "deadline"

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, deadline=None):
        self._rec(
            "compress",
            {
                "deadline": deadline,
                "now": time.monotonic(),
                "thread": threading.current_thread().name,
            },
        )
        return messages


def test_compress_gets_a_deadline_and_runs_on_a_worker(make_host):
    engine = DeadlineEngine()
    host = make_host(engine, cfg=config(hook_timeout=1.0, context_timeout=3.0))
    session = host.open_session("s")
    session.add_user_message("x")
    session.compact()
    detail = next(d for m, d in engine.calls if m == "compress")
    assert 2.5 < detail["deadline"] - detail["now"] <= 3.0
    assert detail["thread"] == "ctxengine-engine-call"


def test_context_timeout_zero_runs_compress_inline_without_deadline(make_host):
    engine = DeadlineEngine()
    host = make_host(engine, cfg=config(hook_timeout=1.0, context_timeout=0))
    session = host.open_session("s")
    session.add_user_message("x")
    session.compact()
    detail = next(d for m, d in engine.calls if m == "compress")
    assert detail["deadline"] is None
    assert detail["thread"] == threading.current_thread().name


def test_runtime_mode_is_fallback_after_a_quarantine(make_host):
    from .engines import faulty_engine

    engine = faulty_engine("should_compress", "raise")
    host = make_host(engine)
    session = host.open_session("s")
    assert session.runtime_settings().runtime.mode == "normal"
    session.add_user_message("x")
    session.record_response(
        {"role": "assistant", "content": "y"}, {"prompt_tokens": 1, "completion_tokens": 1}
    )
    settings = session.runtime_settings()
    assert settings.runtime.mode == "fallback"
    assert session.status()["quarantined_engine"] == "faulty"
    other = host.open_session("t")
    assert other.guard.mode == "fallback" and other.guard.handle.name == "legacy"


def test_quarantine_is_readable_from_another_process(make_host, tmp_path):
    import json
    import os
    import subprocess
    import sys

    from .engines import faulty_engine

    host = make_host(faulty_engine("ingest", "raise"))
    host.open_session("s").add_user_message("x")
    code = (
        "import json; from ctxengine_host.stores.quarantine import QuarantineLog; "
        "print(json.dumps([r.__dict__ for r in QuarantineLog().records()]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        check=True,
    ).stdout
    records = json.loads(out)
    assert [(r["engine"], r["method"]) for r in records] == [("faulty", "ingest")]
    assert records[0]["pid"] == os.getpid()


def test_a_default_engine_failure_surfaces_and_the_transcript_is_unchanged(make_host):
    from ctxengine_host.runtime.isolation import EngineFailure
    from ctxengine_legacy.engine import LegacyEngine

    class BrokenLegacy(LegacyEngine):
        def update_from_response(self, usage):
            raise RuntimeError("legacy bug")

    host = make_host(BrokenLegacy())
    session = host.open_session("s")
    session.add_user_message("x")
    with pytest.raises(EngineFailure, match="legacy bug"):
        session.record_response(
            {"role": "assistant", "content": "y"}, {"prompt_tokens": 1, "completion_tokens": 1}
        )
    assert [r.message["content"] for r in host.store.rows("s")] == ["x", "y"]
    from ctxengine_host.stores.quarantine import QuarantineLog

    assert QuarantineLog().records() == []


def test_an_explicit_engine_failing_the_contract_is_quarantined_at_resolution(make_host):
    from ctxengine_host.stores.quarantine import QuarantineLog

    class WrongParameter(RecordingEngine):
        name = "wrong-parameter"

        def compress(self, messages, focus=None):
            return messages

    host = make_host(WrongParameter())
    assert host.engine_name == "legacy" and host.resolved.fallback
    assert "focus" in host.resolved.reason
    assert [(r.engine, r.method) for r in QuarantineLog().records()] == [
        ("wrong-parameter", "resolve")
    ]


def test_unmet_host_requirements_refuse_to_start(make_host):
    from ctxengine_host.discovery.slot import EngineSelectionError

    class NeedsMore(RecordingEngine):
        name = "needs-more"
        host_requirements = {"compact": {"capabilities": ["teleport"], "message": "beam me"}}

    with pytest.raises(EngineSelectionError, match="teleport"):
        make_host(NeedsMore())


def test_a_session_cannot_be_opened_twice_at_once(make_host):
    host = make_host(RecordingEngine())
    session = host.open_session("s")
    with pytest.raises(ValueError, match="already open"):
        host.open_session("s")
    session.end()
    host.open_session("s").end()


def test_a_summarizer_failure_aborts_the_compaction_without_quarantine(make_host):
    from ctxengine_host.stores.quarantine import QuarantineLog
    from ctxengine_host.summarizer import SummarizerError

    class NeedsSummaries(RecordingEngine):
        name = "needs-summaries"

        def compress(self, messages, current_tokens=None, focus_topic=None, force=False):
            raise SummarizerError("401 invalid api key")

    session = make_host(NeedsSummaries()).open_session("s")
    session.add_user_message("x")
    before = session.messages()
    event = session.compact()
    assert not event.ok and "401" in event.detail
    assert session.messages() == before
    assert QuarantineLog().records() == [] and session.guard.mode == "normal"


class MinimalEngine(ContextEngine):
    """The required methods only: every optional hook is the base class's default."""

    name = "minimal"

    def __init__(self, config=None, context=None):
        self.hang = False
        self.release = threading.Event()

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        if self.hang:
            self.release.wait(10)
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False):
        return messages


def test_a_default_runs_inline_but_an_engine_method_keeps_its_timeout(make_host):
    """Base-class defaults run only our code: no thread hop. The engine's own methods still
    run on a worker under their timeout (a hang falls back to the default engine)."""
    engine = MinimalEngine()
    host = make_host(engine, cfg=config(hook_timeout=HANG_TIMEOUT))
    session = host.open_session("s")
    assert session.guard.handle.inline >= {"update_model", "get_tool_schemas"}
    assert not session.guard.handle.inline & {"should_compress", "update_from_response"}
    workers = host.pool.created
    for _ in range(20):
        assert session.engine_call("get_tool_schemas") == []
        session.engine_call("update_model", model="gpt-4", context_length=8192)
    assert host.pool.created == workers and host.pool.stuck == 0
    engine.hang = True
    session.add_user_message("x")
    started = time.monotonic()
    session.record_response(
        {"role": "assistant", "content": "y"}, {"prompt_tokens": 1, "completion_tokens": 1}
    )
    assert time.monotonic() - started < 5
    assert session.guard.mode == "fallback"  # the hung should_compress timed out
    engine.release.set()


def test_observed_or_overridden_hooks_are_never_inline(make_host):
    engine = RecordingEngine()  # overrides nearly every optional hook
    handle = make_host(engine).open_session("s").guard.handle
    assert handle.inline <= {"update_model"} and not handle.inline & handle.implemented
    observed = EngineHandle(MinimalEngine(), "minimal", is_default=False, observers=[object()])
    assert observed.inline == frozenset()


def test_calls_sharing_a_hand_off_each_keep_their_own_timeout():
    """The second call's timeout runs from its own start, not the first's; the call after
    one that timed out never starts, even once the hung call returns."""
    pool = WorkerPool()
    ran: list[str] = []
    slow_then_fast = [(lambda: time.sleep(0.3) or "slow", 1.0), (lambda: "fast", 0.2)]
    assert pool.run_steps(slow_then_fast) == (["slow", "fast"], None)
    steps = [
        (lambda: "a", 1.0),
        (lambda: time.sleep(0.4) or "late", 0.1),
        (lambda: ran.append("third"), 1.0),
    ]
    results, failure = pool.run_steps(steps)
    assert results == ["a"]
    assert failure is not None and failure[0] == 1 and isinstance(failure[1], CallTimeout)
    time.sleep(0.6)
    assert ran == [] and pool.stuck == 0
    pool.close()


ANSWER = {"role": "assistant", "content": "y"}


class FailingUpdateEngine(RecordingEngine):
    name = "failing-update"

    def update_from_response(self, usage):
        self._rec("update_from_response", dict(usage))
        raise RuntimeError("broken usage bookkeeping")


def _open_with_a_user_message(make_host, engine):
    host = make_host(engine)
    session = host.open_session("s")
    session.add_user_message("x")
    return host, session


def _count_hand_offs(host) -> list[int]:
    """The number of calls in each hand-off the host's pool makes from now on."""
    hand_offs: list[int] = []
    run_steps = host.pool.run_steps
    host.pool.run_steps = lambda steps, stop=None: (
        hand_offs.append(len(steps)) or run_steps(steps, stop)
    )
    return hand_offs


def test_a_response_is_recorded_with_one_hand_off(make_host):
    """ingest, update_from_response and should_compress run back to back on one worker."""
    engine = RecordingEngine()
    host, session = _open_with_a_user_message(make_host, engine)
    hand_offs = _count_hand_offs(host)
    engine.calls.clear()
    session.record_response(ANSWER, {"prompt_tokens": 7, "completion_tokens": 1})
    assert hand_offs == [3]
    assert [method for method, _ in engine.calls] == [
        "ingest",
        "update_from_response",
        "should_compress",
    ]


def test_a_failure_in_a_shared_hand_off_sends_the_rest_to_the_default(make_host):
    engine = FailingUpdateEngine()
    _, session = _open_with_a_user_message(make_host, engine)
    engine.calls.clear()
    session.record_response(ANSWER, {"prompt_tokens": 7, "completion_tokens": 1})
    assert session.guard.mode == "fallback"
    assert [method for method, _ in engine.calls] == ["ingest", "update_from_response"]
    assert session.guard.engine is not engine  # should_compress went to the default


def test_preflight_and_selection_share_a_hand_off_unless_a_compaction_is_asked(make_host):
    engine = RecordingEngine()
    host, session = _open_with_a_user_message(make_host, engine)
    hand_offs = _count_hand_offs(host)
    engine.calls.clear()
    session.build_request()
    assert hand_offs == [2]
    assert [m for m, _ in engine.calls] == ["should_compress_preflight", "select_context"]
    session.guard.engine.preflight = True  # the selection waits for the compaction
    hand_offs.clear()
    engine.calls.clear()
    session.build_request()
    methods = [m for m, _ in engine.calls]
    assert methods[0] == "should_compress_preflight" and methods.count("select_context") == 1
    assert methods[-1] == "select_context" and hand_offs[0] == 2 and hand_offs[-1] == 1
