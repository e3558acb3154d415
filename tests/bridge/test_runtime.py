"""The server in process: engine failures, the rewrite call back, the socket and HTTP doors."""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
import urllib.error
import urllib.request

import pytest

from ctxengine_host.contract.engine import ContextEngine
from ctxengine_host.gateway_bridge.server import Connection
from ctxengine_host.gateway_bridge.sessions import BridgeSessions
from ctxengine_host.gateway_bridge.transports import make_http_server, serve_unix
from ctxengine_host.runtime.host import ContextHost
from ctxengine_host.runtime.isolation import forget_quarantine
from ctxengine_host.stores.quarantine import QuarantineLog

from .client import assistant, user


class RewritingEngine(ContextEngine):
    """Asks the gateway to rewrite an entry in maintain; fails on demand in compress."""

    name = "rewriting"
    fail_compress = False

    def __init__(self, config=None, context=None):
        super().__init__(config, context)
        self.rewrites = []
        self.settings = []
        self.maintained = 0

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None):
        if self.fail_compress:
            raise RuntimeError("injected compress failure")
        return messages

    def maintain(self, session_id, runtime_settings, transcript):
        self.settings.append(runtime_settings)
        self.maintained += 1
        rewrite = getattr(transcript, "rewrite_transcript_entries", None)
        if rewrite is None:  # maintain after a turn inside the runtime: no gateway to ask
            return
        answer = rewrite({"replacements": [{"entryId": "e1", "message": user("shorter")}]})
        self.rewrites.append(answer)


class PipeClient:
    """The plugin's end of an in-process Connection."""

    def __init__(self, sessions):
        to_server_r, self._to_server = os.pipe()
        self._from_server, from_server_w = os.pipe()
        self.reader = os.fdopen(self._from_server, "rb")
        self.writer = os.fdopen(self._to_server, "wb")
        connection = Connection(
            sessions, os.fdopen(to_server_r, "rb"), os.fdopen(from_server_w, "wb")
        )
        self.thread = threading.Thread(target=connection.serve, daemon=True)
        self.thread.start()
        self.server_calls = []
        self._id = 0

    def call(self, method, **params):
        self._id += 1
        self.writer.write(
            json.dumps(
                {"jsonrpc": "2.0", "id": self._id, "method": method, "params": params}
            ).encode()
            + b"\n"
        )
        self.writer.flush()
        while True:
            message = json.loads(self.reader.readline())
            if "method" in message:
                self.server_calls.append(message)
                result = {"changed": True, "bytesFreed": 42, "rewrittenEntries": 1}
                self.writer.write(
                    json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
                    + b"\n"
                )
                self.writer.flush()
                continue
            return message

    def close(self):
        self.writer.close()
        self.thread.join(10)


@pytest.fixture
def host(tmp_path):
    engine = RewritingEngine()
    with ContextHost(
        engine,
        store_path=tmp_path / "t.sqlite",
        data_dir=tmp_path,
        observers=[],
        context_length=8000,
        quarantine=QuarantineLog(tmp_path / "quarantine.jsonl"),  # a crash test quarantines
    ) as host:
        yield host
    forget_quarantine("rewriting")  # this process's quarantine, too


def test_maintain_offers_the_gateways_rewrite_back_to_the_engine(host):
    client = PipeClient(BridgeSessions(host))
    try:
        settings = {"schemaVersion": 1, "runtime": {"host": "openclaw", "mode": "normal"}}
        client.call(
            "afterTurn",
            sessionId="m1",
            base=0,
            newMessages=[user("a"), assistant("b")],
            prePromptMessageCount=0,
            runtimeSettings=settings,
        )
        answer = client.call("maintain", sessionId="m1", sessionFile="f", runtimeSettings=settings)
        assert answer["result"] == {"changed": True, "bytesFreed": 42, "rewrittenEntries": 1}
        (request,) = [
            c
            for c in client.server_calls
            if c["params"]["request"]["replacements"][0]["entryId"] == "e1"
        ][-1:]
        assert request["method"] == "rewriteTranscriptEntries"
        assert request["params"]["sessionId"] == "m1"
        engine = next(iter(host._sessions.values())).guard.engine
        assert engine.settings[-1].diagnostics["gateway"] == settings  # passed through
    finally:
        client.close()


def test_an_engine_crash_fails_that_call_only(host):
    client = PipeClient(BridgeSessions(host))
    try:
        client.call(
            "afterTurn",
            sessionId="c1",
            base=0,
            newMessages=[user("a"), assistant("b")],
            prePromptMessageCount=0,
        )
        next(iter(host._sessions.values())).guard.engine.fail_compress = True
        crashed = client.call("compact", sessionId="c1", sessionKey="k", force=True)
        assert "result" in crashed or crashed["error"]["code"] == -32000
        other = client.call(
            "afterTurn", sessionId="c2", base=0, newMessages=[user("x")], prePromptMessageCount=0
        )
        assert "result" in other
        again = client.call("assemble", sessionId="c1", historyCount=2)
        assert again["result"]["messages"][0]["content"] == "a"
    finally:
        client.close()


def test_unix_socket_is_private_to_its_owner(host, tmp_path):
    directory = tmp_path / "sock"
    directory.mkdir(mode=0o700)
    path = directory / "ctxengine.sock"
    ready = threading.Event()
    threading.Thread(
        target=serve_unix, args=(BridgeSessions(host), path, ready), daemon=True
    ).start()
    assert ready.wait(10)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(str(path))
        client.sendall(b'{"jsonrpc":"2.0","id":1,"method":"info"}\n')
        answer = json.loads(client.makefile("rb").readline())
    assert answer["result"]["engine"] in ("rewriting", "legacy")
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    with pytest.raises(PermissionError, match="open to other users"):
        serve_unix(BridgeSessions(host), shared / "x.sock")


def test_http_requires_the_token(host):
    token = "t" * 32
    server = make_http_server(BridgeSessions(host), 0, token)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/"
    body = b'{"jsonrpc":"2.0","id":1,"method":"info"}'
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(url, body))
        assert refused.value.code == 401
        request = urllib.request.Request(url, body, {"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request) as reply:
            assert "engine" in json.loads(reply.read())["result"]
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(ValueError, match="at least 16"):
        make_http_server(BridgeSessions(host), 0, "short")


def test_maintain_runs_once_per_gateway_turn(host):
    """The gateway commits a turn, then calls maintain: the engine's maintain runs once."""
    client = PipeClient(BridgeSessions(host))
    try:
        engine = None
        for turn in range(3):
            committed = client.call(
                "commitTurn",
                sessionId="once",
                advancementKey=f"turn-{turn}",
                messages=[user(f"q{turn}"), assistant(f"a{turn}")],
            )
            assert committed["result"]["status"] == "committed"
            engine = engine or next(iter(host._sessions.values())).guard.engine
            assert engine.maintained == turn  # commitTurn itself ran no maintain
            client.call("maintain", sessionId="once", sessionFile="f")
            assert engine.maintained == turn + 1
        client.call("afterTurn", sessionId="once", newMessages=[user("q"), assistant("a")], base=6)
        client.call("maintain", sessionId="once", sessionFile="f")
        assert engine.maintained == 4 and len(engine.rewrites) == 4
    finally:
        client.close()
