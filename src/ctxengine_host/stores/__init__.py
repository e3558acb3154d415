"""The stores: transcripts and quarantine records, in SQLite or PostgreSQL.

``transcript`` and ``quarantine`` are the SQLite defaults (``sqlite_schema`` their schema
versions); the ``pg_*`` modules are the server backends, imported only when a
``postgresql://`` URL is configured.
"""
