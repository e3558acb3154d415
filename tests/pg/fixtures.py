"""PostgreSQL fixtures shared by tests/pg and the backend-parametrized store tests.

Every test gets a schema of its own, named with this test session's prefix, in the
server's ``test`` database; the session drops its schemas at the end (dropping a
whole database would force a checkpoint, seconds on a busy machine). Runs and tests
never see each other's rows: tables, and advisory-lock keys, are per schema.
No server on 127.0.0.1:5432: the tests skip with the reason, except under CI (``CI``
set), where they fail, unless ``.ci/run`` found no PostgreSQL installed at all
(``CTXENGINE_PG_ABSENT``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

#: The database the test schemas live in (override for a server elsewhere on this machine).
SERVER = os.environ.get("CTXENGINE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
#: Schemas of this test session start with it.
PREFIX = f"t{os.getpid()}{uuid.uuid4().hex[:6]}_"


def _unavailable(reason: str) -> None:
    if os.environ.get("CTXENGINE_PG_ABSENT"):
        pytest.skip(f"no PostgreSQL installed on this machine (.ci/run checked): {reason}")
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is required under CI: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL tests need a server ({SERVER}): {reason}")


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """The URL of the database the tests use (checked to answer); its test schemas are
    dropped at the end of the session."""
    try:
        import psycopg
    except ImportError:
        _unavailable("psycopg is not installed (pip install 'ctxengine-host[postgres]')")
    try:
        with psycopg.connect(SERVER, autocommit=True, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        _unavailable(str(exc).strip().splitlines()[0])
    yield SERVER
    from ctxengine_host.stores.pg import close_pools

    close_pools()
    with psycopg.connect(SERVER, autocommit=True) as conn:
        names = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE starts_with(nspname, %s)", (PREFIX,)
        ).fetchall()
        for (name,) in names:
            conn.execute(f'DROP SCHEMA "{name}" CASCADE')


def fresh_schema_url(database_url: str, migrate: bool = True) -> str:
    """A URL naming a new, empty schema in ``database_url`` (migrated unless told not to)."""
    from ctxengine_host.stores.pg import migrate as apply
    from ctxengine_host.stores.pg import parse_url

    separator = "&" if "?" in database_url else "?"
    url = f"{database_url}{separator}schema={PREFIX}{uuid.uuid4().hex[:10]}"
    if migrate:
        apply(parse_url(url))
    else:
        with pg_connect(database_url, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{parse_url(url).schema}"')
    return url


@pytest.fixture
def pg_url(pg_database: str) -> str:
    """A migrated schema of its own for one test."""
    return fresh_schema_url(pg_database)


def pg_connect(url: str, **kwargs):
    """A plain psycopg connection to ``url``'s database and schema (for checks by SQL)."""
    import psycopg

    from ctxengine_host.stores.pg import parse_url

    return psycopg.connect(parse_url(url).conninfo, **kwargs)
