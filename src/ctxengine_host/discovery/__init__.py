"""Discovery: finding engines without importing them, choosing one, checking it at load.

``engines`` (entry points and directory engines), ``manifest``, ``directory_names``, the
slot (``slot``), contract validation at load (``validation``), the ``ctxengine.plugins``
group (``plugins``) and the built-in last-resort engine (``fallback``).

Before 0.2 ``ctxengine_host.discovery`` was the module now at ``discovery.engines``; its
names still resolve here, with a DeprecationWarning, until 0.2.0 (``ctxengine_host._moved``).
"""

from __future__ import annotations

from .._moved import moved_attribute


def __getattr__(name: str) -> object:
    return moved_attribute(__name__, name)
