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
