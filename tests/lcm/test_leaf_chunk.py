"""The leaf chunk and its minimum agree: a sweep never stalls on a chunk too small to
summarize while enough raw history lies outside the fresh tail."""

from __future__ import annotations

import pytest
from conftest import check_invariants, make_engine, uid
from pydantic import ValidationError

from ctxengine_lcm.compaction import leaf_chunk
from ctxengine_lcm.config import MIN_LEAF_SOURCE_TOKENS, LcmConfig
from ctxengine_lcm.store import ContextItem


def items(*tokens: int) -> list[ContextItem]:
    return [ContextItem(n, "message", n, t, -1, "user") for n, t in enumerate(tokens)]


def test_a_chunk_grows_past_its_size_only_to_reach_the_minimum():
    # The smallest allowed size: chunks reach the minimum instead of stopping under it.
    chunk = leaf_chunk(items(100, 100, 100, 100, 100), 5, MIN_LEAF_SOURCE_TOKENS)
    assert chunk == [0, 1, 2]
    # A small message followed by a large one is no longer a chunk of one small message.
    assert leaf_chunk(items(50, 30_000, 100), 3, 20_000) == [0, 1]
    # Otherwise the size limit holds as before.
    assert leaf_chunk(items(300, 300, 300), 3, 700) == [0, 1]


def test_the_config_minimum_is_the_leaf_minimum():
    assert LcmConfig(leaf_chunk_tokens=MIN_LEAF_SOURCE_TOKENS).leaf_chunk_tokens == 256
    with pytest.raises(ValidationError, match="greater than or equal to 256"):
        LcmConfig(leaf_chunk_tokens=MIN_LEAF_SOURCE_TOKENS - 1)


def test_the_smallest_chunk_size_still_compacts(tmp_path, database):
    engine = make_engine(tmp_path, database=database, context_length=3_000,
                         leaf_chunk_tokens=256, fresh_tail_messages=4)  # fmt: skip
    history = [
        {"role": "user" if n % 2 == 0 else "assistant",
         "content": f"message {n} " + "lorem ipsum dolor " * 20, "message_uid": uid()}
        for n in range(40)
    ]  # fmt: skip
    engine.ingest("s1", history)
    result = engine.compress(history, force=True)
    assert result.compacted, result.reason
    assert check_invariants(database)["summaries"] > 0


def test_a_small_run_cut_off_by_summaries_does_not_stall_the_sweep():
    # The previous turn's task, pinned while its tool loop was summarized, sits alone
    # between summaries: the chunk is the next run worth a summary, not nothing.
    context = items(10, 86, 86, 16, 2_671, 16, 2_671, 8, 16, 2_671)
    for n in (1, 2):
        context[n] = ContextItem(n, "summary", n, 86, 0, "")
    for n in (4, 6, 9):
        context[n] = ContextItem(n, "message", n, 2_671, -1, "tool")
    assert leaf_chunk(context, 7, 256, pinned=7) == [3, 4]
    # Nothing worth a summary outside the tail: no chunk.
    assert leaf_chunk(context[:3], 3, 256) == []


def _tool_loop(task: str, rounds: int, start: int) -> list[dict]:
    """A user task, ``rounds`` tool calls that each read a large file, the answer."""
    loop = [{"role": "user", "content": task, "message_uid": uid()}]
    for n in range(start, start + rounds):
        read = {"name": "read", "arguments": f'{{"path": "notes-{n}.txt"}}'}
        call = {"id": f"call_{n}", "type": "function", "function": read}
        loop.append(
            {"role": "assistant", "content": "", "tool_calls": [call], "message_uid": uid()}
        )
        body = " ".join(f"fact{n}-{k} is stored here." for k in range(250))
        loop.append(
            {"role": "tool", "tool_call_id": f"call_{n}", "content": body, "message_uid": uid()}
        )
    loop.append({"role": "assistant", "content": "Reply.", "message_uid": uid()})
    return loop


def test_the_next_turn_compacts_past_the_previous_task(tmp_path, database):
    # Two agent turns of tool reads (the gateway's end-to-end shape): the first compacts
    # its own loop around its pinned task; the second must still find raw history to
    # summarize behind that task, not stop at it with the context over the threshold.
    engine = make_engine(tmp_path, database=database, context_length=16_000,
                         leaf_chunk_tokens=256, fresh_tail_messages=4)  # fmt: skip
    history: list[dict] = []
    reasons = []
    for number, task in enumerate(("Read the notes, then answer.", "Once more, please.")):
        history += _tool_loop(task, 6, 6 * number)
        for end in range(len(history) - 13, len(history) + 1):  # after every message
            engine.ingest("s1", history[:end])
            if engine.should_compress(0):
                reasons.append(engine.compress(history[:end]).reason)
    assert engine.should_compress(0) is False, reasons
    assert check_invariants(database)["summaries"] > 3


def test_a_chunk_stops_once_it_holds_enough():
    # What the sweep must free to reach its target; the size limit still caps it.
    assert leaf_chunk(items(300, 300, 300, 300), 4, 20_000, enough_tokens=500) == [0, 1]
    assert leaf_chunk(items(300, 300, 300, 300), 4, 700, enough_tokens=5_000) == [0, 1]
