"""A gateway worker on PostgreSQL: any worker can serve any turn of any session.

The request carries a turn id; message uids are derived from (session, turn, role), so a
turn retried on another worker after a crash re-sends the same uids and the worker skips
what is already stored: nothing is lost or stored twice. Run two of these at once
against one database (see docs/deployment.md):

    ctxengine migrate --url postgresql://postgres@127.0.0.1:5432/test
    python examples/postgres_gateway.py postgresql://postgres@127.0.0.1:5432/test demo 3
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path

from ctxengine_host.runtime.host import ContextHost
from ctxengine_host.stores.pg import PgUnavailable, PgUrlError, SchemaBehindError


def message_uid(session_id: str, turn_id: str, role: str) -> str:
    return hashlib.sha256(f"{session_id}/{turn_id}/{role}".encode()).hexdigest()[:32]


def call_model(messages: list[dict]) -> dict:
    """Stand-in for the provider call."""
    return {"role": "assistant", "content": f"({len(messages)} messages seen)"}


def handle_turn(host: ContextHost, session_id: str, turn_id: str, text: str) -> str:
    """Serve one turn; safe to retry with the same ``turn_id`` on any worker."""
    user_uid = message_uid(session_id, turn_id, "user")
    reply_uid = message_uid(session_id, turn_id, "assistant")
    with host.open_session(session_id) as session:  # waits while another worker holds it
        stored = {row.message["message_uid"]: row.message for row in host.store.rows(session_id)}
        if reply_uid in stored:
            return stored[reply_uid]["content"]
        if user_uid not in stored:
            session.add_messages([{"role": "user", "content": text, "message_uid": user_uid}])
        request = session.build_request()
        reply = {**call_model(request.messages), "message_uid": reply_uid}
        session.record_response(reply, None)  # None: the host estimates the usage
        session.finish_turn()
        return reply["content"]


def main(url: str, session_id: str, turns: int) -> None:
    config = Path(tempfile.mkdtemp()) / "ctxengine.toml"
    config.write_text(f'[store]\nurl = "{url}"\n', encoding="utf-8")
    with ContextHost.from_config(config, model="gpt-4", context_length=8192) as host:
        for n in range(turns):
            print(handle_turn(host, session_id, f"t{n}", f"message {n}"))
            print(handle_turn(host, session_id, f"t{n}", f"message {n}"), "(retried)")


if __name__ == "__main__":
    if len(sys.argv) != 4 or not sys.argv[3].isdigit():
        sys.exit("usage: python examples/postgres_gateway.py POSTGRES_URL SESSION_ID TURNS")
    if not sys.argv[1].startswith(("postgresql://", "postgres://")):
        sys.exit(f"postgres_gateway: {sys.argv[1]!r} is not a postgresql://HOST/DATABASE URL")
    try:
        main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    except (PgUnavailable, PgUrlError, SchemaBehindError) as exc:
        sys.exit(f"postgres_gateway: {exc}")  # names the URL and the fix
    except ImportError as exc:
        sys.exit(f"postgres_gateway: {exc}; pip install 'ctxengine-host[postgres]'")
