"""Image parts: OpenAI's tile rule, with the dimensions read from a data URL's header.

Counted offline and in bounded time: only the first ``_IMAGE_HEADER_CHARS`` of a data URL
are decoded. ``runtime.tokens`` counts messages with it (through ``shapes.parts``).
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from typing import Any

# Images.
#
# OpenAI's documented rule for image inputs (GPT-4o family, "Calculating costs" in the
# vision guide): ``detail: low`` costs 85 tokens. Otherwise the image is scaled to fit a
# 2048 x 2048 square, then so that its shortest side is at most 768 px; it costs 85
# tokens plus 170 per 512 px tile. A remote URL cannot be read offline: it is priced at the
# worst case of its detail (``low`` 85; ``high`` or ``auto`` 1,445: 2048 x 768 is 8 tiles).
# A data URL's PNG, GIF, JPEG or WebP header gives the dimensions.

IMAGE_BASE_TOKENS = 85
IMAGE_TILE_TOKENS = 170
IMAGE_TILE_PX = 512
#: The most a ``high``/``auto`` image can cost (2048 x 768 after scaling: 4 x 2 tiles).
IMAGE_WORST_CASE_TOKENS = IMAGE_BASE_TOKENS + 8 * IMAGE_TILE_TOKENS
#: Base64 characters of a data URL decoded to find the dimensions (JPEG headers may sit
#: behind EXIF data).
_IMAGE_HEADER_CHARS = 256 * 1024


def image_tokens(width: int, height: int, detail: str = "auto") -> int:
    """Tokens of one image of ``width`` x ``height`` px by OpenAI's tile rule."""
    if detail == "low":
        return IMAGE_BASE_TOKENS
    if width <= 0 or height <= 0:
        return IMAGE_WORST_CASE_TOKENS
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    tiles = math.ceil(w / IMAGE_TILE_PX) * math.ceil(h / IMAGE_TILE_PX)
    return IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS * tiles


def image_part_tokens(image_url: Any) -> int:
    """Tokens of an ``image_url`` content part's value (``{"url", "detail"}`` or a bare
    URL): by the tile rule when a data URL gives the dimensions, else the worst case of
    its detail."""
    url = image_url.get("url") if isinstance(image_url, dict) else image_url
    detail = image_url.get("detail", "auto") if isinstance(image_url, dict) else "auto"
    if detail == "low":
        return IMAGE_BASE_TOKENS
    size = data_url_image_size(url) if isinstance(url, str) else None
    if size is None:
        return IMAGE_WORST_CASE_TOKENS
    return image_tokens(*size, detail=detail)


def data_url_image_size(url: str) -> tuple[int, int] | None:
    """(width, height) from a base64 ``data:`` URL's image header, or None."""
    if not url.startswith("data:"):
        return None
    head, _, payload = url[: _IMAGE_HEADER_CHARS + 256].partition(",")
    if not head.endswith(";base64"):
        return None
    payload = payload[: len(payload) // 4 * 4]
    try:
        data = base64.b64decode(payload, validate=False)
    except (binascii.Error, ValueError):
        return None
    return image_header_size(data)


def image_header_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) read from the start of a PNG, GIF, JPEG or WebP file, or None."""
    try:
        if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
            return struct.unpack(">II", data[16:24])
        if data[:6] in (b"GIF87a", b"GIF89a"):
            return struct.unpack("<HH", data[6:10])
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp_size(data)
        if data[:2] == b"\xff\xd8":
            return _jpeg_size(data)
    except struct.error:
        return None
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 ":
        w, h = struct.unpack("<HH", data[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """The frame size from a JPEG's SOF marker, walking the segments before it."""
    pos = 2
    while pos + 9 <= len(data):
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length
            pos += 2
            continue
        (length,) = struct.unpack(">H", data[pos + 2 : pos + 4])
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[pos + 5 : pos + 9])
            return width, height
        pos += 2 + length
    return None
