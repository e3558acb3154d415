"""The LCM store keeps the planner's statistics current on a server whose autovacuum
does not (the CI server runs with it off): without them the planner misjudges how many
rows a conversation holds and picks plans that read all of them."""

from __future__ import annotations

import time

import psycopg

from ctxengine_host.stores.pg import close_pools, parse_url
from ctxengine_lcm.pg_store import PgLcmStore

from .test_lcm_backends import drive, make_engine


def _message_stats(url: str) -> tuple[int, float | None]:
    """Rows of lcm_messages changed since its last analysis, and when that was."""
    target = parse_url(url)
    with psycopg.connect(target.conninfo, autocommit=True) as conn:
        row = conn.execute(
            "SELECT n_mod_since_analyze, extract(epoch FROM last_analyze) "
            "FROM pg_stat_user_tables WHERE schemaname = %s AND relname = 'lcm_messages'",
            (target.schema,),
        ).fetchone()
    return int(row[0]), None if row[1] is None else float(row[1])


def test_a_table_that_grew_by_a_tenth_is_analyzed_at_the_next_upkeep(pg_url, tmp_path):
    engine = make_engine(pg_url, tmp_path)
    drive(engine, 30)  # its compactions may analyze the young table already
    engine.ingest("s1", [{"role": "user", "content": f"note {n}"} for n in range(80)])
    engine.dispose()
    close_pools(parse_url(pg_url))  # a server process publishes its row counts at its end
    deadline = time.monotonic() + 10
    while _message_stats(pg_url)[0] < 80 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _message_stats(pg_url)[0] >= 80
    store = PgLcmStore(pg_url)
    store.tidy_search_index()
    changed, analyzed_at = _message_stats(pg_url)
    assert analyzed_at is not None and changed == 0
    store.tidy_search_index()  # nothing changed since: not analyzed again
    assert _message_stats(pg_url) == (0, analyzed_at)
