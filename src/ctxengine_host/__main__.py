"""``python -m ctxengine_host``: the same command line as ``ctxengine``."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
