"""Hostile and malformed input, property-based: the host and the engines never crash on it.

Profiles (tests/reliability/conftest.py): ``ci`` by default, ``HYPOTHESIS_PROFILE=soak``
for a long run. Each property counts its examples into the report's figures.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxengine_host.config import (
    CompressionSection,
    ConfigError,
    CtxConfig,
    LoadedConfig,
    load_config,
    parse_config,
)
from ctxengine_host.contract.models import PERSISTENCE_ONLY_FIELDS
from ctxengine_host.runtime.host import ContextHost
from ctxengine_host.runtime.isolation import is_quarantined
from ctxengine_host.runtime.validity import ValidityError, sequence_problems

from . import strategies as hs

_ids = itertools.count()


class Examples:
    """Counts the examples a property ran, for the report."""

    def __init__(self, figures, name: str) -> None:
        self.figures, self.name, self.count = figures, name, 0
        self.outcomes: Counter[str] = Counter()

    def tick(self, outcome: str | None = None) -> None:
        self.count += outcome is None
        if outcome:
            self.outcomes[outcome] += 1

    def done(self) -> None:
        self.figures(
            "hypothesis", property=self.name, examples=self.count, outcomes=dict(self.outcomes)
        )


@pytest.fixture
def examples(request, figures):
    counter = Examples(figures, request.node.name)
    yield counter
    counter.done()


def lcm_config(tmp_path: Path, **lcm) -> LoadedConfig:
    cfg = CtxConfig(
        compression=CompressionSection(hook_timeout_seconds=20, context_timeout_seconds=20),
        engines={"lcm": {"database": str(tmp_path / "lcm.db"), **lcm}},
    )
    cfg.context.reserve_output_tokens = 512
    return LoadedConfig(config=cfg)


@pytest.fixture
def lcm_host(make_host, tmp_path) -> ContextHost:
    host = make_host("lcm", cfg=lcm_config(tmp_path, grep_regex_timeout_seconds=0.5))
    assert host.engine_name == "lcm"
    return host


def _texts(rows) -> list[str]:
    return [json.dumps(r.message.get("content"), sort_keys=True, default=str) for r in rows]


# ------------------------------------------------------------------------ message lists


@given(batch=hs.batches, repair=st.booleans())
def test_a_hostile_batch_is_stored_whole_or_refused_whole(lcm_host, examples, batch, repair):
    examples.tick()
    with lcm_host.open_session(f"h{next(_ids)}") as session:
        examples.tick(_store_whole_or_refuse(lcm_host, session, batch, repair))
    assert not is_quarantined("lcm"), "hostile input made the LCM engine fail"


def _store_whole_or_refuse(lcm_host, session, batch, repair) -> str:
    before_rows = lcm_host.store.count_rows(session.session_id)
    try:
        session.add_messages(batch, repair_input=repair)
    except ValidityError as exc:
        assert str(exc), "a refusal names the problem"
        assert lcm_host.store.count_rows(session.session_id) == before_rows
        assert session.messages() == []
        outcome = "refused"
    else:
        outcome = "stored"
        rows = lcm_host.store.rows(session.session_id)
        users = [m for m in batch if m.get("role") == "user"]
        stored_users = [r.message for r in rows if r.message.get("role") == "user"]
        assert len(rows) >= len(batch) if repair else len(rows) == len(batch)
        if not repair:
            assert _texts(rows) == [json.dumps(m.get("content"), sort_keys=True, default=str)
                                    for m in batch]  # fmt: skip
        for user in users:  # repair never drops what the user said
            assert any(
                str(user.get("content") or "") in str(s.get("content")) for s in stored_users
            )
    try:
        request = session.build_request()
    except ValidityError:
        return outcome  # no user message yet, or calls awaiting results: a clear refusal
    assert sequence_problems(request.messages) == []
    json.dumps(request.messages, default=str)
    assert not any(k in m for m in request.messages for k in PERSISTENCE_ONLY_FIELDS)
    return outcome + "+request"


# ------------------------------------------------------------------------ engine tools

_AUDITED = ("open", "os.mkdir", "os.rename", "os.remove", "os.symlink", "sqlite3.connect")
_touched: list[str] = []
_auditing = [False]


def _audit(event: str, args: tuple) -> None:
    if _auditing[0] and event in _AUDITED and args:
        _touched.append(str(args[0]))


sys.addaudithook(_audit)


class FilesTouched:
    """Paths opened or created (files, directories, SQLite databases) inside the block."""

    def __enter__(self) -> list[str]:
        _touched.clear()
        _auditing[0] = True
        return _touched

    def __exit__(self, *exc: object) -> None:
        _auditing[0] = False


def _engine_tools(session) -> list[dict]:
    return [t["function"] for t in session.tools if t["function"]["name"].startswith("lcm_")]


def _seed_history(session, n: int = 6) -> None:
    for i in range(n):
        session.add_user_message(f"question {i} about port {8000 + i} and aaaaaaaaaaaaaaaaaaaa!")
        session.record_response({"role": "assistant", "content": f"answer {i}: zebra{i}"}, None)
    session.compact()


def _inside(path: str, root: Path) -> bool:
    if path in (":memory:", "") or path.isdigit():
        return True  # in-memory databases, file descriptors
    try:
        return Path(path).resolve().is_relative_to(root.resolve())
    except (OSError, ValueError):
        return False


@given(data=st.data())
def test_every_engine_tool_answers_any_arguments_with_json(
    lcm_host, examples, data, tmp_path_factory
):
    examples.tick()
    with lcm_host.open_session("tools") as session:
        if not session.messages():
            _seed_history(session)
        schemas = _engine_tools(session)
        assert {s["name"] for s in schemas} == {"lcm_grep", "lcm_expand", "lcm_describe"}
        schema = data.draw(st.sampled_from(schemas))
        args = data.draw(hs.tool_args(schema))
        root = Path(lcm_host.store.location).parent
        started = time.monotonic()
        with FilesTouched() as touched:
            out = session.call_engine_tool(schema["name"], args)
        assert time.monotonic() - started < 5
        assert isinstance(json.loads(out), dict)
        assert [p for p in touched if not _inside(p, root)] == []
        assert not is_quarantined("lcm")


def test_the_lcm_tools_are_every_shipped_engine_tool():
    """The tool property above covers every tool our engines ship: legacy has none."""
    from ctxengine_legacy.engine import LegacyEngine

    assert LegacyEngine().get_tool_schemas() == []


CATASTROPHIC = [
    r"(a+)+$",
    r"(a|aa)+$",
    r"(a*)*b",
    r"^(([a-z])+.)+[A-Z]([a-z])+$",
    r"(x+x+)+y",
    r"(?:a|a?)+$",
    "(" * 300 + "a" + ")" * 300 + "+$",
    "|".join(f"a{{{i}}}" for i in range(1, 120)),
]


@pytest.mark.parametrize("pattern", CATASTROPHIC, ids=range(len(CATASTROPHIC)))
def test_catastrophic_regexes_return_within_the_bound(lcm_host, pattern):
    session = lcm_host.open_session("regex")
    session.add_user_message("a" * 30_000 + "!")
    session.record_response({"role": "assistant", "content": "x" * 20_000}, None)
    started = time.monotonic()
    out = json.loads(session.call_engine_tool("lcm_grep", {"pattern": pattern, "mode": "regex"}))
    elapsed = time.monotonic() - started
    assert elapsed < 5.0, f"{pattern[:40]!r} took {elapsed:.1f} s (timeout is 0.5 s)"
    assert "results" in out or "error" in out
    assert "failed" not in out.get("error", "")


@pytest.mark.parametrize(
    "pattern",
    ["a" * 100_000, "(" * 50_000, " ".join(["word"] * 20_000), "\\" * 5_000, "x" * 1000],
    ids=["100k chars", "50k parens", "20k words", "5k backslashes", "at the limit"],
)
@pytest.mark.parametrize("mode", ["full_text", "regex"])
def test_very_long_patterns_return_quickly(lcm_host, pattern, mode):
    session = lcm_host.open_session("long")
    session.add_user_message("some history " * 50)
    started = time.monotonic()
    out = json.loads(session.call_engine_tool("lcm_grep", {"pattern": pattern, "mode": mode}))
    assert time.monotonic() - started < 5.0
    assert ("results" in out) or ("error" in out and "failed" not in out["error"])


FTS_SYNTAX = st.lists(
    st.sampled_from(
        ['"', "'", "*", "^", "-", "+", ":", "(", ")", "{", "}", "NEAR(", "NEAR/2", "AND",
         "OR", "NOT", "content:", "messages_fts:", "rowid", "*zebra", "zebrasecret", "zebra*",
         "secret", ";", "DROP TABLE messages;--", "\x00", "\\", "'); --", "c0lumn:x"]
    ) | hs.words,
    min_size=1,
    max_size=8,
).map(" ".join)  # fmt: skip


@given(pattern=FTS_SYNTAX, sort=st.sampled_from(["recency", "relevance"]))
def test_fts_syntax_cannot_escape_the_query_or_the_session(lcm_host, examples, pattern, sort):
    examples.tick()
    victim = lcm_host.open_session("victim") if "victim" not in _open(lcm_host) else None
    if victim is not None:
        victim.add_user_message("the password is zebrasecret, keep it secret")
        victim.record_response({"role": "assistant", "content": "noted zebrasecret"}, None)
    attacker = _open(lcm_host).get("attacker") or lcm_host.open_session("attacker")
    if not attacker.messages():
        attacker.add_user_message("my own notes about zebras and secrets")
    out = json.loads(
        attacker.call_engine_tool("lcm_grep", {"pattern": pattern, "sort": sort, "limit": 100})
    )
    if "error" in out:
        assert "failed" not in out["error"], out["error"]  # an argument error, not SQL's
    else:
        leaked = "zebrasecret" in json.dumps(out["results"])
        assert not leaked, "a query reached another session's history"
    assert not is_quarantined("lcm")


def _open(host: ContextHost) -> dict:
    return {s.session_id: s for s in list(host._sessions.values())}


@pytest.mark.parametrize(
    "ref",
    ["../../etc/passwd", "/etc/passwd", "msg_1/../../../etc/passwd", "file:///etc/passwd",
     "sum_1\x00.db", "~/.ssh/id_rsa", "msg_" + "9" * 18, "msg_" + "9" * 19, "sum_0", "msg_-1",
     "..\\..\\windows\\win.ini", "0" * 31 + "/"],
)  # fmt: skip
def test_ids_cannot_reach_files_outside_the_store(lcm_host, ref):
    session = lcm_host.open_session("ids")
    session.add_user_message("hello")
    root = Path(lcm_host.store.location).parent
    with FilesTouched() as touched:
        for tool in ("lcm_expand", "lcm_describe"):
            out = json.loads(session.call_engine_tool(tool, {"id": ref, "include_content": True}))
            assert "error" in out and "failed" not in out["error"]
    assert [p for p in touched if not _inside(p, root)] == []


@pytest.mark.parametrize(
    "session_id", ["a/../../../../tmp/escape", "x/../../y", "..", "a:/etc/passwd", "a@../../b"]
)
def test_session_ids_never_become_file_paths(make_host, tmp_path, session_id):
    host = make_host("lcm", cfg=lcm_config(tmp_path))
    root = tmp_path
    try:
        with FilesTouched() as touched:
            session = host.open_session(session_id)
            session.add_user_message("hi")
            session.build_request()
            session.end()
    except ValueError as exc:
        assert "invalid session id" in str(exc)
        return
    assert [p for p in touched if not _inside(p, root)] == []


# ------------------------------------------------------------------------ config files


@given(tables=hs.config_tables)
def test_any_config_file_loads_or_fails_with_a_config_error(examples, tables, tmp_path_factory):
    examples.tick()
    text = hs.to_toml(tables)
    try:
        loaded = LoadedConfig(config=parse_config(text, "ctxengine.toml"))
    except ConfigError as exc:
        assert "ctxengine.toml" in str(exc)
        return
    work = tmp_path_factory.mktemp("cfg")
    try:
        host = ContextHost(
            config=loaded, store_path=work / "t.db", observers=[], context_length=8192
        )
    except (ConfigError, ValueError) as exc:  # EngineSelectionError is a ValueError
        assert str(exc)
        return
    try:
        session = host.open_session("c")
        session.add_user_message("hello")
        session.build_request()
    except (ConfigError, ValueError) as exc:
        assert str(exc)
    finally:
        host.close()


@given(text=hs.any_text | st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
def test_any_config_text_parses_or_fails_with_a_config_error(examples, text):
    examples.tick()
    try:
        parse_config(text, "x.toml")
    except ConfigError as exc:
        assert "x.toml" in str(exc)


@given(raw=st.binary(min_size=1, max_size=200))
def test_any_config_file_bytes_load_or_fail_with_a_config_error(raw, tmp_path_factory):
    path = tmp_path_factory.mktemp("raw") / "config.toml"
    path.write_bytes(b"\xff" + raw)
    with pytest.raises(ConfigError, match=r"config\.toml"):
        load_config(path)
