"""A host process of the multi-process test: drives sessions turn by turn, resumably.

Usage: python worker.py CONFIG TURNS SESSION... [--die-at SESSION:TURN]

Message uids are derived from (session, turn, role), so a process that resumes a
session sees which messages of an interrupted turn are stored and sends only the
rest: the gateway's retry protocol. ``--die-at`` SIGKILLs this process right
after the user message of that turn is committed (mid-turn).
"""

from __future__ import annotations

import hashlib
import os
import signal
import sys

from ctxengine_host.runtime.host import ContextHost

USAGE = {"prompt_tokens": 100, "completion_tokens": 20}


def uid(session_id: str, turn: int, role: str) -> str:
    return hashlib.md5(f"{session_id}/{turn}/{role}".encode()).hexdigest()


def text(session_id: str, turn: int, role: str) -> str:
    words = " ".join(f"{role}{turn}w{i}" for i in range(60))
    return f"{session_id} turn {turn} {role}: {words}"


def run_turn(host: ContextHost, session, turn: int, die_at: tuple[str, int] | None) -> None:
    sid = session.session_id
    stored = {row.message["message_uid"] for row in host.store.rows(sid)}
    user_uid, reply_uid = uid(sid, turn, "user"), uid(sid, turn, "assistant")
    if reply_uid in stored:
        return
    if user_uid not in stored:
        session.add_messages(
            [{"role": "user", "content": text(sid, turn, "user"), "message_uid": user_uid}]
        )
        if die_at == (sid, turn):
            os.kill(os.getpid(), signal.SIGKILL)
    session.build_request()
    reply = {"role": "assistant", "content": text(sid, turn, "assistant"), "message_uid": reply_uid}
    session.record_response(reply, USAGE)
    session.finish_turn()


def main(argv: list[str]) -> int:
    die_at = None
    if "--die-at" in argv:
        at = argv.index("--die-at")
        sid, turn = argv[at + 1].rsplit(":", 1)
        die_at = (sid, int(turn))
        argv = argv[:at] + argv[at + 2 :]
    config, turns, *session_ids = argv
    with ContextHost.from_config(config, model="gpt-4", context_length=2048) as host:
        sessions = [host.open_session(sid) for sid in session_ids]
        for turn in range(int(turns)):
            for session in sessions:
                run_turn(host, session, turn, die_at)
        compactions = sum(s.guard.engine.compression_count for s in sessions)
        print(f"compactions={compactions}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
