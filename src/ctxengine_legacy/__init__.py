"""The default ctxengine engine ``legacy``: head and tail kept, the middle summarized."""

from ._version import __version__
from .config import LegacyConfig
from .engine import LegacyEngine

__all__ = ["LegacyConfig", "LegacyEngine", "__version__"]
