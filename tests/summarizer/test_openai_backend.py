"""The openai backend against a fake OpenAI-compatible server on 127.0.0.1 (real HTTP)."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ctxengine_host.contract.context import EngineContext
from ctxengine_host.summarizer import SummarizerError, SummarizerService
from ctxengine_host.summarizer.openai_backend import OpenAIBackend, parse_retry_after
from ctxengine_host.summarizer.settings import parse_backend_settings
from ctxengine_host.tokens import TokenCounter
from ctxengine_legacy import LegacyConfig, LegacyEngine

KEY_ENV = "CTXENGINE_TEST_SUMMARIZER_KEY"


def completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
    }


def error_body(code: str, kind: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "type": kind, "message": message}}


@dataclass
class Reply:
    status: int = 200
    body: dict[str, Any] = field(default_factory=lambda: completion("## Facts\n- port 8443"))
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


class FakeOpenAI:
    """Serves scripted replies in order (the last one repeats) and records each request."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = deque(replies or [Reply()])
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                fake.requests.append(
                    {
                        "path": self.path,
                        "auth": self.headers.get("Authorization"),
                        "json": json.loads(self.rfile.read(length)),
                    }
                )
                reply = fake.replies.popleft() if len(fake.replies) > 1 else fake.replies[0]
                time.sleep(reply.delay)
                data = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test-123")


def _backend(server: FakeOpenAI, sleeps: list[float] | None = None, **overrides: Any):
    settings = parse_backend_settings(
        {
            "backend": "openai",
            "model": "summarizer-mini",
            "base_url": server.base_url,
            "api_key_env": KEY_ENV,
            "timeout_seconds": 0.5,
            "max_retries": 3,
            "backoff_initial_seconds": 0.01,
            **overrides,
        }
    )
    record = sleeps if sleeps is not None else []
    return OpenAIBackend(settings, sleep=record.append), record


MESSAGES = [
    {"role": "user", "content": "Use port 8443 for the admin API."},
    {"role": "assistant", "content": "Noted."},
]


def test_a_summary_from_the_endpoint():
    with FakeOpenAI(Reply(body=completion("## Facts\n- admin API on port 8443"))) as server:
        backend, _ = _backend(server)
        text = backend.summarize(MESSAGES, 300, focus_topic="ports", previous="- old fact")
    assert text == "## Facts\n- admin API on port 8443"
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer sk-test-123"
    body = request["json"]
    assert body["model"] == "summarizer-mini"
    assert "port 8443" in body["messages"][1]["content"]
    assert "- old fact" in body["messages"][1]["content"]
    assert "ports" in body["messages"][0]["content"]


def test_rate_limit_429_is_retried_honouring_retry_after():
    limited = Reply(
        429, error_body("rate_limit_exceeded", "requests", "slow down"), {"Retry-After": "2"}
    )
    with FakeOpenAI(limited, Reply()) as server:
        backend, sleeps = _backend(server)
        assert "port 8443" in backend.summarize(MESSAGES, 100)
    assert len(server.requests) == 2
    assert sleeps == [2.0]


def test_insufficient_quota_429_is_not_retried():
    quota = Reply(429, error_body("insufficient_quota", "insufficient_quota", "You exceeded"))
    with FakeOpenAI(quota, Reply()) as server:
        backend, sleeps = _backend(server)
        with pytest.raises(SummarizerError, match="quota"):
            backend.summarize(MESSAGES, 100)
    assert len(server.requests) == 1 and sleeps == []


def test_server_errors_are_retried_with_exponential_backoff():
    failing = Reply(500, error_body("server_error", "server_error", "boom"))
    with FakeOpenAI(failing, failing, Reply()) as server:
        backend, sleeps = _backend(server)
        assert backend.summarize(MESSAGES, 100)
    assert len(server.requests) == 3
    assert sleeps == [0.01, 0.02]


def test_retries_run_out():
    failing = Reply(503, error_body("", "server_error", "overloaded"))
    with FakeOpenAI(failing) as server:
        backend, _ = _backend(server, max_retries=2)
        with pytest.raises(SummarizerError, match=r"gave up after 3 attempts.*503"):
            backend.summarize(MESSAGES, 100)
    assert len(server.requests) == 3


@pytest.mark.parametrize("status", [401, 403])
def test_auth_failures_are_not_retried(status):
    with FakeOpenAI(Reply(status, error_body("invalid_api_key", "auth", "bad key"))) as server:
        backend, sleeps = _backend(server)
        with pytest.raises(SummarizerError, match=rf"HTTP {status}.*{KEY_ENV}"):
            backend.summarize(MESSAGES, 100)
    assert len(server.requests) == 1 and sleeps == []


def test_a_timeout_is_retried():
    with FakeOpenAI(Reply(delay=1.5), Reply()) as server:
        backend, sleeps = _backend(server, timeout_seconds=0.3)
        assert "port 8443" in backend.summarize(MESSAGES, 100)
    assert len(server.requests) == 2 and len(sleeps) == 1


def test_a_connection_refused_is_transient_then_fails():
    with FakeOpenAI() as server:
        url = server.base_url
    settings = parse_backend_settings(
        {"backend": "openai", "model": "m", "base_url": url, "api_key_env": KEY_ENV,
         "max_retries": 1, "backoff_initial_seconds": 0}
    )  # fmt: skip
    sleeps: list[float] = []
    with pytest.raises(SummarizerError, match="connection failed"):
        OpenAIBackend(settings, sleep=sleeps.append).summarize(MESSAGES, 100)
    assert sleeps == [0]


def test_a_missing_api_key_is_a_clear_permanent_error(monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    with FakeOpenAI() as server:
        backend, _ = _backend(server)
        with pytest.raises(SummarizerError, match=rf"\${KEY_ENV}"):
            backend.summarize(MESSAGES, 100)
    assert server.requests == []


def test_retry_after_parsing():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert parse_retry_after("soon") is None


def _openai_service(server: FakeOpenAI) -> SummarizerService:
    settings = {
        "backend": "openai",
        "model": "summarizer-mini",
        "base_url": server.base_url,
        "api_key_env": KEY_ENV,
        "backoff_initial_seconds": 0,
    }
    return SummarizerService(settings, TokenCounter())


def test_the_service_escalates_an_oversized_llm_summary():
    long_reply = Reply(body=completion("filler words " * 400))
    with FakeOpenAI(long_reply, Reply(body=completion("- port 8443"))) as server:
        result = _openai_service(server).summarize(MESSAGES * 30, 100)
    assert result.backend == "openai" and result.level == 1
    assert result.text == "- port 8443"
    assert "aggressive" in server.requests[1]["json"]["messages"][0]["content"]


def test_legacy_keeps_the_transcript_when_the_endpoint_refuses(tmp_path):
    from tests.legacy.conftest import long_session

    with FakeOpenAI(Reply(401, error_body("invalid_api_key", "auth", "bad key"))) as server:
        service = _openai_service(server)
        counter = service.counter
        context = EngineContext(
            engine_name="legacy",
            data_dir=tmp_path,
            count_tokens=counter.count_any,
            summarize=lambda c, target_tokens, focus_topic=None, previous=None: service.summarize(
                c, target_tokens, focus_topic=focus_topic, previous=previous
            ),
        )
        engine = LegacyEngine(config=LegacyConfig(prune_only_goal_fraction=0), context=context)
        engine.update_model("gpt-4", 8192)
        result = engine.compress(long_session(20))
    assert not result.ok and not result.compacted and result.messages is None
    assert "HTTP 401" in engine.get_status()["last_error"]
    assert len(server.requests) == 1
