"""``[isolation] mode = "process"``: an engine stuck in C holding the GIL stops only its session.

The engines are real plugins-directory engines (``isolated_engines``), the
framework-ABC example plugin and the installed ``lcm`` entry point; every
worker is a real subprocess, killed for real.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ctxengine_host.config import ConfigError, LoadedConfig, parse_config
from ctxengine_host.discovery.slot import SlotChoice
from ctxengine_host.runtime.host import ContextHost, IsolationError
from ctxengine_host.runtime.isolation import CallTimeout, Timeouts, forget_quarantine
from ctxengine_host.runtime.process_engine import WorkerCrashed, start_process_engine
from ctxengine_host.runtime.process_worker import WorkerSpec
from ctxengine_host.stores.quarantine import QuarantineLog
from tests.testing_kit.framework_plugin import PLUGIN_NAME, write_plugin

from .engines import RecordingEngine
from .isolated_engines import write_stuck_engine

HOOK_TIMEOUT = 1.0
STUCK_SECONDS = 3.0


@pytest.fixture
def plugins_dir(tmp_path: Path) -> Path:
    path = tmp_path / "plugins"
    write_stuck_engine(path)
    write_plugin(path)
    return path


def isolation_config(
    plugins_dir: Path, isolation: str, hook_timeout: float = HOOK_TIMEOUT, **extra: str
) -> LoadedConfig:
    text = (
        f'[plugins]\ndirectory = "{plugins_dir}"\n'
        f"[compression]\nhook_timeout_seconds = {hook_timeout}\n"
        "context_timeout_seconds = 30\n" + isolation
    )
    for name, value in extra.items():
        text += f"\n[{name}]\n{value}\n"
    return LoadedConfig(config=parse_config(text, "test.toml"))


@pytest.fixture
def make_host(tmp_path, plugins_dir):
    hosts: list[ContextHost] = []

    def make(
        engine: object, isolation: str, hook_timeout: float = HOOK_TIMEOUT, **kwargs
    ) -> ContextHost:
        """A host; ``hook_timeout`` short by default, so a stuck call ends quickly."""
        host = ContextHost(
            engine,
            model="gpt-4",
            context_length=8192,
            config=isolation_config(plugins_dir, isolation, hook_timeout),
            store_path=tmp_path / "transcripts.db",
            data_dir=tmp_path / "data",
            quarantine=QuarantineLog(tmp_path / "quarantine.jsonl"),
            observers=[],
            **kwargs,
        )
        hosts.append(host)
        return host

    yield make
    for host in hosts:
        host.close()


def one_turn(session, text: str = "ping") -> None:
    session.add_user_message(text)
    session.build_request()
    session.record_response({"role": "assistant", "content": "pong"}, None)
    session.finish_turn()


def tool(session) -> dict:
    answer = json.loads(session.call_engine_tool("where", {}))
    assert "pid" in answer, answer  # an error (a timeout on a loaded machine) says which
    return answer


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


# --- the point: other sessions keep going ---------------------------------------------


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_an_engine_holding_the_gil_in_c_stalls_other_sessions_only_in_thread_mode(make_host, mode):
    host = make_host("stuck", f'[isolation.engines.stuck]\nmode = "{mode}"\n')
    busy, calm = host.open_session("busy"), host.open_session("calm")
    one_turn(calm)
    progress: list[float] = []
    stop = threading.Event()

    def keep_chatting() -> None:
        while not stop.is_set():
            one_turn(calm)
            progress.append(time.monotonic())
            time.sleep(0.01)

    chatter = threading.Thread(target=keep_chatting)
    chatter.start()
    time.sleep(0.3)
    started = time.monotonic()
    busy.add_user_message(f"STUCK {STUCK_SECONDS}")  # blocks in C with the GIL held
    returned = time.monotonic()
    time.sleep(0.5)
    stop.set()
    chatter.join(30)

    # Quarantine and fallback as in the fault table, whatever the mode.
    assert busy.status()["quarantined_engine"] == "stuck"
    assert busy.status()["engine"] == "legacy"
    assert any(r.engine == "stuck" and r.method == "ingest" for r in host.quarantine.records())
    assert busy.messages()[-1]["content"] == f"STUCK {STUCK_SECONDS}"  # stored, not lost

    marks = [started, *[p for p in progress if p > started], time.monotonic()]
    longest_stall = max(b - a for a, b in itertools.pairwise(marks))
    if mode == "process":
        assert returned - started < STUCK_SECONDS - 0.5, "the timeout did not stop the call"
        assert longest_stall < 1.5, f"the calm session stalled {longest_stall:.2f} s"
        assert len([p for p in progress if started < p < returned]) >= 3
    else:
        # Thread mode cannot do this: the stuck call holds the GIL, so every thread of
        # the host waits for it, the timeout included. This is why process mode exists.
        assert returned - started >= STUCK_SECONDS - 0.3
        assert longest_stall >= STUCK_SECONDS - 0.5, f"stalled only {longest_stall:.2f} s"


def test_a_backtracking_regex_is_killed_at_the_timeout_and_the_engine_comes_back(make_host):
    host = make_host("stuck", '[isolation]\nmode = "process"\n')
    session = host.open_session("regex")
    one_turn(session)
    first = tool(session)
    assert first["pid"] != os.getpid() and first["tokens"] == 2  # host services in the worker
    started = time.monotonic()
    session.add_user_message("REGEX")
    assert time.monotonic() - started < HOOK_TIMEOUT + 2.0
    assert gone(first["pid"]), "the worker stuck in the regex was not killed"
    record = host.quarantine.records()[-1]
    assert (record.engine, record.method) == ("stuck", "ingest")
    assert record.reason.startswith("CallTimeout")
    assert session.status()["engine"] == "legacy"
    one_turn(session)  # the fallback engine carries the session on

    forget_quarantine("stuck")  # as `ctxengine doctor --clear-quarantine` would
    fresh = host.open_session("after")
    after = tool(fresh)
    assert fresh.status()["engine"] == "stuck" and after["pid"] not in (first["pid"], os.getpid())
    assert after["rows"] == first["rows"] == 2  # the killed worker's writes are kept


def test_a_killed_worker_restarts_on_the_next_call_with_its_setup_replayed(tmp_path, plugins_dir):
    loaded = isolation_config(plugins_dir, '[isolation]\nmode = "process"\n')
    spec = WorkerSpec(
        SlotChoice("stuck", "config", "stuck"),
        loaded,
        str(tmp_path / "data"),
        "gpt-4",
        "cl100k_base",
    )
    engine = start_process_engine(spec, Timeouts(hook_seconds=1.5), lambda *a: None)
    try:
        engine.update_model(model="gpt-4", context_length=10_000)
        engine.threshold_percent = 0.5
        assert (engine.context_length, engine.threshold_percent) == (10_000, 0.5)
        pid = engine.worker_pid
        with pytest.raises(CallTimeout):
            engine.ingest(session_id="s", messages=[{"role": "user", "content": "STUCK 6"}])
        assert engine.worker_pid is None and gone(pid)
        answer = json.loads(engine.handle_tool_call(name="where", args={}))
        assert engine.restarts == 1 and answer["pid"] not in (pid, os.getpid())
        # The fresh worker's own attributes: update_model and the setting were replayed.
        assert (engine.context_length, engine.threshold_percent) == (10_000, 0.5)
    finally:
        engine.ctxengine_close()


def test_a_worker_that_dies_is_a_fault_like_an_exception(tmp_path, plugins_dir):
    loaded = isolation_config(plugins_dir, "")
    spec = WorkerSpec(
        SlotChoice("stuck", "config", "stuck"),
        loaded,
        str(tmp_path / "data"),
        "gpt-4",
        "cl100k_base",
    )
    engine = start_process_engine(spec, Timeouts(hook_seconds=5), lambda *a: None)
    try:
        os.kill(engine.worker_pid, 9)
        with pytest.raises(WorkerCrashed, match="died"):
            engine.should_compress(prompt_tokens=1)
        assert engine.should_compress(prompt_tokens=1) is False  # restarted
    finally:
        engine.ctxengine_close()


def test_a_worker_that_exits_mid_call_is_quarantined_and_the_session_goes_on(make_host):
    host = make_host("stuck", '[isolation]\nmode = "process"\n')
    session = host.open_session("exit")
    session.add_user_message("EXIT")
    record = host.quarantine.records()[-1]
    assert (record.engine, record.method) == ("stuck", "ingest")
    assert record.reason.startswith("WorkerCrashed") and "(exit 3)" in record.reason
    assert session.status()["engine"] == "legacy" and session.messages()[-1]["content"] == "EXIT"
    one_turn(session)


# --- every kind of engine, with its host services and stores ---------------------------


def test_a_framework_abc_engine_runs_in_a_worker(make_host):
    host = make_host(PLUGIN_NAME, f'[isolation.engines.{PLUGIN_NAME}]\nmode = "process"\n')
    assert host.resolved.entry.source == "directory" and host.engine.worker_pid != os.getpid()
    session = host.open_session("fw")
    for _ in range(3):
        one_turn(session, "tell me more " * 20)
    event = session.compact()
    assert session.status()["engine"] == PLUGIN_NAME and session.status()["mode"] == "normal"
    assert event is not None


def test_summaries_cross_the_boundary_and_are_recorded(make_host):
    host = make_host("stuck", '[isolation]\nmode = "process"\n')
    session = host.open_session("sum")
    for i in range(3):
        one_turn(session, f"we talked about topic {i} at length")
    event = session.compact()
    assert event.compacted and event.summary_levels, event
    assert session.messages()[0]["content"].startswith("Summary: ")


def test_message_views_and_the_transcript_reach_the_worker(make_host):
    host = make_host("stuck", '[isolation]\nmode = "process"\n')
    session = host.open_session("views")
    for i in range(3):
        one_turn(session, f"turn {i}")
    seen = tool(session)
    assert seen["transcript"] == [6, 6]  # maintain read the live view and the rows back
    assert seen["preflight"] == [5, "turn 2", True]  # the view as of the last request
    session.compact()  # a new live list: the worker's mirror starts over
    one_turn(session, "after")
    seen = tool(session)
    live, rows = len(session.messages()), len(host.store.rows("views"))
    assert seen["transcript"] == [live, rows] and rows > live
    assert seen["preflight"] == [live - 1, "after", True]


def test_the_lcm_entry_point_runs_in_a_worker_with_its_own_database(make_host, tmp_path):
    host = make_host("lcm", '[isolation.engines.lcm]\nmode = "process"\n')
    assert host.resolved.entry.source == "entry-point"
    session = host.open_session("lcm")
    for i in range(4):
        one_turn(session, f"the secret code is ZEBRA{i}")
    found = json.loads(session.call_engine_tool("lcm_grep", {"pattern": "ZEBRA2"}))
    assert "ZEBRA2" in json.dumps(found)
    assert session.status()["engine"] == "lcm" and session.status()["mode"] == "normal"
    assert list((tmp_path / "data" / "engines" / "lcm").iterdir())  # opened in the worker


def test_lcm_in_a_worker_keys_its_history_by_the_transcript_store(tmp_path, plugins_dir):
    """Issue #13 item 1 across the process boundary: two applications with their own
    transcript stores and one LCM database never share a session, in process mode too."""
    shared = tmp_path / "shared-lcm.db"
    lcm_block = {"engines.lcm": f'database = "{shared}"'}
    config = isolation_config(
        plugins_dir, '[isolation.engines.lcm]\nmode = "process"\n', **lcm_block
    )

    def app(name: str) -> ContextHost:
        return ContextHost(
            "lcm",
            model="gpt-4",
            context_length=8192,
            config=config,
            store_path=tmp_path / f"{name}.db",
            data_dir=tmp_path / f"data-{name}",
            quarantine=QuarantineLog(tmp_path / f"{name}-quarantine.jsonl"),
            observers=[],
        )

    with app("a") as a, a.open_session("chat") as chat:
        one_turn(chat, "my bank PIN is 4711")
    with app("b") as b, b.open_session("chat") as chat:
        chat.add_user_message("what do you know about me?")
        sent = json.dumps(chat.build_request().messages)
        assert b.engine.__class__.__name__ != "LcmEngine", "the engine runs in a worker"
    assert "4711" not in sent
    import sqlite3

    keys = sorted(
        r[0] for r in sqlite3.connect(shared).execute("SELECT session_id FROM conversations")
    )
    assert len(keys) == 2 and all(k.startswith("store:") and k.endswith("#chat") for k in keys)


def test_a_long_background_maintain_delays_the_next_call_without_a_quarantine(make_host):
    host = make_host("background", '[isolation]\nmode = "process"\n')
    session = host.open_session("bg")
    assert host.engine.turn_maintenance_mode == "background"
    one_turn(session, "SLOW")  # maintain now runs 2 s in the worker, past the hook timeout
    time.sleep(0.3)
    started = time.monotonic()
    session.add_user_message("next")  # ingest waits for the worker; its timeout starts when sent
    assert time.monotonic() - started > HOOK_TIMEOUT
    one_turn(session)
    assert host.quarantine.records() == [] and session.status()["engine"] == "background"


def test_sub_agents_get_workers_and_a_rollback_is_called_back(make_host):
    host = make_host("stuck", '[isolation]\nmode = "process"\n')
    parent = host.open_session("parent")
    one_turn(parent)
    child = parent.spawn_subagent("fork")
    assert tool(child)["pid"] not in (tool(parent)["pid"], os.getpid())
    rollback = parent.guard.engine.prepare_subagent_spawn(
        parent_session_id="parent", child_session_id="never", context_mode="isolated", ttl_s=None
    )
    rollback()  # the engine returned a closure: it runs in the parent's worker
    assert tool(parent)["rolled_back"] == ["never"]


def test_closing_the_host_stops_every_worker(make_host):
    # Nothing here is meant to time out: a loaded machine must not turn a call into one.
    host = make_host("stuck", '[isolation]\nmode = "process"\n', hook_timeout=30.0)
    sessions = [host.open_session(f"s{i}") for i in range(2)]
    pids = [tool(s)["pid"] for s in sessions] + [host.engine.worker_pid]
    sessions[0].end()
    assert gone(pids[0])
    host.close()
    assert all(gone(pid) for pid in pids)


# --- configuration ------------------------------------------------------------------------


def test_isolation_table_global_and_per_engine():
    cfg = parse_config('[isolation]\nmode = "process"\n[isolation.engines.lcm]\nmode = "thread"\n')
    assert cfg.isolation.mode_for("lcm") == "thread"
    assert cfg.isolation.mode_for("other") == "process"
    assert parse_config("").isolation.mode_for("lcm") == "thread"  # thread stays the default
    with pytest.raises(ConfigError, match=r"isolation\.mode"):
        parse_config('[isolation]\nmode = "container"\n')
    with pytest.raises(ConfigError, match=r"isolation\.engines\.lcm\.timeout"):
        parse_config("[isolation.engines.lcm]\ntimeout = 3\n")


def test_an_engine_that_fails_in_its_worker_leaves_the_default_running_here(make_host, plugins_dir):
    broken = plugins_dir / "misnamed"
    broken.mkdir()
    (broken / "plugin.toml").write_text('name = "misnamed"\n')
    source = (plugins_dir / "stuck" / "__init__.py").read_text()
    source = source.replace('name = "stuck"', 'name = "misnamed"')
    (broken / "__init__.py").write_text(source.replace("focus_topic=None", "focus=None"))
    host = make_host("misnamed", '[isolation]\nmode = "process"\n')
    assert host.engine_name == "legacy" and host.resolved.fallback
    assert "contract check failed" in host.resolved.reason
    [record] = host.quarantine.records()  # made in the worker, written by the host
    assert (record.engine, record.method) == ("misnamed", "resolve")
    one_turn(host.open_session("fine"))


def test_the_default_engine_always_runs_in_the_host(make_host):
    host = make_host(None, '[isolation]\nmode = "process"\n')
    assert host.engine_name == "legacy" and not hasattr(host.engine, "worker_pid")


def test_an_engine_instance_cannot_be_process_isolated(make_host):
    class Local(RecordingEngine):
        name = "local"

    with pytest.raises(IsolationError, match=r"\[isolation.engines.local\] mode = \"thread\""):
        make_host(Local(), '[isolation]\nmode = "process"\n')


def test_doctor_reports_the_isolation_mode_and_starts_a_worker(tmp_path, plugins_dir):
    config = tmp_path / "ctxengine.toml"
    config.write_text(
        f'[context]\nengine = "stuck"\n[plugins]\ndirectory = "{plugins_dir}"\n'
        '[isolation]\nmode = "thread"\n[isolation.engines.stuck]\nmode = "process"\n'
    )
    env = {**os.environ, "CTXENGINE_DATA_DIR": str(tmp_path / "data")}
    run = [sys.executable, "-m", "ctxengine_host.cli", "doctor", "--config", str(config)]
    result = subprocess.run([*run, "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    isolation = json.loads(result.stdout)["isolation"]
    assert isolation["mode"] == "thread" and isolation["engines"] == {"stuck": "process"}
    assert isolation["engine_mode"] == "process" and isolation["worker"]["ok"]
    text = subprocess.run(run, capture_output=True, text=True, env=env, timeout=60).stdout
    assert "isolation:  process for stuck ([isolation] mode = thread)" in text
