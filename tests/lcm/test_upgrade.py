"""Stores written by schema 1 (commit cd381cc, ``fixtures/make_v1_stores.py``) upgrade
without losing or mis-attributing anything (issue #13, rule b), on both backends.

The fixture: two applications shared the default LCM database; app A's transcript holds
session ``chat`` (summaries, a reset, two conversation generations), app B's ``notes``.
On SQLite the files are upgraded on open; on PostgreSQL the same rows are loaded into
tables made by the schema-1 steps, then ``migrate`` runs the new steps.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import check_invariants, query
from pg.fixtures import fresh_schema_url, pg_connect

from ctxengine_host.config import CtxConfig, LoadedConfig
from ctxengine_host.runtime.host import ContextHost
from ctxengine_host.stores.backends import open_store
from ctxengine_host.stores.pg import Schema, is_postgres_url, migrate, parse_url, registered_schemas
from ctxengine_host.stores.transcript import SCHEMA_VERSION
from ctxengine_lcm.render import stored_digest

FIXTURES = Path(__file__).parent / "fixtures" / "v1_stores"
LCM_TABLES = (
    "conversations",
    "messages",
    "summaries",
    "summary_messages",
    "summary_sources",
    "context_items",
    "grants",
)
TRANSCRIPT_TABLES = ("sessions", "messages", "live", "bootstraps")
BOOLEAN_COLUMNS = {"is_current", "externalized"}
IDENTITY_COLUMNS = {
    "lcm_conversations": "id",
    "lcm_messages": "id",
    "lcm_summaries": "id",
    "lcm_grants": "id",
    "transcript_messages": "row_id",
}


def sqlite_rows(path: Path, table: str) -> tuple[list[str], list[tuple]]:
    conn = sqlite3.connect(path)
    try:
        cursor = conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")
        return [c[0] for c in cursor.description], cursor.fetchall()
    finally:
        conn.close()


def load_into_pg(url: str, source: Path, tables: tuple[str, ...], prefix: str) -> None:
    """Copy a schema-1 SQLite store's rows into the schema-1 PostgreSQL tables."""
    with pg_connect(url) as conn:
        for table in tables:
            columns, rows = sqlite_rows(source, table)
            if not rows:
                continue
            flags = [c in BOOLEAN_COLUMNS for c in columns]
            values = [
                tuple(bool(v) if f else v for v, f in zip(r, flags, strict=True)) for r in rows
            ]
            marks = ", ".join(["%s"] * len(columns))
            conn.cursor().executemany(
                f"INSERT INTO {prefix}{table}({', '.join(columns)}) OVERRIDING SYSTEM VALUE "
                f"VALUES ({marks})",
                values,
            )
            key = IDENTITY_COLUMNS.get(prefix + table)
            if key:  # the next id the old code would have given
                conn.execute(
                    f"SELECT setval(pg_get_serial_sequence('{prefix}{table}', '{key}'), "
                    f"(SELECT MAX({key}) FROM {prefix}{table}))"
                )
        conn.commit()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def v1(request, tmp_path) -> dict[str, str]:
    """Where the schema-1 stores are: the LCM database and each app's transcript store."""
    for name in ("appA.db", "appB.db", "lcm.db"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    world = {
        "lcm": str(tmp_path / "lcm.db"),
        "appA": str(tmp_path / "appA.db"),
        "appB": str(tmp_path / "appB.db"),
    }
    if request.param == "postgresql":
        url = fresh_schema_url(request.getfixturevalue("pg_database"), migrate=False)
        first = [Schema(s.component, s.steps[:1]) for s in registered_schemas()]
        migrate(parse_url(url), first)
        load_into_pg(url, tmp_path / "lcm.db", LCM_TABLES, "lcm_")
        load_into_pg(url, tmp_path / "appA.db", TRANSCRIPT_TABLES, "transcript_")
        migrate(parse_url(url))  # the new steps
        world.update(lcm=url, appA=url)
    return world


def app(tmp_path: Path, name: str, v1: dict[str, str]) -> ContextHost:
    cfg = CtxConfig(engines={"lcm": {"database": v1["lcm"]}})
    cfg.context.reserve_output_tokens = 200
    return ContextHost(
        "lcm",
        store_path=v1[name],
        data_dir=tmp_path / f"data-{name}",
        config=LoadedConfig(config=cfg),
        observers=[],
        model="gpt-4",
        context_length=8000,
    )


def lcm_messages(database: str) -> list[tuple]:
    return query(
        database,
        "SELECT m.id, c.session_id, c.generation, m.seq, m.message_uid, m.content, m.digest "
        "FROM lcm_messages m JOIN lcm_conversations c ON c.id = m.conversation_id ORDER BY m.id",
    )


def test_the_transcript_stores_upgrade_with_every_row_kept(tmp_path, v1):
    old = {t: sqlite_rows(FIXTURES / "appA.db", t)[1] for t in TRANSCRIPT_TABLES}
    store = open_store(v1["appA"])
    try:
        assert len(store.store_id) == 32
        row = store.get_session("chat")
        assert row is not None and not row.reset_pending and row.turn_index == 12
        rows = store.rows("chat")
        assert [(r.row_id, r.message["message_uid"], r.digest) for r in rows] == [
            (m[0], m[2], m[5]) for m in old["messages"]
        ]
        assert [r.row_id for r in store.live("chat")] == [x[2] for x in old["live"]]
        assert store.is_bootstrapped("lcm", "chat")
    finally:
        store.close()
    if not is_postgres_url(v1["appA"]):
        conn = sqlite3.connect(v1["appA"])
        version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        conn.close()
        assert version == (str(SCHEMA_VERSION),)


def test_the_lcm_store_upgrades_with_every_message_and_summary_kept(tmp_path, v1):
    old_messages = sqlite_rows(FIXTURES / "lcm.db", "messages")[1]
    old_summaries = sqlite_rows(FIXTURES / "lcm.db", "summaries")[1]
    with app(tmp_path, "appB", v1):  # opening the engine's store upgrades a SQLite file
        pass
    from ctxengine_lcm.backend import open_lcm_store
    from ctxengine_lcm.config import LcmConfig

    open_lcm_store(LcmConfig(database=v1["lcm"]), tmp_path).close()
    now = lcm_messages(v1["lcm"])
    assert [(m[0], m[3], m[4], m[5]) for m in now] == [
        (r[0], r[2], r[3], r[5]) for r in old_messages
    ]
    # Every old row got the digest of what it says: the transcript's digest of that uid.
    transcripts = {}
    for name in ("appA.db", "appB.db"):
        for r in sqlite_rows(FIXTURES / name, "messages")[1]:
            transcripts[r[2]] = r[5]
    assert {m[4]: m[6] for m in now} == {r[3]: transcripts[r[3]] for r in old_messages}
    assert all(stored_digest(r[3], r[5], r[6]) == transcripts[r[3]] for r in old_messages)
    assert len(query(v1["lcm"], "SELECT id FROM lcm_summaries")) == len(old_summaries)
    counts = check_invariants(v1["lcm"])
    assert counts["messages"] == len(old_messages)


def test_each_application_claims_its_own_history_and_nothing_else(tmp_path, v1):
    with app(tmp_path, "appA", v1) as a:
        with a.open_session("chat") as chat:
            chat.add_user_message("what did we discuss?")
            sent = json.dumps(chat.build_request().messages)
            found = json.loads(chat.call_engine_tool("lcm_grep", {"pattern": "appAw2x5"}))
        with a.open_session("notes") as notes:  # A never had "notes": B's must not show
            notes.add_user_message("anything noted?")
            leaked = json.dumps(notes.build_request().messages)
        a_id = a.store.store_id
    assert "[appA] question 11" in sent and "[appB]" not in sent
    assert "[appA] question 3" not in sent  # before the reset: not in the live history
    assert "appAw2x5" in found["results"][0]["snippet"]  # pre-reset, found through FTS
    assert "[appB]" not in leaked
    with app(tmp_path, "appB", v1) as b, b.open_session("notes") as notes:
        notes.add_user_message("and now?")
        sent_b = json.dumps(notes.build_request().messages)
        b_id = b.store.store_id
    assert "[appB] question 3" in sent_b and "[appA]" not in sent_b
    owners = query(
        v1["lcm"], "SELECT session_id, generation, is_current FROM lcm_conversations ORDER BY id"
    )
    assert [(o[0], o[1]) for o in owners[:3]] == [
        (f"store:{a_id}#chat", 0),
        (f"store:{a_id}#chat", 1),
        (f"store:{b_id}#notes", 0),
    ]
    assert {o[0] for o in owners[3:]} == {f"store:{a_id}#notes"}
    check_invariants(v1["lcm"])
