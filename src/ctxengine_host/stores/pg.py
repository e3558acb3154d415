"""Shared PostgreSQL plumbing for the server backends: URLs, pools, schema versions, locks.

Several host processes share one database, so everything here is about agreeing:
one pool per URL and process, schema versions that ``ctxengine migrate`` applies
and every store checks when it opens, and advisory-lock keys derived the same way
in every process. psycopg is imported lazily: SQLite users never need it.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from .pg_deadlines import WATCH
from .pg_schemas import QUARANTINE_SCHEMA, TRANSCRIPT_SCHEMA, Schema

SCHEMES = ("postgresql", "postgres")
#: Entry point group through which an engine distribution registers its schema.
SCHEMA_GROUP = "ctxengine.pg_schemas"
#: Our own URL query parameter: the PostgreSQL schema (namespace) holding the tables.
SCHEMA_PARAM = "schema"
POOL_SIZE_ENV = "CTXENGINE_PG_POOL_SIZE"
#: How long a cancel request at a read deadline may take to reach the server.
CANCEL_TIMEOUT_SECONDS = 2.0
VERSION_TABLE = "ctxengine_schema_versions"
_MIGRATE_LOCK = "ctxengine:migrate"
_FIX = "use postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=NAME]"


class PgUrlError(ValueError):
    """A ``postgresql://`` URL that cannot be used; the message names the part and the fix."""


class PgUnavailable(RuntimeError):
    """The server cannot be reached, or the connection broke; the transaction was rolled back."""


class SchemaBehindError(RuntimeError):
    """The database schema is older than this code (or missing): run ``ctxengine migrate``."""


def is_postgres_url(location: object) -> bool:
    """True for ``postgresql://`` and ``postgres://`` URLs (a path or sqlite URL is False)."""
    return (
        isinstance(location, str)
        and location.split("://", 1)[0].lower() in SCHEMES
        and ("://" in location)
    )


@dataclass(frozen=True)
class PgTarget:
    """A validated URL: the libpq conninfo, a password-free label, and the namespace."""

    url: str
    conninfo: str
    label: str
    database: str
    schema: str

    @property
    def namespace(self) -> str:
        """What advisory-lock keys are scoped by (one database and schema)."""
        return f"{self.database}/{self.schema}"


def parse_url(url: str) -> PgTarget:
    """Validate ``url`` and turn it into a :class:`PgTarget`, or raise :class:`PgUrlError`."""
    from psycopg import conninfo as libpq

    if not isinstance(url, str) or "://" not in url:
        raise PgUrlError(f"{url!r} is not a PostgreSQL URL; {_FIX}")
    scheme = url.split("://", 1)[0].lower()
    if scheme not in SCHEMES:
        raise PgUrlError(f"{_redact(url)}: scheme '{scheme}' is not postgresql; {_FIX}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise PgUrlError(f"{_redact(url)}: {exc}; {_FIX}") from None
    if port is not None and not 0 < port < 65536:
        raise PgUrlError(f"{_redact(url)}: port {port} is out of range; {_FIX}")
    database = unquote(parts.path.lstrip("/"))
    if not database or "/" in database:
        raise PgUrlError(f"{_redact(url)}: the URL names no database (the path); {_FIX}")
    if parts.fragment:
        raise PgUrlError(f"{_redact(url)}: a URL fragment (#...) has no meaning here; {_FIX}")
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    schema = params.pop(SCHEMA_PARAM, "public") or "public"
    if not schema.replace("_", "").isalnum() or schema[0].isdigit():
        raise PgUrlError(
            f"{_redact(url)}: schema {schema!r} must be letters, digits and _ (not first a digit)"
        )
    params.setdefault("connect_timeout", "5")
    params.setdefault("application_name", "ctxengine")
    if schema != "public":
        params["options"] = (params.get("options", "") + f" -csearch_path={schema}").strip()
    base = f"{scheme}://{parts.netloc}/{parts.path.lstrip('/')}"
    # libpq decodes %XX in a URL but reads "+" as itself: spaces (between the ``-c``
    # settings of ``options``) must go as %20, not urlencode's default "+".
    conninfo_url = base + "?" + urlencode(params, quote_via=quote)
    try:
        libpq.conninfo_to_dict(conninfo_url)
    except Exception as exc:  # psycopg.ProgrammingError: unknown option, bad value
        raise PgUrlError(f"{_redact(url)}: {first_line(exc)}; {_FIX}") from None
    host = parts.hostname or "localhost"
    label = f"postgresql://{host}:{port or 5432}/{database}" + (
        f"?schema={schema}" if schema != "public" else ""
    )
    return PgTarget(url, conninfo_url, label, database, schema)


def _redact(url: str) -> str:
    """The URL with any password replaced, for error messages and logs."""
    try:
        parts = urlsplit(url)
        if parts.password:
            return url.replace(f":{parts.password}@", ":***@", 1)
    except ValueError:
        pass
    return url


def first_line(exc: BaseException) -> str:
    """An error's first line for a message (a server error's text runs on with details)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


# Pools.

_pools: dict[tuple[int, str], Any] = {}
_pools_lock = threading.Lock()


def shared_pool(target: PgTarget) -> Any:
    """The process's connection pool for ``target`` (created on first use, closed at exit).

    Every store of one URL in one process shares it, so 32 sessions do not mean 32
    connections. A fork gets its own pools (the key includes the pid).
    """
    from psycopg_pool import ConnectionPool

    key = (os.getpid(), target.conninfo)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is not None and not pool.closed:
            return pool
        size = int(os.environ.get(POOL_SIZE_ENV) or 8)
        pool = ConnectionPool(
            target.conninfo,
            min_size=1,
            max_size=max(1, size),
            timeout=30,
            kwargs={"autocommit": True},  # reads: one round trip; writes: transaction()
            configure=_plan_each_call,
            open=False,
            name=f"ctxengine:{target.label}",
        )
        try:
            pool.open(wait=True, timeout=float(os.environ.get("CTXENGINE_PG_CONNECT_TIMEOUT", 10)))
        except Exception as exc:
            pool.close()
            raise PgUnavailable(
                f"cannot connect to {target.label}: {first_line(exc)}. Is the server running "
                "and the URL right? (check with: psql URL -c 'select 1')"
            ) from None
        _pools[key] = pool
        return pool


def _plan_each_call(conn: Any) -> None:
    """Plan every call of a prepared statement for its values and the tables' sizes now.

    psycopg prepares a statement on its fifth call, and the server may then settle on a
    generic plan, made once for the table sizes of that moment and kept for the
    connection's life: made while a conversation was new, the known-uid check of every
    later turn scanned the whole conversation (2.2 ms per turn at 8,000 messages instead
    of 0.1 ms, growing with the history). A custom plan costs a planning per call; the
    parsing stays saved.
    """
    conn.execute("SET plan_cache_mode = force_custom_plan")


@atexit.register
def close_pools(target: PgTarget | None = None) -> None:
    """Close this process's pools (all at exit; one URL's when ``target`` is given)."""
    with _pools_lock:
        for key, pool in list(_pools.items()):
            if target is not None and key[1] != target.conninfo:
                continue
            if key[0] == os.getpid():
                pool.close()
            _pools.pop(key, None)


def connect(target: PgTarget, **kwargs: Any) -> Any:
    """One unpooled connection (leases, migrations, doctor), with a clear error on failure."""
    import psycopg

    try:
        return psycopg.connect(target.conninfo, **kwargs)
    except psycopg.OperationalError as exc:
        raise PgUnavailable(f"cannot connect to {target.label}: {first_line(exc)}") from None


@contextmanager
def transaction(pool: Any, target: PgTarget, what: str) -> Iterator[Any]:
    """A pooled connection inside one transaction.

    A connection the server dropped while it sat in the pool fails at ``BEGIN``, before
    any of the work was sent: the transaction starts again on a fresh connection. A
    connection that breaks later becomes :class:`PgUnavailable` naming the operation
    (the server rolled the work back); a statement the server refused (an index entry
    over its size limit, a statement timeout) is raised as psycopg raised it, rolled back
    too: it is not a lost connection, and the same work would be refused again.
    """
    import psycopg

    for attempt in (1, 2):
        stack = ExitStack()
        try:
            conn = stack.enter_context(pool.connection())
            stack.enter_context(conn.transaction())
        except psycopg.OperationalError as exc:
            stack.__exit__(type(exc), exc, exc.__traceback__)  # the pool drops it
            if attempt == 2:
                raise PgUnavailable(
                    f"{what}: cannot reach {target.label} ({first_line(exc)})"
                ) from exc
            continue
        break
    try:
        with stack:
            yield conn
    except psycopg.OperationalError as exc:
        if not _connection_lost(exc):  # refused (a limit, a timeout): retrying cannot help
            exc.add_note(f"{what}: nothing of this operation was committed")
            raise
        raise PgUnavailable(
            f"{what}: the connection to {target.label} failed ({first_line(exc)}); nothing "
            "of this operation was committed, retry it"
        ) from exc


#: A read statement and its parameters.
Statement = tuple[str, Any]


def read(pool: Any, target: PgTarget, what: str, sql: str, params: Any = ()) -> list[tuple]:
    """One read-only statement (autocommit, one round trip). A pooled connection the
    server dropped while idle is detected here and the read is tried once more on a
    fresh one; a second failure is :class:`PgUnavailable`."""
    return read_many(pool, target, what, [(sql, params)])[0]


def read_many(
    pool: Any, target: PgTarget, what: str, statements: Sequence[Statement]
) -> list[list[tuple]]:
    """The rows of each read statement, all sent in one round trip; a dropped pooled
    connection is replaced once, as in :func:`read`."""
    import psycopg

    for attempt in (1, 2):
        try:
            with pool.connection() as conn:
                return _fetch_all(conn, statements)
        except psycopg.OperationalError as exc:
            if not _connection_lost(exc):
                raise
            if attempt == 2:
                raise PgUnavailable(
                    f"{what}: the connection to {target.label} failed ({first_line(exc)})"
                ) from exc
    raise AssertionError("unreachable")


def _fetch_all(conn: Any, statements: Sequence[Statement]) -> list[list[tuple]]:
    """The rows of each statement; several go together in pipeline mode (one round trip
    instead of one each: the server runs them in order, the first error stops the rest)."""
    if len(statements) == 1:
        sql, params = statements[0]
        return [conn.execute(sql, params).fetchall()]
    with conn.pipeline():
        cursors = [conn.execute(sql, params) for sql, params in statements]
    return [cursor.fetchall() for cursor in cursors]


class DeadlineReads:
    """One thread's reads while a deadline holds: a statement still running at the
    deadline is cancelled (``psycopg.errors.QueryCanceled``), by the process's deadline
    watch (:mod:`~ctxengine_host.stores.pg_deadlines`), which costs no statement.

    The reads share one pooled connection, taken at the first and given back by
    :meth:`close`; one that was cancelled is closed instead (a cancel request still on
    its way must not stop the next borrower's statement). Writes take connections of
    their own, never cancelled.
    """

    def __init__(self, pool: Any, target: PgTarget, deadline: float) -> None:
        self.deadline = deadline
        self._pool, self._target = pool, target
        self._stack = ExitStack()
        self._conn: Any = None
        #: Guards the connection between this run's thread and the watch's.
        self._lock = threading.Lock()
        self._watched = self._closed = self._cancelled = False

    def read(self, what: str, sql: str, params: Any = ()) -> list[tuple]:
        """One read statement. A pooled connection the server dropped while idle fails at
        its first statement and is replaced once, as in :func:`read`; a connection that
        fails later is :class:`PgUnavailable`."""
        return self.read_many(what, [(sql, params)])[0]

    def read_many(self, what: str, statements: Sequence[Statement]) -> list[list[tuple]]:
        """The rows of each read statement, sent in one round trip (:func:`_fetch_all`);
        a failed connection is handled as in :meth:`read`."""
        import psycopg

        for attempt in (1, 2):
            fresh = self._conn is None
            try:
                return _fetch_all(self._connection(), statements)
            except psycopg.OperationalError as exc:
                if not _connection_lost(exc):
                    raise
                self._drop_connection()
                if attempt == 2 or not fresh:
                    raise PgUnavailable(
                        f"{what}: the connection to {self._target.label} failed ({first_line(exc)})"
                    ) from exc
        raise AssertionError("unreachable")

    def seconds_left(self) -> float:
        return self.deadline - time.monotonic()

    def cancel(self) -> bool:
        """At the deadline (the watch's thread): stop the statement the connection runs,
        if any; the connection is not given back afterwards. False once closed."""
        import psycopg

        with self._lock:
            if self._closed:
                return False
            if self._conn is not None:
                self._cancelled = True
                # An unreachable server fails the statement on its own.
                with suppress(psycopg.Error):
                    self._conn.cancel_safe(timeout=CANCEL_TIMEOUT_SECONDS)
            return True

    def _connection(self) -> Any:
        if self._conn is None:
            conn = self._stack.enter_context(self._pool.connection())
            with self._lock:
                self._conn = conn
            if not self._watched:
                self._watched = True
                WATCH.watch(self)
        return self._conn

    def _drop_connection(self) -> None:
        """Give a broken connection back (the pool discards it); the next read takes another."""
        with self._lock:
            self._conn = None
        self._stack.close()
        self._stack = ExitStack()

    def close(self) -> None:
        """Give the connection back, or close it if it was cancelled (the pool then
        replaces it)."""
        with self._lock:
            self._closed = True
            if self._cancelled and self._conn is not None:
                self._conn.close()
            self._conn = None
        self._stack.close()


def _connection_lost(exc: BaseException) -> bool:
    """A broken connection (retry may help), not a statement the server refused. An error
    the server answered with has a SQLSTATE; of those only class 08 (connection
    exceptions) and 57P (the server shutting down, or not up yet) mean the connection
    is gone. One without (psycopg's own: the socket closed) is a lost connection."""
    sqlstate = getattr(exc, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith(("08", "57P"))


# Advisory locks.


def advisory_key(namespace: str, *parts: object) -> int:
    """A signed 64-bit lock key, the same in every process for the same names."""
    text = "\x1f".join([namespace, *map(str, parts)])
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def xact_lock(conn: Any, key: int) -> None:
    """Hold ``key`` until the current transaction ends (serializes one session's writers)."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))


# Schema versions.


def registered_schemas() -> list[Schema]:
    """The host's schemas and those installed engines register (entry point group
    ``ctxengine.pg_schemas``, each value a :class:`Schema`)."""
    schemas = [TRANSCRIPT_SCHEMA, QUARANTINE_SCHEMA]
    for entry in entry_points(group=SCHEMA_GROUP):
        value = entry.load()
        schema = value() if callable(value) else value
        if isinstance(schema, Schema) and schema.component not in {s.component for s in schemas}:
            schemas.append(schema)
    return schemas


def _ensure_version_table(conn: Any) -> None:
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (component TEXT PRIMARY KEY, "
        "version INTEGER NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    )


def applied_versions(conn: Any) -> dict[str, int]:
    """Component → applied version ({} for a database nobody migrated)."""
    row = conn.execute("SELECT to_regclass(%s)", (VERSION_TABLE,)).fetchone()
    if row[0] is None:
        return {}
    return dict(conn.execute(f"SELECT component, version FROM {VERSION_TABLE}").fetchall())


@dataclass(frozen=True)
class MigrationStep:
    component: str
    before: int
    after: int
    latest: int


def migrate(target: PgTarget, schemas: list[Schema] | None = None) -> list[MigrationStep]:
    """Bring every schema to its latest version, each component in one transaction.

    Concurrent runs are serialized by an advisory lock, so two workers starting
    ``ctxengine migrate`` at once apply each step exactly once.
    """
    schemas = registered_schemas() if schemas is None else schemas
    done = []
    with connect(target) as conn:
        if target.schema != "public":
            with conn.transaction():  # IF NOT EXISTS alone races with a concurrent run
                xact_lock(conn, advisory_key(target.namespace, _MIGRATE_LOCK))
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{target.schema}"')
        for schema in schemas:
            with conn.transaction():
                xact_lock(conn, advisory_key(target.namespace, _MIGRATE_LOCK))
                _ensure_version_table(conn)
                before = applied_versions(conn).get(schema.component, 0)
                if before > schema.latest:
                    raise SchemaBehindError(
                        f"{target.label}: component {schema.component} is at version {before}, "
                        f"newer than this ctxengine ({schema.latest}); upgrade ctxengine"
                    )
                for step in schema.steps[before:]:
                    if callable(step):
                        step(conn)
                    else:
                        conn.execute(step)
                conn.execute(
                    f"INSERT INTO {VERSION_TABLE}(component, version) VALUES (%s, %s) "
                    "ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, "
                    "applied_at = now()",
                    (schema.component, schema.latest),
                )
            done.append(MigrationStep(schema.component, before, schema.latest, schema.latest))
    return done


def check_schema(conn: Any, target: PgTarget, schema: Schema) -> None:
    """Raise :class:`SchemaBehindError` unless ``schema`` is exactly at its latest version."""
    current = applied_versions(conn).get(schema.component, 0)
    if current < schema.latest:
        state = "has no ctxengine tables" if current == 0 else f"is at version {current}"
        raise SchemaBehindError(
            f"{target.label}: the {schema.component} schema {state}; this ctxengine needs "
            f"version {schema.latest}. Run: ctxengine migrate --url '{target.label}'"
        )
    if current > schema.latest:
        raise SchemaBehindError(
            f"{target.label}: the {schema.component} schema is at version {current}, newer "
            f"than this ctxengine ({schema.latest}); upgrade ctxengine on this machine"
        )


def open_checked(target: PgTarget, schema: Schema) -> Any:
    """The shared pool for ``target`` after checking ``schema`` is current."""
    pool = shared_pool(target)
    with transaction(pool, target, f"checking the {schema.component} schema") as conn:
        check_schema(conn, target, schema)
    return pool


def describe(url: str, schemas: list[Schema] | None = None) -> dict[str, Any]:
    """Server version and each component's migration state (for doctor and migrate)."""
    target = parse_url(url)
    with connect(target) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]
        applied = applied_versions(conn)
    components = {
        s.component: {
            "applied": applied.get(s.component, 0),
            "latest": s.latest,
            "current": applied.get(s.component, 0) == s.latest,
        }
        for s in (registered_schemas() if schemas is None else schemas)
    }
    return {"url": target.label, "server_version": version, "schema": components}
