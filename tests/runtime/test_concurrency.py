"""Many sessions on threads sharing one host and one store."""

from __future__ import annotations

import threading

from .driver import drive, transcript
from .engines import SummarizingEngine

SESSIONS = 16


def test_sixteen_sessions_on_threads_share_one_host(make_host):
    engine = SummarizingEngine()
    engine.compress_on_prompt_tokens = {222}
    host = make_host(engine)
    errors: list[BaseException] = []
    reports: dict[str, list] = {}

    def run(index: int) -> None:
        try:
            reports[f"t{index}"] = drive(host, f"t{index}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(SESSIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert len(reports) == SESSIONS
    stored = transcript(host)
    sample = stored["t0"]
    assert len(sample) == 8
    for i in range(SESSIONS):
        assert stored[f"t{i}"] == sample, f"session t{i} differs"
        assert stored[f"t{i}/sub"] == stored["t0/sub"]
        assert [r.turn for r in reports[f"t{i}"]] == [0, 1, 2]
        assert any(e.reason == "threshold" for e in reports[f"t{i}"][1].compactions)
    uids = [
        r.message["message_uid"]
        for sid in host.store.session_ids()
        for r in host.store.rows(sid)
        if r.origin == "input"
    ]
    assert len(uids) == len(set(uids))


def test_threads_see_one_quarantine(make_host):
    from ctxengine_host.stores.quarantine import QuarantineLog

    from .engines import faulty_engine

    engine = faulty_engine("ingest", "raise")
    host = make_host(engine)
    threads = [threading.Thread(target=drive, args=(host, f"q{i}")) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    records = QuarantineLog().records("faulty")
    assert 1 <= len(records) <= 4  # sessions racing on their first ingest may each record
    assert all(r.method == "ingest" for r in records)
