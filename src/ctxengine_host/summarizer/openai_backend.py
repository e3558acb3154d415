"""The ``openai`` backend: any OpenAI-compatible ``/chat/completions`` endpoint.

Stdlib ``urllib`` only (one POST per attempt; no new dependency). Transient
failures (connection errors, timeouts, 5xx, 429 rate limits) are retried with
exponential backoff, honouring ``Retry-After``; 401/403, other 4xx and a 429
whose error code or type is ``insufficient_quota`` fail at once with
:class:`SummarizerError`, as does a spent retry budget.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from .errors import SummarizerError
from .prompt import Shrink, summary_messages
from .settings import OpenAISettings

log = logging.getLogger("ctxengine.summarizer.openai")


class _Transient(Exception):
    """One attempt failed in a way worth retrying."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_fields(body: bytes) -> tuple[str, str, str]:
    try:
        error = json.loads(body.decode("utf-8", "replace")).get("error") or {}
    except (ValueError, AttributeError):
        return "", "", body[:200].decode("utf-8", "replace")
    if not isinstance(error, dict):
        return "", "", str(error)[:200]
    return str(error.get("code") or ""), str(error.get("type") or ""), str(error.get("message"))


class OpenAIBackend:
    """Summaries from a chat completion endpoint, with retries on transient errors."""

    name = "openai"

    def __init__(
        self,
        settings: OpenAISettings,
        shrink: Shrink | None = None,
        count_text: Callable[[str], int] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings
        self._shrink = shrink
        self._count_text = count_text
        self._sleep = sleep
        self.url = settings.base_url.rstrip("/") + "/chat/completions"

    def summarize(
        self,
        content: str | list[dict[str, Any]],
        target_tokens: int,
        focus_topic: str | None = None,
        previous: str | None = None,
        level: int = 0,
    ) -> str:
        messages = summary_messages(
            content, target_tokens, focus_topic, previous, level,
            max_input_tokens=self.settings.max_input_tokens,
            shrink=self._shrink, count_text=self._count_text,
        )  # fmt: skip
        payload = {
            "model": self.settings.model,
            "messages": messages,
            "temperature": self.settings.temperature,
            "max_tokens": max(16, target_tokens),
        }
        return self._post_with_retries(payload)

    def _api_key(self) -> str:
        key = os.environ.get(self.settings.api_key_env, "")
        if not key:
            raise SummarizerError(
                f"the openai summarizer needs an API key in ${self.settings.api_key_env}; set it "
                "or change [summarizer] api_key_env"
            )
        return key

    def _post_with_retries(self, payload: dict[str, Any]) -> str:
        body = json.dumps(payload).encode("utf-8")
        headers = {
            "Content-Type": "application/json",
            "Authorization": f"Bearer {self._api_key()}",
            **self.settings.extra_headers,
        }
        attempts = self.settings.max_retries + 1
        attempt = 0
        while True:
            try:
                return self._post_once(body, headers)
            except _Transient as exc:
                attempt += 1
                if attempt >= attempts:
                    raise SummarizerError(
                        f"openai summarizer gave up after {attempts} attempts: {exc}"
                    ) from exc
                delay = self._delay(attempt - 1, exc.retry_after)
                log.warning("summarizer request failed (%s); retrying in %.2f s", exc, delay)
                self._sleep(delay)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        backoff = min(
            self.settings.backoff_max_seconds, self.settings.backoff_initial_seconds * 2**attempt
        )
        if retry_after is None:
            return backoff
        if retry_after > self.settings.max_retry_after_seconds:
            raise SummarizerError(
                f"openai summarizer is rate limited for {retry_after:.0f} s, longer than "
                f"[summarizer] max_retry_after_seconds={self.settings.max_retry_after_seconds:g}"
            )
        return max(retry_after, backoff)

    def _post_once(self, body: bytes, headers: dict[str, str]) -> str:
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.settings.timeout_seconds) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise self._classify(exc) from exc
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise _Transient(f"connection failed: {reason}") from exc
        return self._content(raw)

    def _classify(self, exc: urllib.error.HTTPError) -> Exception:
        status = exc.code
        try:
            raw = exc.read()
        except OSError:
            raw = b""
        code, kind, message = _error_fields(raw)
        detail = f"HTTP {status} from {self.url}: {message or exc.reason}"
        if status in (401, 403):
            return SummarizerError(
                f"{detail}; check the key in ${self.settings.api_key_env} (not retried)"
            )
        if status == 429 and "insufficient_quota" in (code, kind):
            return SummarizerError(f"{detail}; the account's quota is exhausted (not retried)")
        if status == 429 or status >= 500 or status == 408:
            return _Transient(detail, parse_retry_after(exc.headers.get("Retry-After")))
        return SummarizerError(f"{detail} (not retried)")

    def _content(self, raw: bytes) -> str:
        try:
            data = json.loads(raw.decode("utf-8"))
            text = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise SummarizerError(
                f"{self.url} did not answer like a chat completion endpoint: {raw[:200]!r}"
            ) from exc
        if not isinstance(text, str) or not text.strip():
            raise SummarizerError(f"{self.url} returned an empty summary")
        return text.strip()
