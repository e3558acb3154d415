"""A query whose every word is in most of the history stays cheap (#17)."""

from __future__ import annotations

import json

from conftest import make_engine


def test_every_word_common_and_together_reads_the_index_a_bounded_number_of_times(tmp_path):
    """Thousands of messages hold every word of ``handler looks fine next``. The pass that
    puts such messages in the pool once had SQLite look the query up at each of them,
    every look-up walking each word's list: the statement grew with the square of the
    history (two minutes at 100,000 messages). FTS5's own index reads, which the trace
    callback reports, must not grow with the number of messages holding every word."""
    engine = make_engine(tmp_path, session="s", grep_relevance_window=100)
    engine.ingest(
        "s",
        [
            {
                "role": "assistant",
                "content": f"handler_{n} looks fine; next.",
                "message_uid": f"m{n}",
            }
            for n in range(2_000)
        ],
    )
    index_reads: list[str] = []
    engine.store._conn.set_trace_callback(
        lambda sql: index_reads.append(sql) if "_fts_idx" in sql else None
    )
    out = json.loads(engine.handle_tool_call("lcm_grep", {"pattern": "handler looks fine next"}))
    engine.store._conn.set_trace_callback(None)
    assert out["count"] == 1 and out["results"][0]["similar"]["count"] > 100  # all alike
    assert len(index_reads) < 400, len(index_reads)  # 72 here; 32,056 before
    engine.dispose()
