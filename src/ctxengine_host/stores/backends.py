"""Which transcript store a location names: a SQLite file, or a PostgreSQL server.

Apart from the two stores so that ``transcript`` (the SQLite store and the types every
store shares) does not import the PostgreSQL store, which imports it; psycopg is imported
only for a ``postgresql://`` location.
"""

from __future__ import annotations

from pathlib import Path

from .transcript import SQLiteTranscriptStore, TranscriptStore, default_store_path


def open_store(location: str | Path | None = None) -> TranscriptStore:
    """The store at ``location`` (a path, ``sqlite:///PATH`` or ``postgresql://…``;
    None: the default path)."""
    if location is None:
        return SQLiteTranscriptStore(default_store_path())
    text = str(location)
    if text.startswith(("postgresql://", "postgres://")):
        from .pg_transcript import PostgresTranscriptStore  # psycopg only for a server

        return PostgresTranscriptStore(text)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    return SQLiteTranscriptStore(text)
