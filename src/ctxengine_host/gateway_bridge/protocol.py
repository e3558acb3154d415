"""The bridge's JSON-RPC 2.0 vocabulary: version, error codes, message builders.

Framing is one JSON value per line (UTF-8, ``\\n``-terminated) on stdio and the
unix socket; HTTP carries one value per POST body. See docs/bridge.md.
"""

from __future__ import annotations

import json
import logging
from typing import Any

log = logging.getLogger("ctxengine.bridge")

#: Bumped on any incompatible change; the plugin refuses a server with another major.
PROTOCOL_VERSION = "1.1"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: The engine (or the runtime around it) failed this call; the server goes on.
ENGINE_ERROR = -32000
#: The server has no history for this session: resend the call with ``history``.
RESYNC_NEEDED = -32010
#: The request names a session the server does not know (e.g. compact before any turn).
UNKNOWN_SESSION = -32011
#: A server→plugin call failed or timed out.
CLIENT_CALL_FAILED = -32020


class RpcError(Exception):
    """An error to answer with: ``code``, ``message`` and optional ``data``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def response(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: Any, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_json()}


class NotJson(ValueError):
    """A line that is JSON but for a ``NaN`` or ``Infinity``; ``request_id`` is the id it
    carries, so the refusal answers that request instead of none."""

    def __init__(self, message: str, request_id: Any) -> None:
        super().__init__(message)
        self.request_id = request_id


def decode(data: bytes) -> Any:
    """One value of the wire. ``NaN`` and ``Infinity`` are not JSON (Python's reader takes
    them, the gateway's does not): a value holding one is refused (:class:`NotJson`), so
    it is never stored and echoed back in a line the gateway cannot read."""
    try:
        return json.loads(data, parse_constant=_not_json)
    except _Constant as exc:
        lenient = json.loads(data)
        request_id = lenient.get("id") if isinstance(lenient, dict) else None
        raise NotJson(str(exc), request_id if _is_id(request_id) else None) from None


def parse_error(exc: ValueError) -> dict[str, Any]:
    """The answer to a line :func:`decode` refused (to its request when it names one)."""
    request_id = exc.request_id if isinstance(exc, NotJson) else None
    return error_response(request_id, RpcError(PARSE_ERROR, f"not JSON: {exc}"))


class _Constant(ValueError):
    pass


def _not_json(name: str) -> Any:
    raise _Constant(f"{name} is not a JSON value; send a number, null or a string")


def _is_id(value: Any) -> bool:
    """Whether ``value`` can be a request's id (JSON-RPC: a string or a whole number)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def encode(message: Any) -> bytes:
    """One line of the wire: compact JSON, non-ASCII kept, newline-terminated. A text
    holding half of a character (a lone surrogate: a tool's answer echoing what the
    gateway sent) has no UTF-8 form: that line goes out ASCII-escaped, ``\\ud83d`` as
    the gateway wrote it, instead of failing the answer. A value JSON cannot hold (NaN,
    an object of no JSON type) raises ``ValueError`` or ``TypeError``."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return (text + "\n").encode()
    except UnicodeEncodeError:
        return (json.dumps(message, separators=(",", ":")) + "\n").encode()


def encode_answer(answer: Any) -> bytes:
    """The line of an answer (or a batch's answers). One that JSON cannot hold (a bug of
    ours: an engine's NaN, an object of no JSON type) becomes an internal error answering
    the same request: the gateway waits for every answer, and a line it cannot read would
    leave it waiting."""
    try:
        return encode(answer)
    except (TypeError, ValueError, RecursionError):
        if isinstance(answer, list):
            return encode([_encodable(a) for a in answer])
        return encode(_encodable(answer))


def _encodable(answer: Any) -> Any:
    """``answer``, or the internal error to send instead when it cannot be encoded."""
    try:
        encode(answer)
    except (TypeError, ValueError, RecursionError) as exc:
        request_id = answer.get("id") if isinstance(answer, dict) else None
        log.error("the answer to request %r could not be encoded: %s", request_id, exc)
        problem = f"the answer could not be written as JSON ({type(exc).__name__}: {exc})"
        return error_response(request_id, RpcError(INTERNAL_ERROR, problem))
    return answer


def require_object(params: Any, method: str) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, f"{method}: params must be an object (named parameters)")
    return params


def require_str(params: dict[str, Any], key: str, method: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise RpcError(INVALID_PARAMS, f"{method}: '{key}' must be a non-empty string")
    return value


def optional_int(params: dict[str, Any], key: str, method: str) -> int | None:
    value = params.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise RpcError(INVALID_PARAMS, f"{method}: '{key}' must be a non-negative number")
    return int(value)


def require_list(params: dict[str, Any], key: str, method: str) -> list[Any]:
    value = params.get(key)
    if not isinstance(value, list):
        raise RpcError(INVALID_PARAMS, f"{method}: '{key}' must be an array")
    return value
