"""The export's view of the host's list costs the new messages, not the history (#17)."""

from __future__ import annotations

from ctxengine_host.discovery.compat import host_view
from ctxengine_host.discovery.compat.host_view import HostView


class CountingList(list):
    """A host's list that counts the messages read from it."""

    reads = 0

    def __getitem__(self, index):
        item = super().__getitem__(index)
        CountingList.reads += len(item) if isinstance(index, slice) else 1
        return item

    def __iter__(self):
        for item in super().__iter__():
            CountingList.reads += 1
            yield item


def test_a_list_grown_at_the_end_costs_only_the_new_messages(monkeypatch):
    view = HostView("s")
    history = [{"role": "user", "content": f"message {i}"} for i in range(5_000)]
    assert len(view.take_new(history)) == 5_000
    printed = []
    real = host_view.fingerprint
    monkeypatch.setattr(host_view, "fingerprint", lambda m: printed.append(m) or real(m))
    CountingList.reads = 0
    for turn in range(20):
        history.append({"role": "assistant", "content": f"reply {turn}"})
        fresh = view.take_new(CountingList(history))
        assert [m["content"] for m in fresh] == [f"reply {turn}"]
    assert len(printed) == 20  # one per new message, none for the 5,000 before
    assert CountingList.reads < 20 * 10  # a few reads per call, not the whole history


def test_a_rewritten_or_replaced_list_is_still_compared_in_full():
    view = HostView("s")
    history = [{"role": "user", "content": f"message {i}"} for i in range(10)]
    view.take_new(history)
    copied = [dict(m) for m in history]  # the same messages as new objects
    assert view.take_new(copied) == []
    copied[-1] = {"role": "user", "content": "message 9, sanitized"}  # rewritten in place
    copied.append({"role": "assistant", "content": "new"})
    assert [m["content"] for m in view.take_new(copied)] == ["message 9, sanitized", "new"]
    shorter = copied[-3:]  # the host compacted its list
    view.returned(shorter, copied)
    grown = [*shorter, {"role": "user", "content": "after"}]
    assert [m["content"] for m in view.take_new(grown)] == ["after"]


def test_a_compacted_list_costs_the_messages_returned_not_the_history(monkeypatch):
    view = HostView("s")
    history = [{"role": "user", "content": f"message {i}"} for i in range(5_000)]
    view.take_new(history)
    summary = {"role": "user", "content": "[Summary of messages 0-4989]"}
    compacted = [{"role": "system", "content": "prompt"}, summary, *history[-10:]]
    printed = []
    real = host_view.fingerprint
    monkeypatch.setattr(host_view, "fingerprint", lambda m: printed.append(m) or real(m))

    view.returned(compacted, history)

    assert len(printed) <= len(compacted)  # the 5,000 shown were fingerprinted before
    later = [*compacted[1:], summary, {"role": "user", "content": "after"}]
    assert [m["content"] for m in view.take_new(later)] == ["after"]  # the summary is its own
