"""The runtime suite's scripted conversation, also returning every provider request built.

It runs ``runtime.driver.drive`` (it reaches every engine method the runtime calls),
so clean and faulty runs can be compared request by request.
"""

from __future__ import annotations

import json
from typing import Any

from runtime.driver import drive

from ctxengine_host.runtime.host import ContextHost


def wire(messages: list[dict[str, Any]]) -> list[str]:
    """Request messages as sorted JSON, without persistence fields (uids differ per run)."""
    return [
        json.dumps({k: v for k, v in m.items() if not k.startswith("_") and k != "message_uid"})
        for m in messages
    ]


def converse(host: ContextHost, session_id: str = "main") -> tuple[list[Any], list[list[str]]]:
    """Run the script; return the turn reports and the requests' messages."""
    requests: list[list[str]] = []
    reports = drive(
        host, session_id, on_request=lambda built: requests.append(wire(built.messages))
    )
    return reports, requests
