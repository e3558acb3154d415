"""What loading an engine may raise, and the ``ctx`` a directory engine's ``register(ctx)`` gets.

Below both the listing (``engines``) and the framework-plugin loader
(:mod:`ctxengine_host.discovery.compat.loader`), which subclasses the registrar: the loader is
imported by the listing only to import a directory engine, and imports nothing of it back.
Cheap to import, like ``engines``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported on the `ctxengine engines` path
if TYPE_CHECKING:
    from typing import Any


class EngineLoadError(Exception):
    """An engine entry could not be imported or does not export an engine."""


class EngineRegistrar:
    """The ``ctx`` a directory engine's ``register(ctx)`` receives.

    ``config`` and ``context`` are what the host would pass a class; the first
    ``register_context_engine`` call wins, later ones are rejected with a warning.
    """

    def __init__(self, name: str, config: Any = None, context: Any = None) -> None:
        self.name = name
        self.config = config
        self.context = context
        self.engine: Any = None
        self.warnings: list[str] = []

    def register_context_engine(self, engine: Any) -> None:
        if self.engine is not None:
            message = (
                f"directory engine '{self.name}' registered a second engine "
                f"({type(engine).__name__}); rejected: one registration per name"
            )
            self.warnings.append(message)
            import logging

            logging.getLogger("ctxengine.discovery").warning(message)
            return
        self.engine = engine
