"""Validating the usage dict of a provider response before engines see it.

Engines read ``prompt_tokens``, ``completion_tokens`` and ``total_tokens``;
a wrong value there would skew every later compaction decision, so bad usage
is an error naming the field, never silently passed on. Documented repairs:

* ``input_tokens`` / ``output_tokens`` (Responses/Anthropic style) are read as
  ``prompt_tokens`` / ``completion_tokens``;
* a missing ``total_tokens`` is the sum of the two;
* integral floats (``12.0``) become ints;
* no usage at all (``None``): the host estimates it from the request it built
  (:func:`estimated_usage`), marked ``"estimated": True``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import ContextEngine

ALIASES = {"prompt_tokens": "input_tokens", "completion_tokens": "output_tokens"}


class UsageError(ValueError):
    """A usage dict is missing a field or holds a bad value."""


def _as_count(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(
            f"usage[{key!r}] is {value!r} ({type(value).__name__}); it must be a "
            "non-negative integer token count"
        )
    if isinstance(value, float) and not value.is_integer():
        raise UsageError(f"usage[{key!r}] is {value!r}; token counts are whole numbers")
    if value < 0:
        raise UsageError(f"usage[{key!r}] is negative ({value!r}); token counts are >= 0")
    return int(value)


def normalize_usage(usage: Any) -> dict[str, Any]:
    """A copy of ``usage`` with validated ``prompt_tokens``/``completion_tokens``/``total_tokens``.

    Other keys (e.g. ``prompt_tokens_details``) are kept as they are.
    """
    if not isinstance(usage, Mapping):
        raise UsageError(
            f"usage is a {type(usage).__name__}, not a dict; pass the provider's usage "
            "dict, or None to let the host estimate it"
        )
    out = dict(usage)
    for key, alias in ALIASES.items():
        if out.get(key) is None and out.get(alias) is not None:
            out[key] = out[alias]
        if out.get(key) is None:
            raise UsageError(
                f"usage has no {key!r} (nor {alias!r}); pass the provider's full usage "
                "dict, or None to let the host estimate it"
            )
        out[key] = _as_count(out[key], key)
    if out.get("total_tokens") is None:
        out["total_tokens"] = out["prompt_tokens"] + out["completion_tokens"]
    else:
        out["total_tokens"] = _as_count(out["total_tokens"], "total_tokens")
    return out


def estimated_usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    """The usage the host assumes when a response carried none."""
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "estimated": True,
    }


def apply_usage(engine: ContextEngine, usage: Mapping[str, Any]) -> None:
    """Record ``usage`` in an engine's three ``last_*`` counters.

    The plain body of ``update_from_response`` (the base class keeps that method
    abstract, so each engine states it and may call this): a missing
    ``total_tokens`` is the sum of the other two.
    """
    engine.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)
    engine.last_completion_tokens = int(usage.get("completion_tokens") or 0)
    engine.last_total_tokens = int(
        usage.get("total_tokens") or engine.last_prompt_tokens + engine.last_completion_tokens
    )
