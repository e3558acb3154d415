"""A retried turn re-sends messages the host already stored: they are not stored twice."""

from __future__ import annotations

from .engines import RecordingEngine


def _first_turn(session) -> list[dict]:
    session.add_user_message("Deploy the billing service to staging.")
    session.record_response({"role": "assistant", "content": "Deploying now."}, None)
    session.finish_turn()
    return session.messages()


def test_resending_stored_messages_with_their_uids_stores_nothing(make_host):
    host = make_host(RecordingEngine())
    with host.open_session("retry") as session:
        sent = _first_turn(session)
        rows = session.status()["stored_messages"]
        session.add_messages(sent[-2:])  # the caller retries the whole turn
        assert session.status()["stored_messages"] == rows
        assert [m["message_uid"] for m in session.messages()] == [m["message_uid"] for m in sent]


def test_an_edited_message_under_a_known_uid_is_a_new_version(make_host):
    host = make_host(RecordingEngine())
    with host.open_session("edit") as session:
        sent = _first_turn(session)
        rows = session.status()["stored_messages"]
        edited = {**sent[-2], "content": "Deploy the billing service to production."}
        session.add_messages([edited])
        assert session.status()["stored_messages"] == rows + 1
        assert session.messages()[-1]["message_uid"] == sent[-2]["message_uid"]


def test_a_retry_after_a_restart_is_not_stored_again(make_host, store_path):
    with make_host(RecordingEngine()).open_session("restart") as session:
        sent = _first_turn(session)
        rows = session.status()["stored_messages"]
    with make_host(RecordingEngine()).open_session("restart") as resumed:
        resumed.add_messages(sent)
        assert resumed.status()["stored_messages"] == rows
        assert len(resumed.messages()) == len(sent)
