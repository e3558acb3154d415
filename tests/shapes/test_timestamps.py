"""Per-message timestamps through the host: checked, persisted, returned, never sent."""

from __future__ import annotations

import pytest

from ctxengine_host.runtime.validity import ValidityError
from ctxengine_host.shapes import parse_timestamp


def test_timestamps_are_persisted_returned_and_not_sent(make_host, tmp_path):
    store = tmp_path / "t.db"
    with make_host(store_path=store).open_session("s") as session:
        session.add_messages(
            [
                {"role": "user", "content": "a", "timestamp": "2021-03-01T10:00:00Z"},
                {"role": "assistant", "content": "b", "timestamp": 1614593000},
            ]
        )
        assert all("timestamp" not in m for m in session.build_request().messages)
    again = make_host(store_path=store).open_session("s")
    assert [m["timestamp"] for m in again.messages_in_shape()] == [
        "2021-03-01T10:00:00Z",
        1614593000,
    ]


@pytest.mark.parametrize("bad", ["yesterday", -5, True, "2021-13-01"])
def test_an_unreadable_timestamp_is_refused_with_the_forms_it_takes(make_host, bad):
    session = make_host().open_session("s")
    with pytest.raises(ValidityError, match="neither ISO 8601 text"):
        session.add_messages([{"role": "user", "content": "a", "timestamp": bad}])
    assert session.messages() == []


@pytest.mark.parametrize(
    ("value", "epoch"),
    [
        ("2021-03-01T10:00:00Z", 1614592800.0),
        ("2021-03-01T11:00:00+01:00", 1614592800.0),
        ("2021-03-01T10:00:00", 1614592800.0),  # no zone: UTC
        (1614592800, 1614592800.0),
        (1614592800500, 1614592800.5),  # milliseconds
    ],
)
def test_timestamp_forms(value, epoch):
    assert parse_timestamp(value) == epoch
