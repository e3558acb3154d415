"""The distribution's version: the one place it is written (read by the build)."""

__version__ = "0.1.0"
