"""One JSON-RPC connection: read requests, run them in order per session, answer.

Requests of one session run one after another in arrival order; different
sessions run in parallel on a small pool. Anything wrong with a request (bad
JSON, unknown method, bad params, an engine that raised) gets a JSON-RPC error;
the connection goes on. The server may call the plugin back
(``rewriteTranscriptEntries`` during ``maintain``); the plugin's answers are read
by the same loop.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any

from .handlers import handle
from .protocol import (
    CLIENT_CALL_FAILED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    RpcError,
    decode,
    encode,
    encode_answer,
    error_response,
    parse_error,
    response,
)
from .sessions import BridgeSessions

log = logging.getLogger("ctxengine.bridge")

#: How long a server→plugin call may take before the engine's call fails.
CLIENT_CALL_TIMEOUT_S = 30.0


class SerialLanes:
    """Run tasks on a pool, one at a time and in order for each key."""

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self._pool = pool
        self._lock = threading.Lock()
        self._lanes: dict[str, deque[Any]] = {}

    def submit(self, key: str, task: Any) -> None:
        with self._lock:
            lane = self._lanes.get(key)
            if lane is not None:
                lane.append(task)
                return
            self._lanes[key] = deque([task])
        self._pool.submit(self._drain, key)

    def _drain(self, key: str) -> None:
        while True:
            with self._lock:
                lane = self._lanes[key]
                if not lane:
                    del self._lanes[key]
                    return
                task = lane[0]
            try:
                task()
            finally:
                with self._lock:
                    lane.popleft()


class Connection:
    """A JSON-RPC peer over a pair of byte streams (stdio, one socket client)."""

    def __init__(
        self, sessions: BridgeSessions, reader: IO[bytes], writer: IO[bytes], workers: int = 4
    ) -> None:
        self.sessions = sessions
        self._reader = reader
        self._writer = writer
        self._write_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ctxengine-rpc")
        self._lanes = SerialLanes(self._pool)
        self._pending: dict[int, Future[Any]] = {}
        self._ids = itertools.count(1)

    def serve(self) -> None:
        """Until the peer closes its end: read, dispatch, answer."""
        try:
            for line in self._reader:
                if line.strip():
                    self._receive(line)
        finally:
            for future in list(self._pending.values()):
                future.set_exception(RpcError(CLIENT_CALL_FAILED, "the plugin disconnected"))
            self._pool.shutdown(wait=True)

    def _send(self, answer: Any) -> None:
        self._write(encode_answer(answer))

    def _write(self, data: bytes) -> None:
        with self._write_lock:
            self._writer.write(data)
            self._writer.flush()

    def _receive(self, line: bytes) -> None:
        try:
            message = decode(line)
        except ValueError as exc:
            self._send(parse_error(exc))
            return
        if isinstance(message, list):  # a batch: answered as one array, in order
            self._pool.submit(self._batch, message)
            return
        if isinstance(message, dict) and "method" not in message and "id" in message:
            self._resolve(message)
            return
        problem = _request_problem(message)
        if problem:
            request_id = message.get("id") if isinstance(message, dict) else None
            self._send(error_response(request_id, RpcError(INVALID_REQUEST, problem)))
            return
        params = message.get("params")
        key = params.get("sessionId") if isinstance(params, dict) else None
        self._lanes.submit(key if isinstance(key, str) else "", lambda: self._run(message))

    def _run(self, message: dict[str, Any]) -> None:
        answer = dispatch(self.sessions, message, self.call)
        if answer is not None:
            self._send(answer)

    def _batch(self, batch: list[Any]) -> None:
        if not batch:
            self._send(error_response(None, RpcError(INVALID_REQUEST, "empty batch")))
            return
        answers = []
        for message in batch:
            problem = _request_problem(message)
            if problem:
                answers.append(error_response(None, RpcError(INVALID_REQUEST, problem)))
                continue
            answer = dispatch(self.sessions, message, self.call)
            if answer is not None:
                answers.append(answer)
        if answers:
            self._send(answers)

    # ------------------------------------------------------ server → plugin calls

    def call(self, method: str, params: dict[str, Any]) -> Any:
        """Call the plugin and wait for its answer (from a worker thread)."""
        request_id = next(self._ids)
        future: Future[Any] = Future()
        self._pending[request_id] = future
        try:
            request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            self._write(encode(request))
            return future.result(timeout=CLIENT_CALL_TIMEOUT_S)
        except TimeoutError:
            raise RpcError(CLIENT_CALL_FAILED, f"the plugin did not answer {method}") from None
        finally:
            self._pending.pop(request_id, None)

    def _resolve(self, message: dict[str, Any]) -> None:
        future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
        if future is None:
            log.warning("answer to an unknown server call %r ignored", message.get("id"))
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(
                RpcError(CLIENT_CALL_FAILED, f"the plugin failed: {error.get('message')}")
            )
        else:
            future.set_result(message.get("result"))


def dispatch(sessions: BridgeSessions, message: dict[str, Any], call: Any) -> Any:
    """The answer to one well-formed request (None for a notification)."""
    request_id = message.get("id")
    try:
        result = handle(sessions, message["method"], message.get("params"), call)
    except RpcError as exc:
        answer = error_response(request_id, exc)
    except Exception as exc:  # a bug of ours: said, logged, survived
        log.exception("%s failed", message.get("method"))
        answer = error_response(
            request_id, RpcError(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
        )
    else:
        answer = response(request_id, result)
    return None if "id" not in message else answer


def no_client_calls(method: str, params: dict[str, Any]) -> Any:
    """For transports without a way back to the plugin (HTTP)."""
    raise RpcError(CLIENT_CALL_FAILED, f"{method} is not available over this transport")


def _request_problem(message: Any) -> str | None:
    if not isinstance(message, dict):
        return "a request must be a JSON object"
    if message.get("jsonrpc") != "2.0":
        return "'jsonrpc' must be \"2.0\""
    if not isinstance(message.get("method"), str):
        return "'method' must be a string"
    request_id = message.get("id")
    if "id" in message and not (request_id is None or isinstance(request_id, str | int)):
        return "'id' must be a string, a number or null"
    return None
