"""A long text is ranked by the words it holds past its preview: a real agent's tool
output (a file dump, a test log) often holds the words sought far from its beginning."""

from __future__ import annotations

import json

import pytest
from conftest import make_engine, uid

from ctxengine_lcm import tools

SOUGHT = "quartz ledger reconciliation failed at row 7731"


def _history() -> list[dict]:
    """Two hundred unrelated steps, forty distinct short notes holding two of the query's
    words as written and a stemmed form of the third, then one long test log holding all
    three past its first 6,000 characters."""
    notes = [
        {
            "role": "assistant",
            "content": f"The quartz ledger was reconciled: {_words(n)}.",
            "message_uid": uid(),
        }
        for n in range(40)
    ]
    filler = "".join(f"test_case_{n:04d} ... ok\n" for n in range(300))
    log = {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": filler + SOUGHT,
        "message_uid": uid(),
    }
    call = {
        "role": "assistant", "content": None, "message_uid": uid(),
        "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "shell", "arguments": '{"cmd": "pytest"}'}}],
    }  # fmt: skip
    others = [
        {"role": "user", "content": f"Unrelated step {n}: {_words(100 + n)}.", "message_uid": uid()}
        for n in range(200)
    ]
    return [*others, *notes, call, log]


def _words(n: int) -> str:
    """Eight words no other note holds (near-duplicate notes would fold into one result)."""
    return " ".join(f"w{n}x{k}" for k in range(8))


def _first_page(engine) -> str:
    out = json.loads(
        engine.handle_tool_call("lcm_grep", {"pattern": "quartz ledger reconciliation"})
    )
    return json.dumps(out["results"][:10])


def test_a_long_log_holding_every_word_past_its_preview_is_on_the_first_page(tmp_path, database):
    engine = make_engine(tmp_path, database=database, context_length=200_000)
    engine.ingest("s1", _history())
    assert "row 7731" in _first_page(engine)


def test_read_no_further_it_falls_off_the_first_page(tmp_path, monkeypatch: pytest.MonkeyPatch):
    """The test above can fail: ranked by its preview alone, the log is not shown."""
    monkeypatch.setattr(
        tools.ToolRunner, "_ranked_texts", lambda self, hits, *rest: [h.text for h in hits]
    )
    engine = make_engine(tmp_path, context_length=200_000)
    engine.ingest("s1", _history())
    assert "row 7731" not in _first_page(engine)
