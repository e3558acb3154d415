"""The examples stop with one line naming the setting to fix, never a traceback."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.network import assert_no_escape, guarded_env

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def one_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode != 0 and result.stdout == ""
    assert "Traceback" not in result.stderr, result.stderr
    [line] = result.stderr.splitlines()
    return line


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the block ends


def test_openai_loop_names_the_missing_package(tmp_path):
    blocker = tmp_path / "no-openai" / "openai"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError(\"No module named 'openai'\")\n")
    env = guarded_env(tmp_path)
    env["PYTHONPATH"] = f"{blocker.parent}:{env['PYTHONPATH']}"
    line = one_line(run_example("openai_agent_loop.py", "hi", env=env))
    assert "the openai package is not installed: pip install openai" in line


def test_openai_loop_names_the_missing_key(tmp_path):
    env = guarded_env(tmp_path)
    env.pop("OPENAI_API_KEY", None)
    line = one_line(run_example("openai_agent_loop.py", "hi", env=env))
    assert "OPENAI_API_KEY is not set" in line


def test_openai_loop_names_the_unreachable_server(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    env = {**guarded_env(tmp_path), "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": url}
    line = one_line(run_example("openai_agent_loop.py", "hi", env=env))
    assert f"cannot reach the server at {url}/: set OPENAI_BASE_URL" in line
    assert_no_escape(env)


def test_postgres_gateway_names_its_arguments(tmp_path):
    env = guarded_env(tmp_path)
    assert one_line(run_example("postgres_gateway.py", env=env)).startswith("usage: ")
    line = one_line(run_example("postgres_gateway.py", "notaurl", "s", "1", env=env))
    assert "'notaurl' is not a postgresql://HOST/DATABASE URL" in line


@pytest.mark.parametrize(
    ("example", "module"),
    [
        ("langchain_example.py", "langchain"),
        ("litellm_example.py", "litellm"),
        ("openai_agents_example.py", "agents"),
        ("pydantic_ai_example.py", "pydantic_ai"),
    ],
)
def test_integration_examples_name_the_package_to_install(tmp_path, example, module):
    if importlib.util.find_spec(module) is not None:
        pytest.skip(f"{module} is installed here; the example would run")
    line = one_line(run_example(f"integrations/{example}", env=guarded_env(tmp_path)))
    assert f"{module} is not installed: pip install " in line
