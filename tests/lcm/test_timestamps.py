"""Message timestamps: LCM's summary time ranges and ``lcm_grep since/until`` follow the
conversation's own clock, not the wall clock of the replay that stored it."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from conftest import make_engine, query, turn

#: The conversation happened in 2021; the test runs years later.
START = datetime(2021, 3, 1, tzinfo=UTC).timestamp()


def stamped(n: int) -> list[dict]:
    """Turn ``n``, one hour per turn, stamped alternately as ISO text and epoch seconds."""
    batch = turn(n)
    for k, message in enumerate(batch):
        moment = START + n * 3600 + k
        message["timestamp"] = datetime.fromtimestamp(moment, UTC).isoformat() if n % 2 else moment
    return batch


def test_summaries_and_grep_use_the_message_timestamps(database, tmp_path):
    engine = make_engine(tmp_path, database=database)
    history = [{"role": "system", "content": "You are a coding agent."}]
    for n in range(40):
        batch = stamped(n)
        history += batch
        engine.ingest("s1", batch)
        result = engine.select_context(history, budget_tokens=6_000)
        if engine.should_compress(result.estimated_tokens):
            engine.compress(history)
    ranges = query(database, "SELECT earliest_at, latest_at FROM lcm_summaries")
    assert ranges, "the history was compacted"
    last = START + 39 * 3600 + 10
    assert all(START <= lo <= hi <= last for lo, hi in ranges)

    def grep(**window):
        args = {"pattern": "answer", "scope": "messages", "limit": 100, **window}
        return json.loads(engine.handle_tool_call("lcm_grep", args))["count"]

    assert grep(since="2021-03-01T00:00:00Z", until="2021-03-03T00:00:00Z") == 40
    assert grep(since="2021-03-01T10:30:00Z", until="2021-03-01T20:30:00Z") == 10
    assert grep(since="2022-01-01T00:00:00Z") == 0
    engine.dispose()
