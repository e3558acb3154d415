"""Run inside the ``hermes`` framework environment: the framework's context-engine test
assertions (tests/testing_kit/framework_abc_checks.py) against our exported engines,
with the released package's own ABC. Prints {"engine/check": "ok" | error} as JSON."""

from __future__ import annotations

import json
import sys
import tempfile
import traceback
from pathlib import Path

import agent.context_engine as abc_module

from tests.testing_kit.framework_abc_checks import CHECKS, exported


def main() -> None:
    assert not getattr(abc_module, "__ctxengine_shim__", False), "the real ABC must be used"
    results = {}
    for engine_name in ("lcm", "legacy"):
        for check, run in sorted(CHECKS.items()):
            engine = exported(engine_name, Path(tempfile.mkdtemp()) / "data")
            try:
                assert isinstance(engine, abc_module.ContextEngine)
                run(engine)
                results[f"{engine_name}/{check}"] = "ok"
            except Exception:
                results[f"{engine_name}/{check}"] = traceback.format_exc(limit=3)
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
