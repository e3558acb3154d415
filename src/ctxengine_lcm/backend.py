"""Which :class:`~ctxengine_lcm.store.LcmStore` backs ``[engines.lcm] database``.

A path, ``sqlite:///PATH`` or nothing keeps the embedded SQLite file; a
``postgresql://`` URL selects the server backend (needs ``ctxengine-lcm[postgres]``).
"""

from __future__ import annotations

from pathlib import Path

from .config import LcmConfig, resolve_database_path
from .store import LcmStore


def open_lcm_store(settings: LcmConfig, data_dir: Path) -> LcmStore:
    """Open the store ``settings.database`` names (psycopg is imported only for a URL);
    with ``semantic_index`` on, fail first with the fix if the index cannot work."""
    from ctxengine_host.stores.pg import is_postgres_url

    if settings.semantic_index:
        from .semantic import require

        require(postgres=is_postgres_url(settings.database))
    if is_postgres_url(settings.database):
        try:
            from .pg_store import PgLcmStore
        except ImportError as exc:
            raise RuntimeError(
                f"[engines.lcm] database is a PostgreSQL URL but {exc.name} is not installed; "
                "run: pip install 'ctxengine-lcm[postgres]'"
            ) from None
        return PgLcmStore(str(settings.database), settings.grep_regex_timeout_seconds)
    from .sqlite_store import SqliteStore

    return SqliteStore(
        resolve_database_path(settings.database, data_dir),
        busy_timeout_seconds=settings.busy_timeout_seconds,
    )
