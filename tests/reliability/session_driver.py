"""A host process for the lease and reset tests: ``python session_driver.py MODE STORE LCM
SESSION [ARGS]`` (STORE, LCM: a SQLite path or a postgresql:// URL).

Modes:
  turns N TAG   N times: open the session (waiting for its lease), one turn, end; prints
                each acknowledged user message ("ack TAG-i") as soon as it is committed
  reset         three turns, ``reset()``, two more turns (a fault point may kill it)
  resume        open, one turn ("after the reset"), print the request's messages as JSON
  hold          open the session, three turns, print "held", then sleep (to be killed)
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from ctxengine_host.config import CtxConfig, LoadedConfig
from ctxengine_host.runtime.host import ContextHost


def make_host(store: str, lcm: str, workdir: Path) -> ContextHost:
    engine = "lcm" if lcm != "-" else "legacy"
    cfg = CtxConfig(engines={"lcm": {"database": lcm}} if engine == "lcm" else {})
    cfg.context.reserve_output_tokens = 200
    return ContextHost(
        engine,
        store_path=store,
        data_dir=workdir,
        config=LoadedConfig(config=cfg),
        observers=[],
        model="gpt-4",
        context_length=16_000,
    )


def turn(session, text: str) -> list:
    session.add_user_message(text)
    request = session.build_request()
    session.record_response({"role": "assistant", "content": f"answer to {text}"}, None)
    session.finish_turn()
    return request.messages


def main() -> None:
    mode, store, lcm, session_id, *rest = sys.argv[1:]
    workdir = Path(os.environ.get("DRIVER_WORKDIR", "."))
    host = make_host(store, lcm, workdir)
    if os.environ.get("DRIVER_KILL_BEFORE_LIVE_RESET"):  # the crash window, on any version
        for name in ("replace_live", "finish_reset"):
            original = getattr(host.store, name, None)

            def kill(session, row_ids=(), _original=original):
                os.kill(os.getpid(), signal.SIGKILL)

            if original is not None:
                setattr(host.store, name, kill)
    if mode == "turns":
        count, tag = int(rest[0]), rest[1]
        for n in range(count):
            with host.open_session(session_id) as session:
                session.add_user_message(f"{tag}-{n}")
                print(f"ack {tag}-{n}", flush=True)
                session.build_request()
                session.record_response({"role": "assistant", "content": f"ok {tag}-{n}"}, None)
                session.finish_turn()
    elif mode == "reset":
        with host.open_session(session_id) as session:
            for n in range(3):
                turn(session, f"before the reset {n}")
            session.reset()
            for n in range(2):
                turn(session, f"since the reset {n}")
    elif mode == "resume":
        with host.open_session(session_id) as session:
            print(json.dumps(turn(session, "after the reset")), flush=True)
    elif mode == "hold":
        session = host.open_session(session_id)
        for n in range(3):
            turn(session, f"held turn {n}")
        print("held", flush=True)
        time.sleep(600)
    host.close()


if __name__ == "__main__":
    main()
