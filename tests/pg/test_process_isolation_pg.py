"""Process isolation over PostgreSQL: the LCM engine in a worker opens its own pool.

Transcripts in one schema, the LCM database in another; the engine writes from its
worker process, and a thread-mode host started afterwards reads the same history.
"""

from __future__ import annotations

import json
import os

from ctxengine_host.config import LoadedConfig, parse_config
from ctxengine_host.runtime.host import ContextHost
from ctxengine_host.stores.quarantine import QuarantineLog

from .fixtures import fresh_schema_url


def lcm_host(tmp_path, store_url: str, lcm_url: str, mode: str) -> ContextHost:
    text = f'[engines.lcm]\ndatabase = "{lcm_url}"\n[isolation.engines.lcm]\nmode = "{mode}"\n'
    return ContextHost(
        "lcm",
        model="gpt-4",
        context_length=8192,
        config=LoadedConfig(config=parse_config(text, "test.toml")),
        store_path=store_url,
        data_dir=tmp_path / "data",
        quarantine=QuarantineLog(tmp_path / "quarantine.jsonl"),
        observers=[],
    )


def test_lcm_in_a_worker_writes_to_postgresql_and_a_later_host_reads_it(
    tmp_path, pg_url, pg_database
):
    lcm_url = fresh_schema_url(pg_database)
    host = lcm_host(tmp_path, pg_url, lcm_url, "process")
    try:
        assert host.engine.worker_pid != os.getpid()
        session = host.open_session("chat")
        for i in range(3):
            session.add_user_message(f"remember the locker code QUOKKA{i}")
            session.build_request()
            session.record_response({"role": "assistant", "content": "noted"}, None)
            session.finish_turn()
        found = session.call_engine_tool("lcm_grep", {"pattern": "QUOKKA1"})
        assert "QUOKKA1" in found and session.status()["mode"] == "normal"
    finally:
        host.close()
    later = lcm_host(tmp_path, pg_url, lcm_url, "thread")
    try:
        resumed = later.open_session("chat")
        found = json.loads(resumed.call_engine_tool("lcm_grep", {"pattern": "QUOKKA2"}))
        assert "QUOKKA2" in json.dumps(found)
    finally:
        later.close()
