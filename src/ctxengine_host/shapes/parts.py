"""Token estimates for the non-text content parts of an OpenAI Chat message.

Text parts (``text``, ``refusal``) are counted by the tokenizer with the rest of the
message's text. The other documented part types have no tokenizer; these estimates
err towards over-counting so a request does not overflow (docs/session-format.md,
"Content parts"):

* ``image_url``: :func:`image_part_tokens` — OpenAI's documented tile rule from the
  image's size (a data URL's header), the worst case of its ``detail`` for a remote URL.
* ``input_audio``: about 10 tokens per second of audio, the seconds estimated from
  the decoded size (24 kHz 16-bit mono WAV, 128 kbit/s MP3).
* ``file``: inline ``file_data`` as if every 4 decoded bytes were a token;
  a ``file_id`` reference alone costs :data:`FILE_REFERENCE_TOKENS`.
"""

from __future__ import annotations

import math
from typing import Any

from .images import image_part_tokens as tile_rule

AUDIO_TOKENS_PER_SECOND = 10
AUDIO_BYTES_PER_SECOND = {"wav": 48_000, "mp3": 16_000}
FILE_BYTES_PER_TOKEN = 4
FILE_REFERENCE_TOKENS = 1_000

#: Part types counted as text by the tokenizer (see ``messages.content_text``).
TEXT_PART_TYPES = frozenset({"text", "refusal"})
#: Every part type the Chat Completions API documents for request messages.
CHAT_PART_TYPES = frozenset({"text", "refusal", "image_url", "input_audio", "file"})


def image_part_tokens(part: dict[str, Any]) -> int:
    """Tokens of one ``image_url`` part: OpenAI's tile rule (``images.image_part_tokens``)."""
    return tile_rule(part.get("image_url"))


def audio_part_tokens(part: dict[str, Any]) -> int:
    """Tokens of one ``input_audio`` part, from the size of its base64 data."""
    audio = part.get("input_audio")
    if not isinstance(audio, dict):
        return 0
    per_second = AUDIO_BYTES_PER_SECOND.get(str(audio.get("format")), 16_000)
    seconds = _decoded_size(audio.get("data")) / per_second
    return max(1, math.ceil(seconds * AUDIO_TOKENS_PER_SECOND))


def file_part_tokens(part: dict[str, Any]) -> int:
    """Tokens of one ``file`` part: inline data by size, a bare reference a fixed cost."""
    file = part.get("file")
    if not isinstance(file, dict):
        return 0
    data = file.get("file_data")
    if isinstance(data, str) and data:
        return max(1, math.ceil(_decoded_size(data) / FILE_BYTES_PER_TOKEN))
    return FILE_REFERENCE_TOKENS


_ESTIMATORS = {
    "image_url": image_part_tokens,
    "input_audio": audio_part_tokens,
    "file": file_part_tokens,
}


def media_tokens(content: Any) -> int:
    """Tokens of the non-text parts of a message's content (0 for text content)."""
    if not isinstance(content, list):
        return 0
    total = 0
    for part in content:
        if isinstance(part, dict):
            estimate = _ESTIMATORS.get(part.get("type"))  # type: ignore[arg-type]
            if estimate is not None:
                total += estimate(part)
    return total


def extra_text(message: dict[str, Any]) -> str:
    """Text a message carries outside ``content`` text parts: refusals, audio transcripts."""
    parts: list[str] = []
    if isinstance(message.get("refusal"), str):
        parts.append(message["refusal"])
    content = message.get("content")
    if isinstance(content, list):
        parts.extend(
            p["refusal"]
            for p in content
            if isinstance(p, dict)
            and p.get("type") == "refusal"
            and isinstance(p.get("refusal"), str)
        )
    audio = message.get("audio")
    if isinstance(audio, dict) and isinstance(audio.get("transcript"), str):
        parts.append(audio["transcript"])
    return "\n".join(parts)


def _decoded_size(data: Any) -> int:
    """Bytes a base64 string (or a ``data:`` URL) decodes to, without decoding it."""
    if not isinstance(data, str):
        return 0
    if data.startswith("data:"):
        data = data.partition(",")[2]
    return len(data) * 3 // 4
