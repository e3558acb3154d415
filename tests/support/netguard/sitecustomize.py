"""Loaded by every Python process a framework test starts (via PYTHONPATH).

Refuses any connection to an address outside 127.0.0.0/8 and ::1, and records
the attempt in $CTXENGINE_NETGUARD_LOG so the test fails even when the driven
library swallows the exception. Unix sockets pass (they never leave the host).
"""

from __future__ import annotations

import ipaddress
import os
import socket

_LOG = os.environ.get("CTXENGINE_NETGUARD_LOG", "")


def _is_loopback(host: object) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _check(address: object) -> None:
    if not isinstance(address, tuple) or not address:
        return  # AF_UNIX path or other local family
    if _is_loopback(address[0]):
        return
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as log:
            log.write(f"pid {os.getpid()} tried to connect to {address!r}\n")
    raise ConnectionRefusedError(
        f"netguard: connection to {address!r} refused (tests stay on 127.0.0.1)"
    )


_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex


def _guarded_connect(self: socket.socket, address: object) -> None:
    _check(address)
    return _connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: object) -> int:
    _check(address)
    return _connect_ex(self, address)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
