"""Every test here needs PostgreSQL (marker ``postgres``)."""

from __future__ import annotations

import pytest

from .fixtures import pg_database, pg_url  # noqa: F401  (fixtures)


@pytest.fixture(autouse=True)
def close_connections():
    """Each test's pools closed after it: schemas per test must not pile up connections."""
    yield
    from ctxengine_host.stores.pg import close_pools

    close_pools()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/tests/pg/" in str(item.path):
            item.add_marker(pytest.mark.postgres)
