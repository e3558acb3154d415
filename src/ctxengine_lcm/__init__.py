"""The ctxengine engine ``lcm``: Lossless Context Management.

An immutable message store, a summary DAG and recall tools (docs/lcm.md).
"""

from ._version import __version__

__all__ = ["__version__"]
