"""A request extends the last one with the messages appended since: the same result as the
full assembly, whatever happened in between (drops, compactions, expansion, a long task)."""

from __future__ import annotations

from conftest import count_tokens, make_engine, turn, uid

from ctxengine_host.tokens import REPLY_PRIMER_TOKENS
from ctxengine_lcm.assembly import extend_fit, fit_to_budget
from ctxengine_lcm.engine import LcmEngine

SYSTEM = {"role": "system", "content": "You are a coding agent."}


def full_path(engine: LcmEngine, history: list[dict], budget: int):
    """What ``select_context`` gives with no earlier request to extend."""
    kept = engine._selection, engine._last_assembly
    engine._selection = engine._last_assembly = None
    try:
        return engine.select_context(history, budget_tokens=budget)
    finally:
        engine._selection, engine._last_assembly = kept


def same(result, reference) -> None:
    assert result.messages == reference.messages
    assert result.estimated_tokens == reference.estimated_tokens
    assert result.covers == reference.covers
    assert result.system_prompt_addition == reference.system_prompt_addition


class Loop:
    """An agent loop: messages appended one at a time, a request after each, compaction when
    the engine asks; every result checked against the full path, the extensions counted."""

    def __init__(self, engine: LcmEngine, budget: int) -> None:
        self.engine = engine
        self.budget = budget
        self.history: list[dict] = [dict(SYSTEM)]
        self.extended = 0
        self.compactions = 0
        extend = engine._extended_selection

        def counted(*args):
            selection = extend(*args)
            self.extended += selection is not None
            return selection

        engine._extended_selection = counted

    def append(self, messages: list[dict]):
        """Ingest ``messages``, request, check; returns the last result."""
        result = None
        for message in messages:
            self.history.append(message)
            self.engine.ingest("s1", [message])
            result = self.request()
        return result

    def request(self):
        result = self.engine.select_context(self.history, budget_tokens=self.budget)
        same(result, full_path(self.engine, self.history, self.budget))
        assert result.estimated_tokens == count_tokens(result.messages)
        if self.engine.should_compress(result.estimated_tokens):
            self.engine.compress(self.history)
            self.compactions += 1
        return result


def test_every_request_of_a_long_loop_equals_the_full_assembly(tmp_path, database):
    loop = Loop(make_engine(tmp_path, database=database), budget=6_000)
    for n in range(40):
        loop.append(turn(n))
    assert loop.compactions and loop.extended > 80  # both paths were taken


def test_a_budget_that_drops_blocks_is_assembled_in_full(tmp_path, database):
    engine = make_engine(tmp_path, database=database, context_length=100_000)
    loop = Loop(engine, budget=1_200)  # the loop's messages outgrow it; no compaction
    dropped = False
    for n in range(12):
        result = loop.append(turn(n))
        dropped |= len(result.messages) < len(loop.history)
    assert dropped and loop.extended


def test_the_expansion_changes_as_the_context_grows(tmp_path, database):
    engine = make_engine(tmp_path, database=database, summary_budget_fraction=0.05)
    loop = Loop(engine, budget=6_000)
    for n in range(120):
        loop.append(turn(n))
    engine.update_model("gpt-4", 100_000)  # room below the new threshold: summaries open
    loop.budget = 60_000
    choices = set()
    for n in range(120, 200):
        loop.append(turn(n, words=300))
        choices.add((engine._expansion[0], tuple(engine._expansion[1])))
    assert len(choices) > 1 and loop.extended


def test_a_shortened_task_stays_shortened_and_a_new_task_replaces_it(tmp_path, database):
    from ctxengine_host.contract.tasktext import TASK_MARKER_PREFIX

    loop = Loop(make_engine(tmp_path, database=database), budget=6_000)
    for n in range(3):
        loop.append(turn(n))
    task = "Fix the parser. " + " ".join(f"Case {i} fails on long input." for i in range(600))
    result = loop.append([{"role": "user", "content": task, "message_uid": uid()}])
    extended = loop.extended
    result = loop.append(turn(3)[1:])  # the tool loop goes on under the long task
    assert loop.extended > extended
    assert any(TASK_MARKER_PREFIX in (m.get("content") or "") for m in result.messages)
    result = loop.append(turn(4))  # a new task: the long one is sent whole, or dropped
    assert not any(TASK_MARKER_PREFIX in (m.get("content") or "") for m in result.messages)


def test_a_caller_changing_a_result_does_not_change_the_next(tmp_path, database):
    loop = Loop(make_engine(tmp_path, database=database), budget=6_000)
    for n in range(30):
        result = loop.append(turn(n))
        result.messages[-1]["content"] = "changed"
        result.messages[0].clear()
        result.messages.append({"role": "user", "content": "added"})
        result.covers.append("added")
    repeated = loop.engine.select_context(loop.history, budget_tokens=loop.budget)
    same(repeated, full_path(loop.engine, loop.history, loop.budget))
    assert loop.extended


def _plain(n: int) -> list[dict]:
    return [{"role": ("user", "assistant")[i % 2], "content": f"m{i}"} for i in range(n)]


def _ten_each(messages: list[dict]) -> int:
    return 10 * len(messages)


def test_a_fit_extended_equals_the_fit_of_the_longer_items():
    head = [dict(SYSTEM)]
    items = _plain(8)
    budget = 200
    previous = fit_to_budget(head, items[:5], [10] * 5, budget, _ten_each)
    extended = extend_fit(previous, head, items[5:], 30, budget)
    assert extended == fit_to_budget(head, items, [10] * 8, budget, _ten_each)
    assert extend_fit(previous, head, items[5:], 30, budget=previous.tokens + 29) is None


def test_a_fit_that_dropped_an_item_is_not_extended():
    """The per-item figure fits but the exact one does not (here ``finalize`` adds a note
    the per-item counts do not see): the oldest item goes, and the next request, though its
    sum would fit, is assembled in full."""
    items = _plain(6)
    budget = 60 + REPLY_PRIMER_TOKENS + 5

    def noted(kept: list[dict]) -> list[dict]:
        return [{"role": "user", "content": "note"}, *kept]

    previous = fit_to_budget([], items, [10] * 6, budget, _ten_each, noted)
    assert not previous.complete and len(previous.messages) == 6
    assert extend_fit(previous, [], [{"role": "user", "content": "m6"}], 0, budget) is None
