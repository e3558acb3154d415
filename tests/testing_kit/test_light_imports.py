"""An engine built with the kit's context loads neither the test runner nor an HTTP client:
both are resident memory (~16 and ~10 MiB) a host or a benchmark never uses."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ctxengine_host.testing as kit


def test_kit_context_and_offline_summarizer_import_no_pytest_or_http_client(tmp_path) -> None:
    code = (
        "import sys, pathlib\n"
        "from ctxengine_host.testing.context import kit_engine_context\n"
        "from ctxengine_host.tokens import TokenCounter\n"
        "from ctxengine_lcm.engine import LcmEngine\n"
        f"data = pathlib.Path({str(tmp_path)!r})\n"
        "LcmEngine(context=kit_engine_context('lcm', data, TokenCounter('gpt-4')))\n"
        "print(sorted(m for m in ('pytest', 'ssl', 'http.client') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_kit_names_resolve_on_first_use() -> None:
    from ctxengine_host.testing.contract import ContextEngineContract

    assert kit.ContextEngineContract is ContextEngineContract
    assert "tool_schema_problems" in kit.__all__ and callable(kit.tool_schema_problems)
    with pytest.raises(AttributeError):
        _ = kit.not_a_kit_name
