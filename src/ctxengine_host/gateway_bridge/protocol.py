"""The bridge's JSON-RPC 2.0 vocabulary: version, error codes, message builders.

Framing is one JSON value per line (UTF-8, ``\\n``-terminated) on stdio and the
unix socket; HTTP carries one value per POST body. See docs/bridge.md.
"""

from __future__ import annotations

import json
from typing import Any

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


def encode(message: Any) -> bytes:
    """One line of the wire: compact JSON, non-ASCII kept, newline-terminated. A text
    holding half of a character (a lone surrogate: a tool's answer echoing what the
    gateway sent) has no UTF-8 form: that line goes out ASCII-escaped, ``\\ud83d`` as
    the gateway wrote it, instead of failing the answer."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
    try:
        return text.encode()
    except UnicodeEncodeError:
        return (json.dumps(message, separators=(",", ":")) + "\n").encode()


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
