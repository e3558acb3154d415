"""LCM schema version 2 (#13, item 3): the tsvector columns are split at path separators.
A version-1 store written by the previous release is migrated in place: every row and id
stays, and fragments of path-like tokens are found afterwards."""

from __future__ import annotations

import json

from ctxengine_host.stores.pg import Schema, migrate, parse_url, registered_schemas
from ctxengine_lcm.pg_store import LCM_SCHEMA, PgLcmStore
from ctxengine_lcm.search import fts_query

from .fixtures import fresh_schema_url, pg_connect

TEXTS = ["config in legacy/SZHY_3.cfg", "mail bob@corp.io about v1.2.3", "plain words only"]


def _at_version_1(pg_database: str) -> str:
    url = fresh_schema_url(pg_database, migrate=False)
    old = [
        Schema("lcm", LCM_SCHEMA.steps[:1]) if s.component == "lcm" else s
        for s in registered_schemas()
    ]
    migrate(parse_url(url), old)
    return url


def _write_version_1_rows(url: str) -> int:
    """Rows as the version-1 store writes them (the generated tsv of that version)."""
    with pg_connect(url) as conn:
        (conversation,) = conn.execute(
            "INSERT INTO lcm_conversations(session_id, generation, created_at) "
            "VALUES ('s', 0, 1.0) RETURNING id"
        ).fetchone()
        for seq, text in enumerate(TEXTS):
            conn.execute(
                "INSERT INTO lcm_messages(conversation_id, seq, message_uid, role, content, "
                "extra_json, token_count, context_tokens, created_at) "
                "VALUES (%s, %s, %s, 'user', %s, %s, 5, 5, %s)",
                (conversation, seq, f"{seq:032x}", text, json.dumps({"role": "user"}), seq + 1.0),
            )
        conn.execute(
            "INSERT INTO lcm_summaries(conversation_id, kind, depth, content, token_count, "
            "earliest_at, latest_at, first_seq, last_seq, descendant_messages, "
            "descendant_summaries, source_tokens, created_at, summarizer_level) "
            "VALUES (%s, 'leaf', 0, 'saw legacy/SZHY_3.cfg', 4, 1, 3, 0, 2, 3, 0, 15, 4, 0)",
            (conversation,),
        )
        conn.commit()
    return conversation


def _rows(url: str) -> list[tuple]:
    with pg_connect(url) as conn:
        return (
            conn.execute(
                "SELECT id, conversation_id, seq, message_uid, content FROM lcm_messages "
                "ORDER BY id"
            ).fetchall()
            + conn.execute("SELECT id, content FROM lcm_summaries ORDER BY id").fetchall()
        )


def test_migrate_splits_the_index_of_a_version_1_store_and_keeps_every_row(pg_database):
    url = _at_version_1(pg_database)
    conversation = _write_version_1_rows(url)
    before = _rows(url)
    migrate(parse_url(url))
    assert _rows(url) == before
    store = PgLcmStore(url)
    for pattern, target in (("SZHY", "messages"), ("SZHY_3", "summaries"), ("corp", "messages")):
        query = fts_query(pattern)
        hits = store.search_fulltext([conversation], query.expression, target, None, None, 10,
                                     False, 100)  # fmt: skip
        assert len(hits) == 1, pattern
