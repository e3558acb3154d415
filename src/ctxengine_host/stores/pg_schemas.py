"""The host's PostgreSQL tables: a :class:`Schema` per component, its versions as steps.

Engines register theirs through the ``ctxengine.pg_schemas`` entry point group
(:func:`~ctxengine_host.stores.pg.registered_schemas`). Apart from the stores so that the
migration runner in ``pg`` lists them without importing the stores that use it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Schema:
    """One component's tables: ``steps[i]`` takes the component from version i to i+1.

    A step is SQL text, or a function of the connection for an upgrade that computes
    values in Python (it runs inside the component's migration transaction).
    """

    component: str
    steps: tuple[str | Callable[[Any], None], ...]

    @property
    def latest(self) -> int:
        return len(self.steps)


TRANSCRIPT_SCHEMA = Schema(
    "transcripts",
    (
        """
        CREATE TABLE transcript_sessions (
            session_id TEXT PRIMARY KEY,
            parent_session_id TEXT,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            ended_at DOUBLE PRECISION,
            turn_index INTEGER NOT NULL DEFAULT 0,
            system_prompt TEXT,
            tools TEXT,
            lease_epoch BIGINT NOT NULL DEFAULT 0
        );
        CREATE TABLE transcript_messages (
            row_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES transcript_sessions(session_id),
            message_uid TEXT NOT NULL,
            role TEXT NOT NULL,
            body TEXT NOT NULL,
            digest TEXT NOT NULL,
            absorbed_message_uids TEXT,
            tool_call_uids TEXT,
            tool_call_uid TEXT,
            origin TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX transcript_messages_by_session ON transcript_messages(session_id, row_id);
        CREATE INDEX transcript_messages_by_uid ON transcript_messages(message_uid);
        CREATE TABLE transcript_live (
            session_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            row_id BIGINT NOT NULL REFERENCES transcript_messages(row_id),
            PRIMARY KEY (session_id, position)
        );
        CREATE TABLE transcript_bootstraps (
            engine TEXT NOT NULL,
            session_id TEXT NOT NULL,
            done_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (engine, session_id)
        );
        """,
        # Version 2 (#13): the store's identity, one for every process of the deployment,
        # and the record of a reset in progress.
        """
        CREATE TABLE transcript_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO transcript_meta(key, value)
            VALUES ('store_id', replace(gen_random_uuid()::text, '-', ''));
        ALTER TABLE transcript_sessions ADD COLUMN reset_pending BOOLEAN NOT NULL DEFAULT FALSE;
        """,
    ),
)

QUARANTINE_SCHEMA = Schema(
    "quarantine",
    (
        """
        CREATE TABLE quarantine_records (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            engine TEXT NOT NULL,
            method TEXT NOT NULL,
            reason TEXT NOT NULL,
            time DOUBLE PRECISION NOT NULL,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX quarantine_records_by_engine ON quarantine_records(engine, id);
        """,
    ),
)
