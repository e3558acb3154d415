"""Where the bridge listens: stdio (one gateway process), a unix socket, 127.0.0.1 HTTP.

The unix socket is created with mode 0600 inside a directory only its owner may
enter, so no other local user can read a session through the server. HTTP binds
127.0.0.1 only and requires ``Authorization: Bearer <token>`` on every request.
"""

from __future__ import annotations

import hmac
import logging
import os
import socket
import stat
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .protocol import (
    INVALID_REQUEST,
    RpcError,
    decode,
    encode_answer,
    error_response,
    parse_error,
)
from .server import Connection, _request_problem, dispatch, no_client_calls
from .sessions import BridgeSessions

log = logging.getLogger("ctxengine.bridge")

#: The largest HTTP request body accepted (a whole long history on resync).
MAX_HTTP_BODY = 64 * 1024 * 1024


def serve_stdio(sessions: BridgeSessions) -> None:
    """Serve the process's stdin/stdout until stdin closes.

    stdout carries the protocol only: anything else that prints goes to stderr.
    """
    reader, writer = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr
    Connection(sessions, reader, writer).serve()


def serve_unix(sessions: BridgeSessions, path: Path, ready: threading.Event | None = None) -> None:
    """Accept clients on a unix socket (mode 0600) until interrupted; one thread each."""
    path = Path(path)
    parent = path.parent
    parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(parent.stat().st_mode)
    if mode & 0o077:
        raise PermissionError(
            f"{parent} is open to other users (mode {mode:o}); put the socket in a "
            "directory of mode 0700"
        )
    if path.exists() or path.is_symlink():
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise FileExistsError(f"{path} exists and is not a socket; choose another path")
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    listener.listen()
    if ready is not None:
        ready.set()
    try:
        while True:
            client, _ = listener.accept()
            threading.Thread(target=_serve_socket, args=(sessions, client), daemon=True).start()
    finally:
        listener.close()
        path.unlink(missing_ok=True)


def _serve_socket(sessions: BridgeSessions, client: socket.socket) -> None:
    with client, client.makefile("rb") as reader, client.makefile("wb") as writer:
        try:
            Connection(sessions, reader, writer).serve()
        except (BrokenPipeError, ConnectionResetError):
            log.info("a socket client went away")


def make_http_server(sessions: BridgeSessions, port: int, token: str) -> ThreadingHTTPServer:
    """An HTTP server on 127.0.0.1:``port`` (0 picks one) answering POST / with JSON-RPC."""
    if len(token) < 16:
        raise ValueError("the HTTP token must be at least 16 characters")
    expected = f"Bearer {token}".encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            given = self.headers.get("Authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                self._reply(401, {"error": "missing or wrong bearer token"})
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length <= 0 or length > MAX_HTTP_BODY:
                self._reply(413 if length > 0 else 411, {"error": "bad Content-Length"})
                return
            try:
                message = decode(self.rfile.read(length))
            except ValueError as exc:
                self._reply(200, parse_error(exc))
                return
            problem = _request_problem(message)
            if problem:
                answer = error_response(None, RpcError(INVALID_REQUEST, problem))
            else:
                answer = dispatch(sessions, message, no_client_calls)
            self._reply(200 if answer is not None else 204, answer)

        def _reply(self, code: int, body: object) -> None:
            data = encode_answer(body) if body is not None else b""
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            log.debug("http: " + format, *args)

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)
